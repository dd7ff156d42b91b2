/* mc_datasheet.h — the datasheet table (analyzer/machine/gpus.tsv, built into the
 * command; --datasheet FILE reads another): what each card people rent
 * should give, and which row a CUDA device name belongs to (mc_datasheet.c).
 *
 * Must never: guess a row for a name no pattern matches (unknown cards get
 * measured values only).
 */
#ifndef MC_DATASHEET_H
#define MC_DATASHEET_H

#include <stddef.h>

typedef struct mc_card {
    char name[64];
    char match[256];     /* comma-separated patterns */
    int sms;             /* 0 unknown */
    double mem_gb;       /* memory as sold, GB; 0 unknown */
    double mem_GBps;
    double fp32_tflops;  /* dense FP32 */
    double f16_tflops;   /* dense FP16/BF16, tensor cores, FP32 accumulate; 0 none */
    int f16_bf16;        /* 1: BF16 is what the check measures, 0: FP16 */
    int pcie_gen, pcie_width; /* 0 unknown */
    char source[480];
} mc_card;

typedef struct mc_sheet {
    mc_card *v;
    size_t n, cap;
    char from[256]; /* "built-in analyzer/machine/gpus.tsv" or the file read */
} mc_sheet;

/* Parse the text of a table. 0, or -1 with err ("line 12: 9 fields, want 11"). */
int mc_sheet_parse(mc_sheet *s, const char *text, char *err, size_t ecap);
/* The built-in table (path NULL) or the file at path. 0 or -1 with err. */
int mc_sheet_load(mc_sheet *s, const char *path, char *err, size_t ecap);
void mc_sheet_free(mc_sheet *s);
/* The row for a CUDA device name (" MIG ..." taken off first), NULL none. */
const mc_card *mc_sheet_match(const mc_sheet *s, const char *device_name);
/* The MIG profile in a device name ("3g.20gb" of "... MIG 3g.20gb"), or
 * NULL when the name has none. */
const char *mc_mig_profile(const char *device_name);

#endif
