/*
 * A JSON writer on strbuf (after git's json-writer.h): the caller says what
 * comes next (an object, a key, a value, the end) and the writer puts in the
 * commas and colons, tracking the open objects and arrays itself, so no
 * caller spells a separator by hand.
 *
 * The writer appends to a strbuf it does not own, so a document may be built
 * into a buffer that already holds text (an HTTP body, a line of a JSON
 * lines file). Output is compact (',' and ':', no blanks) unless a container
 * is given a layout with jw_lines(): that is how strobe's documents put one
 * item on a line ("[\n {..},\n {..}\n]") while the items themselves stay
 * compact, byte for byte as they were spelled before the writer.
 *
 * Errors: appends go through the strbuf, whose error is sticky (strbuf.h);
 * misuse (nesting deeper than JW_MAX_DEPTH, an end with nothing open or
 * after a key, a key or members outside an object) is remembered in the
 * writer. jw_failed() gives either, once, at the end; a caller that gets an
 * error discards what was written.
 *
 * Usage:
 *   struct json_writer jw;
 *   jw_init(&jw, &out);
 *   jw_object_begin(&jw);
 *   jw_kv_str(&jw, "id", r->id);
 *   jw_key(&jw, "steps");
 *   jw_array_begin(&jw);
 *   jw_int(&jw, 1);
 *   jw_end(&jw);
 *   jw_end(&jw);
 *   if (jw_failed(&jw)) ...
 */
#ifndef STROBE_COMMON_JSON_WRITER_H
#define STROBE_COMMON_JSON_WRITER_H

#include <stdint.h>

#include "common/strbuf.h"

#define JW_MAX_DEPTH 32

struct jw_level {
    char close;       /* '}' or ']' */
    unsigned items;   /* members or elements written so far */
    const char *lead; /* whitespace before the first item (static) */
    const char *sep;  /* whitespace after each comma (static) */
};

struct json_writer {
    struct strbuf *out; /* appended to; the caller's */
    int depth;          /* open objects and arrays */
    int after_key;      /* a key was written: its value comes next, no comma */
    int err;            /* misuse (-E2BIG too deep, -EINVAL nothing open), or 0 */
    struct jw_level level[JW_MAX_DEPTH];
};

/* Start a writer that appends to out; nothing open. Holds no memory of its
 * own: there is nothing to release. */
void jw_init(struct json_writer *jw, struct strbuf *out);
/* A writer for members of an object opened elsewhere: by code that writes by
 * hand, or by another writer into which jw_raw_members() splices them (a
 * part built on another thread, or once for many lines). The first member
 * gets no comma; nothing is closed. */
void jw_init_members(struct json_writer *jw, struct strbuf *out);
/* 0, or the first error: the writer's misuse or the strbuf's (sticky). */
int jw_failed(const struct json_writer *jw);

void jw_object_begin(struct json_writer *jw);
void jw_array_begin(struct json_writer *jw);
/* Close the innermost open object or array. */
void jw_end(struct json_writer *jw);
/* Layout of the innermost open container: lead is written before its first
 * item, sep after each comma ("\n  " puts each item on a line, indented).
 * Both must outlive the container (string literals). Default: compact. */
void jw_lines(struct json_writer *jw, const char *lead, const char *sep);
/* Whitespace written as is, no value: a line end before a close or after
 * the document. */
void jw_space(struct json_writer *jw, const char *ws);

/* The key of the next member of the innermost object; a value must follow. */
void jw_key(struct json_writer *jw, const char *key);

/* Values: an array element, a member's value after jw_key(), or the
 * document itself. */
void jw_str(struct json_writer *jw, const char *s);         /* NULL: "" */
void jw_str_or_null(struct json_writer *jw, const char *s); /* NULL: null */
/* The len bytes at s, NUL bytes too (strbuf_add_json_strn). */
void jw_strn(struct json_writer *jw, const char *s, size_t len);
void jw_num(struct json_writer *jw, double v); /* shortest round-trip; NaN, Inf: null */
void jw_int(struct json_writer *jw, long long v);
void jw_uint(struct json_writer *jw, uint64_t v);
/* v, or null when negative: an id or a code that is not known (-1). */
void jw_int_or_null(struct json_writer *jw, long long v);
void jw_bool(struct json_writer *jw, int v);
void jw_null(struct json_writer *jw);
/* json, already valid JSON (a stored meta object, a command array), as is. */
void jw_raw(struct json_writer *jw, const char *json);
/* A value printed by fmt: a number in a fixed spelling ("%.4g" for a chart's
 * four digits). The caller makes sure it is JSON. */
__attribute__((format(printf, 2, 3))) void jw_rawf(struct json_writer *jw, const char *fmt, ...);
/* The separator before a value the caller then appends to out by hand: for
 * a hot path that formats its numbers itself (trace events). */
void jw_raw_begin(struct json_writer *jw);
/* Members already written as JSON text ("\"a\":1,\"b\":2", as a writer
 * from jw_init_members() leaves them) into the open object; "" adds none. */
void jw_raw_members(struct json_writer *jw, const char *members);

/* A member in one call: jw_key() and the value. */
void jw_kv_str(struct json_writer *jw, const char *key, const char *s);
void jw_kv_str_or_null(struct json_writer *jw, const char *key, const char *s);
void jw_kv_num(struct json_writer *jw, const char *key, double v);
void jw_kv_int(struct json_writer *jw, const char *key, long long v);
void jw_kv_uint(struct json_writer *jw, const char *key, uint64_t v);
void jw_kv_int_or_null(struct json_writer *jw, const char *key, long long v);
void jw_kv_bool(struct json_writer *jw, const char *key, int v);
void jw_kv_null(struct json_writer *jw, const char *key);
void jw_kv_raw(struct json_writer *jw, const char *key, const char *json);
__attribute__((format(printf, 3, 4))) void jw_kv_rawf(struct json_writer *jw, const char *key,
                                                      const char *fmt, ...);

#endif
