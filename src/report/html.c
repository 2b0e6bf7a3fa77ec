/* The HTML report (see report.h): one self-contained page, inline SVG, CSS in a
 * <style>, no scripts. Every chart of the page shares one x scale (X0 .. X0 + PLOT_W
 * for [0, the longest run's end]) so that a vertical line is one instant in every
 * chart of a section and runs of different policies compare by length at a glance. */
#include "report/report.h"
#include "report/svg.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Seconds for people, digits grouped by threes: "1,024", "0.25" (up to 3 decimals). */
static void seconds_format(char *buf, size_t cap, double s)
{
    char num[48];
    carma_svg_num_format(num, sizeof num, s, 3);
    size_t ni = strcspn(num, "."), o = 0;
    for (size_t i = 0; num[i] && o + 1 < cap; i++) {
        if (i && i < ni && (ni - i) % 3 == 0 && o + 2 < cap)
            buf[o++] = ',';
        buf[o++] = num[i];
    }
    if (cap)
        buf[o < cap ? o : cap - 1] = '\0';
}

enum {
    SVG_W = 1180,                           /* width of every chart */
    X0 = 196,                               /* left edge of the plot area (labels left of it) */
    PLOT_W = 960,                           /* plot width in px */
    NBUCKETS = CARMA_REPORT_MAX_POINTS / 2, /* ~1 px per bucket */
    TOP = 6,                                /* space above the first row */
    AXIS_H = 34,                            /* time axis below the last row */
    ROW_GAP = 6,
    LANE_H = 14, /* one Gantt lane */
    BAR_H = 11,
    MAX_LANES = 16,
    GANTT_MIN_ROW = 34,
    /* room for a GPU's label and its second line */ /* jobs at once drawn apart on one GPU; more
                                                        overlap the last lane */
    LABEL_CHARS = 27,                                /* GPU label characters in the left margin */
    MIN_GPUS = 4,
    MIN_MARKS = 2000,
    MAX_MARKS = 20000,
};

#define NOUTCOMES 6

static const char *const outcome_class[NOUTCOMES] = {"ok",     "oom", "fail",
                                                     "cancel", "run", "gpuerr"};
static const char *const outcome_name[NOUTCOMES] = {"ok",        "OOM crash", "failed",
                                                    "cancelled", "running",   "GPU error"};
/* How a merged mark is coloured: the most alarming outcome in it wins. */
static const int outcome_rank[NOUTCOMES] = {0, 5, 4, 2, 1, 3};

static const char STYLE[] =
    ":root{color-scheme:light}"
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,"
    "sans-serif;color:#1f2328;background:#fff;margin:24px auto;max-width:1200px;padding:0 12px}"
    "h1{font-size:24px;margin:0 0 2px}"
    "h2{font-size:19px;margin:34px 0 6px;padding-bottom:4px;border-bottom:2px solid #d0d7de}"
    "h3{font-size:14px;margin:18px 0 4px}"
    "h3 small{font-weight:normal;color:#57606a}"
    ".sub{color:#57606a;margin:0 0 14px}"
    "nav{margin:10px 0}nav a{margin-right:10px;color:#0969da}"
    ".note{color:#7a4d00;background:#fff8e5;border:1px solid #eed9a6;border-radius:4px;"
    "padding:3px 8px;margin:4px 0;display:inline-block}"
    ".tw{max-width:100%;overflow-x:auto}"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:6px 0}"
    "th,td{padding:4px 9px;border-bottom:1px solid #e5e8eb;text-align:left;white-space:nowrap}"
    "th{background:#f3f5f7;border-bottom:2px solid #cfd6dd;white-space:normal;"
    "vertical-align:bottom}"
    ".n{text-align:right}"
    "tbody tr:hover{background:#f6f8fa}"
    ".legend{margin:2px 0 4px;font-size:13px}.legend span{margin-right:16px;white-space:nowrap}"
    ".sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;"
    "margin-right:5px}"
    "svg{display:block;max-width:100%;height:auto}"
    "svg text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Arial,sans-serif;"
    "font-size:11px;fill:#1f2328}"
    "svg .lab{font-size:11.5px}svg .dim{fill:#6e7781;font-size:10px}"
    "svg .yt{fill:#57606a;font-size:10px;text-anchor:end}"
    "svg .xt{fill:#57606a;font-size:10.5px;text-anchor:middle}"
    "svg .xl{fill:#57606a;font-size:10.5px;text-anchor:end}"
    "svg .na{fill:#8c959f;font-size:11px;font-style:italic}"
    ".bg{fill:#f6f8fa}.grid{stroke:#d8dee4;stroke-width:1}"
    ".base{stroke:#8c959f;stroke-width:1}"
    ".endl{stroke:#1f2328;stroke-width:1.2;stroke-dasharray:4 3}"
    ".mem{fill:#4e79a7;fill-opacity:.28;stroke:#2f5b8a;stroke-width:1.1;stroke-linejoin:round}"
    ".smact{fill:#59a14f;fill-opacity:.28;stroke:#3b7a33;stroke-width:1.1;"
    "stroke-linejoin:round}"
    ".power{fill:none;stroke:#b5477b;stroke-width:1.2;stroke-linejoin:round}"
    ".ok{fill:#4e79a7}.oom{fill:#f08c00}.fail{fill:#c92a2a}.cancel{fill:#adb5bd}"
    ".run{fill:#74c0fc}.gpuerr{fill:#7048e8}"
    ".sw.ok{background:#4e79a7}.sw.oom{background:#f08c00}.sw.fail{background:#c92a2a}"
    ".sw.cancel{background:#adb5bd}.sw.run{background:#74c0fc}.sw.gpuerr{background:#7048e8}"
    "rect.oom,rect.fail,rect.gpuerr{stroke:#7a2e00;stroke-width:.6}"
    "svg .bl{font-size:9px;fill:#fff;pointer-events:none}svg .bl.dk{fill:#1f2328}"
    "footer{margin:36px 0 12px;color:#6e7781;font-size:12px}"
    "@media print{body{margin:0;max-width:none}nav{display:none}"
    "section{break-before:page}svg,table{break-inside:avoid}"
    "h2,h3{break-after:avoid}}";

/* ---- small writers ---------------------------------------------------------------- */

static void num(FILE *f, double v)
{
    carma_svg_num_write(f, v, 1);
}

static void attr_num(FILE *f, const char *name, double v)
{
    fprintf(f, " %s=\"", name);
    num(f, v);
    fputc('"', f);
}

static double xmap(double t, double t_end)
{
    double r = t / t_end;
    if (!(r > 0))
        r = 0;
    if (r > 1)
        r = 1;
    return X0 + r * PLOT_W;
}

static void text_at(FILE *f, const char *cls, double x, double y, const char *s, size_t max)
{
    fputs("<text", f);
    if (cls)
        fprintf(f, " class=\"%s\"", cls);
    attr_num(f, "x", x);
    attr_num(f, "y", y);
    fputc('>', f);
    carma_svg_text_write(f, s, max);
    fputs("</text>", f);
}

static void svg_open(FILE *f, double height, const char *aria)
{
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"", SVG_W);
    num(f, height);
    fprintf(f, "\" viewBox=\"0 0 %d ", SVG_W);
    num(f, height);
    fputs("\" role=\"img\" aria-label=\"", f);
    carma_svg_text_write(f, aria, 0);
    fputs("\">\n", f);
}

/* Vertical grid lines over [y0, y1] and tick labels under y1, for [0, t_end]; a dashed
 * line where this run ended when that is before the end of the page's axis. */
static void time_axis(FILE *f, double t_end, double run_end, double y0, double y1)
{
    double step = carma_svg_tick_step(t_end, 10);
    fputs("<g>", f);
    for (double t = 0; t <= t_end * (1 + 1e-9); t += step) {
        double x = xmap(t, t_end);
        fputs("<line class=\"grid\"", f);
        attr_num(f, "x1", x);
        attr_num(f, "x2", x);
        attr_num(f, "y1", y0);
        attr_num(f, "y2", y1);
        fputs("/>", f);
    }
    fputs("<line class=\"base\"", f);
    attr_num(f, "x1", X0);
    attr_num(f, "x2", X0 + PLOT_W);
    attr_num(f, "y1", y1);
    attr_num(f, "y2", y1);
    fputs("/>", f);
    if (run_end < t_end * (1 - 1e-6)) {
        double x = xmap(run_end, t_end);
        fputs("<line class=\"endl\"", f);
        attr_num(f, "x1", x);
        attr_num(f, "x2", x);
        attr_num(f, "y1", y0);
        attr_num(f, "y2", y1);
        fputs("><title>end of this run</title></line>", f);
    }
    for (double t = 0; t <= t_end * (1 + 1e-9); t += step) {
        char b[48];
        carma_svg_tick_format(b, sizeof b, t, step);
        text_at(f, "xt", xmap(t, t_end), y1 + 14, b, 0);
    }
    text_at(f, "xl", X0 - 8, y1 + 14, "time", 0);
    fputs("</g>\n", f);
}

/* ---- the summary table -------------------------------------------------------------- */

static int is_number(const char *s)
{
    if (!s || !*s)
        return 0;
    int digit = 0;
    for (const char *p = s; *p; p++) {
        if (*p >= '0' && *p <= '9')
            digit = 1;
        else if (!strchr("+-.,eE% ", *p))
            return 0;
    }
    return digit;
}

static void table_write(FILE *f, const struct carma_report_table *tb)
{
    if (!tb || tb->ncols == 0 || !tb->header)
        return;
    /* Headers wrap at their spaces so that a wide table fits the page; one that still
     * does not scrolls in its box rather than running off the page. */
    fputs("<div class=\"tw\"><table>\n<thead><tr>", f);
    /* A column of numbers ("-": none) is right-aligned, its header and "-" included
     * (columns past the 64th: cell by cell). */
    enum { MAXC = 64 };
    int numeric[MAXC] = {0};
    for (size_t c = 0; c < tb->ncols; c++) {
        int num = c < MAXC && tb->nrows > 0 && tb->cells, any = 0;
        for (size_t r = 0; num && r < tb->nrows; r++) {
            const char *s = tb->cells[r * tb->ncols + c];
            num = is_number(s) || !strcmp(s, "-");
            any |= is_number(s);
        }
        if (c < MAXC)
            numeric[c] = num && any;
        fputs(c < MAXC && numeric[c] ? "<th class=\"n\">" : "<th>", f);
        carma_svg_text_write(f, tb->header[c], 0);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (size_t r = 0; tb->cells && r < tb->nrows; r++) {
        fputs("<tr>", f);
        for (size_t c = 0; c < tb->ncols; c++) {
            const char *s = tb->cells[r * tb->ncols + c];
            fputs((c < MAXC && numeric[c]) || is_number(s) ? "<td class=\"n\">" : "<td>", f);
            carma_svg_text_write(f, s, 0);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
    if (tb->note) {
        fputs("<p class=\"note\">", f);
        carma_svg_text_write(f, tb->note, 0);
        fputs("</p>\n", f);
    }
}

/* ---- time series charts ----------------------------------------------------------- */

enum metric { M_MEM, M_SMACT, M_POWER };

struct scratch {
    double *t; /* 4 * NBUCKETS */
    float *v;
};

static const float *metric_values(const struct carma_report_series *se, enum metric m)
{
    return m == M_MEM ? se->mem_mib : m == M_SMACT ? se->smact : se->power_w;
}

/* The value drawn at the top of a row. */
static double metric_top(const struct carma_report_series *se, enum metric m)
{
    double top = m == M_MEM ? se->mem_total_mib : m == M_SMACT ? 1.0 : se->power_max_w;
    if (isfinite(top) && top > 0)
        return top;
    const float *v = metric_values(se, m);
    top = 0;
    for (size_t i = 0; v && i < se->n; i++)
        if (isfinite(v[i]) && v[i] > top)
            top = v[i];
    return top > 0 ? top : 1;
}

static void area_close(FILE *f, double base)
{
    fputc('V', f);
    num(f, base);
    fputc('Z', f);
}

/* One row's path: an area down to the row's base (memory, SMACT) or a line (power);
 * absent points break it. Returns the number of points drawn. */
static size_t series_path(FILE *f, const struct carma_report_series *se, enum metric m,
                          double t_end, double y_top, double h, struct scratch *sc)
{
    const float *v = metric_values(se, m);
    if (!v || !se->t_s || se->n == 0)
        return 0;
    size_t n = carma_svg_series_downsample(se->t_s, v, se->n, 0, t_end, NBUCKETS, sc->t, sc->v);
    double top = metric_top(se, m), base = y_top + h;
    int area = m != M_POWER;
    size_t drawn = 0;
    int pen = 0, after_v = 0; /* after V, bare numbers would be more V arguments */
    double last_x = 0;
    for (size_t i = 0; i < n; i++) {
        if (sc->v[i] < 0) {
            if (pen && area)
                area_close(f, base);
            pen = 0;
            continue;
        }
        if (drawn == 0)
            fprintf(f, "<path class=\"%s\" d=\"",
                    m == M_MEM     ? "mem"
                    : m == M_SMACT ? "smact"
                                   : "power");
        double r = sc->v[i] / top;
        r = r < 0 ? 0 : r > 1 ? 1 : r;
        double x = xmap(sc->t[i], t_end), y = base - r * h;
        if (!pen) {
            fputc('M', f);
            num(f, x);
            fputc(' ', f);
            num(f, area ? base : y);
            if (area) {
                fputc('V', f);
                num(f, y);
            }
            after_v = area;
            pen = 1;
        } else if (x == last_x) {
            fputc('V', f);
            num(f, y);
            after_v = 1;
        } else {
            fputc(after_v ? 'L' : ' ', f);
            num(f, x);
            fputc(' ', f);
            num(f, y);
            after_v = 0;
        }
        last_x = x;
        drawn++;
    }
    if (drawn) {
        if (pen && area)
            area_close(f, base);
        fputs("\"/>", f);
    }
    return drawn;
}

static void top_label(char *b, size_t cap, const struct carma_report_series *se, enum metric m)
{
    double top = metric_top(se, m);
    size_t n;
    switch (m) {
    case M_MEM:
        snprintf(b, cap, "100%%");
        break;
    case M_SMACT:
        snprintf(b, cap, "100%%");
        break;
    case M_POWER:
        n = carma_svg_num_format(b, cap, top, 0);
        if (n + 3 < cap)
            memcpy(b + n, " W", 3);
        break;
    }
}

static void sub_label(char *b, size_t cap, const struct carma_report_series *se, enum metric m)
{
    char v[48];
    if (m == M_MEM) {
        carma_svg_num_format(v, sizeof v, se->mem_total_mib / 1024, 1);
        snprintf(b, cap, "%s GiB", v);
    } else if (m == M_POWER) {
        carma_svg_num_format(v, sizeof v, metric_top(se, m), 0);
        snprintf(b, cap, "board limit %s W", v);
    } else {
        b[0] = 0;
    }
}

static void series_chart(FILE *f, const struct carma_report_section *sec, size_t shown,
                         enum metric m, double t_end, double run_end, struct scratch *sc)
{
    static const char *const aria[] = {"memory in use per GPU over time",
                                       "SM activity per GPU over time", "power per GPU over time"};
    double ph = shown <= 8 ? 40 : 24, rh = ph + ROW_GAP;
    double height = TOP + (double)shown * rh + AXIS_H;
    svg_open(f, height, aria[m]);
    time_axis(f, t_end, run_end, TOP, TOP + (double)shown * rh - ROW_GAP / 2.0);
    for (size_t g = 0; g < shown; g++) {
        const struct carma_report_series *se = &sec->gpus[g];
        double y = TOP + (double)g * rh;
        fputs("<g>", f);
        /* the row: a light band under the grid would hide it, so only its base line */
        fputs("<line class=\"base\"", f);
        attr_num(f, "x1", X0);
        attr_num(f, "x2", X0 + PLOT_W);
        attr_num(f, "y1", y + ph);
        attr_num(f, "y2", y + ph);
        fputs("/>", f);
        char lab[32], sub[64];
        top_label(lab, sizeof lab, se, m);
        sub_label(sub, sizeof sub, se, m);
        double mid = y + ph / 2;
        if (ph >= 30 && sub[0]) {
            text_at(f, "lab", 8, mid - 1, se->label ? se->label : "GPU", LABEL_CHARS);
            text_at(f, "dim", 8, mid + 12, sub, 0);
        } else {
            text_at(f, "lab", 8, mid + 4, se->label ? se->label : "GPU", LABEL_CHARS);
        }
        text_at(f, "yt", X0 - 6, y + 9, lab, 0);
        text_at(f, "yt", X0 - 6, y + ph, "0", 0);
        if (series_path(f, se, m, t_end, y, ph, sc) == 0)
            text_at(f, "na", X0 + 8, mid + 4, "no data", 0);
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
}

/* ---- the Gantt chart ------------------------------------------------------------------- */

struct ord {
    double s, e;
    uint64_t job;
    size_t i; /* index into sec->bars */
    unsigned lane;
};

static int ord_cmp(const void *a, const void *b)
{
    const struct ord *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    if (x->e != y->e)
        return x->e < y->e ? -1 : 1;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static unsigned outcome_of(const struct carma_report_bar *b)
{
    unsigned o = (unsigned)b->outcome;
    return o < NOUTCOMES ? o : CARMA_REPORT_FAILED;
}

/* Bars of one lane not yet drawn: one bar, or several narrower than a pixel. */
struct cluster {
    size_t n;
    double x0, x1, s, e;
    size_t first; /* ord index of the first bar */
    uint64_t job_lo, job_hi;
    size_t count[NOUTCOMES];
    unsigned worst;
};

struct gantt_stats {
    size_t marks, merged_bars, undrawn, lane_overflow_gpus;
};

static void bar_title(FILE *f, const struct carma_report_bar *b)
{
    char s[48], e[48], d[48];
    carma_svg_duration_format(s, sizeof s, b->start_s);
    carma_svg_duration_format(e, sizeof e, b->end_s);
    carma_svg_duration_format(d, sizeof d, b->end_s - b->start_s);
    fprintf(f, "<title>job %llu", (unsigned long long)b->job);
    if (b->label) {
        fputs(" \xc2\xb7 ", f);
        carma_svg_text_write(f, b->label, 200);
    }
    fprintf(f, "\n%s \xe2\x86\x92 %s (%s)\n%s</title>", s, e, d, outcome_name[outcome_of(b)]);
}

static void cluster_flush(FILE *f, const struct carma_report_section *sec, const struct ord *o,
                          struct cluster *c, double y, struct gantt_stats *st)
{
    if (c->n == 0)
        return;
    double w = c->x1 - c->x0;
    double x = c->x0;
    if (w < 1) { /* visible, centred on where it was */
        x -= (1 - w) / 2;
        w = 1;
    } else if (w > 3) {
        w -= 0.6; /* a hairline gap between bars that follow each other */
    }
    fprintf(f, "<rect class=\"%s\"", outcome_class[c->worst]);
    attr_num(f, "x", x);
    attr_num(f, "y", y);
    attr_num(f, "width", w);
    fprintf(f, " height=\"%d\">", BAR_H);
    if (c->n == 1) {
        const struct carma_report_bar *b = &sec->bars[o[c->first].i];
        bar_title(f, b);
        fputs("</rect>", f);
        const char *lab = b->label;
        char idbuf[32];
        if (!lab) {
            snprintf(idbuf, sizeof idbuf, "job %llu", (unsigned long long)b->job);
            lab = idbuf;
        }
        size_t chars = carma_svg_text_chars(lab);
        if (chars > 40)
            chars = 40;
        if (w >= (double)chars * 5.4 + 8) {
            int dark = c->worst == CARMA_REPORT_CANCELLED || c->worst == CARMA_REPORT_RUNNING;
            text_at(f, dark ? "bl dk" : "bl", x + 3, y + 8.5, lab, 40);
        }
    } else {
        char s[48], e[48];
        carma_svg_duration_format(s, sizeof s, c->s);
        carma_svg_duration_format(e, sizeof e, c->e);
        /* bars are runs: one job's attempts (a retry at once) are merged too */
        if (c->job_lo == c->job_hi)
            fprintf(f, "<title>%zu runs of job %llu, each shorter than a pixel", c->n,
                    (unsigned long long)c->job_lo);
        else
            fprintf(f, "<title>%zu runs, each shorter than a pixel (jobs %llu to %llu)", c->n,
                    (unsigned long long)c->job_lo, (unsigned long long)c->job_hi);
        fprintf(f, "\n%s \xe2\x86\x92 %s\n", s, e);
        int sep = 0;
        for (unsigned k = 0; k < NOUTCOMES; k++)
            if (c->count[k]) {
                fprintf(f, "%s%zu %s", sep ? ", " : "", c->count[k], outcome_name[k]);
                sep = 1;
            }
        fputs("</title></rect>", f);
        st->merged_bars += c->n;
    }
    st->marks++;
    c->n = 0;
}

static void cluster_add(struct cluster *c, const struct ord *o, size_t k,
                        const struct carma_report_bar *b, double x0, double x1)
{
    unsigned oc = outcome_of(b);
    if (c->n == 0) {
        memset(c, 0, sizeof *c);
        c->x0 = x0;
        c->s = o[k].s;
        c->first = k;
        c->job_lo = c->job_hi = b->job;
        c->worst = oc;
    }
    c->x1 = x1 > c->x1 ? x1 : c->x1;
    c->e = o[k].e > c->e ? o[k].e : c->e;
    c->job_lo = b->job < c->job_lo ? b->job : c->job_lo;
    c->job_hi = b->job > c->job_hi ? b->job : c->job_hi;
    c->count[oc]++;
    if (outcome_rank[oc] > outcome_rank[c->worst])
        c->worst = oc;
    c->n++;
}

/* Draws one lane of one GPU; stops (counting the rest as undrawn) past `budget` marks. */
static void lane_draw(FILE *f, const struct carma_report_section *sec, const struct ord *o,
                      size_t n, unsigned lane, double y, double t_end, size_t budget, size_t *used,
                      struct gantt_stats *st)
{
    struct cluster c = {0};
    for (size_t k = 0; k < n; k++) {
        if (o[k].lane != lane)
            continue;
        if (*used >= budget) {
            st->undrawn++;
            continue;
        }
        const struct carma_report_bar *b = &sec->bars[o[k].i];
        double x0 = xmap(o[k].s, t_end), x1 = xmap(o[k].e, t_end);
        int narrow = x1 - x0 < 1;
        if (c.n && (!narrow || x0 - c.x1 >= 0.5 || x1 - c.x0 > 3)) {
            cluster_flush(f, sec, o, &c, y, st);
            if (++*used >= budget) {
                st->undrawn++;
                continue;
            }
        }
        cluster_add(&c, o, k, b, x0, x1);
        if (!narrow) {
            cluster_flush(f, sec, o, &c, y, st);
            ++*used;
        }
    }
    if (c.n) { /* it began below the budget and nothing was flushed since */
        cluster_flush(f, sec, o, &c, y, st);
        ++*used;
    }
}

/* Assigns lanes to one GPU's bars (sorted by start): the lowest lane free at the bar's
 * start; when all MAX_LANES are busy, the one that frees first. Returns lanes used. */
static unsigned lanes_assign(struct ord *o, size_t n, int *overflow)
{
    double end[MAX_LANES];
    unsigned used = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned l = 0;
        while (l < used && end[l] > o[k].s)
            l++;
        if (l == used && used < MAX_LANES) {
            end[used++] = o[k].e;
        } else {
            if (l == used) { /* all busy: overlap the lane that frees first */
                *overflow = 1;
                l = 0;
                for (unsigned j = 1; j < used; j++)
                    if (end[j] < end[l])
                        l = j;
            }
            if (end[l] < o[k].e)
                end[l] = o[k].e;
        }
        o[k].lane = l;
    }
    return used ? used : 1;
}

static double gantt_row_h(unsigned lanes)
{
    double h = lanes * LANE_H + 2 * ROW_GAP;
    return h < GANTT_MIN_ROW ? GANTT_MIN_ROW : h;
}

/* One bar as part of a run: a run is one attempt of one job, a bar per GPU it held. */
struct run_key {
    uint64_t job;
    double start_s;
    int drawn, off; /* a bar of it on a drawn GPU; one on a GPU past them */
};

static int run_key_cmp(const void *a, const void *b)
{
    const struct run_key *x = a, *y = b;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return (x->start_s > y->start_s) - (x->start_s < y->start_s);
}

/* The section's job runs, *runs, and those of them with no bar on the first `shown`
 * GPUs, *off: runs, not bars, since a multi-GPU run has a bar on each of its GPUs.
 * The runs the caller left out (nruns_elsewhere) count in both. */
static int count_runs(const struct carma_report_section *sec, size_t shown, size_t *runs,
                      size_t *off)
{
    *runs = *off = sec->nruns_elsewhere;
    *runs += sec->nruns_late;
    size_t n = sec->bars ? sec->nbars : 0;
    if (n == 0)
        return 0;
    struct run_key *k = malloc(n * sizeof *k);
    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct carma_report_bar *b = &sec->bars[i];
        int valid = isfinite(b->start_s) && isfinite(b->end_s) && b->gpu < sec->ngpus;
        k[i] =
            (struct run_key){b->job, b->start_s, valid && b->gpu < shown, valid && b->gpu >= shown};
    }
    qsort(k, n, sizeof *k, run_key_cmp);
    for (size_t i = 0; i < n;) {
        int drawn = 0, offg = 0;
        size_t j = i;
        for (; j < n && run_key_cmp(&k[i], &k[j]) == 0; j++) {
            drawn |= k[j].drawn;
            offg |= k[j].off;
        }
        (*runs)++;
        *off += !drawn && offg;
        i = j;
    }
    free(k);
    return 0;
}

static int gantt_chart(FILE *f, const struct carma_report_section *sec, size_t shown, double t_end,
                       double run_end, size_t budget, struct gantt_stats *st, size_t *off_gpu,
                       size_t *bad)
{
    size_t *start = calloc(shown + 1, sizeof *start);
    if (!start)
        return -ENOMEM;
    size_t total = 0;
    for (size_t i = 0; i < sec->nbars; i++) {
        const struct carma_report_bar *b = &sec->bars[i];
        if (!isfinite(b->start_s) || !isfinite(b->end_s) || b->gpu >= sec->ngpus) {
            (*bad)++;
            continue;
        }
        if (b->gpu >= shown) {
            (*off_gpu)++;
            continue;
        }
        start[b->gpu + 1]++;
        total++;
    }
    for (size_t g = 0; g < shown; g++)
        start[g + 1] += start[g];
    struct ord *o = malloc((total ? total : 1) * sizeof *o);
    size_t *fill = calloc(shown ? shown : 1, sizeof *fill);
    unsigned *lanes = calloc(shown ? shown : 1, sizeof *lanes);
    if (!o || !fill || !lanes) {
        free(start), free(o), free(fill), free(lanes);
        return -ENOMEM;
    }
    for (size_t i = 0; i < sec->nbars; i++) {
        const struct carma_report_bar *b = &sec->bars[i];
        if (!isfinite(b->start_s) || !isfinite(b->end_s) || b->gpu >= shown)
            continue;
        double s = b->start_s, e = b->end_s;
        if (e < s)
            e = s;
        o[start[b->gpu] + fill[b->gpu]++] = (struct ord){s, e, b->job, i, 0};
    }
    double height = TOP + AXIS_H;
    for (size_t g = 0; g < shown; g++) {
        size_t n = start[g + 1] - start[g];
        qsort(o + start[g], n, sizeof *o, ord_cmp);
        int overflow = 0;
        lanes[g] = lanes_assign(o + start[g], n, &overflow);
        st->lane_overflow_gpus += (size_t)overflow;
        height += gantt_row_h(lanes[g]);
    }
    svg_open(f, height, "jobs per GPU over time (Gantt chart)");
    double y = TOP;
    double rows_end = height - AXIS_H;
    time_axis(f, t_end, run_end, TOP, rows_end - ROW_GAP / 2.0);
    size_t per_gpu = shown ? budget / shown : budget;
    for (size_t g = 0; g < shown; g++) {
        const struct carma_report_series *se = &sec->gpus[g];
        size_t n = start[g + 1] - start[g];
        double rh = gantt_row_h(lanes[g]);
        fputs("<g>", f);
        if (g % 2 == 0) {
            fputs("<rect class=\"bg\" fill-opacity=\".6\"", f);
            attr_num(f, "x", 0);
            attr_num(f, "y", y);
            attr_num(f, "width", X0 + PLOT_W);
            attr_num(f, "height", rh);
            fputs("/>", f);
        }
        char sub[64];
        if (n == 0)
            snprintf(sub, sizeof sub, "no jobs");
        else if (lanes[g] >= MAX_LANES)
            snprintf(sub, sizeof sub, "%zu runs, %d+ at once", n, MAX_LANES);
        else
            snprintf(sub, sizeof sub, "%zu run%s, up to %u at once", n, n == 1 ? "" : "s",
                     lanes[g]);
        double mid = y + rh / 2;
        text_at(f, "lab", 8, mid - 1, se->label ? se->label : "GPU", LABEL_CHARS);
        text_at(f, "dim", 8, mid + 12, sub, 0);
        size_t used = 0;
        for (unsigned l = 0; l < lanes[g]; l++)
            lane_draw(f, sec, o + start[g], n, l,
                      y + (rh - lanes[g] * LANE_H) / 2 + l * LANE_H + (LANE_H - BAR_H) / 2.0, t_end,
                      per_gpu, &used, st);
        fputs("</g>\n", f);
        y += rh;
    }
    if (sec->nruns_late && sec->bars_until_s < run_end) { /* what was not recorded, greyed */
        double x = xmap(sec->bars_until_s, t_end), x1 = xmap(run_end, t_end);
        fputs("<g><rect fill=\"#8c959f\" fill-opacity=\".18\"", f);
        attr_num(f, "x", x);
        attr_num(f, "y", TOP);
        attr_num(f, "width", x1 - x);
        attr_num(f, "height", rows_end - TOP);
        fprintf(f, "><title>%zu runs that started here or later are not drawn</title></rect>",
                sec->nruns_late);
        if (x1 - x >= 90)
            text_at(f, "na", x + 6, TOP + 12, "runs not recorded", 0);
        fputs("</g>\n", f);
    }
    fputs("</svg>\n", f);
    free(start), free(o), free(fill), free(lanes);
    return 0;
}

/* ---- sections ----------------------------------------------------------------------- */

/* Entries of sec->gpus. */
static size_t section_nseries(const struct carma_report_section *sec)
{
    if (!sec->gpus)
        return 0;
    return sec->nseries && sec->nseries < sec->ngpus ? sec->nseries : sec->ngpus;
}

static double section_t_end(const struct carma_report_section *sec)
{
    if (isfinite(sec->t_end_s) && sec->t_end_s > 0)
        return sec->t_end_s;
    double t = 0;
    for (size_t g = 0; g < section_nseries(sec); g++) {
        const struct carma_report_series *se = &sec->gpus[g];
        for (size_t i = 0; se->t_s && i < se->n; i++)
            if (isfinite(se->t_s[i]) && se->t_s[i] > t)
                t = se->t_s[i];
    }
    for (size_t i = 0; i < sec->nbars; i++)
        if (isfinite(sec->bars[i].end_s) && sec->bars[i].end_s > t)
            t = sec->bars[i].end_s;
    return t > 0 ? t : 1;
}

/* The colours of the outcomes the section's runs have ("ok" always): a simulated run
 * has no cancelled or running jobs, and a legend should not list them. */
static void legend_write(FILE *f, const struct carma_report_section *sec)
{
    int present[NOUTCOMES] = {1};
    for (size_t i = 0; sec->bars && i < sec->nbars; i++)
        present[outcome_of(&sec->bars[i])] = 1;
    fputs("<div class=\"legend\">", f);
    for (unsigned k = 0; k < NOUTCOMES; k++)
        if (present[k])
            fprintf(f, "<span><i class=\"sw %s\"></i>%s</span>", outcome_class[k],
                    outcome_name[k]);
    fputs("<span>stacked bars on one GPU ran at the same time (collocated)</span></div>\n", f);
}

static int section_write(FILE *f, const struct carma_report_section *sec, size_t idx, double t_end,
                         size_t gpu_cap, size_t budget, struct scratch *sc)
{
    fprintf(f, "<section id=\"s%zu\">\n<h2>", idx);
    carma_svg_text_write(f, sec->title ? sec->title : "run", 0);
    fputs("</h2>\n", f);
    size_t ngpus = sec->gpus ? sec->ngpus : 0;
    if (ngpus == 0) {
        fputs("<p class=\"note\">no GPUs in this run</p>\n</section>\n", f);
        return 0;
    }
    size_t shown = ngpus < gpu_cap ? ngpus : gpu_cap;
    if (shown > section_nseries(sec))
        shown = section_nseries(sec);
    double run_end = section_t_end(sec);
    char span[48];
    carma_svg_duration_format(span, sizeof span, run_end);
    size_t runs, off_gpu;
    if (count_runs(sec, shown, &runs, &off_gpu))
        return -ENOMEM;
    fprintf(f, "<p class=\"sub\">%zu GPU%s, %zu job run%s over %s", ngpus, ngpus == 1 ? "" : "s",
            runs, runs == 1 ? "" : "s", span);
    if (run_end < t_end * (1 - 1e-6)) {
        char axis[48];
        carma_svg_duration_format(axis, sizeof axis, t_end);
        fprintf(f, " (dashed line; every run is drawn on the same time axis, 0 to %s)", axis);
    }
    fputs("</p>\n", f);
    if (shown < ngpus)
        fprintf(f, "<p class=\"note\">first %zu of %zu GPUs shown</p>\n", shown, ngpus);

    /* The Gantt chart goes to a buffer first: its notes belong above it. */
    char *gbuf = NULL;
    size_t glen = 0;
    FILE *g = open_memstream(&gbuf, &glen);
    if (!g)
        return -ENOMEM;
    struct gantt_stats st = {0};
    size_t off_bars = 0, bad = 0;
    struct carma_report_section view = *sec;
    if (!view.bars)
        view.nbars = 0;
    int rc = gantt_chart(g, &view, shown, t_end, run_end, budget, &st, &off_bars, &bad);
    if (fclose(g) != 0 && rc == 0)
        rc = -ENOMEM;
    if (rc) {
        free(gbuf);
        return rc;
    }
    fputs("<h3>Jobs per GPU <small>(each bar is one run of a job on one GPU; hover for "
          "details)</small></h3>\n",
          f);
    legend_write(f, sec);
    if (off_gpu)
        fprintf(f, "<p class=\"note\">%zu runs on GPUs not shown are not drawn</p>\n", off_gpu);
    if (st.merged_bars)
        fprintf(f,
                "<p class=\"note\">%zu runs shorter than a pixel are drawn merged, a few per "
                "pixel, in the colour of their worst outcome</p>\n",
                st.merged_bars);
    if (st.undrawn)
        fprintf(f,
                "<p class=\"note\">%zu runs past the drawing limit of %zu marks per GPU are "
                "not drawn</p>\n",
                st.undrawn, shown ? budget / shown : budget);
    if (st.lane_overflow_gpus)
        fprintf(f,
                "<p class=\"note\">on %zu GPU%s more than %d jobs ran at once; the extra "
                "ones overlap in the lanes that freed first</p>\n",
                st.lane_overflow_gpus, st.lane_overflow_gpus == 1 ? "" : "s", MAX_LANES);
    if (bad)
        fprintf(f, "<p class=\"note\">%zu runs with an unknown GPU or time skipped</p>\n", bad);
    if (sec->nruns_late) {
        char from[48];
        carma_svg_duration_format(from, sizeof from, sec->bars_until_s);
        fprintf(f,
                "<p class=\"note\">%zu runs that started from %s on are not drawn (grey): a "
                "long run's recording keeps the bars of its first %zu runs or so, to bound "
                "its memory (the charts below cover the whole run). To see later runs, "
                "replay the part of the trace from there</p>\n",
                sec->nruns_late, from, runs - off_gpu - sec->nruns_late);
    }
    fwrite(gbuf, 1, glen, f);
    free(gbuf);

    if (sec->series_step_s > 0) {
        char w[64], d[48], dd[56] = "";
        seconds_format(w, sizeof w, sec->series_step_s);
        if (sec->series_step_s >= 60) {
            carma_svg_duration_format(d, sizeof d, sec->series_step_s);
            snprintf(dd, sizeof dd, " (%s)", d);
        }
        fprintf(f,
                "<p class=\"note\">a long run: in the charts below each point is the lowest "
                "or the highest value within %s s%s, to bound the recording's memory (the "
                "extremes of every metric kept, of each span that long)</p>\n",
                w, dd);
    }
    fputs("<h3>Memory in use <small>(share of each GPU's memory, %)</small></h3>\n", f);
    series_chart(f, sec, shown, M_MEM, t_end, run_end, sc);
    fputs("<h3>SM activity <small>(SMACT, % of time SMs are busy)</small></h3>\n", f);
    series_chart(f, sec, shown, M_SMACT, t_end, run_end, sc);
    fputs("<h3>Power <small>(W, up to each GPU's board limit)</small></h3>\n", f);
    series_chart(f, sec, shown, M_POWER, t_end, run_end, sc);
    fputs("</section>\n", f);
    return 0;
}

size_t carma_report_gpus_drawn(size_t nsections, size_t ngpus)
{
    size_t cap = nsections ? CARMA_REPORT_PAGE_GPUS / nsections : CARMA_REPORT_MAX_GPUS;
    cap = cap < MIN_GPUS ? MIN_GPUS : cap > CARMA_REPORT_MAX_GPUS ? CARMA_REPORT_MAX_GPUS : cap;
    return ngpus < cap ? ngpus : cap;
}

int carma_report_write_html(FILE *f, const char *title, const char *subtitle,
                            const struct carma_report_table *table,
                            const struct carma_report_section *sections, size_t nsections,
                            struct carma_err *err)
{
    assert(f);
    struct scratch sc = {malloc(4 * NBUCKETS * sizeof *sc.t), malloc(4 * NBUCKETS * sizeof *sc.v)};
    if (!sc.t || !sc.v) {
        free(sc.t), free(sc.v);
        return carma_err_set(err, -ENOMEM, "report: out of memory");
    }
    if (!sections)
        nsections = 0;
    size_t gpu_cap = carma_report_gpus_drawn(nsections, SIZE_MAX);
    size_t budget = nsections ? CARMA_REPORT_PAGE_MARKS / nsections : MAX_MARKS;
    budget = budget < MIN_MARKS ? MIN_MARKS : budget > MAX_MARKS ? MAX_MARKS : budget;

    const char *t = title ? title : "carma report";
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n<title>",
          f);
    carma_svg_text_write(f, t, 0);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<header>\n<h1>", STYLE);
    carma_svg_text_write(f, t, 0);
    fputs("</h1>\n", f);
    if (subtitle) {
        fputs("<p class=\"sub\">", f);
        carma_svg_text_write(f, subtitle, 0);
        fputs("</p>\n", f);
    }
    fputs("</header>\n", f);
    if (nsections > 1) {
        fputs("<nav>", f);
        for (size_t i = 0; i < nsections; i++) {
            fprintf(f, "<a href=\"#s%zu\">", i);
            carma_svg_text_write(f, sections[i].title ? sections[i].title : "run", 0);
            fputs("</a>", f);
        }
        fputs("</nav>\n", f);
    }
    if (table && table->ncols) {
        fputs("<h2>Summary</h2>\n", f);
        table_write(f, table);
    }
    /* One time axis for the whole page, so that runs compare at a glance. */
    double axis_end = 0;
    for (size_t i = 0; i < nsections; i++) {
        double e = section_t_end(&sections[i]);
        axis_end = e > axis_end ? e : axis_end;
    }
    int rc = 0;
    for (size_t i = 0; i < nsections && rc == 0; i++)
        rc = section_write(f, &sections[i], i, axis_end, gpu_cap, budget, &sc);
    fputs("<footer>Drawn by carma. Series keep every pixel's minimum and maximum (at most ", f);
    fprintf(f, "%d points per GPU); times are from the start of each run.</footer>\n",
            CARMA_REPORT_MAX_POINTS);
    fputs("</body>\n</html>\n", f);
    free(sc.t), free(sc.v);
    if (rc)
        return carma_err_set(err, rc, "report: out of memory");
    /* why, when the last flush is what failed (a full disk, a file size limit); a write
     * that failed earlier left the stream's error but no errno to trust: any call since
     * may have changed it (a caller that needs the cause keeps it: cli_outfile) */
    errno = 0;
    int flushed = fflush(f) == 0;
    int e = errno;
    if (!flushed || ferror(f))
        return !flushed && e ? carma_err_set(err, -EIO, "report: write failed: %s", strerror(e))
                             : carma_err_set(err, -EIO, "report: write failed");
    return 0;
}
