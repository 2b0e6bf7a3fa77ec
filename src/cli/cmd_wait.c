/* carma wait: block until jobs end. Exit 0 when all succeeded, 1 otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/client.h"
#include "cli/commands.h"

#define WAIT_PATIENCE_S 300 /* how long a restart of carmad is waited out */
#define WAIT_MAX_IDS 1024
#define WAIT_MAX_TIMEOUT_S 1e7 /* --timeout: about 115 days */

/* How long the jobs not reached are asked for after --timeout, all together. */
#define WAIT_LATE_S 2

/* --json after --timeout: the jobs that ended (out), the one still running (job, NULL
 * when carmad did not answer about it), and the rest asked once each within
 * WAIT_LATE_S (none when carmad did not answer: it is stuck). */
static void print_as_they_stand(const struct cli_conn *c, json_t *out, json_t *job,
                                const uint64_t *rest, size_t nrest)
{
    double late = carma_mono_s() + WAIT_LATE_S;
    if (job)
        json_array_append(out, job);
    for (size_t k = 0; job && k < nrest; k++) {
        json_t *req = cli_req("show");
        json_object_set_new(req, "id", json_integer((json_int_t)rest[k]));
        json_t *resp;
        if (cli_call_until(c, "wait", req, &resp, 0, late) == 0) {
            json_array_append(out, json_object_get(resp, "job"));
            json_decref(resp);
        }
    }
    cli_print_json(out);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: carma wait ID... [--timeout S] [--json] [--socket PATH]\n"
               "Waits until the jobs (at most 1024) end and prints each one's final state.\n"
               "Exit 0 when all succeeded, 1 when one did not or --timeout S (seconds, such\n"
               "as 30 or 2.5) passed first (--json: every job as it stands then).\n");
}

int cmd_wait(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    uint64_t ids[WAIT_MAX_IDS];
    size_t n = 0;
    double timeout = -1;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && !strcmp(argv[i], "--timeout") && i + 1 < argc) {
            if (cli_parse_seconds("wait", "--timeout", argv[++i], WAIT_MAX_TIMEOUT_S, &timeout))
                return 2;
            continue;
        }
        if (r == 0 && argv[i][0] != '-') {
            if (n == WAIT_MAX_IDS) {
                fprintf(stderr, "carma wait: at most %d job ids at once\n", WAIT_MAX_IDS);
                return 2;
            }
            if (!(ids[n++] = cli_parse_id("wait", argv[i])))
                return 2;
            continue;
        }
        static const char *const valued[] = {"--timeout", NULL};
        cli_bad_arg("wait", argc, argv, i, valued);
        usage(stderr);
        return 2;
    }
    if (!n) {
        usage(stderr);
        return 2;
    }
    double t0 = carma_mono_s(), nap = 0.02;
    double deadline = timeout >= 0 ? t0 + timeout : -1;
    int reached = 0;
    /* Every id asked once first: a mistyped one is said now, not once the jobs before it
     * have ended, hours later maybe. */
    for (size_t k = 0; k < n; k++) {
        json_t *req = cli_req("show");
        json_object_set_new(req, "id", json_integer((json_int_t)ids[k]));
        json_t *resp;
        int st = cli_call_until(&c, "wait", req, &resp, reached ? WAIT_PATIENCE_S : 0, deadline);
        if (st == CLI_DEADLINE)
            break; /* said below, as the jobs stand */
        if (st)
            return st;
        reached = 1;
        json_decref(resp);
    }
    json_t *out = json_array();
    int all_ok = 1;
    for (size_t k = 0; k < n; k++) {
        for (;;) {
            json_t *req = cli_req("show");
            json_object_set_new(req, "id", json_integer((json_int_t)ids[k]));
            json_t *resp;
            /* Once carmad answered, a restart of it (jobs keep running) is waited out
             * for WAIT_PATIENCE_S; no request waits past --timeout. */
            int st =
                cli_call_until(&c, "wait", req, &resp, reached ? WAIT_PATIENCE_S : 0, deadline);
            if (st == CLI_DEADLINE) {
                fprintf(stderr,
                        "carma wait: job %llu not known to have ended after %.10g s "
                        "(carmad did not answer in time)\n",
                        (unsigned long long)ids[k], timeout);
                if (c.json)
                    print_as_they_stand(&c, out, NULL, NULL, 0);
                json_decref(out);
                return 1;
            }
            if (st) {
                json_decref(out);
                return st;
            }
            reached = 1;
            json_t *job = json_object_get(resp, "job");
            if (cli_check("wait", resp, "answer", "job:o") ||
                cli_check("wait", job, "job", "id:i state:s")) {
                json_decref(resp);
                json_decref(out);
                return 1;
            }
            const char *state = json_string_value(json_object_get(job, "state"));
            if (cli_state_final(state)) {
                if (strcmp(state, "succeeded"))
                    all_ok = 0;
                if (!c.json) { /* said as it ends: a script reads it, a kill loses none */
                    printf("%llu %s\n", (unsigned long long)ids[k], state);
                    fflush(stdout);
                }
                json_array_append(out, job);
                json_decref(resp);
                break;
            }
            /* state points into resp: keep a copy for the message below. */
            char last[32];
            snprintf(last, sizeof last, "%s", state ? state : "unknown");
            if (deadline >= 0 && carma_mono_s() >= deadline) {
                fprintf(stderr, "carma wait: job %llu still %s after %.10g s\n",
                        (unsigned long long)ids[k], last, timeout);
                if (c.json) /* every job as it stands: this one, then those not reached */
                    print_as_they_stand(&c, out, job, ids + k + 1, n - k - 1);
                json_decref(resp);
                json_decref(out);
                return 1;
            }
            json_decref(resp);
            double sleep_s = nap; /* not past the deadline: the last look is taken at it */
            if (deadline >= 0 && deadline - carma_mono_s() < sleep_s)
                sleep_s = deadline - carma_mono_s() > 0 ? deadline - carma_mono_s() : 0;
            struct timespec ts = {(time_t)sleep_s,
                                  (long)((sleep_s - (double)(time_t)sleep_s) * 1e9)};
            nanosleep(&ts, NULL);
            if (nap < 0.5)
                nap *= 1.5;
        }
    }
    if (c.json)
        cli_print_json(out);
    json_decref(out);
    return all_ok ? 0 : 1;
}
