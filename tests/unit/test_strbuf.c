/* JSON strings from strbuf: escapes, and valid UTF-8 whatever the input
 * bytes (a process's comm, a path, a run name are any bytes). */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "common/strbuf.h"
#include "import/json.h"
#include "test.h"

static void json_of(const char *in, const char *want)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_add_json_str(&sb, in), 0);
    ASSERT_EQ_STR(sb.buf, want);
    strbuf_release(&sb);
}

TEST(escapes)
{
    json_of("plain", "\"plain\"");
    json_of("q\"b\\n\nt\tr\r", "\"q\\\"b\\\\n\\nt\\tr\\r\"");
    json_of("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    json_of("</script>", "\"</script>\"");
}

TEST(absent_string_is_null)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_add_json_str_or_null(&sb, NULL), 0);
    ASSERT_EQ_INT(strbuf_add_json_str_or_null(&sb, ""), 0);
    ASSERT_EQ_INT(strbuf_add_json_str_or_null(&sb, "a\"b"), 0);
    ASSERT_EQ_STR(sb.buf, "null\"\"\"a\\\"b\"");
    strbuf_release(&sb);
}

TEST(utf8_kept)
{
    json_of("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d",
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\x8d\"");
    /* line ends in JavaScript, not in JSON: escaped for pages that embed it */
    json_of("a\xe2\x80\xa8"
            "b\xe2\x80\xa9",
            "\"a\\u2028b\\u2029\"");
}

TEST(invalid_utf8_replaced)
{
    json_of("\xff", "\"\\ufffd\"");                                  /* never a lead byte */
    json_of("a\x80z", "\"a\\ufffdz\"");                              /* a lone continuation */
    json_of("\xc3", "\"\\ufffd\"");                                  /* cut by the end */
    json_of("\xc3(", "\"\\ufffd(\"");                                /* cut by another byte */
    json_of("\xc0\xaf", "\"\\ufffd\\ufffd\"");                       /* overlong '/' */
    json_of("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");            /* overlong, 3 bytes */
    json_of("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");            /* a surrogate */
    json_of("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* past U+10FFFF */
}

static void json_of_n(const char *in, size_t len, const char *want)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_add_json_strn(&sb, in, len), 0);
    ASSERT_EQ_STR(sb.buf, want);
    strbuf_release(&sb);
}

/* Stored output is any bytes: a NUL is a character, and the length, not a
 * NUL, ends the text (a sequence cut by it is replaced). */
TEST(counted_bytes_with_nul)
{
    json_of_n("abc\0def\n", 8, "\"abc\\u0000def\\n\"");
    json_of_n("\0", 1, "\"\\u0000\"");
    json_of_n("ab", 0, "\"\"");
    json_of_n("caf\xc3\xa9", 4, "\"caf\\ufffd\"");
    json_of_n("\xe2\x82\xac!", 4, "\"\xe2\x82\xac!\"");
    json_of_n("\0\xe2\x80\xa8", 4, "\"\\u0000\\u2028\"");
}

/* Whatever the bytes, the output parses as JSON and is valid UTF-8. */
TEST(any_bytes_parse)
{
    unsigned long long x = 88172645463325252ULL;
    struct json_doc d;
    json_doc_init(&d);
    for (int iter = 0; iter < 2000; iter++) {
        char in[24];
        for (size_t i = 0; i + 1 < sizeof(in); i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            in[i] = (char)(x % 255 + 1);
        }
        in[sizeof(in) - 1] = 0;
        struct strbuf sb;
        strbuf_init(&sb);
        ASSERT_EQ_INT(strbuf_add_json_str(&sb, in), 0);
        struct json *v = NULL;
        json_doc_reset(&d);
        ASSERT_EQ_INT(json_parse(&d, sb.buf, sb.len, &v), 0);
        ASSERT(v && v->type == JSON_STRING);
        for (const unsigned char *p = (const unsigned char *)sb.buf; *p;) {
            size_t n = utf8_seq_len(p);
            ASSERT(n > 0); /* well-formed UTF-8 throughout */
            p += n;
        }
        strbuf_release(&sb);
    }
    json_doc_release(&d);
}

static void clean(const char *in, const char *want)
{
    struct strbuf b;
    strbuf_init(&b);
    ASSERT_EQ_INT(0, strbuf_add_utf8(&b, in));
    ASSERT_EQ_STR(want, b.buf);
    strbuf_release(&b);
}

/* strbuf_add_utf8, what the Perfetto writer's strings rely on */
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

static void visible(const char *in, const char *want)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_add_visible(&sb, in), 0);
    ASSERT_EQ_STR(sb.buf, want);
    strbuf_release(&sb);
}

TEST(visible_text_shows_controls_escaped)
{
    visible(NULL, "");
    visible("caf\xc3\xa9 \\ \"ok\"", "caf\xc3\xa9 \\ \"ok\""); /* text and backslashes kept */
    visible("a\nb\tc\rd", "a\\nb\\tc\\rd");
    visible("\x1b[2J\x7f\x01", "\\x1b[2J\\x7f\\x01");
    visible("\xc2\x9b"
            "31m",
            "\\u009b"
            "31m"); /* C1 CSI */
    visible("\xffq", "\xef\xbf\xbdq");
}

/* After a failed append the buffer keeps what it had, stays NUL-terminated,
 * remembers the error, and takes no more until reset. */
static void check_failed_and_sticky(struct strbuf *sb, const char *kept)
{
    ASSERT_EQ_INT(strbuf_failed(sb), -ENOMEM);
    ASSERT_EQ_STR(sb->buf, kept);
    ASSERT_EQ_U64(sb->len, strlen(kept));
    ASSERT_EQ_INT(strbuf_adds(sb, "more"), -ENOMEM);
    ASSERT_EQ_INT(strbuf_addch(sb, 'x'), -ENOMEM);
    ASSERT_EQ_INT(strbuf_addf(sb, "%d", 42), -ENOMEM);
    ASSERT_EQ_INT(strbuf_add_json_str(sb, "s"), -ENOMEM);
    ASSERT_EQ_INT(strbuf_add_json_num(sb, 1.5), -ENOMEM);
    ASSERT_EQ_INT(strbuf_add(sb, "", 0), -ENOMEM);
    ASSERT_EQ_STR(sb->buf, kept);
    ASSERT_EQ_INT(strbuf_failed(sb), -ENOMEM);
    strbuf_truncate(sb, 1);
    ASSERT_EQ_INT(strbuf_failed(sb), -ENOMEM); /* still incomplete */
    strbuf_reset(sb);
    ASSERT_EQ_INT(strbuf_failed(sb), 0);
    ASSERT_EQ_INT(strbuf_adds(sb, "again"), 0);
    ASSERT_EQ_STR(sb->buf, "again");
}

TEST(oversized_grow_fails_and_sticks)
{
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_failed(&sb), 0);
    ASSERT_EQ_INT(strbuf_adds(&sb, "{\"a\":"), 0);
    ASSERT_EQ_INT(strbuf_grow(&sb, SIZE_MAX), -ENOMEM); /* len + extra + 1 overflows */
    check_failed_and_sticky(&sb, "{\"a\":");
    strbuf_release(&sb);
}

TEST(failure_on_empty_buffer_keeps_empty_string)
{
    struct strbuf sb;
    strbuf_init(&sb);
    /* SIZE_MAX: refused before realloc (len + extra + 1 overflows), which a
     * sanitizer build would report rather than return NULL from */
    ASSERT_EQ_INT(strbuf_grow(&sb, SIZE_MAX), -ENOMEM);
    check_failed_and_sticky(&sb, "");
    strbuf_release(&sb);
    ASSERT_EQ_INT(strbuf_failed(&sb), 0);
}

/* A request the allocator refuses (larger than any object may be): realloc
 * returns NULL. AddressSanitizer and ThreadSanitizer report such a request
 * instead (SAN=address, SAN=thread): there the case checks nothing. */
TEST(refused_allocation_fails_and_sticks)
{
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    struct strbuf sb;
    strbuf_init(&sb);
    ASSERT_EQ_INT(strbuf_adds(&sb, "[1,"), 0);
    ASSERT_EQ_INT(strbuf_grow(&sb, SIZE_MAX / 2), -ENOMEM);
    check_failed_and_sticky(&sb, "[1,");
    strbuf_release(&sb);
#endif
}

TEST_MAIN(oversized_grow_fails_and_sticks, failure_on_empty_buffer_keeps_empty_string,
          refused_allocation_fails_and_sticks, escapes, absent_string_is_null, utf8_kept,
          invalid_utf8_replaced, counted_bytes_with_nul, any_bytes_parse, utf8_valid_text_is_kept,
          utf8_bad_bytes_become_replacement_chars, visible_text_shows_controls_escaped)
