/* check_out.c — the two outputs of `gpustarve check` (check.h): one line
 * per item on the terminal ("NAME  VERDICT  what; likely cause: ..."),
 * and the JSON of schema gpustarve.check/1 (docs/check.md, "JSON").
 *
 * Must never: print a number the JSON does not hold, or write JSON but
 * through base/out_json.h.
 */
#include <stdio.h>
#include <string.h>

#include "base/out_json.h"
#include "cmd/check.h"

static void counts(const mc_list *l, size_t n[3])
{
    n[0] = n[1] = n[2] = 0;
    for (size_t i = 0; i < l->n; i++)
        n[l->v[i].verdict]++;
}

void check_write_text(gs_out *o, const check_run *c)
{
    for (size_t i = 0; i < c->items->n; i++) {
        const mc_item *it = &c->items->v[i];
        char name[256];
        snprintf(name, sizeof name, "%s%s%s", it->id, it->subject[0] ? " " : "", it->subject);
        gs_text_str(o, name, strlen(name));
        for (size_t k = strlen(name); k < 24; k++)
            gs_out_char(o, ' ');
        gs_out_printf(o, " %-11s  ", mc_verdict_text(it->verdict));
        gs_text_str(o, it->what, strlen(it->what));
        if (it->cause[0]) {
            const char *lead = !it->what[0] ? "" : it->verdict == MC_BELOW_SPEC ? "; likely cause: " : "; ";
            gs_out_str(o, lead);
            gs_text_str(o, it->cause, strlen(it->cause));
        }
        gs_out_char(o, '\n');
    }
    size_t n[3];
    counts(c->items, n);
    gs_out_printf(o, "summary                  %zu to spec, %zu below spec, %zu cannot tell; %.1f s%s\n",
                  n[MC_TO_SPEC], n[MC_BELOW_SPEC], n[MC_CANNOT_TELL], c->seconds,
                  c->opts->quick ? " (--quick)" : "");
}

static void write_item(gs_jw *w, const mc_item *it)
{
    gs_jw_obj(w);
    gs_jw_kstr(w, "id", it->id);
    gs_jw_kstr(w, "subject", it->subject[0] ? it->subject : NULL);
    gs_jw_kstr(w, "verdict", mc_verdict_key(it->verdict));
    gs_jw_knum(w, "measured", it->measured, 15); /* NAN: null */
    gs_jw_knum(w, "expected", it->expected, 15);
    gs_jw_kstr(w, "unit", it->unit[0] ? it->unit : NULL);
    gs_jw_kstr(w, "text", it->what[0] ? it->what : NULL);
    gs_jw_kstr(w, "cause", it->cause[0] ? it->cause : NULL);
    gs_jw_key(w, "details");
    gs_jw_obj(w);
    for (size_t k = 0; k < it->nnums; k++)
        gs_jw_knum(w, it->nums[k].key, it->nums[k].v, 15);
    for (size_t k = 0; k < it->nstrs; k++)
        gs_jw_kstr(w, it->strs[k].key, it->strs[k].null ? NULL : it->strs[k].v);
    gs_jw_end(w);
    gs_jw_end(w);
}

void check_write_json(gs_out *o, const check_run *c)
{
    gs_jw jw, *w = &jw;
    gs_jw_init(w, o);
    gs_jw_obj(w);
    gs_jw_kstr(w, "schema", "gpustarve.check/1");
    gs_jw_kbool(w, "quick", c->opts->quick);
    gs_jw_kfixed(w, "seconds", c->seconds, 3);
    gs_jw_key(w, "paths");
    gs_jw_arr(w);
    for (int i = 0; i < c->npaths; i++)
        gs_jw_str(w, c->paths[i]);
    gs_jw_end(w);
    gs_jw_kstr(w, "datasheet", c->datasheet_from);
    size_t n[3];
    counts(c->items, n);
    gs_jw_key(w, "summary");
    gs_jw_obj(w);
    gs_jw_ku64(w, "to_spec", n[MC_TO_SPEC]);
    gs_jw_ku64(w, "below_spec", n[MC_BELOW_SPEC]);
    gs_jw_ku64(w, "cannot_tell", n[MC_CANNOT_TELL]);
    gs_jw_end(w);
    gs_jw_newline(w, "\n");
    gs_jw_key(w, "items");
    gs_jw_arr(w);
    for (size_t i = 0; i < c->items->n; i++) {
        gs_jw_newline(w, "\n  ");
        write_item(w, &c->items->v[i]);
    }
    gs_jw_end(w);
    gs_jw_end(w);
    gs_out_char(o, '\n');
}
