#include "sample/proctree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/strbuf.h"
#include "sample/collector.h"

#define THREAD_SCAN_INTERVAL_NS NS_PER_S

int proc_tree_init(struct proc_tree *t, const struct sample_env *env)
{
    memset(t, 0, sizeof(*t));
    t->env = env;
    t->self_children = (struct pfile)PFILE_INIT;
    return 0;
}

static void entry_close(struct proc_entry *e)
{
    for (int i = 0; i < PF_COUNT; i++)
        pfile_close(&e->f[i]);
    if (e->dirfd >= 0)
        close(e->dirfd);
    e->dirfd = -1;
}

static void entry_free_buffers(struct proc_entry *e)
{
    for (int i = 0; i < PF_COUNT; i++)
        pfile_release(&e->f[i]);
}

void proc_tree_release(struct proc_tree *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        entry_close(&t->e[i]);
        entry_free_buffers(&t->e[i]);
    }
    /* slots past n keep buffers for reuse */
    for (uint32_t i = t->n; i < t->cap; i++)
        entry_free_buffers(&t->e[i]);
    free(t->e);
    pfile_release(&t->self_children);
    memset(t, 0, sizeof(*t));
}

struct proc_entry *proc_tree_find(struct proc_tree *t, pid_t pid)
{
    for (uint32_t i = 0; i < t->n; i++)
        if (t->e[i].pid == pid)
            return &t->e[i];
    return NULL;
}

/* Read stat (required), then io, statm and schedstat (best effort) of one
 * process. Returns 0, or -ESRCH/-ENOENT once the process has been reaped.
 * status would give RSS and context switches in one file, but the kernel
 * takes three times as long to write it as statm and schedstat together. */
static int entry_read(struct proc_entry *e, long page_bytes)
{
    struct pfile *f = e->f;
    int rc = pfile_read(&f[PF_STAT]);
    if (rc < 0)
        return rc;
    if (f[PF_STAT].len == 0 || parse_pid_stat(f[PF_STAT].buf, f[PF_STAT].len, &e->st) < 0)
        return -ESRCH;
    e->io_ok = f[PF_IO].fd >= 0 && pfile_read(&f[PF_IO]) == 0 &&
               parse_pid_io(f[PF_IO].buf, f[PF_IO].len, &e->iov) == 0;
    e->ctxt_ok = f[PF_SCHEDSTAT].fd >= 0 && pfile_read(&f[PF_SCHEDSTAT]) == 0 &&
                 parse_pid_schedstat(f[PF_SCHEDSTAT].buf, f[PF_SCHEDSTAT].len, &e->ctxt) == 0;
    uint64_t pages;
    if (f[PF_STATM].fd >= 0 && pfile_read(&f[PF_STATM]) == 0 &&
        parse_pid_statm(f[PF_STATM].buf, f[PF_STATM].len, &pages) == 0)
        e->rss_bytes = pages * (uint64_t)page_bytes;
    else
        e->rss_bytes = e->st.rss_pages * (uint64_t)page_bytes;
    e->ppid = e->st.ppid;
    return 0;
}

static int entry_open(struct proc_tree *t, struct proc_entry *e, pid_t pid)
{
    char path[64];
    snprintf(path, sizeof(path), "%d", (int)pid);
    e->dirfd = openat(t->env->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (e->dirfd < 0)
        return -errno;
    e->pid = pid;
    int rc = pfile_open(&e->f[PF_STAT], e->dirfd, "stat");
    if (rc < 0) {
        entry_close(e);
        return rc;
    }
    /* the rest may fail (io needs ptrace access): those series stay empty */
    pfile_open(&e->f[PF_IO], e->dirfd, "io");
    pfile_open(&e->f[PF_STATM], e->dirfd, "statm");
    pfile_open(&e->f[PF_SCHEDSTAT], e->dirfd, "schedstat");
    snprintf(path, sizeof(path), "task/%d/children", (int)pid);
    pfile_open(&e->f[PF_CHILDREN], e->dirfd, path);
    return 0;
}

static struct proc_entry *tree_add(struct proc_tree *t, pid_t pid)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        struct proc_entry *e = realloc(t->e, cap * sizeof(*e));
        if (!e)
            return NULL;
        for (uint32_t i = t->cap; i < cap; i++) {
            memset(&e[i], 0, sizeof(e[i]));
            e[i].dirfd = -1;
            for (int k = 0; k < PF_COUNT; k++)
                e[i].f[k] = (struct pfile)PFILE_INIT;
        }
        t->e = e;
        t->cap = cap;
    }
    struct proc_entry *e = &t->e[t->n];
    /* keep the slot's buffers, reset the rest */
    struct pfile keep[PF_COUNT];
    memcpy(keep, e->f, sizeof(keep));
    memset(e, 0, sizeof(*e));
    memcpy(e->f, keep, sizeof(keep));
    e->dirfd = -1;
    if (entry_open(t, e, pid) < 0 || entry_read(e, t->env->page_bytes) < 0) {
        entry_close(e);
        return NULL;
    }
    snprintf(e->comm, sizeof(e->comm), "%s", e->st.comm);
    t->n++;
    return e;
}

/* Remove entry i, keeping its buffers in the free tail of the array. Its
 * series get no more points: their open blocks are sealed and their buffers
 * given back, so memory follows the live tree, not every process ever seen. */
static void tree_remove(struct proc_tree *t, uint32_t i)
{
    struct proc_entry *e = &t->e[i];
    if (e->have_series && t->series) {
        uint32_t s[] = {e->s_cpu, e->s_rss, e->s_threads, e->s_read, e->s_write, e->s_ctxt};
        for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++)
            series_retire(t->series, s[k]);
    }
    entry_close(e);
    t->n--;
    if (i != t->n) {
        struct proc_entry tmp = t->e[i];
        t->e[i] = t->e[t->n];
        t->e[t->n] = tmp;
    }
}

static void totals_add_entry(struct tree_totals *tot, const struct proc_entry *e)
{
    tot->ticks += e->st.utime + e->st.stime + e->st.cutime + e->st.cstime;
    if (e->io_ok) {
        tot->read_bytes += e->iov.read_bytes;
        tot->write_bytes += e->iov.write_bytes;
        tot->rchar += e->iov.rchar;
        tot->wchar += e->iov.wchar;
    }
}

int proc_tree_set_root(struct proc_tree *t, pid_t pid)
{
    t->root_pid = pid;
    char path[64];
    snprintf(path, sizeof(path), "%d/task/%d/children", (int)t->env->self_pid,
             (int)t->env->self_tid);
    pfile_open(&t->self_children, t->env->proc_fd, path);
    return tree_add(t, pid) ? 0 : -ESRCH;
}

void proc_tree_not_job(struct proc_tree *t, pid_t pid)
{
    if (t->n_not_job < sizeof(t->not_job) / sizeof(t->not_job[0]))
        t->not_job[t->n_not_job++] = pid;
}

static int is_not_job(const struct proc_tree *t, pid_t pid)
{
    for (uint32_t i = 0; i < t->n_not_job; i++)
        if (t->not_job[i] == pid)
            return 1;
    return 0;
}

void proc_tree_reap_prepare(struct proc_tree *t, pid_t pid)
{
    if (is_not_job(t, pid))
        return;
    struct proc_entry *e = proc_tree_find(t, pid);
    if (!e)
        e = tree_add(t, pid); /* an orphan that came and went between samples */
    if (!e)
        return;
    entry_read(e, t->env->page_bytes); /* a zombie still shows its whole group's final totals */
    totals_add_entry(&t->reaped, e);
    if (e->ctxt_ok && e->have_prev)
        t->ctxt_sum += e->ctxt > e->prev_ctxt ? e->ctxt - e->prev_ctxt : 0;
    tree_remove(t, (uint32_t)(e - t->e));
}

static void discover_one(pid_t pid, void *arg)
{
    struct proc_tree *t = arg;
    if (pid == t->env->self_pid || proc_tree_find(t, pid) || is_not_job(t, pid))
        return;
    tree_add(t, pid);
}

static void read_children(struct proc_tree *t, struct pfile *f)
{
    if (f->fd < 0 || pfile_read(f) < 0)
        return;
    /* discover_one may grow t->e, moving the struct f lives in (not its
     * heap buffer): take the buffer first */
    const char *buf = f->buf;
    size_t len = f->len;
    parse_pid_list(buf, len, discover_one, t);
}

/* Children forked by threads other than the main one appear only in that
 * thread's children file: walk every thread's, once a second. */
static void scan_thread_children(struct proc_tree *t, uint32_t i, struct pfile *scratch)
{
    int taskfd = openat(t->e[i].dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (taskfd < 0)
        return;
    char dents[4096];
    pid_t pid = t->e[i].pid;
    long n;
    while ((n = syscall(SYS_getdents64, taskfd, dents, sizeof(dents))) > 0) {
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(dents + off);
            off += d->d_reclen;
            char *end;
            long tid = strtol(d->d_name, &end, 10);
            if (*end || tid <= 0 || tid == pid)
                continue;
            char path[64];
            snprintf(path, sizeof(path), "%ld/children", tid);
            if (pfile_open(scratch, taskfd, path) == 0)
                read_children(t, scratch);
            pfile_close(scratch);
        }
    }
    close(taskfd);
}

static void discover(struct proc_tree *t, int64_t mono_ns, struct pfile *scratch)
{
    read_children(t, &t->self_children);
    int full = mono_ns - t->last_thread_scan_ns >= THREAD_SCAN_INTERVAL_NS;
    /* entries appended during the walk are walked too: a new child's own
     * children are found in the same sample */
    for (uint32_t i = 0; i < t->n; i++) {
        read_children(t, &t->e[i].f[PF_CHILDREN]);
        if (full)
            scan_thread_children(t, i, scratch);
    }
    if (full)
        t->last_thread_scan_ns = mono_ns;
}

/* ---- the "proc" collector ------------------------------------------------ */

struct proc_state {
    struct proc_tree *t;
    struct pfile scratch;
};

static int proc_init(void *state, const struct sample_env *env, struct series_table *st)
{
    struct proc_state *s = state;
    struct proc_tree *t = env->tree;
    s->t = t;
    s->scratch = (struct pfile)PFILE_INIT;
    if (!t)
        return -ENOENT;
    t->series = st;
    int rc;
    if ((rc = series_get(st, "proc.cpu", "", "pct", &t->s_cpu)) < 0 ||
        (rc = series_get(st, "proc.rss_bytes", "", "bytes", &t->s_rss)) < 0 ||
        (rc = series_get(st, "proc.threads", "", "count", &t->s_threads)) < 0 ||
        (rc = series_get(st, "proc.count", "", "count", &t->s_count)) < 0 ||
        (rc = series_get(st, "proc.read_bytes_per_s", "", "bytes/s", &t->s_read)) < 0 ||
        (rc = series_get(st, "proc.write_bytes_per_s", "", "bytes/s", &t->s_write)) < 0 ||
        (rc = series_get(st, "proc.rchar_per_s", "", "bytes/s", &t->s_rchar)) < 0 ||
        (rc = series_get(st, "proc.wchar_per_s", "", "bytes/s", &t->s_wchar)) < 0 ||
        (rc = series_get(st, "proc.ctx_switches_per_s", "", "1/s", &t->s_ctxt)) < 0)
        return rc;
    return 0;
}

static int entry_series(struct proc_tree *t, struct proc_entry *e, struct series_table *st)
{
    char labels[32];
    struct strbuf meta;
    snprintf(labels, sizeof(labels), "pid=%d", (int)e->pid);
    int rc;
    if ((rc = series_get(st, "proc.cpu", labels, "pct", &e->s_cpu)) < 0 ||
        (rc = series_get(st, "proc.rss_bytes", labels, "bytes", &e->s_rss)) < 0 ||
        (rc = series_get(st, "proc.threads", labels, "count", &e->s_threads)) < 0 ||
        (rc = series_get(st, "proc.read_bytes_per_s", labels, "bytes/s", &e->s_read)) < 0 ||
        (rc = series_get(st, "proc.write_bytes_per_s", labels, "bytes/s", &e->s_write)) < 0 ||
        (rc = series_get(st, "proc.ctx_switches_per_s", labels, "1/s", &e->s_ctxt)) < 0)
        return rc;
    strbuf_init(&meta);
    strbuf_addf(&meta, "{\"pid\":%d,\"ppid\":%d,\"comm\":", (int)e->pid, (int)e->ppid);
    strbuf_add_json_str(&meta, e->comm);
    strbuf_addf(&meta, ",\"root\":%s}", e->pid == t->root_pid ? "true" : "false");
    series_set_meta(st, e->s_cpu, meta.buf);
    strbuf_release(&meta);
    e->have_series = 1;
    return 0;
}

/* Make sure e has its per-process series, within the cap; 1 when it has. */
static int entry_ensure_series(struct proc_tree *t, struct proc_entry *e, struct series_table *st)
{
    if (e->no_series)
        return 0;
    if (!e->have_series && t->series_procs >= PROC_SERIES_MAX) {
        /* a job forking without end must not grow the recorder without end:
         * past the cap a process counts in the tree totals only */
        e->no_series = 1;
        t->uncharted++;
        return 0;
    }
    if (e->have_series && strcmp(e->comm, e->st.comm) == 0 && e->meta_ppid == e->ppid)
        return 1;
    /* exec after fork changes comm, re-parenting changes ppid: the series
     * metadata follows */
    snprintf(e->comm, sizeof(e->comm), "%s", e->st.comm);
    e->meta_ppid = e->ppid;
    int had = e->have_series;
    if (entry_series(t, e, st) < 0)
        return 0;
    t->series_procs += !had;
    return 1;
}

static void entry_emit(struct proc_tree *t, struct proc_entry *e, struct sample_ctx *ctx)
{
    struct series_table *st = ctx->series;
    int charted = entry_ensure_series(t, e, st);
    uint64_t cpu = e->st.utime + e->st.stime;
    uint64_t ctxt = e->ctxt;
    if (e->have_prev && e->ctxt_ok)
        t->ctxt_sum += ctxt > e->prev_ctxt ? ctxt - e->prev_ctxt : 0;
    if (charted) {
        series_put(st, e->s_rss, (double)e->rss_bytes);
        series_put(st, e->s_threads, (double)e->st.num_threads);
    }
    if (charted && e->have_prev) {
        int64_t dt = ctx->mono_ns - e->prev_mono_ns;
        series_put(st, e->s_cpu,
                   rate_per_s(cpu, e->prev_cpu_ticks, dt) * 100.0 / (double)t->env->ticks_per_s);
        series_put(st, e->s_read, rate_per_s(e->iov.read_bytes, e->prev_io.read_bytes, dt));
        series_put(st, e->s_write, rate_per_s(e->iov.write_bytes, e->prev_io.write_bytes, dt));
        if (e->ctxt_ok)
            series_put(st, e->s_ctxt, rate_per_s(ctxt, e->prev_ctxt, dt));
    }
    e->prev_cpu_ticks = cpu;
    e->prev_io = e->iov;
    e->prev_ctxt = ctxt;
    e->prev_mono_ns = ctx->mono_ns;
    e->have_prev = 1;
}

/* Advance a running maximum and return how much it grew. */
static uint64_t grow(uint64_t *emitted, uint64_t now)
{
    if (now <= *emitted)
        return 0;
    uint64_t d = now - *emitted;
    *emitted = now;
    return d;
}

static void tree_emit(struct proc_tree *t, struct sample_ctx *ctx, uint64_t rss, int64_t threads)
{
    struct series_table *st = ctx->series;
    struct tree_totals now = t->reaped;
    for (uint32_t i = 0; i < t->n; i++)
        totals_add_entry(&now, &t->e[i]);
    series_put(st, t->s_rss, (double)rss);
    series_put(st, t->s_threads, (double)threads);
    series_put(st, t->s_count, (double)t->n);
    uint64_t d_ticks = grow(&t->emitted.ticks, now.ticks);
    uint64_t d_read = grow(&t->emitted.read_bytes, now.read_bytes);
    uint64_t d_write = grow(&t->emitted.write_bytes, now.write_bytes);
    uint64_t d_rchar = grow(&t->emitted.rchar, now.rchar);
    uint64_t d_wchar = grow(&t->emitted.wchar, now.wchar);
    if (t->prev_mono_ns) {
        int64_t dt = ctx->mono_ns - t->prev_mono_ns;
        series_put(st, t->s_cpu, rate_per_s(d_ticks, 0, dt) * 100.0 / (double)t->env->ticks_per_s);
        series_put(st, t->s_read, rate_per_s(d_read, 0, dt));
        series_put(st, t->s_write, rate_per_s(d_write, 0, dt));
        series_put(st, t->s_rchar, rate_per_s(d_rchar, 0, dt));
        series_put(st, t->s_wchar, rate_per_s(d_wchar, 0, dt));
        series_put(st, t->s_ctxt, rate_per_s(t->ctxt_sum, t->ctxt_emitted, dt));
    }
    t->prev_mono_ns = ctx->mono_ns;
    t->ctxt_emitted = t->ctxt_sum;
}

static int proc_sample(void *state, struct sample_ctx *ctx)
{
    struct proc_state *s = state;
    struct proc_tree *t = s->t;
    if (!t->root_pid)
        return 0;
    discover(t, ctx->mono_ns, &s->scratch);
    uint64_t rss = 0;
    int64_t threads = 0;
    for (uint32_t i = 0; i < t->n;) {
        struct proc_entry *e = &t->e[i];
        if (entry_read(e, t->env->page_bytes) <
            0) { /* reaped by its parent: its totals are the parent's now */
            tree_remove(t, i);
            continue;
        }
        entry_emit(t, e, ctx);
        rss += e->rss_bytes;
        threads += e->st.num_threads;
        i++;
    }
    tree_emit(t, ctx, rss, threads);
    return 0;
}

static void proc_fini(void *state)
{
    struct proc_state *s = state;
    pfile_release(&s->scratch);
}

const struct collector_ops collector_proc = {
    "proc", sizeof(struct proc_state), proc_init, proc_sample, proc_fini,
};
