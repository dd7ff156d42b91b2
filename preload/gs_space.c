/* gs_space.c — how much of a file system the collector may take.
 *
 * Responsible for: the free-space rule every disk write and every block
 * reservation of the collector obeys (gs_output.c writes frames,
 * gs_livefile.c allocates ring slots and string log): the program's space
 * comes first. A frame is written only while the file system keeps
 * 1/64 of its size free after it (at most 64 MiB: "nearly full"); blocks
 * are set aside ahead of use only while 1 GiB stays free after them.
 *
 * RATIONALE: the collector cannot know what the program will write; it can
 * keep its own use small against what is free. Trace frames are small and
 * are what the user asked for, so they go on until the file system is
 * nearly full (then the events are counted lost, never the program's write
 * failed). Reserved blocks are large (2 MiB a ring slot) and only buy
 * recovery after a crash, so they are taken only where plenty is free: on a
 * 64 MiB file system, none (a process's live file was 17.5 MiB, and a
 * 40 MiB checkpoint that fits untraced failed traced); and each process's
 * reservation stays a small share of what is free, so 200 forked workers
 * cannot take together what one may not (docs/collector-safety.md, "Disk
 * space").
 *
 * Must never: call a hooked function (fstatfs as a raw system call), or
 * refuse when the file system cannot be asked (then the answer is the
 * kernel's, as before: ENOSPC is handled where the write is).
 */
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs_space.h"

#define WRITE_KEEP_SHARE 64u         /* keep size/64 free after a frame ... */
#define WRITE_KEEP_MAX (64ull << 20) /* ... but never more than 64 MiB */
#define RESERVE_KEEP (1ull << 30)    /* keep 1 GiB free after a reservation */
#define RESERVE_SHARE 64u            /* and take at most 1/64 of what is free */

int gs_space_allows(int fd, uint64_t len, enum gs_space_use use, uint64_t *avail)
{
    struct statfs sf;
    if (avail)
        *avail = UINT64_MAX;
    if (syscall(SYS_fstatfs, fd, &sf) != 0)
        return 1;
    const uint64_t unit = sf.f_frsize ? (uint64_t)sf.f_frsize : (uint64_t)sf.f_bsize;
    if (!unit || !sf.f_blocks)
        return 1; /* a file system that keeps no count (some FUSE and /proc-like ones) */
    const uint64_t free_b = (uint64_t)sf.f_bavail * unit, size = (uint64_t)sf.f_blocks * unit;
    if (avail)
        *avail = free_b;
    if (use == GS_SPACE_RESERVE)
        return free_b >= len + RESERVE_KEEP && len <= free_b / RESERVE_SHARE;
    uint64_t keep = size / WRITE_KEEP_SHARE;
    if (keep > WRITE_KEEP_MAX)
        keep = WRITE_KEEP_MAX;
    return free_b >= len + keep;
}
