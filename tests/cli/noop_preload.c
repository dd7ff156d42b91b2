/* noop_preload.c — a harmless LD_PRELOAD library for the CLI tests of
 * `gpustarve run` (GPUSTARVE_LIB points at it), so they can check the run
 * directory, environment, exit status and signal handling without the real
 * collector. Must never hook or print anything.
 */
int gs_noop_preload_loaded = 1;
