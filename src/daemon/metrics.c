#include "daemon/metrics.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/job.h"

const double carma_hist_bounds[CARMA_HIST_NB] = {1e-6,   2.5e-6, 5e-6,   1e-5,   2.5e-5, 5e-5,
                                                 1e-4,   2.5e-4, 5e-4,   1e-3,   2.5e-3, 1e-2};

void carma_hist_add(struct carma_hist *h, double s)
{
    if (!(s >= 0))
        s = 0;
    int k;
    for (k = 0; k < CARMA_HIST_NB && s > carma_hist_bounds[k]; k++)
        ;
    if (k < CARMA_HIST_NB)
        h->le[k]++;
    else
        h->inf++;
    h->count++;
    h->sum += s;
}

struct buf {
    char *p;
    size_t len, cap;
    int oom;
};

static void bputf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bputf(struct buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < b->cap - b->len) {
            b->len += (size_t)n;
            return;
        }
        size_t nc = b->cap * 2 + (size_t)n;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
}

/* A label value escaped as the exposition format wants (\\, \", \n). */
static void bput_label(struct buf *b, const char *k, const char *v, int first)
{
    bputf(b, "%s%s=\"", first ? "" : ",", k);
    for (const char *c = v ? v : ""; *c; c++) {
        if (*c == '\\')
            bputf(b, "\\\\");
        else if (*c == '"')
            bputf(b, "\\\"");
        else if (*c == '\n')
            bputf(b, "\\n");
        else
            bputf(b, "%c", *c);
    }
    bputf(b, "\"");
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
    bputf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gpu_labels(struct buf *b, const struct carma_metrics_gpu *g)
{
    char idx[16];
    snprintf(idx, sizeof idx, "%u", g->index);
    bputf(b, "{");
    bput_label(b, "gpu", idx, 1);
    bput_label(b, "UUID", g->uuid, 0);
    bput_label(b, "modelName", g->name, 0);
    bputf(b, "}");
}

static void val(struct buf *b, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        bputf(b, " %.0f\n", v);
    else
        bputf(b, " %.9g\n", v);
}

/* One gauge per GPU from a field; GPUs where the value is absent (< 0; UINT64_MAX for a
 * u64 field) are skipped. */
static void gpu_gauge(struct buf *b, const struct carma_metrics *m, const char *name,
                      const char *type, const char *help, size_t off, int is_u64)
{
    int any = 0;
    for (size_t i = 0; i < m->ngpus; i++) {
        const char *base = (const char *)&m->gpus[i];
        uint64_t u = is_u64 ? *(const uint64_t *)(base + off) : 0;
        double v = is_u64 ? (double)u : *(const double *)(base + off);
        if (is_u64 ? u == UINT64_MAX : v < 0)
            continue;
        if (!any)
            head(b, name, type, help);
        any = 1;
        bputf(b, "%s", name);
        gpu_labels(b, &m->gpus[i]);
        val(b, v);
    }
}

#define GOFF(f) offsetof(struct carma_metrics_gpu, f)

int carma_metrics_render(const struct carma_metrics *m, char **out, size_t *len)
{
    struct buf b = {.cap = 8192};
    if (!(b.p = malloc(b.cap)))
        return -ENOMEM;
    b.p[0] = 0;
    if (m->version) {
        head(&b, "carma_build_info", "gauge", "carmad's version, as its label; always 1.");
        bputf(&b, "carma_build_info{");
        bput_label(&b, "version", m->version, 1);
        bputf(&b, "}");
        val(&b, 1);
    }
    gpu_gauge(&b, m, "carma_gpu_memory_total_bytes", "gauge", "GPU memory size in bytes.",
              GOFF(mem_total_bytes), 1);
    gpu_gauge(&b, m, "carma_gpu_memory_used_bytes", "gauge",
              "GPU memory in use (every process) in bytes.", GOFF(mem_used_bytes), 1);
    gpu_gauge(&b, m, "carma_gpu_memory_free_bytes", "gauge", "GPU memory free in bytes.",
              GOFF(mem_free_bytes), 1);
    gpu_gauge(&b, m, "carma_gpu_utilization_ratio", "gauge",
              "NVML utilisation: share of time a kernel was running (0-1).", GOFF(util), 0);
    gpu_gauge(&b, m, "carma_gpu_sm_active_ratio", "gauge",
              "SM activity, DCGM field 1002 (SMACT, 0-1).", GOFF(smact), 0);
    gpu_gauge(&b, m, "carma_gpu_sm_occupancy_ratio", "gauge",
              "SM occupancy, DCGM field 1003 (SMOCC, 0-1).", GOFF(smocc), 0);
    gpu_gauge(&b, m, "carma_gpu_dram_active_ratio", "gauge",
              "DRAM activity, DCGM field 1005 (DRAMA, 0-1).", GOFF(drama), 0);
    gpu_gauge(&b, m, "carma_gpu_tensor_active_ratio", "gauge",
              "Tensor pipe activity, DCGM field 1004 (0-1).", GOFF(tensor), 0);
    gpu_gauge(&b, m, "carma_gpu_sm_active_risk_ratio", "gauge",
              "CARMA's risk aggregate of SM activity over the monitor window (0-1).",
              GOFF(smact_risk), 0);
    gpu_gauge(&b, m, "carma_gpu_power_watts", "gauge", "GPU power draw in watts.",
              GOFF(power_w), 0);
    gpu_gauge(&b, m, "carma_gpu_energy_joules_total", "counter",
              "GPU energy since carmad started, in joules.", GOFF(energy_j), 0);
    if (m->ngpus) {
        head(&b, "carma_gpu_drained", "gauge",
             "1 when the GPU takes no new jobs (lost, not "
             "answering, an Xid that needs a reset).");
        for (size_t i = 0; i < m->ngpus; i++) {
            bputf(&b, "carma_gpu_drained");
            gpu_labels(&b, &m->gpus[i]);
            val(&b, m->gpus[i].drained ? 1 : 0);
        }
        head(&b, "carma_gpu_xid_errors_total", "counter",
             "Critical Xid errors the driver reported since carmad started.");
        for (size_t i = 0; i < m->ngpus; i++) {
            bputf(&b, "carma_gpu_xid_errors_total");
            gpu_labels(&b, &m->gpus[i]);
            val(&b, (double)m->gpus[i].xids);
        }
        head(&b, "carma_gpu_jobs", "gauge", "carma jobs resident on the GPU.");
        for (size_t i = 0; i < m->ngpus; i++) {
            bputf(&b, "carma_gpu_jobs");
            gpu_labels(&b, &m->gpus[i]);
            val(&b, m->gpus[i].jobs);
        }
        head(&b, "carma_gpu_foreign_processes", "gauge",
             "Processes on the GPU that carma did not start.");
        for (size_t i = 0; i < m->ngpus; i++) {
            bputf(&b, "carma_gpu_foreign_processes");
            gpu_labels(&b, &m->gpus[i]);
            val(&b, m->gpus[i].foreign);
        }
    }
    head(&b, "carma_jobs", "gauge", "Jobs queued or running now.");
    bputf(&b, "carma_jobs{state=\"queued\"} %llu\n", (unsigned long long)m->queued);
    bputf(&b, "carma_jobs{state=\"running\"} %llu\n", (unsigned long long)m->running);
    head(&b, "carma_jobs_finished_total", "counter", "Jobs that reached a final state since "
                                                     "carmad started, by state.");
    for (int s = CARMA_JOB_SUCCEEDED; s < CARMA_JOB_STATE_COUNT && s < 8; s++)
        bputf(&b, "carma_jobs_finished_total{state=\"%s\"} %llu\n",
              carma_job_state_name((enum carma_job_state)s), (unsigned long long)m->finished[s]);
    head(&b, "carma_oom_crashes_total", "counter", "Attempts that ended in GPU out-of-memory.");
    bputf(&b, "carma_oom_crashes_total %llu\n", (unsigned long long)m->oom_total);
    head(&b, "carma_gpu_error_attempts_total", "counter",
         "Attempts that failed on a GPU whose driver reported a fault (critical Xid).");
    bputf(&b, "carma_gpu_error_attempts_total %llu\n", (unsigned long long)m->gpu_error_total);
    head(&b, "carma_placements_total", "counter", "Placements the scheduler made.");
    bputf(&b, "carma_placements_total %llu\n", (unsigned long long)m->placements_total);
    head(&b, "carma_attempts_total", "counter", "Attempts that ended, any outcome.");
    bputf(&b, "carma_attempts_total %llu\n", (unsigned long long)m->attempts_total);
    if (m->decision) {
        const struct carma_hist *h = m->decision;
        head(&b, "carma_decision_latency_seconds", "histogram",
             "Time of one scheduler step (placement decision), in seconds.");
        uint64_t cum = 0;
        for (int k = 0; k < CARMA_HIST_NB; k++) {
            cum += h->le[k];
            bputf(&b, "carma_decision_latency_seconds_bucket{le=\"%g\"} %llu\n",
                  carma_hist_bounds[k], (unsigned long long)cum);
        }
        bputf(&b, "carma_decision_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
              (unsigned long long)h->count);
        bputf(&b, "carma_decision_latency_seconds_sum %.9g\n", h->sum);
        bputf(&b, "carma_decision_latency_seconds_count %llu\n", (unsigned long long)h->count);
    }
    head(&b, "carma_monitor_ticks_total", "counter", "Monitor ticks (one sample of every GPU).");
    bputf(&b, "carma_monitor_ticks_total %llu\n", (unsigned long long)m->monitor_ticks);
    head(&b, "carma_monitor_seconds_total", "counter", "Wall time spent in monitor ticks.");
    bputf(&b, "carma_monitor_seconds_total %.9g\n", m->monitor_seconds);
    head(&b, "carma_estimates_waiting", "gauge",
         "Submissions waiting for their model summary's estimate.");
    bputf(&b, "carma_estimates_waiting %llu\n", (unsigned long long)m->estimates_waiting);
    head(&b, "carma_estimates_total", "counter", "Submitted model summaries estimated.");
    bputf(&b, "carma_estimates_total %llu\n", (unsigned long long)m->estimates_total);
    head(&b, "carma_estimate_seconds_total", "counter",
         "Time spent estimating submitted model summaries.");
    bputf(&b, "carma_estimate_seconds_total %.9g\n", m->estimate_seconds);
    if (m->coloc) {
        static const enum carma_sharing modes[] = {CARMA_SHARING_TIMESLICE, CARMA_SHARING_MPS};
        head(&b, "carma_coloc_observations_total", "counter",
             "Co-runs observed for a window since carmad started, which correct the "
             "co-location model.");
        for (size_t g = 0; g < m->nkinds; g++)
            for (size_t i = 0; i < 2; i++) {
                bputf(&b, "carma_coloc_observations_total{");
                bput_label(&b, "kind", m->kinds[g], 1);
                bputf(&b, ",sharing=\"%s\"} %llu\n", carma_sharing_name(modes[i]),
                      (unsigned long long)m->coloc[g].observed[modes[i]]);
            }
        head(&b, "carma_coloc_factor", "gauge",
             "The learnt factor on the co-location model's rate of jobs whose solo SMACT sum "
             "to smact_sum on GPUs of the kind (knots that hold an observation).");
        for (size_t g = 0; g < m->nkinds; g++)
            for (size_t i = 0; i < 2; i++)
                for (unsigned k = 0; k < CARMA_COLOC_KNOTS; k++)
                    if (m->coloc[g].weight[modes[i]][k] > 0) {
                        bputf(&b, "carma_coloc_factor{");
                        bput_label(&b, "kind", m->kinds[g], 1);
                        bputf(&b, ",sharing=\"%s\",smact_sum=\"%.2f\"} %.4f\n",
                              carma_sharing_name(modes[i]), (double)k * CARMA_COLOC_KNOT_STEP,
                              (double)carma_coloc_factor(&m->coloc[g], modes[i],
                                                         (float)k * CARMA_COLOC_KNOT_STEP));
                    }
    }
    if (m->users) {
        head(&b, "carma_user_fair_gpu_seconds", "gauge",
             "GPU-seconds of the user's jobs, each halved every fair_halflife since it was "
             "spent: the queue serves the least first (order = fair).");
        for (size_t i = 0; i < m->nusers; i++) {
            bputf(&b, "carma_user_fair_gpu_seconds{");
            bput_label(&b, "user", m->users[i].user, 1);
            bputf(&b, ",uid=\"%u\"}", (unsigned)m->users[i].uid);
            val(&b, m->users[i].gpu_s);
        }
    }
    static const char *const jm[][3] = {
        {"carma_job_memory_used_bytes", "gauge",
         "GPU memory the job's processes hold now on "
         "the fullest of its GPUs (its GPUs: /v1/jobs), "
         "in bytes."},
        {"carma_job_energy_joules_total", "counter",
         "GPU energy attributed to the job over all its GPUs (each GPU's energy shared by "
         "activity), joules."},
        {"carma_job_gpu_seconds_total", "counter", "GPU-seconds the job held, all attempts."},
    };
    for (int w = 0; w < 3; w++) {
        int any = 0;
        for (size_t i = 0; i < m->njobs; i++) {
            const struct carma_metrics_job *j = &m->jobs[i];
            if (w == 0 && (strcmp(j->state, "running") != 0 || j->mem_bytes == UINT64_MAX))
                continue;
            if (!any)
                head(&b, jm[w][0], jm[w][1], jm[w][2]);
            any = 1;
            /* Job-level series: a job may span GPUs (/v1/jobs lists them), and a
             * counter keeps its identity from queued to running and across attempts. */
            char id[32];
            snprintf(id, sizeof id, "%llu", (unsigned long long)j->id);
            bputf(&b, "%s{", jm[w][0]);
            bput_label(&b, "job", id, 1);
            bput_label(&b, "user", j->user, 0);
            bputf(&b, "}");
            val(&b, w == 0 ? (double)j->mem_bytes : w == 1 ? j->energy_j : j->gpu_s);
        }
    }
    if (b.oom) {
        free(b.p);
        return -ENOMEM;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}
