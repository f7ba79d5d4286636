#include "sweep/words.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A word as it is built: its bytes, and where each came from. */
struct word_buf {
    struct strbuf text;
    size_t *at;
    size_t cap;
    int failed;
};

static void put(struct word_buf *b, char c, size_t at)
{
    if (b->text.len + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        size_t *grown = realloc(b->at, cap * sizeof(*grown));
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->at = grown;
        b->cap = cap;
    }
    b->at[b->text.len] = at;
    strbuf_addch(&b->text, c);
}

/* Word b, ending at end in the text, onto w. */
static int push(struct words *w, size_t *cap, const struct word_buf *b, size_t end)
{
    if (w->n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        char **v = realloc(w->v, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        w->v = v;
        size_t **a = realloc(w->at, c * sizeof(*a));
        if (!a)
            return -ENOMEM;
        w->at = a;
        *cap = c;
    }
    size_t len = b->text.len;
    size_t *at = malloc((len + 1) * sizeof(*at));
    if (!at)
        return -ENOMEM;
    if (len)
        memcpy(at, b->at, len * sizeof(*at));
    at[len] = end;
    if (!(w->v[w->n] = strndup(b->text.buf ? b->text.buf : "", len))) {
        free(at);
        return -ENOMEM;
    }
    w->at[w->n] = at;
    w->v[++w->n] = NULL;
    return 0;
}

static size_t at_of(const char *text, const char *q)
{
    return (size_t)(q - text);
}

/* One character of a double-quoted string at *p (after the quote): the
 * escapes sh keeps inside "..." */
static void double_quoted_char(const char *text, const char **p, struct word_buf *b)
{
    if (**p == '\\' && (*p)[1] && strchr("\"\\$`", (*p)[1]))
        (*p)++;
    put(b, **p, at_of(text, *p));
    (*p)++;
}

int words_split(const char *text, struct words *w, struct strbuf *why)
{
    memset(w, 0, sizeof(*w));
    size_t cap = 0;
    struct word_buf b = {0};
    strbuf_init(&b.text);
    const char *p = text;
    int rc = 0;
    while (rc == 0) {
        while (is_blank(*p))
            p++;
        if (!*p)
            break;
        strbuf_reset(&b.text);
        while (*p && !is_blank(*p) && rc == 0) {
            if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end) {
                    strbuf_addf(why, "unclosed ' at character %zu", at_of(text, p) + 1);
                    rc = -1;
                    break;
                }
                for (const char *q = p + 1; q < end; q++)
                    put(&b, *q, at_of(text, q));
                p = end + 1;
            } else if (*p == '"') {
                const char *open = p++;
                while (*p && *p != '"')
                    double_quoted_char(text, &p, &b);
                if (!*p) {
                    strbuf_addf(why, "unclosed \" at character %zu", at_of(text, open) + 1);
                    rc = -1;
                    break;
                }
                p++;
            } else if (*p == '\\') {
                if (!p[1]) {
                    strbuf_adds(why, "a backslash ends the text");
                    rc = -1;
                    break;
                }
                put(&b, p[1], at_of(text, p + 1));
                p += 2;
            } else {
                put(&b, *p, at_of(text, p));
                p++;
            }
        }
        if (rc == 0 &&
            (b.failed || strbuf_failed(&b.text) || push(w, &cap, &b, at_of(text, p)) < 0)) {
            strbuf_adds(why, "out of memory");
            rc = -1;
        }
    }
    strbuf_reset(&b.text);
    if (rc == 0 && !w->v && push(w, &cap, &b, 0) == 0) { /* an empty list, not NULL */
        free(w->v[0]);
        free(w->at[0]);
        w->v[0] = NULL;
        w->at[0] = NULL;
        w->n = 0;
    }
    strbuf_release(&b.text);
    free(b.at);
    return rc;
}

void words_release(struct words *w)
{
    for (size_t i = 0; i < w->n; i++) {
        free(w->v[i]);
        free(w->at[i]);
    }
    free(w->v);
    free(w->at);
    memset(w, 0, sizeof(*w));
}

size_t words_source_offset(const char *text, const struct words *w, size_t i, size_t at)
{
    (void)text; /* the split kept each byte's place */
    return w->at[i][at];
}

static const char *lookup(const struct kv_list *l, const char *key)
{
    return l ? kv_list_get(l, key) : NULL;
}

int words_substitute(const char *word, const struct kv_list *first, const struct kv_list *second,
                     struct strbuf *out, struct strbuf *why, size_t *bad_at)
{
    strbuf_reset(out);
    for (const char *p = word; *p;) {
        if ((p[0] == '{' && p[1] == '{') || (p[0] == '}' && p[1] == '}')) {
            strbuf_addch(out, *p);
            p += 2;
            continue;
        }
        if (*p != '{') {
            strbuf_addch(out, *p++);
            continue;
        }
        const char *end = strchr(p, '}');
        *bad_at = (size_t)(p - word);
        if (!end) {
            strbuf_adds(why, "unclosed { (write {{ for a brace)");
            return -1;
        }
        char *key = strndup(p + 1, (size_t)(end - p - 1));
        const char *value = key ? lookup(first, key) : NULL;
        if (!value && key)
            value = lookup(second, key);
        if (!value) {
            strbuf_addf(why, "{%s} names no parameter", key ? key : "");
            free(key);
            return -1;
        }
        free(key);
        strbuf_adds(out, value);
        p = end + 1;
    }
    if (strbuf_failed(out)) {
        strbuf_adds(why, "out of memory");
        *bad_at = 0;
        return -1;
    }
    return 0;
}
