#include "common/strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb)
{
    sb->buf = strbuf_empty;
    sb->len = 0;
    sb->cap = 0;
    sb->err = 0;
}

int strbuf_failed(const struct strbuf *sb)
{
    return sb->err;
}

/* Remember the first failure; every later append sees it in strbuf_grow(). */
static int strbuf_fail(struct strbuf *sb, int err)
{
    if (!sb->err)
        sb->err = err;
    return sb->err;
}

void strbuf_release(struct strbuf *sb)
{
    if (sb->cap)
        free(sb->buf);
    strbuf_init(sb);
}

void strbuf_reset(struct strbuf *sb)
{
    sb->len = 0;
    sb->err = 0;
    if (sb->cap)
        sb->buf[0] = '\0';
}

void strbuf_truncate(struct strbuf *sb, size_t len)
{
    if (len >= sb->len)
        return;
    sb->len = len;
    sb->buf[len] = '\0'; /* len < sb->len: the buffer is allocated */
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
    if (sb->err)
        return sb->err;
    if (extra > SIZE_MAX - 1 - sb->len)
        return strbuf_fail(sb, -ENOMEM);
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(sb->cap ? sb->buf : NULL, cap);
    if (!p)
        return strbuf_fail(sb, -ENOMEM);
    if (!sb->cap)
        p[0] = '\0';
    sb->buf = p;
    sb->cap = cap;
    return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
    int rc = strbuf_grow(sb, len);
    if (rc < 0)
        return rc;
    memcpy(sb->buf + sb->len, data, len);
    sb->len += len;
    sb->buf[sb->len] = '\0';
    return 0;
}

int strbuf_adds(struct strbuf *sb, const char *s)
{
    return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, char c)
{
    return strbuf_add(sb, &c, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return strbuf_fail(sb, -EINVAL);
    int rc = strbuf_grow(sb, (size_t)n);
    if (rc < 0)
        return rc;
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = strbuf_vaddf(sb, fmt, ap);
    va_end(ap);
    return rc;
}

/* Length of the well-formed UTF-8 sequence at p (1 to 4) within its avail
 * bytes, or 0: overlong forms, surrogates, code points past U+10FFFF and a
 * sequence cut by the end are not well formed. */
static size_t utf8_seq_len_n(const unsigned char *p, size_t avail)
{
    if (p[0] < 0x80)
        return 1;
    unsigned n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (!n || p[0] > 0xf4 || n > avail)
        return 0;
    for (unsigned i = 1; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
        (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
        return 0;
    return n;
}

/* The NUL ends the string: it is no continuation byte, so no sequence runs
 * past it. */
size_t utf8_seq_len(const unsigned char *p)
{
    return utf8_seq_len_n(p, 4);
}

int strbuf_add_utf8(struct strbuf *sb, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int rc = 0;
    while (*p && rc == 0) {
        const unsigned char *run = p; /* a stretch of valid text, copied at once */
        size_t n;
        while (*p && (n = utf8_seq_len(p)) > 0)
            p += n;
        rc = strbuf_add(sb, run, (size_t)(p - run));
        if (*p && rc == 0) {
            rc = strbuf_adds(sb, "\xef\xbf\xbd"); /* U+FFFD */
            p++;
        }
    }
    return rc;
}

static int add_visible_char(struct strbuf *sb, const unsigned char *p, size_t n)
{
    if (n == 2 && p[0] == 0xc2 && p[1] < 0xa0) /* C1: U+0080 to U+009F */
        return strbuf_addf(sb, "\\u%04x", p[1]);
    if (n != 1 || (p[0] >= 0x20 && p[0] != 0x7f))
        return strbuf_add(sb, p, n);
    switch (p[0]) {
    case '\n':
        return strbuf_adds(sb, "\\n");
    case '\r':
        return strbuf_adds(sb, "\\r");
    case '\t':
        return strbuf_adds(sb, "\\t");
    default:
        return strbuf_addf(sb, "\\x%02x", p[0]);
    }
}

int strbuf_add_visible(struct strbuf *sb, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int rc = 0;
    while (*p && rc == 0) {
        size_t n = utf8_seq_len(p);
        rc = n ? add_visible_char(sb, p, n) : strbuf_adds(sb, "\xef\xbf\xbd"); /* U+FFFD */
        p += n ? n : 1;
    }
    return rc;
}

static int json_escape_byte(struct strbuf *sb, unsigned char c)
{
    switch (c) {
    case '"':
        return strbuf_adds(sb, "\\\"");
    case '\\':
        return strbuf_adds(sb, "\\\\");
    case '\n':
        return strbuf_adds(sb, "\\n");
    case '\t':
        return strbuf_adds(sb, "\\t");
    case '\r':
        return strbuf_adds(sb, "\\r");
    default:
        if (c < 0x20 || c == 0x7f)
            return strbuf_addf(sb, "\\u%04x", c);
        return strbuf_addch(sb, (char)c);
    }
}

/*
 * Always valid JSON: a byte that does not start well-formed UTF-8 (a comm
 * or a path from the kernel is any bytes) becomes U+FFFD, and U+2028 and
 * U+2029, legal in JSON but line ends in JavaScript, are escaped.
 */
int strbuf_add_json_str(struct strbuf *sb, const char *s)
{
    return strbuf_add_json_strn(sb, s ? s : "", s ? strlen(s) : 0);
}

int strbuf_add_json_strn(struct strbuf *sb, const char *s, size_t len)
{
    int rc = strbuf_addch(sb, '"');
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end && rc == 0) {
        size_t n = utf8_seq_len_n(p, (size_t)(end - p));
        if (n == 1)
            rc = json_escape_byte(sb, *p);
        else if (n == 0)
            rc = strbuf_adds(sb, "\\ufffd");
        else if (n == 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
            rc = strbuf_addf(sb, "\\u%04x", p[2] == 0xa8 ? 0x2028 : 0x2029);
        else
            rc = strbuf_add(sb, (const char *)p, n);
        p += n ? n : 1;
    }
    return rc ? rc : strbuf_addch(sb, '"');
}

int strbuf_add_json_str_or_null(struct strbuf *sb, const char *s)
{
    return s ? strbuf_add_json_str(sb, s) : strbuf_adds(sb, "null");
}

int strbuf_add_json_num(struct strbuf *sb, double v)
{
    if (!isfinite(v))
        return strbuf_adds(sb, "null");
    if (v == floor(v) && fabs(v) < 1e15)
        return strbuf_addf(sb, "%.0f", v);
    /* %.17g round-trips; try shorter forms first so output stays readable. */
    char tmp[32];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    return strbuf_adds(sb, tmp);
}

int strbuf_write(const struct strbuf *sb, FILE *f)
{
    if (sb->err)
        return sb->err;
    errno = 0;
    if (fwrite(sb->buf, 1, sb->len, f) != sb->len)
        return -(errno ? errno : EIO);
    return 0;
}

char *strbuf_detach(struct strbuf *sb)
{
    if (sb->err) {
        strbuf_release(sb);
        return NULL;
    }
    char *p = sb->cap ? sb->buf : strdup("");
    strbuf_init(sb);
    return p;
}
