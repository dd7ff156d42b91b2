/* gs_rundir.c — which files of a run directory are traces (one place for
 * every reader: report, dump, run's summary, sweep).
 *
 * Must never: open the files it lists (a reader decides what a damaged or
 * foreign file means), or be called from the collector's hot paths (it
 * allocates).
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gs_trace.h"

int gs_is_trace_name(const char *name)
{
    const size_t n = strlen(name), k = sizeof GS_TRACE_SUFFIX - 1;
    return n > k && strcmp(name + n - k, GS_TRACE_SUFFIX) == 0;
}

static int cmp_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gs_run_files_list(gs_run_files *rf, const char *dir)
{
    rf->path = NULL;
    rf->n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return GS_ERR_IO;
    const size_t dl = strlen(dir);
    const int slash = dl > 0 && dir[dl - 1] == '/';
    size_t cap = 0;
    int rc = GS_OK;
    const struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!gs_is_trace_name(de->d_name))
            continue;
        if (rf->n == cap) {
            const size_t nc = cap ? cap * 2 : 16;
            char **nv = realloc(rf->path, nc * sizeof *nv);
            if (!nv) {
                rc = GS_ERR_NOMEM;
                break;
            }
            rf->path = nv;
            cap = nc;
        }
        const size_t len = dl + 1 + strlen(de->d_name) + 1;
        char *p = malloc(len);
        if (!p) {
            rc = GS_ERR_NOMEM;
            break;
        }
        memcpy(p, dir, dl);
        size_t at = dl;
        if (!slash)
            p[at++] = '/';
        strcpy(p + at, de->d_name);
        rf->path[rf->n++] = p;
    }
    const int saved = errno;
    closedir(d);
    if (rc != GS_OK) {
        gs_run_files_free(rf);
        errno = saved;
        return rc;
    }
    if (rf->n)
        qsort(rf->path, rf->n, sizeof *rf->path, cmp_path);
    return GS_OK;
}

void gs_run_files_free(gs_run_files *rf)
{
    for (size_t i = 0; i < rf->n; i++)
        free(rf->path[i]);
    free(rf->path);
    rf->path = NULL;
    rf->n = 0;
}
