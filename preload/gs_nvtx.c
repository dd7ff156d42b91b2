/* gs_nvtx.c — NVTX v3 injection: ranges and marks as trace records.
 *
 * Part of the collector, not of a GPU source: NVTX needs no GPU and no CUDA
 * header (its ABI is declared in gs_nvtx_abi.h), so every build records it.
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
#include <stdatomic.h>
#include <string.h>
#include <wchar.h>

#include "gs_nvtx_abi.h"
#include "gs_preload.h"
#include "gs_startup.h"
#include "gs_strings.h"

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
static uint32_t intern_attr(const gs_nvtx_attr *a)
{
    a = (const gs_nvtx_attr *)gs_launder(a);
    if (!a || a->size < offsetof(gs_nvtx_attr, message) + sizeof(a->message))
        return 0;
    switch (a->message_type) {
    case GS_NVTX_MSG_ASCII: return intern_a(a->message.ascii);
    case GS_NVTX_MSG_UNICODE: return intern_w(a->message.unicode);
    case GS_NVTX_MSG_REGISTERED: return (uint32_t)(uintptr_t)a->message.registered;
    default: return 0;
    }
}

static uint32_t domain_id(gs_nvtx_domain d)
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
    gs_start_threads(); /* a loop's ranges: the writer runs from here on */
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

static gs_nvtx_range_id start(uint32_t (*str)(const void *), const void *msg, uint32_t domain)
{
    uint64_t id = atomic_fetch_add_explicit(&g_next_range, 1, memory_order_relaxed);
    gs_start_threads();
    if (!gs_enter())
        return id;
    emit(GS_K_NVTX_START, str(msg), domain, id);
    gs_leave();
    return id;
}

static void end(gs_nvtx_range_id id)
{
    if (!gs_enter())
        return;
    emit(GS_K_NVTX_END, 0, 0, id);
    gs_leave();
}

static void mark(uint32_t (*str)(const void *), const void *msg, uint32_t domain)
{
    gs_start_threads();
    if (!gs_enter())
        return;
    emit(GS_K_NVTX_MARK, str(msg), domain, 0);
    gs_leave();
}

static uint32_t str_a(const void *m) { return intern_a(m); }
static uint32_t str_w(const void *m) { return intern_w(m); }
static uint32_t str_ex(const void *m) { return intern_attr(m); }

/* ---- the CORE table ----------------------------------------------------------------------- */

static void markEx(const gs_nvtx_attr *a) { mark(str_ex, a, 0); }
static void markA(const char *m) { mark(str_a, m, 0); }
static void markW(const wchar_t *m) { mark(str_w, m, 0); }
static gs_nvtx_range_id rangeStartEx(const gs_nvtx_attr *a) { return start(str_ex, a, 0); }
static gs_nvtx_range_id rangeStartA(const char *m) { return start(str_a, m, 0); }
static gs_nvtx_range_id rangeStartW(const wchar_t *m) { return start(str_w, m, 0); }
static void rangeEnd(gs_nvtx_range_id id) { end(id); }
static int rangePushEx(const gs_nvtx_attr *a) { return push(str_ex, a, 0); }
static int rangePushA(const char *m) { return push(str_a, m, 0); }
static int rangePushW(const wchar_t *m) { return push(str_w, m, 0); }
static int rangePop(void) { return pop(0); }

/* ---- the CORE2 (domain) table ---------------------------------------------------------------- */

static void domainMarkEx(gs_nvtx_domain d, const gs_nvtx_attr *a)
{
    mark(str_ex, a, domain_id(d));
}

static gs_nvtx_range_id domainRangeStartEx(gs_nvtx_domain d, const gs_nvtx_attr *a)
{
    return start(str_ex, a, domain_id(d));
}

static void domainRangeEnd(gs_nvtx_domain d, gs_nvtx_range_id id)
{
    (void)d;
    end(id);
}

static int domainRangePushEx(gs_nvtx_domain d, const gs_nvtx_attr *a)
{
    return push(str_ex, a, domain_id(d));
}

static int domainRangePop(gs_nvtx_domain d) { return pop(domain_id(d)); }

/* Handles are string ids: never NULL for a name we could intern. */
static gs_nvtx_string domainRegisterStringA(gs_nvtx_domain d, const char *s)
{
    (void)d;
    return (gs_nvtx_string)(uintptr_t)intern_a(s);
}

static gs_nvtx_string domainRegisterStringW(gs_nvtx_domain d, const wchar_t *s)
{
    (void)d;
    return (gs_nvtx_string)(uintptr_t)intern_w(s);
}

static gs_nvtx_domain domainCreateA(const char *name)
{
    return (gs_nvtx_domain)(uintptr_t)intern_a(name);
}

static gs_nvtx_domain domainCreateW(const wchar_t *name)
{
    return (gs_nvtx_domain)(uintptr_t)intern_w(name);
}

static void domainDestroy(gs_nvtx_domain d) { (void)d; }

/* ---- injection ------------------------------------------------------------------------------- */

typedef struct slot {
    unsigned cbid;
    gs_nvtx_fn fn;
} slot;

static void fill(const gs_nvtx_callbacks *cb, int module, const slot *s, size_t n)
{
    gs_nvtx_table table = NULL;
    unsigned size = 0;
    if (!cb->get_module_table(module, &table, &size) || !table)
        return;
    for (size_t i = 0; i < n; i++)
        if (s[i].cbid <= size && table[s[i].cbid])
            *table[s[i].cbid] = s[i].fn;
}

#define FP(f) ((gs_nvtx_fn)(void (*)(void))(f))

/* NVTX's entry point in the library NVTX_INJECTION64_PATH names. */
GS_EXPORT int InitializeInjectionNvtx2(gs_nvtx_get_table get_table);
GS_EXPORT int InitializeInjectionNvtx2(gs_nvtx_get_table get_table)
{
    gs_init();
    if (!atomic_load(&gs_on) || !get_table)
        return 0; /* not tracing: NVTX stays a no-op */
    const gs_nvtx_callbacks *cb = (const gs_nvtx_callbacks *)get_table(GS_NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_table)
        return 0;
    static const slot core[] = {
        {GS_NVTX_CORE_MarkEx, FP(markEx)},
        {GS_NVTX_CORE_MarkA, FP(markA)},
        {GS_NVTX_CORE_MarkW, FP(markW)},
        {GS_NVTX_CORE_RangeStartEx, FP(rangeStartEx)},
        {GS_NVTX_CORE_RangeStartA, FP(rangeStartA)},
        {GS_NVTX_CORE_RangeStartW, FP(rangeStartW)},
        {GS_NVTX_CORE_RangeEnd, FP(rangeEnd)},
        {GS_NVTX_CORE_RangePushEx, FP(rangePushEx)},
        {GS_NVTX_CORE_RangePushA, FP(rangePushA)},
        {GS_NVTX_CORE_RangePushW, FP(rangePushW)},
        {GS_NVTX_CORE_RangePop, FP(rangePop)},
    };
    static const slot core2[] = {
        {GS_NVTX_CORE2_DomainMarkEx, FP(domainMarkEx)},
        {GS_NVTX_CORE2_DomainRangeStartEx, FP(domainRangeStartEx)},
        {GS_NVTX_CORE2_DomainRangeEnd, FP(domainRangeEnd)},
        {GS_NVTX_CORE2_DomainRangePushEx, FP(domainRangePushEx)},
        {GS_NVTX_CORE2_DomainRangePop, FP(domainRangePop)},
        {GS_NVTX_CORE2_DomainRegisterStringA, FP(domainRegisterStringA)},
        {GS_NVTX_CORE2_DomainRegisterStringW, FP(domainRegisterStringW)},
        {GS_NVTX_CORE2_DomainCreateA, FP(domainCreateA)},
        {GS_NVTX_CORE2_DomainCreateW, FP(domainCreateW)},
        {GS_NVTX_CORE2_DomainDestroy, FP(domainDestroy)},
    };
    fill(cb, GS_NVTX_MODULE_CORE, core, sizeof core / sizeof core[0]);
    fill(cb, GS_NVTX_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);
    return 1;
}
