/*
 * The recorder's Python stack sampler: which processes to read, when, and
 * how their stacks become a profile (sampler.h says what it offers).
 *
 * Processes. The recorder tracks the job's tree once a frame. A process is
 * looked at only when sampling is wanted (a rate, an open window, a ctl
 * stacks): py_reader_open parses its ELF files, which costs a few
 * milliseconds, so a shell or a C helper is looked at once, and again only
 * after an exec changed its comm. An interpreter not yet initialised is
 * tried again with a growing pause (RETRY_FIRST_NS, doubling to
 * RETRY_MAX_NS). Any other failure is one note and the process is left
 * alone for the rest of the run: it keeps running and everything else is
 * recorded.
 *
 * Rate. The timer runs at the --py-sample rate, or at PY_WINDOW_HZ while a
 * window is open (whichever is faster), and is disarmed otherwise. Ticks
 * are jittered: each gap is drawn uniformly from 0.5 to 1.5 periods, so a
 * loop whose period is a multiple of the sampling period is not aliased
 * (a loop of 7 ms and 3 ms at 200 Hz, exactly periodic, read 75/25). Windows
 * are step ranges: --py-profile A-B, and each ctl py-profile N adds the
 * next N steps. The step comes from the job's drained events, which reach
 * the recorder up to a drain (100 ms) late; so a window opens when step
 * A-1 begins, and step A is sampled whole, and closes up to a drain after
 * step B+1 begins. The views cut exact step ranges from the step spans.
 * While sampling is due now or in a window to come, the processes' readers
 * are opened as the tree is tracked, not at the first tick: opening parses
 * the interpreter's ELF files, tens of milliseconds.
 *
 * Stacks become a profile: each reader's code ids map to profile frame ids
 * through a per-process table, so a function's strings are interned once;
 * a stack is interned root first. Memory is bounded: past mem_cap bytes of
 * profile (dictionaries and samples not yet taken by the writer), samples
 * are dropped and counted.
 */
#include "pyprof/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"
#include "pyprof/reader.h"

#define RETRY_FIRST_NS  (50 * NS_PER_MS)
#define RETRY_MAX_NS    (2 * NS_PER_S)
#define MEM_CAP_DEFAULT ((size_t)64 << 20)
#define WINDOWS_MAX     16
#define NOTES_MAX       64 /* notes kept; later ones are counted */

enum proc_state {
    PROC_NEW,     /* not looked at yet */
    PROC_RETRY,   /* an interpreter not ready yet: again at next_try_ns */
    PROC_READING, /* a reader is open */
    PROC_NOT_PY,  /* not CPython: looked at again only after an exec */
    PROC_FAILED,  /* cannot be read: noted once, left alone */
};

struct tracked {
    pid_t pid, ppid;
    char comm[16];
    enum proc_state state;
    uint32_t seen; /* the prune generation that last tracked it */
    int64_t next_try_ns, retry_ns;
    struct py_reader *reader;
    uint32_t *frame_of; /* profile frame id per reader code id; 0 not interned */
    uint32_t frame_of_cap;
    pid_t *tids; /* threads already defined in the profile */
    uint32_t ntids, tids_cap;
};

struct window {
    uint32_t first, last;
};

struct py_sampler {
    struct py_sampler_opts o;
    int tfd;
    int64_t armed_ns; /* the mean period of the ticks, 0 disarmed */
    int64_t due_ns;   /* the next tick, CLOCK_MONOTONIC */
    uint64_t rng;     /* xorshift state of the ticks' jitter */
    double rate_hz;   /* the base rate (ctl may change it) */
    struct window windows[WINDOWS_MAX];
    uint32_t nwindows;
    uint32_t step;
    uint32_t gen;
    struct tracked *procs;
    uint32_t nprocs, procs_cap;
    struct py_profile prof;
    uint64_t samples, dropped, torn_seen;
    uint32_t notes_kept, notes_more;
    struct strbuf notes;
    /* the tick in progress */
    struct tracked *cur;
    int64_t now_ns;
    int with_lines;
    struct strbuf *text; /* py_sampler_stacks' output, or NULL */
};

/* ---- notes ---------------------------------------------------------------- */

/* "Python stacks of COMM (pid PID) are not sampled: WHY" */
static void note_unread(struct py_sampler *s, const char *comm, pid_t pid, const char *why)
{
    if (s->notes_kept >= NOTES_MAX) {
        s->notes_more++;
        return;
    }
    s->notes_kept++;
    size_t at = s->notes.len;
    strbuf_adds(&s->notes, "Python stacks of ");
    strbuf_add_visible(&s->notes, comm); /* a process names itself: no control bytes */
    strbuf_addf(&s->notes, " (pid %d) are not sampled: ", (int)pid);
    strbuf_add_visible(&s->notes, why);
    strbuf_addch(&s->notes, '\n');
    if (!strbuf_failed(&s->notes))
        log_note("%.*s", (int)(s->notes.len - at - 1), s->notes.buf + at);
}

/* ---- the timer ------------------------------------------------------------ */

static int window_open(const struct py_sampler *s)
{
    for (uint32_t i = 0; i < s->nwindows; i++)
        if (s->step + 1 >= s->windows[i].first && s->step <= s->windows[i].last)
            return 1;
    return 0;
}

/* Whether stacks are sampled now or in a window still to come. */
static int sampling_due(const struct py_sampler *s)
{
    if (s->rate_hz > 0)
        return 1;
    for (uint32_t i = 0; i < s->nwindows; i++)
        if (s->windows[i].last >= s->step)
            return 1;
    return 0;
}

static double effective_hz(const struct py_sampler *s)
{
    double hz = s->rate_hz;
    if (window_open(s) && hz < PY_WINDOW_HZ)
        hz = PY_WINDOW_HZ;
    return hz;
}

/* A uniform draw from [0, 1): xorshift64*. */
static double draw(struct py_sampler *s)
{
    uint64_t x = s->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    s->rng = x;
    return (double)((x * UINT64_C(0x2545F4914F6CDD1D)) >> 11) / 9007199254740992.0;
}

/* The next tick, 0.5 to 1.5 mean periods after the last one's due time
 * (after now, when the loop was late: no burst to catch up). */
static void arm_next(struct py_sampler *s, int from_now)
{
    struct itimerspec its = {0};
    if (s->armed_ns) {
        int64_t now = clock_monotonic_ns();
        int64_t gap = (int64_t)((double)s->armed_ns * (0.5 + draw(s)));
        s->due_ns = from_now || s->due_ns + gap <= now ? now + gap : s->due_ns + gap;
        its.it_value.tv_sec = s->due_ns / NS_PER_S;
        its.it_value.tv_nsec = s->due_ns % NS_PER_S;
    }
    timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* (Re)arm the timer for the rate now due; nothing when it is already so. */
static void rearm(struct py_sampler *s)
{
    double hz = effective_hz(s);
    int64_t period = hz > 0 ? (int64_t)(1e9 / hz) : 0;
    if (period == s->armed_ns || s->tfd < 0)
        return;
    s->armed_ns = period;
    arm_next(s, 1);
}

/* ---- processes ------------------------------------------------------------ */

static void close_reader(struct py_sampler *s, struct tracked *t)
{
    if (t->reader)
        s->torn_seen += py_reader_torn(t->reader);
    py_reader_close(t->reader);
    t->reader = NULL;
    free(t->frame_of);
    t->frame_of = NULL;
    t->frame_of_cap = 0;
    free(t->tids);
    t->tids = NULL;
    t->ntids = t->tids_cap = 0;
}

static struct tracked *find_tracked(struct py_sampler *s, pid_t pid)
{
    for (uint32_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].pid == pid)
            return &s->procs[i];
    return NULL;
}

void py_sampler_track(struct py_sampler *s, pid_t pid, pid_t ppid, const char *comm)
{
    struct tracked *t = find_tracked(s, pid);
    if (!t) {
        if (array_grow((void **)&s->procs, &s->procs_cap, s->nprocs + 1, sizeof(*s->procs), 16) < 0)
            return; /* not sampled: memory is short */
        t = &s->procs[s->nprocs++];
        memset(t, 0, sizeof(*t));
        t->pid = pid;
        snprintf(t->comm, sizeof(t->comm), "%s", comm ? comm : "");
    } else if (comm && strncmp(t->comm, comm, sizeof(t->comm) - 1) != 0) {
        /* an exec: another program, maybe Python now */
        close_reader(s, t);
        t->state = PROC_NEW;
        snprintf(t->comm, sizeof(t->comm), "%s", comm);
    }
    t->ppid = ppid;
    t->seen = s->gen;
}

static int ready(struct py_sampler *s, struct tracked *t, int64_t now);

void py_sampler_prune(struct py_sampler *s)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->nprocs; i++) {
        if (s->procs[i].seen != s->gen) {
            close_reader(s, &s->procs[i]);
            continue;
        }
        s->procs[kept++] = s->procs[i];
    }
    s->nprocs = kept;
    s->gen++;
    if (!sampling_due(s))
        return;
    int64_t now = clock_monotonic_ns();
    for (uint32_t i = 0; i < s->nprocs; i++)
        ready(s, &s->procs[i], now);
}

/* Open t's reader when it is due a look; whether it can be read now. */
static int ready(struct py_sampler *s, struct tracked *t, int64_t now)
{
    if (t->state == PROC_READING)
        return 1;
    if (t->state == PROC_NOT_PY || t->state == PROC_FAILED)
        return 0;
    if (t->state == PROC_RETRY && now < t->next_try_ns)
        return 0;
    struct strbuf why;
    strbuf_init(&why);
    int rc = py_reader_open(t->pid, &t->reader, &why);
    if (rc == 0) {
        t->state = PROC_READING;
        py_profile_process(&s->prof, t->pid, t->ppid, t->comm);
    } else if (rc == -EAGAIN) {
        t->retry_ns = t->retry_ns ? t->retry_ns * 2 : RETRY_FIRST_NS;
        if (t->retry_ns > RETRY_MAX_NS)
            t->retry_ns = RETRY_MAX_NS;
        t->state = PROC_RETRY;
        t->next_try_ns = now + t->retry_ns;
    } else if (rc == -ENOENT) {
        t->state = PROC_NOT_PY;
    } else {
        t->state = PROC_FAILED;
        note_unread(s, t->comm, t->pid, why.len ? why.buf : strerror(-rc));
    }
    strbuf_release(&why);
    return t->state == PROC_READING;
}

/* ---- one sample ----------------------------------------------------------- */

/* The profile frame id of the reader's code id, interned on first use; 0
 * when memory ran out. */
static uint32_t frame_id(struct py_sampler *s, struct tracked *t, uint32_t code)
{
    if (code >= t->frame_of_cap) {
        uint32_t cap = t->frame_of_cap;
        if (array_grow((void **)&t->frame_of, &cap, code + 1, sizeof(*t->frame_of), 256) < 0)
            return 0;
        memset(t->frame_of + t->frame_of_cap, 0, (cap - t->frame_of_cap) * sizeof(*t->frame_of));
        t->frame_of_cap = cap;
    }
    if (!t->frame_of[code]) {
        const struct py_code_info *ci = py_reader_code(t->reader, code);
        uint32_t id = 0;
        if (ci && py_profile_frame(&s->prof, ci->name, ci->file, ci->first_line, &id) == 0)
            t->frame_of[code] = id;
    }
    return t->frame_of[code];
}

/* Define thread tid in the profile the first time it is seen. */
static void define_thread(struct py_sampler *s, struct tracked *t, pid_t tid)
{
    for (uint32_t i = 0; i < t->ntids; i++)
        if (t->tids[i] == tid)
            return;
    if (array_grow((void **)&t->tids, &t->tids_cap, t->ntids + 1, sizeof(*t->tids), 8) < 0)
        return;
    t->tids[t->ntids++] = tid;
    char path[64], name[32] = "";
    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)t->pid, (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof(name) - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        name[strcspn(name, "\n")] = 0;
    }
    py_profile_thread(&s->prof, t->pid, tid, name);
}

static int add_sample(const struct py_thread_sample *ts, void *arg)
{
    struct py_sampler *s = arg;
    struct tracked *t = s->cur;
    if (py_profile_bytes(&s->prof) > s->o.mem_cap) {
        s->dropped++;
        return 0;
    }
    uint32_t frames[PY_STACK_MAX], depth = 0;
    for (uint32_t i = ts->depth; i-- > 0;) { /* root first */
        uint32_t id = frame_id(s, t, ts->code[i]);
        if (!id) {
            s->dropped++;
            return 0;
        }
        frames[depth++] = id;
    }
    uint32_t stack = 0;
    if (depth && py_profile_stack(&s->prof, frames, depth, &stack) < 0) {
        s->dropped++;
        return 0;
    }
    define_thread(s, t, ts->tid);
    struct py_sample smp = {.t_ns = s->now_ns,
                            .pid = t->pid,
                            .tid = ts->tid,
                            .stack = stack,
                            .state = ts->state,
                            .gil = ts->holds_gil};
    if (py_profile_add(&s->prof, &smp) < 0) {
        s->dropped++;
        return 0;
    }
    s->samples++;
    return 0;
}

static void sample_all(struct py_sampler *s)
{
    int64_t mono = clock_monotonic_ns();
    s->now_ns = clock_realtime_ns();
    for (uint32_t i = 0; i < s->nprocs; i++) {
        struct tracked *t = &s->procs[i];
        if (!ready(s, t, mono))
            continue;
        s->cur = t;
        int rc = py_reader_sample(t->reader, 0, add_sample, s);
        if (rc == -ESRCH) { /* it exited: the prune will forget it */
            close_reader(s, t);
            t->state = PROC_NOT_PY;
        } else if (rc < 0 && rc != -EFAULT) { /* it became unreadable (made itself non-dumpable) */
            close_reader(s, t);
            t->state = PROC_FAILED;
            char why[128];
            snprintf(why, sizeof(why), "its memory cannot be read any more (%s)", strerror(-rc));
            note_unread(s, t->comm, t->pid, why);
        }
    }
    s->cur = NULL;
}

void py_sampler_tick(struct py_sampler *s)
{
    uint64_t expirations;
    if (s->tfd >= 0 && read(s->tfd, &expirations, sizeof(expirations)) != sizeof(expirations))
        return;
    sample_all(s);
    arm_next(s, 0);
}

/* ---- windows and rate ----------------------------------------------------- */

static int add_window(struct py_sampler *s, uint32_t first, uint32_t last)
{
    /* windows that are over make room */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->nwindows; i++)
        if (s->windows[i].last >= s->step)
            s->windows[kept++] = s->windows[i];
    s->nwindows = kept;
    if (s->nwindows == WINDOWS_MAX)
        return -ENOSPC;
    s->windows[s->nwindows++] = (struct window){first, last};
    rearm(s);
    return 0;
}

void py_sampler_step(struct py_sampler *s, uint32_t step)
{
    if (step <= s->step)
        return;
    s->step = step;
    rearm(s);
}

int py_sampler_set_rate(struct py_sampler *s, double rate_hz)
{
    if (!(rate_hz >= 0) || rate_hz > PY_RATE_MAX_HZ)
        return -EINVAL;
    s->rate_hz = rate_hz;
    rearm(s);
    return 0;
}

int py_sampler_window(struct py_sampler *s, uint32_t n, uint32_t *first)
{
    if (!n || s->step > UINT32_MAX - n)
        return -EINVAL;
    *first = s->step + 1;
    return add_window(s, s->step + 1, s->step + n);
}

/* ---- ctl stacks ----------------------------------------------------------- */

static int add_thread_text(const struct py_thread_sample *ts, void *arg)
{
    struct py_sampler *s = arg;
    struct tracked *t = s->cur;
    struct strbuf *o = s->text;
    strbuf_addf(o, "  thread %d: %s%s%s\n", (int)ts->tid, py_state_name(ts->state),
                ts->holds_gil ? ", holds the GIL" : "",
                ts->truncated ? ", outermost frames cut" : "");
    if (!ts->depth)
        strbuf_adds(o, "    (no Python frame)\n");
    for (uint32_t i = ts->depth; i-- > 0;) { /* innermost last, as a traceback */
        const struct py_code_info *ci = py_reader_code(t->reader, ts->code[i]);
        strbuf_adds(o, "    ");
        strbuf_add_visible(o, ci ? ci->name : "?");
        strbuf_adds(o, " (");
        strbuf_add_visible(o, ci ? ci->file : "?");
        if (ts->line[i] >= 0)
            strbuf_addf(o, ":%d)\n", (int)ts->line[i]);
        else
            strbuf_addf(o, ":%u)\n", ci ? ci->first_line : 0);
    }
    return 0;
}

int py_sampler_stacks(struct py_sampler *s, struct strbuf *out)
{
    int64_t mono = clock_monotonic_ns();
    uint32_t shown = 0;
    s->text = out;
    for (uint32_t i = 0; i < s->nprocs; i++) {
        struct tracked *t = &s->procs[i];
        if (t->state == PROC_RETRY)
            t->next_try_ns = 0; /* asked now: try now */
        if (t->state ==
            PROC_NOT_PY) /* looked at before its exec, maybe: a person asks, look again */
            t->state = PROC_NEW;
        if (!ready(s, t, mono)) {
            if (t->state == PROC_RETRY) { /* say so, rather than "no Python process" */
                strbuf_addf(out, "process %d (", (int)t->pid);
                strbuf_add_visible(out, t->comm);
                strbuf_adds(out, "): its Python is still starting; ask again\n");
                shown++;
            }
            continue;
        }
        strbuf_addf(out, "process %d (", (int)t->pid);
        strbuf_add_visible(out, t->comm);
        strbuf_addf(out, "), Python %s\n", py_reader_version(t->reader));
        s->cur = t;
        int rc = py_reader_sample(t->reader, 1, add_thread_text, s);
        if (rc < 0)
            strbuf_addf(out, "  cannot read it now: %s\n", strerror(-rc));
        shown++;
    }
    s->cur = NULL;
    s->text = NULL;
    if (!shown)
        strbuf_adds(out, "no Python process to read in the job\n");
    if (s->notes.len)
        strbuf_add(out, s->notes.buf, s->notes.len);
    return strbuf_failed(out) ? -ENOMEM : 0;
}

int py_rate_parse(const char *text, double *hz)
{
    if (strcmp(text, "off") == 0 || strcmp(text, "0") == 0) {
        *hz = 0;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end != text && !errno && (!*end || strcasecmp(end, "hz") == 0)) {
        *hz = v;
    } else {
        int64_t ns;
        if (duration_parse(text, &ns) < 0 || ns <= 0)
            return -EINVAL;
        *hz = 1e9 / (double)ns;
    }
    return *hz >= 1.0 && *hz <= PY_RATE_MAX_HZ ? 0 : -EINVAL;
}

/* ---- life ----------------------------------------------------------------- */

int py_sampler_new(const struct py_sampler_opts *o, struct py_sampler **out)
{
    struct py_sampler *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (o)
        s->o = *o;
    if (!s->o.mem_cap)
        s->o.mem_cap = MEM_CAP_DEFAULT;
    s->rate_hz = s->o.rate_hz;
    s->rng = (uint64_t)clock_monotonic_ns() | 1; /* xorshift's state is never 0 */
    py_profile_init(&s->prof);
    strbuf_init(&s->notes);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (s->tfd < 0) {
        int err = errno;
        py_sampler_free(s);
        return -err;
    }
    if (s->o.window_first)
        s->windows[s->nwindows++] = (struct window){s->o.window_first, s->o.window_last};
    rearm(s);
    *out = s;
    return 0;
}

void py_sampler_free(struct py_sampler *s)
{
    if (!s)
        return;
    for (uint32_t i = 0; i < s->nprocs; i++)
        close_reader(s, &s->procs[i]);
    free(s->procs);
    if (s->tfd >= 0)
        close(s->tfd);
    py_profile_release(&s->prof);
    strbuf_release(&s->notes);
    free(s);
}

int py_sampler_fd(const struct py_sampler *s)
{
    return s ? s->tfd : -1;
}

int py_sampler_take(struct py_sampler *s, struct py_block_out out[2], int *n)
{
    return py_profile_take(&s->prof, out, n);
}

const char *py_sampler_notes(struct py_sampler *s)
{
    if (s->notes_more) { /* said once, and counted from then on */
        strbuf_addf(&s->notes, "%u more processes could not be read\n", s->notes_more);
        s->notes_kept += s->notes_more;
        s->notes_more = 0;
    }
    return s->notes.len ? s->notes.buf : NULL;
}

uint64_t py_sampler_samples(const struct py_sampler *s)
{
    return s->samples;
}

uint64_t py_sampler_dropped(const struct py_sampler *s)
{
    return s->dropped;
}

uint64_t py_sampler_torn(const struct py_sampler *s)
{
    uint64_t torn = s->torn_seen;
    for (uint32_t i = 0; i < s->nprocs; i++)
        if (s->procs[i].reader)
            torn += py_reader_torn(s->procs[i].reader);
    return torn;
}
