/* main.c — the gpustarve command: a table of subcommands and the dispatch
 * to them (perf style). Each subcommand lives in cmd_<name>.c with its own
 * options, usage text and worker.
 *
 * Must never: grow option parsing of its own beyond --help/--version; a new
 * subcommand is one line in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cli_util.h"
#include "cmd/cmd_top.h"
#include "gs_format.h"

static int cmd_help(int argc, char **argv);

static const gs_cmd commands[] = {
    {"run", gs_cmd_run, "trace a command and every process it starts"},
    {"dump", gs_cmd_dump, "print the events of a trace, one per line"},
    {"top", gs_cmd_top, "follow a run in progress: per rank, steps/s and where the time goes"},
    {"report", gs_cmd_report, "per-step GPU starvation report: verdict and advice"},
    {"compare", gs_cmd_compare, "runs before and after a change: did it help, did the prediction hold"},
    {"probe", gs_cmd_probe, "measure storage read and host-to-device copy bandwidth"},
    {"check", gs_cmd_check, "is this machine what you pay for: CPUs, memory, storage, GPUs vs spec"},
    {"sweep", gs_cmd_sweep, "run a command per setting it has, in rounds, until the fastest is proven"},
    {"import", gs_cmd_import, "convert PyTorch profiler (Kineto) traces into a run directory"},
    {"help", cmd_help, "show help for gpustarve or one command"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_usage(FILE *f)
{
    fprintf(f, "usage: gpustarve [--version] [--help] COMMAND [ARGS]\n"
               "\n"
               "Is my GPU waiting for data? Trace a training run and find out.\n"
               "\n"
               "commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "   %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "See 'gpustarve help COMMAND' for more on one command.\n"
               "Exit status: 0 ok, 1 failure, 2 bad usage or bad input;\n"
               "'run' exits with the traced command's status.\n");
}

static const gs_cmd *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    gs_cli_error("'%s' is not a gpustarve command. See 'gpustarve --help'.", name);
    return GS_EXIT_USAGE;
}

/* `gpustarve help CMD` runs `CMD --help`, so both always say the same. */
static int cmd_help(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        print_usage(stdout);
        return GS_EXIT_OK;
    }
    if (argc > 2) {
        gs_cli_error("help: takes one command name");
        return GS_EXIT_USAGE;
    }
    const gs_cmd *c = find_command(argv[1]);
    if (!c)
        return unknown_command(argv[1]);
    char *args[] = {(char *)c->name, "--help", NULL};
    return c->fn(2, args);
}

int main(int argc, char **argv)
{
    int rc;
    if (argc < 2) {
        print_usage(stderr);
        return GS_EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout);
        rc = GS_EXIT_OK;
    } else if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("gpustarve %s (trace format %d.%d)\n", GS_CLI_VERSION, GS_VERSION_MAJOR,
               GS_VERSION_MINOR);
        rc = GS_EXIT_OK;
    } else if (name[0] == '-') {
        gs_cli_error("unknown option '%s'. See 'gpustarve --help'.", name);
        rc = GS_EXIT_USAGE;
    } else {
        const gs_cmd *c = find_command(name);
        rc = c ? c->fn(argc - 1, argv + 1) : unknown_command(name);
    }
    return gs_cli_finish(rc);
}
