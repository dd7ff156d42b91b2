/* check.h — the parts of `gpustarve check` (cmd_check.c): its writers, the
 * terminal lines and the JSON (check_out.c, schema gpustarve.check/1 in
 * docs/check.md).
 *
 * Must never: measure (analyzer/machine/ does) or decide a verdict.
 */
#ifndef GS_CHECK_H
#define GS_CHECK_H

#include "base/out_buf.h"
#include "machine/mc_check.h"

typedef struct check_run {
    const mc_list *items;
    const mc_opts *opts;
    char *const *paths;
    int npaths;
    double seconds;
    const char *datasheet_from; /* where the table came from */
} check_run;

void check_write_text(gs_out *o, const check_run *c);
void check_write_json(gs_out *o, const check_run *c);

#endif
