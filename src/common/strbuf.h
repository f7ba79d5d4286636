/*
 * A growable, always NUL-terminated byte buffer (after git's strbuf.h).
 * Embedded by value: strbuf_init() before use, strbuf_release() frees the
 * memory. Allocation failure is fatal to strbuf users only through the return
 * value: each appender returns 0 or -ENOMEM and leaves the buffer valid.
 */
#ifndef STROBE_COMMON_STRBUF_H
#define STROBE_COMMON_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
    char *buf;  /* NUL-terminated contents; never NULL after init */
    size_t len; /* bytes used, not counting the NUL */
    size_t cap; /* bytes allocated; 0 while buf points at a static "" */
};

void strbuf_init(struct strbuf *sb);
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
/* Take ownership of the contents (caller frees); the strbuf is reset. */
char *strbuf_detach(struct strbuf *sb);

#endif
