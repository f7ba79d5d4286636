#include "import/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES   (64 * 1024)
#define DEFAULT_LIMIT (1ULL << 30)

struct json_chunk {
    struct json_chunk *next;
    size_t cap;  /* bytes of data */
    size_t used; /* bytes handed out */
    _Alignas(max_align_t) unsigned char data[];
};

void json_doc_init(struct json_doc *d)
{
    memset(d, 0, sizeof(*d));
}

void json_doc_reset(struct json_doc *d)
{
    /* keep the oldest chunk (the last in the list): the usual size */
    struct json_chunk *c = d->chunks;
    while (c && c->next) {
        struct json_chunk *next = c->next;
        free(c);
        c = next;
    }
    d->chunks = c;
    if (c)
        c->used = 0;
    d->used_bytes = 0;
}

void json_doc_release(struct json_doc *d)
{
    for (struct json_chunk *c = d->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    memset(d, 0, sizeof(*d));
}

static void *doc_alloc(struct json_doc *d, size_t n)
{
    uint64_t limit = d->limit_bytes ? d->limit_bytes : DEFAULT_LIMIT;
    n = (n + 15) & ~(size_t)15;
    if (n > limit || d->used_bytes + n > limit)
        return NULL;
    struct json_chunk *c = d->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
        struct json_chunk *fresh = malloc(sizeof(*fresh) + cap);
        if (!fresh)
            return NULL;
        fresh->cap = cap;
        fresh->used = 0;
        if (c && c->used == 0 && !c->next) {
            /* an empty oldest chunk too small for this: replace it */
            free(c);
            c = NULL;
        }
        fresh->next = c;
        d->chunks = c = fresh;
    }
    void *p = c->data + c->used;
    c->used += n;
    d->used_bytes += n;
    return p;
}

/* ---- the parser ------------------------------------------------------------ */

struct parser {
    struct json_doc *d;
    const char *buf;
    size_t len;
    size_t pos;
    int depth;
};

static void skip_ws(struct parser *p)
{
    while (p->pos < p->len) {
        char c = p->buf[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        p->pos++;
    }
}

/* The error for stopping at pos: out of input, or a wrong byte. */
static int stop(const struct parser *p)
{
    return p->pos >= p->len ? -ENODATA : -EBADMSG;
}

static struct json *new_node(struct parser *p, enum json_type type)
{
    struct json *v = doc_alloc(p->d, sizeof(*v));
    if (v) {
        memset(v, 0, sizeof(*v));
        v->type = type;
    }
    return v;
}

static int hex4(struct parser *p, unsigned *out)
{
    if (p->len - p->pos < 4) {
        p->pos = p->len;
        return -ENODATA;
    }
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->buf[p->pos];
        unsigned x;
        if (c >= '0' && c <= '9')
            x = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            x = (unsigned)(c - 'A' + 10);
        else
            return -EBADMSG;
        v = v << 4 | x;
        p->pos++;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A \u escape (after the 'u'), joining a surrogate pair; a lone surrogate
 * becomes U+FFFD. Writes at most 4 bytes, never more than the 6 it read. */
static int unicode_escape(struct parser *p, char *o, size_t *n)
{
    unsigned cp;
    int rc = hex4(p, &cp);
    if (rc < 0)
        return rc;
    if (cp >= 0xd800 && cp < 0xdc00) {
        if (p->len - p->pos >= 2 && p->buf[p->pos] == '\\' && p->buf[p->pos + 1] == 'u') {
            size_t save = p->pos;
            unsigned lo;
            p->pos += 2;
            rc = hex4(p, &lo);
            if (rc < 0)
                return rc;
            if (lo >= 0xdc00 && lo < 0xe000)
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            else {
                p->pos = save; /* not a pair: the next escape stands alone */
                cp = 0xfffd;
            }
        } else {
            cp = 0xfffd;
        }
    } else if (cp >= 0xdc00 && cp < 0xe000) {
        cp = 0xfffd;
    }
    *n = put_utf8(o, cp);
    return 0;
}

/* A string at pos (its opening quote). The decoded form is never longer
 * than the raw text, so one allocation of the raw length is enough. */
static int parse_string(struct parser *p, const char **out, uint32_t *out_len)
{
    p->pos++; /* the quote */
    size_t start = p->pos, end = start;
    while (end < p->len && p->buf[end] != '"') {
        if (p->buf[end] == '\\')
            end++;
        end++;
    }
    if (end >= p->len) {
        p->pos = p->len;
        return -ENODATA;
    }
    if (end - start > UINT32_MAX - 1)
        return -EBADMSG;
    char *o = doc_alloc(p->d, end - start + 1);
    if (!o)
        return -ENOMEM;
    size_t n = 0;
    while (p->pos < end) {
        unsigned char c = (unsigned char)p->buf[p->pos];
        if (c < 0x20)
            return -EBADMSG; /* control characters must be escaped */
        if (c != '\\') {
            o[n++] = (char)c;
            p->pos++;
            continue;
        }
        p->pos++;
        char e = p->buf[p->pos++];
        switch (e) {
        case '"':
        case '\\':
        case '/':
            o[n++] = e;
            break;
        case 'b':
            o[n++] = '\b';
            break;
        case 'f':
            o[n++] = '\f';
            break;
        case 'n':
            o[n++] = '\n';
            break;
        case 'r':
            o[n++] = '\r';
            break;
        case 't':
            o[n++] = '\t';
            break;
        case 'u': {
            size_t k;
            int rc = unicode_escape(p, o + n, &k);
            if (rc < 0)
                return rc == -ENODATA ? -EBADMSG : rc; /* the closing quote is there */
            if (p->pos > end)
                return -EBADMSG; /* the escape ran over the quote */
            n += k;
            break;
        }
        default:
            p->pos--;
            return -EBADMSG;
        }
    }
    o[n] = '\0';
    p->pos = end + 1;
    *out = o;
    *out_len = (uint32_t)n;
    return 0;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(const char *buf, size_t len, size_t *pos)
{
    size_t i = *pos;
    if (i < len && buf[i] == '-')
        i++;
    if (i >= len)
        return -ENODATA;
    if (buf[i] == '0')
        i++;
    else if (is_digit(buf[i]))
        while (i < len && is_digit(buf[i]))
            i++;
    else
        return -EBADMSG;
    if (i < len && buf[i] == '.') {
        i++;
        if (i >= len)
            return -ENODATA;
        if (!is_digit(buf[i]))
            return -EBADMSG;
        while (i < len && is_digit(buf[i]))
            i++;
    }
    if (i < len && (buf[i] == 'e' || buf[i] == 'E')) {
        i++;
        if (i < len && (buf[i] == '+' || buf[i] == '-'))
            i++;
        if (i >= len)
            return -ENODATA;
        if (!is_digit(buf[i]))
            return -EBADMSG;
        while (i < len && is_digit(buf[i]))
            i++;
    }
    *pos = i;
    return 0;
}

static int parse_number(struct parser *p, struct json *v)
{
    size_t start = p->pos, end = start;
    int rc = scan_number(p->buf, p->len, &end);
    if (rc < 0) {
        p->pos = rc == -ENODATA ? p->len : end;
        return rc;
    }
    /* a number at the very end of the input may have been cut short: that
     * is for the caller to judge (a line ends there); it is whole here */
    size_t n = end - start;
    if (n > UINT32_MAX - 1)
        return -EBADMSG;
    char *text = doc_alloc(p->d, n + 1);
    if (!text)
        return -ENOMEM;
    memcpy(text, p->buf + start, n);
    text[n] = '\0';
    v->str = text;
    v->len = (uint32_t)n;
    v->num = strtod(text, NULL);
    p->pos = end;
    return 0;
}

static int parse_literal(struct parser *p, const char *word, struct json *v, enum json_type t)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < n; i++) {
        if (p->pos + i >= p->len) {
            p->pos = p->len;
            return -ENODATA;
        }
        if (p->buf[p->pos + i] != word[i]) {
            p->pos += i;
            return -EBADMSG;
        }
    }
    p->pos += n;
    v->type = t;
    return 0;
}

/* NaN, Infinity and -Infinity, which Python's json module writes for the
 * float values JSON has no form for (allow_nan, its default): a NUMBER node
 * whose text is the word, so json_scaled_i64 and json_num refuse it and only
 * v->num says what it is. */
static int parse_nonfinite(struct parser *p, struct json *v)
{
    static const struct {
        const char *word;
        double value;
    } words[] = {{"NaN", NAN}, {"Infinity", INFINITY}, {"-Infinity", -INFINITY}};
    const char *at = p->buf + p->pos;
    size_t i = at[0] == 'N' ? 0 : at[0] == 'I' ? 1 : 2;
    size_t start = p->pos;
    int rc = parse_literal(p, words[i].word, v, JSON_NUMBER);
    if (rc < 0)
        return rc;
    v->str = words[i].word;
    v->len = (uint32_t)(p->pos - start);
    v->num = words[i].value;
    return 0;
}

static int parse_any(struct parser *p, struct json **out);

/* Members of an array or object after its opening bracket. */
static int parse_members(struct parser *p, struct json *v, char close)
{
    struct json **tail = &v->child;
    p->pos++; /* the bracket */
    skip_ws(p);
    if (p->pos < p->len && p->buf[p->pos] == close) {
        p->pos++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        uint32_t key_len = 0;
        if (close == '}') {
            skip_ws(p);
            if (p->pos >= p->len || p->buf[p->pos] != '"')
                return stop(p);
            int rc = parse_string(p, &key, &key_len);
            if (rc < 0)
                return rc;
            skip_ws(p);
            if (p->pos >= p->len || p->buf[p->pos] != ':')
                return stop(p);
            p->pos++;
        }
        struct json *m;
        int rc = parse_any(p, &m);
        if (rc < 0)
            return rc;
        m->key = key;
        m->key_len = key_len;
        *tail = m;
        tail = &m->next;
        if (v->len == UINT32_MAX)
            return -EBADMSG;
        v->len++;
        skip_ws(p);
        if (p->pos >= p->len)
            return -ENODATA;
        char c = p->buf[p->pos];
        if (c == close) {
            p->pos++;
            return 0;
        }
        if (c != ',')
            return -EBADMSG;
        p->pos++;
    }
}

static int parse_any(struct parser *p, struct json **out)
{
    skip_ws(p);
    if (p->pos >= p->len)
        return -ENODATA;
    struct json *v = new_node(p, JSON_NULL);
    if (!v)
        return -ENOMEM;
    int rc;
    char c = p->buf[p->pos];
    switch (c) {
    case '{':
    case '[':
        if (p->depth >= JSON_MAX_DEPTH)
            return -EBADMSG;
        p->depth++;
        v->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
        rc = parse_members(p, v, c == '{' ? '}' : ']');
        p->depth--;
        break;
    case '"':
        v->type = JSON_STRING;
        rc = parse_string(p, &v->str, &v->len);
        break;
    case 't':
        rc = parse_literal(p, "true", v, JSON_TRUE);
        break;
    case 'f':
        rc = parse_literal(p, "false", v, JSON_FALSE);
        break;
    case 'n':
        rc = parse_literal(p, "null", v, JSON_NULL);
        break;
    case 'N':
    case 'I':
        rc = parse_nonfinite(p, v);
        break;
    default:
        v->type = JSON_NUMBER;
        if (c == '-' && p->pos + 1 < p->len && p->buf[p->pos + 1] == 'I')
            rc = parse_nonfinite(p, v); /* -Infinity */
        else
            rc = parse_number(p, v);
    }
    if (rc == 0)
        *out = v;
    return rc;
}

int json_parse_value(struct json_doc *d, const char *buf, size_t len, size_t *pos,
                     struct json **out)
{
    struct parser p = {d, buf, len, *pos, 0};
    if (p.pos > len)
        p.pos = len;
    int rc = parse_any(&p, out);
    *pos = p.pos;
    return rc;
}

int json_parse(struct json_doc *d, const char *buf, size_t len, struct json **out)
{
    size_t pos = 0;
    int rc = json_parse_value(d, buf, len, &pos, out);
    if (rc < 0)
        return rc;
    struct parser p = {d, buf, len, pos, 0};
    skip_ws(&p);
    return p.pos == len ? 0 : -EBADMSG;
}

/* ---- arrays, one element at a time ----------------------------------------- */

int json_array_open(const char *buf, size_t len, size_t *pos)
{
    struct parser p = {NULL, buf, len, *pos, 0};
    skip_ws(&p);
    *pos = p.pos;
    if (p.pos >= len)
        return -ENODATA;
    if (buf[p.pos] != '[')
        return -EBADMSG;
    *pos = p.pos + 1;
    return 0;
}

int json_array_next(struct json_doc *d, const char *buf, size_t len, size_t *pos, struct json **out)
{
    struct parser p = {d, buf, len, *pos, 0};
    skip_ws(&p);
    /* separators: a comma between elements; tolerate a stray one before
     * the first element or before ']' (writers that append ",\n") */
    while (p.pos < len && buf[p.pos] == ',') {
        p.pos++;
        skip_ws(&p);
    }
    if (p.pos >= len) {
        *pos = len;
        return -EPIPE;
    }
    if (buf[p.pos] == ']') {
        *pos = p.pos + 1;
        return 0;
    }
    p.depth = 1; /* inside the top-level array */
    int rc = parse_any(&p, out);
    *pos = p.pos;
    if (rc < 0)
        return rc;
    /* what follows must be a separator, the end, or the input's end */
    skip_ws(&p);
    if (p.pos < len && buf[p.pos] != ',' && buf[p.pos] != ']')
        return -EBADMSG;
    return 1;
}

int json_array_skip(const char *buf, size_t len, size_t *pos)
{
    size_t i = *pos;
    if (i >= len) {
        *pos = len;
        return -ENODATA;
    }
    const char *nl = memchr(buf + i, '\n', len - i);
    i = nl ? (size_t)(nl - buf) + 1 : len;
    *pos = i;
    return i >= len ? -ENODATA : 0;
}

/* ---- reading values -------------------------------------------------------- */

const struct json *json_get(const struct json *obj, const char *key)
{
    if (!obj || obj->type != JSON_OBJECT)
        return NULL;
    size_t n = strlen(key);
    for (const struct json *m = obj->child; m; m = m->next)
        if (m->key_len == n && memcmp(m->key, key, n) == 0)
            return m;
    return NULL;
}

const char *json_str(const struct json *v)
{
    return v && v->type == JSON_STRING ? v->str : NULL;
}

int json_num(const struct json *v, double *out)
{
    if (!v || v->type != JSON_NUMBER || !isfinite(v->num))
        return -EINVAL;
    *out = v->num;
    return 0;
}

int json_scaled_i64(const struct json *v, int exp10, int64_t *out)
{
    if (!v || (v->type != JSON_NUMBER && v->type != JSON_STRING))
        return -EINVAL;
    if (v->type == JSON_NUMBER && !is_digit(v->str[0]) && v->str[0] != '-')
        return -EINVAL; /* NaN, Infinity */
    if (v->type == JSON_NUMBER && v->str[0] == '-' && !is_digit(v->str[1]))
        return -EINVAL; /* -Infinity */
    const char *s = v->str;
    size_t len = v->len, end = 0;
    if (v->type == JSON_STRING && (scan_number(s, len, &end) < 0 || end != len))
        return -EINVAL;
    size_t i = 0;
    int neg = 0;
    if (s[i] == '-') {
        neg = 1;
        i++;
    }
    /* the digits of the mantissa, integer part then fraction */
    size_t int_start = i;
    while (i < len && is_digit(s[i]))
        i++;
    size_t int_end = i, frac_start = i, frac_end = i;
    if (i < len && s[i] == '.') {
        frac_start = ++i;
        while (i < len && is_digit(s[i]))
            i++;
        frac_end = i;
    }
    long exp = 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        while (i < len && is_digit(s[i])) {
            if (exp < 100000)
                exp = exp * 10 + (s[i] - '0');
            i++;
        }
        if (eneg)
            exp = -exp;
    }
    /* value = digits * 10^shift */
    long shift = exp + exp10 - (long)(frac_end - frac_start);
    size_t ndig = (int_end - int_start) + (frac_end - frac_start);
    /* the k-th mantissa digit */
#define DIGIT(k)                                                                                   \
    ((k) < int_end - int_start ? s[int_start + (k)] : s[frac_start + (k) - (int_end - int_start)])
    long keep = (long)ndig + (shift < 0 ? shift : 0); /* digits left of the point */
    uint64_t acc = 0;
    size_t k = 0;
    for (; (long)k < keep; k++) {
        unsigned d = (unsigned)(DIGIT(k) - '0');
        if (acc > (UINT64_MAX - d) / 10)
            return -ERANGE;
        acc = acc * 10 + d;
    }
    if (shift < 0) {
        /* round on the first digit dropped */
        if (keep >= 0 && (size_t)keep < ndig && DIGIT((size_t)keep) >= '5')
            acc++;
    } else {
        for (long e = 0; e < shift && acc; e++) {
            if (acc > UINT64_MAX / 10)
                return -ERANGE;
            acc *= 10;
        }
    }
#undef DIGIT
    if (neg) {
        if (acc > (uint64_t)INT64_MAX + 1)
            return -ERANGE;
        *out = acc == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)acc;
    } else {
        if (acc > (uint64_t)INT64_MAX)
            return -ERANGE;
        *out = (int64_t)acc;
    }
    return 0;
}
