/* gs_cudalib.h — finding the real CUDA functions behind the CUDA hooks.
 *
 * Must never: be called on a hook's hot path (only at a function's first
 * call, or until it is found), or load a library that is not loaded.
 */
#ifndef GS_CUDALIB_H
#define GS_CUDALIB_H

/* The real `name`: dlsym(RTLD_NEXT), else from the first loaded library
 * whose file name starts with lib_prefix ("libcudart", "libcuda.so"): CUDA
 * is often loaded into a local scope (dlopen by an extension module, or by
 * the runtime) that RTLD_NEXT cannot see. NULL when not loaded (yet).
 * Holds the nesting guard and keeps errno. */
void *gs_cuda_sym(const char *name, const char *lib_prefix);

#endif
