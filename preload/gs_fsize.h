/* gs_fsize.h — the one check before the collector makes a file grow (the
 * trace file, the live file, the copy of Python's perf map).
 *
 * RATIONALE: past RLIMIT_FSIZE, write, ftruncate and fallocate raise
 * SIGXFSZ, whose default action kills the program; the collector asks
 * first and treats a write that would cross the limit as a full disk
 * (docs/collector-safety.md).
 *
 * Must never: call a hooked function (one raw system call).
 */
#ifndef GS_FSIZE_H
#define GS_FSIZE_H

#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 1 when a file may grow to `end` bytes under RLIMIT_FSIZE. */
static inline int gs_fsize_allows(uint64_t end)
{
    struct rlimit rl;
    if (syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &rl) != 0)
        return 1;
    return rl.rlim_cur == RLIM_INFINITY || end <= (uint64_t)rl.rlim_cur;
}

#endif
