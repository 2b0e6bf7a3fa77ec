/* The monotonic clock, in seconds, for what measures intervals outside the core (the
 * core reads no clock: its callers pass the time in). */
#ifndef CARMA_UTIL_CLOCK_H
#define CARMA_UTIL_CLOCK_H

/* CLOCK_MONOTONIC in seconds: for deadlines, timeouts and durations, never dates. */
double carma_mono_s(void);

#endif
