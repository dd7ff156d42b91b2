/* sim_nvml.c — a stand-in libnvidia-ml.so.1 for the simulated GPU
 * (build/simcuda): the NVML calls `gpustarve check` makes, answering from
 * the environment (read at nvmlInit): SIMCUDA_DEVICES, the PCIe link
 * (SIMCUDA_PCIE current, SIMCUDA_PCIE_MAX, "4x16"), clock event reasons
 * (SIMCUDA_THROTTLE: power, hw_slowdown, power_brake, sw_thermal,
 * hw_thermal, sync_boost, app_clocks, idle; comma-separated), a MIG card
 * (SIMCUDA_MIG set), a vGPU (SIMCUDA_VGPU=1), SM clocks (SIMCUDA_SM_CLOCK_MHZ
 * now, SIMCUDA_CLOCK_MHZ the maximum). Devices are found by the PCI bus id
 * the simulated runtime gives (bus 0x10 + index). No NVML header exists
 * without a driver, so its types and values are declared here, from the
 * NVML API reference.
 *
 * Must never: depend on the simulated runtime (NVML works without CUDA).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
       NVML_ERROR_NOT_FOUND = 6 };
enum { NVML_CLOCK_SM = 1 };
typedef struct nvmlDevice_st { int index; } *nvmlDevice_t;

#define SIM_MAX 16
static struct nvmlDevice_st g_dev[SIM_MAX];
static int g_init, g_ndev, g_mig, g_vgpu;
static unsigned g_gen, g_width, g_max_gen, g_max_width, g_clock, g_max_clock;
static unsigned long long g_reasons;

static void link_env(const char *name, unsigned *gen, unsigned *width, const char *def)
{
    const char *s = getenv(name);
    if (!s || sscanf(s, "%ux%u", gen, width) != 2)
        sscanf(def, "%ux%u", gen, width);
}

static unsigned long long reasons(const char *s)
{
    static const struct { const char *name; unsigned long long bit; } names[] = {
        {"idle", 0x1}, {"app_clocks", 0x2}, {"power", 0x4}, {"hw_slowdown", 0x8},
        {"sync_boost", 0x10}, {"sw_thermal", 0x20}, {"hw_thermal", 0x40}, {"power_brake", 0x80},
    };
    unsigned long long r = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s ? s : "");
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (strcmp(t, names[i].name) == 0)
                r |= names[i].bit;
    return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
    const char *s = getenv("SIMCUDA_DEVICES");
    g_ndev = s && *s ? atoi(s) : 1;
    g_ndev = g_ndev < 0 ? 0 : g_ndev > SIM_MAX ? SIM_MAX : g_ndev;
    for (int i = 0; i < SIM_MAX; i++)
        g_dev[i].index = i;
    link_env("SIMCUDA_PCIE", &g_gen, &g_width, "4x16");
    link_env("SIMCUDA_PCIE_MAX", &g_max_gen, &g_max_width, "4x16");
    s = getenv("SIMCUDA_MIG");
    g_mig = s && *s;
    s = getenv("SIMCUDA_VGPU");
    g_vgpu = s && *s && strcmp(s, "0") != 0;
    g_reasons = reasons(getenv("SIMCUDA_THROTTLE"));
    s = getenv("SIMCUDA_CLOCK_MHZ");
    g_max_clock = s && *s ? (unsigned)atof(s) : 1980;
    s = getenv("SIMCUDA_SM_CLOCK_MHZ");
    g_clock = s && *s ? (unsigned)atof(s) : g_max_clock;
    g_init = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown(void)
{
    g_init = 0;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    return result == NVML_SUCCESS ? "Success" : "simulated NVML error";
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)g_ndev;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned)g_ndev)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &g_dev[index];
    return NVML_SUCCESS;
}

/* "0000:11:00.0" or NVML's "00000000:11:00.0": bus 0x10 + index */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    unsigned dom, bus, dev, fn;
    if (!g_init)
        return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device || sscanf(pciBusId, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (bus < 0x10 || bus - 0x10 >= (unsigned)g_ndev)
        return NVML_ERROR_NOT_FOUND;
    *device = &g_dev[bus - 0x10];
    return NVML_SUCCESS;
}

/* The common checks of a device call: NVML up, device and out-pointer given. */
static nvmlReturn_t bad(const void *device, const void *out)
{
    return !g_init ? NVML_ERROR_UNINITIALIZED : !device || !out ? NVML_ERROR_INVALID_ARGUMENT
                                                                 : NVML_SUCCESS;
}

/* A device's unsigned answer: the checks, then *out = value. */
static nvmlReturn_t give(nvmlDevice_t device, unsigned int *out, unsigned int value)
{
    if (bad(device, out))
        return bad(device, out);
    *out = value;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    if (bad(device, name))
        return bad(device, name);
    const char *s = getenv("SIMCUDA_DEVICE_NAME");
    snprintf(name, length, "%s", s && *s ? s : "gpustarve simulated GPU");
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device, unsigned long long *r)
{
    if (bad(device, r))
        return bad(device, r);
    *r = g_reasons;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device, unsigned long long *r)
{
    return nvmlDeviceGetCurrentClocksEventReasons(device, r);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending)
{
    if (bad(device, current))
        return bad(device, current);
    *current = (unsigned)g_mig;
    if (pending)
        *pending = (unsigned)g_mig;
    return NVML_SUCCESS;
}

/* nvmlGpuVirtualizationMode_t: 0 none, 1 pass-through, 2 vGPU (a guest) */
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device, int *mode)
{
    if (bad(device, mode))
        return bad(device, mode);
    *mode = g_vgpu ? 2 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *v)
{
    return give(device, v, g_gen);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device, unsigned int *v)
{
    return give(device, v, g_max_gen);
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *v)
{
    return give(device, v, g_width);
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device, unsigned int *v)
{
    return give(device, v, g_max_width);
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    return give(device, clock, type == NVML_CLOCK_SM ? g_clock : 0);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    return give(device, clock, type == NVML_CLOCK_SM ? g_max_clock : 0);
}
