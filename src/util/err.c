#include "util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

int carma_err_at(struct carma_err *err, const char *file, size_t line, const char *fmt, ...)
{
    if (!err)
        return -EINVAL;
    int n = 0;
    if (file && line)
        n = snprintf(err->msg, sizeof err->msg, "%s:%zu: ", file, line);
    else if (file)
        n = snprintf(err->msg, sizeof err->msg, "%s: ", file);
    if (n < 0 || (size_t)n >= sizeof err->msg)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg + n, sizeof err->msg - (size_t)n, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

int carma_err_set(struct carma_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}
