/* hk_util.h — the trace loader of the hook tests (assertions: gs_check.h).
 *
 * Each test program runs in two modes: "act" (under LD_PRELOAD, does the
 * calls) and "verify DIR" (not preloaded, reads the run directory with the
 * gs_reader API and checks what the collector wrote). run.sh drives both.
 */
#ifndef HK_UTIL_H
#define HK_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gs_check.h" /* ASSERT_*: the assertion helper of every C test */
#include "gs_trace.h"

/* Print "N passed, M failed"; exit status for main. */
int hk_report(void);

typedef struct hk_ev {
    gs_event e;
    const char *str; /* resolved string, or NULL */
} hk_ev;

typedef struct hk_file {
    char name[256];   /* file name inside the directory */
    gs_proc_info info;
    char host[256];
    char argv[4096];
    hk_ev *ev;
    size_t n;
    int ok;          /* every frame read, every string defined */
    int undefined;   /* references to strings not (yet) defined */
} hk_file;

/* Load every *.gst file of dir (sorted by name). Returns the count, or -1. */
int hk_load_dir(const char *dir, hk_file **files);
/* The file whose header pid is pid (and exec_seq seq), or NULL. */
hk_file *hk_find(hk_file *files, int n, uint64_t pid, uint32_t seq);
/* Count events of kind in f whose string equals path (path NULL: any). */
size_t hk_count(const hk_file *f, unsigned kind, const char *path);
/* First event of kind with string path (NULL: any), or NULL. */
const hk_ev *hk_first(const hk_file *f, unsigned kind, const char *path);
/* Check structure: all files ok, TID before events, ts non-zero for hooked
 * kinds. Counts failures through ASSERT. */
void hk_check_files(hk_file *files, int n);
/* The run directory's one trace file, loaded and checked (hk_check_files);
 * NULL, with a failed assertion, when dir holds none or several. */
const hk_file *hk_load_one(const char *dir);
/* Print one line per event (debug). */
void hk_dump_file(const hk_file *f, FILE *out);


/* One expected event: fields set to HK_ANY are not checked; path_suffix NULL
 * means "no path check", "" means "no string". */
#define HK_ANY (-0x7fffffffffffffffLL - 1)
typedef struct hk_expect {
    unsigned kind;
    const char *path_suffix;
    long long fd, fd_kind, bytes, ret, offset, aux, aux2;
} hk_expect;

/* Number of events in f matching x. */
size_t hk_match(const hk_file *f, const hk_expect *x);
/* ASSERT that each expectation matches exactly `times` events (times 0:
 * at least one). Prints the failing row. */
void hk_expect_all(const hk_file *f, const hk_expect *xs, size_t n, size_t times);
/* The lowest descriptor of this process's table whose file's path ends
 * with suffix (".gst": a trace file), or -1. */
int hk_fd_ending(const char *suffix);
/* Directory for scratch files (HK_TMP, default /tmp); path joined into buf. */
const char *hk_tmp(char *buf, size_t cap, const char *leaf);
/* HK_TMP/leaf made afresh with the 8 bytes "12345678", opened read-only:
 * its descriptor (asserted valid). */
int hk_small_file(const char *leaf);
#endif
