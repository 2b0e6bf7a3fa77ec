/* Reports: one self-contained HTML page with inline SVG (no scripts or assets from
 * elsewhere), drawn the same way for a simulated run and for a real server's
 * recorded history: per-GPU memory, SM activity and power over time, a Gantt chart
 * of jobs per GPU (collocation visible as stacked bars), and a summary table. */
#ifndef CARMA_REPORT_REPORT_H
#define CARMA_REPORT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

/* One GPU's time series; points are joined by straight lines. Arrays not owned. */
struct carma_report_series {
    const char *label;     /* "GPU 0 a100-40gb" */
    double mem_total_mib;  /* y range of the memory chart */
    double power_max_w;    /* y range of the power chart */
    size_t n;
    const double *t_s;     /* seconds from the start of the report, non-decreasing */
    const float *mem_mib;  /* memory in use */
    const float *smact;    /* 0..1; negative = absent at that point */
    const float *power_w;  /* negative = absent */
};

enum carma_report_outcome {
    CARMA_REPORT_OK,  /* succeeded */
    CARMA_REPORT_OOM, /* crashed out of memory (the attempt's GPU time is lost) */
    CARMA_REPORT_FAILED,
    CARMA_REPORT_CANCELLED,
    CARMA_REPORT_RUNNING,   /* still running at the end of the report */
    CARMA_REPORT_GPU_ERROR, /* failed on a GPU whose driver reported a fault (carmad) */
};

/* One attempt of one job on one GPU (a multi-GPU job has one bar per GPU). */
struct carma_report_bar {
    uint32_t gpu;          /* index into the section's series */
    double start_s, end_s;
    uint64_t job;          /* job id */
    const char *label;     /* workload or job name; may be NULL */
    enum carma_report_outcome outcome;
};

/* A section: one run (a policy in the simulator, or the server's window). */
struct carma_report_section {
    const char *title;     /* "auto", "oracle-magm", "carmad on gpu-server-1" */
    double t_end_s;        /* x range [0, t_end_s]; all sections of a page share the
                            * largest one, this run's end marked by a dashed line
                            * (<= 0: the latest time in the data) */
    size_t ngpus;          /* GPUs of the run */
    const struct carma_report_series *gpus; /* the first nseries of them */
    size_t nbars;
    const struct carma_report_bar *bars;
    /* A caller that knows which GPUs are drawn (carma_report_gpus_drawn) may give only
     * theirs: */
    size_t nseries;         /* entries of gpus; 0 = ngpus */
    size_t nruns_elsewhere; /* job runs whose GPUs are all past the series given, with
                             * no bar in bars: counted in the section's totals as runs
                             * not drawn (a run is one attempt of a job, one bar per GPU) */
    /* A recorder that kept only a long run's first runs (CARMA_REPORT_KEEP_BARS): */
    size_t nruns_late;   /* runs on the GPUs given that started at bars_until_s or later,
                          * with no bar in bars: counted in the totals as not drawn, and
                          * the Gantt chart says from when it shows none (0: none left) */
    double bars_until_s; /* with nruns_late: every run that started before it has its
                          * bars in bars */
    /* A recorder that compacted a long run's series (CARMA_REPORT_KEEP_POINTS): */
    double series_step_s; /* > 0: the widest time bucket (s) whose lowest and highest
                           * values of each metric were all a series kept of it; the
                           * page says so beside the charts (0: every point kept) */
};

/* The summary table: header[ncols], cells[nrows*ncols] row-major, all text; note, when
 * not NULL, says under the table what it counts. */
struct carma_report_table {
    size_t ncols, nrows;
    const char *const *header;
    const char *const *cells;
    const char *note;
};

/* Limits that keep the page a few MB and usable in a browser whatever the input: a
 * section draws at most CARMA_REPORT_MAX_GPUS GPUs (fewer when many sections share
 * CARMA_REPORT_PAGE_GPUS rows, never fewer than 4) and says "first K of N GPUs shown";
 * each GPU's series is downsampled to at most CARMA_REPORT_MAX_POINTS points keeping
 * every pixel column's minimum and maximum; Gantt bars narrower than a pixel are
 * merged into one mark per pixel or two, and a section draws at most its share of
 * CARMA_REPORT_PAGE_MARKS marks (between 2,000 and 20,000), saying how many it left. */
#define CARMA_REPORT_MAX_GPUS 32
#define CARMA_REPORT_PAGE_GPUS 96
#define CARMA_REPORT_MAX_POINTS 2000
#define CARMA_REPORT_PAGE_MARKS 40000

/* What a recorder of a run keeps for a report, so that its memory stays bounded however
 * long the run (carma sim --report; README, --report): per drawn GPU at most
 * CARMA_REPORT_KEEP_POINTS points, a longer series compacted to each time bucket's
 * minimum and maximum of every metric (buckets a power of two seconds wide, as narrow
 * as leaves at most half that many points); and per section about
 * CARMA_REPORT_KEEP_BARS bars (one per run and GPU): once that many, only those of the
 * runs that started before then (nruns_late). The page says what was compacted or left
 * out (series_step_s, nruns_late). */
#define CARMA_REPORT_KEEP_POINTS 16384
#define CARMA_REPORT_KEEP_BARS 65536

/* How many GPUs, the first ones of each section, a page of nsections sections draws
 * for a run of ngpus GPUs: min(ngpus, CARMA_REPORT_PAGE_GPUS / nsections clamped to
 * [4, CARMA_REPORT_MAX_GPUS]). Known before a run, so that a recorder keeps only them. */
size_t carma_report_gpus_drawn(size_t nsections, size_t ngpus);

/* Writes the whole page to f: title, subtitle, the table, then one section per
 * element of sections (Gantt chart of jobs per GPU, memory in use, SM activity and
 * power, each one <svg>; a section without GPUs says so and draws none). Text is
 * HTML-escaped; the output depends only on the arguments (same input, same bytes;
 * no locale, no clock). table may be NULL. Returns 0, -ENOMEM, or -EIO with err set
 * when writing failed. */
int carma_report_write_html(FILE *f, const char *title, const char *subtitle,
                            const struct carma_report_table *table,
                            const struct carma_report_section *sections, size_t nsections,
                            struct carma_err *err);

#endif
