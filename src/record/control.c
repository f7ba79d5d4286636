/*
 * The recorder's control socket: `strobe ctl RUN REQUEST` on a running run.
 *
 * Where: a Unix stream socket <dir>/<run id>.sock, mode 0600, in a
 * directory of the user's own with mode 0700: $XDG_RUNTIME_DIR/strobe when
 * $XDG_RUNTIME_DIR is set and is ours, else /tmp/strobe-<uid>. A directory
 * that exists but is not ours or not 0700 is not used (one warning; the
 * run goes on without ctl). A socket left by a recorder that died is
 * replaced; the socket is removed at the end of the run. Never the network.
 *
 * Who: each connection's SO_PEERCRED uid must be the recorder's effective
 * uid; another user gets "error: ..." and is closed.
 *
 * How, without stalling the sampling: the listening socket and every
 * client are nonblocking fds in the recorder's epoll loop. A client sends
 * one line (at most CONTROL_LINE_MAX bytes) and gets one reply, then the
 * connection closes. A line too long, a NUL byte, or junk is an error
 * reply; a client that never writes is closed after CONTROL_WAIT_NS (the
 * loop's ticks check, at least every 100 ms); past CONTROL_CONNS_MAX
 * clients the next is told to retry. A reply goes out without waiting:
 * what the socket's buffer does not take (a job's stacks can be megabytes)
 * is kept and sent as the socket becomes writable, for CONTROL_SEND_NS at
 * most.
 *
 * Replies start "ok" or "error: " (strobe ctl's exit status follows).
 *
 * Requests:
 *   stacks             the Python sampler's stacks now (pyprof/sampler.h)
 *   py-profile N       a Python sampling window over the next N steps
 *   py-sample RATE     the whole-run Python sampling rate: Hz, a period
 *                      (10ms) or off
 *   torch-profile N    a torch.profiler window over the job's next N steps:
 *                      the request goes to <torch dir>/control.json
 *                      ({"seq":S,"torch_profile":{"steps":N}}, written
 *                      whole by a rename), then the segment header's
 *                      control_seq becomes S (release). The job's step hook
 *                      reads that word at each step begin (one load, no
 *                      thread, python/strobe/_torch_profile.py) and, when it
 *                      moved, opens the window at the step beginning; the
 *                      trace is written when the window closes and imported
 *                      at the run's end with --torch-profile's.
 *   interval DUR       the metrics interval from now on (the recorder's
 *                      set_interval rebases the deadlines)
 *   tag K=V            a tag of the run, added or replaced
 *   note TEXT          a line "ISO-time TEXT" in the run's notes text
 *
 * Tags and notes reach the store through the writer's batches (the loop
 * never touches the store): control_collect copies what changed into the
 * next batch, the writer puts it in the batch's transaction, and
 * control_stored marks it stored when that commits.
 */
#include "record/control.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fmt.h"
#include "common/log.h"
#include "pyprof/sampler.h"
#include "record/events.h"
#include "record/runinfo.h"
#include "strobe/ring.h"

#define NOTE_TEXT_MAX 1000   /* bytes of one note */
#define WINDOW_MAX    100000 /* steps of a profiling window */

/* ---- the directory -------------------------------------------------------- */

static int owned_by_us(const char *path, int want_mode)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (want_mode && (st.st_mode & 0777) != (mode_t)want_mode))
        return -EPERM;
    return 0;
}

int control_dir(int i, char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int have_xdg = xdg && *xdg == '/' && owned_by_us(xdg, 0) == 0;
    buf[0] = '\0';
    if (i == 0 && have_xdg)
        snprintf(buf, cap, "%s/strobe", xdg);
    else if (i == (have_xdg ? 1 : 0))
        snprintf(buf, cap, "/tmp/strobe-%u", (unsigned)geteuid());
    else
        return -ENOENT;
    return 0;
}

/* Make dir (0700) or check the one there. */
static int make_private_dir(const char *dir)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -errno;
    return owned_by_us(dir, 0700);
}

/* ---- the socket ----------------------------------------------------------- */

static void epoll_add(int epfd, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

void control_open(struct control *c, const char *run_id, int epfd)
{
    char dir[sizeof(c->path)];
    c->listen_fd = -1;
    c->epfd = epfd;
    for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
        c->conns[i].fd = -1;
    control_dir(0, dir, sizeof(dir));
    int rc = make_private_dir(dir);
    if (rc < 0) {
        log_warn("strobe ctl is off for this run: %s is %s", dir,
                 rc == -EPERM ? "not a directory of yours with mode 0700" : strerror(-rc));
        return;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir, run_id);
    if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
        log_warn("strobe ctl is off for this run: the socket's path in %s is too long", dir);
        return;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        log_warn("strobe ctl is off for this run: cannot make a socket: %s", strerror(errno));
        return;
    }
    unlink(sa.sun_path); /* a dead recorder's: the directory is ours alone */
    /* the directory is 0700 already: the socket's own mode is a second lock */
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(sa.sun_path, 0600) < 0 ||
        listen(fd, CONTROL_CONNS_MAX) < 0) {
        log_warn("strobe ctl is off for this run: cannot listen on %s: %s", sa.sun_path,
                 strerror(errno));
        close(fd);
        unlink(sa.sun_path);
        return;
    }
    memcpy(c->path, sa.sun_path, sizeof(c->path));
    c->listen_fd = fd;
    epoll_add(epfd, fd);
}

int control_owns(const struct control *c, int fd)
{
    if (c->listen_fd < 0)
        return 0;
    if (fd == c->listen_fd)
        return 1;
    for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
        if (c->conns[i].fd == fd)
            return 1;
    return 0;
}

static void close_conn(struct control *c, struct control_conn *k)
{
    /* what the client sent that was not read: closed on, it would reset the
     * connection, and the client lose the reply (a bounded drain: a client
     * that floods keeps the reset) */
    char sink[4096];
    for (int i = 0; i < 16 && recv(k->fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; i++)
        ;
    epoll_ctl(c->epfd, EPOLL_CTL_DEL, k->fd, NULL);
    close(k->fd);
    free(k->out);
    *k = (struct control_conn){.fd = -1};
}

/* Send what the socket takes of k's pending reply; close when all is sent
 * or the client is gone. */
static void send_pending(struct control *c, struct control_conn *k)
{
    while (k->out_off < k->out_len) {
        ssize_t w =
            send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return; /* the loop calls again when it is writable */
        if (w <= 0)
            break;
        k->out_off += (size_t)w;
    }
    close_conn(c, k);
}

static void reply_and_close(struct control *c, struct control_conn *k, const char *text)
{
    size_t len = strlen(text);
    ssize_t w = send(k->fd, text, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    size_t sent = w > 0 ? (size_t)w : 0;
    int more = sent < len && (w >= 0 || errno == EAGAIN || errno == EWOULDBLOCK);
    char *rest = more && k != NULL && k->fd >= 0 ? malloc(len - sent) : NULL;
    if (!rest || !control_owns(c, k->fd)) { /* all sent, the client gone, or no memory */
        free(rest);
        close_conn(c, k);
        return;
    }
    memcpy(rest, text + sent, len - sent);
    k->out = rest;
    k->out_len = len - sent;
    k->out_off = 0;
    k->deadline_ns = clock_monotonic_ns() + CONTROL_SEND_NS;
    struct epoll_event ev = {.events = EPOLLOUT, .data.fd = k->fd};
    epoll_ctl(c->epfd, EPOLL_CTL_MOD, k->fd, &ev);
}

static int peer_is_us(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

static void accept_clients(struct control *c, int64_t now_ns)
{
    for (;;) {
        int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN: none left; anything else: the next wake-up tries again */
        struct control_conn *k = NULL;
        for (size_t i = 0; !k && i < CONTROL_CONNS_MAX; i++)
            if (c->conns[i].fd < 0)
                k = &c->conns[i];
        struct control_conn tmp = {.fd = fd};
        if (!peer_is_us(fd)) {
            reply_and_close(c, &tmp, "error: this run belongs to another user\n");
            continue;
        }
        if (!k) {
            reply_and_close(c, &tmp, "error: the recorder is busy with other requests: retry\n");
            continue;
        }
        *k = (struct control_conn){.fd = fd, .deadline_ns = now_ns + CONTROL_WAIT_NS};
        epoll_add(c->epfd, fd);
    }
}

/* ---- the requests --------------------------------------------------------- */

/* A whole number in [1, max], the whole of text. */
static int parse_count(const char *text, uint32_t max, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 10);
    if (!*text || *text == '-' || *text == '+' || *end || errno || v < 1 || v > max)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

static int set_tag(struct control *c, const char *key, const char *value)
{
    for (size_t i = 0; i < c->tags.n; i++) {
        if (strcmp(c->tags.items[i].key, key) != 0)
            continue;
        char *v = strdup(value);
        if (!v)
            return -ENOMEM;
        free(c->tags.items[i].value);
        c->tags.items[i].value = v;
        return 0;
    }
    if (c->tags.n >= CONTROL_TAGS_MAX)
        return -ENOSPC;
    return kv_list_add(&c->tags, key, value);
}

static void do_tag(struct control *c, const char *arg, struct strbuf *out)
{
    const char *eq = strchr(arg, '=');
    struct strbuf why;
    strbuf_init(&why);
    char *key = eq ? strndup(arg, (size_t)(eq - arg)) : NULL;
    int rc;
    if (!eq || eq == arg)
        strbuf_addf(out, "error: tag wants KEY=VALUE\n");
    else if (!key)
        strbuf_adds(out, "error: out of memory\n");
    else if (runinfo_check_name("tag", key, &why) < 0 ||
             runinfo_check_name("tag", eq + 1, &why) < 0)
        strbuf_addf(out, "error: invalid %s\n", why.buf);
    else if ((rc = set_tag(c, key, eq + 1)) < 0)
        strbuf_addf(out, "error: %s\n",
                    rc == -ENOSPC ? "too many tags set through strobe ctl" : "out of memory");
    else {
        c->gen++;
        strbuf_addf(out, "ok: tag %s=%s\n", key, eq + 1);
    }
    free(key);
    strbuf_release(&why);
}

int control_note(struct control *c, int64_t real_ns, const char *text)
{
    char when[40];
    int64_t s = real_ns / NS_PER_S;
    time_t t = (time_t)s;
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof(when) - n, ".%03dZ", (int)(real_ns % NS_PER_S / NS_PER_MS));
    if (c->notes.len + strlen(when) + strlen(text) + 2 > CONTROL_NOTES_MAX)
        return -ENOSPC;
    strbuf_addf(&c->notes, "%s %s\n", when, text);
    if (strbuf_failed(&c->notes))
        return -ENOMEM;
    c->gen++;
    return 0;
}

static int has_control_chars(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

static void do_note(struct control *c, const char *arg, struct strbuf *out)
{
    if (!*arg)
        strbuf_adds(out, "error: note wants a text\n");
    else if (strlen(arg) > NOTE_TEXT_MAX || has_control_chars(arg))
        strbuf_addf(out, "error: a note is one line of at most %d bytes\n", NOTE_TEXT_MAX);
    else if (control_note(c, clock_realtime_ns(), arg) < 0)
        strbuf_addf(out, "error: the run's notes are full (%d KiB)\n", CONTROL_NOTES_MAX / 1024);
    else
        strbuf_adds(out, "ok: noted\n");
}

static void do_interval(struct control *c, const char *arg, struct strbuf *out)
{
    int64_t ns;
    if (duration_parse(arg, &ns) < 0 || ns < NS_PER_MS || ns > 60 * NS_PER_S) {
        strbuf_adds(out, "error: interval wants a duration from 1ms to 60s, such as 100ms\n");
        return;
    }
    struct strbuf why;
    strbuf_init(&why);
    char was[32], now[32], line[96];
    fmt_duration((double)c->interval_ns / 1e9, was, sizeof(was));
    fmt_duration((double)ns / 1e9, now, sizeof(now));
    if (!c->set_interval || c->set_interval(c->arg, ns, &why) < 0) {
        strbuf_addf(out, "error: %s\n", why.len ? why.buf : "the interval cannot change");
    } else {
        c->interval_ns = ns;
        snprintf(line, sizeof(line), "strobe ctl: interval %s -> %s", was, now);
        control_note(c, clock_realtime_ns(), line); /* a full notes text only loses the line */
        strbuf_addf(out, "ok: sampling every %s (was %s)\n", now, was);
    }
    strbuf_release(&why);
}

/* The request file, whole or not at all. */
static int write_request(const char *dir, uint64_t seq, uint32_t steps)
{
    char tmp[4200], path[4200], body[128];
    snprintf(tmp, sizeof(tmp), "%s/%s.part", dir, CONTROL_REQUEST);
    snprintf(path, sizeof(path), "%s/%s", dir, CONTROL_REQUEST);
    int n = snprintf(body, sizeof(body), "{\"seq\":%llu,\"torch_profile\":{\"steps\":%u}}\n",
                     (unsigned long long)seq, steps);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    int rc = write(fd, body, (size_t)n) == n ? 0 : -EIO;
    close(fd);
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
    return rc;
}

static void do_torch_profile(struct control *c, const char *arg, struct strbuf *out)
{
    uint32_t n;
    if (parse_count(arg, WINDOW_MAX, &n) < 0) {
        strbuf_addf(out, "error: torch-profile wants a number of steps from 1 to %d\n", WINDOW_MAX);
        return;
    }
    if (!c->torch_dir || !c->shm) {
        strbuf_adds(out, "error: torch-profile needs a Python job with framework events on\n");
        return;
    }
    uint32_t last = c->events ? c->events->last_step : 0;
    if (c->torch_seq && c->torch_until > last) {
        strbuf_addf(out, "error: a torch-profile window is open until step %u (step %u now)\n",
                    c->torch_until, last);
        return;
    }
    int rc = write_request(c->torch_dir, c->torch_seq + 1, n);
    if (rc < 0) {
        strbuf_addf(out, "error: cannot write the request for the job: %s\n", strerror(-rc));
        return;
    }
    c->torch_seq++;
    c->torch_until = last + n;
    /* release: the job that sees the new number finds the file whole */
    atomic_store_explicit(&c->shm->control_seq, c->torch_seq, memory_order_release);
    strbuf_addf(out,
                "ok: torch.profiler records the %u steps after the next step boundary: steps "
                "%u to %u by the steps recorded so far; the run imports the trace at its end\n",
                n, last + 1, last + n);
}

static void do_stacks(struct control *c, struct strbuf *out)
{
    size_t mark = out->len;
    strbuf_adds(out, "ok\n");
    if (py_sampler_stacks(c->py, out) < 0) {
        strbuf_truncate(out, mark);
        strbuf_adds(out, "error: cannot read the job's Python stacks\n");
    }
}

static void do_py_profile(struct control *c, const char *arg, struct strbuf *out)
{
    uint32_t n, first = 0;
    if (parse_count(arg, WINDOW_MAX, &n) < 0)
        strbuf_addf(out, "error: py-profile wants a number of steps from 1 to %d\n", WINDOW_MAX);
    else if (py_sampler_window(c->py, n, &first) < 0)
        strbuf_adds(out, "error: cannot open a Python profiling window\n");
    else
        strbuf_addf(out, "ok: Python stacks sampled at %.0f Hz over steps %u to %u\n", PY_WINDOW_HZ,
                    first, first + n - 1);
}

static void do_py_sample(struct control *c, const char *arg, struct strbuf *out)
{
    double hz;
    if (py_rate_parse(arg, &hz) < 0)
        strbuf_addf(out,
                    "error: py-sample wants a rate from 1 to %.0f Hz (100, 100Hz), a period "
                    "(10ms) or off\n",
                    PY_RATE_MAX_HZ);
    else if (py_sampler_set_rate(c->py, hz) < 0)
        strbuf_adds(out, "error: cannot change the Python sampling rate\n");
    else if (hz == 0)
        strbuf_adds(out, "ok: Python sampling off outside windows\n");
    else
        strbuf_addf(out, "ok: Python stacks sampled at %g Hz\n", hz);
}

typedef void request_fn(struct control *c, const char *arg, struct strbuf *out);

static void stacks_request(struct control *c, const char *arg, struct strbuf *out)
{
    (void)arg;
    do_stacks(c, out);
}

static const struct request {
    const char *name;
    request_fn *fn;
    int takes_arg;
    int needs_py; /* the Python sampler answers it */
} requests[] = {
    {"stacks", stacks_request, 0, 1},  {"py-profile", do_py_profile, 1, 1},
    {"py-sample", do_py_sample, 1, 1}, {"torch-profile", do_torch_profile, 1, 0},
    {"interval", do_interval, 1, 0},   {"tag", do_tag, 1, 0},
    {"note", do_note, 1, 0},
};

static void handle_line(struct control *c, char *line, struct strbuf *out)
{
    char *sp = strchr(line, ' ');
    if (sp)
        *sp = '\0';
    const char *arg = sp ? sp + 1 : "";
    for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
        const struct request *q = &requests[i];
        if (strcmp(line, q->name) != 0)
            continue;
        if (q->takes_arg != (sp != NULL))
            strbuf_addf(out, "error: %s %s\n", q->name,
                        q->takes_arg ? "wants an argument" : "takes no argument");
        else if (q->needs_py && !c->py)
            strbuf_adds(out, "error: this run has no Python sampler\n");
        else
            q->fn(c, arg, out);
        return;
    }
    strbuf_adds(out, "error: unknown request (stacks, torch-profile, py-profile, py-sample, "
                     "interval, tag, note)\n");
}

/* What k has read: answer once there is a line (or the client closed its end). */
static void serve(struct control *c, struct control_conn *k, int at_eof)
{
    char *nl = memchr(k->buf, '\n', k->len);
    if (!nl && !at_eof && k->len < sizeof(k->buf))
        return; /* more to come */
    if (!nl && k->len == sizeof(k->buf)) {
        reply_and_close(c, k, "error: request too long\n");
        return;
    }
    size_t len = nl ? (size_t)(nl - k->buf) : k->len;
    if (len && k->buf[len - 1] == '\r')
        len--;
    if (memchr(k->buf, '\0', len)) {
        reply_and_close(c, k, "error: the request holds a NUL byte\n");
        return;
    }
    char line[CONTROL_LINE_MAX + 1];
    memcpy(line, k->buf, len);
    line[len] = '\0';
    struct strbuf out;
    strbuf_init(&out);
    handle_line(c, line, &out);
    reply_and_close(c, k, strbuf_failed(&out) ? "error: out of memory\n" : out.buf);
    strbuf_release(&out);
}

void control_on_fd(struct control *c, int fd, int64_t now_ns)
{
    if (fd == c->listen_fd) {
        accept_clients(c, now_ns);
        return;
    }
    struct control_conn *k = NULL;
    for (size_t i = 0; !k && i < CONTROL_CONNS_MAX; i++)
        if (c->conns[i].fd == fd)
            k = &c->conns[i];
    if (!k)
        return;
    if (k->out) { /* writable again: more of a long reply */
        send_pending(c, k);
        return;
    }
    ssize_t n = recv(fd, k->buf + k->len, sizeof(k->buf) - k->len, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n < 0 || (n == 0 && k->len == 0)) {
        reply_and_close(c, k, "");
        return;
    }
    k->len += (size_t)n;
    serve(c, k, n == 0);
}

void control_tick(struct control *c, int64_t now_ns)
{
    for (size_t i = 0; i < CONTROL_CONNS_MAX; i++)
        if (c->conns[i].fd >= 0 && now_ns > c->conns[i].deadline_ns) {
            if (c->conns[i].out) /* a client that does not read its reply */
                close_conn(c, &c->conns[i]);
            else
                reply_and_close(c, &c->conns[i], "error: no request within a second\n");
        }
}

void control_stop(struct control *c)
{
    if (c->listen_fd < 0)
        return;
    for (size_t i = 0; i < CONTROL_CONNS_MAX; i++) {
        struct control_conn *k = &c->conns[i];
        if (k->fd >= 0 && k->out) { /* the rest of a long reply, as far as it goes now */
            send_pending(c, k);
            if (k->fd >= 0)
                close_conn(c, k);
        } else if (k->fd >= 0) {
            reply_and_close(c, k, "error: the run has ended\n");
            if (k->fd >= 0) /* the loop that would send the rest is over */
                close_conn(c, k);
        }
    }
    epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->listen_fd, NULL);
    close(c->listen_fd);
    unlink(c->path);
    c->listen_fd = -1;
}

void control_close(struct control *c)
{
    control_stop(c);
    kv_list_release(&c->tags);
    strbuf_release(&c->notes);
}

/* ---- the store ------------------------------------------------------------ */

uint64_t control_collect(struct control *c, struct kv_list *tags, struct strbuf *notes)
{
    if (c->gen == c->stored_gen)
        return 0;
    kv_list_release(tags);
    strbuf_reset(notes);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < c->tags.n; i++)
        rc = kv_list_add(tags, c->tags.items[i].key, c->tags.items[i].value);
    strbuf_add(notes, c->notes.buf, c->notes.len);
    if (rc < 0 || strbuf_failed(notes)) {
        kv_list_release(tags);
        strbuf_reset(notes);
        return 0; /* the next batch tries again */
    }
    return c->gen;
}

void control_stored(struct control *c, uint64_t gen)
{
    if (gen > c->stored_gen)
        c->stored_gen = gen;
}

int control_put(struct store *s, const char *run_id, const struct kv_list *tags,
                const struct strbuf *notes)
{
    int rc = tags->n ? s->ops->run_attrs_put(s, run_id, "tag", tags) : 0;
    if (rc == 0 && notes->len) {
        struct run_text_record t = {CONTROL_NOTES_KIND, notes->buf, notes->len,
                                    (int64_t)notes->len};
        rc = s->ops->run_text_put(s, run_id, &t);
    }
    return rc;
}
