/* gs_real.c — resolves the real functions behind every hook.
 *
 * Responsible for: filling gs_real from GS_REAL_LIST with dlsym(RTLD_NEXT), in
 * one place, once (pthread_once), whether the first caller is our constructor
 * or a hook called from another library's constructor before it.
 *
 * Must never: be called from the writer's hot loop, abort or exit when a
 * symbol is missing (the hook returns ENOSYS instead).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "gs_real.h"

gs_real_fns gs_real;

static pthread_once_t g_real_once = PTHREAD_ONCE_INIT;

static void *lookup(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
#if defined(__x86_64__)
    /* RATIONALE: __xstat & co. are compat-only symbols since glibc 2.33;
     * plain dlsym finds them on x86_64 today, dlvsym keeps working if a
     * future glibc hides them better. */
    if (!p && name[0] == '_' && name[1] == '_')
        p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
#endif
    return p;
}

static void resolve_all(void)
{
    gs_real_fns t;
    memset(&t, 0, sizeof t);
#define GS_X_RESOLVE(ret, name, args) *(void **)&t.name = lookup(#name);
    GS_REAL_LIST(GS_X_RESOLVE)
#undef GS_X_RESOLVE
    gs_real = t;
}

void gs_real_resolve(void)
{
    pthread_once(&g_real_once, resolve_all);
}
