#include "common/cursor.h"

#include <errno.h>
#include <string.h>

void cursor_copy_span(char *dst, size_t cap, const char *src, size_t len)
{
    if (len >= cap)
        len = cap - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

void cursor_skip_blanks(struct cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

void cursor_next_line(struct cursor *c)
{
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    c->p = nl ? nl + 1 : c->end;
}

int cursor_u64(struct cursor *c, uint64_t *out)
{
    const char *save = c->p;
    cursor_skip_blanks(c);
    uint64_t v = 0;
    const char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p - '0');
        /* overflow test without a division per digit: UINT64_MAX is
         * 18446744073709551615 */
        if (v >= UINT64_MAX / 10 && (v > UINT64_MAX / 10 || d > UINT64_MAX % 10)) {
            c->p = save;
            return -EINVAL;
        }
        v = v * 10 + d;
        c->p++;
    }
    if (c->p == start) {
        c->p = save;
        return -EINVAL;
    }
    *out = v;
    return 0;
}

int cursor_i64(struct cursor *c, int64_t *out)
{
    const char *save = c->p;
    cursor_skip_blanks(c);
    int neg = 0;
    if (c->p < c->end && *c->p == '-') {
        neg = 1;
        c->p++;
    }
    uint64_t v;
    if (cursor_u64(c, &v) < 0 || v > (uint64_t)INT64_MAX) {
        c->p = save;
        return -EINVAL;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

int cursor_word(struct cursor *c, const char **start, size_t *len)
{
    cursor_skip_blanks(c);
    const char *s = c->p;
    while (c->p < c->end && *c->p != ' ' && *c->p != '\t' && *c->p != '\n')
        c->p++;
    if (c->p == s)
        return -EINVAL;
    *start = s;
    *len = (size_t)(c->p - s);
    return 0;
}

int cursor_skip_fields(struct cursor *c, int n)
{
    const char *s;
    size_t len;
    for (int i = 0; i < n; i++)
        if (cursor_word(c, &s, &len) < 0)
            return -EINVAL;
    return 0;
}

int cursor_accept(struct cursor *c, const char *prefix)
{
    size_t n = strlen(prefix);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, prefix, n) != 0)
        return 0;
    c->p += n;
    return 1;
}

int cursor_find_key(struct cursor *c, const char *key)
{
    size_t n = strlen(key);
    while (c->p < c->end) {
        if ((size_t)(c->end - c->p) >= n && memcmp(c->p, key, n) == 0) {
            c->p += n;
            return 0;
        }
        cursor_next_line(c);
    }
    return -ENOENT;
}
