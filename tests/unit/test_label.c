/* A label's value escaped into a series' labels and read back
 * (common/label.c). */
#include <errno.h>
#include <string.h>

#include "common/label.h"
#include "test.h"

static void round_trip(const char *value, const char *want)
{
    char buf[64];
    ASSERT_EQ_INT(label_format(buf, sizeof(buf), "iface", value), 0);
    ASSERT_EQ_STR(buf, want);
    struct strbuf o;
    strbuf_init(&o);
    const char *eq = strchr(buf, '=');
    label_unescape(&o, eq + 1, strlen(eq + 1));
    ASSERT_EQ_STR(o.buf, value);
    strbuf_release(&o);
}

TEST(plain_names_are_written_as_they_are)
{
    round_trip("eth0", "iface=eth0");
    round_trip("enp0s31f6.100", "iface=enp0s31f6.100");
    round_trip("", "iface=");
}

TEST(separators_and_percent_are_escaped)
{
    round_trip("x,y=z", "iface=x%2Cy%3Dz");
    round_trip("br{0}", "iface=br%7B0%7D");
    round_trip("50%", "iface=50%25");
    round_trip("a\tb\x7f", "iface=a%09b%7F");
    /* no separator is left in the value: it stays one label */
    char buf[64];
    label_format(buf, sizeof(buf), "iface", ",,==");
    ASSERT(strcspn(buf + 6, ",={}") == strlen(buf + 6));
}

TEST(a_name_too_long_for_the_buffer_is_refused)
{
    char buf[12];
    ASSERT_EQ_INT(label_format(buf, sizeof(buf), "iface", "abcde"), 0);
    ASSERT_EQ_INT(label_format(buf, sizeof(buf), "iface", "abcdef"), -ENAMETOOLONG);
    ASSERT_EQ_INT(label_format(buf, sizeof(buf), "iface", "ab,"), 0); /* iface=ab%2C and NUL: 12 */
    /* a ',' takes 3 bytes */
    ASSERT_EQ_INT(label_format(buf, sizeof(buf), "iface", "abc,"), -ENAMETOOLONG);
    ASSERT_EQ_INT(label_format(buf, 6, "iface", ""), -ENAMETOOLONG);
}

TEST(unescape_keeps_a_percent_that_starts_no_escape)
{
    struct strbuf o;
    strbuf_init(&o);
    label_unescape(&o, "100%", 4);
    label_unescape(&o, "%G1%4", 5);
    label_unescape(&o, "%4a", 3);
    ASSERT_EQ_STR(o.buf, "100%%G1%4J");
    strbuf_release(&o);
}

TEST_MAIN(plain_names_are_written_as_they_are, separators_and_percent_are_escaped,
          a_name_too_long_for_the_buffer_is_refused, unescape_keeps_a_percent_that_starts_no_escape)
