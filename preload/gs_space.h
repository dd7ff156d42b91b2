/* gs_space.h — how much of a file system the collector may take (gs_space.c):
 * the one check before it writes a frame to a trace file or sets disk
 * blocks aside for a live file.
 *
 * Must never: call a hooked function (one raw system call), or let the
 * collector take the space the traced program needs (docs/
 * collector-safety.md, "Disk space").
 */
#ifndef GS_SPACE_H
#define GS_SPACE_H

#include <stdint.h>

/* What the bytes are for. */
enum gs_space_use {
    GS_SPACE_WRITE,   /* a trace file's frame, a live file's header page */
    GS_SPACE_RESERVE, /* blocks set aside ahead of use: ring slots, string log */
};

/* 1 when the file system holding descriptor fd may take len more bytes of
 * the collector's for use, 0 when it may not; *avail (when not NULL) gets
 * its free bytes (UINT64_MAX when unknown: then the answer is 1). */
int gs_space_allows(int fd, uint64_t len, enum gs_space_use use, uint64_t *avail);

#endif
