/* The JSON reader (import/json.h): every value kind, every escape, exact
 * decimal scaling, element-at-a-time arrays, and garbage. */
#include <errno.h>
#include <math.h>

#include "common/array.h"
#include "import/json.h"
#include "test.h"

static struct json *parse(struct json_doc *d, const char *text, int want_rc)
{
    struct json *v = NULL;
    int rc = json_parse(d, text, strlen(text), &v);
    if (rc != want_rc)
        TEST_FAIL("json_parse(%s) = %d, want %d", text, rc, want_rc);
    return v;
}

TEST(values)
{
    struct json_doc d;
    json_doc_init(&d);
    struct json *v = parse(&d,
                           " {\"a\": [1, -2.5e3, true, false, null, \"x\"], \"b\": {}, "
                           "\"c\": []} ",
                           0);
    ASSERT_EQ_INT(v->type, JSON_OBJECT);
    ASSERT_EQ_INT(v->len, 3);
    const struct json *a = json_get(v, "a");
    ASSERT(a && a->type == JSON_ARRAY && a->len == 6);
    const struct json *e = a->child;
    double x;
    ASSERT_EQ_INT(json_num(e, &x), 0);
    ASSERT_NEAR(x, 1, 0);
    e = e->next;
    ASSERT_EQ_INT(json_num(e, &x), 0);
    ASSERT_NEAR(x, -2500, 0);
    ASSERT_EQ_STR(e->str, "-2.5e3");
    ASSERT_EQ_INT(e->next->type, JSON_TRUE);
    ASSERT_EQ_INT(e->next->next->type, JSON_FALSE);
    ASSERT_EQ_INT(e->next->next->next->type, JSON_NULL);
    ASSERT_EQ_STR(json_str(e->next->next->next->next), "x");
    ASSERT(json_get(v, "b")->type == JSON_OBJECT && json_get(v, "b")->len == 0);
    ASSERT(json_get(v, "c")->type == JSON_ARRAY && !json_get(v, "c")->child);
    ASSERT(!json_get(v, "d"));
    ASSERT(!json_get(a, "a")); /* not an object */
    ASSERT(!json_get(NULL, "a"));
    ASSERT(!json_str(a));
    ASSERT_EQ_INT(json_num(json_get(v, "b"), &x), -EINVAL);
    json_doc_release(&d);
}

TEST(string_escapes)
{
    struct json_doc d;
    json_doc_init(&d);
    struct json *v =
        parse(&d, "\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20ac \\ud83d\\ude00\"", 0);
    ASSERT_EQ_STR(v->str, "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    ASSERT_EQ_INT(v->len, strlen(v->str));
    /* lone surrogates become U+FFFD; \u0000 is kept inside len */
    v = parse(&d, "\"\\ud800x\\udc00\"", 0);
    ASSERT_EQ_STR(v->str, "\xef\xbf\xbdx\xef\xbf\xbd");
    v = parse(&d, "\"a\\u0000b\"", 0);
    ASSERT_EQ_INT(v->len, 3);
    ASSERT(memcmp(v->str, "a\0b", 3) == 0);
    /* keys are decoded too */
    v = parse(&d, "{\"k\\u0065y\": 1}", 0);
    ASSERT(json_get(v, "key"));
    parse(&d, "\"bad \\x escape\"", -EBADMSG);
    parse(&d, "\"\\u12\"", -EBADMSG);
    parse(&d, "\"raw\ncontrol\"", -EBADMSG);
    json_doc_release(&d);
}

TEST(cut_short_is_enodata)
{
    static const char *const cut[] = {
        "",
        "  ",
        "{",
        "{\"a\"",
        "{\"a\":",
        "{\"a\":1",
        "{\"a\":1,",
        "[1,2",
        "\"abc",
        "\"ab\\",
        "tr",
        "nul",
        "-",
        "1.",
        "1e",
        "1e+",
        "{\"Timestamp\": 1591160899.7",
    };
    struct json_doc d;
    json_doc_init(&d);
    for (size_t i = 0; i < ARRAY_SIZE(cut); i++) {
        struct json *v;
        int rc = json_parse(&d, cut[i], strlen(cut[i]), &v);
        if (rc != -ENODATA)
            TEST_FAIL("'%s': %d, want -ENODATA", cut[i], rc);
    }
    json_doc_release(&d);
}

TEST(garbage_is_ebadmsg)
{
    static const char *const bad[] = {
        "x",    "{]",         "[}",    "{1:2}", "{\"a\" 1}", "[1 2]",
        "01",   "1.e3",       "+1",    ".5",    "-a",        "tru e",
        "nulL", "{\"a\":1,}", "[,1]",  "1 2",   "{\"a\":x}", "\"a\"\"b\"",
        "Nan",  "Infinite",   "-Inf0", "NaNa",  "-infinity",
    };
    struct json_doc d;
    json_doc_init(&d);
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct json *v;
        int rc = json_parse(&d, bad[i], strlen(bad[i]), &v);
        if (rc != -EBADMSG)
            TEST_FAIL("'%s': %d, want -EBADMSG", bad[i], rc);
    }
    json_doc_release(&d);
}

/* Python's json module writes NaN, Infinity and -Infinity for the floats
 * JSON cannot hold: they parse, as numbers no integer or finite reading
 * accepts. */
TEST(python_nonfinite_numbers)
{
    struct json_doc d;
    json_doc_init(&d);
    struct json *v = parse(&d, "[NaN, Infinity, -Infinity, -1]", 0);
    ASSERT(v && v->type == JSON_ARRAY && v->len == 4);
    const struct json *e = v->child;
    ASSERT(e->type == JSON_NUMBER && isnan(e->num));
    ASSERT(e->next->type == JSON_NUMBER && isinf(e->next->num) && e->next->num > 0);
    ASSERT(e->next->next->type == JSON_NUMBER && isinf(e->next->next->num) &&
           e->next->next->num < 0);
    for (const struct json *m = e; m != e->next->next->next; m = m->next) {
        double x;
        int64_t i;
        ASSERT_EQ_INT(json_num(m, &x), -EINVAL);
        ASSERT_EQ_INT(json_scaled_i64(m, 0, &i), -EINVAL);
        ASSERT_EQ_INT(json_scaled_i64(m, 9, &i), -EINVAL);
    }
    int64_t i;
    ASSERT_EQ_INT(json_scaled_i64(e->next->next->next, 0, &i), 0);
    ASSERT_EQ_INT(i, -1);
    parse(&d, "Infin", -ENODATA);
    parse(&d, "-Infinity ", 0);
    json_doc_release(&d);
}

TEST(depth_is_bounded)
{
    char buf[4096];
    struct json_doc d;
    json_doc_init(&d);
    struct json *v;
    for (int depth = JSON_MAX_DEPTH - 1; depth <= JSON_MAX_DEPTH + 1; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            buf[n++] = '[';
        for (int i = 0; i < depth; i++)
            buf[n++] = ']';
        int rc = json_parse(&d, buf, n, &v);
        ASSERT_EQ_INT(rc, depth <= JSON_MAX_DEPTH ? 0 : -EBADMSG);
    }
    /* a million open brackets: an error, not a stack overflow */
    size_t n = 1 << 20;
    char *deep = malloc(n);
    ASSERT(deep);
    memset(deep, '[', n);
    ASSERT_EQ_INT(json_parse(&d, deep, n, &v), -EBADMSG);
    free(deep);
    json_doc_release(&d);
}

TEST(scaled_integers_are_exact)
{
    static const struct {
        const char *text;
        int exp10;
        int64_t want;
        int rc;
    } cases[] = {
        {"1591160899.757", 9, 1591160899757000000LL, 0},
        {"1591160899.757123456", 9, 1591160899757123456LL, 0},
        {"1591160899.7571234565", 9, 1591160899757123457LL, 0}, /* half rounds up */
        {"1591160899.7571234564", 9, 1591160899757123456LL, 0},
        {"-1.5", 0, -2, 0}, /* half away from zero */
        {"-1.4", 0, -1, 0},
        {"0.5", 0, 1, 0},
        {"0.0000000001", 9, 0, 0},
        {"0.0000000005", 9, 1, 0},
        {"12", 3, 12000, 0},
        {"1.25e3", 0, 1250, 0},
        {"125e-2", 0, 1, 0},
        {"1e-400", 9, 0, 0},
        {"9223372036854775807", 0, INT64_MAX, 0},
        {"-9223372036854775808", 0, INT64_MIN, 0},
        {"9223372036854775808", 0, 0, -ERANGE},
        {"1e19", 0, 0, -ERANGE},
        {"1e100000000", 0, 0, -ERANGE},
        {"0e100000000", 0, 0, 0},
        {"\"42\"", 0, 42, 0}, /* a number in a string */
        {"\"4 2\"", 0, 0, -EINVAL},
        {"\"\"", 0, 0, -EINVAL},
        {"true", 0, 0, -EINVAL},
    };
    struct json_doc d;
    json_doc_init(&d);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct json *v = parse(&d, cases[i].text, 0);
        int64_t got = 0;
        int rc = json_scaled_i64(v, cases[i].exp10, &got);
        if (rc != cases[i].rc || (rc == 0 && got != cases[i].want))
            TEST_FAIL("%s x 1e%d: rc %d value %lld, want rc %d value %lld", cases[i].text,
                      cases[i].exp10, rc, (long long)got, cases[i].rc, (long long)cases[i].want);
    }
    ASSERT_EQ_INT(json_scaled_i64(NULL, 0, &(int64_t){0}), -EINVAL);
    json_doc_release(&d);
}

TEST(array_elements_one_at_a_time)
{
    /* a garbled element in the middle, then a file cut inside an element */
    const char *text = "[\n{\"a\":1},\n{\"a\":x},\n{\"a\":3},\n{\"a\":";
    size_t len = strlen(text), pos = 0;
    ASSERT_EQ_INT(json_array_open(text, len, &pos), 0);
    struct json_doc d;
    json_doc_init(&d);
    struct json *v;
    int got[8], n = 0, bad = 0, rc;
    for (;;) {
        json_doc_reset(&d);
        rc = json_array_next(&d, text, len, &pos, &v);
        if (rc == 1) {
            double x;
            ASSERT_EQ_INT(json_num(json_get(v, "a"), &x), 0);
            got[n++] = (int)x;
            continue;
        }
        if (rc == 0 || rc == -EPIPE || rc == -ENODATA)
            break;
        ASSERT_EQ_INT(rc, -EBADMSG);
        bad++;
        ASSERT_EQ_INT(json_array_skip(text, len, &pos), 0);
    }
    ASSERT_EQ_INT(rc, -ENODATA);
    ASSERT_EQ_INT(n, 2);
    ASSERT_EQ_INT(got[0], 1);
    ASSERT_EQ_INT(got[1], 3);
    ASSERT_EQ_INT(bad, 1);

    /* a file still being written: ends after ",\n" */
    text = "[{\"a\":1},\n";
    len = strlen(text);
    pos = 0;
    ASSERT_EQ_INT(json_array_open(text, len, &pos), 0);
    ASSERT_EQ_INT(json_array_next(&d, text, len, &pos, &v), 1);
    ASSERT_EQ_INT(json_array_next(&d, text, len, &pos, &v), -EPIPE);
    /* closed */
    text = "[1,2] ";
    len = strlen(text);
    pos = 0;
    ASSERT_EQ_INT(json_array_open(text, len, &pos), 0);
    ASSERT_EQ_INT(json_array_next(&d, text, len, &pos, &v), 1);
    ASSERT_EQ_INT(json_array_next(&d, text, len, &pos, &v), 1);
    ASSERT_EQ_INT(json_array_next(&d, text, len, &pos, &v), 0);
    pos = 0;
    ASSERT_EQ_INT(json_array_open("{}", 2, &pos), -EBADMSG);
    pos = 0;
    ASSERT_EQ_INT(json_array_open(" ", 1, &pos), -ENODATA);
    json_doc_release(&d);
}

TEST(arena_reset_and_limit)
{
    struct json_doc d;
    json_doc_init(&d);
    /* a big value takes more than one chunk; reset keeps one */
    size_t n = 200000;
    char *big = malloc(n + 3);
    ASSERT(big);
    big[0] = '"';
    memset(big + 1, 'x', n);
    big[n + 1] = '"';
    struct json *v;
    ASSERT_EQ_INT(json_parse(&d, big, n + 2, &v), 0);
    ASSERT_EQ_INT(v->len, n);
    json_doc_reset(&d);
    ASSERT_EQ_INT(d.used_bytes, 0);
    ASSERT_EQ_INT(json_parse(&d, "[1]", 3, &v), 0); /* the kept chunk is reused */
    d.limit_bytes = 1024;
    ASSERT_EQ_INT(json_parse(&d, big, n + 2, &v), -ENOMEM);
    free(big);
    json_doc_release(&d);
    json_doc_release(&d); /* twice is fine */
}

TEST(garbage_never_crashes)
{
    uint64_t seed = 0x5eed;
    static const char alphabet[] = "{}[]\":,\\ u0123456789abcdefEe.-+tnrl\n\t";
    struct json_doc d;
    json_doc_init(&d);
    char buf[256];
    for (int round = 0; round < 20000; round++) {
        size_t n = rng_next(&seed) % sizeof(buf);
        for (size_t i = 0; i < n; i++)
            buf[i] = (rng_next(&seed) & 7) ? alphabet[rng_next(&seed) % (sizeof(alphabet) - 1)]
                                           : (char)rng_next(&seed);
        struct json *v;
        json_doc_reset(&d);
        int rc = json_parse(&d, buf, n, &v);
        ASSERT(rc == 0 || rc == -EBADMSG || rc == -ENODATA);
        size_t pos = 0;
        if (json_array_open(buf, n, &pos) == 0)
            for (int k = 0; k < 300; k++) {
                size_t before = pos;
                rc = json_array_next(&d, buf, n, &pos, &v);
                if (rc == 1)
                    continue;
                if (rc != -EBADMSG || json_array_skip(buf, n, &pos) < 0)
                    break;
                ASSERT(pos > before);
            }
    }
    json_doc_release(&d);
}

TEST_MAIN(values, string_escapes, cut_short_is_enodata, garbage_is_ebadmsg,
          python_nonfinite_numbers, depth_is_bounded, scaled_integers_are_exact,
          array_elements_one_at_a_time, arena_reset_and_limit, garbage_never_crashes)
