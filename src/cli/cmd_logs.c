/* carma logs: print a job's output (the latest attempt); -f follows it until the
 * job ends. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"

/* Copies what was appended to path since *off to fd out (1: stdout, 2: stderr). A file
 * now shorter than *off was truncated (the job cleared it): said, and read again from
 * its start, as tail -f does. A log is its job's user's, who may hold a lease on it
 * (F_SETLEASE): O_NONBLOCK makes the open fail at once with EWOULDBLOCK rather than wait
 * out the lease break time (45 s) in a reader that is not the lease holder (root's
 * `carma logs`). */
static int pump(const char *path, off_t *off, int out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size < *off) {
        fprintf(stderr, "carma logs: %s truncated\n", out == 1 ? "stdout" : "stderr");
        *off = 0;
    }
    char buf[65536];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, *off)) > 0) {
        for (ssize_t w = 0; w < n;) {
            ssize_t x = write(out, buf + w, (size_t)(n - w));
            if (x < 0 && errno == EINTR)
                continue;
            if (x < 0) {
                close(fd);
                return -errno;
            }
            w += x;
        }
        *off += n;
    }
    close(fd);
    return 0;
}

/* Both logs: 0, the first error, or -EWOULDBLOCK when a lease held one back (the other is
 * copied all the same). */
static int pump_both(const char *out, off_t *oo, const char *err, off_t *eo)
{
    int rc = pump(out, oo, 1);
    if (rc && rc != -EWOULDBLOCK)
        return rc;
    int r2 = pump(err, eo, 2);
    return r2 ? r2 : rc;
}

/* Following, the job outlives a restart of carmad: wait this long for it to return. */
#define LOGS_PATIENCE_S 300
#define LOGS_SHAPE "attempt:i state:s stdout:s stderr:s" /* of carmad's answer */

static json_t *ask(const struct cli_conn *c, uint64_t id, int *st, double patience_s)
{
    json_t *req = cli_req("logs");
    json_object_set_new(req, "id", json_integer((json_int_t)id));
    json_t *resp = NULL;
    *st = cli_call_patient(c, "logs", req, &resp, patience_s);
    return resp;
}

/* The path of attempt k's log beside cur, attempt n's (STATE/jobs/ID/N/LEAF, as carmad
 * lays them out), in buf: 0, or -1 when cur does not end in "/N/LEAF" or buf is short. */
static int attempt_path(const char *cur, long long n, long long k, char *buf, size_t cap)
{
    const char *leaf = strrchr(cur, '/');
    if (!leaf || leaf == cur)
        return -1;
    const char *d = leaf - 1;
    while (d > cur && d[-1] != '/')
        d--;
    char num[24];
    int nl = snprintf(num, sizeof num, "%lld", n);
    if (d == cur || leaf - d != nl || memcmp(d, num, (size_t)nl))
        return -1;
    int w = snprintf(buf, cap, "%.*s%lld%s", (int)(d - cur), cur, k, leaf);
    return w < 0 || (size_t)w >= cap ? -1 : 0;
}

/* The attempts after n and before a, which ended between two polls of -f: each one's
 * logs whole, after its heading, so that no attempt's output is left out. */
static void pump_between(const char *out, const char *err, long long n, long long a)
{
    for (long long k = n + 1; k < a; k++) {
        char o[4096], e[4096];
        off_t ko = 0, ke = 0;
        fprintf(stderr, "--- carma: attempt %lld ---\n", k);
        if (attempt_path(out, n, k, o, sizeof o) || attempt_path(err, n, k, e, sizeof e)) {
            fprintf(stderr, "carma logs: attempt %lld's logs not found beside %s\n", k, out);
            continue;
        }
        pump(o, &ko, 1);
        pump(e, &ke, 2);
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: carma logs ID [-f] [--json] [--socket PATH]\n"
               "Prints a job's output (its latest attempt); -f follows it until the job ends.\n");
}

int cmd_logs(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    uint64_t id = 0;
    int follow = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))) {
            follow = 1;
            continue;
        }
        if (r == 0 && argv[i][0] != '-' && !id) {
            if (!(id = cli_parse_id("logs", argv[i])))
                return 2;
            continue;
        }
        cli_bad_arg("logs", argc, argv, i, NULL);
        usage(stderr);
        return 2;
    }
    if (!id) {
        usage(stderr);
        return 2;
    }
    int st;
    json_t *resp = ask(&c, id, &st, 0);
    if (st)
        return st;
    if (cli_check("logs", resp, "answer", LOGS_SHAPE)) {
        json_decref(resp);
        return 1;
    }
    if (c.json) {
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    char out[4096], err[4096];
    off_t oo = 0, eo = 0;
    long long attempt = json_integer_value(json_object_get(resp, "attempt"));
    snprintf(out, sizeof out, "%s", json_string_value(json_object_get(resp, "stdout")));
    snprintf(err, sizeof err, "%s", json_string_value(json_object_get(resp, "stderr")));
    int final = cli_state_final(json_string_value(json_object_get(resp, "state")));
    if (attempt == 0 && !follow) /* nothing has run: say so rather than print nothing */
        fprintf(stderr, "carma logs: job %llu has not run (%s)\n", (unsigned long long)id,
                json_string_value(json_object_get(resp, "state")));
    json_decref(resp);
    int rc = pump_both(out, &oo, err, &eo);
    struct timespec nap = {0, 200 * 1000 * 1000};
    int polls = 0;
    /* (a lease held on a log: what it holds back is read at a later poll) */
    while ((!rc || rc == -EWOULDBLOCK) && follow && !final) {
        nanosleep(&nap, NULL);
        rc = pump_both(out, &oo, err, &eo);
        if (++polls % 3)
            continue;
        if (!(resp = ask(&c, id, &st, LOGS_PATIENCE_S)))
            return st;
        if (cli_check("logs", resp, "answer", LOGS_SHAPE)) {
            json_decref(resp);
            return 1;
        }
        final = cli_state_final(json_string_value(json_object_get(resp, "state")));
        long long a = json_integer_value(json_object_get(resp, "attempt"));
        const char *no = json_string_value(json_object_get(resp, "stdout")),
                   *ne = json_string_value(json_object_get(resp, "stderr"));
        if (a != attempt && (strcmp(no, out) || strcmp(ne, err))) {
            /* A new attempt: finish the old files, go on with the new ones. (A queued
             * job's answer names its first attempt's files already: those go on.) */
            pump(out, &oo, 1);
            pump(err, &eo, 2);
            /* (out names attempt 1's files while the job had not run: attempt 0) */
            pump_between(out, err, attempt ? attempt : 1, a);
            fprintf(stderr, "--- carma: attempt %lld ---\n", a);
            oo = eo = 0;
            snprintf(out, sizeof out, "%s", no);
            snprintf(err, sizeof err, "%s", ne);
        }
        attempt = a;
        json_decref(resp);
        if (final)
            rc = pump_both(out, &oo, err, &eo);
    }
    if (rc) {
        fprintf(stderr, "carma logs: cannot read the logs of job %llu: %s\n",
                (unsigned long long)id,
                rc == -EWOULDBLOCK ? "another process holds a lease on a log file (try again)"
                                   : strerror(-rc));
        return 1;
    }
    return 0;
}
