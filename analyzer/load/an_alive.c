/* an_alive.c — is the process behind a trace file still running? A run
 * still in progress is reported as such, not as processes that "ended
 * abruptly" (docs/report-schema.md, "How the run is read").
 *
 * The test is exact where it can be made: a running traced process keeps
 * its live file (<trace>.live, docs/trace-format.md "Live files") mapped
 * shared until it ends, so the process is running when /proc/PID/maps on
 * this host lists that very file (same device and inode). A pid reused by
 * another process maps no such file.
 *
 * Must never: signal, open or change the process (only /proc/PID/maps is
 * read), or say "running" for a trace written on another host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "load/an_run.h"
#include "gs_live.h"
#include "gs_trace.h"

/* 1 when /proc/pid/maps lists a mapping of the file (dev, ino). */
static int maps_file(uint64_t pid, dev_t dev, ino_t ino)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%llu/maps", (unsigned long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0; /* gone, or not ours to read: not shown running */
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned maj, min;
        unsigned long long inode;
        /* address perms offset dev inode [path] */
        if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &inode) == 3)
            found = inode == (unsigned long long)ino && maj == major(dev) && min == minor(dev);
        /* a line longer than the buffer continues on the next read */
        while (!strchr(line, '\n') && fgets(line, sizeof line, f))
            ;
    }
    fclose(f);
    return found;
}

void an_host_name(const char *given, char *out, size_t n)
{
    if (given && *given)
        snprintf(out, n, "%s", given);
    else if (gethostname(out, n) != 0)
        snprintf(out, n, "localhost");
    out[n - 1] = '\0';
    for (char *c = out; *c; c++)
        if (*c == '/')
            *c = '_';
}

int an_trace_running(const char *trace_path, uint64_t pid, const char *host)
{
    char here[256];
    an_host_name(NULL, here, sizeof here);
    if (!host || strcmp(host, here) != 0)
        return 0;
    const size_t n = strlen(trace_path), k = sizeof GS_TRACE_SUFFIX - 1;
    if (n <= k || strcmp(trace_path + n - k, GS_TRACE_SUFFIX) != 0)
        return 0;
    char *live = malloc(n - k + sizeof GS_LIVE_SUFFIX);
    if (!live)
        return 0;
    memcpy(live, trace_path, n - k);
    memcpy(live + n - k, GS_LIVE_SUFFIX, sizeof GS_LIVE_SUFFIX);
    struct stat st;
    const int have = stat(live, &st) == 0;
    free(live);
    return have && maps_file(pid, st.st_dev, st.st_ino);
}
