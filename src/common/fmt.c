#include "common/fmt.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

const char *fmt_bytes(double bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    if (!isfinite(bytes)) {
        snprintf(buf, cap, "%s", isinf(bytes) ? "unlimited" : "-");
        return buf;
    }
    int u = 0;
    double v = bytes;
    while (fabs(v) >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%.0f B", v);
    else
        snprintf(buf, cap, "%.*f %s", fabs(v) < 10 ? 2 : 1, v, units[u]);
    return buf;
}

const char *fmt_ns(double ns, char *buf, size_t cap)
{
    if (!isfinite(ns))
        snprintf(buf, cap, "-");
    else if (fabs(ns) < 1e3)
        snprintf(buf, cap, "%.0fns", ns);
    else if (fabs(ns) < 1e6)
        snprintf(buf, cap, "%.3gus", ns / 1e3);
    else if (fabs(ns) < 1e9)
        snprintf(buf, cap, "%.3gms", ns / 1e6);
    else
        snprintf(buf, cap, "%.3gs", ns / 1e9);
    return buf;
}

const char *fmt_duration(double s, char *buf, size_t cap)
{
    if (!isfinite(s) || s < 0)
        snprintf(buf, cap, "-");
    else if (s < 1)
        snprintf(buf, cap, "%.0fms", s * 1e3);
    else if (s < 60)
        snprintf(buf, cap, "%.1fs", s);
    else if (s < 3600)
        snprintf(buf, cap, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, cap, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
    return buf;
}

static int put_clock(char *buf, size_t cap, long long s, int hours)
{
    if (hours)
        return snprintf(buf, cap, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    return snprintf(buf, cap, "%lld:%02lld", s / 60, s % 60);
}

const char *fmt_offset_range(double from_s, double to_s, char *buf, size_t cap)
{
    if (!isfinite(from_s) || !isfinite(to_s)) {
        snprintf(buf, cap, "-");
        return buf;
    }
    from_s = from_s > 0 ? from_s : 0; /* a finding never starts before its run */
    to_s = to_s > from_s ? to_s : from_s;
    /* tenths while the whole range is under a minute: a 2 s run's finding
     * over "0-2 s" hid where in it the rule fired */
    if (to_s < 59.95) {
        snprintf(buf, cap, "%.1f-%.1f s", from_s, to_s);
        return buf;
    }
    long long a = llround(from_s), b = llround(to_s);
    int hours = b >= 3600;
    int n = put_clock(buf, cap, a, hours);
    if (n >= 0 && (size_t)n < cap) {
        buf[n] = '-';
        put_clock(buf + n + 1, cap - (size_t)n - 1, b, hours);
    }
    return buf;
}

const char *fmt_time_utc(int64_t ns, char *buf, size_t cap)
{
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}
