/*
 * strobe serve's HTTP side: libmicrohttpd's thread pool, the checks every
 * request passes before it reaches the API (rate, URI length, method, body,
 * token), static assets from the embedded table, and the headers every
 * response carries.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"
#include "serve/api.h"
#include "serve/assets.h"
#include "serve/ratelimit.h"
#include "serve/serve.h"

#define MAX_URI_BYTES 4096  /* longer request targets get 414 */
#define CONN_MEMORY   32768 /* per connection: request line and headers must fit */
/* A connection that sends nothing for this long is closed: one with headers
 * not yet complete, one idle between keep-alive requests, a reader that has
 * stopped reading. Short, so that idle sockets give their place back soon. */
#define CONN_TIMEOUT_S 10
/* Past CONN_LIMIT, new connections wait in the kernel's listen queue until
 * one closes. One address may hold half of them (libmicrohttpd closes the
 * socket of one more): a dashboard on loopback, where every user is
 * 127.0.0.1, needs a few, so the cap is only there against one remote host
 * taking every place. */
#define CONN_LIMIT        512
#define PER_IP_CONN_LIMIT (CONN_LIMIT / 2)

static const char csp_html[] = "default-src 'self'; img-src 'self' data:; object-src 'none'; "
                               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

struct server {
    const struct serve_config *cfg;
    struct MHD_Daemon *d;
    struct ratelimit rl;
    struct summary_cache *cache;
    pthread_key_t store_key; /* each worker thread's read-only store */
};

/* ---- per-thread store ------------------------------------------------------------ */

static void close_store(void *p)
{
    store_close(p);
}

static struct store *thread_store(struct server *sv, struct strbuf *err)
{
    struct store *s = pthread_getspecific(sv->store_key);
    if (s)
        return s;
    if (store_open(sv->cfg->store_uri, 1, &s, err) < 0)
        return NULL;
    pthread_setspecific(sv->store_key, s);
    return s;
}

/* the cookie that carries --token for the page's own requests */
#define TOKEN_COOKIE "strobe_token"

/* ---- responses ------------------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               struct MHD_Response *resp, int html)
{
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(resp, "X-Frame-Options", "DENY");
    if (html)
        MHD_add_response_header(resp, "Content-Security-Policy", csp_html);
    else
        MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'none'");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == MHD_HTTP_TOO_MANY_REQUESTS)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    enum MHD_Result rc = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    return rc;
}

/* A JSON body; sb is consumed. A body cut short by running out of memory is
 * never sent: a 500 goes instead. */
static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status, struct strbuf *sb)
{
    if (strbuf_failed(sb)) {
        api_error(sb, "out of memory"); /* resets sb, and with it the error */
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    size_t len = sb->len;
    char *body = strbuf_detach(sb);
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return respond(conn, status, "application/json; charset=utf-8", resp, 0);
}

static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
    struct strbuf sb;
    strbuf_init(&sb);
    api_error(&sb, msg);
    return send_json(conn, status, &sb);
}

static enum MHD_Result send_asset(struct MHD_Connection *conn, const struct serve_asset *a,
                                  const char *token)
{
    /* the table is static: no copy */
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    const char *type = serve_asset_type(a->name);
    if (resp && token && strncmp(type, "text/html", 9) == 0) {
        /* the page was opened with the token (it got this far): its scripts,
         * styles and API calls carry it as a cookie no script can read */
        char cookie[512];
        snprintf(cookie, sizeof(cookie), "%s=%s; HttpOnly; SameSite=Strict; Path=/", TOKEN_COOKIE,
                 token);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    }
    return respond(conn, MHD_HTTP_OK, type, resp, strncmp(type, "text/html", 9) == 0);
}

/* ---- checks ---------------------------------------------------------------------- */

/* Compare without an early exit, so the time taken does not tell how much
 * of a guessed token was right. */
static int token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
    return la > 0 && diff == 0;
}

static int authorized(struct MHD_Connection *conn, const char *token)
{
    if (!token)
        return 1;
    const char *h =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    /* the scheme's name is case-insensitive (RFC 7235, 2.1) */
    if (h && strncasecmp(h, "Bearer ", 7) == 0 && token_equal(h + 7, token))
        return 1;
    const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    if (q && token_equal(q, token))
        return 1;
    /* the dashboard's own requests (scripts, styles, fetch) carry the
     * cookie its page was given */
    const char *c = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, TOKEN_COOKIE);
    return c && token_equal(c, token);
}

/* The client's address bytes, the rate limiter's key. */
static size_t client_key(struct MHD_Connection *conn, uint8_t key[16])
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (!ci || !ci->client_addr)
        return 0;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET) {
        memcpy(key, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        return 16;
    }
    return 0;
}

static int has_body(struct MHD_Connection *conn)
{
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *te =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    return te || (cl && strcmp(cl, "0") != 0);
}

struct args_ctx {
    struct api_query *q;
    int overflow;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    (void)kind;
    struct args_ctx *a = cls;
    if (a->q->n == API_MAX_ARGS) {
        a->overflow = 1;
        return MHD_NO;
    }
    a->q->key[a->q->n] = key;
    a->q->value[a->q->n] = value ? value : "";
    a->q->n++;
    return MHD_YES;
}

/* ---- the request handler ------------------------------------------------------------ */

static enum MHD_Result serve_api(struct server *sv, struct MHD_Connection *conn, const char *url)
{
    struct api_query q = {0};
    struct args_ctx a = {&q, 0};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
    if (a.overflow)
        return send_error(conn, MHD_HTTP_BAD_REQUEST, "too many query arguments");
    struct strbuf body, err;
    strbuf_init(&body);
    strbuf_init(&err);
    struct store *s = thread_store(sv, &err);
    int status;
    if (!s) {
        api_error(&body, err.buf);
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    } else {
        struct api_ctx c = {s, &sv->cfg->hooks, sv->cache};
        status = api_handle(&c, url, &q, &body);
    }
    strbuf_release(&err);
    return send_json(conn, (unsigned)status, &body);
}

/*
 * The connection's context word for the request in progress, set by log_uri
 * (no allocation, so nothing to free): the raw request target's length + 1,
 * shifted up one bit; the low bit says the request passed its checks.
 */
#define CTX_CHECKED ((uintptr_t)1)

static size_t ctx_uri_len(void *ctx)
{
    return (size_t)((uintptr_t)ctx >> 1) - 1;
}

/* The checks a request passes before it is served; answers the refusal and
 * sets *refused, else returns MHD_YES. */
static enum MHD_Result check_request(struct server *sv, struct MHD_Connection *conn,
                                     const char *method, size_t uri_len, int *refused)
{
    *refused = 1;
    uint8_t key[16];
    size_t klen = client_key(conn, key);
    if (!ratelimit_allow(&sv->rl, key, klen, clock_monotonic_ns()))
        return send_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, "too many requests; slow down");
    if (uri_len > MAX_URI_BYTES)
        return send_error(conn, MHD_HTTP_URI_TOO_LONG, "request URI too long");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only API: GET only");
    if (has_body(conn))
        return send_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, "no request bodies");
    if (!authorized(conn, sv->cfg->token))
        return send_error(conn, MHD_HTTP_UNAUTHORIZED, "a token is required");
    *refused = 0;
    return MHD_YES;
}

/* /metrics: the recorder's own snapshot, or every running run's in the
 * store; OpenMetrics when the scraper asks for it (Prometheus does). */
static enum MHD_Result serve_metrics(struct server *sv, struct MHD_Connection *conn)
{
    struct expo_set set;
    expo_set_init(&set);
    struct strbuf err, body;
    strbuf_init(&err);
    strbuf_init(&body);
    int rc;
    if (sv->cfg->metrics) {
        rc = sv->cfg->metrics(sv->cfg->metrics_arg, &set);
    } else {
        struct store *s = thread_store(sv, &err);
        rc = s ? serve_gather_metrics(s, clock_realtime_ns(), &set) : -EIO;
    }
    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    int om = expo_accepts_openmetrics(accept);
    if (rc >= 0)
        expo_set_write(&set, om, &body);
    expo_set_release(&set);
    strbuf_release(&err);
    if (rc < 0 || strbuf_failed(&body)) {
        strbuf_release(&body);
        return send_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                          rc == -ENOMEM ? "out of memory" : "no metrics yet");
    }
    size_t len = body.len;
    char *text = strbuf_detach(&body);
    struct MHD_Response *resp =
        text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE) : NULL;
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    return respond(conn, MHD_HTTP_OK, om ? EXPO_CONTENT_OPENMETRICS : EXPO_CONTENT_TEXT, resp, 0);
}

static enum MHD_Result serve_request(struct server *sv, struct MHD_Connection *conn,
                                     const char *url)
{
    if (strcmp(url, "/metrics") == 0)
        return serve_metrics(sv, conn);
    if (sv->cfg->metrics) /* the recorder's: nothing else */
        return send_error(conn, MHD_HTTP_NOT_FOUND, "not found: this server has /metrics only");
    if (strncmp(url, "/api/", 5) == 0)
        return serve_api(sv, conn, url);
    /* assets by exact name from the table: a path with '/' or '..' in it
     * names no entry, so nothing outside the set can be reached */
    const struct serve_asset *asset = NULL;
    if (strcmp(url, "/") == 0)
        asset = serve_asset_find("index.html");
    else if (strncmp(url, "/assets/", 8) == 0)
        asset = serve_asset_find(url + 8);
    if (!asset)
        return send_error(conn, MHD_HTTP_NOT_FOUND, "not found");
    return send_asset(conn, asset, sv->cfg->token);
}

/*
 * Called once the headers are in, then again (for a refused request, with
 * each piece of its body). A refusal is answered at once: libmicrohttpd then
 * closes the connection and reads no body. A request that passes is answered
 * on the second call, after the whole request has been read: only then may
 * the connection stay open for the next request (keep-alive).
 */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
    (void)version;
    (void)upload_data;
    struct server *sv = cls;
    if (*upload_data_size) {
        *upload_data_size = 0; /* a body we already refused: drop it */
        return MHD_YES;
    }
    if ((uintptr_t)*con_cls & CTX_CHECKED)
        return serve_request(sv, conn, url);
    int refused;
    enum MHD_Result rc = check_request(sv, conn, method, ctx_uri_len(*con_cls), &refused);
    if (!refused)
        *con_cls = (void *)((uintptr_t)*con_cls | CTX_CHECKED);
    return rc;
}

/* Called first for every request with the raw target: sets the context word
 * (see CTX_CHECKED). */
static void *log_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    return (void *)((uintptr_t)(strlen(uri) + 1) << 1);
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    (void)fmt;
    (void)ap; /* libmicrohttpd's own notes (a client hanging up) are not ours to print */
}

/* ---- listening ----------------------------------------------------------------------- */

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return 0;
}

/* HOST:PORT or [V6]:PORT into an address. */
static int resolve_listen(const char *listen, struct sockaddr_storage *out, socklen_t *len)
{
    char host[256];
    const char *port;
    if (listen[0] == '[') {
        const char *end = strchr(listen, ']');
        if (!end || end[1] != ':' || (size_t)(end - listen - 1) >= sizeof(host))
            return -EINVAL;
        memcpy(host, listen + 1, (size_t)(end - listen - 1));
        host[end - listen - 1] = '\0';
        port = end + 2;
    } else {
        const char *colon = strrchr(listen, ':');
        if (!colon || (size_t)(colon - listen) >= sizeof(host))
            return -EINVAL;
        memcpy(host, listen, (size_t)(colon - listen));
        host[colon - listen] = '\0';
        port = colon + 1;
    }
    char *end;
    long p = strtol(port, &end, 10);
    if (!*port || *end || p < 0 || p > 65535 || !host[0])
        return -EINVAL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, port, &hints, &ai) != 0 || !ai)
        return -EINVAL;
    memcpy(out, ai->ai_addr, ai->ai_addrlen);
    *len = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static void daemon_address(struct MHD_Daemon *d, char *buf, size_t cap)
{
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    struct sockaddr_storage ss = {0};
    socklen_t len = sizeof(ss);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (di && getsockname(di->listen_fd, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
            port = ntohs(in->sin_port);
        } else {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
            port = ntohs(in6->sin6_port);
        }
    }
    int v6 = ss.ss_family == AF_INET6;
    snprintf(buf, cap, "http://%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

static void print_listening(struct MHD_Daemon *d, const struct serve_config *c)
{
    char addr[INET6_ADDRSTRLEN + 32];
    daemon_address(d, addr, sizeof(addr));
    struct strbuf shown; /* the store without its password */
    strbuf_init(&shown);
    store_uri_redact(c->store_uri, &shown);
    fprintf(stderr, "strobe: serving %s/ from store '%s'%s\n", addr, shown.buf,
            c->token ? " (token required)" : "");
    strbuf_release(&shown);
}

/* Block the stop signals in every thread (the pool inherits the mask), so
 * that sigwait() in the main thread is the one place they arrive. */
static void block_stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-response is an error return, not a death */
}

static struct MHD_Daemon *start_daemon(struct server *sv, const struct sockaddr *sa)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (sa->sa_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    /* a pool of one is the polling thread alone: no pool option at all
     * (libmicrohttpd warns of a pool of one, or of none) */
    unsigned threads = sv->cfg->threads ? sv->cfg->threads : 4u;
    struct MHD_OptionItem pool[] = {
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    return MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, sv, MHD_OPTION_SOCK_ADDR, sa, MHD_OPTION_ARRAY, pool,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)CONN_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PER_IP_CONN_LIMIT,
        MHD_OPTION_URI_LOG_CALLBACK, log_uri, NULL, MHD_OPTION_EXTERNAL_LOGGER, log_mhd, NULL,
        MHD_OPTION_END);
}

struct serve_handle {
    struct server sv;
};

static void server_release(struct server *sv)
{
    ratelimit_release(&sv->rl);
    pthread_key_delete(sv->store_key);
    summary_cache_free(sv->cache);
}

/* A store that cannot be read fails now, not on the first request. */
static int probe_store(const char *uri)
{
    struct strbuf err;
    strbuf_init(&err);
    struct store *probe;
    int rc = store_open(uri, 1, &probe, &err);
    if (rc < 0)
        fprintf(stderr, "strobe: %s\n", err.buf);
    else
        store_close(probe);
    strbuf_release(&err);
    return rc;
}

int serve_start(const struct serve_config *c, struct serve_handle **out)
{
    struct sockaddr_storage ss;
    socklen_t slen;
    *out = NULL;
    if (c->token &&
        (!*c->token || strspn(c->token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789-._~") != strlen(c->token))) {
        /* it travels in a URL, a cookie and a header as it is */
        fprintf(stderr, "strobe: --token must be letters, digits and - . _ ~ only\n");
        return SERVE_EXIT_USAGE;
    }
    if (resolve_listen(c->listen, &ss, &slen) < 0) {
        fprintf(stderr, "strobe: cannot listen on '%s': expected HOST:PORT or [ADDR]:PORT\n",
                c->listen);
        return SERVE_EXIT_USAGE;
    }
    if (!is_loopback((struct sockaddr *)&ss) && !c->token) {
        fprintf(stderr, "strobe: refusing to listen on non-loopback '%s' without --token\n",
                c->listen);
        return SERVE_EXIT_USAGE;
    }
    if (c->store_uri && probe_store(c->store_uri) < 0)
        return SERVE_EXIT_ERROR;
    struct serve_handle *h = calloc(1, sizeof(*h));
    if (!h || (c->store_uri && summary_cache_new(&h->sv.cache) < 0) ||
        pthread_key_create(&h->sv.store_key, close_store) != 0) {
        fprintf(stderr, "strobe: out of memory\n");
        if (h)
            summary_cache_free(h->sv.cache);
        free(h);
        return SERVE_EXIT_ERROR;
    }
    h->sv.cfg = c;
    ratelimit_init(&h->sv.rl, c->rate_per_s, c->burst);
    h->sv.d = start_daemon(&h->sv, (struct sockaddr *)&ss);
    if (!h->sv.d) {
        fprintf(stderr, "strobe: cannot listen on '%s': %s\n", c->listen, strerror(errno));
        server_release(&h->sv);
        free(h);
        return SERVE_EXIT_ERROR;
    }
    *out = h;
    return SERVE_EXIT_OK;
}

void serve_address(const struct serve_handle *h, char *buf, size_t cap)
{
    daemon_address(h->sv.d, buf, cap);
}

void serve_stop(struct serve_handle *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->sv.d); /* joins the pool: every thread's store is closed by then */
    server_release(&h->sv);
    free(h);
}

int serve_run(const struct serve_config *c)
{
    sigset_t set;
    block_stop_signals(&set);
    struct serve_handle *h;
    int status = serve_start(c, &h);
    if (status != SERVE_EXIT_OK)
        return status;
    print_listening(h->sv.d, c);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "strobe: stopping (signal %d)\n", sig);
    serve_stop(h);
    return SERVE_EXIT_OK;
}
