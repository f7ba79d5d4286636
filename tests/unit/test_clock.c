/* Durations as the command line takes them (--interval, --gpu-interval,
 * --rule-interval): a plain decimal number and a unit, nothing strtod
 * would read besides (hex, exponents, signs, spaces, inf, nan). */
#include "common/array.h"
#include "common/clock.h"
#include "test.h"

static void duration_is(const char *text, int64_t want_ns)
{
    int64_t ns = -1;
    if (duration_parse(text, &ns) < 0 || ns != want_ns)
        TEST_FAIL("duration '%s': want %lld ns, got %lld", text, (long long)want_ns, (long long)ns);
}

static void duration_refused(const char *text)
{
    int64_t ns = -1;
    if (duration_parse(text, &ns) == 0)
        TEST_FAIL("duration '%s' taken as %lld ns; want it refused", text, (long long)ns);
}

TEST(decimal_with_units)
{
    duration_is("10", 10 * NS_PER_MS);
    duration_is("100ms", 100 * NS_PER_MS);
    duration_is("0.5s", 500 * NS_PER_MS);
    duration_is("1.25ms", 1250000);
    duration_is("250us", 250000);
    duration_is("7ns", 7);
    duration_is("2m", 120 * NS_PER_S);
    duration_is("0", 0);
    duration_is("007s", 7 * NS_PER_S);
}

TEST(strtod_extras_refused)
{
    static const char *const bad[] = {
        "0x10", "0X10ms", "0x1p4", "1e3", "1E-3s", " 10",   "10 ", "10 ms", "\t10",  "+5",  "-5",
        "inf",  "nan",    "INFs",  ".5",  "5.",    "1.2.3", "",    "ms",    "10msx", "10h", "1,5",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        duration_refused(bad[i]);
}

TEST(too_long_refused)
{
    duration_refused("9300000000000000000ns"); /* past INT64_MAX ns */
    char digits[400];
    memset(digits, '9', sizeof(digits) - 1);
    digits[sizeof(digits) - 1] = 0;
    duration_refused(digits); /* past DBL_MAX */
}

TEST(decimal_parse_stops_after_the_number)
{
    double v = 0;
    const char *s = "12.5x";
    ASSERT(decimal_parse(s, &v) == s + 4);
    ASSERT_NEAR(v, 12.5, 1e-12);
    ASSERT(decimal_parse("-1", &v) == NULL);
    ASSERT(decimal_parse("0x1", &v) != NULL); /* the 0; the caller refuses the rest */
}

TEST_MAIN(decimal_with_units, strtod_extras_refused, too_long_refused,
          decimal_parse_stops_after_the_number)
