#include "common/label.h"

#include <errno.h>
#include <string.h>

#include "common/strlist.h"

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

static int key_cmp(const char *pair, size_t len, const char *key)
{
    size_t k = 0;
    while (k < len && pair[k] != '=')
        k++;
    size_t n = strlen(key);
    int c = strncmp(pair, key, k < n ? k : n);
    return c ? c : (k > n) - (k < n);
}

struct label_insert {
    struct strbuf *out;
    const char *key, *pair;
    int placed;
};

static void add_item(struct strbuf *out, const char *item, size_t len)
{
    if (out->len)
        strbuf_addch(out, ',');
    strbuf_add(out, item, len);
}

static int insert_item(const char *item, size_t len, void *arg)
{
    struct label_insert *l = arg;
    if (!l->placed && key_cmp(item, len, l->key) > 0) {
        add_item(l->out, l->pair, strlen(l->pair));
        l->placed = 1;
    }
    add_item(l->out, item, len);
    return 0;
}

int labels_insert(const char *labels, const char *key, const char *value, struct strbuf *out)
{
    char pair[512];
    int rc = label_format(pair, sizeof(pair), key, value);
    if (rc < 0)
        return rc;
    struct strbuf b;
    strbuf_init(&b);
    struct label_insert l = {&b, key, pair, 0};
    strlist_each(labels ? labels : "", insert_item, &l);
    if (!l.placed)
        add_item(&b, pair, strlen(pair));
    strbuf_add(out, b.buf, b.len);
    rc = strbuf_failed(&b) ? -ENOMEM : 0;
    strbuf_release(&b);
    return rc;
}

struct label_take {
    struct strbuf rest, *value;
    const char *key;
    int found;
};

static int take_item(const char *item, size_t len, void *arg)
{
    struct label_take *t = arg;
    if (key_cmp(item, len, t->key) != 0) {
        add_item(&t->rest, item, len);
        return 0;
    }
    size_t k = strlen(t->key) + 1;
    strbuf_reset(t->value);
    strbuf_add(t->value, item + k, len - k);
    t->found = 1;
    return 0;
}

int labels_take(const char *labels, const char *key, struct strbuf *rest, struct strbuf *value)
{
    struct label_take t = {.value = value, .key = key};
    strbuf_init(&t.rest);
    strlist_each(labels ? labels : "", take_item, &t);
    strbuf_add(rest, t.rest.buf, t.rest.len);
    strbuf_release(&t.rest);
    return t.found;
}
