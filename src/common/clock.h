/* Clocks. The store keeps int64 ns since the Unix epoch (UTC); intervals and
 * deadlines use CLOCK_MONOTONIC, which NTP steps cannot move. */
#ifndef STROBE_COMMON_CLOCK_H
#define STROBE_COMMON_CLOCK_H

#include <stdint.h>

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S  1000000000LL

int64_t clock_realtime_ns(void);
int64_t clock_monotonic_ns(void);
/* CPU time of the calling thread / whole process, in ns. */
int64_t clock_thread_cpu_ns(void);
int64_t clock_process_cpu_ns(void);

/*
 * A plain decimal number at the start of text, as the command line takes
 * them: digits, optionally a point and more digits ("10", "0.5"); no sign,
 * space, exponent, hex, inf or nan. Returns the end of the number with
 * *out set, or NULL when text does not start with one.
 */
const char *decimal_parse(const char *text, double *out);

/*
 * Parse a duration: a decimal_parse() number with a unit suffix "ns", "us",
 * "ms", "s", "m" right after it (a bare number means milliseconds), nothing
 * else. Returns 0 and *out_ns, or -EINVAL.
 */
int duration_parse(const char *text, int64_t *out_ns);

#endif
