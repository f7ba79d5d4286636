/* The JSON writer: commas, colons and nesting come from the writer, in the
 * spellings strobe's documents use (compact, or one item a line). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/json_writer.h"
#include "test.h"

TEST(compact_object_and_array)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "id", "a\"b");
    jw_kv_str_or_null(&jw, "name", NULL);
    jw_kv_num(&jw, "mean", 0.1);
    jw_kv_num(&jw, "bad", NAN);
    jw_kv_int(&jw, "n", -3);
    jw_kv_uint(&jw, "big", UINT64_MAX);
    jw_kv_int_or_null(&jw, "rank", -1);
    jw_kv_int_or_null(&jw, "pid", 7);
    jw_kv_bool(&jw, "ok", 1);
    jw_kv_null(&jw, "none");
    jw_kv_raw(&jw, "meta", "{\"x\":1}");
    jw_key(&jw, "list");
    jw_array_begin(&jw);
    jw_int(&jw, 1);
    jw_str(&jw, NULL);
    jw_object_begin(&jw);
    jw_end(&jw);
    jw_array_begin(&jw);
    jw_end(&jw);
    jw_bool(&jw, 0);
    jw_null(&jw);
    jw_end(&jw);
    jw_end(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), 0);
    ASSERT_EQ_STR(sb.buf,
                  "{\"id\":\"a\\\"b\",\"name\":null,\"mean\":0.1,\"bad\":null,\"n\":-3,"
                  "\"big\":18446744073709551615,\"rank\":null,\"pid\":7,\"ok\":true,\"none\":null,"
                  "\"meta\":{\"x\":1},\"list\":[1,\"\",{},[],false,null]}");
    strbuf_release(&sb);
}

/* One item a line, as show --json's metrics and ls --json's runs. */
TEST(lines_layout)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_array_begin(&jw);
    jw_lines(&jw, "\n ", "\n ");
    jw_object_begin(&jw);
    jw_kv_int(&jw, "a", 1);
    jw_kv_int(&jw, "b", 2);
    jw_end(&jw);
    jw_object_begin(&jw);
    jw_end(&jw);
    jw_space(&jw, "\n");
    jw_end(&jw);
    jw_space(&jw, "\n");
    ASSERT_EQ_INT(jw_failed(&jw), 0);
    ASSERT_EQ_STR(sb.buf, "[\n {\"a\":1,\"b\":2},\n {}\n]\n");
    strbuf_release(&sb);
}

/* The first item may sit on the opening line and the rest each on its own. */
TEST(lead_differs_from_sep)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_array_begin(&jw);
    jw_lines(&jw, "", "\n");
    jw_int(&jw, 1);
    jw_int(&jw, 2);
    jw_end(&jw);
    ASSERT_EQ_STR(sb.buf, "[1,\n2]");
    strbuf_release(&sb);
}

/* The writer appends: a document may follow text already in the buffer. */
TEST(appends_to_existing_text)
{
    struct strbuf sb;
    strbuf_init(&sb);
    strbuf_adds(&sb, "x=");
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_num(&jw, 2.5);
    ASSERT_EQ_STR(sb.buf, "x=2.5");
    strbuf_release(&sb);
}

TEST(misuse_is_remembered)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_end(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), -EINVAL);
    jw_init(&jw, &sb);
    jw_array_begin(&jw);
    jw_key(&jw, "k"); /* keys only in objects */
    ASSERT_EQ_INT(jw_failed(&jw), -EINVAL);
    jw_init(&jw, &sb);
    for (int i = 0; i <= JW_MAX_DEPTH; i++)
        jw_array_begin(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), -E2BIG);
    strbuf_release(&sb);
}

/* An allocation failure in the strbuf reaches the writer's caller. */
TEST(strbuf_failure_is_reported)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_object_begin(&jw);
    ASSERT_EQ_INT(strbuf_grow(&sb, SIZE_MAX), -ENOMEM);
    jw_kv_str(&jw, "k", "v");
    jw_end(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), -ENOMEM);
    ASSERT_EQ_STR(sb.buf, "{");
    strbuf_release(&sb);
}

/* Members written apart (another thread's part of a document) join an
 * object with the comma they need; a fixed number spelling is kept. */
TEST(raw_members_and_formatted_numbers)
{
    struct strbuf part, sb;
    strbuf_init(&part);
    strbuf_init(&sb);
    struct json_writer pw, jw;
    jw_init_members(&pw, &part);
    jw_kv_int(&pw, "b", 2);
    jw_key(&pw, "t");
    jw_array_begin(&pw);
    jw_rawf(&pw, "%.4f", 0.5);
    jw_rawf(&pw, "%.4g", 1234567.0);
    jw_end(&pw);
    ASSERT_EQ_INT(jw_failed(&pw), 0);
    jw_init(&jw, &sb);
    jw_object_begin(&jw);
    jw_raw_members(&jw, "");
    jw_kv_int(&jw, "a", 1);
    jw_raw_members(&jw, part.buf);
    jw_kv_rawf(&jw, "c", "%.0f", 3.0);
    jw_end(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), 0);
    ASSERT_EQ_STR(sb.buf, "{\"a\":1,\"b\":2,\"t\":[0.5000,1.235e+06],\"c\":3}");
    strbuf_release(&part);
    strbuf_release(&sb);
}

/* A hot path writes a value by hand after the writer's separator; stored
 * text with a NUL byte stays one string. */
TEST(hand_written_values_and_counted_strings)
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_array_begin(&jw);
    jw_lines(&jw, "\n", "\n");
    jw_raw_begin(&jw);
    strbuf_adds(&sb, "{\"ph\":\"X\"}");
    jw_strn(&jw, "a\0b", 3);
    jw_raw_begin(&jw);
    strbuf_adds(&sb, "7");
    jw_space(&jw, "\n");
    jw_end(&jw);
    ASSERT_EQ_INT(jw_failed(&jw), 0);
    ASSERT_EQ_STR(sb.buf, "[\n{\"ph\":\"X\"},\n\"a\\u0000b\",\n7\n]");
    strbuf_release(&sb);
}

TEST_MAIN(hand_written_values_and_counted_strings, raw_members_and_formatted_numbers,
          compact_object_and_array, lines_layout, lead_differs_from_sep, appends_to_existing_text,
          misuse_is_remembered, strbuf_failure_is_reported)
