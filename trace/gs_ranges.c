/* gs_ranges.c — the step and batch-wait range patterns (gs_ranges.h).
 *
 * Must never: leave a compiled pattern behind when the other fails.
 */
#include "gs_ranges.h"

#include <stddef.h>

#define GS_RANGE_FLAGS (REG_EXTENDED | REG_NOSUB | REG_ICASE)

int gs_ranges_init(gs_ranges *r, const char *step_re, const char *fetch_re, const char **bad)
{
    const char *s = step_re ? step_re : GS_STEP_RE_DEFAULT;
    const char *f = fetch_re ? fetch_re : GS_FETCH_RE_DEFAULT;
    if (regcomp(&r->step, s, GS_RANGE_FLAGS) != 0) {
        *bad = s;
        return -1;
    }
    if (regcomp(&r->fetch, f, GS_RANGE_FLAGS) != 0) {
        regfree(&r->step);
        *bad = f;
        return -1;
    }
    return 0;
}

void gs_ranges_free(gs_ranges *r)
{
    regfree(&r->step);
    regfree(&r->fetch);
}

int gs_range_is_step(const gs_ranges *r, const char *name)
{
    return regexec(&r->step, name, 0, NULL, 0) == 0;
}

int gs_range_is_fetch(const gs_ranges *r, const char *name)
{
    return regexec(&r->fetch, name, 0, NULL, 0) == 0;
}
