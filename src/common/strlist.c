#include "common/strlist.h"

#include <string.h>

int strlist_each(const char *list, strlist_fn *fn, void *arg)
{
    return strlist_each_n(list, strlen(list), fn, arg);
}

int strlist_each_n(const char *list, size_t len, strlist_fn *fn, void *arg)
{
    const char *end = list + len;
    for (const char *p = list; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t n = comma ? (size_t)(comma - p) : (size_t)(end - p);
        int rc = fn(p, n, arg);
        if (rc)
            return rc;
        p += n + (comma != NULL);
    }
    return 0;
}

int strlist_split(const char *list, strlist_fn *fn, void *arg)
{
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ",");
        int rc = fn(p, n, arg);
        if (rc || !p[n])
            return rc;
        p += n;
    }
}

struct want {
    const char *item;
    size_t len;
};

static int equal(const char *item, size_t len, void *arg)
{
    const struct want *w = arg;
    return len == w->len && memcmp(item, w->item, len) == 0;
}

int strlist_has(const char *list, const char *item, size_t len)
{
    return strlist_has_n(list, strlen(list), item, len);
}

int strlist_has_n(const char *list, size_t list_len, const char *item, size_t len)
{
    struct want w = {item, len};
    return strlist_each_n(list, list_len, equal, &w) == 1;
}

struct nth {
    size_t left; /* items still to pass */
    const char *item;
    size_t len;
};

static int count_down(const char *item, size_t len, void *arg)
{
    struct nth *n = arg;
    if (n->left--)
        return 0;
    n->item = item;
    n->len = len;
    return 1;
}

const char *strlist_nth(const char *list, size_t index, size_t *len)
{
    struct nth n = {index, NULL, 0};
    strlist_each(list, count_down, &n);
    *len = n.len;
    return n.item;
}

struct pairs {
    strlist_pair_fn *fn;
    void *arg;
};

static int split_pair(const char *item, size_t len, void *arg)
{
    const struct pairs *p = arg;
    const char *eq = memchr(item, '=', len);
    if (!eq)
        return 0;
    size_t key_len = (size_t)(eq - item);
    return p->fn(item, key_len, eq + 1, len - key_len - 1, p->arg);
}

int strlist_each_pair(const char *list, strlist_pair_fn *fn, void *arg)
{
    struct pairs p = {fn, arg};
    return strlist_each(list, split_pair, &p);
}

struct lookup {
    const char *key;
    size_t key_len;
    const char *value;
    size_t value_len;
};

/* Compared as "key=" prefix rather than by strlist_each_pair's split, so a
 * key is found the same way whatever bytes it holds. */
static int key_matches(const char *item, size_t len, void *arg)
{
    struct lookup *l = arg;
    if (len <= l->key_len || strncmp(item, l->key, l->key_len) != 0 || item[l->key_len] != '=')
        return 0;
    l->value = item + l->key_len + 1;
    l->value_len = len - l->key_len - 1;
    return 1;
}

const char *strlist_value(const char *list, const char *key, size_t *len)
{
    struct lookup l = {key, strlen(key), NULL, 0};
    if (list)
        strlist_each(list, key_matches, &l);
    *len = l.value_len;
    return l.value;
}
