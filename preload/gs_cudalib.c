/* gs_cudalib.c — finding the real CUDA functions behind the CUDA hooks
 * (hook_cuda.c: the runtime's; hook_cudrv.c: the driver's and the lookups).
 *
 * Responsible for: dlsym(RTLD_NEXT), and the fallback to a loaded CUDA
 * library found by name among the loaded objects (dl_iterate_phdr +
 * dlopen(RTLD_NOLOAD)), with the guard held so that what ld.so does inside
 * is not taken for the program's.
 *
 * Must never: load a library (RTLD_NOLOAD only), or change errno.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "gs_cudalib.h"
#include "gs_preload.h"

typedef struct find {
    const char *prefix;
    char path[4096];
} find;

static int find_loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    find *f = arg;
    const char *name = info->dlpi_name;
    const char *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base && strncmp(base, f->prefix, strlen(f->prefix)) == 0) {
        snprintf(f->path, sizeof f->path, "%s", name);
        return 1;
    }
    return 0;
}

void *gs_cuda_sym(const char *name, const char *lib_prefix)
{
    int depth = gs_t_depth;
    gs_t_depth = 1; /* what dlsym/dlopen do inside is not the program's */
    int err = errno;
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        find f = {.prefix = lib_prefix};
        f.path[0] = 0;
        dl_iterate_phdr(find_loaded, &f);
        void *h = f.path[0] ? dlopen(f.path, RTLD_LAZY | RTLD_NOLOAD) : NULL;
        if (h) {
            p = dlsym(h, name);
            dlclose(h); /* drops only the reference NOLOAD took */
        }
    }
    errno = err;
    gs_t_depth = depth;
    return p;
}
