/* One label of a series ("iface=eth0"): a series' labels are "k=v" pairs
 * joined by ',' and shown as name{labels}, so a value holding ',', '=',
 * '{' or '}' would read as other labels. Linux lets a network interface be
 * named "x,y=z"; written bare it read back as {"iface": "x", "y": "z"}.
 * Those bytes, '%' and control bytes are written as %XX (upper-case hex):
 * the labels string stays one opaque, unambiguous key (the store, the API
 * and the rules compare it whole), and no two names share one, where
 * replacing them by '_' would have merged "x,y" into "x_y"'s series. */
#ifndef STROBE_COMMON_LABEL_H
#define STROBE_COMMON_LABEL_H

#include <stddef.h>

#include "common/strbuf.h"

/* "key=value" into out, value escaped; -ENAMETOOLONG when it does not fit */
int label_format(char *out, size_t cap, const char *key, const char *value);

/* len bytes of a key or value as written above, its %XX decoded, onto o
 * (a '%' not followed by two hex digits is kept as it is) */
void label_unescape(struct strbuf *o, const char *s, size_t len);

/* labels (sorted by key, as strobe writes them) with the pair "key=value"
 * (value escaped) in its place by key, onto out. */
int labels_insert(const char *labels, const char *key, const char *value, struct strbuf *out);

/* labels without its pairs of key, onto rest; the last such value, as
 * written (escaped), onto value. Returns whether key was there. */
int labels_take(const char *labels, const char *key, struct strbuf *rest, struct strbuf *value);

#endif
