#include "common/json_writer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>

void jw_init(struct json_writer *jw, struct strbuf *out)
{
    jw->out = out;
    jw->depth = 0;
    jw->after_key = 0;
    jw->err = 0;
}

void jw_init_members(struct json_writer *jw, struct strbuf *out)
{
    jw_init(jw, out);
    jw->level[jw->depth++] = (struct jw_level){'}', 0, "", ""};
}

int jw_failed(const struct json_writer *jw)
{
    return jw->err ? jw->err : strbuf_failed(jw->out);
}

static void misuse(struct json_writer *jw, int err)
{
    if (!jw->err)
        jw->err = err;
}

/* The comma (and the layout's whitespace) before an item of the innermost
 * container: a member's key or an element. */
static void begin_item(struct json_writer *jw)
{
    if (!jw->depth)
        return;
    struct jw_level *l = &jw->level[jw->depth - 1];
    if (l->items++) {
        strbuf_addch(jw->out, ',');
        strbuf_adds(jw->out, l->sep);
    } else {
        strbuf_adds(jw->out, l->lead);
    }
}

/* A value completes its member when a key came first, else it is an item. */
static void begin_value(struct json_writer *jw)
{
    if (jw->after_key)
        jw->after_key = 0;
    else
        begin_item(jw);
}

static void open_container(struct json_writer *jw, char open, char close)
{
    begin_value(jw);
    if (jw->depth == JW_MAX_DEPTH) {
        misuse(jw, -E2BIG);
        return;
    }
    jw->level[jw->depth++] = (struct jw_level){close, 0, "", ""};
    strbuf_addch(jw->out, open);
}

void jw_object_begin(struct json_writer *jw)
{
    open_container(jw, '{', '}');
}

void jw_array_begin(struct json_writer *jw)
{
    open_container(jw, '[', ']');
}

void jw_end(struct json_writer *jw)
{
    if (!jw->depth || jw->after_key) {
        misuse(jw, -EINVAL);
        return;
    }
    strbuf_addch(jw->out, jw->level[--jw->depth].close);
}

void jw_lines(struct json_writer *jw, const char *lead, const char *sep)
{
    if (!jw->depth) {
        misuse(jw, -EINVAL);
        return;
    }
    jw->level[jw->depth - 1].lead = lead;
    jw->level[jw->depth - 1].sep = sep;
}

void jw_space(struct json_writer *jw, const char *ws)
{
    strbuf_adds(jw->out, ws);
}

void jw_key(struct json_writer *jw, const char *key)
{
    if (!jw->depth || jw->level[jw->depth - 1].close != '}' || jw->after_key) {
        misuse(jw, -EINVAL);
        return;
    }
    begin_item(jw);
    strbuf_add_json_str(jw->out, key);
    strbuf_addch(jw->out, ':');
    jw->after_key = 1;
}

void jw_str(struct json_writer *jw, const char *s)
{
    begin_value(jw);
    strbuf_add_json_str(jw->out, s);
}

void jw_str_or_null(struct json_writer *jw, const char *s)
{
    begin_value(jw);
    strbuf_add_json_str_or_null(jw->out, s);
}

void jw_strn(struct json_writer *jw, const char *s, size_t len)
{
    begin_value(jw);
    strbuf_add_json_strn(jw->out, s, len);
}

void jw_num(struct json_writer *jw, double v)
{
    begin_value(jw);
    strbuf_add_json_num(jw->out, v);
}

void jw_int(struct json_writer *jw, long long v)
{
    begin_value(jw);
    strbuf_addf(jw->out, "%lld", v);
}

void jw_uint(struct json_writer *jw, uint64_t v)
{
    begin_value(jw);
    strbuf_addf(jw->out, "%" PRIu64, v);
}

void jw_int_or_null(struct json_writer *jw, long long v)
{
    if (v < 0)
        jw_null(jw);
    else
        jw_int(jw, v);
}

void jw_bool(struct json_writer *jw, int v)
{
    begin_value(jw);
    strbuf_adds(jw->out, v ? "true" : "false");
}

void jw_null(struct json_writer *jw)
{
    begin_value(jw);
    strbuf_adds(jw->out, "null");
}

void jw_raw(struct json_writer *jw, const char *json)
{
    begin_value(jw);
    strbuf_adds(jw->out, json);
}

static void vrawf(struct json_writer *jw, const char *fmt, va_list ap)
{
    begin_value(jw);
    strbuf_vaddf(jw->out, fmt, ap);
}

void jw_rawf(struct json_writer *jw, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vrawf(jw, fmt, ap);
    va_end(ap);
}

void jw_kv_rawf(struct json_writer *jw, const char *key, const char *fmt, ...)
{
    jw_key(jw, key);
    va_list ap;
    va_start(ap, fmt);
    vrawf(jw, fmt, ap);
    va_end(ap);
}

void jw_raw_begin(struct json_writer *jw)
{
    begin_value(jw);
}

void jw_raw_members(struct json_writer *jw, const char *members)
{
    if (!*members)
        return;
    if (!jw->depth || jw->level[jw->depth - 1].close != '}' || jw->after_key) {
        misuse(jw, -EINVAL);
        return;
    }
    begin_item(jw);
    strbuf_adds(jw->out, members);
}

void jw_kv_str(struct json_writer *jw, const char *key, const char *s)
{
    jw_key(jw, key);
    jw_str(jw, s);
}

void jw_kv_str_or_null(struct json_writer *jw, const char *key, const char *s)
{
    jw_key(jw, key);
    jw_str_or_null(jw, s);
}

void jw_kv_num(struct json_writer *jw, const char *key, double v)
{
    jw_key(jw, key);
    jw_num(jw, v);
}

void jw_kv_int(struct json_writer *jw, const char *key, long long v)
{
    jw_key(jw, key);
    jw_int(jw, v);
}

void jw_kv_uint(struct json_writer *jw, const char *key, uint64_t v)
{
    jw_key(jw, key);
    jw_uint(jw, v);
}

void jw_kv_int_or_null(struct json_writer *jw, const char *key, long long v)
{
    jw_key(jw, key);
    jw_int_or_null(jw, v);
}

void jw_kv_bool(struct json_writer *jw, const char *key, int v)
{
    jw_key(jw, key);
    jw_bool(jw, v);
}

void jw_kv_null(struct json_writer *jw, const char *key)
{
    jw_key(jw, key);
    jw_null(jw);
}

void jw_kv_raw(struct json_writer *jw, const char *key, const char *json)
{
    jw_key(jw, key);
    jw_raw(jw, json);
}
