/* gs_nvtx.c — NVTX v3 injection: ranges and marks as trace records.
 *
 * Responsible for: InitializeInjectionNvtx2, the entry point NVTX looks up
 * in the library NVTX_INJECTION64_PATH names (set by `gpustarve run`); it
 * fills the CORE and CORE2 callback tables of each NVTX instance that calls
 * it (every shared object that uses NVTX has its own) so that
 * nvtxRangePush{A,W,Ex} / nvtxRangePop -> nvtx_push / nvtx_pop,
 * nvtxRangeStart{A,W,Ex} / nvtxRangeEnd -> nvtx_start / nvtx_end,
 * nvtxMark{A,W,Ex} -> mark, and their nvtxDomain* forms (with the domain
 * name's string id in aux). nvtxDomainCreateA/W and
 * nvtxDomainRegisterStringA/W hand out handles that are string ids, so a
 * registered message costs nothing per call.
 *
 * Must never: block, lock or allocate (strings go to the lock-free arena);
 * return anything NVTX's contract does not allow (push returns the nesting
 * level, start a unique id).
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <stdatomic.h>
#include <string.h>
#include <wchar.h>

#include "gs_collector.h"
#include "gs_preload.h"

static __thread int t_depth GS_TLS_IE; /* open push ranges of this thread */
static _Atomic uint64_t g_next_range = 1;

/* ---- strings -------------------------------------------------------------------- */

static uint32_t intern_a(const char *s)
{
    s = (const char *)gs_launder(s);
    return s ? gs_str_intern(s, strnlen(s, GS_STRING_MAX)) : 0;
}

/* UTF-8 of a wide string (first 255 characters) */
static uint32_t intern_w(const wchar_t *w)
{
    w = (const wchar_t *)gs_launder(w);
    if (!w)
        return 0;
    char buf[1024];
    size_t n = 0;
    for (size_t i = 0; w[i] && i < 255; i++) {
        uint32_t c = (uint32_t)w[i];
        if (c < 0x80) {
            buf[n++] = (char)c;
        } else if (c < 0x800) {
            buf[n++] = (char)(0xC0 | (c >> 6));
            buf[n++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            buf[n++] = (char)(0xE0 | (c >> 12));
            buf[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[n++] = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x110000) {
            buf[n++] = (char)(0xF0 | (c >> 18));
            buf[n++] = (char)(0x80 | ((c >> 12) & 0x3F));
            buf[n++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buf[n++] = (char)(0x80 | (c & 0x3F));
        }
    }
    return gs_str_intern(buf, n);
}

/* Message of an event attribute structure (0 when none or unreadable). */
static uint32_t intern_attr(const nvtxEventAttributes_t *a)
{
    a = (const nvtxEventAttributes_t *)gs_launder(a);
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message))
        return 0;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return intern_a(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return intern_w(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return (uint32_t)(uintptr_t)a->message.registered;
    default: return 0;
    }
}

static uint32_t domain_id(nvtxDomainHandle_t d)
{
    return (uint32_t)(uintptr_t)d; /* our handles are string ids; NULL = default */
}

/* ---- records ------------------------------------------------------------------------- */

static void emit(uint16_t kind, uint32_t str, uint32_t domain, uint64_t id)
{
    gs_rec r = GS_REC_INIT(kind, gs_now());
    r.str = str;
    r.aux = domain;
    if (kind == GS_K_NVTX_START || kind == GS_K_NVTX_END)
        r.offset = (int64_t)id; /* -> aux2 (gs_preload.h) */
    gs_emit(&r);
}

/* Each callback: guard -> intern -> record. The guard keeps NVTX calls made
 * inside a hooked call (or by our own code) out of the trace. */

static int push(uint32_t (*str)(const void *), const void *msg, uint32_t domain)
{
    int level = t_depth++;
    if (!gs_enter())
        return level;
    emit(GS_K_NVTX_PUSH, str(msg), domain, 0);
    gs_leave();
    return level;
}

static int pop(uint32_t domain)
{
    int level = t_depth > 0 ? --t_depth : -1;
    if (!gs_enter())
        return level;
    emit(GS_K_NVTX_POP, 0, domain, 0);
    gs_leave();
    return level;
}

static nvtxRangeId_t start(uint32_t (*str)(const void *), const void *msg, uint32_t domain)
{
    uint64_t id = atomic_fetch_add_explicit(&g_next_range, 1, memory_order_relaxed);
    if (!gs_enter())
        return id;
    emit(GS_K_NVTX_START, str(msg), domain, id);
    gs_leave();
    return id;
}

static void end(nvtxRangeId_t id)
{
    if (!gs_enter())
        return;
    emit(GS_K_NVTX_END, 0, 0, id);
    gs_leave();
}

static void mark(uint32_t (*str)(const void *), const void *msg, uint32_t domain)
{
    if (!gs_enter())
        return;
    emit(GS_K_NVTX_MARK, str(msg), domain, 0);
    gs_leave();
}

static uint32_t str_a(const void *m) { return intern_a(m); }
static uint32_t str_w(const void *m) { return intern_w(m); }
static uint32_t str_ex(const void *m) { return intern_attr(m); }

/* ---- the CORE table ----------------------------------------------------------------------- */

static void NVTX_API markEx(const nvtxEventAttributes_t *a) { mark(str_ex, a, 0); }
static void NVTX_API markA(const char *m) { mark(str_a, m, 0); }
static void NVTX_API markW(const wchar_t *m) { mark(str_w, m, 0); }
static nvtxRangeId_t NVTX_API rangeStartEx(const nvtxEventAttributes_t *a) { return start(str_ex, a, 0); }
static nvtxRangeId_t NVTX_API rangeStartA(const char *m) { return start(str_a, m, 0); }
static nvtxRangeId_t NVTX_API rangeStartW(const wchar_t *m) { return start(str_w, m, 0); }
static void NVTX_API rangeEnd(nvtxRangeId_t id) { end(id); }
static int NVTX_API rangePushEx(const nvtxEventAttributes_t *a) { return push(str_ex, a, 0); }
static int NVTX_API rangePushA(const char *m) { return push(str_a, m, 0); }
static int NVTX_API rangePushW(const wchar_t *m) { return push(str_w, m, 0); }
static int NVTX_API rangePop(void) { return pop(0); }

/* ---- the CORE2 (domain) table ---------------------------------------------------------------- */

static void NVTX_API domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    mark(str_ex, a, domain_id(d));
}

static nvtxRangeId_t NVTX_API domainRangeStartEx(nvtxDomainHandle_t d,
                                                 const nvtxEventAttributes_t *a)
{
    return start(str_ex, a, domain_id(d));
}

static void NVTX_API domainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    (void)d;
    end(id);
}

static int NVTX_API domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
    return push(str_ex, a, domain_id(d));
}

static int NVTX_API domainRangePop(nvtxDomainHandle_t d) { return pop(domain_id(d)); }

/* Handles are string ids: never NULL for a name we could intern. */
static nvtxStringHandle_t NVTX_API domainRegisterStringA(nvtxDomainHandle_t d, const char *s)
{
    (void)d;
    return (nvtxStringHandle_t)(uintptr_t)intern_a(s);
}

static nvtxStringHandle_t NVTX_API domainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s)
{
    (void)d;
    return (nvtxStringHandle_t)(uintptr_t)intern_w(s);
}

static nvtxDomainHandle_t NVTX_API domainCreateA(const char *name)
{
    return (nvtxDomainHandle_t)(uintptr_t)intern_a(name);
}

static nvtxDomainHandle_t NVTX_API domainCreateW(const wchar_t *name)
{
    return (nvtxDomainHandle_t)(uintptr_t)intern_w(name);
}

static void NVTX_API domainDestroy(nvtxDomainHandle_t d) { (void)d; }

/* ---- injection ------------------------------------------------------------------------------- */

typedef struct slot {
    unsigned cbid;
    NvtxFunctionPointer fn;
} slot;

static void fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const slot *s,
                 size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (s[i].cbid <= size && table[s[i].cbid])
            *table[s[i].cbid] = s[i].fn;
}

#define FP(f) ((NvtxFunctionPointer)(void (*)(void))(f))

GS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table);
GS_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table)
{
    gs_init();
    if (!atomic_load(&gs_on) || !get_table)
        return 0; /* not tracing: NVTX stays a no-op */
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)get_table(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    static const slot core[] = {
        {NVTX_CBID_CORE_MarkEx, FP(markEx)},
        {NVTX_CBID_CORE_MarkA, FP(markA)},
        {NVTX_CBID_CORE_MarkW, FP(markW)},
        {NVTX_CBID_CORE_RangeStartEx, FP(rangeStartEx)},
        {NVTX_CBID_CORE_RangeStartA, FP(rangeStartA)},
        {NVTX_CBID_CORE_RangeStartW, FP(rangeStartW)},
        {NVTX_CBID_CORE_RangeEnd, FP(rangeEnd)},
        {NVTX_CBID_CORE_RangePushEx, FP(rangePushEx)},
        {NVTX_CBID_CORE_RangePushA, FP(rangePushA)},
        {NVTX_CBID_CORE_RangePushW, FP(rangePushW)},
        {NVTX_CBID_CORE_RangePop, FP(rangePop)},
    };
    static const slot core2[] = {
        {NVTX_CBID_CORE2_DomainMarkEx, FP(domainMarkEx)},
        {NVTX_CBID_CORE2_DomainRangeStartEx, FP(domainRangeStartEx)},
        {NVTX_CBID_CORE2_DomainRangeEnd, FP(domainRangeEnd)},
        {NVTX_CBID_CORE2_DomainRangePushEx, FP(domainRangePushEx)},
        {NVTX_CBID_CORE2_DomainRangePop, FP(domainRangePop)},
        {NVTX_CBID_CORE2_DomainRegisterStringA, FP(domainRegisterStringA)},
        {NVTX_CBID_CORE2_DomainRegisterStringW, FP(domainRegisterStringW)},
        {NVTX_CBID_CORE2_DomainCreateA, FP(domainCreateA)},
        {NVTX_CBID_CORE2_DomainCreateW, FP(domainCreateW)},
        {NVTX_CBID_CORE2_DomainDestroy, FP(domainDestroy)},
    };
    fill(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0]);
    fill(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);
    return 1;
}
