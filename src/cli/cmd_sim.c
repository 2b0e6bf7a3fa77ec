/* carma sim: replays a trace through each chosen policy on simulated GPUs and prints
 * one row per policy. Nothing is printed until every policy has run, so bad input
 * never leaves a partial table. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/outfile.h"
#include "core/policy.h"
#include "report/report.h"
#include "sim/bound.h"
#include "sim/gpukind.h"
#include "sim/sim.h"
#include "sim/trace.h"
#include "util/utf8.h"
#include "util/csv.h"

#define SIM_MAX_GPUS 65535
#define SIM_MAX_POLICIES 32

static const char *const est_names[SIM_EST_COUNT] = {"horus", "faketensor", "gpumemnet", "carma"};

/* The help and the README give the recorder's limits in words. */
_Static_assert(CARMA_REPORT_KEEP_BARS == 65536 && CARMA_REPORT_KEEP_POINTS == 16384,
               "--report's limits changed: update sim_usage and the README");

static void sim_usage(FILE *f)
{
    fprintf(
        f,
        "usage: carma sim --trace FILE [--workloads FILE] [--trace-format FMT]\n"
        "                 [--rad-dir DIR] [--gpus SPEC] [--sharing mps|timeslice]\n"
        "                 [--policy P[,P...]|all]\n"
        "                 [--estimator horus|faketensor|gpumemnet|carma] [--max-attempts N]\n"
        "                 [--json] [--report out.html] [--seed N] [--jitter FRAC]\n"
        "\n"
        "Replays a trace through the scheduler on simulated GPUs, one run per policy.\n"
        "  --trace FILE       carma CSV (submit_s,workload), CARMA .sh, Muri CSV, Gavel\n"
        "                     .trace or Alibaba pod list (format detected, or --trace-format\n"
        "                     carma-csv|carma-sh|muri|gavel|alibaba); - reads standard input\n"
        "  --workloads FILE   workload catalog for carma CSV/.sh traces (default:\n"
        "                     workloads.csv beside the trace, else data/workloads.csv,\n"
        "                     else PREFIX/share/carma/workloads.csv of make install);\n"
        "                     - reads standard input (not with --trace -)\n"
        "  --rad-dir DIR      folder of the .rad task files of a CARMA .sh trace (default:\n"
        "                     the trace's folder; CARMA's repository keeps them in workloads/)\n"
        "  --gpus SPEC        e.g. 4xa100-40gb or 2xa100-40gb,2xv100-32gb (default 4xa100-40gb);\n"
        "                     '/' begins another island (GPUs linked by NVLink or PCIe\n"
        "                     switches), as in 4xa100-40gb/4xa100-40gb\n"
        "                     kinds: a100-40gb a100-80gb h100-80gb v100-32gb\n"
        "  --sharing MODE     mps (default) or timeslice\n"
        "  --policy LIST      comma-separated policies or 'all' (default all):\n");
    size_t n;
    const struct carma_policy *p = carma_policy_all(&n);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "                       %-12s %s\n", p[i].name, p[i].summary);
    fprintf(f, "  --estimator E      requirement of the est-* policies (default gpumemnet)\n"
               "  --max-attempts N   attempts per job before it is given up, 0 to 1000\n"
               "                     (default 3, 0 = no limit)\n"
               "  --json             print {\"policies\": {name: figures}, \"bounds\": {...}}\n"
               "                     instead of a table\n"
               "  --report FILE      write an HTML page with per-GPU charts and a Gantt chart\n"
               "                     of the first GPUs (96 / policies, 4 to 32; only they are\n"
               "                     recorded, and of a long run the charts' extremes and the\n"
               "                     first 65,536 bars or so), checked before the run, written\n"
               "                     after the figures\n"
               "  --jitter FRAC      multiply run times by exp(N(0, FRAC)) noise, FRAC in\n"
               "                     [0, 2] (default 0)\n"
               "  --seed N           seed of that noise, 0 to 2^63 - 1 (default 1)\n"
               "The (bound) row: makespan and energy that no schedule finishing every job can\n"
               "beat on these GPUs under the simulator's model (docs/model.md).\n"
               "On a terminal, stderr shows a progress bar once the runs take over 0.5 s (with\n"
               "--json too), erased at the end (or by Ctrl-C), then the simulation's speed.\n");
}

struct row {
    const struct carma_policy *policy;
    struct sim_metrics m;
    struct sim_timeline tl;
    double wall_s;
};

/* What a fatal signal (SIGINT, SIGTERM, SIGHUP) undoes before the process dies of it
 * (cli_fatal_signals_catch, which removes a report's new file too): the progress bar on
 * the terminal. A handler has no other way in than this static, the one state here
 * outside main(). */
static volatile sig_atomic_t sig_bar_drawn;

static void bar_erase_on_signal(void)
{
    if (sig_bar_drawn)
        (void)!write(STDERR_FILENO, "\r\033[K", 4);
}

/* The progress bar: on stderr when it is a terminal (table or JSON: the figures go to stdout),
 * once the runs have taken PROGRESS_AFTER_S, redrawn at most every PROGRESS_EVERY_S,
 * erased before anything else is printed. */
#define PROGRESS_AFTER_S 0.5
#define PROGRESS_EVERY_S 0.1

struct progress_ctx {
    int on;            /* stderr is a terminal */
    int drawn;         /* the bar is on the line */
    double start_s;    /* when the first run began (carma_mono_s) */
    double next_s;     /* no redraw before this */
    size_t ipol, npol; /* the run under way, of npol */
    const char *policy;
};

/* n with thousands separators. */
static void progress_count(char *b, size_t cap, size_t n)
{
    char d[32];
    int len = snprintf(d, sizeof d, "%zu", n);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < cap; i++) {
        if (i && (len - i) % 3 == 0)
            b[o++] = ',';
        b[o++] = d[i];
    }
    b[o] = 0;
}

/* Called by the simulator every 1,024 events and here at each run's start: one clock
 * read when on, nothing else until a redraw is due. */
static void on_progress(void *ctx, size_t done, size_t total)
{
    struct progress_ctx *p = ctx;
    if (!p->on)
        return;
    double now = carma_mono_s();
    if (now < p->next_s || now - p->start_s < PROGRESS_AFTER_S)
        return;
    p->next_s = now + PROGRESS_EVERY_S;
    enum { WIDTH = 20 };
    double frac = ((double)p->ipol + (total ? (double)done / (double)total : 0)) /
                  (double)(p->npol ? p->npol : 1);
    frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
    char bar[WIDTH + 1], a[32], b[32];
    int full = (int)(frac * WIDTH);
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '#' : '.';
    bar[WIDTH] = 0;
    progress_count(a, sizeof a, done);
    progress_count(b, sizeof b, total);
    char line[256];
    int n = snprintf(line, sizeof line, "[%s] %3d%%  policy %zu/%zu %s  %s/%s jobs", bar,
                     (int)(frac * 100), p->ipol + 1, p->npol, p->policy, a, b);
    /* cut to the terminal's width, its last column left free: a line that reaches it wraps,
     * and each redraw would start a new line (all of it ASCII: a byte is a column) */
    struct winsize ws;
    if (n > 0 && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 &&
        (size_t)n >= ws.ws_col && (size_t)ws.ws_col - 1 < sizeof line)
        line[ws.ws_col - 1] = '\0';
    sig_bar_drawn = 1; /* before: a signal while it is drawn erases what is there */
    fprintf(stderr, "\r%s\033[K", line);
    p->drawn = 1;
}

static void progress_erase(struct progress_ctx *p)
{
    if (p->drawn)
        fputs("\r\033[K", stderr);
    p->drawn = 0;
    sig_bar_drawn = 0;
}

/* The installed catalog: SHARE/carma/workloads.csv, SHARE the folder beside the one of
 * the running carma (`make install` puts carma in PREFIX/bin, the catalog in
 * PREFIX/share/carma); NULL when there is none. */
static const char *installed_catalog(char *buf, size_t len)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return NULL;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    if ((size_t)snprintf(buf, len, "%s/../share/carma/workloads.csv", self) >= len)
        return NULL;
    return access(buf, R_OK) == 0 ? buf : NULL;
}

/* Finds the default catalog: workloads.csv beside the trace (none for standard input,
 * trace NULL), else data/workloads.csv, else the installed one. */
static const char *default_catalog(const char *trace, char *buf, size_t len)
{
    if (trace) {
        const char *slash = strrchr(trace, '/');
        int dn = slash ? (int)(slash - trace) : 1;
        snprintf(buf, len, "%.*s/workloads.csv", dn, slash ? trace : ".");
        if (access(buf, R_OK) == 0)
            return buf;
    }
    if (access("data/workloads.csv", R_OK) == 0)
        return "data/workloads.csv";
    return installed_catalog(buf, len);
}

static int parse_policies(const char *list, const struct carma_policy **out, size_t *n)
{
    *n = 0;
    if (strcmp(list, "all") == 0) {
        size_t k;
        const struct carma_policy *all = carma_policy_all(&k);
        for (size_t i = 0; i < k && i < SIM_MAX_POLICIES; i++)
            out[(*n)++] = &all[i];
        return 0;
    }
    char buf[1024];
    if (strlen(list) >= sizeof buf) {
        fprintf(stderr, "carma sim: --policy list too long\n");
        return -1;
    }
    strcpy(buf, list);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (!*tok) {
            fprintf(stderr, "carma sim: --policy '%s': an empty name in the list\n", list);
            return -1;
        }
        if (strcmp(tok, "all") == 0) { /* known, but it names every policy on its own */
            fprintf(stderr,
                    "carma sim: --policy '%s': 'all' stands alone (it runs every policy); "
                    "give it or a list of names\n",
                    list);
            return -1;
        }
        const struct carma_policy *p = carma_policy_find(tok);
        if (!p) {
            fprintf(stderr, "carma sim: --policy: unknown policy '%s' (see carma sim --help)\n",
                    tok);
            return -1;
        }
        for (size_t i = 0; i < *n; i++)
            if (out[i] == p) {
                fprintf(stderr, "carma sim: --policy: '%s' given twice\n", tok);
                return -1;
            }
        if (*n == SIM_MAX_POLICIES)
            return -1;
        out[(*n)++] = p;
    }
    if (*n == 0) {
        fprintf(stderr, "carma sim: --policy: empty list\n");
        return -1;
    }
    return 0;
}

/* How many jobs the trace gives an answer of estimator `est` (for the est-* policies). */
static size_t trace_estimates(const struct sim_trace *t, int est)
{
    size_t n = 0;
    for (size_t i = 0; i < t->njobs; i++)
        n += t->jobs[i].est_mib[est] > 0;
    return n;
}

/* A note per policy that gave up jobs, one on the estimates, two on the trace. */
#define SIM_MAX_NOTES (SIM_MAX_POLICIES + 3)
/* A note's bytes: the longest, a policy that gave jobs up, fits with 20-digit counts. */
#define SIM_NOTE_MAX 384

/* The figures of the exclusive policy when it ran (the ratios' denominator), else NULL. */
static const struct sim_metrics *exclusive_of(const struct row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].policy->name, "exclusive") == 0)
            return &rows[i].m;
    return NULL;
}

/* span/ex and kWh/ex of a makespan (0: none, no job finished) and an energy, or "-"
 * where a side has none. Neither where the row or exclusive gave jobs up: that makespan
 * counts only the jobs that finished and that energy leaves out the work the others
 * never did, so they are not comparable (either can fall below the bound's, or a row
 * that finished a job exclusive gave up looks many times slower). */
static void ratio_cells(const struct sim_metrics *ex, double span, double energy, int gave_up,
                        char r1[16], char r2[16])
{
    snprintf(r1, 16, "-");
    snprintf(r2, 16, "-");
    if (!ex || ex->gave_up || gave_up)
        return;
    if (ex->succeeded && ex->makespan_s > 0 && span > 0)
        snprintf(r1, 16, "%.3f", span / ex->makespan_s);
    if (ex->energy_j > 0)
        snprintf(r2, 16, "%.3f", energy / ex->energy_j);
}

/* A figure over the finished jobs, in hours, or "-" when none finished. */
static void hours_cell(const struct sim_metrics *m, double s, char out[16])
{
    if (m->succeeded)
        snprintf(out, 16, "%.2f", s / 3600);
    else
        snprintf(out, 16, "-");
}

/* What the figures leave out, a sentence each: under the table, in the report and in
 * the JSON's "notes". Returns how many. */
static size_t collect_notes(const struct row *rows, size_t n, const struct sim_trace *t, int est,
                            char (*notes)[SIM_NOTE_MAX])
{
    size_t k = 0;
    /* What the trace asks for that no policy honours. */
    if (t->gpu_spec_jobs)
        snprintf(notes[k++], sizeof notes[0],
                 "%zu pod%s name%s a GPU model (gpu_spec): carma places %s on any kind.",
                 t->gpu_spec_jobs, t->gpu_spec_jobs == 1 ? "" : "s",
                 t->gpu_spec_jobs == 1 ? "s" : "", t->gpu_spec_jobs == 1 ? "it" : "them");
    if (t->weighted_jobs || t->slo_jobs)
        snprintf(notes[k++], sizeof notes[0],
                 "%zu job%s a priority weight other than 1 and %zu an SLO (Gavel): carma "
                 "reads and checks them, but no policy uses them.",
                 t->weighted_jobs, t->weighted_jobs == 1 ? " has" : "s have", t->slo_jobs);
    for (size_t i = 0; i < n; i++) {
        const struct sim_metrics *m = &rows[i].m;
        if (!m->gave_up)
            continue;
        snprintf(notes[k++], sizeof notes[0],
                 "%s gave up %llu of %llu jobs after --max-attempts: %s", rows[i].policy->name,
                 (unsigned long long)m->gave_up, (unsigned long long)m->jobs,
                 m->succeeded
                     ? "its makespan, JCT and wait count only the jobs that finished; its "
                       "energy and lost GPU-hours include the given-up jobs' runs but not the "
                       "work they never did, so its makespan and energy may look better than "
                       "the (bound), and it has no span/ex or kWh/ex (-)."
                     : "no job finished, so it has no makespan, JCT, wait, span/ex or kWh/ex (-); "
                       "its energy and lost GPU-hours are those of the given-up jobs' runs, "
                       "without the work they never did (it may be below the (bound)).");
    }
    /* The est-* policies of the run, by name: CARMA's reference policies that take an
     * estimator's answer (auto has its own bound, whatever its requirement source). */
    char names[64]; /* two today: "est-magm, est-lug" */
    size_t nest = 0, o = 0;
    names[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].policy->kind == CARMA_POLICY_REFERENCE &&
            rows[i].policy->req == CARMA_REQ_EST && o < sizeof names)
            o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", nest++ ? ", " : "",
                                  rows[i].policy->name);
    size_t given = nest ? trace_estimates(t, est) : 0;
    if (!nest || given == t->njobs || (given && est != SIM_EST_CARMA))
        return k;
    if (est == SIM_EST_CARMA && given)
        snprintf(notes[k++], sizeof notes[0],
                 "%s: --estimator carma: %zu of %zu jobs have carma's bound in the catalog "
                 "(est_carma_mib); the others ask for the peak an earlier run of the same "
                 "workload reached, else a whole GPU.",
                 names, given, t->njobs);
    else if (est == SIM_EST_CARMA)
        snprintf(notes[k++], sizeof notes[0],
                 "%s: --estimator carma asks for the peak an earlier run of the same "
                 "workload reached, else a whole GPU.",
                 names);
    else
        snprintf(notes[k++], sizeof notes[0],
                 "%s: the trace gives no %s estimates, so every job asks for a whole GPU "
                 "(as CARMA did when its estimator had no answer).",
                 names, est_names[est]);
    return k;
}

struct run_settings {
    const char *trace, *format, *gpus, *sharing, *estimator;
    uint64_t seed;
    double jitter;
    long max_attempts;
};

/* The run's settings in words: those that differ from the defaults (sim_config_default),
 * or all of them. */
static void settings_words(const struct run_settings *rs, int all, char *buf, size_t len)
{
    struct sim_config def;
    sim_config_default(&def);
    size_t o = 0;
    buf[0] = 0;
#define ADD(...) (o += (size_t)snprintf(buf + o, o < len ? len - o : 0, __VA_ARGS__))
    if (all || rs->jitter > 0)
        ADD(", jitter %g (seed %llu)", rs->jitter, (unsigned long long)rs->seed);
    if (all || strcmp(rs->estimator, est_names[def.estimator]) != 0)
        ADD(", estimator %s", rs->estimator);
    if (all || rs->max_attempts != (long)def.max_attempts)
        ADD(", max attempts %ld%s", rs->max_attempts, rs->max_attempts ? "" : " (no limit)");
#undef ADD
}

static void print_table(const struct row *rows, size_t n, const struct sim_trace *t,
                        const struct sim_bounds *b, const struct run_settings *rs,
                        char (*notes)[SIM_NOTE_MAX], size_t nnotes)
{
    char words[256];
    settings_words(rs, 0, words, sizeof words);
    printf("carma sim: %zu job%s on %s, sharing %s%s\n", t->njobs, t->njobs == 1 ? "" : "s",
           rs->gpus, rs->sharing, words);
    if (t->skipped_nogpu || t->skipped_unscheduled)
        printf("(left out: %zu pods without a GPU, %zu never scheduled)\n", t->skipped_nogpu,
               t->skipped_unscheduled);
    printf("\n");
    /* 120 columns, no more */
    printf("%-12s %9s %9s %9s %9s %5s %6s %8s %8s %6s %6s %6s %7s %7s\n", "policy", "makespan",
           "meanJCT", "p99JCT", "meanWait", "OOM", "gaveUp", "lostGPU", "energy", "SMACT", "SMOCC",
           "mem", "span/ex", "kWh/ex");
    printf("%-12s %9s %9s %9s %9s %5s %6s %8s %8s %6s %6s %6s %7s %7s\n", "", "h", "h", "h", "h",
           "", "jobs", "GPU-h", "kWh", "mean", "mean", "mean", "", "");
    const struct sim_metrics *ex = exclusive_of(rows, n);
    for (size_t i = 0; i < n; i++) {
        const struct sim_metrics *m = &rows[i].m;
        char r1[16], r2[16], h[4][16];
        ratio_cells(ex, m->makespan_s, m->energy_j, m->gave_up > 0, r1, r2);
        hours_cell(m, m->makespan_s, h[0]);
        hours_cell(m, m->mean_jct_s, h[1]);
        hours_cell(m, m->p99_jct_s, h[2]);
        hours_cell(m, m->mean_wait_s, h[3]);
        printf("%-12s %9s %9s %9s %9s %5llu %6llu %8.2f %8.2f %6.3f %6.3f %6.3f %7s %7s\n",
               rows[i].policy->name, h[0], h[1], h[2], h[3], (unsigned long long)m->oom_crashes,
               (unsigned long long)m->gave_up, m->lost_gpu_s / 3600, m->energy_j / 3.6e6,
               m->mean_smact, m->mean_smocc, m->mean_mem_used_frac, r1, r2);
    }
    char r1[16], r2[16];
    ratio_cells(ex, b->makespan_s, b->energy_j, 0, r1, r2);
    printf("%-12s %9.2f %9s %9s %9s %5s %6s %8s %8.2f %6s %6s %6s %7s %7s\n", "(bound)",
           b->makespan_s / 3600, "-", "-", "-", "-", "-", "-", b->energy_j / 3.6e6, "-", "-", "-",
           r1, r2);
    printf("\n(bound): no schedule that finishes every job can beat it under the model "
           "(docs/model.md).\n");
    printf("span/ex, kWh/ex: makespan and energy relative to exclusive%s.\n",
           !ex              ? " (add --policy exclusive to see them)"
           : !ex->succeeded ? " (none: exclusive finished no job)"
           : ex->gave_up    ? " (no ratios: exclusive gave jobs up)"
                            : "");
    for (size_t k = 0; k < nnotes; k++)
        printf("%s\n", notes[k]);
}

/* A figure over the finished jobs, or null when none finished. */
static json_t *finished_json(const struct sim_metrics *m, double v)
{
    return m->succeeded ? json_real(v) : json_null();
}

static json_t *metrics_json(const struct sim_metrics *m)
{
    return json_pack(
        "{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:I,s:f}", "makespan_s",
        finished_json(m, m->makespan_s), "mean_jct_s", finished_json(m, m->mean_jct_s), "p50_jct_s",
        finished_json(m, m->p50_jct_s), "p99_jct_s", finished_json(m, m->p99_jct_s), "mean_wait_s",
        finished_json(m, m->mean_wait_s), "p50_wait_s", finished_json(m, m->p50_wait_s),
        "p99_wait_s", finished_json(m, m->p99_wait_s), "oom_crashes", (json_int_t)m->oom_crashes,
        "lost_gpu_s", m->lost_gpu_s, "energy_j", m->energy_j, "mean_smact", m->mean_smact,
        "mean_smocc", m->mean_smocc, "mean_mem_used_frac", m->mean_mem_used_frac, "jobs",
        (json_int_t)m->jobs, "succeeded", (json_int_t)m->succeeded, "gave_up",
        (json_int_t)m->gave_up, "busy_gpu_s", m->busy_gpu_s);
}

/* A JSON string of text from the user (a path may hold any bytes): invalid UTF-8 becomes
 * U+FFFD, as in the HTML report. */
static json_t *json_text(const char *s)
{
    char *t = carma_utf8_lossy(s);
    json_t *j = t ? json_string(t) : NULL;
    free(t);
    return j;
}

static int print_json(const struct row *rows, size_t n, const struct sim_bounds *b,
                      const struct sim_trace *t, const struct run_settings *rs, int est,
                      char (*notes)[SIM_NOTE_MAX], size_t nnotes)
{
    json_t *jn = json_array();
    for (size_t k = 0; k < nnotes; k++)
        json_array_append_new(jn, json_string(notes[k]));
    json_t *pol = json_object();
    for (size_t i = 0; i < n; i++)
        json_object_set_new(pol, rows[i].policy->name, metrics_json(&rows[i].m));
    json_t *bounds = json_pack("{s:f,s:f,s:f}", "makespan_s", b->makespan_s, "busy_gpu_s",
                               b->busy_gpu_s, "energy_j", b->energy_j);
    json_t *left_out = json_pack("{s:I,s:I}", "pods_without_gpu", (json_int_t)t->skipped_nogpu,
                                 "pods_never_scheduled", (json_int_t)t->skipped_unscheduled);
    json_t *root = json_pack("{s:o,s:s,s:s,s:s,s:s,s:b,s:I,s:f,s:I,s:I,s:o,s:o,s:o,s:o}",
                             "trace", json_text(rs->trace), "trace_format", rs->format, "gpus",
                             rs->gpus, "sharing", rs->sharing, "estimator", rs->estimator,
                             "trace_has_estimates", trace_estimates(t, est) > 0, "seed",
                             (json_int_t)rs->seed, "jitter", rs->jitter, "max_attempts",
                             (json_int_t)rs->max_attempts, "jobs", (json_int_t)t->njobs,
                             "left_out", left_out, "policies", pol, "bounds", bounds, "notes",
                             jn);
    if (!root)
        return -1;
    char *s = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (!s)
        return -1;
    puts(s);
    free(s);
    return 0;
}

static int write_report(const char *path, const struct row *rows, size_t n,
                        const struct sim_bounds *b, const struct sim_config *cfg,
                        const struct run_settings *rs, char (*notes)[SIM_NOTE_MAX], size_t nnotes)
{
    enum { COLS = 15 };
    static const char *const header[COLS] = {
        "policy",     "makespan h",  "mean JCT h",    "p99 JCT h",  "mean wait h",
        "p99 wait h", "OOM crashes", "jobs given up", "lost GPU-h", "energy kWh",
        "mean SMACT", "mean SMOCC",  "mean memory",   "span/ex",    "kWh/ex"};
    const struct sim_metrics *ex = exclusive_of(rows, n);
    /* one row per policy, then the (bound) row */
    char(*cells)[32] = calloc((n + 1) * COLS, sizeof *cells);
    const char **cellp = calloc((n + 1) * COLS, sizeof *cellp);
    /* the runs recorded only the GPUs the page draws (cfg.record_gpus) */
    size_t shown = carma_report_gpus_drawn(n, cfg->ngpus);
    struct carma_report_section *sec = calloc(n, sizeof *sec);
    struct carma_report_series *series = calloc(n * shown, sizeof *series);
    char(*labels)[48] = calloc(shown, sizeof *labels);
    int rc = -1;
    if (!cells || !cellp || !sec || !series || !labels)
        goto out;
    for (size_t i = 0; i < n; i++) {
        const struct sim_metrics *m = &rows[i].m;
        char(*c)[32] = &cells[i * COLS];
        snprintf(c[0], 32, "%s", rows[i].policy->name);
        hours_cell(m, m->makespan_s, c[1]);
        hours_cell(m, m->mean_jct_s, c[2]);
        hours_cell(m, m->p99_jct_s, c[3]);
        hours_cell(m, m->mean_wait_s, c[4]);
        hours_cell(m, m->p99_wait_s, c[5]);
        snprintf(c[6], 32, "%llu", (unsigned long long)m->oom_crashes);
        snprintf(c[7], 32, "%llu", (unsigned long long)m->gave_up);
        snprintf(c[8], 32, "%.2f", m->lost_gpu_s / 3600);
        snprintf(c[9], 32, "%.2f", m->energy_j / 3.6e6);
        snprintf(c[10], 32, "%.3f", m->mean_smact);
        snprintf(c[11], 32, "%.3f", m->mean_smocc);
        snprintf(c[12], 32, "%.3f", m->mean_mem_used_frac);
        ratio_cells(ex, m->makespan_s, m->energy_j, m->gave_up > 0, c[13], c[14]);
        for (size_t k = 0; k < COLS; k++)
            cellp[i * COLS + k] = c[k];
    }
    for (size_t c = 0; c < COLS; c++) {
        snprintf(cells[n * COLS + c], 32, "-");
        cellp[n * COLS + c] = cells[n * COLS + c];
    }
    snprintf(cells[n * COLS + 0], 32, "(bound)");
    snprintf(cells[n * COLS + 1], 32, "%.2f", b->makespan_s / 3600);
    snprintf(cells[n * COLS + 9], 32, "%.2f", b->energy_j / 3.6e6);
    ratio_cells(ex, b->makespan_s, b->energy_j, 0, cells[n * COLS + 13], cells[n * COLS + 14]);
    for (size_t g = 0; g < shown; g++)
        snprintf(labels[g], sizeof labels[g], "GPU %zu %s", g, cfg->kinds[g]->name);
    for (size_t i = 0; i < n; i++) {
        const struct sim_timeline *tl = &rows[i].tl;
        size_t ns = tl->ngpus < shown ? tl->ngpus : shown;
        for (size_t g = 0; g < ns; g++) {
            struct carma_report_series *se = &series[i * shown + g];
            se->label = labels[g];
            se->mem_total_mib = cfg->kinds[g]->mem_mib;
            se->power_max_w = cfg->kinds[g]->max_w;
            se->n = tl->gpu[g].n;
            se->t_s = tl->gpu[g].t;
            se->mem_mib = tl->gpu[g].mem;
            se->smact = tl->gpu[g].smact;
            se->power_w = tl->gpu[g].power;
        }
        sec[i] = (struct carma_report_section){
            .title = rows[i].policy->name,
            .t_end_s = tl->t_end,
            .ngpus = cfg->ngpus,
            .gpus = &series[i * shown],
            .nseries = ns,
            .nbars = tl->nbars,
            .bars = tl->bars,
            .nruns_elsewhere = tl->nruns_other,
            .nruns_late = tl->nruns_late,
            .bars_until_s = tl->bars_until,
            .series_step_s = tl->series_step,
        };
    }
    /* The table's notes, after what (bound) and the ratios mean. */
    char note[SIM_MAX_NOTES * SIM_NOTE_MAX + 256];
    size_t o = (size_t)snprintf(note, sizeof note,
                                "(bound): no schedule that finishes every job can beat it "
                                "under the model. span/ex, kWh/ex: makespan and energy "
                                "relative to exclusive%s.",
                                !ex              ? " (run exclusive too to see them)"
                                : !ex->succeeded ? " (none: exclusive finished no job)"
                                : ex->gave_up    ? " (no ratios: exclusive gave jobs up)"
                                                 : "");
    for (size_t k = 0; k < nnotes && o < sizeof note; k++)
        o += (size_t)snprintf(note + o, sizeof note - o, " %s", notes[k]);
    struct carma_report_table table = {COLS, n + 1, header, cellp, note};
    char words[256], subtitle[1024];
    settings_words(rs, 1, words, sizeof words);
    snprintf(subtitle, sizeof subtitle, "trace %s (%s) on %s, sharing %s%s", rs->trace,
             rs->format, rs->gpus, rs->sharing, words);
    struct cli_outfile of;
    int orc = cli_outfile_open(&of, path);
    if (orc) {
        fprintf(stderr, "carma sim: --report %s: %s\n", path, strerror(-orc));
        goto out;
    }
    struct carma_err err = {{0}};
    int wrc = carma_report_write_html(of.f, "carma simulation", subtitle, &table, sec, n, &err);
    if (cli_outfile_close(&of, wrc != 0, err.msg, sizeof err.msg)) {
        fprintf(stderr, "carma sim: --report %s: %s\n", path, err.msg);
        goto out;
    }
    rc = 0;
out:
    free(cells);
    free(cellp);
    free(sec);
    free(series);
    free(labels);
    return rc;
}

/* Whether --report can be written, checked before a run that may take minutes: a
 * folder, a missing or unwritable folder and an unwritable file are refused. */
static int report_path_check(const char *path)
{
    struct stat st;
    const char *why = NULL;
    if (!path[0])
        why = "an empty path";
    else if (stat(path, &st) == 0)
        why = S_ISDIR(st.st_mode)       ? "a folder"
              : access(path, W_OK) != 0 ? strerror(errno)
                                        : NULL;
    else if (errno != ENOENT)
        why = strerror(errno);
    else {
        char dir[4096];
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        if (!dir[0])
            strcpy(dir, "/");
        if (access(dir, W_OK | X_OK) != 0)
            why = strerror(errno);
    }
    if (why)
        fprintf(stderr, "carma sim: --report %s: %s\n", path, why);
    return why != NULL;
}

/* Whether `path` is the file st names (same device and inode). */
static int same_file(const struct stat *st, const char *path)
{
    struct stat o;
    return stat(path, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

/* Refuses a --report that is one of the run's inputs, compared by device and inode so
 * that a link or another spelling is caught: writing it would replace the input. The
 * trace (NULL: standard input), the catalog read (NULL: none or standard input) and,
 * for a CARMA .sh trace, the .rad file of each task (as sh_task finds them: in rad_dir,
 * else the trace's folder). Called once they are read, before any run. */
static int report_input_check(const char *report, const char *trace, const char *catalog,
                              const struct sim_trace *t, enum sim_trace_format fmt,
                              const char *trace_name, const char *rad_dir)
{
    struct stat st;
    if (stat(report, &st) != 0)
        return 0; /* not there yet: no input */
    const char *what = NULL;
    char path[4096 + SIM_NAME_MAX + 8];
    if (trace && same_file(&st, trace))
        what = "the trace";
    else if (catalog && same_file(&st, catalog))
        what = "the workload catalog";
    for (size_t i = 0; !what && fmt == SIM_TRACE_CARMA_SH && i < t->nworkloads; i++) {
        const char *slash = strrchr(trace_name, '/');
        if (rad_dir)
            snprintf(path, sizeof path, "%s/%s.rad", rad_dir, t->workloads[i].name);
        else
            snprintf(path, sizeof path, "%.*s/%s.rad", slash ? (int)(slash - trace_name) : 1,
                     slash ? trace_name : ".", t->workloads[i].name);
        if (same_file(&st, path))
            what = "a task file of the trace";
    }
    if (what)
        fprintf(stderr, "carma sim: --report %s: is %s it reads; give another path\n", report,
                what);
    return what != NULL;
}

int cmd_sim(int argc, char **argv)
{
    const char *trace_path = NULL, *catalog_path = NULL, *gpus = "4xa100-40gb";
    const char *sharing_s = "mps", *policy_list = "all", *report = NULL, *fmt_s = NULL;
    const char *rad_dir = NULL;
    struct sim_config def;
    sim_config_default(&def);
    const char *est_s = est_names[def.estimator];
    int json = 0;
    long max_attempts = (long)def.max_attempts;
    double jitter = 0;
    uint64_t seed = 1;
    static const struct option opts[] = {
        {"trace", required_argument, NULL, 't'},   {"workloads", required_argument, NULL, 'w'},
        {"gpus", required_argument, NULL, 'g'},    {"sharing", required_argument, NULL, 's'},
        {"policy", required_argument, NULL, 'p'},  {"estimator", required_argument, NULL, 'e'},
        {"json", no_argument, NULL, 'j'},          {"report", required_argument, NULL, 'r'},
        {"seed", required_argument, NULL, 'S'},    {"jitter", required_argument, NULL, 'J'},
        {"trace-format", required_argument, NULL, 'f'},
        {"max-attempts", required_argument, NULL, 'm'},
        {"rad-dir", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': trace_path = optarg; break;
        case 'w': catalog_path = optarg; break;
        case 'g': gpus = optarg; break;
        case 's': sharing_s = optarg; break;
        case 'p': policy_list = optarg; break;
        case 'e': est_s = optarg; break;
        case 'j': json = 1; break;
        case 'r': report = optarg; break;
        case 'f': fmt_s = optarg; break;
        case 'R': rad_dir = optarg; break;
        case 'S': /* digits only: no sign, blank or empty value */
            if (carma_parse_u64(optarg, &seed) || seed > INT64_MAX) {
                fprintf(stderr, "carma sim: --seed: expected an integer in [0, 2^63 - 1], "
                                "got '%s'\n", optarg);
                return 2;
            }
            break;
        case 'J':
            if (carma_parse_double(optarg, &jitter) || jitter < 0 || jitter > 2) {
                fprintf(stderr, "carma sim: --jitter: expected a number in [0, 2], got '%s'\n",
                        optarg);
                return 2;
            }
            jitter += 0.0; /* -0 is 0: not "-0" in the JSON and the report */
            break;
        case 'm': { /* digits only: an empty value is not 0, "no limit" */
            uint64_t v;
            if (carma_parse_u64(optarg, &v) || v > 1000) {
                fprintf(stderr, "carma sim: --max-attempts: expected 0..1000, got '%s'\n",
                        optarg);
                return 2;
            }
            max_attempts = (long)v;
            break;
        }
        case 'h': sim_usage(stdout); return 0;
        default: sim_usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "carma sim: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!trace_path) {
        fprintf(stderr, "carma sim: --trace FILE is required\n");
        sim_usage(stderr);
        return 2;
    }
    /* '-' is standard input, named <stdin> in messages; it can be read once. */
    int trace_stdin = strcmp(trace_path, "-") == 0;
    int catalog_stdin = catalog_path && strcmp(catalog_path, "-") == 0;
    if (trace_stdin && catalog_stdin) {
        fprintf(stderr, "carma sim: --trace - and --workloads -: standard input can only be "
                        "read once; give one of them as a file\n");
        return 2;
    }
    const char *trace_name = trace_stdin ? "<stdin>" : trace_path;
    if (report && report_path_check(report))
        return 2;
    int sharing = carma_sharing_parse(sharing_s);
    if (sharing < 0) {
        fprintf(stderr, "carma sim: --sharing: unknown mode '%s' (mps or timeslice)\n",
                sharing_s);
        return 2;
    }
    int est = -1;
    for (int i = 0; i < SIM_EST_COUNT; i++)
        if (strcmp(est_names[i], est_s) == 0)
            est = i;
    if (est < 0) {
        fprintf(stderr, "carma sim: --estimator: unknown estimator '%s' "
                        "(horus, faketensor, gpumemnet, carma)\n", est_s);
        return 2;
    }
    enum sim_trace_format fmt = SIM_TRACE_AUTO;
    if (fmt_s) {
        int f = sim_trace_format_parse(fmt_s);
        if (f < 0) {
            fprintf(stderr, "carma sim: --trace-format: unknown format '%s' "
                            "(carma-csv, carma-sh, muri, gavel, alibaba)\n", fmt_s);
            return 2;
        }
        fmt = (enum sim_trace_format)f;
    }
    const struct carma_policy *policies[SIM_MAX_POLICIES];
    size_t npol;
    if (parse_policies(policy_list, policies, &npol))
        return 2;
    const struct sim_gpu_kind **kinds = calloc(SIM_MAX_GPUS, sizeof *kinds);
    uint16_t *islands = calloc(SIM_MAX_GPUS, sizeof *islands);
    if (!kinds || !islands) {
        free(kinds);
        free(islands);
        return 1;
    }
    size_t ngpus;
    struct carma_err err = {{0}};
    int status = 2;
    struct sim_workload *catalog = NULL;
    size_t ncatalog = 0;
    struct sim_trace trace = {0};
    struct row *rows = NULL;
    if (sim_gpu_spec_parse(gpus, kinds, islands, SIM_MAX_GPUS, &ngpus, &err)) {
        fprintf(stderr, "carma sim: %s\n", err.msg);
        goto out;
    }
    char *tbuf = NULL;
    size_t tlen;
    if (trace_stdin ? carma_stream_read(stdin, trace_name, SIM_TRACE_MAX_BYTES, &tbuf, &tlen, &err)
                    : carma_file_read(trace_path, SIM_TRACE_MAX_BYTES, &tbuf, &tlen, &err)) {
        fprintf(stderr, "carma sim: --trace %s\n", err.msg);
        goto out;
    }
    if (fmt == SIM_TRACE_AUTO)
        fmt = sim_trace_detect(trace_name, tbuf, tlen);
    if (rad_dir && fmt != SIM_TRACE_CARMA_SH) {
        if (fmt == SIM_TRACE_AUTO)
            fprintf(stderr, "carma sim: --rad-dir: only a CARMA .sh trace reads .rad files, and "
                            "the format of %s is not known (--trace-format carma-sh?)\n",
                    trace_name);
        else
            fprintf(stderr, "carma sim: --rad-dir: only a CARMA .sh trace reads .rad files; %s "
                            "is a %s trace\n",
                    trace_name, sim_trace_format_name(fmt));
        free(tbuf);
        goto out;
    }
    if (rad_dir) {
        struct stat st;
        const char *why = !rad_dir[0]                  ? "an empty path"
                          : stat(rad_dir, &st) != 0    ? strerror(errno)
                          : !S_ISDIR(st.st_mode)       ? "not a folder"
                                                       : NULL;
        if (why) {
            fprintf(stderr, "carma sim: --rad-dir %s: %s\n", rad_dir, why);
            free(tbuf);
            goto out;
        }
    }
    /* Only carma's own formats name workloads of a catalog; the others carry or map
     * their own. */
    int uses_catalog = fmt == SIM_TRACE_CARMA_CSV || fmt == SIM_TRACE_CARMA_SH;
    char catbuf[4096];
    if (catalog_path && !uses_catalog && fmt != SIM_TRACE_AUTO)
        fprintf(stderr, "carma sim: note: --workloads is not used: a trace in the %s format "
                        "names no catalog workloads\n", sim_trace_format_name(fmt));
    else if (!catalog_path && uses_catalog)
        catalog_path = default_catalog(trace_stdin ? NULL : trace_path, catbuf, sizeof catbuf);
    if (catalog_path && uses_catalog) {
        char *buf;
        size_t len;
        if (catalog_stdin ? carma_stream_read(stdin, "<stdin>", 16u << 20, &buf, &len, &err)
                          : carma_file_read(catalog_path, 16u << 20, &buf, &len, &err)) {
            fprintf(stderr, "carma sim: --workloads %s\n", err.msg);
            free(tbuf);
            goto out;
        }
        int rc = sim_catalog_parse(catalog_stdin ? "<stdin>" : catalog_path, buf, len, &catalog,
                                   &ncatalog, &err);
        free(buf);
        if (rc) {
            fprintf(stderr, "carma sim: %s\n", err.msg);
            free(tbuf);
            goto out;
        }
    }
    double min_mem = 0;
    for (size_t i = 0; i < ngpus; i++)
        if (min_mem == 0 || kinds[i]->mem_mib < min_mem)
            min_mem = kinds[i]->mem_mib;
    /* Alibaba's fractions are of the run's smallest GPU, so every pod fits every GPU. */
    struct sim_trace_opts topts = {catalog, ncatalog, rad_dir, min_mem};
    int trc = sim_trace_parse(trace_name, tbuf, tlen, fmt, &topts, &trace, &err);
    free(tbuf);
    if (trc) {
        fprintf(stderr, "carma sim: %s\n", err.msg);
        goto out;
    }
    if (trace.njobs == 0) {
        fprintf(stderr, "carma sim: %s: no jobs in the trace", trace_name);
        if (trace.skipped_nogpu || trace.skipped_unscheduled)
            fprintf(stderr, " (left out: %zu pods without a GPU, %zu never scheduled)",
                    trace.skipped_nogpu, trace.skipped_unscheduled);
        fputc('\n', stderr);
        goto out;
    }
    if (report && report_input_check(report, trace_stdin ? NULL : trace_path,
                                     uses_catalog && !catalog_stdin ? catalog_path : NULL, &trace,
                                     fmt, trace_name, rad_dir))
        goto out;
    if (sim_trace_check(&trace, &(struct sim_config){.kinds = kinds, .ngpus = ngpus},
                        trace_name, &err)) {
        fprintf(stderr, "carma sim: %s (--gpus %s)\n", err.msg, gpus);
        goto out;
    }
    if (jitter > 0 && sim_trace_jitter(&trace, jitter, seed, trace_name, &err)) {
        fprintf(stderr, "carma sim: %s (--jitter %g --seed %llu)\n", err.msg, jitter,
                (unsigned long long)seed);
        goto out;
    }
    rows = calloc(npol, sizeof *rows);
    if (!rows) {
        status = 1;
        goto out;
    }
    cli_fatal_signals_catch(bar_erase_on_signal);
    int tty = isatty(STDERR_FILENO);
    struct progress_ctx pctx = {.on = tty, .start_s = carma_mono_s(), .npol = npol};
    for (size_t i = 0; i < npol; i++) {
        struct sim_config cfg;
        sim_config_default(&cfg);
        cfg.kinds = kinds;
        cfg.islands = islands;
        cfg.ngpus = ngpus;
        cfg.sharing = (enum carma_sharing)sharing;
        cfg.policy = policies[i];
        cfg.estimator = (enum sim_est)est;
        cfg.max_attempts = (uint32_t)max_attempts;
        cfg.record = report != NULL;
        cfg.record_gpus = carma_report_gpus_drawn(npol, ngpus);
        cfg.progress = on_progress;
        cfg.progress_ctx = &pctx;
        pctx.ipol = i;
        pctx.policy = policies[i]->name;
        on_progress(&pctx, 0, trace.njobs);
        rows[i].policy = policies[i];
        double t0 = carma_mono_s();
        int rc = sim_run(&trace, &cfg, &rows[i].m, report ? &rows[i].tl : NULL, &err);
        rows[i].wall_s = carma_mono_s() - t0;
        if (rc) {
            progress_erase(&pctx);
            fprintf(stderr, "carma sim: %s: policy %s: %s\n", trace_name, policies[i]->name,
                    err.msg);
            status = rc == -ENOMEM ? 1 : 2;
            goto out;
        }
    }
    progress_erase(&pctx);
    struct sim_bounds bounds;
    sim_bounds_compute(&trace,
                       &(struct sim_config){.kinds = kinds,
                                            .ngpus = ngpus,
                                            .sharing = (enum carma_sharing)sharing},
                       &bounds);
    struct run_settings rs = {trace_path, sim_trace_format_name(fmt), gpus, sharing_s,
                              est_names[est], seed, jitter, max_attempts};
    char notes[SIM_MAX_NOTES][SIM_NOTE_MAX];
    size_t nnotes = collect_notes(rows, npol, &trace, est, notes);
    if (json) {
        if (print_json(rows, npol, &bounds, &trace, &rs, est, notes, nnotes)) {
            fprintf(stderr, "carma sim: out of memory writing the JSON\n");
            status = 1;
            goto out;
        }
    } else {
        print_table(rows, npol, &trace, &bounds, &rs, notes, nnotes);
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "carma sim: writing standard output: %s\n", strerror(errno));
        status = 1;
        goto out;
    }
    /* After the figures: a report that cannot be written (checked at the start, but a
     * disk can fill) does not lose them. */
    if (report && write_report(report, rows, npol, &bounds,
                               &(struct sim_config){.kinds = kinds, .ngpus = ngpus}, &rs, notes,
                               nnotes)) {
        status = 1;
        goto out;
    }
    if (tty) { /* the speed, on a terminal only: the figures stay the same run to run */
        double wall = 0;
        for (size_t i = 0; i < npol; i++)
            wall += rows[i].wall_s;
        fprintf(stderr, "carma sim: %zu policies x %zu jobs simulated in %.3f s (%.0f jobs/s)\n",
                npol, trace.njobs, wall, wall > 0 ? (double)npol * (double)trace.njobs / wall : 0);
    }
    status = 0;
out:
    if (rows)
        for (size_t i = 0; i < npol; i++)
            sim_timeline_free(&rows[i].tl);
    free(rows);
    sim_trace_free(&trace);
    free(catalog);
    free(kinds);
    free(islands);
    return status;
}
