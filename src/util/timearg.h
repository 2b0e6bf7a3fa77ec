/* Time arguments of the command line (`carma usage --since`, `carma report --until`):
 * a point in time given by people, parsed strictly. */
#ifndef CARMA_UTIL_TIMEARG_H
#define CARMA_UTIL_TIMEARG_H

#include <stddef.h>
#include <stdint.h>

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

/* Parses s, a length of time given by people (`carma submit --time-limit`), into
 * seconds. Accepted forms:
 *   N<unit>...        one or more groups of digits each followed by a unit, d (days),
 *                     h (hours), m (minutes), s (seconds), each unit at most once and in
 *                     that order: "90s", "45m", "2h", "1d12h", "1h30m", "2h0m5s"
 * A bare number is refused (Slurm's --time reads it as minutes, a shell user as seconds).
 * No sign, space, fraction or other text. The result must lie in [lo, hi]. Anything else
 * is refused with err naming the argument and the problem. Returns 0 or -EINVAL. */
int carma_duration_parse(const char *s, uint64_t lo, uint64_t hi, uint64_t *out,
                         struct carma_err *err);

/* Writes secs in the form carma_duration_parse reads back, largest units first, zero
 * groups left out ("1d12h", "90s" as "1m30s", 0 as "0s"), into buf (cap >= 24 holds any
 * uint64). Returns the length snprintf would. */
size_t carma_duration_format(char *buf, size_t cap, uint64_t secs);

#endif
