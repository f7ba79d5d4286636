/* Human-readable numbers for terminal output. Each writes into buf and
 * returns it. */
#ifndef STROBE_COMMON_FMT_H
#define STROBE_COMMON_FMT_H

#include <stddef.h>
#include <stdint.h>

/* 1536 -> "1.5 KiB" */
const char *fmt_bytes(double bytes, char *buf, size_t cap);
/* 75.2 s -> "1m15s"; 3.25 -> "3.2s"; 0.1 -> "100ms" */
const char *fmt_duration(double seconds, char *buf, size_t cap);
/* A step-sized time in ns, three significant digits (step times are
 * compared by eye): 46012345 -> "46ms", 1234 -> "1.23us" */
const char *fmt_ns(double ns, char *buf, size_t cap);
/* A time range from a run's start, read as a clock: 0.04, 1.62 ->
 * "0.0-1.6 s"; past a minute whole seconds, 45, 130 -> "0:45-2:10"; past
 * an hour 3602, 3720 -> "1:00:02-1:02:00". The report and the dashboard
 * write a finding's range the same (web/common/format.js, offsetRange), so a
 * range read in `strobe show` is found on either page. */
const char *fmt_offset_range(double from_s, double to_s, char *buf, size_t cap);
/* ns since the epoch -> "2026-12-01 07:15:02" UTC */
const char *fmt_time_utc(int64_t ns, char *buf, size_t cap);

#endif
