/* hk_nvtx_abi.c — the NVTX injection ABI that preload/gs_nvtx_abi.h
 * declares (so that the collector records NVTX without the CUDA headers),
 * compared number by number and field by field with the real nvtx3
 * headers. Not preloaded: run.sh runs it as a plain program. Built only
 * where the CUDA headers are (tests/hooks/rules.mk). */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <stddef.h>

#include "gs_nvtx_abi.h"
#include "hk_util.h"

#define SAME_OFFSET(ours, real) \
    ASSERT_EQ(offsetof(gs_nvtx_attr, ours), offsetof(nvtxEventAttributes_t, real))

int main(void)
{
    ASSERT_EQ(GS_NVTX_ETID_CALLBACKS, NVTX_ETID_CALLBACKS);
    ASSERT_EQ(GS_NVTX_MODULE_CORE, NVTX_CB_MODULE_CORE);
    ASSERT_EQ(GS_NVTX_MODULE_CORE2, NVTX_CB_MODULE_CORE2);
    ASSERT_EQ(GS_NVTX_CORE_MarkEx, NVTX_CBID_CORE_MarkEx);
    ASSERT_EQ(GS_NVTX_CORE_MarkA, NVTX_CBID_CORE_MarkA);
    ASSERT_EQ(GS_NVTX_CORE_MarkW, NVTX_CBID_CORE_MarkW);
    ASSERT_EQ(GS_NVTX_CORE_RangeStartEx, NVTX_CBID_CORE_RangeStartEx);
    ASSERT_EQ(GS_NVTX_CORE_RangeStartA, NVTX_CBID_CORE_RangeStartA);
    ASSERT_EQ(GS_NVTX_CORE_RangeStartW, NVTX_CBID_CORE_RangeStartW);
    ASSERT_EQ(GS_NVTX_CORE_RangeEnd, NVTX_CBID_CORE_RangeEnd);
    ASSERT_EQ(GS_NVTX_CORE_RangePushEx, NVTX_CBID_CORE_RangePushEx);
    ASSERT_EQ(GS_NVTX_CORE_RangePushA, NVTX_CBID_CORE_RangePushA);
    ASSERT_EQ(GS_NVTX_CORE_RangePushW, NVTX_CBID_CORE_RangePushW);
    ASSERT_EQ(GS_NVTX_CORE_RangePop, NVTX_CBID_CORE_RangePop);
    ASSERT_EQ(GS_NVTX_CORE2_DomainMarkEx, NVTX_CBID_CORE2_DomainMarkEx);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRangeStartEx, NVTX_CBID_CORE2_DomainRangeStartEx);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRangeEnd, NVTX_CBID_CORE2_DomainRangeEnd);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRangePushEx, NVTX_CBID_CORE2_DomainRangePushEx);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRangePop, NVTX_CBID_CORE2_DomainRangePop);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRegisterStringA, NVTX_CBID_CORE2_DomainRegisterStringA);
    ASSERT_EQ(GS_NVTX_CORE2_DomainRegisterStringW, NVTX_CBID_CORE2_DomainRegisterStringW);
    ASSERT_EQ(GS_NVTX_CORE2_DomainCreateA, NVTX_CBID_CORE2_DomainCreateA);
    ASSERT_EQ(GS_NVTX_CORE2_DomainCreateW, NVTX_CBID_CORE2_DomainCreateW);
    ASSERT_EQ(GS_NVTX_CORE2_DomainDestroy, NVTX_CBID_CORE2_DomainDestroy);
    ASSERT_EQ(GS_NVTX_MSG_ASCII, NVTX_MESSAGE_TYPE_ASCII);
    ASSERT_EQ(GS_NVTX_MSG_UNICODE, NVTX_MESSAGE_TYPE_UNICODE);
    ASSERT_EQ(GS_NVTX_MSG_REGISTERED, NVTX_MESSAGE_TYPE_REGISTERED);

    ASSERT_EQ(sizeof(gs_nvtx_attr), sizeof(nvtxEventAttributes_t));
    SAME_OFFSET(version, version);
    SAME_OFFSET(size, size);
    SAME_OFFSET(category, category);
    SAME_OFFSET(color_type, colorType);
    SAME_OFFSET(color, color);
    SAME_OFFSET(payload_type, payloadType);
    SAME_OFFSET(payload, payload);
    SAME_OFFSET(message_type, messageType);
    SAME_OFFSET(message, message);
    ASSERT_EQ(sizeof(gs_nvtx_range_id), sizeof(nvtxRangeId_t));

    ASSERT_EQ(sizeof(gs_nvtx_callbacks), sizeof(NvtxExportTableCallbacks));
    ASSERT_EQ(offsetof(gs_nvtx_callbacks, get_module_table),
              offsetof(NvtxExportTableCallbacks, GetModuleFunctionTable));
    return hk_report();
}
