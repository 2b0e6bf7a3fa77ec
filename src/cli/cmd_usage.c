/* carma usage: GPU-seconds, energy, waiting and run time per user, from carmad's
 * accounting (docs/monitoring.md). */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "util/err.h"
#include "util/timearg.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma usage [--user U] [--since T] [--until T] [--json] [--socket PATH]\n"
               "Totals over the jobs submitted in [since, until): jobs, attempts, OOM crashes,\n"
               "run time, GPU-hours, energy, time spent waiting. A user sees their own; root\n"
               "sees everyone (or --user U). T: now, @EPOCH, 90m / 2h / 7d (ago),\n"
               "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS] (local time).\n");
}

static void fmt_hours(double s, char *buf, size_t cap)
{
    if (s < 3600)
        snprintf(buf, cap, "%.0fs", s);
    else
        snprintf(buf, cap, "%.1fh", s / 3600);
}

static void row(const char *name, json_t *u)
{
    double run = json_number_value(json_object_get(u, "run_s"));
    double gs = json_number_value(json_object_get(u, "gpu_seconds"));
    double ej = json_number_value(json_object_get(u, "energy_j"));
    double wait = json_number_value(json_object_get(u, "wait_s"));
    long long jobs = (long long)json_integer_value(json_object_get(u, "jobs"));
    char r[32], w[32], mw[32];
    fmt_hours(run, r, sizeof r);
    fmt_hours(wait, w, sizeof w);
    fmt_hours(jobs ? wait / (double)jobs : 0, mw, sizeof mw);
    printf("%-16.16s %6lld %8lld %5lld %9s %10.2f %10.3f %9s %9s\n", name, jobs,
           (long long)json_integer_value(json_object_get(u, "attempts")),
           (long long)json_integer_value(json_object_get(u, "oom")), r, gs / 3600, ej / 3.6e6, w,
           mw);
}

int cmd_usage(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    const char *user = NULL;
    double since = -1, until = -1, now = (double)time(NULL);
    for (int i = 1; i < argc; i++) {
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (r == 0 && i + 1 < argc &&
            (!strcmp(argv[i], "--user") || !strcmp(argv[i], "--since") ||
             !strcmp(argv[i], "--until"))) {
            const char *opt = argv[i], *v = argv[++i];
            if (!strcmp(opt, "--user")) {
                if (!*v || carma_text_has_control(v)) { /* else dropped, or not a name */
                    fprintf(stderr,
                            "carma usage: --user '%s': not a user name (empty, control "
                            "characters or bytes that are not UTF-8)\n",
                            carma_quote(v, 40).s);
                    return 2;
                }
                user = v;
                continue;
            }
            struct carma_err err = {{0}};
            if (carma_time_parse(v, now, !strcmp(opt, "--since") ? &since : &until, &err)) {
                fprintf(stderr, "carma usage: %s %s\n", opt, err.msg);
                return 2;
            }
            continue;
        }
        static const char *const valued[] = {"--user", "--since", "--until", NULL};
        cli_bad_arg("usage", argc, argv, i, valued);
        usage(stderr);
        return 2;
    }
    if (since >= 0 && until >= 0 && until <= since) {
        fprintf(stderr, "carma usage: --until is not after --since\n");
        return 2;
    }
    json_t *req = cli_req("usage");
    if (user)
        json_object_set_new(req, "user", json_string(user));
    if (since >= 0)
        json_object_set_new(req, "since", json_real(since));
    if (until >= 0)
        json_object_set_new(req, "until", json_real(until));
    json_t *resp;
    int st = cli_call(&c, "usage", req, &resp);
    if (st)
        return st;
    if (cli_check_usage("usage", resp)) {
        json_decref(resp);
        return 1;
    }
    /* A mistyped name would read as a user who used nothing. */
    if (user && json_array_size(json_object_get(resp, "users")) == 0 && !getpwnam(user)) {
        fprintf(stderr, "carma usage: --user %s: no such user here, and no jobs of that name\n",
                user);
        json_decref(resp);
        return 2;
    }
    if (c.json) {
        json_object_del(resp, "ok");
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    printf("%-16s %6s %8s %5s %9s %10s %10s %9s %9s\n", "USER", "JOBS", "ATTEMPTS", "OOM", "RUN",
           "GPU-HOURS", "ENERGY-kWh", "WAITED", "MEAN-WAIT");
    json_t *users = json_object_get(resp, "users");
    size_t k;
    json_t *u;
    json_array_foreach(users, k, u) {
        /* Entries are per uid, sorted by name: a name that passed to another account
         * shows on two rows, told apart by uid. */
        const char *name = json_string_value(json_object_get(u, "user"));
        const char *prev =
            k ? json_string_value(json_object_get(json_array_get(users, k - 1), "user")) : NULL;
        const char *next = json_string_value(json_object_get(json_array_get(users, k + 1), "user"));
        if (name && ((prev && !strcmp(name, prev)) || (next && !strcmp(name, next)))) {
            /* NAME(UID) within the column's 16 characters, the uid whole */
            char id[24], label[32];
            int nid = snprintf(id, sizeof id, "(%lld)",
                               (long long)json_integer_value(json_object_get(u, "uid")));
            snprintf(label, sizeof label, "%.*s%s", nid < 15 ? 16 - nid : 1, name, id);
            row(label, u);
        } else {
            row(name, u);
        }
    }
    if (json_array_size(json_object_get(resp, "users")) > 1)
        row("(total)", json_object_get(resp, "total"));
    json_decref(resp);
    return 0;
}
