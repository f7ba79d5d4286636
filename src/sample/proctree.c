#include "common/array.h"
#include "sample/proctree.h"

#include <dirent.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/strbuf.h"
#include "sample/collector.h"
#include "sample/procbpf.h"

#define THREAD_SCAN_INTERVAL_NS NS_PER_S
/* Rounds of discovery in one frame: children found, then theirs... */
#define BPF_DISCOVERY_ROUNDS 8

int proc_source_parse(const char *s)
{
    if (strcmp(s, "auto") == 0)
        return PROC_SOURCE_AUTO;
    if (strcmp(s, "bpf") == 0)
        return PROC_SOURCE_BPF;
    if (strcmp(s, "procfs") == 0)
        return PROC_SOURCE_PROCFS;
    return -1;
}

/* The fds the tree may keep: the soft RLIMIT_NOFILE less a reserve for the
 * rest of strobe (store, collectors, the GPU driver's devices, the files a
 * reading past the budget opens for a moment). */
static uint32_t fd_budget(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 0;
    uint64_t cur = rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
    uint64_t reserve = cur / 16 + (cur / 2 < 256 ? cur / 2 : 256);
    uint64_t budget = cur - reserve;
    return budget > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)budget;
}

int proc_tree_init(struct proc_tree *t, const struct sample_env *env)
{
    memset(t, 0, sizeof(*t));
    t->env = env;
    t->fd_budget = fd_budget();
    t->self_children = (struct pfile)PFILE_INIT;
    struct timespec boot, mono;
    if (clock_gettime(CLOCK_BOOTTIME, &boot) == 0 && clock_gettime(CLOCK_MONOTONIC, &mono) == 0)
        t->boot_minus_mono_ns =
            (boot.tv_sec - mono.tv_sec) * NS_PER_S + (boot.tv_nsec - mono.tv_nsec);
    return 0;
}

/* ---- file descriptors ------------------------------------------------------
 * Every fd an entry keeps is counted in t->fds, against t->fd_budget. */

/* Whether the entries may keep n more fds. */
static int fds_allow(const struct proc_tree *t, uint32_t n)
{
    return t->fds + n <= t->fd_budget;
}

/* The fds an entry of the tree's source keeps: its /proc/PID and what is
 * read each frame (through BPF statm, where the program does not sum the
 * RSS itself). */
static uint32_t entry_cost(const struct proc_tree *t)
{
    return t->bpf ? 2 : 1 + PF_COUNT;
}

/* Whether a failure is want of fds or memory, not a process gone. */
static int short_of(int rc)
{
    return rc == -EMFILE || rc == -ENFILE || rc == -ENOMEM;
}

/* Open e's /proc/PID and keep it. 0 or -errno. */
static int entry_open_dir(struct proc_tree *t, struct proc_entry *e)
{
    if (e->dirfd >= 0)
        return 0;
    char path[32];
    snprintf(path, sizeof(path), "%d", (int)e->pid);
    e->dirfd = openat(t->env->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (e->dirfd < 0)
        return -errno;
    t->fds++;
    return 0;
}

/* Open file k of e, rel under its /proc/PID: relative to its kept fd, else
 * through the proc root. 0 or -errno. */
static int entry_file_open(struct proc_tree *t, struct proc_entry *e, int k, const char *rel)
{
    int rc;
    if (e->dirfd >= 0) {
        rc = pfile_open(&e->f[k], e->dirfd, rel);
    } else {
        char path[96];
        snprintf(path, sizeof(path), "%d/%s", (int)e->pid, rel);
        rc = pfile_open(&e->f[k], t->env->proc_fd, path);
    }
    if (rc == 0)
        t->fds++;
    return rc;
}

/* Close file k of e, keeping its buffer. */
static void entry_file_close(struct proc_tree *t, struct proc_entry *e, int k)
{
    if (e->f[k].fd < 0)
        return;
    pfile_close(&e->f[k]);
    t->fds--;
}

/* Close every fd of e, keeping the buffers. */
static void entry_close(struct proc_tree *t, struct proc_entry *e)
{
    for (int i = 0; i < PF_COUNT; i++)
        entry_file_close(t, e, i);
    if (e->dirfd >= 0) {
        close(e->dirfd);
        t->fds--;
    }
    e->dirfd = -1;
}

/* A reading of e failed for want of fds or memory: counted once. */
static void entry_lost(struct proc_tree *t, struct proc_entry *e, int rc)
{
    t->unfollowed += !e->lost;
    t->unfollowed_err = -rc;
    e->lost = 1;
}

/* A process or a children file could not be taken in this frame. */
static void untracked(struct proc_tree *t, int rc)
{
    t->untracked++;
    t->unfollowed_err = -rc;
}

uint32_t proc_tree_unfollowed(const struct proc_tree *t, int *err)
{
    *err = t->unfollowed_err;
    return t->unfollowed + t->untracked_peak;
}

static void entry_free_buffers(struct proc_entry *e)
{
    for (int i = 0; i < PF_COUNT; i++)
        pfile_release(&e->f[i]);
    free(e->thr);
    e->thr = NULL;
    e->nthr = e->thr_cap = 0;
}

void proc_tree_release(struct proc_tree *t)
{
    for (uint32_t i = 0; i < t->n; i++) {
        entry_close(t, &t->e[i]);
        entry_free_buffers(&t->e[i]);
    }
    /* slots past n keep buffers for reuse */
    for (uint32_t i = t->n; i < t->cap; i++)
        entry_free_buffers(&t->e[i]);
    free(t->e);
    free(t->index);
    pfile_release(&t->self_children);
    procbpf_close(t->bpf);
    free(t->bpf_pids);
    free(t->bpf_kids);
    free(t->bpf_cuts);
    memset(t, 0, sizeof(*t));
}

int proc_tree_use_bpf(struct proc_tree *t, char *why, size_t why_len)
{
    if (strcmp(t->env->proc_root, "/proc") != 0) {
        snprintf(why, why_len, "another proc root (%s) is read through procfs", t->env->proc_root);
        return -ENOTSUP;
    }
    return procbpf_open(&t->bpf, why, why_len);
}

const char *proc_tree_source(const struct proc_tree *t)
{
    return t->bpf ? "bpf" : "procfs";
}

/* ---- pid -> entry index ----------------------------------------------------
 * Open addressing with linear probing, at most half full; a slot holds an
 * entry's index + 1, 0 when empty. Every frame looks up each child listed
 * (a shell with 1000 children lists 1000), so a linear search would make a
 * wide tree cost its size squared. */

/* Fibonacci hashing: the top bits of pid * 2^32/phi. (The low bits would be
 * a permutation of the pid's own low bits, which patterned pids defeat.) */
static uint32_t pid_home(const struct proc_tree *t, pid_t pid)
{
    uint64_t h = (uint64_t)((uint32_t)pid * 2654435761u) * t->index_cap;
    return (uint32_t)(h >> 32);
}

/* The slot holding pid, or the empty slot where it would go. */
static uint32_t *index_slot(struct proc_tree *t, pid_t pid)
{
    for (uint32_t h = pid_home(t, pid);; h = (h + 1) & (t->index_cap - 1)) {
        uint32_t v = t->index[h];
        if (!v || t->e[v - 1].pid == pid)
            return &t->index[h];
    }
}

/* Index entries 0..n) afresh in a table for at least n. 0 or -ENOMEM. */
static int index_rebuild(struct proc_tree *t, uint32_t n)
{
    uint32_t cap = t->index_cap ? t->index_cap : 64;
    while (cap < 2 * n)
        cap *= 2;
    if (cap != t->index_cap) {
        uint32_t *idx = realloc(t->index, cap * sizeof(*idx));
        if (!idx)
            return -ENOMEM;
        t->index = idx;
        t->index_cap = cap;
    }
    memset(t->index, 0, cap * sizeof(*t->index));
    for (uint32_t i = 0; i < n; i++)
        *index_slot(t, t->e[i].pid) = i + 1;
    return 0;
}

/* Entry n - 1 was just added. 0 or -ENOMEM. */
static int index_add(struct proc_tree *t, uint32_t n)
{
    if (2 * n > t->index_cap)
        return index_rebuild(t, n);
    *index_slot(t, t->e[n - 1].pid) = n;
    return 0;
}

/* Take pid out, shifting back the entries its slot displaced (no tombstones). */
static void index_delete(struct proc_tree *t, pid_t pid)
{
    uint32_t mask = t->index_cap - 1;
    uint32_t *slot = index_slot(t, pid);
    if (!*slot)
        return;
    uint32_t hole = (uint32_t)(slot - t->index);
    for (uint32_t j = (hole + 1) & mask; t->index[j]; j = (j + 1) & mask) {
        uint32_t home = pid_home(t, t->e[t->index[j] - 1].pid);
        /* the entry at j may fill the hole unless its home lies in (hole, j] */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            t->index[hole] = t->index[j];
            hole = j;
        }
    }
    t->index[hole] = 0;
}

struct proc_entry *proc_tree_find(struct proc_tree *t, pid_t pid)
{
    if (!t->index_cap)
        return NULL;
    uint32_t v = *index_slot(t, pid);
    return v ? &t->e[v - 1] : NULL;
}

/* Add one thread's wait, now, to the process's run-queue delay: its growth
 * since *last, all of it the first time (*last 0: the thread's own count
 * began at its clone). A wait that went back belongs to a new thread that
 * took a freed id. */
static void runq_add(struct proc_entry *e, uint64_t *last, uint64_t now)
{
    e->runq_ns += now >= *last ? now - *last : now;
    *last = now;
}

/* Read stat (required), then io, statm and schedstat (best effort) of one
 * process; *wait_ns gets its main thread's run-queue wait where schedstat
 * was read (e->ctxt_ok). Returns 0, or -ESRCH/-ENOENT once the process has
 * been reaped.
 * status would give RSS and context switches in one file, but the kernel
 * takes three times as long to write it as statm and schedstat together. */
static int entry_read(struct proc_entry *e, long page_bytes, uint64_t *wait_ns)
{
    struct pfile *f = e->f;
    int rc = pfile_read(&f[PF_STAT]);
    if (rc < 0)
        return rc;
    if (f[PF_STAT].len == 0 || parse_pid_stat(f[PF_STAT].buf, f[PF_STAT].len, &e->st) < 0)
        return -ESRCH;
    e->io_ok = f[PF_IO].fd >= 0 && pfile_read(&f[PF_IO]) == 0 &&
               parse_pid_io(f[PF_IO].buf, f[PF_IO].len, &e->iov) == 0;
    e->ctxt_ok =
        f[PF_SCHEDSTAT].fd >= 0 && pfile_read(&f[PF_SCHEDSTAT]) == 0 &&
        parse_pid_schedstat(f[PF_SCHEDSTAT].buf, f[PF_SCHEDSTAT].len, wait_ns, &e->ctxt) == 0;
    uint64_t pages;
    if (pfile_read_statm(&f[PF_STATM], &pages) == 0)
        e->rss_bytes = pages * (uint64_t)page_bytes;
    else
        e->rss_bytes = e->st.rss_pages * (uint64_t)page_bytes;
    e->ppid = e->st.ppid;
    return 0;
}

/* The files only the procfs source reads (statm too, which BPF reads only
 * where it does not sum the RSS): opened with the entry when that is the
 * source, else only if BPF fails mid-run. The children file only for an
 * entry that keeps its files (discovery reads the others' by name). 0 or
 * -errno (stat). */
static int entry_open_procfs(struct proc_tree *t, struct proc_entry *e)
{
    int rc = entry_file_open(t, e, PF_STAT, "stat");
    if (rc < 0)
        return rc;
    /* the rest may fail (io needs ptrace access): those series stay empty */
    if (e->f[PF_IO].fd < 0)
        entry_file_open(t, e, PF_IO, "io");
    if (e->f[PF_STATM].fd < 0)
        entry_file_open(t, e, PF_STATM, "statm");
    if (e->f[PF_SCHEDSTAT].fd < 0)
        entry_file_open(t, e, PF_SCHEDSTAT, "schedstat");
    if (e->kept && e->f[PF_CHILDREN].fd < 0) {
        char path[64];
        snprintf(path, sizeof(path), "task/%d/children", (int)e->pid);
        entry_file_open(t, e, PF_CHILDREN, path);
    }
    return 0;
}

/* Under BPF, after a procfs reading (the fallback): the files BPF does not
 * need go, lest they take the budget's room. */
static void entry_close_procfs(struct proc_tree *t, struct proc_entry *e)
{
    entry_file_close(t, e, PF_STAT);
    entry_file_close(t, e, PF_IO);
    entry_file_close(t, e, PF_SCHEDSTAT);
    entry_file_close(t, e, PF_CHILDREN);
}

static uint64_t ticks_ns(const struct proc_tree *t, uint64_t ticks)
{
    return ticks * (uint64_t)(NS_PER_S / t->env->ticks_per_s);
}

/* Read one process through procfs: 0, -ESRCH once it has been reaped (or
 * its pid names another process), or -EMFILE/-ENFILE/-ENOMEM when its
 * files could not be opened. An entry past the fd budget opens them for
 * this reading and closes them after; one found when the budget has room
 * again keeps them from now on. */
static int entry_read_procfs(struct proc_tree *t, struct proc_entry *e)
{
    if (!e->kept && !t->bpf && fds_allow(t, entry_cost(t)) && entry_open_dir(t, e) == 0)
        e->kept = 1; /* its starttime, checked below, shows the same process */
    int rc = e->f[PF_STAT].fd >= 0 ? 0 : entry_open_procfs(t, e);
    uint64_t wait = 0;
    if (rc == 0)
        rc = entry_read(e, t->env->page_bytes, &wait);
    if (rc == 0 && e->start_ticks && e->st.starttime != e->start_ticks)
        rc = -ESRCH; /* read by name: the pid names another process now */
    if (!e->kept)
        entry_close(t, e);
    else if (t->bpf)
        entry_close_procfs(t, e);
    if (rc < 0)
        return rc;
    e->start_ticks = e->st.starttime;
    e->unread = 0;
    e->cpu_ns = ticks_ns(t, e->st.utime + e->st.stime);
    e->child_cpu_ns = ticks_ns(t, e->st.cutime + e->st.cstime);
    /* under BPF (this a fallback) the program keeps each thread's last
     * wait itself: adding procfs's too would count it twice */
    if (!t->bpf && e->ctxt_ok)
        runq_add(e, &e->main_wait_ns, wait);
    if (!e->born_mono_ns) /* to a tick: enough to tell born before or after a frame */
        e->born_mono_ns = (int64_t)ticks_ns(t, e->st.starttime) - t->boot_minus_mono_ns;
    return 0;
}

/* statm's resident pages of e (BPF did not sum them): through its kept
 * file, opened at the first need; by name for an entry past the budget.
 * 0 or -errno. */
static int entry_read_statm(struct proc_tree *t, struct proc_entry *e, uint64_t *pages)
{
    if (e->f[PF_STATM].fd < 0) {
        int rc = entry_file_open(t, e, PF_STATM, "statm");
        if (rc < 0)
            return rc;
    }
    int rc = pfile_read_statm(&e->f[PF_STATM], pages);
    if (!e->kept)
        entry_file_close(t, e, PF_STATM);
    return rc;
}

/* Take what the BPF program read of e; the RSS from statm where the program
 * did not sum it (rss_ok 0). -ESRCH when the process is gone,
 * or its pid now names another one. */
static int entry_take_bpf(struct proc_tree *t, struct proc_entry *e, const struct procbpf_proc *p)
{
    if (!p->found || (e->start_ns && p->start_ns != e->start_ns))
        return -ESRCH;
    e->unread = 0;
    e->start_ns = p->start_ns;
    e->born_mono_ns = (int64_t)p->start_ns; /* task->start_time is CLOCK_MONOTONIC */
    size_t n = strnlen(p->comm, sizeof(p->comm));
    memcpy(e->st.comm, p->comm, n);
    e->st.comm[n] = '\0';
    e->st.ppid = p->ppid;
    e->st.num_threads = p->threads;
    e->ppid = p->ppid;
    e->cpu_ns = p->cpu_ns;
    e->child_cpu_ns = p->child_cpu_ns;
    e->iov.rchar = p->rchar;
    e->iov.wchar = p->wchar;
    e->iov.read_bytes = p->read_bytes;
    e->iov.write_bytes = p->write_bytes;
    e->io_ok = 1;
    e->ctxt = p->switches;
    e->ctxt_ok = 1;
    e->runq_ns += p->runq_ns; /* the growth since the program last read each thread */
    uint64_t pages;
    if (p->rss_ok)
        e->rss_bytes = p->rss_pages * (uint64_t)t->env->page_bytes;
    else if (entry_read_statm(t, e, &pages) == 0)
        e->rss_bytes = pages * (uint64_t)t->env->page_bytes;
    else
        e->rss_bytes = 0; /* a zombie: no memory left */
    return 0;
}

/* Read one process by itself (a new one, or a zombie's last reading). */
static int entry_refresh(struct proc_tree *t, struct proc_entry *e)
{
    if (!t->bpf)
        return entry_read_procfs(t, e);
    struct procbpf_result r;
    if (procbpf_read(t->bpf, &e->pid, 1, 0, &r) < 0)
        return entry_read_procfs(t, e);
    return entry_take_bpf(t, e, &r.proc[0]);
}

/* Open what e keeps, where the budget has room; past it (or where the fds
 * ran out) nothing, and each reading opens its files. 0 or -errno. */
static int entry_open(struct proc_tree *t, struct proc_entry *e, pid_t pid)
{
    e->pid = pid;
    e->kept = fds_allow(t, entry_cost(t)) ? 1 : 0;
    if (!e->kept)
        return 0;
    int rc = entry_open_dir(t, e);
    if (rc == 0 && !t->bpf)
        rc = entry_open_procfs(t, e);
    if (rc < 0) {
        entry_close(t, e);
        e->kept = 0;
    }
    return short_of(rc) ? 0 : rc; /* short: read by name, if that can be */
}

/* Start tracking pid; snap is what BPF read of it already, or NULL. A
 * process that cannot be read for want of fds or memory is tracked
 * unread (counted, and read once it can be). NULL when it is gone or
 * cannot be tracked at all. */
static struct proc_entry *tree_add(struct proc_tree *t, pid_t pid, const struct procbpf_proc *snap)
{
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 16;
        struct proc_entry *e = realloc(t->e, cap * sizeof(*e));
        if (!e) {
            untracked(t, -ENOMEM);
            return NULL;
        }
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
    struct thread_wait *thr = e->thr;
    uint32_t thr_cap = e->thr_cap;
    memset(e, 0, sizeof(*e));
    memcpy(e->f, keep, sizeof(keep));
    e->thr = thr;
    e->thr_cap = thr_cap;
    e->dirfd = -1;
    int rc = entry_open(t, e, pid);
    if (rc == 0)
        rc = snap ? entry_take_bpf(t, e, snap) : entry_refresh(t, e);
    if (rc < 0 && !short_of(rc)) {
        entry_close(t, e);
        return NULL;
    }
    if (rc < 0) {
        e->unread = 1;
        entry_lost(t, e, rc);
    }
    snprintf(e->comm, sizeof(e->comm), "%s", e->st.comm);
    if (index_add(t, t->n + 1) < 0) {
        untracked(t, -ENOMEM);
        entry_close(t, e);
        return NULL;
    }
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
        uint32_t s[] = {e->s_cpu,   e->s_rss,  e->s_threads, e->s_read,
                        e->s_write, e->s_ctxt, e->s_runq};
        for (size_t k = 0; k < ARRAY_SIZE(s); k++)
            series_retire(t->series, s[k]);
    }
    entry_close(t, e);
    index_delete(t, e->pid);
    t->n--;
    if (i != t->n) {
        *index_slot(t, t->e[t->n].pid) = i + 1; /* the last entry moves into i */
        struct proc_entry tmp = t->e[i];
        t->e[i] = t->e[t->n];
        t->e[t->n] = tmp;
    }
}

static void totals_add_entry(struct tree_totals *tot, const struct proc_entry *e)
{
    tot->cpu_ns += e->cpu_ns + e->child_cpu_ns;
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
    return tree_add(t, pid, NULL) ? 0 : -ESRCH;
}

void proc_tree_not_job(struct proc_tree *t, pid_t pid)
{
    if (t->n_not_job < ARRAY_SIZE(t->not_job))
        t->not_job[t->n_not_job++] = pid;
}

void proc_tree_not_job_end(struct proc_tree *t, pid_t pid)
{
    for (uint32_t i = 0; i < t->n_not_job; i++)
        if (t->not_job[i] == pid) {
            t->not_job[i] = t->not_job[--t->n_not_job];
            return;
        }
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
        e = tree_add(t, pid, NULL); /* an orphan that came and went between samples */
    if (!e)
        return;
    int rc = entry_refresh(t, e); /* a zombie still shows its whole group's final totals */
    if (short_of(rc))
        entry_lost(t, e, rc);
    if (!t->series) { /* the proc collector is off: no frame will emit it */
        totals_add_entry(&t->reaped, e);
        tree_remove(t, (uint32_t)(e - t->e));
        return;
    }
    /* kept for the next frame, so its own series get its last interval too
     * (the CPU of a process that exits between frames is in it) */
    e->final = 1;
}

static void discover_one(pid_t pid, void *arg)
{
    struct proc_tree *t = arg;
    if (pid == t->env->self_pid || proc_tree_find(t, pid) || is_not_job(t, pid))
        return;
    tree_add(t, pid, NULL);
}

/* The children list of entry who (-1: the recorder's own) could not be
 * read for want of fds or memory: that process was not followed all along. */
static void list_lost(struct proc_tree *t, int64_t who, int rc)
{
    if (who >= 0)
        entry_lost(t, &t->e[who], rc);
    else
        untracked(t, rc);
}

/* Track the children f, entry who's list, holds. */
static void read_children(struct proc_tree *t, struct pfile *f, int64_t who)
{
    if (f->fd < 0)
        return;
    int rc = pfile_read(f);
    if (short_of(rc))
        list_lost(t, who, rc);
    if (rc < 0)
        return;
    /* discover_one may grow t->e, moving the struct f lives in (not its
     * heap buffer): take the buffer first */
    const char *buf = f->buf;
    size_t len = f->len;
    parse_pid_list(buf, len, discover_one, t);
}

/* The slot of thread tid in e's table, from *hint on (a walk lists the
 * threads in the same order each time, so the next one is nearly always
 * there); a new slot holding it when absent; NULL without memory. */
static struct thread_wait *thread_slot(struct proc_entry *e, pid_t tid, uint32_t *hint)
{
    for (uint32_t k = 0; k < e->nthr; k++) {
        uint32_t j = (*hint + k) % e->nthr;
        if (e->thr[j].tid == tid) {
            *hint = j + 1;
            return &e->thr[j];
        }
    }
    if (e->nthr == e->thr_cap) {
        uint32_t cap = e->thr_cap ? 2 * e->thr_cap : 8;
        struct thread_wait *thr = realloc(e->thr, cap * sizeof(*thr));
        if (!thr)
            return NULL;
        e->thr = thr;
        e->thr_cap = cap;
    }
    struct thread_wait *w = &e->thr[e->nthr++];
    *w = (struct thread_wait){tid, 0, 0};
    *hint = e->nthr;
    return w;
}

/* Thread tid of entry i (not its main thread): add its run-queue wait,
 * through the scratch file. Opened, read and closed once a second (1.2 µs
 * here): an fd kept per thread and read each frame would cost 0.3 µs ten
 * times a second at the default interval, and hold hundreds of fds for a
 * big job. */
static void thread_wait_read(struct proc_tree *t, uint32_t i, int taskfd, pid_t tid,
                             struct pfile *scratch, uint32_t *hint)
{
    char path[64];
    uint64_t wait, switches;
    snprintf(path, sizeof(path), "%d/schedstat", (int)tid);
    int ok = pfile_open(scratch, taskfd, path) == 0 && pfile_read(scratch) == 0 &&
             parse_pid_schedstat(scratch->buf, scratch->len, &wait, &switches) == 0;
    pfile_close(scratch);
    struct proc_entry *e = &t->e[i];
    struct thread_wait *w = thread_slot(e, tid, hint);
    if (!w)
        return;
    w->seen = t->walk; /* listed: kept even when its file failed, lest it count twice */
    if (ok)
        runq_add(e, &w->wait_ns, wait);
}

/* Forget the threads this walk did not list: they have exited. */
static void threads_prune(struct proc_tree *t, struct proc_entry *e)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < e->nthr; k++)
        if (e->thr[k].seen == t->walk)
            e->thr[n++] = e->thr[k];
    e->nthr = n;
}

/* Track the children that file path, relative to dirfd, entry who's
 * list, holds: opened into scratch for this read. */
static void read_children_at(struct proc_tree *t, int dirfd, const char *path,
                             struct pfile *scratch, int64_t who)
{
    int rc = pfile_open(scratch, dirfd, path);
    if (rc == 0)
        read_children(t, scratch, who); /* may move t->e, not scratch */
    else if (short_of(rc))
        list_lost(t, who, rc);
    pfile_close(scratch);
}

/* The children of entry i's main thread: from its kept file, else (BPF, or
 * past the fd budget) from the file opened by name. */
static void read_main_children(struct proc_tree *t, uint32_t i, struct pfile *scratch)
{
    struct proc_entry *e = &t->e[i];
    if (e->f[PF_CHILDREN].fd >= 0) {
        read_children(t, &e->f[PF_CHILDREN], i);
        return;
    }
    char path[64];
    if (e->dirfd >= 0) {
        snprintf(path, sizeof(path), "task/%d/children", (int)e->pid);
        read_children_at(t, e->dirfd, path, scratch, i);
    } else {
        snprintf(path, sizeof(path), "%d/task/%d/children", (int)e->pid, (int)e->pid);
        read_children_at(t, t->env->proc_fd, path, scratch, i);
    }
}

/* Walk every thread of entry i but the main one, once a second: the
 * children of threads other than the main one appear only in that thread's
 * children file, and each thread's run-queue wait is in its schedstat. */
static void scan_thread_children(struct proc_tree *t, uint32_t i, struct pfile *scratch)
{
    char task[32];
    snprintf(task, sizeof(task), "%d/task", (int)t->e[i].pid);
    int taskfd = t->e[i].dirfd >= 0
                     ? openat(t->e[i].dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                     : openat(t->env->proc_fd, task, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (taskfd < 0) {
        int rc = -errno;
        if (short_of(rc))
            entry_lost(t, &t->e[i], rc);
        return;
    }
    char dents[4096];
    pid_t pid = t->e[i].pid;
    uint32_t hint = 0;
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
            read_children_at(t, taskfd, path, scratch, i); /* may move t->e: i stays */
            if (!t->bpf) /* BPF reads every thread's wait itself */
                thread_wait_read(t, i, taskfd, (pid_t)tid, scratch, &hint);
        }
    }
    close(taskfd);
    threads_prune(t, &t->e[i]);
}

static void discover(struct proc_tree *t, int walk, struct pfile *scratch)
{
    read_children(t, &t->self_children, -1);
    /* entries appended during the loop are walked too: a new child's own
     * children are found in the same sample */
    for (uint32_t i = 0; i < t->n; i++) {
        read_main_children(t, i, scratch);
        if (walk)
            scan_thread_children(t, i, scratch);
    }
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
    if ((rc = series_get_metric(st, METRIC_PROC_CPU, "", &t->s_cpu)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_RSS_BYTES, "", &t->s_rss)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_THREADS, "", &t->s_threads)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_COUNT, "", &t->s_count)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_READ_BYTES_PER_S, "", &t->s_read)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_WRITE_BYTES_PER_S, "", &t->s_write)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_RCHAR_PER_S, "", &t->s_rchar)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_WCHAR_PER_S, "", &t->s_wchar)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_CTX_SWITCHES_PER_S, "", &t->s_ctxt)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_RUNQ_DELAY, "", &t->s_runq)) < 0)
        return rc;
    series_set_meta(st, t->s_cpu, t->bpf ? "{\"source\":\"bpf\"}" : "{\"source\":\"procfs\"}");
    return 0;
}

static int entry_series(struct proc_tree *t, struct proc_entry *e, struct series_table *st)
{
    char labels[32];
    struct strbuf meta;
    snprintf(labels, sizeof(labels), "pid=%d", (int)e->pid);
    int rc;
    if ((rc = series_get_metric(st, METRIC_PROC_CPU, labels, &e->s_cpu)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_RSS_BYTES, labels, &e->s_rss)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_THREADS, labels, &e->s_threads)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_READ_BYTES_PER_S, labels, &e->s_read)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_WRITE_BYTES_PER_S, labels, &e->s_write)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_CTX_SWITCHES_PER_S, labels, &e->s_ctxt)) < 0 ||
        (rc = series_get_metric(st, METRIC_PROC_RUNQ_DELAY, labels, &e->s_runq)) < 0)
        return rc;
    strbuf_init(&meta);
    struct json_writer jw;
    jw_init(&jw, &meta);
    jw_object_begin(&jw);
    jw_kv_int(&jw, "pid", e->pid);
    jw_kv_int(&jw, "ppid", e->ppid);
    jw_kv_str(&jw, "comm", e->comm);
    jw_kv_bool(&jw, "root", e->pid == t->root_pid);
    jw_end(&jw);
    if (!jw_failed(&jw)) /* out of memory: no meta rather than a cut one */
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

/* Nanoseconds of CPU per second as a percentage of one core, rounded to a
 * quarter of a percent. The kernel updates a running thread's time at each
 * tick (4 ms at HZ=250), so finer digits would be noise, and noise does not
 * compress. Whole ticks over a 100 ms frame (10 %) stay exact. */
static double cpu_pct(double ns_per_s)
{
    return nearbyint(ns_per_s * 1e-7 * 4.0) / 4.0;
}

/* A process's counters as they are now: the base of its next rates. */
static void entry_counters_start(struct proc_entry *e)
{
    rate_counter_start(&e->r_cpu, e->cpu_ns);
    rate_counter_start(&e->r_read, e->iov.read_bytes);
    rate_counter_start(&e->r_write, e->iov.write_bytes);
    rate_counter_start(&e->r_ctxt, e->ctxt);
}

/* Whether e's run-queue counter has a base: a point of its own, or it was
 * forked since the tree's last point (its count started at zero then). */
static int runq_based(const struct proc_tree *t, const struct proc_entry *e)
{
    return e->runq_prev.due_ns || (t->runq_prev.due_ns && e->born_mono_ns > t->runq_prev.due_ns);
}

/* Each frame: e's run-queue growth joins the tree's total, so that a
 * process its parent reaps between two points still counts to its last
 * reading (its own series ends at its last point). */
static void entry_count_runq(struct proc_tree *t, struct proc_entry *e)
{
    if (!runq_based(t, e))
        return; /* found older than the tree's last point: its first point is its base */
    t->runq_sum += e->runq_ns - e->runq_counted;
    e->runq_counted = e->runq_ns;
}

/* The run-queue delay's point (once a second, and a reaped process's last):
 * from the process's previous one, or from zero for a process forked since
 * the tree's previous one. A process found later than that starts its
 * counter here (through procfs its other threads are first read here). */
static void entry_emit_runq(struct proc_tree *t, struct proc_entry *e, struct sample_ctx *ctx,
                            int charted)
{
    if (runq_based(t, e)) {
        const struct read_time *base = e->runq_prev.due_ns ? &e->runq_prev : &t->runq_prev;
        double rate = counter_rate(ctx, base, &e->r_runq, e->runq_ns);
        if (charted)
            series_put(ctx->series, e->s_runq, cpu_pct(rate));
    } else {
        rate_counter_start(&e->r_runq, e->runq_ns);
        e->runq_counted = e->runq_ns;
    }
    read_time_set(&e->runq_prev, ctx);
}

static void entry_emit(struct proc_tree *t, struct proc_entry *e, struct sample_ctx *ctx,
                       int runq_due)
{
    struct series_table *st = ctx->series;
    int charted = entry_ensure_series(t, e, st);
    /* Forked since the last frame: its counters started at zero then, so its
     * first interval is known too, and a worker that lives a frame or two is
     * not lost from its own series (the tree's totals have it either way). */
    int newborn = !e->prev.due_ns && t->prev.due_ns && e->born_mono_ns > t->prev.due_ns;
    int have_base = e->prev.due_ns || newborn; /* the counters are zero for a newborn */
    const struct read_time *base = e->prev.due_ns ? &e->prev : &t->prev;
    if (have_base && e->ctxt_ok)
        t->ctxt_sum += e->ctxt > e->r_ctxt.raw ? e->ctxt - e->r_ctxt.raw : 0;
    if (charted) {
        series_put(st, e->s_rss, (double)e->rss_bytes);
        series_put(st, e->s_threads, (double)e->st.num_threads);
    }
    if (charted && have_base) {
        series_put(st, e->s_cpu, cpu_pct(counter_rate(ctx, base, &e->r_cpu, e->cpu_ns)));
        series_put(st, e->s_read, counter_rate(ctx, base, &e->r_read, e->iov.read_bytes));
        series_put(st, e->s_write, counter_rate(ctx, base, &e->r_write, e->iov.write_bytes));
        if (e->ctxt_ok)
            series_put(st, e->s_ctxt, counter_rate(ctx, base, &e->r_ctxt, e->ctxt));
        else
            rate_counter_start(&e->r_ctxt, e->ctxt);
    } else {
        entry_counters_start(e);
    }
    read_time_set(&e->prev, ctx);
    entry_count_runq(t, e);
    if (runq_due || e->final)
        entry_emit_runq(t, e, ctx, charted);
}

/* Advance a running maximum: the totals only grow, whoever is reaped. */
static void grow(uint64_t *emitted, uint64_t now)
{
    if (now > *emitted)
        *emitted = now;
}

static void tree_emit_runq(struct proc_tree *t, struct sample_ctx *ctx)
{
    if (t->runq_prev.due_ns)
        series_put(ctx->series, t->s_runq,
                   cpu_pct(counter_rate(ctx, &t->runq_prev, &t->r_runq, t->runq_sum)));
    else
        rate_counter_start(&t->r_runq, t->runq_sum);
    read_time_set(&t->runq_prev, ctx);
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
    struct tree_totals *m = &t->emitted;
    grow(&m->cpu_ns, now.cpu_ns);
    grow(&m->read_bytes, now.read_bytes);
    grow(&m->write_bytes, now.write_bytes);
    grow(&m->rchar, now.rchar);
    grow(&m->wchar, now.wchar);
    const struct read_time *p = &t->prev;
    if (p->due_ns) {
        series_put(st, t->s_cpu, cpu_pct(counter_rate(ctx, p, &t->r_cpu, m->cpu_ns)));
        series_put(st, t->s_read, counter_rate(ctx, p, &t->r_read, m->read_bytes));
        series_put(st, t->s_write, counter_rate(ctx, p, &t->r_write, m->write_bytes));
        series_put(st, t->s_rchar, counter_rate(ctx, p, &t->r_rchar, m->rchar));
        series_put(st, t->s_wchar, counter_rate(ctx, p, &t->r_wchar, m->wchar));
        series_put(st, t->s_ctxt, counter_rate(ctx, p, &t->r_ctxt, t->ctxt_sum));
    } else {
        rate_counter_start(&t->r_cpu, m->cpu_ns);
        rate_counter_start(&t->r_read, m->read_bytes);
        rate_counter_start(&t->r_write, m->write_bytes);
        rate_counter_start(&t->r_rchar, m->rchar);
        rate_counter_start(&t->r_wchar, m->wchar);
        rate_counter_start(&t->r_ctxt, t->ctxt_sum);
    }
    read_time_set(&t->prev, ctx);
}

/* Grow a pid array to hold n. 0 or -ENOMEM. */
static int pids_reserve(pid_t **a, uint32_t *cap, uint32_t n)
{
    if (n <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 64;
    while (c < n)
        c *= 2;
    pid_t *p = realloc(*a, c * sizeof(*p));
    if (!p)
        return -ENOMEM;
    *a = p;
    *cap = c;
    return 0;
}

/* Keep a child the BPF run listed, if it is new to the tree. */
static void bpf_note_kid(struct proc_tree *t, pid_t pid, uint32_t *nkids)
{
    if (pid <= 0 || pid == t->env->self_pid || proc_tree_find(t, pid) || is_not_job(t, pid))
        return;
    for (uint32_t i = 0; i < *nkids; i++)
        if (t->bpf_kids[i] == pid)
            return;
    if (pids_reserve(&t->bpf_kids, &t->bpf_kids_cap, *nkids + 1) == 0)
        t->bpf_kids[(*nkids)++] = pid;
    else
        untracked(t, -ENOMEM);
}

/* Keep a thread a run cut: its children file is read once the runs are
 * done. 0, or -ENOMEM (the frame then looks everywhere). */
static int bpf_note_cut(struct proc_tree *t, pid_t pid, pid_t tid, uint32_t *ncuts)
{
    if (*ncuts == t->bpf_cuts_cap) {
        uint32_t cap = t->bpf_cuts_cap ? 2 * t->bpf_cuts_cap : 8;
        struct proc_cut *c = realloc(t->bpf_cuts, cap * sizeof(*c));
        if (!c)
            return -ENOMEM;
        t->bpf_cuts = c;
        t->bpf_cuts_cap = cap;
    }
    t->bpf_cuts[(*ncuts)++] = (struct proc_cut){pid, tid};
    return 0;
}

struct kid_note {
    struct proc_tree *t;
    uint32_t *nkids;
};

static void note_kid(pid_t pid, void *arg)
{
    struct kid_note *k = arg;
    bpf_note_kid(k->t, pid, k->nkids);
}

/* The children of the threads the runs cut, from their children files
 * (through scratch), into bpf_kids. */
static void bpf_read_cuts(struct proc_tree *t, uint32_t ncuts, uint32_t *nkids,
                          struct pfile *scratch)
{
    struct kid_note k = {t, nkids};
    for (uint32_t i = 0; i < ncuts; i++) {
        char path[64];
        snprintf(path, sizeof(path), "%d/task/%d/children", (int)t->bpf_cuts[i].pid,
                 (int)t->bpf_cuts[i].tid);
        int rc = pfile_open(scratch, t->env->proc_fd, path);
        if (rc == 0)
            rc = pfile_read(scratch);
        if (rc == 0) {
            parse_pid_list(scratch->buf, scratch->len, note_kid, &k);
        } else if (short_of(rc)) {
            struct proc_entry *e = proc_tree_find(t, t->bpf_cuts[i].pid);
            list_lost(t, e ? e - t->e : -1, rc);
        }
        pfile_close(scratch);
    }
}

/* Run the program over pids[0..n), in as many runs as it takes, the first
 * kids_only for their children only. take(i, p) gets each process read; the
 * children found are collected in bpf_kids: those a run listed (a run
 * whose list filled is followed by runs for children only from where it
 * stopped), and those of the threads it cut, from their children files.
 * *lost is set when the runs cut more threads than they could say. Returns
 * the number of children, or -errno (the frame then reads procfs). */
static int bpf_read_all(struct proc_tree *t, const pid_t *pids, uint32_t n, uint32_t kids_only,
                        void (*take)(struct proc_tree *, uint32_t, const struct procbpf_proc *),
                        int *lost, int64_t *read_ns, struct pfile *scratch)
{
    uint32_t nkids = 0, ncuts = 0;
    for (uint32_t off = 0; off < n; off += PROCBPF_MAX_PROCS) {
        uint32_t end = n - off < PROCBPF_MAX_PROCS ? n : off + PROCBPF_MAX_PROCS;
        struct procbpf_result r;
        int rc =
            procbpf_read(t->bpf, pids + off, end - off, kids_only > off ? kids_only - off : 0, &r);
        if (rc < 0)
            return rc;
        if (!off && read_ns)
            *read_ns = r.read_ns;
        for (uint32_t j = off; j < end; j++)
            take(t, j, &r.proc[j - off]);
        /* this run's children, then those of the runs from where it stopped
         * (each stops one process on at least: its first cuts instead) */
        for (uint32_t from = off;;) {
            for (uint32_t k = 0; k < r.nkids; k++)
                bpf_note_kid(t, r.kids[k].pid, &nkids);
            for (uint32_t c = 0; c < r.ncut; c++) {
                uint32_t at = from + (uint32_t)r.cut[c].parent;
                if (at < end && bpf_note_cut(t, pids[at], r.cut[c].tid, &ncuts) < 0)
                    *lost = 1; /* no memory to keep it: the frame looks everywhere */
            }
            *lost |= r.kids_lost;
            if (r.kids_from >= end - from || r.kids_from == 0)
                break;
            from += r.kids_from;
            if ((rc = procbpf_read(t->bpf, pids + from, end - from, end - from, &r)) < 0)
                return rc;
        }
    }
    bpf_read_cuts(t, ncuts, &nkids, scratch);
    return (int)nkids;
}

/* The tracked processes' own readings: pids[0] is the recorder (read for
 * its children only: orphans come back), pids[1 + i] is entry i. A process gone
 * is marked and removed once all are read (removing moves entries). */
static void take_tracked(struct proc_tree *t, uint32_t i, const struct procbpf_proc *p)
{
    if (i == 0)
        return;
    struct proc_entry *e = &t->e[i - 1];
    if (e->final)
        return; /* reaped: its last reading is the one taken before */
    if (entry_take_bpf(t, e, p) < 0)
        e->gone = 1; /* removed in bpf_frame, once every process is read */
}

/* New children: tracked from the reading that found them. */
static void take_new(struct proc_tree *t, uint32_t i, const struct procbpf_proc *p)
{
    (void)i;
    tree_add(t, p->pid, p);
}

/* One frame through BPF: every tracked process and every thread's children
 * in one run, then the children found (and theirs) in a few more. */
static int bpf_frame(struct proc_tree *t, struct pfile *scratch)
{
    uint32_t n = t->n + 1;
    if (pids_reserve(&t->bpf_pids, &t->bpf_pids_cap, n) < 0)
        return -ENOMEM;
    t->bpf_pids[0] = t->env->self_pid;
    for (uint32_t i = 0; i < t->n; i++)
        t->bpf_pids[1 + i] = t->e[i].pid;
    int lost = 0;
    int nkids = bpf_read_all(t, t->bpf_pids, n, 1, take_tracked, &lost, &t->bpf_read_ns, scratch);
    if (nkids < 0)
        return nkids;
    for (uint32_t i = t->n; i-- > 0;)
        if (t->e[i].gone) /* reaped by its parent: its totals are the parent's now */
            tree_remove(t, i);
    for (int round = 0; nkids > 0 && round < BPF_DISCOVERY_ROUNDS; round++) {
        if (pids_reserve(&t->bpf_pids, &t->bpf_pids_cap, (uint32_t)nkids) < 0)
            break;
        memcpy(t->bpf_pids, t->bpf_kids, (size_t)nkids * sizeof(pid_t));
        nkids = bpf_read_all(t, t->bpf_pids, (uint32_t)nkids, 0, take_new, &lost, NULL, scratch);
    }
    return lost ? 1 : 0;
}

static int proc_sample(void *state, struct sample_ctx *ctx)
{
    struct proc_state *s = state;
    struct proc_tree *t = s->t;
    if (!t->root_pid)
        return 0;
    /* once a second (every frame at longer intervals): the walk of every
     * thread, and the run-queue points */
    int walk = ctx->mono_ns - t->last_thread_scan_ns >= THREAD_SCAN_INTERVAL_NS;
    if (walk) {
        t->last_thread_scan_ns = ctx->mono_ns;
        t->walk++;
    }
    int from_bpf = 0;
    if (t->bpf) {
        procbpf_follow_online(t->bpf, ctx->mono_ns);
        int rc = bpf_frame(t, &s->scratch);
        from_bpf = rc >= 0;
        /* the program's own clock: the syscall may have been preempted */
        if (from_bpf && ctx->measure_reads && t->bpf_read_ns > ctx->read_ns)
            ctx->read_ns = t->bpf_read_ns;
        if (rc != 0) /* more children than one run lists, or the run failed */
            discover(t, walk, &s->scratch);
    } else {
        discover(t, walk, &s->scratch);
    }
    uint64_t rss = 0;
    int64_t threads = 0;
    int64_t read_start = ctx->read_ns;
    for (uint32_t i = 0; i < t->n;) {
        struct proc_entry *e = &t->e[i];
        if (!from_bpf && ctx->measure_reads) /* procfs: each process read in turn */
            ctx->read_ns = clock_monotonic_ns();
        int stale = 0;
        if (!from_bpf && !e->final) {
            int rc = entry_refresh(t, e);
            if (rc < 0 && !short_of(rc)) {
                /* reaped by its parent: its totals are the parent's now */
                tree_remove(t, i);
                continue;
            }
            if (rc < 0) { /* no fds or memory to read it: its rates wait for a reading */
                entry_lost(t, e, rc);
                stale = 1;
            }
        }
        if (e->unread) { /* never read: counted in proc.count, nothing else */
            if (e->final)
                tree_remove(t, i);
            else
                i++;
            continue;
        }
        if (!stale)
            entry_emit(t, e, ctx, walk);
        if (e->final) { /* its last interval is out: it joins the reaped */
            totals_add_entry(&t->reaped, e);
            tree_remove(t, i);
            continue;
        }
        rss += e->rss_bytes;
        threads += e->st.num_threads;
        i++;
    }
    ctx->read_ns = read_start; /* the totals: as of the frame's first read */
    tree_emit(t, ctx, rss, threads);
    if (walk)
        tree_emit_runq(t, ctx);
    if (t->untracked > t->untracked_peak)
        t->untracked_peak = t->untracked;
    t->untracked = 0;
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
