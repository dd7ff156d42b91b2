/* gs_ranges.h — which named ranges mean a training step and which a wait
 * for a batch: NVTX ranges in a traced run, profiler ranges in an imported
 * PyTorch trace (ProfilerStep#N, enumerate(DataLoader)#...__next__). The
 * default patterns and their compiled form, shared by the analyzer and the
 * importer (docs/report-schema.md, "Steps").
 *
 * Must never: match case-sensitively (users name ranges "Train_Step" as
 * often as "train_step"), or keep a pattern that failed to compile.
 */
#ifndef GS_RANGES_H
#define GS_RANGES_H

#include <regex.h>

#define GS_STEP_RE_DEFAULT                                                                     \
    "^(ProfilerStep#[0-9]+|(train(ing)?[_ .-]?)?step([ _#:.-]?[0-9]+)?|"                        \
    "train[_ .-]?(batch|iter(ation)?)([ _#:.-]?[0-9]+)?|iteration([ _#:.-]?[0-9]+)?)$"
#define GS_FETCH_RE_DEFAULT                                                                    \
    "^(enumerate\\(DataLoader\\)#.*__next__|.*DataLoader.*__next__|next[_ .-]?batch|"            \
    "data[_ .-]?(wait|load(ing)?|fetch)|fetch([_ .-]?(batch|data))?|get[_ .-]?batch|"           \
    "load[_ .-]?batch|wait[_ .-]?(for[_ .-]?)?data)$"

typedef struct gs_ranges {
    regex_t step, fetch;
} gs_ranges;

/* Compile the given patterns, NULL meaning the default (extended, any
 * case). Returns 0, or -1 with *bad naming the pattern that failed (nothing
 * is left to free then). */
int gs_ranges_init(gs_ranges *r, const char *step_re, const char *fetch_re, const char **bad);
void gs_ranges_free(gs_ranges *r);

/* 1 when name is a step range / a batch-wait range. */
int gs_range_is_step(const gs_ranges *r, const char *name);
int gs_range_is_fetch(const gs_ranges *r, const char *name);

#endif
