/* Shared helpers of the CLI commands that talk to carmad. */
#ifndef CARMA_CLI_CLIENT_H
#define CARMA_CLI_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "estimate/estimate.h"
#include "proto/proto.h" /* CARMA_PROTO_MAX_AFTER */
#include "util/clock.h" /* carma_mono_s: the commands' timeouts */

struct cli_conn {
    char socket[4096];
    int json;   /* --json */
};

/* Consumes --socket PATH / --socket=PATH and --json at argv[*i]; returns 1 when it
 * did, 0 when the argument is not one of them, -1 on a usage error. */
int cli_common_opt(struct cli_conn *c, int argc, char **argv, int *i);

/* Fills the default socket path. */
void cli_conn_init(struct cli_conn *c);

/* Sends req (consumed) and returns the response in *resp when it is ok. Returns the
 * exit status: 0 ok, 1 the daemon refused or cannot be reached, 2 bad input
 * (malformed request, unknown job, invalid job). Prints the error. */
int cli_call(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp);

/* cli_call for a request that may be repeated (a read): while carmad cannot be reached
 * (restarting), it tries again for up to patience_s seconds, saying so once. */
int cli_call_patient(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp,
                     double patience_s);

/* cli_call_patient bounded by `deadline` (CLOCK_MONOTONIC seconds, carma_mono_s; < 0:
 * none): each request waits for carmad at most what is left of it (CARMA_TIMEOUT at
 * most, 0.1 s at least), and neither patience nor "busy" retries go past it. When carmad
 * has not answered by then it returns CLI_DEADLINE, printing nothing (the caller says
 * what was not reached in time). */
#define CLI_DEADLINE (-1)
int cli_call_until(const struct cli_conn *c, const char *cmd, json_t *req, json_t **resp,
                   double patience_s, double deadline);

/* A request {"v":1,"op":op}; new reference. */
json_t *cli_req(const char *op);

/* Whether a is -h or --help: the command prints its usage on stdout and exits 0. */
int cli_is_help(const char *a);

/* Says on stderr why carma CMD did not take argv[i] (r: what cli_common_opt answered):
 * --socket or an option of `valued` (NULL-terminated; NULL: none) with no value after
 * it, an option it does not know, or an argument it did not expect. The caller prints
 * its usage after. */
void cli_bad_arg(const char *cmd, int argc, char **argv, int i, const char *const *valued);

/* Parses a job id: digits only, 1 to INT64_MAX; 0 on error (prints it). */
uint64_t cli_parse_id(const char *cmd, const char *s);

/* Parses a number of seconds, [0-9]+(.[0-9]+)? (no sign, blank, hex, exponent, nan),
 * at most max, into *out; -EINVAL on error, printed as "carma CMD: OPT 'S': seconds
 * expected ...". */
int cli_parse_seconds(const char *cmd, const char *opt, const char *s, double max, double *out);

/* Parses a size to MiB, rounded up: [0-9]+(.[0-9]+)? then nothing (MiB) or a unit M,
 * MiB, MB, G, GiB, GB, T, TiB, TB (any case): "4096", "4096M", "16G", "1.5GiB". At least
 * 1 MiB, at most 2^30 MiB; -1 on error. */
int64_t cli_parse_mib(const char *s);

/* Parses an option's count, digits only, 1..max, into *out; -EINVAL on error, printed as
 * "carma CMD: OPT must be an integer from 1 to MAX, not 'S'". */
int cli_parse_count(const char *cmd, const char *opt, const char *s, uint64_t max, uint64_t *out);

/* Parses an image size "H" (square) or "HxW", each 1..65536; -1 on error. */
int cli_parse_image_size(const char *s, uint32_t *h, uint32_t *w);

/* A training set-up option (`optimizer`, `precision` or `attention`: est_opts_set's
 * names) given to `carma cmd` as --opt val, set in o; -1 when val is not one of its
 * values (the error printed, with the accepted values). */
int cli_train_opt(const char *cmd, const char *opt, const char *val, struct est_opts *o);

/* Prints a JSON value indented to stdout. */
void cli_print_json(const json_t *v);

/* "05-31 12:03:04" (local time) for a time value, seconds since the epoch; "-" for null
 * and for what is no time (not a number, before the epoch, past CARMA_PROTO_MAX_TIME). */
void cli_fmt_time(const json_t *t, char *buf, size_t cap);

/* LC_CTYPE from the environment, or C.UTF-8 when that is not UTF-8 (carma's text is
 * UTF-8 whatever the locale), so that wcwidth knows the characters of names. */
void cli_locale_ctype(void);

/* The terminal columns of the character at p (l bytes of well-formed UTF-8; 0: a byte
 * shown as '?'): wcwidth's, 2 for wide (CJK) ones, 0 for combining ones, 1 when it
 * does not know. Needs cli_locale_ctype. */
unsigned cli_char_cols(const unsigned char *p, size_t l);

/* s cut or padded to `width` terminal columns (UTF-8 sequences kept whole, counted with
 * cli_char_cols: a wide character that does not fit is left out), for a table column;
 * `cap` bytes in out. A byte that is no character, and a character a job name may not
 * hold (carma_proto_char_hidden: controls, which would move the cursor or recolour the
 * terminal, and invisible or direction-changing ones), shows as '?'. */
void cli_cell(char *out, size_t cap, const char *s, unsigned width);
/* "1h02m", "35s" or "-" from two time values (end null: now). */
void cli_fmt_dur(const json_t *start, const json_t *end, char *buf, size_t cap);
/* "1h02m", "2m05s" or "35s" from a number of seconds (negative: 0; past
 * CARMA_PROTO_MAX_TIME, or not a number: "-"). */
void cli_fmt_secs(double secs, char *buf, size_t cap);

/* A job's --after list, as carma submit and carma submit-rad take it (docs/daemon.md,
 * "Jobs that run after others"): the ids in the order given. */
struct cli_after {
    uint64_t ids[CARMA_PROTO_MAX_AFTER];
    size_t n;
};

/* Adds the value v of one --after (ID[,ID...]; the option may be repeated) to a. Returns
 * 0, or 2 (the exit status) after saying on stderr "carma CMD: --after " and what is
 * wrong (carma_proto_ids_parse: a malformed, repeated or too long list). */
int cli_after_opt(const char *cmd, const char *v, struct cli_after *a);

/* Sets job's "after" to a's ids when it has any (else leaves job alone). Returns 0, or
 * -ENOMEM. */
int cli_after_put(const struct cli_after *a, json_t *job);

/* Submits `job` (a protocol job object, consumed) with the caller's environment
 * and working directory added when absent; prints the id (or the response with
 * --json). Returns the exit status. */
int cli_submit_job(const struct cli_conn *c, const char *cmd, json_t *job);

/* A CARMA task file (.rad), one value per line: 0 a comment, 1 "conda activate
 * ENV", 2 the command, 3 model file, 4 dataset, 5 batch size, 6 placement hint,
 * 7 GPUs, 8 measured peak memory MiB (oracle), 9 Horus, 10 FakeTensor, 11
 * GPUMemNet estimates. */
struct cli_rad {
    char env[256];      /* conda environment, "" none */
    char command[4096];
    unsigned batch;
    unsigned gpus;
    uint64_t mem_mib;   /* of the chosen estimator; 0 when absent */
};

/* Parses a .rad text (sim_rad_parse's rules, and a UTF-8 command). estimator: "oracle",
 * "horus", "faketensor", "gpumemnet" or "none". Returns 0, or -EINVAL with err naming
 * "FILE:LINE: problem". */
int cli_rad_parse(const char *file, const char *text, size_t len, const char *estimator,
                  struct cli_rad *out, struct carma_err *err);

/* Splits a command line into argv on blanks with '...' and "..." quoting (no
 * expansion). Returns the count, or -1 (unbalanced quotes, or more than cap). */
int cli_split_words(const char *s, json_t *argv);

/* Writes s to f with what would act on a terminal or hide text shown as escapes:
 * controls as \n, \t, \r, \xNN (C1 and format characters byte by byte, \xNN), bytes that
 * are not UTF-8 as \xNN. For text carmad passes on from users (reasons, names). */
void cli_put_visible(FILE *f, const char *s);

/* Writes s to f as one shell word that reads back as s: as it is when it holds only
 * letters, digits, non-ASCII characters and _@%+=:,./-; else in '...'; in bash's $'...'
 * with cli_put_visible's escapes when it holds controls, hidden format characters or
 * bytes that are not UTF-8. For argv and paths in `carma show`. A command word (the
 * first of a command line) is quoted also when it holds '=' or starts with '%', which
 * the shell would read as an assignment or a job. */
void cli_put_word(FILE *f, const char *s, int command_word);

/* Checks the shape of an answer of carmad (or a part of one, named `where` in the
 * message: "answer", "job", "gpus[2]"): o is an object holding each field of `spec`, a
 * blank-separated list of NAME:T, T one of s (string), i (integer), n (number), b
 * (boolean), o (object), a (array), as / ai / ao (array of strings / integers /
 * objects), with '?' after T when null or no field is allowed too. Returns 0, or prints
 * "carma CMD: malformed response from carmad: WHERE.NAME: ..." and returns 1 (the exit
 * status). */
int cli_check(const char *cmd, const json_t *o, const char *where, const char *spec);

/* cli_check of each element of o's array `key` (absent or not an array: nothing to
 * check; the caller's spec of o says whether it may be), named "KEY[N]". 0 or 1. */
int cli_check_each(const char *cmd, const json_t *o, const char *key, const char *spec);

/* cli_check that prints nothing: -1 with "WHERE.NAME: ..." in msg (cap bytes), or 0. */
int cli_shape(const json_t *o, const char *where, const char *spec, char *msg, size_t cap);

/* cli_check of a `gpus` answer and of each GPU in it (carma gpus, top). */
int cli_check_gpus(const char *cmd, const json_t *resp);
/* cli_check_gpus that prints nothing: -1 with the problem in msg, or 0. */
int cli_shape_gpus(const json_t *resp, char *msg, size_t cap);
/* cli_check of a `usage` answer and of each user in it (carma usage, report). */
int cli_check_usage(const char *cmd, const json_t *resp);

/* 1 when state names a final state. */
int cli_state_final(const char *state);

#endif
