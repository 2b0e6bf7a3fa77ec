/* The carma subcommands. Each takes the arguments after its name (argv[0] is the
 * subcommand name) and returns the process exit status: 0 success, 1 the operation
 * failed (job failed, daemon said no), 2 bad usage or bad input. */
#ifndef CARMA_CLI_COMMANDS_H
#define CARMA_CLI_COMMANDS_H

struct carma_command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
};

/* The table lives in main.c; one line per command. */
extern const struct carma_command carma_commands[];

int cmd_sim(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_submit_rad(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_gpus(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_eval_estimator(int argc, char **argv);
int cmd_usage(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_drain(int argc, char **argv);
int cmd_undrain(int argc, char **argv);

#endif
