/* Error reports that name the place: "FILE:LINE: problem". Library code fills a
 * struct carma_err and returns a negative errno-style code; only main() prints. */
#ifndef CARMA_UTIL_ERR_H
#define CARMA_UTIL_ERR_H

#include <stddef.h>

#define CARMA_ERR_MAX 512

struct carma_err {
    char msg[CARMA_ERR_MAX];
};

/* Sets err->msg to "file:line: fmt..." (file may be NULL, line 0 omits the line).
 * Returns -EINVAL so that parsers can `return carma_err_at(...)`. Safe with err NULL. */
int carma_err_at(struct carma_err *err, const char *file, size_t line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Sets err->msg from fmt; returns `code` unchanged (a negative errno). */
int carma_err_set(struct carma_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
