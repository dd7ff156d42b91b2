/* fuzz_cmds.c — libFuzzer target over every command that loads traces: the
 * input is written as the one trace file of a run directory, then dump (text,
 * --json, --summary, --callsites), report (text, --json, --perfetto, --html)
 * and compare (the run against itself) read it in this process, their output
 * thrown away; the same bytes are also given to `import` as a PyTorch
 * profiler trace, and report reads what it made. Exit codes 0/1/2 are all
 * fine; a crash, a sanitizer report, a hang (libFuzzer's -timeout) or memory
 * beyond -rss_limit_mb is not.
 * Seeds: tests/data/, tests/fuzz/regress/, a synthetic PyTorch profiler
 * trace plain and compressed, and the small real ones when they are there
 * (tests/fuzz/run.sh). */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cli_util.h"

static char g_dir[200], g_file[260], g_pf[260], g_html[260], g_json[260], g_imp[260];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/gs-fuzz-cmds.XXXXXX", tmp);
    if (!mkdtemp(g_dir))
        abort();
    snprintf(g_file, sizeof g_file, "%s/fuzz-1.gst", g_dir);
    snprintf(g_pf, sizeof g_pf, "%s.perfetto.json", g_dir);
    snprintf(g_html, sizeof g_html, "%s.html", g_dir);
    snprintf(g_json, sizeof g_json, "%s.json", g_dir);
    snprintf(g_imp, sizeof g_imp, "%s.imported", g_dir);
    /* the commands' output is not what is tested */
    int null = open("/dev/null", O_WRONLY);
    if (null < 0 || dup2(null, 1) < 0)
        abort();
    close(null);
    gs_verbosity = 0;
    return 0;
}

/* Remove a run directory import made (its files, then itself). */
static void rm_run(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char p[600];
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static int cmd(int (*fn)(int, char **), const char *a0, const char *a1, const char *a2,
               const char *a3, const char *a4)
{
    char *argv[] = {(char *)a0, (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
    int argc = 0;
    while (argv[argc])
        argc++;
    gs_verbosity = 0;
    return fn(argc, argv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *f = fopen(g_file, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    cmd(gs_cmd_dump, "dump", g_dir, NULL, NULL, NULL);
    cmd(gs_cmd_dump, "dump", "--json", g_dir, NULL, NULL);
    cmd(gs_cmd_dump, "dump", "--summary", "--json", g_dir, NULL);
    cmd(gs_cmd_dump, "dump", "--callsites", g_dir, NULL, NULL);
    cmd(gs_cmd_report, "report", g_dir, NULL, NULL, NULL);
    cmd(gs_cmd_report, "report", "--json", "--perfetto", g_pf, g_dir);
    cmd(gs_cmd_report, "report", "--html", g_html, g_dir, NULL);
    cmd(gs_cmd_compare, "compare", g_dir, g_dir, NULL, NULL);
    f = fopen(g_json, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    rm_run(g_imp);
    if (cmd(gs_cmd_import, "import", "-q", "-o", g_imp, g_json) == 0)
        cmd(gs_cmd_report, "report", "--json", g_imp, NULL, NULL);
    fflush(stdout);
    return 0;
}
