#include "common/label.h"

#include <errno.h>
#include <string.h>

static int needs_escape(unsigned char c)
{
    return c == ',' || c == '=' || c == '{' || c == '}' || c == '%' || c < 0x20 || c == 0x7f;
}

int label_format(char *out, size_t cap, const char *key, const char *value)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(key);
    if (n + 2 > cap)
        return -ENAMETOOLONG;
    memcpy(out, key, n);
    out[n++] = '=';
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        size_t need = needs_escape(*p) ? 3 : 1;
        if (n + need + 1 > cap)
            return -ENAMETOOLONG;
        if (need == 1) {
            out[n++] = (char)*p;
            continue;
        }
        out[n++] = '%';
        out[n++] = hex[*p >> 4];
        out[n++] = hex[*p & 15];
    }
    out[n] = '\0';
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void label_unescape(struct strbuf *o, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        int hi, lo;
        if (s[i] == '%' && i + 2 < len && (hi = hex_digit(s[i + 1])) >= 0 &&
            (lo = hex_digit(s[i + 2])) >= 0) {
            strbuf_addch(o, (char)(hi << 4 | lo));
            i += 2;
        } else
            strbuf_addch(o, s[i]);
    }
}
