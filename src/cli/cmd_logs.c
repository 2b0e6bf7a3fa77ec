/* carma logs: print a job's output (the latest attempt, or --attempt N's); -f follows it
 * until the job ends; -n N starts at the last N lines of each log; --stdout or --stderr
 * picks one log. The logs are read here, by the paths carmad answers, never through the
 * socket: -n seeks back from a log's end in bounded chunks. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "util/csv.h"

/* The offset at which the last n lines of the file fd (size bytes) start, found by
 * reading it backwards in chunks of cap bytes (buf), whatever its size and n: a last line
 * without a newline counts as a line, as tail -n counts it. size when n is 0, 0 when the
 * file has n lines or fewer (or shrank meanwhile: read from its start), -errno when a
 * read fails. */
static off_t tail_offset(int fd, off_t size, long long n, char *buf, size_t cap)
{
    if (n <= 0 || size <= 0)
        return size > 0 ? size : 0;
    char last;
    ssize_t r = pread(fd, &last, 1, size - 1);
    if (r < 0)
        return -errno;
    if (r != 1)
        return 0;
    off_t end = last == '\n' ? size - 1 : size; /* a final newline ends the last line */
    while (end > 0) {
        size_t len = (uintmax_t)end < cap ? (size_t)end : cap;
        off_t at = end - (off_t)len;
        if ((r = pread(fd, buf, len, at)) < 0)
            return -errno;
        if ((size_t)r != len)
            return 0;
        for (size_t k = len; k-- > 0;)
            if (buf[k] == '\n' && --n == 0)
                return at + (off_t)k + 1;
        end = at;
    }
    return 0;
}

/* Copies what was appended to path since *off to fd out (1: stdout, 2: stderr). A file
 * now shorter than *off was truncated (the job cleared it): said, and read again from
 * its start, as tail -f does. A log is its job's user's, who may hold a lease on it
 * (F_SETLEASE): O_NONBLOCK makes the open fail at once with EWOULDBLOCK rather than wait
 * out the lease break time (45 s) in a reader that is not the lease holder (root's
 * `carma logs`). */
static int pump(const char *path, off_t *off, int out, long long *tail)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            return -errno;
        if (tail) /* none yet: all it will hold is new, read from its start */
            *tail = -1;
        return 0;
    }
    struct stat st;
    char buf[65536];
    int known = fstat(fd, &st) == 0;
    if (known && tail && *tail >= 0) {
        off_t t = tail_offset(fd, st.st_size, *tail, buf, sizeof buf);
        if (t < 0) {
            close(fd);
            return (int)t;
        }
        *off = t;
        *tail = -1;
    } else if (known && st.st_size < *off) {
        fprintf(stderr, "carma logs: %s truncated\n", out == 1 ? "stdout" : "stderr");
        *off = 0;
    }
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

/* The logs shown (show: LOGS_STDOUT, LOGS_STDERR or both): 0, the first error, or
 * -EWOULDBLOCK when a lease held one back (the other is copied all the same). tail: each
 * log's -n still to apply at its first read (-1: none), or NULL. */
#define LOGS_STDOUT 1
#define LOGS_STDERR 2
static int pump_both(int show, const char *out, off_t *oo, const char *err, off_t *eo,
                     long long *tail)
{
    int rc = show & LOGS_STDOUT ? pump(out, oo, 1, tail ? &tail[0] : NULL) : 0;
    if (rc && rc != -EWOULDBLOCK)
        return rc;
    int r2 = show & LOGS_STDERR ? pump(err, eo, 2, tail ? &tail[1] : NULL) : 0;
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
static void pump_between(int show, const char *out, const char *err, long long n, long long a)
{
    for (long long k = n + 1; k < a; k++) {
        char o[4096], e[4096];
        off_t ko = 0, ke = 0;
        fprintf(stderr, "--- carma: attempt %lld ---\n", k);
        if (attempt_path(out, n, k, o, sizeof o) || attempt_path(err, n, k, e, sizeof e)) {
            fprintf(stderr, "carma logs: attempt %lld's logs not found beside %s\n", k, out);
            continue;
        }
        pump_both(show, o, &ko, e, &ke, NULL);
    }
}

/* -n's largest N: a bound on what may be asked, not on the work (a log is read back
 * from its end 64 KiB at a time, whatever N is). */
#define LOGS_MAX_TAIL 100000000ULL

static void usage(FILE *f)
{
    fprintf(f,
            "usage: carma logs ID [-f] [--attempt N] [-n N] [--stdout|--stderr] [--json]\n"
            "                     [--socket PATH]\n"
            "Prints a job's output: its stdout on stdout, its stderr on stderr.\n"
            "  -f, --follow     follow the output until the job ends (across its attempts)\n"
            "  --attempt N      attempt N's output (from 1; carma show ID lists them), not\n"
            "                   the latest attempt's; with -f until that attempt ends\n"
            "  -n, --tail N     the last N lines of each log only (0 to %llu); with -f, then\n"
            "                   what follows\n"
            "  --stdout         the job's stdout only\n"
            "  --stderr         the job's stderr only\n"
            "  --json           carmad's answer: the attempt and its log files' paths\n",
            LOGS_MAX_TAIL);
}

int cmd_logs(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    uint64_t id = 0, want = 0; /* want: --attempt's N; 0: the latest */
    long long tail_n = -1;     /* -n's N; -1: every line */
    int follow = 0, show = 0;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        const char *a = argv[i];
        if (r == 0 && (!strcmp(a, "-f") || !strcmp(a, "--follow"))) {
            follow = 1;
            continue;
        }
        if (r == 0 && (!strcmp(a, "--stdout") || !strcmp(a, "--stderr"))) {
            show |= a[5] == 'o' ? LOGS_STDOUT : LOGS_STDERR;
            continue;
        }
        if (r == 0 && !strcmp(a, "--attempt") && i + 1 < argc) {
            if (cli_parse_count("logs", a, argv[++i], UINT32_MAX, &want) < 0)
                return 2;
            continue;
        }
        if (r == 0 && (!strcmp(a, "-n") || !strcmp(a, "--tail")) && i + 1 < argc) {
            uint64_t v;
            if (carma_parse_u64(argv[++i], &v) < 0 || v > LOGS_MAX_TAIL) {
                fprintf(stderr,
                        "carma logs: %s must be a number of lines from 0 to %llu, not '%s'\n", a,
                        LOGS_MAX_TAIL, carma_quote(argv[i], 40).s);
                return 2;
            }
            tail_n = (long long)v;
            continue;
        }
        if (r == 0 && a[0] != '-' && !id) {
            if (!(id = cli_parse_id("logs", a)))
                return 2;
            continue;
        }
        static const char *const valued[] = {"--attempt", "-n", "--tail", NULL};
        cli_bad_arg("logs", argc, argv, i, valued);
        usage(stderr);
        return 2;
    }
    if (!id) {
        usage(stderr);
        return 2;
    }
    if (c.json && (show || tail_n >= 0)) {
        fprintf(stderr, "carma logs: --json names the log files; -n, --stdout and --stderr "
                        "are not with it\n");
        return 2;
    }
    if (!show) /* neither or both: both, as ever */
        show = LOGS_STDOUT | LOGS_STDERR;
    int st;
    json_t *resp = ask(&c, id, &st, 0);
    if (st)
        return st;
    if (cli_check("logs", resp, "answer", LOGS_SHAPE)) {
        json_decref(resp);
        return 1;
    }
    char out[4096], err[4096];
    off_t oo = 0, eo = 0;
    long long tail[2] = {tail_n, tail_n};
    long long attempt = json_integer_value(json_object_get(resp, "attempt"));
    snprintf(out, sizeof out, "%s", json_string_value(json_object_get(resp, "stdout")));
    snprintf(err, sizeof err, "%s", json_string_value(json_object_get(resp, "stderr")));
    int final = cli_state_final(json_string_value(json_object_get(resp, "state")));
    if (want) { /* an earlier attempt's logs lie beside the latest's (STATE/jobs/ID/N/) */
        if ((long long)want > attempt || attempt < 1) {
            fprintf(stderr,
                    "carma logs: job %llu has no attempt %" PRIu64 " (it has %lld attempt%s; "
                    "carma show %llu lists them)\n",
                    (unsigned long long)id, want, attempt, attempt == 1 ? "" : "s",
                    (unsigned long long)id);
            json_decref(resp);
            return 2;
        }
        char o[4096], e[4096];
        if (attempt_path(out, attempt, (long long)want, o, sizeof o) ||
            attempt_path(err, attempt, (long long)want, e, sizeof e)) {
            fprintf(stderr, "carma logs: attempt %" PRIu64 "'s logs not found beside %s\n", want,
                    out);
            json_decref(resp);
            return 1;
        }
        /* an attempt that ended wrote what it will, and its shepherd made both files at
         * its start: missing now, they were removed (to free space), not yet to come */
        int gone = 0;
        if ((long long)want < attempt) {
            gone = !((show & LOGS_STDOUT) && access(o, F_OK) == 0) &&
                   !((show & LOGS_STDERR) && access(e, F_OK) == 0);
            const char *named = show & LOGS_STDOUT ? o : e;
            if (gone && access(named, F_OK) != 0) /* (its own errno, named) */
                fprintf(stderr,
                        "carma logs: job %llu attempt %" PRIu64 "'s logs are gone: %s: %s\n",
                        (unsigned long long)id, want, named, strerror(errno));
        }
        if (gone) {
            json_decref(resp);
            return 1;
        }
        snprintf(out, sizeof out, "%s", o);
        snprintf(err, sizeof err, "%s", e);
        if ((long long)want < attempt)
            final = 1; /* that attempt has ended: nothing to follow */
        attempt = (long long)want;
        json_object_set_new(resp, "attempt", json_integer((json_int_t)want));
        json_object_set_new(resp, "stdout", json_string(out));
        json_object_set_new(resp, "stderr", json_string(err));
    }
    if (c.json) {
        cli_print_json(resp);
        json_decref(resp);
        return 0;
    }
    if (attempt == 0 && !follow) /* nothing has run: say so rather than print nothing */
        fprintf(stderr, "carma logs: job %llu has not run (%s)\n", (unsigned long long)id,
                json_string_value(json_object_get(resp, "state")));
    json_decref(resp);
    int rc = pump_both(show, out, &oo, err, &eo, tail);
    struct timespec nap = {0, 200 * 1000 * 1000};
    int polls = 0;
    /* (a lease held on a log: what it holds back is read at a later poll) */
    while ((!rc || rc == -EWOULDBLOCK) && follow && !final) {
        nanosleep(&nap, NULL);
        rc = pump_both(show, out, &oo, err, &eo, tail);
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
        if (a != attempt && want) { /* --attempt N: that attempt has ended */
            json_decref(resp);
            rc = pump_both(show, out, &oo, err, &eo, tail);
            break;
        }
        if (a != attempt && (strcmp(no, out) || strcmp(ne, err))) {
            /* A new attempt: finish the old files, go on with the new ones. (A queued
             * job's answer names its first attempt's files already: those go on.) */
            pump_both(show, out, &oo, err, &eo, tail);
            /* (out names attempt 1's files while the job had not run: attempt 0) */
            pump_between(show, out, err, attempt ? attempt : 1, a);
            fprintf(stderr, "--- carma: attempt %lld ---\n", a);
            oo = eo = 0;
            tail[0] = tail[1] = -1; /* -n: of the logs as they were when asked */
            snprintf(out, sizeof out, "%s", no);
            snprintf(err, sizeof err, "%s", ne);
        }
        attempt = a;
        json_decref(resp);
        if (final)
            rc = pump_both(show, out, &oo, err, &eo, tail);
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
