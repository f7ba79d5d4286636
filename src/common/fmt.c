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

const char *fmt_time_utc(int64_t ns, char *buf, size_t cap)
{
    time_t t = (time_t)(ns / 1000000000LL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}
