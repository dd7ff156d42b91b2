/* gs_nvtx_abi.h — the parts of NVTX v3's injection interface that
 * gs_nvtx.c uses, declared here so that the collector records NVTX ranges
 * in a build without the CUDA headers (NVTX itself is header-only and
 * lives in the traced program, not in us).
 *
 * The numbers are NVTX's ABI: the export-table id of the callbacks table,
 * the module ids, the slot of each callback in a module's function table,
 * the message types, and the layout of the event attribute structure (v2).
 * They never change (NVTX only appends). tests/hooks/hk_nvtx_abi.c
 * compares every one of them with the real nvtx3 headers where those exist.
 *
 * Must never: grow into a copy of NVTX; declare what gs_nvtx.c does not use.
 */
#ifndef GS_NVTX_ABI_H
#define GS_NVTX_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

/* export table id (NvtxExportTableID) */
#define GS_NVTX_ETID_CALLBACKS 1u

/* modules (NvtxCallbackModule) */
enum { GS_NVTX_MODULE_CORE = 1, GS_NVTX_MODULE_CORE2 = 5 };

/* slots of the CORE module (NvtxCallbackIdCore) */
enum {
    GS_NVTX_CORE_MarkEx = 1,
    GS_NVTX_CORE_MarkA = 2,
    GS_NVTX_CORE_MarkW = 3,
    GS_NVTX_CORE_RangeStartEx = 4,
    GS_NVTX_CORE_RangeStartA = 5,
    GS_NVTX_CORE_RangeStartW = 6,
    GS_NVTX_CORE_RangeEnd = 7,
    GS_NVTX_CORE_RangePushEx = 8,
    GS_NVTX_CORE_RangePushA = 9,
    GS_NVTX_CORE_RangePushW = 10,
    GS_NVTX_CORE_RangePop = 11,
};

/* slots of the CORE2 (domain) module (NvtxCallbackIdCore2) */
enum {
    GS_NVTX_CORE2_DomainMarkEx = 1,
    GS_NVTX_CORE2_DomainRangeStartEx = 2,
    GS_NVTX_CORE2_DomainRangeEnd = 3,
    GS_NVTX_CORE2_DomainRangePushEx = 4,
    GS_NVTX_CORE2_DomainRangePop = 5,
    GS_NVTX_CORE2_DomainRegisterStringA = 10,
    GS_NVTX_CORE2_DomainRegisterStringW = 11,
    GS_NVTX_CORE2_DomainCreateA = 12,
    GS_NVTX_CORE2_DomainCreateW = 13,
    GS_NVTX_CORE2_DomainDestroy = 14,
};

/* message types (nvtxMessageType_t) */
enum { GS_NVTX_MSG_ASCII = 1, GS_NVTX_MSG_UNICODE = 2, GS_NVTX_MSG_REGISTERED = 3 };

/* Handles are opaque pointers to NVTX; ours hold string ids. */
typedef uint64_t gs_nvtx_range_id;
typedef void *gs_nvtx_domain;
typedef void *gs_nvtx_string;

/* nvtxEventAttributes_t (version 2), field for field. */
typedef struct gs_nvtx_attr {
    uint16_t version;
    uint16_t size; /* sizeof the caller's structure: fields past it are absent */
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    union {
        uint64_t u64;
        int64_t i64;
        double f64;
        uint32_t u32;
        int32_t i32;
        float f32;
    } payload;
    int32_t message_type;
    union {
        const char *ascii;
        const wchar_t *unicode;
        gs_nvtx_string registered;
    } message;
} gs_nvtx_attr;

/* The callbacks export table (NvtxExportTableCallbacks): a module's function
 * table is an array of pointers to the slots NVTX calls through. */
typedef void (*gs_nvtx_fn)(void);
typedef gs_nvtx_fn **gs_nvtx_table;
typedef struct gs_nvtx_callbacks {
    size_t struct_size;
    int (*get_module_table)(int module, gs_nvtx_table *table, unsigned int *size);
} gs_nvtx_callbacks;

/* What NVTX passes to InitializeInjectionNvtx2 (NvtxGetExportTableFunc_t). */
typedef const void *(*gs_nvtx_get_table)(uint32_t export_table_id);

#endif
