#include "sweep/sched.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/fmt.h"
#include "common/log.h"
#include "sweep/gpu_share.h"
#include "sweep/writeback.h"

/* How many workloads may wait at their gates while one runs: a recorder's
 * start-up (80 ms with the BPF reader) hides behind that many jobs. */
#define PRESTART_AHEAD 3

/* How often a workload waiting for another campaign's device lock tries. */
#define LOCK_RETRY_NS (500 * NS_PER_MS)

enum phase {
    PH_STARTING, /* recorders started, not all ready, or not allowed to go yet */
    PH_RUNNING,  /* the jobs were started */
    PH_ENDED,    /* every job has exited (recorders may still be saving) */
};

struct arun {
    const struct sweep_run *def;
    pid_t pid;     /* the recorder; 0 once reaped */
    pid_t job_pid; /* from its "pid N" line; 0 unknown */
    int rfd, gfd;  /* report pipe (read end), gate (write end); -1 closed */
    char id[RUN_ID_LEN + 1];
    char line[128];
    size_t len;
    int spawned, ready, ended, exited;
    int job_status;  /* wait status from "end N" */
    int exit_status; /* the recorder's wait status */
    struct mig_slice mig;
    int has_mig;
    char *artifact; /* a wrapping listener's report, or NULL */
    char *visible;  /* its CUDA_VISIBLE_DEVICES under MPS: its GPUs' UUIDs */
};

struct awl {
    size_t index;
    struct sweep_workload *w;
    struct wl_state *st;
    struct arun *runs;
    enum phase phase;
    int64_t deadline_ns; /* CLOCK_MONOTONIC: the timeout's SIGTERM; 0 none */
    int64_t kill_ns;     /* its SIGKILL; 0 none */
    int timed_out;
    int start_failed; /* a recorder was gone before it was ready */
    int released;     /* its jobs ended well: later workloads may go */
    const char **devices;
    size_t ndev;
    struct mps_daemon mps;
    int shared_up; /* MPS or MIG set up, not yet torn down */
    char note[256];
};

struct lock_slot {
    char *device;
    int fd, refs;
};

/* A device as written and the UUID of its GPU, which names its lock. */
struct lock_id {
    char *device, *uuid;
};

struct sched {
    struct sweep_spec *spec;
    const enum sweep_decision *decisions;
    struct store *store;
    struct campaign_state *st;
    const struct sweep_opts *o;
    struct awl **active;
    size_t nactive;
    size_t next;    /* the next workload of the plan to consider (in order) */
    char *started;  /* --parallel: which workloads have started (out of order) */
    size_t waiting; /* --parallel: workloads to run not started yet */
    struct lock_slot *locks;
    size_t nlocks;
    struct lock_id *ids; /* looked up once per device */
    size_t nids;
    int sigfd;
    int stopping; /* signals received */
    int stop_signal;
    int failed;
    int64_t lock_retry_ns;
    char waiting_note[256]; /* the last "waiting for a device" said */
};

/* ---- plan ---- */

const char *sweep_decision_name(enum sweep_decision d)
{
    switch (d) {
    case SWEEP_RUN:
        return "run";
    case SWEEP_RUN_AGAIN:
        return "run again";
    case SWEEP_RERUN:
        return "rerun";
    case SWEEP_BUSY:
        return "running now";
    case SWEEP_SKIP:
        return "skip";
    default:
        return "skip (file)";
    }
}

void sweep_decide(const struct sweep_spec *spec, struct campaign_state *st, int rerun,
                  enum sweep_decision *decisions)
{
    for (size_t i = 0; i < spec->n; i++) {
        const struct sweep_workload *w = &spec->w[i];
        struct wl_state *prior = st ? campaign_state_find(st, w->experiment, w->name) : NULL;
        int same = prior && strcmp(prior->key, w->key) == 0;
        const char *status = same ? wl_state_shown(st, prior) : NULL;
        int done = status && (strcmp(status, WL_FINISHED) == 0 || strcmp(status, WL_STOPPED) == 0);
        if (done)
            decisions[i] = rerun ? SWEEP_RERUN : SWEEP_SKIP;
        else if (same && strcmp(status, WL_RUNNING) == 0)
            decisions[i] = SWEEP_BUSY;
        else if (same && strcmp(status, WL_PENDING) != 0)
            decisions[i] = SWEEP_RUN_AGAIN;
        else if (w->file_finished && !prior)
            decisions[i] = rerun ? SWEEP_RERUN : SWEEP_SKIP_FILE;
        else
            decisions[i] = SWEEP_RUN;
    }
}

/* A workload's status from its runs': finished when all finished, stopped
 * when a rule stopped one and none failed, else failed with the first
 * failed run named in note. */
struct runs_tally {
    int stopped, failed;
    char note[256];
};

static void tally_run(struct runs_tally *t, const char *name, const char *status, const char *why)
{
    if (strcmp(status, RUN_STOPPED) == 0) {
        t->stopped = 1;
    } else if (strcmp(status, RUN_FINISHED) != 0) {
        if (!t->failed)
            snprintf(t->note, sizeof(t->note), "run %s: %s%s", name, status, why);
        t->failed = 1;
    }
}

static const char *tally_status(const struct runs_tally *t)
{
    return t->failed ? WL_FAILED : t->stopped ? WL_STOPPED : WL_FINISHED;
}

void sweep_settle_lost(struct store *store, struct campaign_state *st)
{
    for (size_t i = 0; i < st->n; i++) {
        struct wl_state *w = &st->w[i];
        if (strcmp(wl_state_shown(st, w), WL_LOST) != 0 || !w->runs || !w->runs[0])
            continue;
        int ended = 1;
        int64_t end_ns = 0;
        struct runs_tally t = {0};
        for (char **id = w->runs; ended && *id; id++) {
            struct run_record rec;
            run_record_init(&rec);
            /* as stored: "running" for a run whose recorder died too */
            ended = store_resolve_run(store, *id, &rec) == 0 && rec.end_ns &&
                    strcmp(rec.status, RUN_RUNNING) != 0;
            if (ended && rec.end_ns > end_ns)
                end_ns = rec.end_ns;
            if (ended)
                tally_run(&t, rec.name ? rec.name : *id, rec.status, "");
            run_record_release(&rec);
        }
        if (!ended)
            continue;
        snprintf(w->status, sizeof(w->status), "%s", tally_status(&t));
        wl_state_set_note(w, t.failed ? t.note : NULL);
        w->attempts++;
        w->ended_ns = end_ns;
    }
}

static int to_run(enum sweep_decision d)
{
    return d == SWEEP_RUN || d == SWEEP_RUN_AGAIN || d == SWEEP_RERUN;
}

/* ---- saving ---- */

static void save(struct sched *s)
{
    if (campaign_state_save(s->store, s->st) < 0)
        log_warn("cannot save the campaign's state: %s", s->store->err.buf);
    if (s->o->write_back && sweep_write_back(s->spec, s->st) < 0)
        log_warn("cannot write the status back into %s", s->spec->path);
}

/* ---- device locks, refcounted within the sweep ---- */

static struct lock_slot *lock_find(struct sched *s, const char *device)
{
    for (size_t i = 0; i < s->nlocks; i++)
        if (s->locks[i].device && strcmp(s->locks[i].device, device) == 0)
            return &s->locks[i];
    return NULL;
}

static void lock_unref(struct sched *s, const char *device)
{
    struct lock_slot *l = lock_find(s, device);
    if (l && --l->refs <= 0) {
        close(l->fd);
        free(l->device);
        l->device = NULL;
    }
}

static void locks_release(struct sched *s, struct awl *a)
{
    for (size_t i = 0; i < a->ndev; i++)
        lock_unref(s, a->devices[i]);
}

static int lock_add(struct sched *s, const char *device, int fd)
{
    struct lock_slot *grown = realloc(s->locks, (s->nlocks + 1) * sizeof(*grown));
    char *name = strdup(device);
    if (!grown || !name) {
        free(name);
        if (grown)
            s->locks = grown;
        close(fd);
        return -ENOMEM;
    }
    s->locks = grown;
    s->locks[s->nlocks++] = (struct lock_slot){name, fd, 1};
    return 0;
}

/* What names a device's lock: its GPU's UUID, so that campaigns naming
 * one GPU by index and by UUID take one lock; the device as written where
 * nvidia-smi cannot say. */
static const char *lock_name(struct sched *s, const char *device)
{
    if (strncmp(device, "GPU-", 4) == 0 || strncmp(device, "MIG-", 4) == 0)
        return device;
    for (size_t i = 0; i < s->nids; i++)
        if (strcmp(s->ids[i].device, device) == 0)
            return s->ids[i].uuid ? s->ids[i].uuid : device;
    struct lock_id *grown = realloc(s->ids, (s->nids + 1) * sizeof(*grown));
    if (!grown)
        return device;
    s->ids = grown;
    struct lock_id *l = &s->ids[s->nids];
    const char *one[2] = {device, NULL};
    struct strbuf uuid, why;
    strbuf_init(&uuid);
    strbuf_init(&why);
    l->uuid = gpu_uuids_join(one, &uuid, &why) == 0 ? strbuf_detach(&uuid) : NULL;
    strbuf_release(&uuid);
    strbuf_release(&why);
    if (!(l->device = strdup(device))) {
        free(l->uuid);
        return device;
    }
    s->nids++;
    return l->uuid ? l->uuid : device;
}

/* Lock one device for a workload (another hold of one the sweep has is a
 * count). 0, -EAGAIN while another campaign holds it (said once), or
 * negative. */
static int lock_take(struct sched *s, struct awl *a, const char *device)
{
    struct lock_slot *l = lock_find(s, device);
    if (l) {
        l->refs++;
        return 0;
    }
    const char *one[2] = {device, NULL}, *id[2] = {lock_name(s, device), NULL};
    int fd = -1;
    struct strbuf why;
    strbuf_init(&why);
    int rc = device_locks_take(s->o->lock_dir, one, id, a->w->share_devices, &fd, &why);
    if (rc == -EAGAIN && strcmp(s->waiting_note, why.buf ? why.buf : "") != 0) {
        snprintf(s->waiting_note, sizeof(s->waiting_note), "%s", why.buf);
        log_note("workload %s waits: %s", a->w->name, why.buf);
    } else if (rc < 0 && rc != -EAGAIN) {
        snprintf(a->note, sizeof(a->note), "%s", why.buf ? why.buf : "cannot lock a device");
    }
    strbuf_release(&why);
    return rc < 0 ? rc : lock_add(s, device, fd);
}

static int locks_take(struct sched *s, struct awl *a)
{
    for (size_t i = 0; i < a->ndev; i++) {
        int rc = lock_take(s, a, a->devices[i]);
        if (rc < 0) {
            while (i-- > 0)
                lock_unref(s, a->devices[i]);
            return rc;
        }
    }
    s->waiting_note[0] = '\0';
    return 0;
}

/* ---- MPS and MIG ---- */

static void join_devices(const char *const *devices, char *buf, size_t cap)
{
    size_t at = 0;
    buf[0] = '\0';
    for (size_t i = 0; devices && devices[i] && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? "," : "", devices[i]);
}

/* Under MPS every run connects to the workload's daemon, whose server
 * renumbers the GPUs it sees: the daemon and each run are given their
 * GPUs by UUID, which mean the same on both sides. */
static int mps_setup(struct sched *s, struct awl *a, struct strbuf *why)
{
    struct strbuf uuids;
    strbuf_init(&uuids);
    int rc = gpu_uuids_join(a->devices, &uuids, why);
    for (size_t i = 0; rc == 0 && i < a->w->nruns; i++) {
        struct strbuf mine;
        strbuf_init(&mine);
        rc = gpu_uuids_join((const char *const *)a->w->runs[i].devices, &mine, why);
        if (rc == 0 && mine.len && !(a->runs[i].visible = strbuf_detach(&mine))) {
            strbuf_adds(why, "out of memory");
            rc = -1;
        }
        strbuf_release(&mine);
    }
    if (rc == 0) {
        char base[4096];
        int at = snprintf(base, sizeof(base), "%s/mps-", s->o->work_dir);
        if (at < 0 || (size_t)at >= sizeof(base))
            at = (int)sizeof(base) - 1;
        snprintf(base + at, sizeof(base) - (size_t)at, "%s", a->w->name);
        for (char *c = base + at; *c; c++) /* one folder, whatever the name */
            if (*c == '/' || *c == ' ')
                *c = '_';
        rc = mps_start(&a->mps, base, uuids.buf ? uuids.buf : "", why);
    }
    strbuf_release(&uuids);
    return rc;
}

static int share_setup(struct sched *s, struct awl *a)
{
    struct strbuf why;
    strbuf_init(&why);
    int rc = 0, mps = 0;
    for (size_t i = 0; i < a->w->nruns; i++)
        mps |= a->w->runs[i].share == SWEEP_SHARE_MPS;
    if (mps)
        rc = mps_setup(s, a, &why);
    for (size_t i = 0; rc == 0 && i < a->w->nruns; i++) {
        const struct sweep_run *r = &a->w->runs[i];
        if (r->share != SWEEP_SHARE_MIG)
            continue;
        rc = mig_create(&a->runs[i].mig, r->devices[0], r->mig_profile, &why);
        a->runs[i].has_mig = rc == 0;
    }
    a->shared_up = 1;
    if (rc < 0)
        snprintf(a->note, sizeof(a->note), "%s", why.buf ? why.buf : "sharing failed");
    strbuf_release(&why);
    return rc;
}

static void share_teardown(struct awl *a)
{
    if (!a->shared_up)
        return;
    a->shared_up = 0;
    struct strbuf why;
    strbuf_init(&why);
    for (size_t i = 0; i < a->w->nruns; i++)
        if (a->runs[i].has_mig) {
            if (mig_destroy(&a->runs[i].mig, &why) < 0)
                log_warn("workload %s: %s", a->w->name, why.buf);
            a->runs[i].has_mig = 0;
            strbuf_reset(&why);
        }
    if (a->mps.running || a->mps.pipe_dir) {
        if (mps_stop(&a->mps, &why) < 0)
            log_warn("workload %s: %s", a->w->name, why.buf);
    }
    strbuf_release(&why);
}

static int needs_setup(const struct sweep_workload *w)
{
    for (size_t i = 0; i < w->nruns; i++)
        if (w->runs[i].share != SWEEP_SHARE_PLAIN)
            return 1;
    return 0;
}

/* ---- starting recorders ---- */

static const char *const wrap_prefix[][16] = {
    {"nsys", "nsys", "profile", "--capture-range", "nvtx", "--nvtx-capture", "profile",
     "--cuda-memory-usage=true", "--capture-range-end", "repeat", "-f", "true", "-w", "true", "-o",
     NULL},
    {"nsysraw", "nsys", "profile", "--cuda-memory-usage", "true", "-f", "true", "-w", "true", "-t",
     "cuda,nvtx", "-o", NULL},
    {"ncu", "ncu", "-f", "--nvtx", "--nvtx-include", "profile", "-o", NULL},
    {"ncuraw", "ncu", "-f", "-c", "100", "-o", NULL},
    {"ncuattach", "ncu", "--mode=launch", NULL},
};

struct argv_buf {
    char **v;
    size_t n, cap;
    int failed;
};

static void arg(struct argv_buf *b, const char *s)
{
    if (b->failed)
        return;
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 32;
        char **v = realloc(b->v, cap * sizeof(*v));
        if (!v) {
            b->failed = 1;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    if (!(b->v[b->n] = strdup(s))) {
        b->failed = 1;
        return;
    }
    b->v[++b->n] = NULL;
}

/* One argument from pieces, up to a NULL. */
static void argcat(struct argv_buf *b, ...)
{
    struct strbuf sb;
    strbuf_init(&sb);
    va_list ap;
    va_start(ap, b);
    for (const char *piece; (piece = va_arg(ap, const char *));)
        strbuf_adds(&sb, piece);
    va_end(ap);
    if (strbuf_failed(&sb))
        b->failed = 1;
    else
        arg(b, sb.buf ? sb.buf : "");
    strbuf_release(&sb);
}

static void argv_free(struct argv_buf *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i]);
    free(b->v);
}

/* The wrapping listener's row of wrap_prefix, or NULL. */
static const char *const *wrap_words(const char *wrap)
{
    for (size_t k = 0; wrap && k < sizeof(wrap_prefix) / sizeof(wrap_prefix[0]); k++)
        if (strcmp(wrap_prefix[k][0], wrap) == 0)
            return wrap_prefix[k] + 1;
    return NULL;
}

/* Where a wrapping listener that ends in -o writes its report, into
 * r->artifact: the extension given, as nsys and ncu would add it, so that
 * the run's artifact tag names the file itself. */
static void name_artifact(struct sched *s, struct awl *a, struct arun *r)
{
    const char *const *words = wrap_words(r->def->wrap);
    const char *last = NULL;
    for (size_t i = 0; words && words[i]; i++)
        last = words[i];
    if (!last || strcmp(last, "-o") != 0)
        return;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/artifacts", s->o->work_dir);
    mkdir(dir, 0755);
    const char *ext = strncmp(r->def->wrap, "nsys", 4) == 0 ? ".nsys-rep" : ".ncu-rep";
    int n =
        asprintf(&r->artifact, "%s/%s-%s-%s%s", dir, r->def->wrap, a->w->name, r->def->name, ext);
    if (n < 0)
        r->artifact = NULL;
    for (char *c = r->artifact ? r->artifact + strlen(dir) + 1 : NULL; c && *c; c++)
        if (*c == '/' || *c == ' ')
            *c = '_';
}

static void build_args(struct sched *s, struct awl *a, struct arun *r, int rfd, int gfd,
                       struct argv_buf *b)
{
    const struct sweep_workload *w = a->w;
    char gate[64], buf[64];
    snprintf(gate, sizeof(gate), "%d,%d", rfd, gfd);
    arg(b, s->o->exe);
    arg(b, "run");
    argcat(b, "--store=", s->o->store_uri, NULL);
    argcat(b, "--experiment=", w->experiment, NULL);
    argcat(b, "--workload=", w->name, NULL);
    argcat(b, "--name=", r->def->name, NULL);
    for (size_t i = 0; i < r->def->params.n; i++)
        argcat(b, "--param=", r->def->params.items[i].key, "=", r->def->params.items[i].value,
               NULL);
    argcat(b, "--tag=sweep=", s->spec->campaign, NULL);
    argcat(b, "--tag=collocation=", sweep_run_collocation(r->def, buf, sizeof(buf)), NULL);
    char devices[1024];
    join_devices((const char *const *)r->def->devices, devices, sizeof(devices));
    if (devices[0])
        argcat(b, "--tag=devices=", devices, NULL);
    if (w->interval_ns) {
        snprintf(buf, sizeof(buf), "%lldns", (long long)w->interval_ns);
        argcat(b, "--interval=", buf, NULL);
    }
    for (char **f = w->on_finding; f && *f; f++)
        argcat(b, "--on-finding=", *f, NULL);
    if (w->rules)
        argcat(b, "--rules=", w->rules, NULL);
    for (char **f = w->rule_params; f && *f; f++)
        argcat(b, "--rule-param=", *f, NULL);
    if (w->rule_interval_ns) {
        snprintf(buf, sizeof(buf), "%lldns", (long long)w->rule_interval_ns);
        argcat(b, "--rule-interval=", buf, NULL);
    }
    if (!w->report)
        arg(b, "--no-report");
    arg(b, "--quiet");
    arg(b, "--no-join"); /* a launcher's variables in the sweep's environment are not a job */
    argcat(b, "--start-gate=", gate, NULL);
    if (r->def->wrap)
        name_artifact(s, a, r);
    if (r->artifact)
        argcat(b, "--tag=artifact=", r->artifact, NULL);
    arg(b, "--");
    /* a wrapping listener runs the command: its words come first */
    const char *const *words = wrap_words(r->def->wrap);
    const char *last = NULL;
    for (size_t i = 0; words && words[i]; i++)
        arg(b, last = words[i]);
    if (last && strcmp(last, "-o") == 0)
        arg(b, r->artifact ? r->artifact : "strobe-artifact");
    for (char **p = r->def->argv; *p; p++)
        arg(b, *p);
}

/* The run's environment on top of the sweep's: the workload's variables,
 * its devices, MPS's folders. In the child, before exec. */
static void child_env(const struct awl *a, const struct arun *r)
{
    for (size_t i = 0; i < a->w->env.n; i++)
        setenv(a->w->env.items[i].key, a->w->env.items[i].value, 1);
    char devices[1024];
    if (r->has_mig)
        snprintf(devices, sizeof(devices), "%s", r->mig.uuid);
    else if (r->visible)
        snprintf(devices, sizeof(devices), "%s", r->visible);
    else
        join_devices((const char *const *)r->def->devices, devices, sizeof(devices));
    if (devices[0])
        setenv("CUDA_VISIBLE_DEVICES", devices, 1);
    /* the file's indexes are nvidia-smi's, in PCI bus order; CUDA's own
     * default puts the fastest GPU first (a workload's env may say so) */
    if (devices[0])
        setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
    for (size_t i = 0; a->mps.running && i < 2; i++)
        putenv(a->mps.env[i]);
    if (a->mps.running && r->def->mps_thread_pct) {
        char pct[16];
        snprintf(pct, sizeof(pct), "%d", r->def->mps_thread_pct);
        setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, 1);
    }
}

static int spawn_run(struct sched *s, struct awl *a, struct arun *r)
{
    int rp[2], gp[2];
    if (pipe2(rp, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(gp, O_CLOEXEC) < 0) {
        int err = -errno;
        close(rp[0]);
        close(rp[1]);
        return err;
    }
    struct argv_buf b = {0};
    build_args(s, a, r, rp[1], gp[0], &b);
    pid_t pid = b.failed ? -1 : fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        fcntl(rp[1], F_SETFD, 0);
        fcntl(gp[0], F_SETFD, 0);
        if (r->def->cwd && chdir(r->def->cwd) < 0)
            _exit(127);
        child_env(a, r);
        execv(b.v[0], b.v);
        _exit(127);
    }
    int err = pid < 0 ? (b.failed ? -ENOMEM : -errno) : 0;
    argv_free(&b);
    close(rp[1]);
    close(gp[0]);
    if (err) {
        close(rp[0]);
        close(gp[1]);
        return err;
    }
    r->pid = pid;
    r->spawned = 1;
    r->rfd = rp[0];
    r->gfd = gp[1];
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Call off a workload whose recorders cannot all start: every gate closes,
 * so those waiting end their runs unstarted. */
static void call_off(struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        close_fd(&a->runs[i].gfd);
}

/* ---- workloads ---- */

static void awl_free(struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++) {
        close_fd(&a->runs[i].rfd);
        close_fd(&a->runs[i].gfd);
        free(a->runs[i].artifact);
        free(a->runs[i].visible);
    }
    free(a->runs);
    free(a->devices);
    free(a);
}

static void say(struct sched *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct sched *s, const char *fmt, ...)
{
    if (s->o->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("strobe sweep: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Start workload index's recorders: 1 started, 0 not now (a device is
 * held elsewhere), -1 it failed to start (recorded). */
static int start_workload(struct sched *s, size_t index)
{
    struct sweep_workload *w = &s->spec->w[index];
    struct awl *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->index = index;
    a->w = w;
    a->runs = calloc(w->nruns, sizeof(*a->runs));
    a->devices = sweep_workload_devices(w);
    for (size_t i = 0; a->runs && i < w->nruns; i++) { /* before anything can free them */
        a->runs[i].def = &w->runs[i];
        a->runs[i].rfd = a->runs[i].gfd = -1;
    }
    if (!a->runs || !a->devices) {
        free(a->runs);
        free(a->devices);
        free(a);
        return -1;
    }
    while (a->devices[a->ndev])
        a->ndev++;
    int rc = locks_take(s, a);
    if (rc == -EAGAIN) {
        awl_free(a);
        return 0;
    }
    a->st = campaign_state_find(s->st, w->experiment, w->name);
    if (rc < 0 || share_setup(s, a) < 0) {
        if (!a->note[0])
            snprintf(a->note, sizeof(a->note), "cannot lock its devices");
        a->start_failed = 1;
    }
    for (size_t i = 0; !a->start_failed && i < w->nruns; i++) {
        int err = spawn_run(s, a, &a->runs[i]);
        if (err < 0) {
            snprintf(a->note, sizeof(a->note), "cannot start strobe run: %s", strerror(-err));
            a->start_failed = 1;
            call_off(a);
        }
    }
    /* runs never started have no recorder to wait for: the workload ends
     * when those that did start are gone */
    for (size_t i = 0; a->start_failed && i < w->nruns; i++)
        if (!a->runs[i].pid)
            a->runs[i].exited = 1;
    struct awl **grown = realloc(s->active, (s->nactive + 1) * sizeof(*grown));
    if (!grown) {
        call_off(a);
        a->start_failed = 1;
    } else {
        s->active = grown;
        s->active[s->nactive++] = a;
    }
    return grown ? 1 : -1;
}

/* Whether two device lists share a device; two empty lists share the
 * host, which counts as one. */
static int lists_overlap(const char *const *a, size_t n, const char *const *b, size_t m)
{
    if (n == 0 && m == 0)
        return 1;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < m; k++)
            if (strcmp(a[i], b[k]) == 0)
                return 1;
    return 0;
}

static int devices_overlap(const struct awl *a, const char **devices, size_t n)
{
    return lists_overlap(a->devices, a->ndev, devices, n);
}

/* Whether a workload may start its recorders now. */
static int may_start(struct sched *s, const struct sweep_workload *w)
{
    if (s->nactive == 0)
        return 1;
    const char **devices = sweep_workload_devices(w);
    size_t n = 0;
    while (devices && devices[n])
        n++;
    int ok;
    if (s->o->parallel) {
        ok = 1;
        for (size_t i = 0; ok && i < s->nactive; i++)
            ok = !devices_overlap(s->active[i], devices, n);
    } else {
        /* one running, up to PRESTART_AHEAD waiting at their gates: a
         * workload starts early only when nothing has to be set up for it */
        size_t waiting = 0;
        for (size_t i = 0; i < s->nactive; i++)
            waiting += s->active[i]->phase == PH_STARTING;
        ok = !needs_setup(w) && waiting < PRESTART_AHEAD;
    }
    free(devices);
    return ok;
}

/* Whether a ready workload may start its jobs: in order, each after the
 * ones before it have ended well (parallel workloads share no device). */
static int may_go(struct sched *s, const struct awl *a)
{
    if (s->o->parallel)
        return 1;
    for (size_t i = 0; i < s->nactive; i++) {
        const struct awl *b = s->active[i];
        if (b != a && b->index < a->index && !b->released)
            return 0;
    }
    return 1;
}

static int all_ready(const struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        if (!a->runs[i].ready)
            return 0;
    return 1;
}

static void go(struct sched *s, struct awl *a)
{
    int64_t now = clock_monotonic_ns();
    for (size_t i = 0; i < a->w->nruns; i++) {
        if (write(a->runs[i].gfd, "g", 1) != 1) {
            /* that recorder is gone: its exit tells */
        }
        close_fd(&a->runs[i].gfd);
    }
    a->phase = PH_RUNNING;
    a->deadline_ns = a->w->timeout_ns ? now + a->w->timeout_ns : 0;
    struct wl_state *st = a->st;
    char ids[SWEEP_MAX_RUNS][RUN_ID_LEN + 1];
    for (size_t i = 0; i < a->w->nruns; i++)
        memcpy(ids[i], a->runs[i].id, sizeof(ids[i]));
    snprintf(st->status, sizeof(st->status), "%s", WL_RUNNING);
    st->started_ns = clock_realtime_ns();
    st->ended_ns = 0;
    wl_state_set_runs(st, ids, a->w->nruns);
    wl_state_set_note(st, NULL);
    char devices[256];
    join_devices(a->devices, devices, sizeof(devices));
    say(s, "workload %s: %zu run%s started%s%s", a->w->name, a->w->nruns,
        a->w->nruns == 1 ? "" : "s", devices[0] ? " on GPU " : "", devices);
    save(s);
}

/* ---- reports and exits ---- */

static void on_line(struct awl *a, struct arun *r, const char *line)
{
    int v;
    if (!r->ready && strlen(line) == RUN_ID_LEN) {
        memcpy(r->id, line, RUN_ID_LEN + 1);
        r->ready = 1;
    } else if (sscanf(line, "pid %d", &v) == 1) {
        r->job_pid = v;
    } else if (sscanf(line, "end %d", &v) == 1) {
        r->ended = 1;
        r->job_status = v;
    }
    (void)a;
}

static void read_report(struct awl *a, struct arun *r)
{
    ssize_t n = read(r->rfd, r->line + r->len, sizeof(r->line) - 1 - r->len);
    if (n <= 0) {
        if (n < 0 && errno == EINTR)
            return;
        close_fd(&r->rfd); /* the recorder is gone or done talking */
        if (!r->ready)
            a->start_failed = 1;
        return;
    }
    r->len += (size_t)n;
    r->line[r->len] = '\0';
    char *nl;
    while ((nl = strchr(r->line, '\n'))) {
        *nl = '\0';
        on_line(a, r, r->line);
        size_t used = (size_t)(nl + 1 - r->line);
        memmove(r->line, nl + 1, r->len - used + 1);
        r->len -= used;
    }
    if (r->len == sizeof(r->line) - 1) /* a line that long is not ours */
        r->len = 0;
}

static void reap(struct sched *s)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (size_t i = 0; i < s->nactive; i++)
            for (size_t k = 0; k < s->active[i]->w->nruns; k++) {
                struct arun *r = &s->active[i]->runs[k];
                if (r->pid == pid) {
                    r->pid = 0;
                    r->exited = 1;
                    r->exit_status = status;
                    if (!r->ready)
                        s->active[i]->start_failed = 1;
                }
            }
}

static int jobs_done(const struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        if (!a->runs[i].ended && !a->runs[i].exited)
            return 0;
    return 1;
}

static int jobs_ok(const struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        if (!a->runs[i].ended || a->runs[i].job_status != 0)
            return 0;
    return 1;
}

static int recorders_done(const struct awl *a)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        if (a->runs[i].spawned && (!a->runs[i].exited || a->runs[i].rfd >= 0))
            return 0;
    return 1;
}

/* The workload's status from its runs as the store has them. */
static const char *outcome(struct sched *s, struct awl *a)
{
    if (a->start_failed && a->phase == PH_STARTING) {
        for (size_t i = 0; !a->note[0] && i < a->w->nruns; i++)
            if (!a->runs[i].ready && a->runs[i].exited)
                snprintf(a->note, sizeof(a->note),
                         "run %s: strobe run exited with %d before "
                         "it was ready",
                         a->runs[i].def->name,
                         WIFEXITED(a->runs[i].exit_status)
                             ? WEXITSTATUS(a->runs[i].exit_status)
                             : 128 + WTERMSIG(a->runs[i].exit_status));
        return s->stopping ? WL_INTERRUPTED : WL_FAILED;
    }
    struct runs_tally t = {0};
    for (size_t i = 0; i < a->w->nruns; i++) {
        struct run_record rec;
        run_record_init(&rec);
        const char *status = RUN_FAILED; /* a run the store never got */
        if (a->runs[i].id[0] && store_resolve_run(s->store, a->runs[i].id, &rec) == 0)
            status = rec.status;
        tally_run(&t, a->runs[i].def->name, status, a->timed_out ? " (timed out)" : "");
        run_record_release(&rec);
    }
    if (t.failed && !a->note[0])
        snprintf(a->note, sizeof(a->note), "%s", t.note);
    if (t.failed && s->stopping)
        return WL_INTERRUPTED;
    return tally_status(&t);
}

static void remove_active(struct sched *s, struct awl *a)
{
    for (size_t i = 0; i < s->nactive; i++)
        if (s->active[i] == a) {
            memmove(&s->active[i], &s->active[i + 1], (s->nactive - i - 1) * sizeof(*s->active));
            s->nactive--;
            return;
        }
}

static void finish_workload(struct sched *s, struct awl *a)
{
    share_teardown(a);
    locks_release(s, a);
    struct wl_state *st = a->st;
    if (a->phase == PH_STARTING && s->stopping) { /* called off: it never ran */
        remove_active(s, a);
        awl_free(a);
        return;
    }
    const char *status = outcome(s, a);
    st->attempts++;
    st->ended_ns = clock_realtime_ns();
    snprintf(st->status, sizeof(st->status), "%s", status);
    wl_state_set_note(st, a->note[0] ? a->note : NULL);
    char dur[32];
    double secs = st->started_ns ? (double)(st->ended_ns - st->started_ns) / 1e9 : 0;
    say(s, "workload %s: %s%s%s after %s", a->w->name, status, a->note[0] ? ": " : "", a->note,
        fmt_duration(secs, dur, sizeof(dur)));
    int again = strcmp(status, WL_FAILED) == 0 && st->attempts <= a->w->retries && !s->stopping;
    if (!again && strcmp(status, WL_FAILED) == 0)
        s->failed = 1;
    if (again) {
        say(s, "workload %s: try %d of %d", a->w->name, st->attempts + 1, a->w->retries + 1);
        snprintf(st->status, sizeof(st->status), "%s", WL_PENDING);
    }
    save(s);
    size_t index = a->index;
    remove_active(s, a);
    awl_free(a);
    if (again && start_workload(s, index) < 0)
        s->failed = 1;
}

/* Append the children of every thread of pid (proc(5):
 * /proc/PID/task/TID/children, pids separated by blanks) to *pids. */
static void add_children(pid_t pid, pid_t **pids, size_t *n, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char file[96], buf[4096];
        snprintf(file, sizeof(file), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        ssize_t len = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        buf[len > 0 ? len : 0] = '\0';
        for (char *p = buf, *end; *p; p = end) {
            long child = strtol(p, &end, 10);
            if (end == p)
                break;
            if (*n == *cap) {
                size_t grown_cap = *cap ? *cap * 2 : 16;
                pid_t *grown = realloc(*pids, grown_cap * sizeof(*grown));
                if (!grown)
                    break;
                *pids = grown;
                *cap = grown_cap;
            }
            (*pids)[(*n)++] = (pid_t)child;
        }
    }
    if (d)
        closedir(d);
}

/* Signal a job and its descendants, as timeout(1) signals its command's
 * process group: a shell's `sleep` or a launcher's workers must not
 * outlive a timeout. Every pid is found before any is signalled: a child
 * whose parent dies first moves to the recorder, out of the job's tree. */
static void signal_tree(pid_t job, int sig)
{
    pid_t *pids = malloc(16 * sizeof(*pids));
    size_t n = 0, cap = pids ? 16 : 0;
    if (pids)
        pids[n++] = job;
    for (size_t i = 0; i < n; i++)
        add_children(pids[i], &pids, &n, &cap);
    kill(job, sig); /* also when out of memory */
    for (size_t i = 1; i < n; i++)
        kill(pids[i], sig);
    free(pids);
}

static void signal_jobs(struct awl *a, int sig)
{
    for (size_t i = 0; i < a->w->nruns; i++)
        if (a->runs[i].job_pid > 0 && !a->runs[i].ended)
            signal_tree(a->runs[i].job_pid, sig);
}

static void check_timeouts(struct sched *s, int64_t now)
{
    for (size_t i = 0; i < s->nactive; i++) {
        struct awl *a = s->active[i];
        if (a->phase != PH_RUNNING)
            continue;
        if (a->deadline_ns && now >= a->deadline_ns) {
            char dur[32];
            a->timed_out = 1;
            snprintf(a->note, sizeof(a->note), "timed out after %s",
                     fmt_duration((double)a->w->timeout_ns / 1e9, dur, sizeof(dur)));
            signal_jobs(a, SIGTERM);
            a->deadline_ns = 0;
            a->kill_ns = now + s->o->stop_grace_ns;
        } else if (a->kill_ns && now >= a->kill_ns) {
            signal_jobs(a, SIGKILL);
            a->kill_ns = 0;
        }
    }
}

/* Move each workload along: go when ready, tear down when its jobs are
 * done, finish when its recorders are. */
static void advance(struct sched *s)
{
    for (size_t i = 0; i < s->nactive; i++) {
        struct awl *a = s->active[i];
        if (a->phase == PH_STARTING && a->start_failed)
            call_off(a);
        else if (a->phase == PH_STARTING && all_ready(a) && !s->stopping && may_go(s, a))
            go(s, a);
        if (a->phase == PH_RUNNING && jobs_done(a)) {
            a->phase = PH_ENDED;
            share_teardown(a);
            /* the next may go before this one's recorders are done */
            a->released = jobs_ok(a);
        }
        if (recorders_done(a)) {
            finish_workload(s, a);
            i = (size_t)-1; /* the list changed: start over */
        }
    }
}

/* Start workload i: 1 started (or failed, recorded), 0 not now (another
 * campaign holds a device: try again later). */
static int try_start(struct sched *s, size_t i, int64_t now)
{
    int rc = start_workload(s, i);
    if (rc == 0) {
        s->lock_retry_ns = now + LOCK_RETRY_NS;
        return 0;
    }
    if (rc < 0)
        s->failed = 1;
    return 1;
}

/* Whether an earlier workload not started yet uses one of w's devices:
 * then w waits for it, so each device sees the file's order. */
static int behind_earlier(struct sched *s, size_t i)
{
    const char **mine = sweep_workload_devices(&s->spec->w[i]);
    size_t n = 0;
    while (mine && mine[n])
        n++;
    int behind = 0;
    for (size_t k = 0; !behind && k < i; k++) {
        if (s->started[k] || !to_run(s->decisions[k]))
            continue;
        const char **theirs = sweep_workload_devices(&s->spec->w[k]);
        size_t m = 0;
        while (theirs && theirs[m])
            m++;
        behind = lists_overlap(mine, n, theirs, m);
        free(theirs);
    }
    free(mine);
    return behind;
}

/* --parallel: every workload whose devices are free and that no earlier
 * one waits for on them. */
static void start_parallel(struct sched *s, int64_t now)
{
    for (size_t i = 0; i < s->spec->n && s->waiting; i++) {
        if (s->started[i] || !to_run(s->decisions[i]) || !may_start(s, &s->spec->w[i]) ||
            behind_earlier(s, i))
            continue;
        if (!try_start(s, i, now))
            return;
        s->started[i] = 1;
        s->waiting--;
    }
}

static void start_more(struct sched *s, int64_t now)
{
    if (s->stopping || now < s->lock_retry_ns)
        return;
    if (s->o->parallel) {
        start_parallel(s, now);
        return;
    }
    for (;;) {
        while (s->next < s->spec->n && !to_run(s->decisions[s->next]))
            s->next++;
        if (s->next >= s->spec->n || !may_start(s, &s->spec->w[s->next]) ||
            !try_start(s, s->next, now))
            return;
        s->next++;
    }
}

static void on_signal(struct sched *s)
{
    struct signalfd_siginfo si;
    while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
            reap(s);
            continue;
        }
        s->stopping++;
        if (!s->stop_signal)
            s->stop_signal = (int)si.ssi_signo;
        if (s->stopping == 1)
            say(s, "stopping: the runs under way end, the campaign's state is kept");
        for (size_t i = 0; i < s->nactive; i++) {
            struct awl *a = s->active[i];
            if (a->phase == PH_STARTING) {
                call_off(a);
                a->start_failed = 1;
            } else if (s->stopping == 1 && si.ssi_code != SI_KERNEL) {
                for (size_t k = 0; k < a->w->nruns; k++)
                    if (a->runs[k].pid > 0)
                        kill(a->runs[k].pid, (int)si.ssi_signo);
            } else if (s->stopping > 1) {
                signal_jobs(a, s->stopping == 2 ? SIGTERM : SIGKILL);
            }
        }
    }
}

static int64_t next_wake_ms(struct sched *s, int64_t now)
{
    int64_t due = INT64_MAX;
    for (size_t i = 0; i < s->nactive; i++) {
        if (s->active[i]->deadline_ns && s->active[i]->deadline_ns < due)
            due = s->active[i]->deadline_ns;
        if (s->active[i]->kill_ns && s->active[i]->kill_ns < due)
            due = s->active[i]->kill_ns;
    }
    if (s->lock_retry_ns > now && s->lock_retry_ns < due)
        due = s->lock_retry_ns;
    if (due == INT64_MAX)
        return 1000; /* a lost SIGCHLD costs a second at most */
    return due <= now ? 0 : (due - now) / NS_PER_MS + 1;
}

static void loop(struct sched *s)
{
    struct pollfd *fds = NULL;
    struct arun **owner = NULL;
    struct awl **owner_wl = NULL;
    for (;;) {
        int64_t now = clock_monotonic_ns();
        check_timeouts(s, now);
        start_more(s, now);
        advance(s);
        int all_started = s->o->parallel ? s->waiting == 0 : s->next >= s->spec->n;
        if (s->nactive == 0 && (s->stopping || all_started))
            break;
        size_t cap = 1;
        for (size_t i = 0; i < s->nactive; i++)
            cap += s->active[i]->w->nruns;
        fds = realloc(fds, cap * sizeof(*fds));
        owner = realloc(owner, cap * sizeof(*owner));
        owner_wl = realloc(owner_wl, cap * sizeof(*owner_wl));
        if (!fds || !owner || !owner_wl)
            break;
        size_t n = 0;
        fds[n++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
        for (size_t i = 0; i < s->nactive; i++)
            for (size_t k = 0; k < s->active[i]->w->nruns; k++)
                if (s->active[i]->runs[k].rfd >= 0) {
                    owner[n] = &s->active[i]->runs[k];
                    owner_wl[n] = s->active[i];
                    fds[n] = (struct pollfd){.fd = owner[n]->rfd, .events = POLLIN};
                    n++;
                }
        int got = poll(fds, n, (int)next_wake_ms(s, clock_monotonic_ns()));
        if (got < 0 && errno != EINTR)
            break;
        for (size_t i = 1; got > 0 && i < n; i++)
            if (fds[i].revents)
                read_report(owner_wl[i], owner[i]);
        if (got > 0 && fds[0].revents)
            on_signal(s);
        reap(s);
    }
    free(fds);
    free(owner);
    free(owner_wl);
}

int sweep_execute(struct sweep_spec *spec, const enum sweep_decision *decisions,
                  struct store *store, struct campaign_state *st, const struct sweep_opts *o)
{
    struct sched s = {.spec = spec, .decisions = decisions, .store = store, .st = st, .o = o};
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &old);
    s.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (s.sigfd < 0) {
        log_error("cannot watch signals: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 125;
    }
    mkdir(o->work_dir, 0755);
    /* the campaign is ours: every workload it will run is pending */
    struct utsname u;
    st->owner_pid = getpid();
    procid_self(&st->owner);
    free(st->owner_host);
    st->owner_host = uname(&u) == 0 ? strdup(u.nodename) : NULL;
    for (size_t i = 0; i < spec->n; i++) {
        struct sweep_workload *w = &spec->w[i];
        struct wl_state *ws = campaign_state_find(st, w->experiment, w->name);
        if (!ws)
            ws = campaign_state_add(st, w->experiment, w->name, w->key);
        if (!ws) {
            log_error("out of memory");
            close(s.sigfd);
            sigprocmask(SIG_SETMASK, &old, NULL);
            return 125;
        }
        free(ws->key);
        ws->key = strdup(w->key);
        const char **devices = sweep_workload_devices(w);
        char text[1024], coll[64];
        join_devices(devices, text, sizeof(text));
        free(devices);
        free(ws->devices);
        free(ws->collocation);
        ws->devices = strdup(text);
        ws->collocation =
            strdup(w->nruns ? sweep_run_collocation(&w->runs[0], coll, sizeof(coll)) : "-");
        if (to_run(decisions[i])) {
            snprintf(ws->status, sizeof(ws->status), "%s", WL_PENDING);
            ws->attempts = 0;
        } else if (decisions[i] == SWEEP_SKIP_FILE) {
            snprintf(ws->status, sizeof(ws->status), "%s", WL_FINISHED);
        }
    }
    s.started = calloc(spec->n + 1, 1);
    for (size_t i = 0; i < spec->n; i++)
        s.waiting += to_run(decisions[i]);
    if (!s.started) {
        log_error("out of memory");
        close(s.sigfd);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return 125;
    }
    save(&s);
    loop(&s);
    free(s.started);
    for (size_t i = 0; i < s.nlocks; i++)
        if (s.locks[i].device) {
            close(s.locks[i].fd);
            free(s.locks[i].device);
        }
    free(s.locks);
    for (size_t i = 0; i < s.nids; i++) {
        free(s.ids[i].device);
        free(s.ids[i].uuid);
    }
    free(s.ids);
    free(s.active);
    /* the campaign is no longer running here */
    st->owner_pid = 0;
    save(&s);
    close(s.sigfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (s.stop_signal)
        return 128 + s.stop_signal;
    return s.failed ? 1 : 0;
}
