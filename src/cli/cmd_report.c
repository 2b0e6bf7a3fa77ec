/* carma report: the server's recorded history drawn as the simulator's page
 * (src/report/report.h): per-GPU memory, SM activity and power over time, one Gantt
 * bar per attempt per GPU, and a usage table per user. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/outfile.h"
#include "report/report.h"
#include "util/timearg.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: carma report [--since T] [--until T] [--points N] --html FILE\n"
               "                    [--socket PATH]\n"
               "Draws carmad's recorded monitor history (default: the last 24 hours) as an\n"
               "HTML page. T: now, @EPOCH, 90m / 2h / 7d (ago), YYYY-MM-DD or\n"
               "YYYY-MM-DDTHH:MM[:SS] (local time).\n");
}

/* The shape of a history answer: 0, or 1 with the error printed. A GPU without a
 * string uuid has no bars (the store's GPUs of an older carmad). */
static int history_check(const json_t *h)
{
    return cli_check("report", h, "answer", "policy:s backend:s host:s? gpus:ao attempts:ao") ||
           cli_check_each("report", h, "gpus", "name:s t:ai mem_total_mib:i") ||
           cli_check_each("report", h, "attempts", "job:i start:n name:s? outcome:s? gpus:a?");
}

/* The history's GPUs (hist) to draw, as a new array: those carmad has in service now
 * (cur, its gpus answer) in its order, each with its "index", then those out of service
 * that have samples or attempts in the range, with "index" null. NULL when out of
 * memory. */
static json_t *gpus_shown(json_t *hist, const json_t *atts, const json_t *cur)
{
    json_t *out = json_array();
    size_t nh = json_array_size(hist);
    char *taken = calloc(nh + 1, 1);
    if (!out || !taken) {
        json_decref(out);
        free(taken);
        return NULL;
    }
    size_t k, g;
    json_t *x;
    json_array_foreach(cur, k, x) {
        const char *uuid = json_string_value(json_object_get(x, "uuid"));
        for (g = 0; g < nh; g++) {
            json_t *o = json_array_get(hist, g);
            const char *hu = json_string_value(json_object_get(o, "uuid"));
            if (!taken[g] && hu && uuid && !strcmp(hu, uuid)) {
                taken[g] = 1;
                json_object_set(o, "index", json_object_get(x, "index"));
                json_array_append(out, o);
                break;
            }
        }
    }
    for (g = 0; g < nh; g++) {
        json_t *o = json_array_get(hist, g);
        const char *hu = json_string_value(json_object_get(o, "uuid"));
        int used = json_array_size(json_object_get(o, "t")) > 0;
        json_t *a, *uu;
        size_t y;
        json_array_foreach(atts, k, a) {
            json_array_foreach(json_object_get(a, "gpus"), y, uu) {
                used |= hu && json_is_string(uu) && !strcmp(json_string_value(uu), hu);
            }
        }
        if (!taken[g] && used) {
            json_object_set_new(o, "index", json_null());
            json_array_append(out, o);
        }
    }
    free(taken);
    return out;
}

/* GPU g's uuid in a history answer, or NULL. */
static const char *gpu_uuid(const json_t *gpus, size_t g)
{
    return json_string_value(json_object_get(json_array_get(gpus, g), "uuid"));
}

static enum carma_report_outcome outcome_of(const char *o)
{
    if (!o)
        return CARMA_REPORT_RUNNING;
    if (!strcmp(o, "succeeded"))
        return CARMA_REPORT_OK;
    if (!strcmp(o, "oom"))
        return CARMA_REPORT_OOM;
    if (!strcmp(o, "cancelled"))
        return CARMA_REPORT_CANCELLED;
    if (!strcmp(o, "gpu_error"))
        return CARMA_REPORT_GPU_ERROR;
    return CARMA_REPORT_FAILED;
}

static void fmt_when(double t, char *buf, size_t cap)
{
    time_t s = (time_t)t;
    struct tm tm;
    localtime_r(&s, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M", &tm);
}

int cmd_report(int argc, char **argv)
{
    struct cli_conn c;
    cli_conn_init(&c);
    const char *html = NULL;
    double now = (double)time(NULL), since = -1, until = -1;
    long points = 1000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) { /* cli_common_opt would take it and do nothing */
            fprintf(stderr, "carma report: --json is not supported: the report is an HTML "
                            "page ('carma usage --json' and 'carma gpus --json' give data)\n");
            return 2;
        }
        int r = cli_common_opt(&c, argc, argv, &i);
        if (r > 0)
            continue;
        if (r == 0 && cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        }
        if (r == 0 && i + 1 < argc && !strcmp(argv[i], "--html")) {
            html = argv[++i];
            continue;
        }
        if (r == 0 && i + 1 < argc && !strcmp(argv[i], "--points")) {
            char *end;
            points = strtol(argv[++i], &end, 10);
            if (*end || points < 10 || points > 4000) {
                fprintf(stderr, "carma report: --points: an integer in [10, 4000] expected\n");
                return 2;
            }
            continue;
        }
        if (r == 0 && i + 1 < argc && (!strcmp(argv[i], "--since") || !strcmp(argv[i], "--until"))) {
            const char *opt = argv[i];
            struct carma_err err = {{0}};
            if (carma_time_parse(argv[++i], now, !strcmp(opt, "--since") ? &since : &until,
                                 &err)) {
                fprintf(stderr, "carma report: %s %s\n", opt, err.msg);
                return 2;
            }
            continue;
        }
        static const char *const valued[] = {"--html", "--points", "--since", "--until", NULL};
        cli_bad_arg("report", argc, argv, i, valued);
        usage(stderr);
        return 2;
    }
    if (!html) {
        fprintf(stderr, "carma report: --html FILE is needed: the report is an HTML page "
                        "written there\n");
        usage(stderr);
        return 2;
    }
    int until_given = until >= 0;
    if (until < 0)
        until = now;
    if (since < 0)
        since = until - 86400;
    if (until <= since) {
        fprintf(stderr, "carma report: --since is not before %s: the span is empty\n",
                until_given ? "--until" : "now (--until's default)");
        return 2;
    }
    json_t *req = cli_req("history");
    json_object_set_new(req, "since", json_real(since));
    json_object_set_new(req, "until", json_real(until));
    json_object_set_new(req, "points", json_integer(points));
    json_t *h;
    int st = cli_call(&c, "report", req, &h);
    if (st)
        return st;
    req = cli_req("usage");
    json_object_set_new(req, "since", json_real(since));
    json_object_set_new(req, "until", json_real(until));
    json_t *u = NULL;
    if ((st = cli_call(&c, "report", req, &u))) {
        json_decref(h);
        return st;
    }
    if (history_check(h) || cli_check_usage("report", u)) {
        json_decref(h);
        json_decref(u);
        return 1;
    }
    json_t *now_gpus = NULL; /* carmad's numbering, as carma gpus shows it */
    if ((st = cli_call(&c, "report", cli_req("gpus"), &now_gpus)) ||
        (st = cli_check_gpus("report", now_gpus))) {
        json_decref(now_gpus);
        json_decref(h);
        json_decref(u);
        return st;
    }
    json_t *shown = gpus_shown(json_object_get(h, "gpus"), json_object_get(h, "attempts"),
                               json_object_get(now_gpus, "gpus"));
    json_decref(now_gpus);
    if (!shown) {
        fprintf(stderr, "carma report: out of memory\n");
        json_decref(h);
        json_decref(u);
        return 1;
    }
    json_object_set_new(h, "gpus", shown);
    json_t *gpus = json_object_get(h, "gpus"), *atts = json_object_get(h, "attempts");
    size_t ng = json_array_size(gpus), na = json_array_size(atts);
    struct carma_report_series *se = calloc(ng + 1, sizeof *se);
    char (*labels)[160] = calloc(ng + 1, sizeof *labels);
    double **ts = calloc(ng + 1, sizeof *ts);
    float **fs = calloc(3 * ng + 1, sizeof *fs);
    size_t nbars = 0; /* one bar per attempt per GPU it used */
    for (size_t a = 0; a < na; a++)
        nbars += json_array_size(json_object_get(json_array_get(atts, a), "gpus"));
    struct carma_report_bar *bars = calloc(nbars + 1, sizeof *bars);
    size_t nb = 0;
    int rc = 0;
    if (!se || !labels || !ts || !fs || !bars) {
        fprintf(stderr, "carma report: out of memory\n");
        rc = 1;
        goto out;
    }
    /* Start the page where the records or the attempts start, not at an empty --since. */
    double first = until - since;
    for (size_t g = 0; g < ng; g++) {
        json_t *t = json_object_get(json_array_get(gpus, g), "t");
        if (json_array_size(t) && (double)json_integer_value(json_array_get(t, 0)) < first)
            first = (double)json_integer_value(json_array_get(t, 0));
    }
    for (size_t k = 0; k < na; k++) {
        double s0 = json_number_value(json_object_get(json_array_get(atts, k), "start")) - since;
        if (s0 < first)
            first = s0;
    }
    /* nothing recorded in the range: the page keeps the range asked for */
    double shift = first > 2 && first < until - since ? first - 2 : 0;
    since += shift;
    double span = until - since;
    for (size_t g = 0; g < ng; g++) {
        json_t *o = json_array_get(gpus, g);
        json_t *t = json_object_get(o, "t"), *m = json_object_get(o, "mem_mib"),
               *sm = json_object_get(o, "smact_pm"), *ut = json_object_get(o, "util_pm"),
               *pw = json_object_get(o, "power_dw");
        size_t n = json_array_size(t);
        ts[g] = calloc(n + 1, sizeof **ts);
        fs[3 * g] = calloc(n + 1, sizeof **fs);
        fs[3 * g + 1] = calloc(n + 1, sizeof **fs);
        fs[3 * g + 2] = calloc(n + 1, sizeof **fs);
        if (!ts[g] || !fs[3 * g] || !fs[3 * g + 1] || !fs[3 * g + 2]) {
            fprintf(stderr, "carma report: out of memory\n");
            rc = 1;
            goto out;
        }
        double pmax = 0;
        int any_sm = 0;
        for (size_t k = 0; k < n; k++)
            any_sm |= json_integer_value(json_array_get(sm, k)) >= 0;
        for (size_t k = 0; k < n; k++) {
            ts[g][k] = (double)json_integer_value(json_array_get(t, k)) - shift;
            if (ts[g][k] < 0)
                ts[g][k] = 0;
            if (ts[g][k] > span)
                ts[g][k] = span;
            if (k && ts[g][k] < ts[g][k - 1])
                ts[g][k] = ts[g][k - 1];
            fs[3 * g][k] = (float)json_integer_value(json_array_get(m, k));
            /* SM activity, or NVML utilisation where the GPU gives no SMACT. */
            json_int_t a = json_integer_value(json_array_get(any_sm ? sm : ut, k));
            fs[3 * g + 1][k] = a >= 0 ? (float)a / 1000.0f : -1.0f;
            json_int_t p = json_integer_value(json_array_get(pw, k));
            fs[3 * g + 2][k] = p >= 0 ? (float)p / 10.0f : -1.0f;
            if (p / 10.0 > pmax)
                pmax = p / 10.0;
        }
        json_t *pl = json_object_get(o, "power_max_w");
        json_t *idx = json_object_get(o, "index");
        char num[24] = "-"; /* a GPU out of service now has no number */
        if (json_is_integer(idx))
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(idx));
        snprintf(labels[g], sizeof labels[g], "GPU %s %s%s", num,
                 json_string_value(json_object_get(o, "name")),
                 any_sm || n == 0 ? "" : " (utilisation: no SMACT)");
        se[g] = (struct carma_report_series){
            .label = labels[g],
            .mem_total_mib = (double)json_integer_value(json_object_get(o, "mem_total_mib")),
            .power_max_w = json_is_number(pl) ? json_number_value(pl) : (pmax > 0 ? pmax : 1),
            .n = n, .t_s = ts[g], .mem_mib = fs[3 * g], .smact = fs[3 * g + 1],
            .power_w = fs[3 * g + 2]};
    }
    for (size_t k = 0; k < na; k++) {
        json_t *a = json_array_get(atts, k);
        /* the name whole (up to CARMA_PROTO_MAX_NAME bytes): the answer outlives the page */
        const char *name = json_string_value(json_object_get(a, "name"));
        double s0 = json_number_value(json_object_get(a, "start")) - since;
        json_t *e = json_object_get(a, "end");
        /* a running attempt ran until now, not to an --until still to come */
        double s1 = (json_is_number(e) ? json_number_value(e) : until < now ? until : now) - since;
        if (s0 < 0)
            s0 = 0;
        if (s1 > span)
            s1 = span;
        if (s1 < s0)
            s1 = s0;
        size_t x;
        json_t *uu;
        json_array_foreach(json_object_get(a, "gpus"), x, uu) {
            for (size_t g = 0; g < ng; g++)
                if (json_is_string(uu) && gpu_uuid(gpus, g) &&
                    !strcmp(json_string_value(uu), gpu_uuid(gpus, g)) && nb < nbars) {
                    bars[nb++] = (struct carma_report_bar){
                        .gpu = (uint32_t)g,
                        .start_s = s0,
                        .end_s = s1,
                        .job = (uint64_t)json_integer_value(json_object_get(a, "job")),
                        .label = name,
                        .outcome = outcome_of(json_string_value(json_object_get(a, "outcome")))};
                }
        }
    }
    /* The usage table. */
    static const char *const header[] = {"user", "jobs", "attempts", "OOM", "GPU-hours",
                                         "energy kWh", "mean wait"};
    json_t *users = json_object_get(u, "users");
    size_t nu = json_array_size(users);
    char (*cells)[32] = calloc(nu * 7 + 1, sizeof *cells);
    const char **cellp = calloc(nu * 7 + 1, sizeof *cellp);
    if (!cells || !cellp) {
        free(cells);
        free(cellp);
        rc = 1;
        goto out;
    }
    for (size_t k = 0; k < nu; k++) {
        json_t *x = json_array_get(users, k);
        double jobs = (double)json_integer_value(json_object_get(x, "jobs"));
        snprintf(cells[k * 7 + 1], 32, "%.0f", jobs);
        snprintf(cells[k * 7 + 2], 32, "%lld",
                 (long long)json_integer_value(json_object_get(x, "attempts")));
        snprintf(cells[k * 7 + 3], 32, "%lld",
                 (long long)json_integer_value(json_object_get(x, "oom")));
        snprintf(cells[k * 7 + 4], 32, "%.2f",
                 json_number_value(json_object_get(x, "gpu_seconds")) / 3600);
        snprintf(cells[k * 7 + 5], 32, "%.3f",
                 json_number_value(json_object_get(x, "energy_j")) / 3.6e6);
        snprintf(cells[k * 7 + 6], 32, "%.0f s",
                 jobs > 0 ? json_number_value(json_object_get(x, "wait_s")) / jobs : 0);
        for (int cidx = 0; cidx < 7; cidx++)
            cellp[k * 7 + cidx] = cells[k * 7 + cidx];
        /* the name whole (a user name may be 32 bytes and more): the answer outlives the
         * page's writing */
        cellp[k * 7] = json_string_value(json_object_get(x, "user"));
    }
    /* carma usage's totals: attempts that ran in the range but whose jobs were submitted
     * before it are drawn, not counted. */
    char note[160];
    snprintf(note, sizeof note,
             "jobs submitted in this range%s; the charts show every attempt that ran in it",
             nu == 0 && na > 0 ? ": none" : "");
    struct carma_report_table table = {7, nu, header, cellp, note};
    char title[300], sub[400], w0[32], w1[32];
    const char *host = json_string_value(json_object_get(h, "host"));
    snprintf(title, sizeof title, "carmad on %s", host && *host ? host : "this server");
    fmt_when(since, w0, sizeof w0);
    fmt_when(until, w1, sizeof w1);
    snprintf(sub, sizeof sub, "%s to %s; policy %s; GPUs from %s; %zu attempts%s", w0, w1,
             json_string_value(json_object_get(h, "policy")),
             json_string_value(json_object_get(h, "backend")), na,
             json_is_true(json_object_get(h, "truncated")) ? " (oldest left out)" : "");
    struct carma_report_section sec = {.title = title, .t_end_s = span, .ngpus = ng,
                                       .gpus = se, .nbars = nb, .bars = bars};
    struct cli_outfile of;
    cli_fatal_signals_catch(NULL); /* Ctrl-C while it writes: no new file left behind */
    int orc = cli_outfile_open(&of, html);
    if (orc) {
        fprintf(stderr, "carma report: %s: %s\n", html, strerror(-orc));
        rc = 1;
    } else {
        struct carma_err err = {{0}};
        int wrc = carma_report_write_html(of.f, "carma report", sub, &table, &sec, 1, &err);
        if (cli_outfile_close(&of, wrc != 0, err.msg, sizeof err.msg)) {
            fprintf(stderr, "carma report: %s: %s\n", html, err.msg);
            rc = 1;
        }
    }
    free(cells);
    free(cellp);
out:
    for (size_t g = 0; g < ng; g++) {
        if (ts)
            free(ts[g]);
        if (fs) {
            free(fs[3 * g]);
            free(fs[3 * g + 1]);
            free(fs[3 * g + 2]);
        }
    }
    free(se);
    free(labels);
    free(ts);
    free(fs);
    free(bars);
    json_decref(h);
    json_decref(u);
    return rc;
}
