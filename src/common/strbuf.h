/*
 * A growable, always NUL-terminated byte buffer (after git's strbuf.h).
 * Embedded by value: strbuf_init() before use, strbuf_release() frees the
 * memory.
 *
 * Failure is sticky. When an append cannot grow the buffer (out of memory, a
 * size that overflows) or cannot format, the strbuf records the error and
 * keeps it: that append and every later one return the error and add
 * nothing, and the contents stay valid and NUL-terminated (what was there
 * before the failed append). So a builder may ignore the result of each
 * append, and whoever finally writes, sends or returns the buffer checks
 * strbuf_failed() once and reports an error instead of passing on truncated
 * output. Allocation failure never aborts: libstrobe, built from these
 * sources, runs inside the training job. strbuf_reset() and
 * strbuf_release() clear the error (the contents it spoiled are gone);
 * strbuf_truncate() keeps it.
 */
#ifndef STROBE_COMMON_STRBUF_H
#define STROBE_COMMON_STRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct strbuf {
    char *buf;  /* NUL-terminated contents; never NULL after init */
    size_t len; /* bytes used, not counting the NUL */
    size_t cap; /* bytes allocated; 0 while buf points at a static "" */
    int err;    /* first failed append (-ENOMEM, -EINVAL), or 0; sticky */
};

void strbuf_init(struct strbuf *sb);
/* 0, or the error of the first append that failed since init or reset: the
 * contents are then incomplete and must not be written out as whole. */
int strbuf_failed(const struct strbuf *sb);
void strbuf_release(struct strbuf *sb);
void strbuf_reset(struct strbuf *sb);
/* Keep the first len bytes (no-op when len is not shorter). */
void strbuf_truncate(struct strbuf *sb, size_t len);
int strbuf_grow(struct strbuf *sb, size_t extra);
int strbuf_add(struct strbuf *sb, const void *data, size_t len);
int strbuf_adds(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, char c);
__attribute__((format(printf, 2, 3))) int strbuf_addf(struct strbuf *sb, const char *fmt, ...);
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap);
/* s (NULL: "") as a JSON string, quoted: always valid JSON and UTF-8
 * (bytes that are not well-formed UTF-8 become U+FFFD). */
int strbuf_add_json_str(struct strbuf *sb, const char *s);
/* The len bytes at s as a JSON string, the same way; a NUL byte is one more
 * character (\u0000), not the end: stored output is any bytes. */
int strbuf_add_json_strn(struct strbuf *sb, const char *s, size_t len);
/* s as a JSON string, or null when s is NULL (a value that may be absent). */
int strbuf_add_json_str_or_null(struct strbuf *sb, const char *s);
/* Length of the well-formed UTF-8 sequence at p (1 to 4), or 0. p must be
 * NUL-terminated (a cut sequence is not well formed). */
size_t utf8_seq_len(const unsigned char *p);
/* s (NULL: nothing) as valid UTF-8: each byte that does not start a
 * well-formed sequence becomes U+FFFD (protobuf strings, file names). */
int strbuf_add_utf8(struct strbuf *sb, const char *s);
/* s (NULL: nothing) safe to print on a terminal: as strbuf_add_utf8, and
 * each control character shown as an escape rather than acted on (\n, \r,
 * \t; \xHH for the rest of C0 and DEL, ESC included; \u00HH for C1), so
 * that stored text from the job cannot move the cursor or set colours. */
int strbuf_add_visible(struct strbuf *sb, const char *s);
/* Append a double as JSON: shortest round-trip form, null for NaN/Inf. */
int strbuf_add_json_num(struct strbuf *sb, double v);
/* Write the contents to f, unless an append failed: then nothing is
 * written (no truncated document) and the sticky error is returned. 0, the
 * strbuf's error, or -errno (-EIO) for a short write. Does not flush f. */
int strbuf_write(const struct strbuf *sb, FILE *f);
/* Take ownership of the contents (caller frees); the strbuf is reset. NULL
 * when an append failed (the incomplete contents are freed) or out of
 * memory, so a caller that keeps the result never keeps a truncated one. */
char *strbuf_detach(struct strbuf *sb);

#endif
