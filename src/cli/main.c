/* carma: the command-line front end. Dispatches to one subcommand per file. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "util/version.h"

const struct carma_command carma_commands[] = {
    {"sim", "replay a trace through the scheduler on simulated GPUs", cmd_sim},
    {"submit", "queue a job: carma submit [--gpus N] [--mem SIZE] -- CMD ARGS...", cmd_submit},
    {"submit-rad", "queue a CARMA task file (.rad) unchanged", cmd_submit_rad},
    {"ls", "list jobs (--all: finished ones too; -q: ids alone)", cmd_ls},
    {"show", "one job in detail, with its attempts", cmd_show},
    {"cancel", "cancel jobs, or all of yours at once (--all): SIGTERM, SIGKILL after a grace",
     cmd_cancel},
    {"logs", "print a job's output (-f: follow)", cmd_logs},
    {"wait", "wait for jobs; exit 0 when all succeeded", cmd_wait},
    {"gpus", "GPUs: memory, utilisation, power, jobs", cmd_gpus},
    {"top", "live view of GPUs and their jobs (q quits)", cmd_top},
    {"drain", "take GPUs out of service, their jobs left to end (root or carmad's user)",
     cmd_drain},
    {"undrain", "put drained GPUs back in service (root or carmad's user)", cmd_undrain},
    {"usage", "GPU-hours, energy, waiting per user (--since, --until)", cmd_usage},
    {"report", "HTML report of the recorded history (--since, --until, --html)", cmd_report},
    {"estimate", "GPU memory of a training job from its model summary", cmd_estimate},
    {"eval-estimator", "fit / evaluate the memory estimator on data/estimator", cmd_eval_estimator},
    {NULL, NULL, NULL},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: carma COMMAND [ARGS...]\n\ncommands:\n");
    for (const struct carma_command *c = carma_commands; c->name; c++)
        fprintf(f, "  %-15s %s\n", c->name, c->summary);
    fprintf(f, "\n'carma COMMAND --help' describes one command; 'carma --version' prints "
               "carma's version.\n");
}

static const struct carma_command *find(const char *name)
{
    for (const struct carma_command *c = carma_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

/* Runs c with argv[0] "carma NAME", the name getopt's own messages start with. */
static int run(const struct carma_command *c, int argc, char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "carma %s", c->name);
    argv[0] = name;
    return c->run(argc, argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "help") == 0 && argc == 3) {
        /* carma help CMD: CMD --help */
        const struct carma_command *c = find(argv[2]);
        if (!c) {
            fprintf(stderr, "carma help: unknown command '%s'\n", argv[2]);
            usage(stderr);
            return 2;
        }
        static char help_opt[] = "--help";
        char *hargv[] = {argv[2], help_opt, NULL};
        return run(c, 2, hargv);
    }
    if (strcmp(argv[1], "--version") == 0 && argc == 2) {
        printf("carma %s\n", carma_version);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    const struct carma_command *c = find(argv[1]);
    if (c)
        return run(c, argc - 1, argv + 1);
    fprintf(stderr, "carma: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
