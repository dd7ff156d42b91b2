/* gs_cupti_guest.c — living beside another CUPTI client: the user's
 * profiler (torch.profiler's Kineto, a custom tool) calling CUPTI while
 * gpustarve holds it.
 *
 * Responsible for: the CUPTI entry points a profiler starts with
 * (cuptiSubscribe[_v2], cuptiActivityRegisterCallbacks,
 * cuptiActivityEnable[Context]), exported so that a call the program makes
 * through the dynamic linker reaches us first. Such a call is foreign (the
 * CUPTI source calls libcupti through its own pointers, never through
 * these): before passing it on unchanged, gpustarve gives CUPTI up
 * (gs_cupti_foreign_call: flush, disable, unsubscribe, one warning) so the
 * user's profiler gets what it asked for; when gpustarve has not started
 * yet, it will not (the start sees the foreign call and steps back).
 *
 * Must never: change what the call returns, call it twice, or treat
 * libcupti's own internal calls as foreign (the caller's object is
 * checked).
 */
#include <cupti.h>

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "gs_cupti.h"

/* The real function, from the libcupti next in the search order (the one
 * the caller linked), else from the one the source loaded. */
static void *real_fn(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load(slot);
    if (p)
        return p;
    p = dlsym(RTLD_NEXT, name);
    if (!p)
        p = gs_cupti_sym(name);
    if (p)
        atomic_store(slot, p);
    return p;
}

/* 1 when the call comes from outside libcupti (the object real lives in). */
static int foreign(const void *caller, const void *real)
{
    Dl_info a, b;
    if (!dladdr(caller, &a) || !dladdr(real, &b))
        return 1;
    return a.dli_fbase != b.dli_fbase;
}

#define GS_GUEST __attribute__((visibility("default")))

#define GS_GUEST_LIST(X)                                                                   \
    X(cuptiSubscribe, (CUpti_SubscriberHandle * s, CUpti_CallbackFunc cb, void *ud),      \
      (s, cb, ud))                                                                         \
    X(cuptiActivityRegisterCallbacks,                                                      \
      (CUpti_BuffersCallbackRequestFunc req, CUpti_BuffersCallbackCompleteFunc done),      \
      (req, done))                                                                         \
    X(cuptiActivityEnable, (CUpti_ActivityKind kind), (kind))                              \
    X(cuptiActivityEnableContext, (CUcontext ctx, CUpti_ActivityKind kind), (ctx, kind))

/* Each: the real function, the foreign check, then the call unchanged.
 * RATIONALE: a macro for four identical forwarders; the return it holds is
 * the forwarded call's, never an early one of ours but the missing-symbol
 * case, which cannot call through NULL. */
#define GS_X_GUEST(name, params, args)                                                    \
    static void *_Atomic real_##name;                                                     \
    GS_GUEST CUptiResult CUPTIAPI name params;                                            \
    GS_GUEST CUptiResult CUPTIAPI name params                                             \
    {                                                                                     \
        CUptiResult(CUPTIAPI * real) params = real_fn(&real_##name, #name);               \
        if (!real)                                                                        \
            return CUPTI_ERROR_NOT_INITIALIZED;                                           \
        if (foreign(__builtin_return_address(0), (const void *)real))                     \
            gs_cupti_foreign_call(#name);                                                 \
        return real args;                                                                 \
    }
GS_GUEST_LIST(GS_X_GUEST)
#undef GS_X_GUEST

#if CUPTI_API_VERSION >= 130000
/* CUDA 13's subscribe with parameters. */
static void *_Atomic real_cuptiSubscribe_v2;
GS_GUEST CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb,
                                                void *ud, CUpti_SubscriberParams *params);
GS_GUEST CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb,
                                                void *ud, CUpti_SubscriberParams *params)
{
    CUptiResult(CUPTIAPI * real)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                 CUpti_SubscriberParams *) =
        real_fn(&real_cuptiSubscribe_v2, "cuptiSubscribe_v2");
    if (!real)
        return CUPTI_ERROR_NOT_INITIALIZED;
    if (foreign(__builtin_return_address(0), (const void *)real))
        gs_cupti_foreign_call("cuptiSubscribe_v2");
    return real(s, cb, ud, params);
}
#endif
