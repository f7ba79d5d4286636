/*
 * A small JSON reader for what the importers read (SageMaker Debugger's
 * system-metric lines and Chrome trace-event files): objects, arrays,
 * strings with every escape, numbers, true, false, null (RFC 8259), and
 * the NaN, Infinity and -Infinity Python's json module writes (numbers whose
 * num is not finite: json_num and json_scaled_i64 refuse them).
 *
 * Input is outside input: a parse never reads past the given length, needs
 * no NUL after it, never recurses deeper than JSON_MAX_DEPTH, and answers a
 * clean error for anything that is not JSON. Values are a tree of struct
 * json nodes allocated from a struct json_doc (an arena), so one element of
 * a large file at a time costs no allocation once the arena has grown.
 *
 * Ownership: every node and string of a parsed value belongs to its doc and
 * lives until json_doc_reset() or json_doc_release(). The input buffer is not
 * referenced after a call returns.
 */
#ifndef STROBE_IMPORT_JSON_H
#define STROBE_IMPORT_JSON_H

#include <stddef.h>
#include <stdint.h>

/* Deepest nesting of arrays and objects accepted (a deeper value is an
 * error, not a stack overflow). */
#define JSON_MAX_DEPTH 64

enum json_type {
    JSON_NULL,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
};

struct json {
    enum json_type type;
    uint32_t len;     /* STRING: decoded bytes; NUMBER: bytes of its text; ARRAY, OBJECT: members */
    const char *str;  /* STRING: decoded UTF-8, NUL-terminated (may hold NULs from \u0000);
                         NUMBER: its text as written, NUL-terminated */
    double num;       /* NUMBER: its value (strtod; +-HUGE_VAL when out of range) */
    const char *key;  /* a member of an object: its decoded name; else NULL */
    uint32_t key_len; /* bytes of key */
    struct json *child; /* ARRAY, OBJECT: the first member, or NULL */
    struct json *next;  /* the next member of the enclosing array or object */
};

struct json_chunk;

/* The arena the values of a parse live in. Embedded by value. */
struct json_doc {
    struct json_chunk *chunks; /* newest first; the oldest is kept by reset */
    uint64_t used_bytes;       /* allocated from the arena since the last reset */
    uint64_t limit_bytes;      /* a parse needing more fails with -ENOMEM (0: 1 GiB) */
};

void json_doc_init(struct json_doc *d);
/* Forget every value parsed into d; keeps one chunk for the next parse. */
void json_doc_reset(struct json_doc *d);
void json_doc_release(struct json_doc *d);

/*
 * Parse one value from buf[*pos..len), skipping whitespace before it. On
 * success returns 0, *out is the value and *pos the offset just after it.
 * On failure *pos is where parsing stopped and the return value says why:
 * -ENODATA when the input ended inside the value (a file cut short),
 * -EBADMSG for anything else that is not JSON (nesting deeper than
 * JSON_MAX_DEPTH included), -ENOMEM when the arena could not grow. Values
 * parsed into d before stay valid either way.
 */
int json_parse_value(struct json_doc *d, const char *buf, size_t len, size_t *pos,
                     struct json **out);

/* The whole of buf[0..len) as one value, with only whitespace around it:
 * 0, -ENODATA (empty or cut short), -EBADMSG, -ENOMEM. */
int json_parse(struct json_doc *d, const char *buf, size_t len, struct json **out);

/*
 * Reading the elements of a top-level array one at a time, so that a file
 * cut short or garbled in one element keeps the others.
 *
 * json_array_open: skip whitespace and the '[' at *pos. 0, or -EBADMSG (no
 * array there), -ENODATA (nothing there).
 *
 * json_array_next: the next element: 1 with *out; 0 at the closing ']';
 * -EPIPE when the input ends between elements, before any ']' (a file still
 * being written: every whole element was returned; *pos is len); -ENODATA
 * for an element cut short by the end of the input, -EBADMSG for a bad one
 * (json_array_skip() then moves past it), -ENOMEM.
 */
int json_array_open(const char *buf, size_t len, size_t *pos);
int json_array_next(struct json_doc *d, const char *buf, size_t len, size_t *pos,
                    struct json **out);

/* After a bad element: move *pos to the start of the next line (trace files
 * hold one event per line), past a separating comma. Returns 0, or -ENODATA
 * at the end of the input. Always moves forward unless at the end. */
int json_array_skip(const char *buf, size_t len, size_t *pos);

/* The member of object obj named key (NULL-safe: obj may be NULL or not an
 * object; then, and when there is none, NULL). The first one if repeated. */
const struct json *json_get(const struct json *obj, const char *key);

/* v's string, or NULL when v is NULL or not a string. */
const char *json_str(const struct json *v);

/* 0 and v's value in *out when v is a finite number; -EINVAL otherwise. */
int json_num(const struct json *v, double *out);

/*
 * The number v times 10^exp10 as an int64, computed from its decimal text
 * exactly, rounding half away from zero (seconds "1591160899.757" with
 * exp10 = 9 is 1591160899757000000 ns, with no binary rounding on the way).
 * v may also be a string holding a JSON number, with no space around it
 * (smdebug writes some numbers, such as step_num, as strings).
 * 0, -EINVAL when v is not a number, -ERANGE when the result does not fit.
 */
int json_scaled_i64(const struct json *v, int exp10, int64_t *out);

#endif
