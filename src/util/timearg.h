/* Time arguments of the command line (`carma usage --since`, `carma report --until`):
 * a point in time given by people, parsed strictly. */
#ifndef CARMA_UTIL_TIMEARG_H
#define CARMA_UTIL_TIMEARG_H

#include "util/err.h"

#define CARMA_TIMEARG_MAX 64 /* longest accepted argument, bytes */

/* Parses s into seconds since the epoch. Accepted forms:
 *   now
 *   @EPOCH                      seconds since the epoch, digits (and a fraction)
 *   N[smhdw] or -N[smhdw]       that long before `now` ("90m", "-2h", "7d", "1w")
 *   YYYY-MM-DD                  local midnight
 *   YYYY-MM-DD[T| ]HH:MM[:SS]   local time
 * Anything else (trailing text, out-of-range fields, a result before 1970 or after
 * 9999) is refused with err naming the problem. Returns 0 or -EINVAL. */
int carma_time_parse(const char *s, double now, double *out, struct carma_err *err);

#endif
