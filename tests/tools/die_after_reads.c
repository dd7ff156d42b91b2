/* die_after_reads.c — FILE kill|segv: opens FILE, makes 40 preads of 64
 * bytes, then dies by SIGKILL or by a segmentation fault. Traced with
 * GPUSTARVE_RING_EVENTS=64 GPUSTARVE_FLUSH_MS=60000 it made the v1.2 test
 * traces (tests/data/v1.2/, live files compacted with compact_live.py):
 * nearly every record is in the live file only. */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    char buf[64];
    if (argc != 3)
        return 2;
    int fd = open(argv[1], O_RDONLY);
    for (int i = 0; i < 40; i++)
        if (pread(fd, buf, sizeof buf, 64 * (i % 8)) != sizeof buf)
            return 1;
    if (strcmp(argv[2], "segv") == 0)
        *(volatile int *)0 = 1;
    kill(getpid(), SIGKILL);
    return 0;
}
