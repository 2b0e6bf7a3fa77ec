/* Error reports that name the place: "FILE:LINE: problem". Library code fills a
 * struct carma_err and returns a negative errno-style code; only main() prints. */
#ifndef CARMA_UTIL_ERR_H
#define CARMA_UTIL_ERR_H

#include <stddef.h>

#define CARMA_ERR_MAX 1024

struct carma_err {
    char msg[CARMA_ERR_MAX];
};

/* Sets err->msg to "file:line: fmt..." (file may be NULL, line 0 omits the line); a
 * message longer than CARMA_ERR_MAX is cut at a whole UTF-8 character.
 * Returns -EINVAL so that parsers can `return carma_err_at(...)`. Safe with err NULL. */
int carma_err_at(struct carma_err *err, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets err->msg from fmt (cut at a whole UTF-8 character when too long); returns
 * `code` unchanged (a negative errno). */
int carma_err_set(struct carma_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A value read from an input, safe to quote in a message: at most `max` bytes of s
 * (max <= CARMA_QUOTE_MAX), with control characters (C0, DEL, C1), backslash and bytes
 * that start no well-formed UTF-8 sequence written as \n, \r, \t, \\ or \xNN, an
 * invisible byte order mark (U+FEFF) as \uFEFF, and "..." after a cut. Returned by
 * value: use .s within the same full expression, e.g.
 * carma_err_at(err, file, line, "model '%s'", carma_quote(v, 40).s). s may be NULL. */
#define CARMA_QUOTE_MAX 64
struct carma_quoted {
    char s[CARMA_QUOTE_MAX * 4 + 4];
};
struct carma_quoted carma_quote(const char *s, size_t max);

/* A number for a message, as %g writes it but with a plain exponent: 1e10, 2e-05 ->
 * 2e-5, 1e+308 -> 1e308. Returned by value, like carma_quote. */
struct carma_num {
    char s[32];
};
struct carma_num carma_num(double v);

/* Whether s holds a control character (C0, DEL, C1: what carma_quote escapes, a
 * backslash aside) or bytes that are not well-formed UTF-8. */
int carma_text_has_control(const char *s);

#endif
