/*
 * libFuzzer target for the JSON reader the importers use (import/json.h).
 *
 * The input is copied into a buffer of exactly its size with no NUL after
 * it, then read three ways: as one value, as a top-level array one element
 * at a time (skipping bad elements as the SageMaker importer does), and line
 * by line as system-metric records. Nothing may read out of bounds; every
 * call returns one of its documented values; the element loop always moves
 * forward; every string and number text a parse returns is NUL-terminated
 * at its length; scaling any number never fails other than as documented
 * (only NaN and the infinities, which Python's json writes, are no integer).
 *
 *   make fuzz && build/fuzz/fuzz_sagemaker_json -max_total_time=60 /tmp/corpus
 */
#include "import/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static struct json_doc g_doc;

/* Walk a value: the shape the parser promised. */
static void walk(const struct json *v, int depth)
{
    CHECK(depth <= JSON_MAX_DEPTH + 1);
    switch (v->type) {
    case JSON_STRING:
    case JSON_NUMBER: {
        CHECK(v->str && v->str[v->len] == '\0');
        int64_t x;
        int rc = json_scaled_i64(v, 9, &x);
        CHECK(rc == 0 || rc == -ERANGE || rc == -EINVAL);
        /* Python's NaN, Infinity, -Infinity: numbers no integer reading takes */
        int word = v->type == JSON_NUMBER &&
                   (v->str[0] == 'N' || v->str[0] == 'I' || (v->str[0] == '-' && v->str[1] == 'I'));
        CHECK(v->type == JSON_STRING || word || rc != -EINVAL);
        CHECK(!word || (rc == -EINVAL && !isfinite(v->num)));
        break;
    }
    case JSON_ARRAY:
    case JSON_OBJECT: {
        uint32_t n = 0;
        for (const struct json *m = v->child; m; m = m->next, n++) {
            CHECK(v->type == JSON_ARRAY ? !m->key : m->key && m->key[m->key_len] == '\0');
            walk(m, depth + 1);
        }
        CHECK(n == v->len);
        break;
    }
    default:
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    struct json *v;

    json_doc_reset(&g_doc);
    int rc = json_parse(&g_doc, buf, size, &v);
    CHECK(rc == 0 || rc == -EBADMSG || rc == -ENODATA || rc == -ENOMEM);
    if (rc == 0)
        walk(v, 0);

    size_t pos = 0;
    if (json_array_open(buf, size, &pos) == 0) {
        for (;;) {
            size_t before = pos;
            json_doc_reset(&g_doc);
            rc = json_array_next(&g_doc, buf, size, &pos, &v);
            CHECK(pos <= size);
            if (rc == 1) {
                CHECK(pos > before);
                walk(v, 1);
                continue;
            }
            CHECK(rc == 0 || rc == -EPIPE || rc == -ENODATA || rc == -EBADMSG || rc == -ENOMEM);
            if (rc != -EBADMSG)
                break;
            if (json_array_skip(buf, size, &pos) < 0)
                break;
            CHECK(pos > before);
        }
    }

    for (size_t a = 0; a < size;) {
        const char *nl = memchr(buf + a, '\n', size - a);
        size_t b = nl ? (size_t)(nl - buf) : size;
        json_doc_reset(&g_doc);
        rc = json_parse(&g_doc, buf + a, b - a, &v);
        CHECK(rc == 0 || rc == -EBADMSG || rc == -ENODATA || rc == -ENOMEM);
        if (rc == 0) {
            double x;
            int64_t ts;
            (void)json_num(json_get(v, "Value"), &x);
            (void)json_scaled_i64(json_get(v, "Timestamp"), 9, &ts);
            (void)json_str(json_get(v, "Name"));
        }
        a = b + 1;
    }
    free(buf);
    return 0;
}
