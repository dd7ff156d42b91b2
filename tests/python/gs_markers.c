/* gs_markers.c — test helper: print the gpustarve markers of a run directory
 * (step/fetch begin/end, config, role) as JSON lines, with their strings,
 * which `gpustarve dump --json` does not show for these kinds.
 *
 *     gs_markers RUN_DIR
 *
 * One line per process first: {"kind":"process","pid":..,"ppid":..,"argv0":..}
 * then one per marker: {"pid":..,"tid":..,"kind":"step_begin","ts":..,"aux":..,
 * "aux2":..,"text":"num_workers=2"}. Built by tests/python/conftest.py with
 * the trace library; exit 0, or 2 when the directory cannot be read.
 */
#include <stdio.h>
#include <string.h>

#include "gs_trace.h"

static void json_str(const char *s)
{
    putchar('"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gs_markers RUN_DIR\n");
        return 2;
    }
    gs_run_files files;
    if (gs_run_files_list(&files, argv[1]) != GS_OK) {
        perror(argv[1]);
        return 2;
    }
    for (size_t f = 0; f < files.n; f++) {
        const char *path = files.path[f];
        gs_reader *r = NULL;
        if (gs_reader_open(&r, path) != GS_OK) {
            fprintf(stderr, "%s: cannot read\n", path);
            continue;
        }
        const gs_proc_info *pi = gs_reader_info(r);
        printf("{\"kind\":\"process\",\"pid\":%llu,\"ppid\":%llu,\"exec_seq\":%u,\"argv\":[",
               (unsigned long long)pi->pid, (unsigned long long)pi->ppid, pi->exec_seq);
        const char *a = pi->argv;
        for (uint32_t i = 0; i < pi->argc; i++) {
            if (i)
                putchar(',');
            json_str(a);
            a += strlen(a) + 1;
        }
        printf("]}\n");
        const gs_event *ev;
        size_t ne;
        while (gs_reader_next_frame(r, &ev, &ne) > 0) {
            for (size_t i = 0; i < ne; i++) {
                const gs_event *e = &ev[i];
                if (gs_kind_class(e->kind) != GS_CLASS_MARKER)
                    continue;
                printf("{\"pid\":%llu,\"tid\":%u,\"kind\":\"%s\",\"ts\":%llu,\"aux\":%llu,"
                       "\"aux2\":%llu,\"text\":",
                       (unsigned long long)pi->pid, e->tid, gs_kind_name(e->kind),
                       (unsigned long long)e->ts, (unsigned long long)e->aux,
                       (unsigned long long)e->aux2);
                if (e->str)
                    json_str(gs_reader_string(r, e->str));
                else
                    printf("null");
                printf("}\n");
            }
        }
        gs_reader_close(r);
    }
    gs_run_files_free(&files);
    return ferror(stdout) ? 1 : 0;
}
