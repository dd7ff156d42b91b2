/* run_dir.h — the run directory of `gpustarve run` (run_dir.c): made or
 * claimed for one run at a time, and what became of it while the command
 * ran; `top` asks the same question of the directory it follows.
 *
 * Must never: be used by anything but the commands (it prints messages).
 */
#ifndef GS_RUN_DIR_H
#define GS_RUN_DIR_H

#include <sys/types.h>

/* A run directory held by this run. */
typedef struct gs_run_dir {
    char *name;  /* as the user will see it (malloc'd) */
    int created; /* this run made it */
    int lock_fd; /* the lock file, held while the run lasts; -1: none */
    int dir_fd;  /* the directory itself, to tell later what became of it */
} gs_run_dir;

/* Make or claim the run directory: want (-o DIR, made with its parents when
 * missing), or a new gpustarve-YYYYMMDD-HHMMSS here when want is NULL. An
 * existing want that holds traces, or that another run is using, is
 * refused unless append. Returns 0, or -1 with a message printed and
 * nothing in an existing directory changed. */
int gs_run_dir_open(gs_run_dir *rd, const char *want, int append);

/* The run is over: the lock goes (its file too, when no other run holds
 * it); with remove_made, a directory this run made is removed when empty. */
void gs_run_dir_close(gs_run_dir *rd, int remove_made);

/* What became of the directory opened as fd (O_DIRECTORY, held since)
 * that was at path. */
enum gs_dir_fate {
    GS_DIR_SAME = 0,    /* still there */
    GS_DIR_REMOVED,     /* removed, nothing of that name there now */
    GS_DIR_REPLACED,    /* removed, and another of that name made since */
    GS_DIR_MOVED,       /* renamed: still there under another name */
    GS_DIR_UNREACHABLE, /* path cannot be looked at (errno set) */
};
/* The fate; with GS_DIR_MOVED, where it went into moved_to ("" when the
 * system cannot say). */
enum gs_dir_fate gs_dir_fate(const char *path, int fd, char *moved_to, size_t n);

#endif
