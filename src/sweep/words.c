#include "sweep/words.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int push(struct words *w, size_t *cap, const struct strbuf *word, size_t offset)
{
    if (w->n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        char **v = realloc(w->v, c * sizeof(*v));
        if (!v)
            return -ENOMEM;
        w->v = v;
        size_t *o = realloc(w->offset, c * sizeof(*o));
        if (!o)
            return -ENOMEM;
        w->offset = o;
        *cap = c;
    }
    if (!(w->v[w->n] = strndup(word->buf ? word->buf : "", word->len)))
        return -ENOMEM;
    w->offset[w->n] = offset;
    w->v[++w->n] = NULL;
    return 0;
}

/* One character of a double-quoted string at *p (after the quote): the
 * escapes sh keeps inside "..." */
static void double_quoted_char(const char **p, struct strbuf *word)
{
    if (**p == '\\' && (*p)[1] && strchr("\"\\$`", (*p)[1]))
        (*p)++;
    strbuf_addch(word, **p);
    (*p)++;
}

int words_split(const char *text, struct words *w, struct strbuf *why)
{
    memset(w, 0, sizeof(*w));
    size_t cap = 0;
    struct strbuf word;
    strbuf_init(&word);
    const char *p = text;
    int rc = 0;
    while (rc == 0) {
        while (is_blank(*p))
            p++;
        if (!*p)
            break;
        size_t start = (size_t)(p - text);
        strbuf_reset(&word);
        while (*p && !is_blank(*p) && rc == 0) {
            if (*p == '\'') {
                const char *end = strchr(p + 1, '\'');
                if (!end) {
                    strbuf_addf(why, "unclosed ' at character %zu", (size_t)(p - text) + 1);
                    rc = -1;
                    break;
                }
                strbuf_add(&word, p + 1, (size_t)(end - p - 1));
                p = end + 1;
            } else if (*p == '"') {
                const char *open = p++;
                while (*p && *p != '"')
                    double_quoted_char(&p, &word);
                if (!*p) {
                    strbuf_addf(why, "unclosed \" at character %zu", (size_t)(open - text) + 1);
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
                strbuf_addch(&word, p[1]);
                p += 2;
            } else {
                strbuf_addch(&word, *p++);
            }
        }
        if (rc == 0 && (strbuf_failed(&word) || push(w, &cap, &word, start) < 0)) {
            strbuf_adds(why, "out of memory");
            rc = -1;
        }
    }
    strbuf_release(&word);
    if (rc == 0 && !w->v && push(w, &cap, &word, 0) == 0) { /* an empty list, not NULL */
        free(w->v[0]);
        w->v[0] = NULL;
        w->n = 0;
    }
    return rc;
}

void words_release(struct words *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i]);
    free(w->v);
    free(w->offset);
    memset(w, 0, sizeof(*w));
}

size_t words_source_offset(const char *text, const struct words *w, size_t i, size_t at)
{
    const char *p = text + w->offset[i];
    char quote = 0;
    for (size_t n = 0; *p && (quote || !is_blank(*p));) {
        if (!quote && (*p == '\'' || *p == '"')) {
            quote = *p++;
            continue;
        }
        if (quote && *p == quote) {
            quote = 0;
            p++;
            continue;
        }
        if (*p == '\\' && p[1] && (!quote || (quote == '"' && strchr("\"\\$`", p[1]))))
            p++; /* the escape of the character that follows */
        if (n++ == at)
            break;
        p++;
    }
    return (size_t)(p - text);
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
