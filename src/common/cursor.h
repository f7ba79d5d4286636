/*
 * A cursor over a text buffer for parsing /proc and /sys files without
 * sscanf or allocation. Every reader stops at the end of the buffer; a field
 * that is missing or malformed yields an error, never a read out of bounds.
 */
#ifndef STROBE_COMMON_CURSOR_H
#define STROBE_COMMON_CURSOR_H

#include <stddef.h>
#include <stdint.h>

struct cursor {
    const char *p;   /* next unread byte */
    const char *end; /* one past the last byte */
};

static inline void cursor_init(struct cursor *c, const char *buf, size_t len)
{
    c->p = buf;
    c->end = buf + len;
}

static inline int cursor_eof(const struct cursor *c)
{
    return c->p >= c->end;
}

/* Copy len bytes of src into dst (cap bytes), cut to fit, NUL-terminated. */
void cursor_copy_span(char *dst, size_t cap, const char *src, size_t len);

/* Skip spaces and tabs (not newlines). */
void cursor_skip_blanks(struct cursor *c);
/* Skip to just past the next '\n' (or to the end). */
void cursor_next_line(struct cursor *c);
/* Parse an unsigned decimal after optional blanks. 0 or -EINVAL (cursor kept). */
int cursor_u64(struct cursor *c, uint64_t *out);
/* Parse a signed decimal after optional blanks. */
int cursor_i64(struct cursor *c, int64_t *out);
/* Skip n blank-separated fields on the current line. */
int cursor_skip_fields(struct cursor *c, int n);
/* The next blank-delimited word on the line: its start and length. */
int cursor_word(struct cursor *c, const char **start, size_t *len);
/* If the cursor is at prefix, skip it and return 1; else 0. */
int cursor_accept(struct cursor *c, const char *prefix);
/* Find "key" at the start of a line (key includes its delimiter, e.g.
 * "MemTotal:"), from the cursor on; leave the cursor after it. 0 or -ENOENT. */
int cursor_find_key(struct cursor *c, const char *key);

#endif
