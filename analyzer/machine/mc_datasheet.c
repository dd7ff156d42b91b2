/* mc_datasheet.c — the datasheet table: the built-in copy of
 * analyzer/machine/gpus.tsv (assembled into the binary with .incbin, so the command
 * needs no file beside it), or another file; its rows parsed, and a device
 * name matched to a row by its shell patterns (mc_datasheet.h).
 *
 * Must never: match a row by anything but its patterns, or accept a row
 * whose fields do not parse (the table is data, checked by the unit tests).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/an_grow.h"
#include "machine/mc_datasheet.h"

/* RATIONALE: the table is analyzer/machine/gpus.tsv itself, assembled in by the
 * compiler (its path is relative to the top of the tree, where make runs),
 * so a change to the file is a change to the command, and no install step
 * can leave them apart. */
__asm__(".section .rodata\n"
        ".type mc_gpus_tsv, @object\n"
        "mc_gpus_tsv:\n"
        ".incbin \"analyzer/machine/gpus.tsv\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char mc_gpus_tsv[];

/* The n-th TAB-separated field of line (a copy, "-" kept). */
static int split(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t)
            break;
        *t = 0;
        p = t + 1;
    }
    return n;
}

/* A number field: "-" is 0; else it must parse whole. */
static int num(const char *s, double *v)
{
    if (strcmp(s, "-") == 0) {
        *v = 0;
        return 0;
    }
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && *v >= 0 ? 0 : -1;
}

static int parse_row(mc_card *c, char *line, char *err, size_t ecap, int lineno)
{
    char *f[12];
    const int n = split(line, f, 12);
    if (n != 11) {
        snprintf(err, ecap, "line %d: %d fields, want 11", lineno, n);
        return -1;
    }
    double sms, gen, width;
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", f[0]);
    snprintf(c->match, sizeof c->match, "%s", f[1]);
    snprintf(c->source, sizeof c->source, "%s", f[10]);
    if (num(f[2], &sms) || num(f[3], &c->mem_gb) || num(f[4], &c->mem_GBps) ||
        num(f[5], &c->fp32_tflops) || num(f[6], &c->f16_tflops) || num(f[8], &gen) ||
        num(f[9], &width) || (strcmp(f[7], "bf16") != 0 && strcmp(f[7], "fp16") != 0) ||
        !c->name[0] || !c->match[0] || strlen(c->source) < 10) {
        snprintf(err, ecap, "line %d (%s): a field does not parse", lineno, f[0]);
        return -1;
    }
    c->sms = (int)sms;
    c->pcie_gen = (int)gen;
    c->pcie_width = (int)width;
    c->f16_bf16 = strcmp(f[7], "bf16") == 0;
    return 0;
}

int mc_sheet_parse(mc_sheet *s, const char *text, char *err, size_t ecap)
{
    int lineno = 0;
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        const size_t len = nl ? (size_t)(nl - l) : strlen(l);
        lineno++;
        if (len && l[0] != '#') {
            char *line = strndup(l, len);
            if (!line || an_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v, 32) < 0) {
                free(line);
                snprintf(err, ecap, "out of memory");
                return -1;
            }
            const int rc = parse_row(&s->v[s->n], line, err, ecap, lineno);
            free(line);
            if (rc < 0)
                return -1;
            s->n++;
        }
        l = nl ? nl + 1 : NULL;
    }
    return 0;
}

int mc_sheet_load(mc_sheet *s, const char *path, char *err, size_t ecap)
{
    memset(s, 0, sizeof *s);
    if (!path) {
        snprintf(s->from, sizeof s->from, "built-in analyzer/machine/gpus.tsv");
        return mc_sheet_parse(s, mc_gpus_tsv, err, ecap);
    }
    snprintf(s->from, sizeof s->from, "%s", path);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, ecap, "%s: cannot be opened", path);
        return -1;
    }
    char *text = calloc(1, 1 << 20);
    const size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (!text) {
        snprintf(err, ecap, "out of memory");
        return -1;
    }
    text[n] = 0;
    const int rc = mc_sheet_parse(s, text, err, ecap);
    free(text);
    return rc;
}

void mc_sheet_free(mc_sheet *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

const char *mc_mig_profile(const char *name)
{
    const char *m = strstr(name, " MIG ");
    return m ? m + 5 : NULL;
}

const mc_card *mc_sheet_match(const mc_sheet *s, const char *device_name)
{
    char name[256];
    snprintf(name, sizeof name, "%s", device_name);
    char *mig = strstr(name, " MIG ");
    if (mig)
        *mig = 0;
    for (size_t i = 0; i < s->n; i++) {
        char pats[256];
        snprintf(pats, sizeof pats, "%s", s->v[i].match);
        for (char *save = NULL, *p = strtok_r(pats, ",", &save); p; p = strtok_r(NULL, ",", &save))
            if (fnmatch(p, name, FNM_CASEFOLD) == 0)
                return &s->v[i];
    }
    return NULL;
}
