#include "common/strbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char strbuf_empty[1];

void strbuf_init(struct strbuf *sb)
{
    sb->buf = strbuf_empty;
    sb->len = 0;
    sb->cap = 0;
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
    if (sb->cap)
        sb->buf[0] = '\0';
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = realloc(sb->cap ? sb->buf : NULL, cap);
    if (!p)
        return -ENOMEM;
    if (!sb->cap)
        p[0] = '\0';
    sb->buf = p;
    sb->cap = cap;
    return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t len)
{
    if (strbuf_grow(sb, len) < 0)
        return -ENOMEM;
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
        return -EINVAL;
    if (strbuf_grow(sb, (size_t)n) < 0)
        return -ENOMEM;
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

int strbuf_add_json_str(struct strbuf *sb, const char *s)
{
    int rc = strbuf_addch(sb, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        switch (*p) {
        case '"':
            rc = strbuf_adds(sb, "\\\"");
            break;
        case '\\':
            rc = strbuf_adds(sb, "\\\\");
            break;
        case '\n':
            rc = strbuf_adds(sb, "\\n");
            break;
        case '\t':
            rc = strbuf_adds(sb, "\\t");
            break;
        case '\r':
            rc = strbuf_adds(sb, "\\r");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                rc = strbuf_addf(sb, "\\u%04x", *p);
            else
                rc = strbuf_addch(sb, (char)*p);
        }
    }
    return rc ? rc : strbuf_addch(sb, '"');
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

char *strbuf_detach(struct strbuf *sb)
{
    char *p = sb->cap ? sb->buf : strdup("");
    strbuf_init(sb);
    return p;
}
