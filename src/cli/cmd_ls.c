/* carma ls: list jobs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/client.h"
#include "cli/commands.h"

/* Prints one page of jobs: table rows (the header before the first page), the ids alone
 * (quiet: one a line, no header, for scripts), or the elements of one JSON array spread
 * over the pages (*shown counts them). */
static void print_page(const json_t *jobs, int as_json, int quiet, size_t *shown)
{
    size_t k;
    json_t *j;
    if (quiet) {
        json_array_foreach(jobs, k, j)
            printf("%lld\n", (long long)json_integer_value(json_object_get(j, "id")));
        return;
    }
    if (!as_json && *shown == 0) { /* the header, once */
        *shown = 1;
        printf("%-6s %-20s %-10s %-10s %3s %4s %-14s %8s  %s\n", "ID", "NAME", "USER", "STATE",
               "ATT", "GPUS", "SUBMITTED", "RUNTIME", "REASON");
    }
    json_array_foreach(jobs, k, j) {
        if (as_json) {
            char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            if (!s)
                continue;
            fputs((*shown)++ ? ",\n  " : "[\n  ", stdout);
            for (const char *p = s; *p; p++) { /* indented one level, as in an array */
                putchar(*p);
                if (*p == '\n')
                    fputs("  ", stdout);
            }
            free(s);
            continue;
        }
        char sub[32], run[32];
        cli_fmt_time(json_object_get(j, "submit_time"), sub, sizeof sub);
        /* its run time over its attempts (a retry waiting in the queue is not running: the
         * time since its last attempt began is not its run time); "-" before it ever ran */
        json_t *rs = json_object_get(j, "run_s");
        if (json_is_number(json_object_get(j, "start_time")) && json_is_number(rs))
            cli_fmt_secs(json_number_value(rs), run, sizeof run);
        else /* (a carmad without run_s) */
            cli_fmt_dur(json_object_get(j, "start_time"), json_object_get(j, "end_time"), run,
                        sizeof run);
        char name[128], user[64];
        cli_cell(name, sizeof name, json_string_value(json_object_get(j, "name")), 20);
        cli_cell(user, sizeof user, json_string_value(json_object_get(j, "user")), 10);
        /* a queued job's waiting_code (carma show ID: the sentence with the figures) */
        const char *why = json_string_value(json_object_get(j, "waiting_code"));
        printf("%-6lld %s %s %-10s %3lld %4lld %-14s %8s",
               (long long)json_integer_value(json_object_get(j, "id")), name, user,
               json_string_value(json_object_get(j, "state")),
               (long long)json_integer_value(json_object_get(j, "attempts")),
               (long long)json_integer_value(json_object_get(j, "gpus")), sub, run);
        if (why) {
            printf("  ");
            cli_put_visible(stdout, why);
            /* waiting to run after others: the jobs it waits for (carma show: all) */
            const json_t *pend = json_object_get(j, "after_pending");
            size_t pk;
            json_t *pid;
            if (!strcmp(why, "after"))
                json_array_foreach(pend, pk, pid) {
                    if (pk == 4) {
                        printf(",...");
                        break;
                    }
                    printf("%s%lld", pk ? "," : " ", (long long)json_integer_value(pid));
                }
        }
        putchar('\n');
    }
}

/* The shape of a page: 0, or 1 with the error printed. */
static int ls_check(const json_t *resp)
{
    return cli_check("ls", resp, "answer", "jobs:ao next:i?") ||
           cli_check_each("ls", resp, "jobs",
                          "id:i name:s user:s state:s waiting_code:s? after_pending:ai?");
}

#define LS_USAGE "usage: carma ls [--all] [-q | --quiet] [--json] [--socket PATH]\n"

int cmd_ls(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    int all = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a"))) {
            all = 1;
            continue;
        }
        if (r == 0 && (!strcmp(argv[i], "--quiet") || !strcmp(argv[i], "-q"))) {
            quiet = 1;
            continue;
        }
        if (r == 0 && cli_is_help(argv[i])) {
            printf(LS_USAGE
                   "Lists your queued and running jobs (--all: finished ones too); REASON:\n"
                   "why a queued job is not running yet (carma show ID says more; 'after 12':\n"
                   "it waits until job 12 has succeeded, carma submit --after). Root sees\n"
                   "every user's. -q (--quiet): the job ids alone, one a line, no header,\n"
                   "for scripts (carma ls -q | xargs -r carma wait).\n");
            return 0;
        }
        cli_bad_arg("ls", argc, argv, i, NULL);
        fprintf(stderr, LS_USAGE);
        return 2;
    }
    if (quiet && c.json) {
        fprintf(stderr, "carma ls: -q (ids alone) and --json (every field) exclude each other: "
                        "give one\n" LS_USAGE);
        return 2;
    }
    /* carmad answers a page at a time (a page fits one protocol line); rows are
     * printed as pages arrive, so that any number of jobs lists in bounded memory. */
    uint64_t after = 0;
    size_t shown = 0;
    cli_locale_ctype(); /* names' column widths */
    for (;;) {
        json_t *req = cli_req("ls");
        json_object_set_new(req, "all", json_boolean(all));
        if (after)
            json_object_set_new(req, "after", json_integer((json_int_t)after));
        json_t *resp;
        /* once the JSON array is open, an error goes to stderr only: stdout stays JSON */
        struct cli_conn cp = c;
        cp.json = c.json && !shown;
        int st = cli_call(&cp, "ls", req, &resp);
        if (st) {
            if (c.json && shown)
                printf("\n]\n");
            return st;
        }
        if (ls_check(resp)) {
            json_decref(resp);
            if (c.json && shown)
                printf("\n]\n");
            return 1;
        }
        print_page(json_object_get(resp, "jobs"), c.json, quiet, &shown);
        const json_t *next = json_object_get(resp, "next");
        uint64_t n = json_is_integer(next) ? (uint64_t)json_integer_value(next) : 0;
        json_decref(resp);
        if (n <= after) /* the last page (or a daemon that does not page) */
            break;
        after = n;
    }
    if (c.json)
        printf(shown ? "\n]\n" : "[]\n");
    return 0;
}
