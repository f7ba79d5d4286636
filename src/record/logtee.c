#include "common/array.h"
#include "record/logtee.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

/* The tee's read size: the most it writes into the capture before it
 * publishes the new total. */
#define TEE_CHUNK 16384

/* The tee writes, the recorder reads: total is published after the bytes
 * it counts, so a reader never sees a count ahead of its data. */
struct log_capture {
    _Atomic uint64_t total; /* bytes the job wrote */
    _Atomic int done;       /* the tee saw the stream's end */
    char head[LOG_HEAD_BYTES];
    char tail[LOG_TAIL_BYTES]; /* a ring: byte i (i >= HEAD) at (i - HEAD) % TAIL */
};

static void capture_add(struct log_capture *c, const char *p, size_t n)
{
    uint64_t at = atomic_load_explicit(&c->total, memory_order_relaxed);
    for (size_t i = 0; i < n;) {
        uint64_t pos = at + i;
        size_t room, off;
        char *dst;
        if (pos < LOG_HEAD_BYTES) {
            off = (size_t)pos;
            room = LOG_HEAD_BYTES - off;
            dst = c->head;
        } else {
            off = (size_t)((pos - LOG_HEAD_BYTES) % LOG_TAIL_BYTES);
            room = LOG_TAIL_BYTES - off;
            dst = c->tail;
        }
        size_t k = n - i < room ? n - i : room;
        memcpy(dst + off, p + i, k);
        i += k;
    }
    atomic_store_explicit(&c->total, at + n, memory_order_release);
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ---- the terminal line shared with the status line ------------------------ */

#define CLEAR_LINE "\r\033[K"

struct log_line {
    _Atomic int held;
    int shown; /* the status line is on the terminal's current line */
    int open;  /* the job's last byte on the terminal was no newline */
};

struct log_line *log_line_open(void)
{
    struct log_line *l =
        mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return l == MAP_FAILED ? NULL : l; /* zeroed: free, nothing shown, a line of its own */
}

void log_line_close(struct log_line *l)
{
    if (l)
        munmap(l, sizeof(*l));
}

static int line_try(struct log_line *l)
{
    return !atomic_exchange_explicit(&l->held, 1, memory_order_acquire);
}

/* Take the line, waiting at most ~50 ms: 1 when taken, 0 to go on without. */
static int line_take(struct log_line *l)
{
    for (int i = 0; i < 50; i++) {
        if (line_try(l))
            return 1;
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void line_give(struct log_line *l, int taken)
{
    if (taken)
        atomic_store_explicit(&l->held, 0, memory_order_release);
}

/* The tee's write of the job's bytes to the shared terminal line. */
static int line_write_job(struct log_line *l, int out, const char *p, size_t n)
{
    if (!l)
        return write_all(out, p, n);
    int taken = line_take(l);
    int rc = 0;
    if (l->shown) {
        rc = write_all(out, CLEAR_LINE, strlen(CLEAR_LINE));
        l->shown = 0;
    }
    if (rc == 0)
        rc = write_all(out, p, n);
    l->open = p[n - 1] != '\n';
    line_give(l, taken);
    return rc;
}

int log_line_status(struct log_line *l, const char *text, size_t n)
{
    if (!line_try(l))
        return 0; /* a tee is writing: the next second */
    int drawn = 0;
    if (!l->open) {
        char buf[256];
        size_t k = n < sizeof(buf) - strlen(CLEAR_LINE) ? n : sizeof(buf) - strlen(CLEAR_LINE);
        memcpy(buf, CLEAR_LINE, strlen(CLEAR_LINE));
        memcpy(buf + strlen(CLEAR_LINE), text, k);
        /* shown before the write: a tee that gave up waiting for the line
         * while the write was under way still erases what it finds */
        l->shown = 1;
        drawn = write_all(STDERR_FILENO, buf, strlen(CLEAR_LINE) + k) == 0;
    }
    line_give(l, 1);
    return drawn;
}

void log_line_print(struct log_line *l, int fd, const char *text, size_t n)
{
    if (!l) {
        write_all(fd, text, n);
        return;
    }
    int taken = line_take(l);
    int rc = 0;
    if (l->shown)
        rc = write_all(fd, CLEAR_LINE, strlen(CLEAR_LINE));
    else if (l->open)
        rc = write_all(fd, "\n", 1);
    if (rc == 0)
        write_all(fd, text, n);
    l->shown = 0;
    l->open = 0;
    line_give(l, taken);
}

/* The tee process: only system calls from here on (it is forked from a
 * process with threads). in is fd 3 by now, out the stream's own fd. */
static _Noreturn void tee_main(int out, struct log_capture *c, struct log_line *line)
{
    prctl(PR_SET_NAME, "strobe-tee"); /* in ps and top: not the job, nor the recorder */
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < ARRAY_SIZE(ignored); i++)
        signal(ignored[i], SIG_IGN);
    char buf[TEE_CHUNK];
    int passing = 1;
    for (;;) {
        ssize_t n = read(3, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a pipe's end, or EIO from a terminal whose last writer closed */
        capture_add(c, buf, (size_t)n);
        if (passing && line_write_job(line, out, buf, (size_t)n) < 0) {
            if (errno == EPIPE)
                break;   /* nobody reads on: the job gets SIGPIPE, as it would have */
            passing = 0; /* the terminal went away: keep capturing */
        }
    }
    atomic_store_explicit(&c->done, 1, memory_order_release);
    _exit(0);
}

/* A pseudo-terminal pair whose slave passes bytes through unchanged (no
 * \n -> \r\n, no echo) with the size of the terminal it stands for. */
static int open_pty(int like, int *master, int *slave)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return -errno;
    char name[128];
    if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0) {
        int err = errno;
        close(m);
        return -err;
    }
    int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s < 0) {
        int err = errno;
        close(m);
        return -err;
    }
    struct termios tio;
    if (tcgetattr(s, &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(s, TCSANOW, &tio);
    }
    struct winsize ws;
    if (ioctl(like, TIOCGWINSZ, &ws) == 0)
        ioctl(s, TIOCSWINSZ, &ws);
    *master = m;
    *slave = s;
    return 0;
}

int log_tee_start(struct log_tee *t, int target, struct log_line *line)
{
    memset(t, 0, sizeof(*t));
    t->job_fd = -1;
    t->target = target;
    if (fcntl(target, F_GETFD) < 0)
        return -EBADF; /* the stream is closed: nothing to pass on */
    struct log_capture *c =
        mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        return -errno;
    int in = -1, out = -1, rc = 0;
    if (isatty(target)) {
        rc = open_pty(target, &in, &out);
    } else {
        int fds[2];
        rc = pipe2(fds, O_CLOEXEC) < 0 ? -errno : 0;
        in = fds[0];
        out = fds[1];
    }
    if (rc < 0) {
        munmap(c, sizeof(*c));
        return rc;
    }
    pid_t pid = fork();
    if (pid < 0) {
        rc = -errno;
        close(in);
        close(out);
        munmap(c, sizeof(*c));
        return rc;
    }
    if (pid == 0) {
        /* the input to fd 3, everything above it closed: the tee must not
         * hold the other stream's pipe (it would never see its end) */
        if (in != 3 && dup2(in, 3) < 0)
            _exit(1);
        close_range(4, ~0U, 0);
        tee_main(target, c, line);
    }
    close(in);
    t->cap = c;
    t->pid = pid;
    t->job_fd = out;
    return 0;
}

void log_tee_child_setup(const struct log_tee *t)
{
    if (t->cap && t->job_fd >= 0)
        dup2(t->job_fd, t->target); /* the copy keeps no close-on-exec */
}

void log_tee_job_started(struct log_tee *t)
{
    if (t->job_fd >= 0)
        close(t->job_fd);
    t->job_fd = -1;
}

int log_tee_owns(struct log_tee *t, pid_t pid)
{
    if (!t->cap || pid != t->pid)
        return 0;
    t->exited = 1;
    return 1;
}

void log_tee_wait(struct log_tee *t, int timeout_ms)
{
    if (!t->cap)
        return;
    int64_t until = clock_monotonic_ns() + (int64_t)timeout_ms * NS_PER_MS;
    while (!atomic_load_explicit(&t->cap->done, memory_order_acquire) && !t->exited &&
           clock_monotonic_ns() < until) {
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int64_t log_tee_bytes(const struct log_tee *t)
{
    return t->cap ? (int64_t)atomic_load_explicit(&t->cap->total, memory_order_acquire) : 0;
}

#define CUT_NOTE_START "\n[strobe: "
#define CUT_NOTE_BODY  "%llu bytes cut here; the first %u and the last %llu kept"
#define CUT_NOTE_END   "]\n"

/* Whether the cut note follows the head of text, with *end just past it.
 * The job's own bytes may look like a note; the note is the one whose
 * figures add up to the text's length and to bytes. */
static int cut_note_end(const char *text, size_t len, int64_t bytes, size_t *end)
{
    size_t at = LOG_HEAD_BYTES + strlen(CUT_NOTE_START);
    if (len <= at || memcmp(text + LOG_HEAD_BYTES, CUT_NOTE_START, strlen(CUT_NOTE_START)) != 0)
        return 0;
    char note[128]; /* the note's figures, NUL-terminated for sscanf */
    size_t room = len - at < sizeof(note) - 1 ? len - at : sizeof(note) - 1;
    memcpy(note, text + at, room);
    note[room] = '\0';
    unsigned long long cut, kept;
    unsigned head;
    int n = 0;
    if (sscanf(note, CUT_NOTE_BODY "]%n", &cut, &head, &kept, &n) != 3 || !n || note[n] != '\n')
        return 0;
    *end = at + (size_t)n + 1;
    return head == LOG_HEAD_BYTES && *end + kept == len &&
           (unsigned long long)LOG_HEAD_BYTES + cut + kept == (unsigned long long)bytes;
}

size_t log_text_tail_start(const char *text, size_t len, int64_t bytes)
{
    size_t end;
    if (cut_note_end(text, len, bytes, &end))
        return end;
    return bytes == (int64_t)len ? 0 : len; /* every byte, or nothing known to be new */
}

/* Append the head and the newest kept_max bytes of the tail as of total. */
static int copy_text(const struct log_capture *c, uint64_t total, uint64_t kept_max,
                     struct strbuf *out)
{
    size_t head = total < LOG_HEAD_BYTES ? (size_t)total : LOG_HEAD_BYTES;
    int rc = strbuf_add(out, c->head, head);
    if (total <= LOG_HEAD_BYTES || rc < 0)
        return rc;
    uint64_t rest = total - LOG_HEAD_BYTES;
    uint64_t kept = rest < kept_max ? rest : kept_max;
    if (rest > kept)
        rc = strbuf_addf(out, CUT_NOTE_START CUT_NOTE_BODY CUT_NOTE_END,
                         (unsigned long long)(rest - kept), LOG_HEAD_BYTES,
                         (unsigned long long)kept);
    /* the oldest kept byte of the ring first */
    size_t start = (size_t)((rest - kept) % LOG_TAIL_BYTES);
    size_t first = LOG_TAIL_BYTES - start < kept ? LOG_TAIL_BYTES - start : (size_t)kept;
    if (rc == 0)
        rc = strbuf_add(out, c->tail + start, first);
    if (rc == 0 && first < kept)
        rc = strbuf_add(out, c->tail, (size_t)kept - first);
    return rc;
}

/*
 * While the tee still writes, it fills the ring up to TEE_CHUNK bytes past
 * the total it has published, over the oldest bytes. A copy that leaves out
 * the oldest `slack` bytes of the ring is whole when the total moved by at
 * most slack - TEE_CHUNK while it was taken (a seqlock's read: copy, fence,
 * read the total again). A copy that was outrun is taken again leaving out
 * twice as much, so a job that writes fast still gets a checkpoint: 32 KiB
 * of the 768 KiB kept at first, 256 KiB at the last of four tries.
 */
#define COPY_TRIES 4

int log_tee_text(const struct log_tee *t, struct strbuf *out, int64_t *bytes)
{
    *bytes = 0;
    if (!t->cap)
        return 0;
    struct log_capture *c = t->cap;
    size_t mark = out->len;
    for (int attempt = 0; attempt < COPY_TRIES; attempt++) {
        /* a tee that is done, or reaped, writes no more */
        int done = atomic_load_explicit(&c->done, memory_order_acquire) || t->exited;
        uint64_t total = atomic_load_explicit(&c->total, memory_order_acquire);
        if (done) {
            *bytes = (int64_t)total;
            return copy_text(c, total, LOG_TAIL_BYTES, out);
        }
        uint64_t slack = (uint64_t)(2 * TEE_CHUNK) << attempt;
        int rc = copy_text(c, total, LOG_TAIL_BYTES - slack, out);
        atomic_thread_fence(memory_order_acquire);
        uint64_t after = atomic_load_explicit(&c->total, memory_order_relaxed);
        if (rc < 0 || after - total <= slack - TEE_CHUNK) {
            *bytes = (int64_t)total;
            return rc;
        }
        strbuf_truncate(out, mark);
    }
    return -EAGAIN; /* outrun four times: the next checkpoint */
}

void log_tee_close(struct log_tee *t)
{
    log_tee_job_started(t);
    if (t->cap)
        munmap(t->cap, sizeof(*t->cap));
    t->cap = NULL;
}
