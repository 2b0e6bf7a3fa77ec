/* Drawing primitives of the report module: escaped text, locale-free numbers, time
 * labels, axis ticks and min/max-preserving downsampling of a time series. Private to
 * src/report/ (and its tests); everything writes to a stdio stream whose error flag
 * the caller checks once at the end. */
#ifndef CARMA_REPORT_SVG_H
#define CARMA_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

/* Writes s HTML-escaped (& < > " ' as entities), fit for text and for attribute values
 * in double quotes. Control characters other than tab and newline, and bytes that are
 * not valid UTF-8, become U+FFFD, so the page is always valid UTF-8. NULL writes
 * nothing. With max_chars > 0, at most that many characters are written and a cut
 * string ends in an ellipsis (counted in max_chars). */
void carma_svg_text_write(FILE *f, const char *s, size_t max_chars);

/* Number of characters (UTF-8 code points, invalid bytes counting one each) of s. */
size_t carma_svg_text_chars(const char *s);

/* Formats v with at most `decimals` (0..6) digits after the point, trailing zeros
 * and a bare point dropped ("12.5", "3", "-0.25"), independently of the C locale.
 * Non-finite values are written as "0", magnitudes above 1e12 as +-1e12.
 * Returns the length written (always NUL-terminated when cap > 0). */
size_t carma_svg_num_format(char *buf, size_t cap, double v, int decimals);

/* carma_svg_num_format straight to f. */
void carma_svg_num_write(FILE *f, double v, int decimals);

/* A duration for people: "12.5s", "3m05s", "1h02m03s", "2d03h04m" (days past 48 h).
 * Negative and non-finite values are written as "0s". Returns the length. */
size_t carma_svg_duration_format(char *buf, size_t cap, double s);

/* An axis label for t seconds on an axis whose ticks are `step` apart: "0", "30m",
 * "1h", "1h30m", "2d", "2d12h"; seconds only when step is below a minute. */
size_t carma_svg_tick_format(char *buf, size_t cap, double t, double step);

/* A tick spacing in seconds from a fixed list of round durations (1, 2, 5, 10, 15,
 * 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6, 12 h, 1, 2, 7 d, then doublings) giving
 * at most max_ticks intervals over span_s. span_s <= 0 or non-finite gives 1. */
double carma_svg_tick_step(double span_s, int max_ticks);

/* Downsamples (t[i], v[i]) over [t0, t1] into nbuckets equal time buckets, keeping
 * each bucket's minimum and maximum in time order, so that the drawn envelope is the
 * same as the full series' at one bucket per pixel. A value that is negative or not
 * a number is "absent" and breaks the line: the output carries a point with v = -1
 * there. Points with a non-finite time are skipped; times outside [t0, t1] count in
 * the first or last bucket. When n <= 2 * nbuckets the series is copied as is.
 *
 * out_t and out_v must hold 4 * nbuckets entries (and n when n <= 2 * nbuckets).
 * Returns the number of points written; at most 2 * nbuckets of them are present
 * (v >= 0). nbuckets must be >= 1 and t1 > t0. */
size_t carma_svg_series_downsample(const double *t, const float *v, size_t n, double t0, double t1,
                                   size_t nbuckets, double *out_t, float *out_v);

#endif
