/* cmd_top.h — the live view of a run in progress, shared by `gpustarve top`
 * and `gpustarve run --live` (docs/report-outputs.md, "Live view").
 *
 * Must never: write to stdout from top_live_start's thread (the traced
 * program's output is the user's).
 */
#ifndef CMD_TOP_H
#define CMD_TOP_H

#include <stddef.h>

int gs_cmd_top(int argc, char **argv);

/* run --live: a thread that prints one summary line of dir to stderr every
 * period_s seconds until top_live_stop. NULL when it could not start. */
typedef struct top_live top_live;
top_live *top_live_start(const char *dir, unsigned period_s);
void top_live_stop(top_live *t);

#endif
