/*
 * Store URIs: which backend a URI names, and the URI without its password.
 *
 * A PostgreSQL URI is libpq's: postgresql://[user[:password]@][host][:port]
 * [,host[:port]...][/dbname][?param=value&...]. The password may sit in the
 * user info or in a password= parameter; the redacted form drops both and
 * keeps the rest byte for byte. The user info ends where libpq's parser ends
 * it: at the first '@', or at a '/' before any '@' (then there is none).
 */
#include <string.h>

#include "common/array.h"
#include "store/store.h"

static const char *const postgres_schemes[] = {"postgresql://", "postgres://"};

/* Length of the scheme when uri is a PostgreSQL one, else 0. */
static size_t postgres_scheme_len(const char *uri)
{
    for (size_t i = 0; i < ARRAY_SIZE(postgres_schemes); i++) {
        size_t n = strlen(postgres_schemes[i]);
        if (strncmp(uri, postgres_schemes[i], n) == 0)
            return n;
    }
    return 0;
}

int store_uri_is_postgres(const char *uri)
{
    return uri && postgres_scheme_len(uri) > 0;
}

/* The query parameter at p (up to '&' or the end) sets the password. */
static int is_password_param(const char *p, size_t len)
{
    static const char key[] = "password=";
    return len >= sizeof(key) - 1 && strncmp(p, key, sizeof(key) - 1) == 0;
}

/* Append the query string q (after '?') without its password parameters. */
static void add_query_without_password(struct strbuf *out, const char *q)
{
    int first = 1;
    while (*q) {
        size_t len = strcspn(q, "&");
        if (!is_password_param(q, len)) {
            strbuf_addch(out, first ? '?' : '&');
            strbuf_add(out, q, len);
            first = 0;
        }
        q += len + (q[len] == '&');
    }
}

int store_uri_redact(const char *uri, struct strbuf *out)
{
    size_t scheme = postgres_scheme_len(uri);
    if (!scheme)
        return strbuf_adds(out, uri);
    const char *auth = uri + scheme;
    size_t info_len = strcspn(auth, "@/");
    const char *rest = auth;
    strbuf_add(out, uri, scheme);
    if (auth[info_len] == '@') {
        strbuf_add(out, auth, strcspn(auth, ":@"));
        strbuf_addch(out, '@');
        rest = auth + info_len + 1;
    }
    const char *query = strchr(rest, '?');
    strbuf_add(out, rest, query ? (size_t)(query - rest) : strlen(rest));
    if (query)
        add_query_without_password(out, query + 1);
    return strbuf_failed(out);
}

int store_uri_has_password(const char *uri)
{
    struct strbuf sb;
    strbuf_init(&sb);
    int differs = store_uri_redact(uri, &sb) == 0 && strcmp(sb.buf, uri) != 0;
    strbuf_release(&sb);
    return differs;
}
