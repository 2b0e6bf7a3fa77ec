/* The HTML report: structure, escaping, determinism, the drawing caps and the
 * downsampling bound, number and time formatting, write errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "report/svg.h"

#define MAX_MARKS_FOR_TEST 20000 /* one section's share of CARMA_REPORT_PAGE_MARKS, capped */

/* ---- helpers ---------------------------------------------------------------------- */

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + l, needle))
        n++;
    return n;
}

/* Renders the page into a heap string (caller frees); asserts success. */
static char *render(const char *title, const char *subtitle, const struct carma_report_table *tb,
                    const struct carma_report_section *sec, size_t nsec, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_non_null(f);
    struct carma_err err = {{0}};
    assert_int_equal(carma_report_write_html(f, title, subtitle, tb, sec, nsec, &err), 0);
    assert_int_equal(fclose(f), 0);
    if (len)
        *len = n;
    return buf;
}

/* A GPU whose memory, SMACT and power step through n points over [0, t_end]. */
struct gpu_data {
    double *t;
    float *mem, *smact, *power;
};

static void gpu_data_fill(struct gpu_data *d, struct carma_report_series *se, const char *label,
                          size_t n, double t_end, unsigned seed)
{
    d->t = calloc(n, sizeof *d->t);
    d->mem = calloc(n, sizeof *d->mem);
    d->smact = calloc(n, sizeof *d->smact);
    d->power = calloc(n, sizeof *d->power);
    assert_true(d->t && d->mem && d->smact && d->power);
    unsigned x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        d->t[i] = n > 1 ? t_end * (double)i / (double)(n - 1) : 0;
        d->mem[i] = (float)((x >> 8) % 40000);
        d->smact[i] = (float)((x >> 4) % 1000) / 1000.0f;
        d->power[i] = 60.0f + (float)((x >> 12) % 340);
    }
    *se = (struct carma_report_series){label, 40960, 400, n, d->t, d->mem, d->smact, d->power};
}

static void gpu_data_free(struct gpu_data *d)
{
    free(d->t);
    free(d->mem);
    free(d->smact);
    free(d->power);
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_structure_bars_and_escaping(void **state)
{
    (void)state;
    enum { NG = 3 };
    struct gpu_data d[2][NG];
    struct carma_report_series se[2][NG];
    for (int s = 0; s < 2; s++)
        for (int g = 0; g < NG; g++)
            gpu_data_fill(&d[s][g], &se[s][g], g == 1 ? "GPU 1 <a100> & \"x\"" : "GPU a100-40gb",
                          50, 7200, (unsigned)(s * 10 + g));
    /* Section 0: three jobs at once on GPU 0 (three lanes), one per other GPU, every
     * outcome once; bars wide enough to be drawn one by one. */
    const struct carma_report_bar bars0[] = {
        {0, 0, 3600, 1, "resnet<50>", CARMA_REPORT_OK},
        {0, 600, 4000, 2, "bert&co", CARMA_REPORT_OOM},
        {0, 1200, 2400, 3, "q\"uote", CARMA_REPORT_FAILED},
        {1, 100, 5000, 4, NULL, CARMA_REPORT_CANCELLED},
        {2, 3000, 7200, 5, "gpt2", CARMA_REPORT_RUNNING},
        {0, 4000, 6000, 6, "after", CARMA_REPORT_OK}, /* reuses lane 0 */
    };
    const struct carma_report_bar bars1[] = {
        {1, 0, 1000, 7, "a", CARMA_REPORT_OK},
        {2, 0, 1000, 8, "b", CARMA_REPORT_OK},
    };
    struct carma_report_section sec[2] = {
        {"policy <auto> & \"co\"", 7200, NG, se[0], 6, bars0, 0, 0, 0, 0, 0},
        {"exclusive", 7200, NG, se[1], 2, bars1, 0, 0, 0, 0, 0},
    };
    const char *header[] = {"policy", "makespan h"};
    const char *cells[] = {"auto<", "1.25", "exclusive", "2.50"};
    struct carma_report_table tb = {2, 2, header, cells, "counts <jobs> & more"};
    size_t len;
    char *html = render("carma <sim> & \"t\"", "trace a&b.csv", &tb, sec, 2, &len);

    assert_true(strncmp(html, "<!DOCTYPE html>", 15) == 0);
    assert_non_null(strstr(html, "</html>\n"));
    assert_int_equal(count(html, "<section"), 2);
    assert_int_equal(count(html, "<svg"), 8); /* Gantt, memory, SMACT, power per section */
    assert_int_equal(count(html, "</svg>"), 8);
    /* one mark per bar, by outcome */
    assert_int_equal(count(html, "<rect class=\"ok\""), 4);
    assert_int_equal(count(html, "<rect class=\"oom\""), 1);
    assert_int_equal(count(html, "<rect class=\"fail\""), 1);
    assert_int_equal(count(html, "<rect class=\"cancel\""), 1);
    assert_int_equal(count(html, "<rect class=\"run\""), 1);
    assert_int_equal(count(html, "<rect class=\""), 8 + 4 /* bands behind every other Gantt row */);
    assert_int_equal(count(html, "<title>job "), 8);
    assert_non_null(strstr(html, "up to 3 at once"));
    assert_non_null(strstr(html, "<title>job 2 \xc2\xb7 bert&amp;co\n10m00s \xe2\x86\x92 "
                                 "1h06m40s (56m40s)\nOOM crash</title>"));
    /* escaping everywhere: titles, labels, table, subtitle */
    assert_non_null(strstr(html, "<title>carma &lt;sim&gt; &amp; &quot;t&quot;</title>"));
    assert_non_null(strstr(html, "policy &lt;auto&gt; &amp; &quot;co&quot;"));
    assert_non_null(strstr(html, "GPU 1 &lt;a100&gt; &amp; &quot;x&quot;"));
    assert_non_null(strstr(html, "resnet&lt;50&gt;"));
    assert_non_null(strstr(html, "q&quot;uote"));
    assert_non_null(strstr(html, "<td>auto&lt;</td><td class=\"n\">1.25</td>"));
    assert_non_null(
        strstr(html, "</table></div>\n<p class=\"note\">counts &lt;jobs&gt; &amp; more</p>"));
    /* the table scrolls in its box, headers wrap, rather than run off the page */
    assert_non_null(strstr(html, "<div class=\"tw\"><table>"));
    assert_non_null(strstr(html, ".tw{max-width:100%;overflow-x:auto}"));
    /* each legend lists the outcomes its section has ("ok" always): every one in the
     * first, only "ok" in the second (a simulated run has no cancelled or running) */
    assert_int_equal(count(html, "<i class=\"sw ok\"></i>ok</span>"), 2);
    assert_int_equal(count(html, "<i class=\"sw oom\"></i>OOM crash</span>"), 1);
    assert_int_equal(count(html, "<i class=\"sw fail\"></i>failed</span>"), 1);
    assert_int_equal(count(html, "<i class=\"sw cancel\"></i>cancelled</span>"), 1);
    assert_int_equal(count(html, "<i class=\"sw run\"></i>running</span>"), 1);
    assert_non_null(strstr(html, "trace a&amp;b.csv"));
    assert_null(strstr(html, "<sim>"));
    assert_null(strstr(html, "<auto>"));
    assert_null(strstr(html, "<a100>"));
    assert_null(strstr(html, "<50>"));
    assert_null(strstr(html, "bert&co"));
    /* self-contained: nothing fetched from elsewhere, no scripts */
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "src="));
    assert_null(strstr(html, "@import"));
    assert_null(strstr(html, "url("));
    assert_null(strstr(html, "<link"));
    /* the time axis in hours and minutes, the y units */
    assert_non_null(strstr(html, ">1h30m</text>"));
    assert_non_null(strstr(html, ">400 W</text>"));
    assert_non_null(strstr(html, ">100%</text>"));
    assert_non_null(strstr(html, "40 GiB"));
    assert_null(strstr(html, "GPUs shown"));     /* nothing capped */
    assert_null(strstr(html, "class=\"endl\"")); /* both runs end at the axis' end */
    free(html);

    /* deterministic: same input, same bytes */
    size_t len2;
    char *again = render("carma <sim> & \"t\"", "trace a&b.csv", &tb, sec, 2, &len2);
    char *html2 = render("carma <sim> & \"t\"", "trace a&b.csv", &tb, sec, 2, &len);
    assert_int_equal(len, len2);
    assert_memory_equal(again, html2, len);
    free(again);
    free(html2);
    for (int s = 0; s < 2; s++)
        for (int g = 0; g < NG; g++)
            gpu_data_free(&d[s][g]);
}

static void test_same_bytes_in_any_locale(void **state)
{
    (void)state;
    struct gpu_data d;
    struct carma_report_series se;
    gpu_data_fill(&d, &se, "GPU 0", 300, 1234.5, 3);
    const struct carma_report_bar bars[] = {{0, 10.25, 700.75, 1, "x", CARMA_REPORT_OK}};
    struct carma_report_section sec = {"s", 1234.5, 1, &se, 1, bars, 0, 0, 0, 0, 0};
    size_t la, lb;
    char *a = render("t", NULL, NULL, &sec, 1, &la);
    static const char *const comma[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                        "de_DE",       "fr_FR",      "ru_RU.UTF-8"};
    const char *got = NULL;
    for (size_t i = 0; !got && i < sizeof comma / sizeof comma[0]; i++)
        got = setlocale(LC_ALL, comma[i]);
    char *b = render("t", NULL, NULL, &sec, 1, &lb);
    setlocale(LC_ALL, "C");
    if (!got)
        print_message("(no decimal-comma locale installed: compared in C only)\n");
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    gpu_data_free(&d);
}

static void test_downsample_bound_and_extremes(void **state)
{
    (void)state;
    enum { N = 200000, NB = CARMA_REPORT_MAX_POINTS / 2 };
    double *t = malloc(N * sizeof *t), *ot = malloc(4 * NB * sizeof *ot);
    float *v = malloc(N * sizeof *v), *ov = malloc(4 * NB * sizeof *ov);
    assert_true(t && v && ot && ov);
    unsigned x = 7;
    for (size_t i = 0; i < N; i++) {
        x = x * 1103515245u + 12345u;
        t[i] = (double)i * 0.5;
        v[i] = (float)((x >> 8) % 100000);
        if (i % 7919 == 0)
            v[i] = -1; /* absent now and then */
    }
    v[12345] = 1e6f; /* a spike the drawing must keep */
    v[54321] = 0.0f;
    double t1 = (double)(N - 1) * 0.5;
    size_t n = carma_svg_series_downsample(t, v, N, 0, t1, NB, ot, ov);
    assert_true(n <= 4 * NB);
    size_t present = 0, breaks = 0;
    int spike = 0;
    for (size_t i = 0; i < n; i++) {
        if (ov[i] >= 0)
            present++;
        else
            breaks++;
        if (ov[i] == 1e6f)
            spike = 1;
        if (i)
            assert_true(ot[i] >= ot[i - 1]);
    }
    assert_true(present <= CARMA_REPORT_MAX_POINTS);
    assert_true(spike);
    assert_true(breaks >= 1);
    /* every bucket's min and max are kept */
    double per = NB / t1;
    for (size_t b = 0; b < NB; b += 97) {
        float mn = INFINITY, mx = -INFINITY, omn = INFINITY, omx = -INFINITY;
        for (size_t i = 0; i < N; i++) {
            size_t bi = (size_t)(t[i] * per);
            if (bi >= NB)
                bi = NB - 1;
            if (bi == b && v[i] >= 0) {
                mn = fminf(mn, v[i]);
                mx = fmaxf(mx, v[i]);
            }
        }
        for (size_t i = 0; i < n; i++) {
            size_t bi = (size_t)(ot[i] * per);
            if (bi >= NB)
                bi = NB - 1;
            if (bi == b && ov[i] >= 0) {
                omn = fminf(omn, ov[i]);
                omx = fmaxf(omx, ov[i]);
            }
        }
        assert_true(mn == omn && mx == omx);
    }
    /* short series are copied as they are */
    n = carma_svg_series_downsample(t, v, 10, 0, 4.5, NB, ot, ov);
    assert_int_equal(n, 10);
    assert_true(ot[3] == t[3] && ov[3] == v[3]);
    /* out-of-order times never overflow the output */
    for (size_t i = 0; i < N; i++)
        t[i] = (double)((i * 7919) % N);
    n = carma_svg_series_downsample(t, v, N, 0, N, NB, ot, ov);
    assert_true(n <= 4 * NB);
    free(t);
    free(v);
    free(ot);
    free(ov);
}

/* The numbers in one path's d attribute. */
static size_t path_numbers(const char *d)
{
    size_t n = 0;
    for (const char *p = d; *p && *p != '"';) {
        if ((*p >= '0' && *p <= '9') || *p == '-') {
            n++;
            while ((*p >= '0' && *p <= '9') || *p == '-' || *p == '.')
                p++;
        } else {
            p++;
        }
    }
    return n;
}

static void test_caps_on_a_large_run(void **state)
{
    (void)state;
    enum { NG = 1024, NBARS = 100000, NPTS = 20000, BIG = 8 };
    struct gpu_data *d = calloc(NG, sizeof *d);
    struct carma_report_series *se = calloc(NG, sizeof *se);
    struct carma_report_bar *bars = calloc(NBARS, sizeof *bars);
    assert_true(d && se && bars);
    /* a few GPUs with long series, the rest short: only the first ones are drawn */
    for (size_t g = 0; g < NG; g++)
        gpu_data_fill(&d[g], &se[g], "GPU h100-80gb", g < BIG ? NPTS : 50, 86400, (unsigned)g);
    for (size_t i = 0; i < NBARS; i++) {
        double s = (double)(i / NG) * 86400.0 / (NBARS / NG + 1);
        bars[i] = (struct carma_report_bar){(uint32_t)(i % NG),
                                            s,
                                            s + 900 + (double)(i % 5) * 60,
                                            i,
                                            "llama-7b-finetune",
                                            (enum carma_report_outcome)(i % 5)};
    }
    struct carma_report_section sec = {"auto", 86400, NG, se, NBARS, bars, 0, 0, 0, 0, 0};
    size_t len;
    char *html = render("big", NULL, NULL, &sec, 1, &len);
    assert_non_null(strstr(html, "first 32 of 1024 GPUs shown"));
    assert_int_equal(count(html, "<svg"), 4);
    assert_true(len < 4u << 20);
    /* series bounded: no path has more than ~2 numbers per point */
    size_t paths = 0;
    for (const char *p = strstr(html, " d=\""); p; p = strstr(p + 4, " d=\"")) {
        assert_true(path_numbers(p + 4) <= 2 * CARMA_REPORT_MAX_POINTS + 8);
        paths++;
    }
    assert_int_equal(paths, 3 * 32);
    assert_non_null(strstr(html, "runs on GPUs not shown are not drawn"));
    free(html);

    /* Many sections share the page: fewer GPUs each, never fewer than 4. */
    struct carma_report_section many[12];
    for (size_t i = 0; i < 12; i++)
        many[i] = sec;
    html = render("many", NULL, NULL, many, 12, &len);
    assert_int_equal(count(html, "first 8 of 1024 GPUs shown"), 12);
    assert_true(len < 8u << 20);
    free(html);

    /* 100,000 short jobs on 4 GPUs: merged into marks a few pixels wide, bounded. */
    for (size_t i = 0; i < NBARS; i++) {
        bars[i].gpu = (uint32_t)(i % 4);
        bars[i].start_s = (double)(i / 4) * 3.0;
        bars[i].end_s = bars[i].start_s + 2.5 + (double)(i % 3);
    }
    sec.ngpus = 4;
    sec.t_end_s = (double)(NBARS / 4) * 3.0 + 10;
    html = render("dense", NULL, NULL, &sec, 1, &len);
    assert_null(strstr(html, "GPUs shown"));
    assert_non_null(strstr(html, "runs shorter than a pixel are drawn merged"));
    size_t marks = count(html, "<rect class=\"") - count(html, "<rect class=\"bg\"");
    assert_true(marks <= MAX_MARKS_FOR_TEST);
    assert_true(marks > 100);
    assert_true(len < 4u << 20);
    /* every merged mark still names the worst outcome: OOM is there */
    assert_true(count(html, "<rect class=\"oom\"") > 0);
    free(html);

    for (size_t g = 0; g < NG; g++)
        gpu_data_free(&d[g]);
    free(d);
    free(se);
    free(bars);
}

/* A caller that gives only the drawn GPUs' series and bars, with the count of the runs it
 * left out, gets the same page as one that gives every GPU's (carma sim records only
 * the drawn GPUs: on 65,535 GPUs every timeline took 3.8 GB). */
static void test_drawn_gpus_only_same_page(void **state)
{
    (void)state;
    enum { NG = 300, NBARS = 3000, NSEC = 12 };
    struct gpu_data *d = calloc(NG, sizeof *d);
    struct carma_report_series *se = calloc(NG, sizeof *se);
    struct carma_report_bar *bars = calloc(NBARS, sizeof *bars);
    struct carma_report_bar *kept = calloc(NBARS, sizeof *kept);
    assert_true(d && se && bars && kept);
    for (size_t g = 0; g < NG; g++)
        gpu_data_fill(&d[g], &se[g], "GPU a100-40gb", 40 + g % 7, 36000, (unsigned)g);
    for (size_t i = 0; i < NBARS; i++) {
        double s = (double)(i % 97) * 300.0;
        bars[i] = (struct carma_report_bar){(uint32_t)(i * 7 % NG), s, s + 600, i, "w",
                                            (enum carma_report_outcome)(i % 2)};
    }
    assert_int_equal(carma_report_gpus_drawn(1, NG), CARMA_REPORT_MAX_GPUS);
    assert_int_equal(carma_report_gpus_drawn(NSEC, NG), 8);
    assert_int_equal(carma_report_gpus_drawn(NSEC, 3), 3);
    assert_int_equal(carma_report_gpus_drawn(200, NG), 4);
    for (size_t nsec = 1; nsec <= NSEC; nsec += NSEC - 1) {
        size_t shown = carma_report_gpus_drawn(nsec, NG), nkept = 0;
        for (size_t i = 0; i < NBARS; i++)
            if (bars[i].gpu < shown)
                kept[nkept++] = bars[i];
        struct carma_report_section full[NSEC], part[NSEC];
        for (size_t k = 0; k < nsec; k++) {
            full[k] = (struct carma_report_section){"auto", 0, NG, se, NBARS, bars, 0, 0, 0, 0, 0};
            part[k] = (struct carma_report_section){"auto",        0, NG, se, nkept, kept, shown,
                                                    NBARS - nkept, 0, 0,  0};
        }
        size_t lf, lp;
        char *a = render("t", NULL, NULL, full, nsec, &lf);
        char *b = render("t", NULL, NULL, part, nsec, &lp);
        assert_int_equal(lf, lp);
        assert_memory_equal(a, b, lf);
        assert_non_null(strstr(a, "runs on GPUs not shown are not drawn"));
        free(a);
        free(b);
    }
    for (size_t g = 0; g < NG; g++)
        gpu_data_free(&d[g]);
    free(d);
    free(se);
    free(bars);
    free(kept);
}

/* "N job runs" and "runs on GPUs not shown" count runs, not bars: a multi-GPU run has a
 * bar on each of its GPUs (the audit's or-rr case: 1 run of B, a 2-GPU T2B that crashed,
 * its rerun: 3 runs, 5 bars). On 40 GPUs, of which 32 are drawn, a 2-GPU run on GPUs
 * 31 and 33 is drawn (on 31); one on 34 and 35 is not, and counts once. */
static void test_counts_runs_not_bars(void **state)
{
    (void)state;
    enum { NG = 40 };
    struct gpu_data *d = calloc(NG, sizeof *d);
    struct carma_report_series *se = calloc(NG, sizeof *se);
    assert_true(d && se);
    for (size_t g = 0; g < NG; g++)
        gpu_data_fill(&d[g], &se[g], "GPU a100-40gb", 10, 7200, (unsigned)g);
    const struct carma_report_bar bars[] = {
        {0, 0, 3600, 1, "B", CARMA_REPORT_OK},      {0, 100, 120, 2, "T2B", CARMA_REPORT_OOM},
        {1, 100, 120, 2, "T2B", CARMA_REPORT_OOM},  {0, 3600, 7200, 2, "T2B", CARMA_REPORT_OK},
        {1, 3600, 7200, 2, "T2B", CARMA_REPORT_OK},
    };
    struct carma_report_section sec = {"or-rr", 7200, 2, se, 5, bars, 0, 0, 0, 0, 0};
    size_t len;
    char *html = render(NULL, NULL, NULL, &sec, 1, &len);
    assert_non_null(strstr(html, "2 GPUs, 3 job runs over"));
    free(html);
    const struct carma_report_bar wide[] = {
        {31, 0, 3600, 1, "a", CARMA_REPORT_OK}, {33, 0, 3600, 1, "a", CARMA_REPORT_OK},
        {34, 0, 3600, 2, "b", CARMA_REPORT_OK}, {35, 0, 3600, 2, "b", CARMA_REPORT_OK},
        {0, 0, 3600, 3, "c", CARMA_REPORT_OK},
    };
    /* and 2 runs the caller left out, whose GPUs are all past the series given */
    sec = (struct carma_report_section){"auto", 7200, NG, se, 5, wide, NG, 2, 0, 0, 0};
    html = render(NULL, NULL, NULL, &sec, 1, &len);
    assert_non_null(strstr(html, "40 GPUs, 5 job runs over"));
    assert_non_null(strstr(html, "first 32 of 40 GPUs shown"));
    assert_non_null(strstr(html, ">3 runs on GPUs not shown are not drawn"));
    free(html);
    /* a merged mark of one job's attempts (an OOM retried at once) counts runs of it */
    const struct carma_report_bar tiny[] = {
        {0, 100, 100.1, 2, "r", CARMA_REPORT_OOM},    {0, 100.2, 100.3, 2, "r", CARMA_REPORT_OOM},
        {0, 100.4, 100.5, 2, "r", CARMA_REPORT_OOM},  {0, 3000, 3000.1, 4, "s", CARMA_REPORT_OK},
        {0, 3000.2, 3000.3, 5, "t", CARMA_REPORT_OK},
    };
    sec = (struct carma_report_section){"auto", 7200, 1, se, 5, tiny, 0, 0, 0, 0, 0};
    html = render(NULL, NULL, NULL, &sec, 1, &len);
    assert_non_null(strstr(html, "<title>3 runs of job 2, each shorter than a pixel\n"));
    assert_non_null(strstr(html, "<title>2 runs, each shorter than a pixel (jobs 4 to 5)\n"));
    free(html);
    for (size_t g = 0; g < NG; g++)
        gpu_data_free(&d[g]);
    free(d);
    free(se);
}

static void test_late_runs_greyed_and_counted(void **state)
{
    (void)state;
    /* A long run's recorder keeps the bars of the runs that started before some time
     * only (CARMA_REPORT_KEEP_BARS): the page counts the others, says from when none is
     * drawn and greys that span; a section with none left out draws as before. */
    struct gpu_data d[2];
    struct carma_report_series se[2];
    for (size_t g = 0; g < 2; g++)
        gpu_data_fill(&d[g], &se[g], "GPU a100-40gb", 10, 7200, (unsigned)g);
    const struct carma_report_bar bars[] = {
        {0, 0, 3600, 1, "B", CARMA_REPORT_OK},
        {1, 100, 4000, 2, "C", CARMA_REPORT_OK},
    };
    struct carma_report_section sec = {"auto", 7200, 2, se, 2, bars, 0, 0, 0, 3000, 0};
    size_t len0, len1;
    char *before = render(NULL, NULL, NULL, &sec, 1, &len0);
    assert_null(strstr(before, "(grey)"));
    assert_null(strstr(before, "not recorded"));
    assert_non_null(strstr(before, "2 GPUs, 2 job runs over"));
    sec.nruns_late = 7;
    char *html = render(NULL, NULL, NULL, &sec, 1, &len1);
    assert_non_null(strstr(html, "2 GPUs, 9 job runs over"));
    assert_non_null(strstr(html, "<p class=\"note\">7 runs that started from 50m00s on are not "
                                 "drawn (grey): a long run's recording keeps the bars of its "
                                 "first 2 runs or so"));
    /* the grey span: from 3000 s (x = 196 + 960 * 3000 / 7200 = 596) to the run's end */
    assert_non_null(strstr(html, "<g><rect fill=\"#8c959f\" fill-opacity=\".18\" x=\"596\""));
    assert_non_null(strstr(html, " width=\"560\""));
    assert_non_null(strstr(html, "<title>7 runs that started here or later are not drawn</title>"));
    assert_non_null(strstr(html, ">runs not recorded</text>"));
    assert_int_equal(count(html, "<title>job "), 2);
    free(before);
    free(html);
    for (size_t g = 0; g < 2; g++)
        gpu_data_free(&d[g]);
}

static void test_compacted_series_said(void **state)
{
    (void)state;
    /* A long run's recorder compacts its series to each time bucket's extremes
     * (CARMA_REPORT_KEEP_POINTS, sim_timeline.series_step): the page says so beside the
     * charts, with the bucket's width; a section whose series are whole says nothing. */
    struct gpu_data d;
    struct carma_report_series se;
    gpu_data_fill(&d, &se, "GPU a100-40gb", 10, 7200, 0);
    struct carma_report_section sec = {.title = "auto", .t_end_s = 7200, .ngpus = 1, .gpus = &se};
    size_t len;
    char *whole = render(NULL, NULL, NULL, &sec, 1, &len);
    assert_null(strstr(whole, "a long run"));
    free(whole);
    static const struct {
        double step;
        const char *says;
    } cases[] = {
        {1024, "within 1,024 s (17m04s), to bound"},
        {0.5, "within 0.5 s, to bound"},
        {2097152, "within 2,097,152 s (24d06h32m), to bound"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sec.series_step_s = cases[i].step;
        char *html = render(NULL, NULL, NULL, &sec, 1, &len);
        const char *note = strstr(html, "<p class=\"note\">a long run: in the charts below "
                                        "each point is the lowest or the highest value ");
        assert_non_null(note);
        assert_non_null(strstr(note, cases[i].says));
        /* beside the charts: after the Gantt chart, before the first series chart */
        assert_true(note > strstr(html, "<h3>Jobs per GPU"));
        assert_true(note < strstr(html, "<h3>Memory in use"));
        assert_int_equal(count(html, "a long run: in the charts"), 1);
        free(html);
    }
    gpu_data_free(&d);
}

static void test_absent_data_and_edge_cases(void **state)
{
    (void)state;
    double t[] = {0, 10, 20, 30};
    float mem[] = {0, 100, 200, 0};
    float smact_absent[] = {-1, -1, -1, -1};
    struct carma_report_series se[2] = {
        {"no smact", 1000, 300, 4, t, mem, smact_absent, NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL, NULL},
    };
    const struct carma_report_bar bars[] = {
        {0, 5, 2, 1, "backwards", CARMA_REPORT_OK},    /* end before start */
        {7, 0, 10, 2, "unknown gpu", CARMA_REPORT_OK}, /* skipped, said */
        {0, NAN, 10, 3, "nan", CARMA_REPORT_OK},       /* skipped, said */
        {1, 0, 10, 4, "odd outcome", (enum carma_report_outcome)99},
    };
    struct carma_report_section sec[2] = {
        {"edge", 0 /* taken from the data */, 2, se, 4, bars, 0, 0, 0, 0, 0},
        {"empty", 100, 0, NULL, 0, NULL, 0, 0, 0, 0, 0},
    };
    size_t len;
    char *html = render(NULL, NULL, NULL, sec, 2, &len);
    assert_non_null(strstr(html, "no data"));
    assert_non_null(strstr(html, "2 runs with an unknown GPU or time skipped"));
    assert_non_null(strstr(html, "no GPUs in this run"));
    /* one time axis for the page (the empty run's 100 s): the edge run ends at 30 s */
    assert_int_equal(count(html, "class=\"endl\""), 4);
    assert_non_null(strstr(html, "same time axis, 0 to 1m40s"));
    assert_int_equal(count(html, "<svg"), 4);
    assert_int_equal(count(html, "<rect class=\"fail\""), 1);
    assert_null(strstr(html, "nan"));
    assert_null(strstr(html, "inf"));
    free(html);
}

static void test_lanes_show_collocation(void **state)
{
    (void)state;
    double t[] = {0, 100};
    float v[] = {0, 0};
    struct carma_report_series se[2] = {{"busy", 1000, 300, 2, t, v, v, v},
                                        {"two", 1000, 300, 2, t, v, v, v}};
    enum { N = 20 };
    struct carma_report_bar bars[N + 3];
    for (size_t i = 0; i < N; i++) /* 20 jobs at once on GPU 0 */
        bars[i] = (struct carma_report_bar){0, (double)i, 90, i, "x", CARMA_REPORT_OK};
    /* GPU 1: two back to back share one lane, a third overlaps both: two lanes */
    bars[N] = (struct carma_report_bar){1, 0, 50, 100, "a", CARMA_REPORT_OK};
    bars[N + 1] = (struct carma_report_bar){1, 50, 100, 101, "b", CARMA_REPORT_OK};
    bars[N + 2] = (struct carma_report_bar){1, 40, 60, 102, "c", CARMA_REPORT_OOM};
    struct carma_report_section sec = {"lanes", 100, 2, se, N + 3, bars, 0, 0, 0, 0, 0};
    char *html = render("t", NULL, NULL, &sec, 1, NULL);
    assert_non_null(strstr(html, "20 runs, 16+ at once"));
    assert_non_null(strstr(html, "more than 16 jobs ran at once"));
    assert_non_null(strstr(html, "3 runs, up to 2 at once"));
    assert_int_equal(count(html, "<title>job "), N + 3);
    free(html);
}

static void test_text_numbers_and_times(void **state)
{
    (void)state;
    char b[64];
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    assert_non_null(f);
    carma_svg_text_write(f,
                         "a\x01"
                         "b\xff"
                         "c\xc3\xa9<",
                         0);
    fputc('|', f);
    carma_svg_text_write(f,
                         "\xe2\x82\xac"
                         "abcdef",
                         4);
    fputc('|', f);
    carma_svg_text_write(f,
                         "\xed\xa0\x80"
                         "\xc2\x85",
                         0); /* surrogate, C1 control */
    fclose(f);
    assert_string_equal(out, "a\xef\xbf\xbd"
                             "b\xef\xbf\xbd"
                             "c\xc3\xa9&lt;|"
                             "\xe2\x82\xac"
                             "ab\xe2\x80\xa6|"
                             "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    free(out);
    assert_int_equal(carma_svg_text_chars("\xe2\x82\xac"
                                          "ab"),
                     3);

    carma_svg_num_format(b, sizeof b, 12.5, 1);
    assert_string_equal(b, "12.5");
    carma_svg_num_format(b, sizeof b, 3.0, 1);
    assert_string_equal(b, "3");
    carma_svg_num_format(b, sizeof b, -0.25, 2);
    assert_string_equal(b, "-0.25");
    carma_svg_num_format(b, sizeof b, -0.04, 1);
    assert_string_equal(b, "0");
    carma_svg_num_format(b, sizeof b, 0.05, 2);
    assert_string_equal(b, "0.05");
    carma_svg_num_format(b, sizeof b, NAN, 1);
    assert_string_equal(b, "0");
    carma_svg_num_format(b, sizeof b, 1e300, 1);
    assert_string_equal(b, "1000000000000");

    carma_svg_duration_format(b, sizeof b, 12.34);
    assert_string_equal(b, "12.3s");
    carma_svg_duration_format(b, sizeof b, 185);
    assert_string_equal(b, "3m05s");
    carma_svg_duration_format(b, sizeof b, 3723);
    assert_string_equal(b, "1h02m03s");
    carma_svg_duration_format(b, sizeof b, 3 * 86400 + 4 * 3600 + 5 * 60);
    assert_string_equal(b, "3d04h05m");

    assert_true(carma_svg_tick_step(7200, 10) == 900);
    assert_true(carma_svg_tick_step(50, 10) == 5);
    assert_true(carma_svg_tick_step(30 * 86400, 10) == 604800);
    assert_true(carma_svg_tick_step(1e9, 10) * 10 >= 1e9);
    carma_svg_tick_format(b, sizeof b, 5400, 900);
    assert_string_equal(b, "1h30m");
    carma_svg_tick_format(b, sizeof b, 3600, 900);
    assert_string_equal(b, "1h");
    carma_svg_tick_format(b, sizeof b, 90, 30);
    assert_string_equal(b, "1m30s");
    carma_svg_tick_format(b, sizeof b, 0, 30);
    assert_string_equal(b, "0");
    carma_svg_tick_format(b, sizeof b, 2 * 86400 + 12 * 3600, 43200 * 2);
    assert_string_equal(b, "2d12h");
}

static void test_write_error_is_eio(void **state)
{
    (void)state;
    FILE *f = fopen("/dev/full", "w");
    if (!f) {
        skip();
        return;
    }
    struct carma_report_section sec = {"s", 10, 0, NULL, 0, NULL, 0, 0, 0, 0, 0};
    struct carma_err err = {{0}};
    assert_int_equal(carma_report_write_html(f, "t", NULL, NULL, &sec, 1, &err), -EIO);
    assert_non_null(strstr(err.msg, "write failed: No space left on device"));
    fclose(f);
}

/* A stream whose first write fails (EIO), and whose later writes succeed but change
 * errno, as a successful call may (C17 7.5p3): an isatty's ENOTTY. */
static ssize_t flaky_write(void *c, const char *buf, size_t n)
{
    (void)buf;
    int *calls = c;
    if ((*calls)++ == 0) {
        errno = EIO;
        return 0;
    }
    errno = ENOTTY;
    return (ssize_t)n;
}

/* The message names no errno but the failing call's: here none, the failed write long
 * past when the page ends (its cause is the caller's to keep, as cli_outfile does). */
static void test_write_error_no_stale_errno(void **state)
{
    (void)state;
    int calls = 0;
    cookie_io_functions_t io = {.write = flaky_write};
    FILE *f = fopencookie(&calls, "w", io);
    assert_non_null(f);
    char vbuf[256]; /* small: the page's end is written well after the failure */
    setvbuf(f, vbuf, _IOFBF, sizeof vbuf);
    struct carma_report_section sec = {"s", 10, 0, NULL, 0, NULL, 0, 0, 0, 0, 0};
    struct carma_err err = {{0}};
    assert_int_equal(carma_report_write_html(f, "t", NULL, NULL, &sec, 1, &err), -EIO);
    assert_true(calls > 1);
    assert_non_null(strstr(err.msg, "write failed"));
    assert_null(strstr(err.msg, strerror(ENOTTY)));
    fclose(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_structure_bars_and_escaping),
        cmocka_unit_test(test_same_bytes_in_any_locale),
        cmocka_unit_test(test_downsample_bound_and_extremes),
        cmocka_unit_test(test_caps_on_a_large_run),
        cmocka_unit_test(test_drawn_gpus_only_same_page),
        cmocka_unit_test(test_counts_runs_not_bars),
        cmocka_unit_test(test_late_runs_greyed_and_counted),
        cmocka_unit_test(test_compacted_series_said),
        cmocka_unit_test(test_absent_data_and_edge_cases),
        cmocka_unit_test(test_lanes_show_collocation),
        cmocka_unit_test(test_text_numbers_and_times),
        cmocka_unit_test(test_write_error_is_eio),
        cmocka_unit_test(test_write_error_no_stale_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
