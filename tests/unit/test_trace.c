/* strobe trace's string cleaning: what both writers rely on to stay valid
 * JSON and valid protobuf strings whatever bytes a name holds. */
#include "render/trace.h"
#include "test.h"

static void clean(const char *in, const char *want)
{
    struct strbuf b;
    strbuf_init(&b);
    ASSERT_EQ_INT(0, trace_add_utf8(&b, in));
    ASSERT_EQ_STR(want, b.buf);
    strbuf_release(&b);
}

TEST(utf8_valid_text_is_kept)
{
    clean("", "");
    clean("step", "step");
    clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    clean("\"</script>\x01", "\"</script>\x01"); /* escaping is JSON's job, not this */
}

TEST(utf8_bad_bytes_become_replacement_chars)
{
    clean("a\xff"
          "b",
          "a\xef\xbf\xbd"
          "b");
    clean("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");                 /* overlong '/' */
    clean("\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* a surrogate */
    clean("\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* > U+10FFFF */
    clean("x\xe2\x82", "x\xef\xbf\xbd\xef\xbf\xbd"); /* cut short at the end */
}

TEST_MAIN(utf8_valid_text_is_kept, utf8_bad_bytes_become_replacement_chars)
