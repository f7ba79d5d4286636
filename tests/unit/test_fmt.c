/* The human-readable numbers of terminal output (common/fmt.c). */
#include <math.h>

#include "common/fmt.h"
#include "test.h"

static void range_of(double a, double b, const char *want)
{
    char buf[48];
    ASSERT_EQ_STR(fmt_offset_range(a, b, buf, sizeof(buf)), want);
}

TEST(offset_range_under_a_minute_in_tenths)
{
    range_of(0.04, 1.62, "0.0-1.6 s");
    range_of(12.25, 30, "12.2-30.0 s");
    range_of(0, 59.94, "0.0-59.9 s");
}

TEST(offset_range_past_a_minute_as_a_clock)
{
    range_of(45, 130, "0:45-2:10");
    range_of(10.2, 59.96, "0:10-1:00"); /* 59.96 would print "60.0" in tenths */
    range_of(599.6, 3599.4, "10:00-59:59");
}

TEST(offset_range_past_an_hour_with_hours)
{
    range_of(3602, 3720, "1:00:02-1:02:00");
    range_of(30, 3600, "0:00:30-1:00:00");
    range_of(86399, 90000, "23:59:59-25:00:00");
}

TEST(offset_range_odd_input)
{
    range_of(-0.5, 2, "0.0-2.0 s"); /* clock skew: never before the start */
    range_of(5, 3, "5.0-5.0 s");    /* an end before the start is the start */
    range_of(NAN, 3, "-");
    range_of(0, INFINITY, "-");
    char tiny[6];
    fmt_offset_range(3602, 3720, tiny, sizeof(tiny)); /* cut, but terminated */
    ASSERT_EQ_STR(tiny, "1:00:");
}

TEST_MAIN(offset_range_under_a_minute_in_tenths, offset_range_past_a_minute_as_a_clock,
          offset_range_past_an_hour_with_hours, offset_range_odd_input)
