#include "common/array.h"
#include "record/recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/fmt.h"
#include "common/log.h"
#include "gpu/dcgm.h"
#include "gpu/gpu.h"
#include "store/job.h"
#include "record/cluster.h"
#include "record/control.h"
#include "record/events.h"
#include "record/live_metrics.h"
#include "record/live_rules.h"
#include "record/runinfo.h"
#include "record/logtee.h"
#include "record/on_finding.h"
#include "record/pydir.h"
#include "pyprof/sampler.h"
#include "record/spool.h"
#include "record/torch_profile.h"
#include "rules/replay.h"
#include "record/writer.h"
#include "sample/collector.h"
#include "sample/proctree.h"
#include "serve/serve.h"

#define FLUSH_INTERVAL_NS NS_PER_S
#define LIVE_INTERVAL_NS  NS_PER_S
/* how often the live metrics' snapshot goes into the store (record/
 * live_metrics.h): a PostgreSQL server takes every node's, so less often */
#define SNAP_EVERY_NS        NS_PER_S /* taken this often, and served */
#define SNAP_STORE_NS        NS_PER_S
#define SNAP_STORE_PG_NS     (5 * NS_PER_S)
#define FINAL_RETRIES        10
#define CLOCK_EVERY_NS       (60 * NS_PER_S) /* a node's clock against the store's */
#define FINAL_RETRY_SLEEP_US 300000
#define DRAIN_INTERVAL_NS    (100 * NS_PER_MS) /* rings are drained at least this often */
#define DRAIN_MIN_NS         (10 * NS_PER_MS)  /* and at most this often */

/* Signals strobe forwards to the job. */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define N_FORWARDED (ARRAY_SIZE(forwarded_signals))

struct recorder {
    const struct recorder_opts *o;
    int job_slot;                  /* a node of a job: its order of joining (store/job.h) */
    struct rules_options judge_ro; /* the rules across the job's nodes */
    struct job_judge judge;        /* ... while it runs (record/cluster.h) */
    struct store *store;
    struct run_record run;
    struct series_table series;
    struct sample_env env;
    struct proc_tree tree;
    struct sampler sampler;
    struct writer writer;
    struct batch batch;
    struct event_sink events;
    /* on the heap: a GPU thread stuck in a driver call outlives the run
     * (gpu_collector_close), so its collector is then never freed */
    struct gpu_collector *gpu;
    struct dcgm_collector *dcgm;
    int gpu_left_running, dcgm_left_running;
    struct live_rules rules;
    struct live_metrics metrics; /* snapshots for --listen, serve and top */
    int metrics_open;
    struct serve_config http_cfg; /* --listen */
    struct serve_handle *http;    /* its server, or NULL */
    int64_t snap_store_every_ns, snap_stored_ns, snap_taken_ns;
    struct on_finding actions;          /* --on-finding */
    struct torch_profile torch_profile; /* --torch-profile's trace directory */
    struct control ctl;                 /* strobe ctl's socket (record/control.h) */
    struct py_sampler *py;              /* Python stacks (--py-sample, --py-profile, ctl) */
    struct log_tee logs[2];             /* the job's stdout and stderr, kept */
    char **child_env;                   /* the job's environment, built before fork */
    int in_flight;
    int sigfd, timerfd, drainfd, epfd;
    sigset_t old_mask;
    /* what strobe was started with, for the job: the forwarded signals,
     * SIGPIPE and SIGCHLD (nohup's ignored SIGHUP stays ignored; they had
     * been reset to the default) */
    struct sigaction old_forwarded[N_FORWARDED], old_pipe, old_chld;
    /* the fd limit strobe was started with, the job's again at exec; strobe
     * raises its own to the hard limit (a wide tree keeps fds per process) */
    struct rlimit old_nofile;
    int nofile_raised;
    pid_t child;
    int gate_fd;  /* --start-gate's R, kept open to say when the job has ended; -1 */
    int gated;    /* the run started at the gate: its start moved there */
    int inserted; /* the run row is in the store */
    int in_job;   /* find_job: 0 a node of a job, 1 a run of its own, <0 failed */
    struct cluster_join job;
    struct kv_list texts; /* kept with the run once it is inserted */
    int child_status;
    int child_done;
    int64_t start_mono_ns, start_real_ns;
    int64_t interval_ns;    /* the metrics interval now (strobe ctl interval changes it) */
    int64_t grid_base_ns;   /* where the deadlines' grid starts: 0, or when it changed */
    int64_t deadline_index; /* frames are due at start + grid_base + index * interval */
    int64_t last_flush_ns, last_live_ns, last_drain_ns;
    int64_t prev_self_cpu_ns, prev_self_mono_ns;
    uint32_t s_self_cpu;
    int64_t frames, missed;
    int store_failing;      /* the last commit failed; warned once */
    int64_t committed_ns;   /* time of the last sample the store has */
    int64_t open_last_ns;   /* last_ns of the last batch that carried the open blocks */
    int64_t logs_ckpt_ns;   /* when the job's output last went into a batch */
    int64_t logs_stored[2]; /* bytes of each stream the store has */
    int live;
    struct log_line *line;         /* stderr's terminal line, when the live line is on */
    struct log_writer line_writer; /* strobe's own lines onto it */
    struct strbuf store_shown;     /* o->store_uri without its password, for messages */
    char name_buf[256];
};

/* ---- setup ---------------------------------------------------------------- */

/* --listen's /metrics: the last snapshot (any of the server's threads). */
static int own_metrics(void *arg, struct expo_set *set)
{
    struct recorder *r = arg;
    struct strbuf snap;
    strbuf_init(&snap);
    int rc = live_metrics_published(&r->metrics, &snap);
    if (rc == 0)
        rc = strbuf_failed(&snap) ? -ENOMEM : expo_set_add_snapshot(set, snap.buf, snap.len, NULL);
    strbuf_release(&snap);
    return rc;
}

/* The live metrics, once the run, its series, events and rules are. */
static int open_metrics(struct recorder *r)
{
    const char *node = r->run.node ? r->run.node : r->run.host;
    if (live_metrics_open(&r->metrics, &r->series, &r->events, &r->tree, &r->run, node) < 0) {
        log_error("out of memory");
        return -ENOMEM;
    }
    r->metrics_open = 1;
    live_metrics_set_rules(&r->metrics, r->rules.e);
    r->snap_store_every_ns =
        store_uri_is_postgres(r->o->store_uri) ? SNAP_STORE_PG_NS : SNAP_STORE_NS;
    return 0;
}

/* --listen's server, first of all: a bad or busy address fails the run
 * before anything is stored or started. It answers 503 until the first
 * snapshot. */
static int start_listening(struct recorder *r)
{
    const struct recorder_opts *o = r->o;
    if (!o->listen)
        return 0;
    r->http_cfg = (struct serve_config){
        .listen = o->listen,
        .token = o->listen_token,
        .threads = 1,
        .rate_per_s = 20,
        .burst = 40,
        .metrics = own_metrics,
        .metrics_arg = r,
    };
    /* its threads take no signal: they belong to the signalfd, set up later */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int st = serve_start(&r->http_cfg, &r->http);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (st != SERVE_EXIT_OK)
        return -EINVAL; /* said */
    char addr[96];
    serve_address(r->http, addr, sizeof(addr));
    log_note("metrics at %s/metrics%s", addr, o->listen_token ? " (token required)" : "");
    return 0;
}

static int open_roots(struct recorder *r)
{
    const struct recorder_opts *o = r->o;
    r->env.proc_root = o->proc_root ? o->proc_root : "/proc";
    r->env.sys_root = o->sys_root ? o->sys_root : "/sys";
    r->env.proc_fd = open(r->env.proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    r->env.sys_fd = open(r->env.sys_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (r->env.proc_fd < 0) {
        log_error("cannot open '%s': %s", r->env.proc_root, strerror(errno));
        return -errno;
    }
    r->env.ticks_per_s = sysconf(_SC_CLK_TCK);
    r->env.page_bytes = sysconf(_SC_PAGESIZE);
    r->env.self_pid = getpid();
    r->env.self_tid = (pid_t)gettid();
    r->env.tree = &r->tree;
    return 0;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static const char *default_name(const struct recorder_opts *o, char *buf, size_t cap)
{
    /* "python train.py" is better named after the script than the interpreter */
    const char *pick = o->argv[0];
    if (runinfo_is_python(pick) && o->argv[1]) {
        if (o->argv[1][0] != '-')
            pick = o->argv[1]; /* python train.py */
        else if (strcmp(o->argv[1], "-m") == 0 && o->argv[2])
            pick = o->argv[2]; /* python -m torch.distributed.run */
    }
    snprintf(buf, cap, "%s", base_name(pick));
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = '_';
    return buf;
}

/* 0 when this run is a node of a job (job filled), 1 when not, negative
 * after saying why (a bad --join or --node). */
static int find_job(struct recorder *r, struct cluster_join *job)
{
    if (r->o->no_join)
        return 1;
    int rc = cluster_join_find(r->o->join_key, r->o->node, r->o->argv, job);
    if (rc < 0) {
        log_error("--join and --node each take a non-empty name (--node at most 255 bytes)");
        return rc;
    }
    if (rc == 0 && !(r->run.node = strdup(job->node)))
        return -ENOMEM;
    return rc;
}

/* The node's clock against the store's, before the job starts; the
 * offset then shifts every time the node records (record/cluster.h). */
static int measure_node_clock(struct recorder *r)
{
    int rc = cluster_clock_offset(r->store, CLUSTER_CLOCK_PROBES, &r->run.clock_offset_ns,
                                  &r->run.clock_rtt_ns);
    if (rc < 0) {
        log_error("cannot read the clock of store '%s': %s", r->store_shown.buf, r->store->err.buf);
        return rc;
    }
    /* every time this node records is on the store's clock from here on:
     * the views of the job line its nodes up with nothing to undo */
    r->run.clock_shift_ns = r->run.clock_offset_ns;
    r->run.start_ns += r->run.clock_shift_ns;
    return 0;
}

/* Open the store and learn everything the run row holds (its job too),
 * without writing it: insert_run does, at once or at the start gate. */
static int open_store_and_prepare(struct recorder *r)
{
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(r->o->store_uri, 0, &r->store, &err);
    if (rc < 0) {
        log_error("%s", err.buf);
        strbuf_release(&err);
        return rc;
    }
    strbuf_release(&err);
    run_record_init(&r->run);
    runinfo_new_id(r->run.id);
    r->run.name =
        strdup(r->o->name ? r->o->name : default_name(r->o, r->name_buf, sizeof(r->name_buf)));
    r->run.experiment = r->o->experiment ? strdup(r->o->experiment) : NULL;
    r->run.workload = r->o->workload ? strdup(r->o->workload) : NULL;
    for (size_t i = 0; i < r->o->tags.n; i++)
        kv_list_add(&r->run.tags, r->o->tags.items[i].key, r->o->tags.items[i].value);
    for (size_t i = 0; i < r->o->params.n; i++)
        kv_list_add(&r->run.params, r->o->params.items[i].key, r->o->params.items[i].value);
    runinfo_collect(&r->run, r->o->argv, r->env.proc_root, &r->texts);
    r->run.interval_ns = r->o->interval_ns;
    snprintf(r->run.status, sizeof(r->run.status), "%s", RUN_RUNNING);
    r->run.start_ns = clock_realtime_ns();
    /* a run started at a gate is a run of its own: its row is written only
     * when the gate opens, and a job's node joins as it is written */
    r->in_job = r->o->start_gate ? 1 : find_job(r, &r->job);
    if (r->in_job < 0)
        return r->in_job;
    if (r->in_job == 0 && (rc = measure_node_clock(r)) < 0)
        return rc;
    return 0;
}

/* Write the run row and its texts: from here the run is in the store. */
static int insert_run(struct recorder *r)
{
    struct store *s = r->store;
    int rc = s->ops->begin(s);
    if (rc == 0)
        rc = r->in_job == 0 ? store_job_join(s, r->job.key, &r->run, &r->job_slot)
                            : s->ops->run_insert(s, &r->run);
    for (size_t i = 0; rc == 0 && i < r->texts.n; i++) {
        const char *v = r->texts.items[i].value;
        struct run_text_record t = {r->texts.items[i].key, v, strlen(v), (int64_t)strlen(v)};
        rc = s->ops->run_text_put(s, r->run.id, &t);
    }
    kv_list_release(&r->texts);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0) {
        s->ops->rollback(s);
        log_error("cannot record run in store '%s': %s", r->store_shown.buf, s->err.buf);
    } else if (r->in_job == 0) {
        log_note("node '%s' joined run %s (key %s, from %s); its clock is %+.3f ms from the "
                 "store's (within %.3f ms)",
                 r->job.node, r->run.parent_id, r->job.key, r->job.source,
                 (double)r->run.clock_offset_ns / 1e6, (double)r->run.clock_rtt_ns / 2e6);
    }
    r->inserted = rc == 0;
    return rc;
}

static int setup_signals(struct recorder *r)
{
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaction(SIGPIPE, NULL, &r->old_pipe);
    sigaction(SIGCHLD, NULL, &r->old_chld);
    /* each is forwarded, whatever strobe's starter set: the job gets the
     * dispositions strobe was started with (nohup's ignored SIGHUP), so what
     * it does with one is what it would have done without strobe */
    for (size_t i = 0; i < N_FORWARDED; i++) {
        sigaction(forwarded_signals[i], NULL, &r->old_forwarded[i]);
        sigaddset(&mask, forwarded_signals[i]);
    }
    /* blocked before the writer thread starts, so it inherits the mask and
     * every signal arrives at the signalfd */
    if (pthread_sigmask(SIG_BLOCK, &mask, &r->old_mask) != 0)
        return -EINVAL;
    signal(SIGPIPE, SIG_IGN);
    r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (r->sigfd < 0)
        return -errno;
    /* orphans of the job re-parent to us, so the tree keeps them */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    return 0;
}

/* BPF where the kernel allows it (auto), or as asked. Only a --proc-source
 * bpf that cannot be had stops the run, before the job starts. */
static int choose_proc_source(struct proc_tree *t, int source)
{
    if (source == PROC_SOURCE_PROCFS)
        return 0;
    char why[160];
    if (proc_tree_use_bpf(t, why, sizeof(why)) == 0 || source == PROC_SOURCE_AUTO)
        return 0;
    log_error("--proc-source bpf: %s", why);
    return -1;
}

static int add_drain_timer(struct recorder *r)
{
    r->drainfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (r->drainfd < 0)
        return -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = r->drainfd};
    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->drainfd, &ev);
    return 0;
}

static int setup_timer(struct recorder *r)
{
    r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->timerfd < 0 || r->epfd < 0)
        return -errno;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = r->timerfd};
    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->timerfd, &ev);
    ev.data.fd = r->sigfd;
    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sigfd, &ev);
    /* slow sampling still drains the rings and takes the GPU threads' values
     * often, so that neither the rings nor the GPU queues overflow (8 GPUs
     * at --gpu-interval 10ms fill the NVML queue in 6 s) */
    return r->o->interval_ns > DRAIN_INTERVAL_NS ? add_drain_timer(r) : 0;
}

static void arm_grid(struct recorder *r)
{
    /* absolute and periodic: the kernel keeps the grid, so the period does
     * not drift with the time each sample takes */
    int64_t first = r->start_mono_ns + r->grid_base_ns + r->interval_ns;
    struct itimerspec its = {
        .it_interval = {(time_t)(r->interval_ns / NS_PER_S), r->interval_ns % NS_PER_S},
        .it_value = {(time_t)(first / NS_PER_S), first % NS_PER_S},
    };
    timerfd_settime(r->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void arm_drain(struct recorder *r)
{
    struct itimerspec d = {{0, DRAIN_INTERVAL_NS}, {0, DRAIN_INTERVAL_NS}};
    if (r->drainfd >= 0)
        timerfd_settime(r->drainfd, 0, &d, NULL);
}

static void arm_timer(struct recorder *r)
{
    r->interval_ns = r->o->interval_ns;
    arm_grid(r);
    arm_drain(r);
}

/*
 * strobe ctl interval: the grid starts again at the last frame, so the next
 * frame is one new interval after it; when that time is past already (a
 * long interval shortened), one new interval from now. Either way no burst
 * of missed deadlines. The run's interval_ns stays the one it started with:
 * a rate's first point covers it (strobe show); the change is a line in
 * the run's notes.
 */
static int set_interval(void *arg, int64_t interval_ns, struct strbuf *why)
{
    struct recorder *r = arg;
    if (interval_ns > DRAIN_INTERVAL_NS && r->drainfd < 0) {
        int rc = add_drain_timer(r);
        if (rc < 0) {
            strbuf_addf(why, "cannot make the drain timer: %s", strerror(-rc));
            return rc;
        }
        arm_drain(r);
    }
    int64_t last = r->grid_base_ns + r->deadline_index * r->interval_ns;
    int64_t now = clock_monotonic_ns() - r->start_mono_ns;
    r->grid_base_ns = last + interval_ns > now ? last : now;
    r->deadline_index = 0;
    r->interval_ns = interval_ns;
    arm_grid(r);
    return 0;
}

/* ---- the job's environment ------------------------------------------------ */

static int env_push(char ***env, size_t *n, size_t *cap, char *entry)
{
    if (!entry)
        return -ENOMEM;
    if (*n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        char **p = realloc(*env, c * sizeof(*p));
        if (!p) {
            free(entry);
            return -ENOMEM;
        }
        *env = p;
        *cap = c;
    }
    (*env)[(*n)++] = entry;
    (*env)[*n] = NULL;
    return 0;
}

static char *env_entry(const char *key, const char *value)
{
    struct strbuf b;
    strbuf_init(&b);
    strbuf_addf(&b, "%s=%s", key, value);
    return strbuf_detach(&b);
}

/* The strobe Python package's directory (pydir.h), or NULL. A Python job
 * that would have been captured is told, in one warning, that it will not
 * be: without it a run just lacks its steps and phases, and the user learns
 * it only from an empty sweep or trace. */
static const char *find_python_package(const struct recorder *r, char *buf, size_t cap)
{
    struct strbuf tried;
    strbuf_init(&tried);
    const char *py = pydir_find(buf, cap, &tried);
    if (!py && !r->o->no_framework && runinfo_is_python(r->o->argv[0]))
        log_warn("strobe's Python package was not found (looked in %s): this run records no "
                 "steps or phases; run 'make' in strobe's source tree, or set STROBE_PYTHON_DIR",
                 tried.buf);
    strbuf_release(&tried);
    return py;
}

/* What the job gets on top of ours: the segment's name, and for Python the
 * package on PYTHONPATH (ahead of it the directory whose sitecustomize turns
 * PyTorch capture on; it runs the user's own sitecustomize too). Built before
 * fork, because a child of a threaded process must not allocate. */
static int build_child_env(struct recorder *r)
{
    char **env = NULL;
    size_t n = 0, cap = 0;
    const char *shm = event_sink_shm_name(&r->events);
    char dirbuf[4096];
    const char *py = shm ? find_python_package(r, dirbuf, sizeof(dirbuf)) : NULL;
    int rc = 0;
    extern char **environ;
    for (char **e = environ; rc == 0 && *e; e++) {
        if (strncmp(*e, STROBE_SHM_ENV "=", sizeof(STROBE_SHM_ENV)) == 0 ||
            strncmp(*e, "STROBE_FRAMEWORK=", 17) == 0 ||
            strncmp(*e, TORCH_PROFILE_ENV, sizeof(TORCH_PROFILE_ENV) - 1) == 0 ||
            (py && strncmp(*e, "PYTHONPATH=", 11) == 0))
            continue;
        rc = env_push(&env, &n, &cap, strdup(*e));
    }
    if (rc == 0 && shm)
        rc = env_push(&env, &n, &cap, env_entry(STROBE_SHM_ENV, shm));
    if (rc == 0 && shm && r->o->no_framework)
        rc = env_push(&env, &n, &cap, env_entry("STROBE_FRAMEWORK", "0"));
    if (rc == 0 && shm && r->torch_profile.spec[0])
        rc = env_push(&env, &n, &cap, env_entry(TORCH_PROFILE_ENV, r->torch_profile.spec));
    if (rc == 0 && shm && r->torch_profile.dir[0])
        rc = env_push(&env, &n, &cap, env_entry(TORCH_PROFILE_DIR_ENV, r->torch_profile.dir));
    if (rc == 0 && py) {
        struct strbuf b;
        strbuf_init(&b);
        const char *old = getenv("PYTHONPATH");
        if (!r->o->no_framework)
            strbuf_addf(&b, "%s/strobe/_boot:", py);
        strbuf_adds(&b, py);
        if (old && *old)
            strbuf_addf(&b, ":%s", old);
        rc = env_push(&env, &n, &cap, env_entry("PYTHONPATH", b.buf));
        strbuf_release(&b);
    }
    if (rc < 0 || !env) {
        for (size_t i = 0; i < n; i++)
            free(env[i]);
        free(env);
        return rc < 0 ? rc : 0;
    }
    r->child_env = env;
    return 0;
}

static void free_child_env(struct recorder *r)
{
    for (char **e = r->child_env; e && *e; e++)
        free(*e);
    free(r->child_env);
    r->child_env = NULL;
}

/* ---- the job -------------------------------------------------------------- */

/* In a child just forked, before it execs: what strobe was started with.
 * The signal dispositions (strobe ignores SIGPIPE itself, and an ignored
 * disposition would survive exec), the signal mask, the fd limit. The job
 * and --on-finding's commands; system calls only. */
static void restore_for_child(void *arg)
{
    struct recorder *r = arg;
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &r->old_forwarded[i], NULL);
    sigaction(SIGPIPE, &r->old_pipe, NULL);
    sigaction(SIGCHLD, &r->old_chld, NULL);
    sigprocmask(SIG_SETMASK, &r->old_mask, NULL);
    if (r->nofile_raised)
        setrlimit(RLIMIT_NOFILE, &r->old_nofile);
}

static void exec_child(struct recorder *r, int report_fd)
{
    restore_for_child(r);
    for (size_t i = 0; i < 2; i++)
        log_tee_child_setup(&r->logs[i]);
    if (r->child_env)
        execvpe(r->o->argv[0], r->o->argv, r->child_env);
    else
        execvp(r->o->argv[0], r->o->argv);
    int err = errno;
    ssize_t w = write(report_fd, &err, sizeof(err));
    (void)w;
    _exit(RECORDER_EXIT_NOEXEC);
}

/* How long the end of a run waits for the job's output to drain through
 * its tees: a process the job left behind may keep a stream open. */
#define LOG_WAIT_MS 2000

/* Whether fd is the terminal stderr is. */
static int same_terminal_as_stderr(int fd)
{
    struct stat a, b;
    return isatty(fd) && fstat(fd, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 &&
           a.st_rdev == b.st_rdev;
}

/* strobe's own lines while the live line is on: not into the status line */
static void print_on_line(void *line, const char *text, size_t len)
{
    log_line_print(line, STDERR_FILENO, text, len);
}

/*
 * The tees of stdout and stderr. With the live line on, the streams on
 * stderr's terminal share its line through r->line; the live line needs
 * that (a job writing to the terminal itself would write into the status
 * line), so it is off when stderr has no tee.
 */
static void start_logs(struct recorder *r)
{
    static const int targets[2] = {STDOUT_FILENO, STDERR_FILENO};
    if (r->live && !r->o->no_logs)
        r->line = log_line_open();
    for (size_t i = 0; i < 2; i++) {
        if (r->o->no_logs)
            continue;
        struct log_line *line = same_terminal_as_stderr(targets[i]) ? r->line : NULL;
        int rc = log_tee_start(&r->logs[i], targets[i], line);
        if (rc == 0)
            proc_tree_not_job(&r->tree, r->logs[i].pid);
        else if (rc != -EBADF)
            log_warn("the job's %s is not kept: %s", i ? "stderr" : "stdout", strerror(-rc));
    }
    if (!r->line || !r->logs[1].cap)
        r->live = 0;
    if (r->live) { /* threads that log may run: one atomic pointer */
        r->line_writer = (struct log_writer){print_on_line, r->line};
        log_set_writer(&r->line_writer);
    }
}

static const char *const log_kinds[2] = {"stdout", "stderr"};

/* The job's stdout and stderr into the run's texts: the first and the last
 * of them when they were long (the note in the text says what was cut).
 * With them, the actions --on-finding took. */
static void store_logs(struct recorder *r)
{
    struct store *s = writer_store(&r->writer);
    struct strbuf text;
    strbuf_init(&text);
    int rc = s->ops->begin(s);
    for (size_t i = 0; rc == 0 && i < 2; i++) {
        int64_t bytes;
        strbuf_reset(&text);
        if (log_tee_text(&r->logs[i], &text, &bytes) < 0 || !bytes)
            continue;
        struct run_text_record t = {log_kinds[i], text.buf, text.len, bytes};
        rc = s->ops->run_text_put(s, r->run.id, &t);
    }
    strbuf_reset(&text);
    on_finding_text(&r->actions, &text);
    if (rc == 0 && text.len) {
        struct run_text_record t = {ON_FINDING_TEXT_KIND, text.buf, text.len, (int64_t)text.len};
        rc = s->ops->run_text_put(s, r->run.id, &t);
    }
    const char *notes = r->py ? py_sampler_notes(r->py) : NULL;
    if (rc == 0 && notes) { /* processes whose Python stacks could not be read */
        struct run_text_record t = {PY_NOTES_TEXT, notes, strlen(notes), (int64_t)strlen(notes)};
        rc = s->ops->run_text_put(s, r->run.id, &t);
    }
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0) {
        s->ops->rollback(s);
        log_warn("cannot keep the job's output and actions in the store: %s", s->err.buf);
    }
    strbuf_release(&text);
}

/* Fork and exec the job. Returns 0, or the errno of a failed exec (the
 * child has then been reaped). The job stays in strobe's process group, so
 * that the terminal's signals and job control (Ctrl-C, Ctrl-Z, `fg`, a
 * pipeline into `less`) and a signal to the whole group (a CI's cancel)
 * reach it as they would without strobe. */
static int start_child(struct recorder *r)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        return errno;
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return err;
    }
    if (pid == 0)
        exec_child(r, fds[1]);
    close(fds[1]);
    int err = 0;
    ssize_t n;
    while ((n = read(fds[0], &err, sizeof(err))) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    r->child = pid;
    if (n == (ssize_t)sizeof(err)) {
        waitpid(pid, &r->child_status, 0);
        r->child_done = 1;
        return err ? err : ENOEXEC;
    }
    return 0;
}

static void forward_signal(struct recorder *r, const struct signalfd_siginfo *si)
{
    if (r->child_done)
        return;
    /* A signal from the terminal (SI_KERNEL) went to the whole foreground
     * process group, the job included: sending it again would deliver it
     * twice (a second Ctrl-C would abort a graceful shutdown). One sent to
     * strobe's whole group with kill(2) reaches the job twice too, directly
     * and from here: nothing in its siginfo tells it from one sent to strobe
     * alone (docs/cli.md). */
    if (si->ssi_code == SI_KERNEL)
        return;
    kill(r->child, (int)si->ssi_signo);
}

/* Reap every child that has exited, reading each one last time first. */
static void reap_children(struct recorder *r)
{
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof(info));
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 || info.si_pid == 0)
            return;
        pid_t pid = info.si_pid;
        if (on_finding_reap(&r->actions, pid))
            continue; /* an --on-finding command's, not the job's */
        proc_tree_reap_prepare(&r->tree, pid);
        /* the zombie still has its /proc entry: its last events learn who it was */
        event_sink_drain(&r->events, clock_monotonic_ns());
        int status;
        if (waitpid(pid, &status, 0) < 0)
            return;
        if (pid == r->child) {
            r->child_status = status;
            r->child_done = 1;
            on_finding_job_ended(&r->actions);
        }
        for (size_t i = 0; i < 2; i++)
            log_tee_owns(&r->logs[i], pid);
    }
}

/* The rule engine, before the job starts: a bad --rule-param fails here. */
static int open_rules(struct recorder *r)
{
    struct rules_options ro = {r->o->rule_interval_ns, r->o->rules, r->o->rule_params};
    struct rules_run_info info = {r->run.start_ns, r->run.cpu_count, r->run.mem_total_bytes,
                                  r->run.host, 0};
    struct strbuf err;
    strbuf_init(&err);
    int rc = live_rules_open(&r->rules, &ro, &info, &r->series, &r->events, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    strbuf_release(&err);
    r->rules.announce = !r->o->quiet;
    return rc;
}

/* ---- sampling ------------------------------------------------------------- */

/*
 * Sample one frame stamped offset_ns after the start. Rates are for the same
 * scheduled times as the timestamps: each counter's value at the deadline is
 * interpolated between its reads (sample/collector.h), which come within the
 * wake-up latency after it, so a late wake-up does not skew them and the
 * integral of a stored rate over the stored timestamps telescopes to the
 * counter's change.
 */
static void sample_frame(struct recorder *r, int64_t offset_ns)
{
    struct sample_ctx ctx = {&r->series, &r->env, r->start_mono_ns + offset_ns, 0, 1};
    int64_t ts_ns = r->start_real_ns + offset_ns;
    if (r->frames && ts_ns <= r->run.last_ns)
        ts_ns = r->run.last_ns + 1;
    r->series.now_ns = ts_ns;
    sampler_sample(&r->sampler, &ctx);
    /* the recorder's own CPU, so its cost is on the record of every run */
    int64_t cpu = clock_process_cpu_ns(), now = clock_monotonic_ns();
    /* its own cost over the real time, to 1/1024 % (finer is noise) */
    if (r->frames && now > r->prev_self_mono_ns)
        series_put(&r->series, r->s_self_cpu,
                   nearbyint(102400.0 * (double)(cpu - r->prev_self_cpu_ns) /
                             (double)(now - r->prev_self_mono_ns)) /
                       1024.0);
    r->prev_self_cpu_ns = cpu;
    r->prev_self_mono_ns = now;
    r->frames++;
    r->run.last_ns = ts_ns;
}

/* points the GPU threads dropped to a full queue count as the run's */
static uint64_t gpu_dropped(struct recorder *r)
{
    return gpu_collector_dropped(r->gpu) + dcgm_collector_dropped(r->dcgm);
}

static void fill_counters(struct recorder *r, struct run_record *dst)
{
    if (dst != &r->run) { /* snprintf onto its own source is undefined */
        snprintf(dst->id, sizeof(dst->id), "%s", r->run.id);
        snprintf(dst->status, sizeof(dst->status), "%s", r->run.status);
    }
    dst->samples = r->frames;
    dst->points = (int64_t)r->series.points;
    dst->missed = r->missed;
    dst->dropped = (int64_t)(r->series.dropped + gpu_dropped(r));
    dst->events = (int64_t)r->events.events;
    dst->events_dropped = (int64_t)event_sink_dropped(&r->events);
    /* records that failed their checks, and rings whose indexes made no
     * sense (skipped whole): both mean something wrote over the segment */
    dst->events_invalid = (int64_t)(r->events.st.invalid + r->events.st.corrupt);
    dst->last_ns = r->run.last_ns;
    dst->end_ns = r->run.end_ns;
    dst->exit_code = r->run.exit_code;
    dst->signal = r->run.signal;
    dst->error = r->run.error; /* borrowed: the batch's run record is never released */
    dst->clock_offset_ns = r->run.clock_offset_ns;
    dst->clock_rtt_ns = r->run.clock_rtt_ns;
    if (r->gated) /* the start it was inserted with was its wait's */
        dst->start_ns = r->run.start_ns;
}

static size_t pending_bytes(const struct recorder *r)
{
    size_t open = 0;
    for (uint32_t i = 0; i < r->series.count; i++)
        open += block_enc_size(&r->series.items[i].enc);
    return r->series.pending_bytes + open;
}

/* Take the writer's verdict on the batch in flight. */
static void settle(struct recorder *r)
{
    if (!r->in_flight || writer_busy(&r->writer))
        return;
    batch_settle(&r->batch, &r->series);
    event_batch_settle(&r->batch.events, &r->events, r->batch.result);
    r->in_flight = 0;
    int rc = r->batch.result;
    if (rc < 0 && !r->store_failing) {
        char size[32];
        log_warn("cannot write to store '%s': %s; keeping %s in memory and retrying",
                 r->store_shown.buf, r->store->err.buf,
                 fmt_bytes((double)pending_bytes(r), size, sizeof(size)));
        r->store_failing = 1;
    } else if (rc == 0 && r->store_failing) {
        log_note("store '%s' is writable again", r->store_shown.buf);
        r->store_failing = 0;
    }
    if (rc == 0)
        r->committed_ns = r->batch.run.last_ns;
    if (rc == 0 && r->batch.ctl_gen)
        control_stored(&r->ctl, r->batch.ctl_gen);
    for (int i = 0; rc == 0 && i < 2; i++)
        if (r->batch.texts[i].put)
            r->logs_stored[i] = r->batch.texts[i].bytes;
}

/*
 * Every LOG_CHECKPOINT_NS the output the job wrote since the last one rides
 * with the batch, so that a recorder killed mid-run leaves it in the store
 * (and `strobe logs` and the dashboard show a running job's output). The
 * writer's thread takes the copy (up to 1 MiB); the end of the run stores
 * the streams whole.
 */
#define LOG_CHECKPOINT_NS (5 * NS_PER_S)

static void checkpoint_logs(struct recorder *r, int64_t now)
{
    if (now - r->logs_ckpt_ns < LOG_CHECKPOINT_NS)
        return;
    r->logs_ckpt_ns = now;
    for (int i = 0; i < 2; i++) {
        struct batch_text *t = &r->batch.texts[i];
        if (log_tee_bytes(&r->logs[i]) == r->logs_stored[i])
            continue; /* nothing new, or nothing captured */
        t->kind = log_kinds[i];
        t->from = r->logs[i]; /* the tee's shared memory outlives the writer */
        t->take = 1;
    }
}

/* The Python samples so far, into the batch (its writer stores them with
 * the rest, or keeps them for the next one). */
static void take_py_blocks(struct recorder *r)
{
    struct py_block_out out[2];
    int n = 0;
    if (!r->py || py_sampler_take(r->py, out, &n) < 0 || !n)
        return;
    batch_add_py_blocks(&r->batch, out, n);
}

/* A new snapshot of the live metrics, once a second (force: now), on
 * whichever timer comes: at a long --interval, steps and findings still
 * reach --listen within a second. */
static void refresh_snapshot(struct recorder *r, int64_t mono, int force)
{
    if (!r->metrics_open || (!force && mono - r->snap_taken_ns < SNAP_EVERY_NS))
        return;
    struct run_record counters;
    memset(&counters, 0, sizeof(counters));
    fill_counters(r, &counters);
    r->metrics.interval_ns = r->interval_ns; /* strobe ctl interval may change it */
    int64_t now = r->start_real_ns + (mono - r->start_mono_ns);
    if (live_metrics_snapshot(&r->metrics, &counters, r->run.start_ns, now) != 0)
        return;
    /* on a grid of seconds, not a second after the last: taken at the
     * first tick past each, they were 1.0 to 1.1 s apart, and a scrape a
     * second saw the same one twice now and then */
    int on_grid = r->snap_taken_ns && mono - r->snap_taken_ns < 2 * SNAP_EVERY_NS;
    r->snap_taken_ns = on_grid ? r->snap_taken_ns + SNAP_EVERY_NS : mono;
}

/* The newest snapshot into the batch under way, every snap_store_every_ns
 * and at the end. */
static void take_snapshot(struct recorder *r)
{
    strbuf_reset(&r->batch.live_snap);
    int64_t mono = clock_monotonic_ns();
    int last = r->batch.run.end_ns != 0;
    if (!r->metrics_open || (mono - r->snap_stored_ns < r->snap_store_every_ns && !last))
        return;
    refresh_snapshot(r, mono, last);
    r->snap_stored_ns = mono;
    strbuf_add(&r->batch.live_snap, r->metrics.snap.buf, r->metrics.snap.len);
}

static void flush(struct recorder *r)
{
    settle(r);
    if (r->in_flight)
        return; /* the writer is still on the last batch: this data waits */
    if (batch_collect(&r->batch, &r->series) < 0 ||
        event_batch_collect(&r->batch.events, &r->events) < 0) {
        r->series.frozen = 0;
        return;
    }
    take_py_blocks(r);
    fill_counters(r, &r->batch.run);
    take_snapshot(r);
    r->batch.ctl_gen = control_collect(&r->ctl, &r->batch.ctl_tags, &r->batch.ctl_notes);
    /* the run's last sample is one the store has: between batches of open
     * blocks, that of the last one */
    if (r->batch.has_open)
        r->open_last_ns = r->batch.run.last_ns;
    else
        r->batch.run.last_ns = r->open_last_ns;
    checkpoint_logs(r, clock_monotonic_ns());
    r->in_flight = writer_submit(&r->writer, &r->batch);
    if (!r->in_flight)
        r->series.frozen = 0;
}

static void live_line(struct recorder *r, int64_t now)
{
    char rss[32], el[32], line[160];
    if (!r->tree.series)
        return; /* the proc collector is off: nothing to show */
    const struct series *cpu = &r->series.items[r->tree.s_cpu];
    const struct series *mem = &r->series.items[r->tree.s_rss];
    char steps[32] = "";
    if (r->events.steps)
        snprintf(steps, sizeof(steps), "  %llu steps", (unsigned long long)r->events.steps);
    int n = snprintf(line, sizeof(line), "strobe: %s  cpu %.0f%%  rss %s%s  %lld samples",
                     fmt_duration((double)(now - r->start_mono_ns) / 1e9, el, sizeof(el)),
                     cpu->enc.st.count ? cpu->enc.st.last : 0.0,
                     fmt_bytes(mem->enc.st.count ? mem->enc.st.last : 0.0, rss, sizeof(rss)), steps,
                     (long long)r->frames);
    if (n > 0) /* not over a line the job left open: the next second */
        log_line_status(r->line, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* The Python sampler follows the tree the frame just read. */
static void track_py(struct recorder *r)
{
    if (!r->py)
        return;
    for (uint32_t i = 0; i < r->tree.n; i++) {
        const struct proc_entry *e = &r->tree.e[i];
        py_sampler_track(r->py, e->pid, e->ppid, e->comm);
    }
    py_sampler_prune(r->py);
}

static void on_timer(struct recorder *r)
{
    uint64_t expirations = 0;
    if (read(r->timerfd, &expirations, sizeof(expirations)) != sizeof(expirations) || !expirations)
        return;
    /* a late wake-up covers several deadlines: sample once, count the rest */
    r->missed += (int64_t)expirations - 1;
    r->deadline_index += (int64_t)expirations;
    sample_frame(r, r->grid_base_ns + r->deadline_index * r->interval_ns);
    track_py(r);
    gpu_collector_merge(r->gpu, &r->series, &r->tree);
    dcgm_collector_merge(r->dcgm, &r->series);
    int64_t now = clock_monotonic_ns();
    /* fast sampling drains every 10 ms, not every tick: a drain checks each
     * writing thread is alive (a syscall apiece), and 16 384-record rings
     * only fill that fast above a million events a second per thread */
    if (r->drainfd < 0 && now - r->last_drain_ns >= DRAIN_MIN_NS) {
        event_sink_drain(&r->events, now);
        r->last_drain_ns = now;
    }
    if (r->py) /* windows open and close on the step the events just drained reached */
        py_sampler_step(r->py, r->events.last_step);
    /* windows close on the samples' clock: the run's UTC start plus monotonic time */
    live_rules_tick(&r->rules, r->start_real_ns + (now - r->start_mono_ns));
    on_finding_tick(&r->actions, now);
    control_tick(&r->ctl, now);
    refresh_snapshot(r, now, 0);
    if (now - r->last_flush_ns >= FLUSH_INTERVAL_NS) {
        flush(r);
        r->last_flush_ns = now;
    }
    if (r->live && now - r->last_live_ns >= LIVE_INTERVAL_NS) {
        live_line(r, now);
        r->last_live_ns = now;
    }
}

static void on_drain_timer(struct recorder *r)
{
    uint64_t expirations;
    if (read(r->drainfd, &expirations, sizeof(expirations)) != sizeof(expirations))
        return;
    gpu_collector_merge(r->gpu, &r->series, &r->tree);
    dcgm_collector_merge(r->dcgm, &r->series);
    int64_t now = clock_monotonic_ns();
    event_sink_drain(&r->events, now);
    if (r->py)
        py_sampler_step(r->py, r->events.last_step);
    on_finding_tick(&r->actions, now); /* a stop's SIGKILL within 100 ms of its time */
    control_tick(&r->ctl, now);
    refresh_snapshot(r, now, 0);
}

static void on_signal(struct recorder *r)
{
    struct signalfd_siginfo si;
    while (read(r->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        if (si.ssi_signo == SIGCHLD)
            reap_children(r);
        else
            forward_signal(r, &si);
    }
    reap_children(r); /* SIGCHLDs coalesce: check once more */
}

/* A strobe ctl client: the steps it may ask about are the freshest the
 * rings hold. */
static void on_control(struct recorder *r, int fd)
{
    int64_t now = clock_monotonic_ns();
    event_sink_drain(&r->events, now);
    control_on_fd(&r->ctl, fd, now);
}

static void loop(struct recorder *r)
{
    while (!r->child_done) {
        struct epoll_event ev[16];
        int n = epoll_wait(r->epfd, ev, 16, -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd;
            if (fd == r->timerfd)
                on_timer(r);
            else if (fd == r->drainfd)
                on_drain_timer(r);
            else if (control_owns(&r->ctl, fd))
                on_control(r, fd);
            else if (r->py && fd == py_sampler_fd(r->py))
                py_sampler_tick(r->py);
            else
                on_signal(r);
        }
    }
}

/* The Python sampler: always there for strobe ctl (stacks, a window), and
 * sampling from the start with --py-sample, over steps with --py-profile. */
static int open_py_sampler(struct recorder *r)
{
    struct py_sampler_opts po = {.rate_hz = r->o->py_sample_hz};
    if (r->o->py_profile)
        torch_profile_parse(r->o->py_profile, &po.window_first, &po.window_last);
    int rc = py_sampler_new(&po, &r->py);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) /* no timer: the run goes on without stacks */
        log_warn("Python stacks are off: %s", strerror(-rc));
    else
        epoll_ctl(r->epfd, EPOLL_CTL_ADD, py_sampler_fd(r->py),
                  &(struct epoll_event){.events = EPOLLIN, .data.fd = py_sampler_fd(r->py)});
    return 0;
}

/* ---- the end -------------------------------------------------------------- */

/*
 * One last frame after the job exits, so its final stretch (folded into the
 * reaped totals) is on the record. It is taken at the next deadline when the
 * interval is at most a second, else a second after the last frame or now,
 * whichever is later: a frame a millisecond after the last one would turn a
 * single clock tick of CPU time into a spike of hundreds of percent. A
 * deadline already past (the loop was late) gives the frame the time it is
 * taken at, off the grid: a rate is over the time it covers.
 */
static void final_frame(struct recorder *r)
{
    int64_t interval = r->interval_ns;
    int64_t last = r->grid_base_ns + r->deadline_index * interval;
    int64_t due = interval <= NS_PER_S ? last + interval : last + NS_PER_S;
    int64_t now = clock_monotonic_ns() - r->start_mono_ns;
    if (due < now) {
        sample_frame(r, now);
        return;
    }
    int64_t at = r->start_mono_ns + due;
    struct timespec ts = {(time_t)(at / NS_PER_S), at % NS_PER_S};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
    if (due == last + interval)
        r->deadline_index++;
    sample_frame(r, due);
}

static int is_fault_signal(int sig)
{
    static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};
    for (size_t i = 0; i < ARRAY_SIZE(faults); i++)
        if (faults[i] == sig)
            return 1;
    return 0;
}

/* The run's end, exit code or signal and status; strobe's exit status is
 * the job's, however it ended (a job an action stopped too). */
static int set_outcome(struct recorder *r)
{
    int st = r->child_status, rc;
    const char *status;
    r->run.end_ns = clock_realtime_ns() + r->run.clock_shift_ns;
    if (WIFEXITED(st)) {
        r->run.exit_code = WEXITSTATUS(st);
        status = r->run.exit_code == 0 ? RUN_FINISHED : RUN_FAILED;
        rc = r->run.exit_code;
    } else {
        int sig = WIFSIGNALED(st) ? WTERMSIG(st) : SIGKILL;
        r->run.signal = sig;
        status = is_fault_signal(sig) ? RUN_CRASHED : RUN_KILLED;
        rc = 128 + sig;
    }
    if (on_finding_stopped(&r->actions))
        status = RUN_STOPPED;
    snprintf(r->run.status, sizeof(r->run.status), "%s", status);
    return rc;
}

static void close_gpu(struct recorder *r)
{
    if (r->gpu && gpu_collector_close(r->gpu, &r->series, &r->tree))
        r->gpu_left_running = 1;
    if (r->dcgm && dcgm_collector_close(r->dcgm, &r->series))
        r->dcgm_left_running = 1;
}

/* Commit everything left; retry a while if the store is full or busy. */
static int final_flush(struct recorder *r)
{
    close_gpu(r);
    event_sink_drain(&r->events, clock_monotonic_ns());
    event_sink_seal_all(&r->events);
    series_seal_all(&r->series);
    r->series.snap_wait = 0; /* the last batch carries the run's last sample */
    for (int attempt = 0; attempt < FINAL_RETRIES; attempt++) {
        writer_wait(&r->writer);
        settle(r);
        flush(r);
        writer_wait(&r->writer);
        settle(r);
        if (r->batch.result == 0 && r->series.pending_bytes == 0 && !r->events.sealed_head &&
            !r->batch.npy)
            return 0;
        usleep(FINAL_RETRY_SLEEP_US);
    }
    return r->batch.result < 0 ? r->batch.result : -STROBE_ESTORE;
}

/* The last window and the whole-run verdicts, once every event is in; then
 * stored beside the run (the writer is idle after final_flush). */
static void finish_rules(struct recorder *r)
{
    if (!r->rules.e)
        return;
    live_rules_finish(&r->rules, rules_run_end_ns(&r->run));
    struct store *s = writer_store(&r->writer);
    if (live_rules_save(&r->rules, s, r->run.id) < 0)
        log_warn("cannot store the findings in '%s': %s; 'strobe rules %.8s' recomputes them",
                 s->uri, s->err.buf, r->run.id);
}

/* What was lost and counted: warnings, so they print under --quiet too. */
static void warn_losses(struct recorder *r)
{
    /* a stack torn while read (it changed under the reader) is routine, and
     * worth a word only when it is more than 1 % of them */
    uint64_t py_taken = r->py ? py_sampler_samples(r->py) : 0;
    uint64_t py_torn = r->py ? py_sampler_torn(r->py) : 0;
    uint64_t py_lost = (r->py ? py_sampler_dropped(r->py) : 0) + r->batch.py_dropped_samples +
                       (py_torn * 100 > py_taken ? py_torn : 0);
    if (py_lost)
        log_warn("%llu of %llu Python stack samples were dropped (memory cap, torn stacks, or "
                 "the store behind)",
                 (unsigned long long)py_lost, (unsigned long long)(py_lost + py_taken));
    if (event_sink_dropped(&r->events))
        log_warn("%llu of %llu framework events were dropped (rings full or the store behind)",
                 (unsigned long long)event_sink_dropped(&r->events),
                 (unsigned long long)(event_sink_dropped(&r->events) + r->events.events));
    if (r->series.dropped)
        log_warn("%llu points were dropped: the store could not keep up",
                 (unsigned long long)r->series.dropped);
    if (gpu_dropped(r))
        log_warn("%llu GPU readings were dropped: the GPU queue was full (the host sampler "
                 "fell behind)",
                 (unsigned long long)gpu_dropped(r));
    if (r->tree.uncharted)
        log_warn("%u processes of the job had no series of their own (strobe keeps them for the "
                 "first %d): they count in the tree's totals (proc.cpu, proc.rss_bytes, ...)",
                 r->tree.uncharted, PROC_SERIES_MAX);
    int err;
    uint32_t unfollowed = proc_tree_unfollowed(&r->tree, &err);
    if (unfollowed) {
        struct rlimit rl;
        if (err == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
            log_warn("%u processes of the job could not be followed all along: strobe ran out "
                     "of file descriptors (ulimit -n %llu%s)",
                     unfollowed, (unsigned long long)rl.rlim_cur,
                     rl.rlim_cur == rl.rlim_max ? ", the hard limit" : "");
        else
            log_warn("%u processes of the job could not be followed all along: %s", unfollowed,
                     err == ENFILE ? "the system's file table is full" : strerror(err));
    }
}

/* strobe's own fd limit up to the hard one: the process tree keeps fds per
 * process (proctree.h). The job gets the one strobe was started with. */
static void raise_fd_limit(struct recorder *r)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
        return;
    r->old_nofile = rl;
    rl.rlim_cur = rl.rlim_max;
    r->nofile_raised = setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

static void summary(struct recorder *r, int final_rc)
{
    if (r->live)
        log_line_print(r->line, STDERR_FILENO, "", 0); /* the status line goes */
    if (final_rc < 0) {
        char lost[32];
        int64_t from = r->committed_ns ? r->committed_ns : r->run.start_ns;
        log_error("could not save the last %s of run %s to store '%s': %s",
                  fmt_duration((double)(r->run.last_ns - from) / 1e9, lost, sizeof(lost)),
                  r->run.id, r->store_shown.buf, err_str(final_rc));
        return;
    }
    if (r->o->quiet) {
        warn_losses(r);
        return;
    }
    char dur[32];
    const char *how = r->run.signal ? "signal" : "exit";
    int code = r->run.signal ? r->run.signal : r->run.exit_code;
    log_note("run %s '%s' %s after %s (%s %d), %lld samples in %s; see 'strobe show %.8s'",
             r->run.id, r->run.name, r->run.status,
             fmt_duration((double)(r->run.end_ns - r->run.start_ns) / 1e9, dur, sizeof(dur)), how,
             code, (long long)r->frames, r->store_shown.buf, r->run.id);
    warn_losses(r);
    if (r->py && py_sampler_samples(r->py))
        log_note("%llu Python stack samples (%llu stacks torn while read, skipped); see 'strobe "
                 "flame %.8s'",
                 (unsigned long long)py_sampler_samples(r->py),
                 (unsigned long long)py_sampler_torn(r->py), r->run.id);
    if (r->missed)
        log_note("%lld sampling deadlines were missed (the machine was too busy)",
                 (long long)r->missed);
    if (gpu_collector_missed(r->gpu))
        log_note("%llu GPU sampling deadlines were missed (slow driver calls)",
                 (unsigned long long)gpu_collector_missed(r->gpu));
    char names[512];
    live_rules_names(&r->rules, names, sizeof(names));
    if (*names)
        log_note("findings: %s; see 'strobe show %.8s'", names, r->run.id);
}

static void record_start_failure(struct recorder *r, int err)
{
    struct strbuf msg;
    strbuf_init(&msg);
    strbuf_addf(&msg, "cannot run '%s': %s", r->o->argv[0], strerror(err));
    log_error("%s", msg.buf);
    r->run.error = strbuf_detach(&msg);
    r->run.exit_code = RECORDER_EXIT_NOEXEC;
    r->run.end_ns = clock_realtime_ns() + r->run.clock_shift_ns;
    snprintf(r->run.status, sizeof(r->run.status), "%s", RUN_FAILED);
}

/* fds "R,G" of --start-gate; -1 when the text is not two fds. */
static int parse_gate(const char *text, int *ready_fd, int *go_fd)
{
    char *end;
    long r = strtol(text, &end, 10);
    if (end == text || *end != ',' || r < 0 || r > INT_MAX)
        return -1;
    const char *g_text = end + 1;
    long g = strtol(g_text, &end, 10);
    if (end == g_text || *end || g < 0 || g > INT_MAX || g == r)
        return -1;
    *ready_fd = (int)r;
    *go_fd = (int)g;
    return 0;
}

/*
 * strobe sweep's barrier: say "ready" with the run id, then wait for the
 * byte that starts every run of the workload together. 0 to start; -1
 * when the sweep ended first or a signal asked to stop (the run then fails
 * unstarted, with why in its error).
 */
static int wait_start_gate(struct recorder *r)
{
    int ready_fd = -1, go_fd = -1;
    const char *why = NULL;
    if (parse_gate(r->o->start_gate, &ready_fd, &go_fd) < 0) {
        why = "--start-gate wants two file descriptors R,G";
    } else {
        char line[RUN_ID_LEN + 2];
        int n = snprintf(line, sizeof(line), "%s\n", r->run.id);
        if (write(ready_fd, line, (size_t)n) != n)
            why = "the sweep that started this run is gone";
        r->gate_fd = ready_fd;
        fcntl(ready_fd, F_SETFD, FD_CLOEXEC); /* the job must not hold the sweep's pipe */
    }
    while (!why) {
        struct pollfd pfd[2] = {{.fd = go_fd, .events = POLLIN},
                                {.fd = r->sigfd, .events = POLLIN}};
        if (poll(pfd, 2, -1) < 0 && errno != EINTR) {
            why = "cannot wait for the workload's start";
        } else if (pfd[1].revents & POLLIN) {
            why = "stopped before its start";
        } else if (pfd[0].revents) {
            char go = 0;
            ssize_t got = read(go_fd, &go, 1);
            if (got == 1 && go == 'g')
                break;
            why = "the sweep ended before the workload started";
        }
    }
    if (why) /* the sweep called it off and says so itself: a note (quiet hides it) */
        log_note("%s", why);
    if (go_fd >= 0)
        close(go_fd);
    if (!why) { /* the run starts now, not when it began to wait */
        r->run.start_ns = clock_realtime_ns() + r->run.clock_shift_ns;
        rules_engine_set_start(r->rules.e, r->run.start_ns);
        r->gated = 1;
    }
    return why ? -1 : 0;
}

/* The run could not be stored after its job started at the gate: the job
 * must not run unrecorded under a sweep that thinks it is. */
static void abandon_child(struct recorder *r, int exec_err)
{
    if (exec_err || r->child <= 0)
        return; /* it never ran, and start_child reaped it */
    kill(r->child, SIGKILL);
    while (waitpid(r->child, &r->child_status, 0) < 0 && errno == EINTR)
        ;
    r->child_done = 1;
}

/* One line to strobe sweep on the gate's report fd ("pid N": the job's,
 * for timeouts; "end STATUS" when it has exited, before the last flush, so
 * the next workload may start while this run is saved). A sweep that is
 * gone waits for no news: a failed write is not an error. */
static void gate_say(struct recorder *r, const char *what, int value)
{
    char line[32];
    int n = snprintf(line, sizeof(line), "%s %d\n", what, value);
    if (r->gate_fd >= 0 && write(r->gate_fd, line, (size_t)n) != n) {
        /* nothing to do */
    }
}

/* The rules across the job's nodes, while it runs, where this node leads. */
static void start_judge(struct recorder *r)
{
    r->judge_ro = (struct rules_options){r->o->rule_interval_ns, r->o->rules, r->o->rule_params};
    int64_t period = r->o->rule_interval_ns ? r->o->rule_interval_ns : RULES_DEFAULT_INTERVAL_NS;
    if (cluster_judge_start(&r->judge, r->o->store_uri, r->run.parent_id, &r->judge_ro, period) < 0)
        log_warn("cannot start the thread of the rules across nodes: judged at the job's end only");
}

/* What the judge of the running job did, once it stopped. */
static void stop_judge(struct recorder *r)
{
    cluster_judge_stop(&r->judge);
    if (r->judge.failed)
        log_warn("%u judgments of the rules across nodes failed, the last: %s", r->judge.failed,
                 r->judge.error);
    if (r->judge.judged && !r->o->quiet)
        log_note("this node led the rules across the job's nodes: judged it %u times while it ran",
                 r->judge.judged);
}

/* A node that ends brings the job's status and span up to date: the job
 * ends with its last node, as bad as its worst. */
static void close_job(struct recorder *r)
{
    if (!r->store || !r->run.parent_id)
        return;
    stop_judge(r);
    struct store *s = r->store;
    int rc = s->ops->begin(s);
    if (rc == 0)
        rc = store_job_rollup(s, r->run.parent_id);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0) {
        s->ops->rollback(s);
        log_warn("cannot update job %s's status in store '%s': %s", r->run.parent_id,
                 r->store_shown.buf, s->err.buf);
        return;
    }
    struct rules_options ro = {r->o->rule_interval_ns, r->o->rules, r->o->rule_params};
    struct strbuf err;
    strbuf_init(&err);
    rc = cluster_judge_job(s, r->run.parent_id, &ro, 0, &err);
    if (rc < 0)
        log_warn("the rules across the job's nodes did not run: %s; 'strobe rules %.8s --save' "
                 "runs them",
                 err.buf, r->run.parent_id);
    else if (rc == 1)
        log_note("judged job %s across its nodes: see 'strobe show %.8s'", r->run.parent_id,
                 r->run.parent_id);
    strbuf_release(&err);
}

/* strobe ctl's socket, and what its requests act on. */
static void open_control(struct recorder *r)
{
    struct control *c = &r->ctl;
    if (r->events.on) {
        c->shm = r->events.seg.hdr;
        c->events = &r->events;
        /* --no-framework: no capture in the job to open the window */
        c->torch_dir = r->torch_profile.dir[0] && !r->o->no_framework ? r->torch_profile.dir : NULL;
    }
    c->py = r->py;
    c->set_interval = set_interval;
    c->arg = r;
    c->interval_ns = r->interval_ns;
    control_open(c, r->run.id, r->epfd);
}

static void cleanup(struct recorder *r)
{
    serve_stop(r->http); /* its threads read the metrics' last snapshot */
    live_metrics_close(&r->metrics);
    kv_list_release(&r->texts);
    if (r->gate_fd >= 0)
        close(r->gate_fd);
    close_gpu(r); /* a no-op unless the run never began */
    if (!r->gpu_left_running)
        free(r->gpu);
    if (!r->dcgm_left_running)
        free(r->dcgm);
    writer_stop(&r->writer);
    close_job(r);
    batch_release(&r->batch);
    sampler_release(&r->sampler);
    proc_tree_release(&r->tree);
    series_table_release(&r->series);
    store_close(r->store);
    run_record_release(&r->run);
    if (r->sigfd >= 0)
        close(r->sigfd);
    if (r->timerfd >= 0)
        close(r->timerfd);
    if (r->drainfd >= 0)
        close(r->drainfd);
    event_sink_close(&r->events);
    live_rules_close(&r->rules);
    on_finding_release(&r->actions);
    torch_profile_close(&r->torch_profile);
    control_close(&r->ctl);
    py_sampler_free(r->py);
    for (size_t i = 0; i < 2; i++)
        log_tee_close(&r->logs[i]);
    log_set_writer(NULL);    /* the threads that log have stopped */
    log_line_close(r->line); /* a tee still writing keeps its own mapping */
    free_child_env(r);
    if (r->epfd >= 0)
        close(r->epfd);
    if (r->env.proc_fd >= 0)
        close(r->env.proc_fd);
    if (r->env.sys_fd >= 0)
        close(r->env.sys_fd);
}

int recorder_run(const struct recorder_opts *o)
{
    struct recorder r;
    memset(&r, 0, sizeof(r));
    r.o = o;
    r.sigfd = r.timerfd = r.drainfd = r.epfd = r.env.proc_fd = r.env.sys_fd = r.gate_fd = -1;
    r.ctl.listen_fd = -1;
    strbuf_init(&r.ctl.notes);
    r.logs[0].job_fd = r.logs[1].job_fd = -1;
    batch_init(&r.batch);
    run_record_init(&r.run);
    strbuf_init(&r.store_shown);
    store_uri_redact(o->store_uri, &r.store_shown);
    int exit_status = RECORDER_EXIT_SELF;
    raise_fd_limit(&r); /* before the tree sets its fd budget */
    proc_tree_init(&r.tree, &r.env);
    live_metrics_init(&r.metrics, o->listen != NULL);
    if (start_listening(&r) < 0) /* exit 125, as strobe run's other refusals */
        goto out;
    if (series_table_init(&r.series) < 0 || open_roots(&r) < 0 ||
        choose_proc_source(&r.tree, o->proc_source) < 0 || open_store_and_prepare(&r) < 0 ||
        (!o->start_gate && insert_run(&r) < 0))
        goto out;
    if (o->run_id_out) /* for the report strobe run writes afterwards */
        memcpy(o->run_id_out, r.run.id, sizeof(r.run.id));
    int erc = event_sink_open(&r.events, r.run.id, &r.series, &r.tree);
    if (erc < 0)
        log_warn("framework events are off: cannot create shared memory: %s", err_str(erc));
    if (r.run.parent_id) { /* the nodes' event name ids lie apart */
        r.events.name_base = (uint32_t)r.job_slot * JOB_NAME_IDS;
        r.events.names.max = JOB_NAME_IDS;
    }
    if (open_rules(&r) < 0 ||
        on_finding_init(&r.actions, o->on_finding, o->stop_grace_ns, &r.tree) < 0)
        goto out;
    r.actions.child_setup = restore_for_child;
    r.actions.child_arg = &r;
    r.rules.actions = &r.actions;
    if (erc == 0 && (o->torch_profile || r.run.python_version))
        torch_profile_open(&r.torch_profile, o->torch_profile); /* warns; the run goes on */
    if (build_child_env(&r) < 0) {
        log_error("out of memory");
        goto out;
    }
    if (setup_signals(&r) < 0 || setup_timer(&r) < 0) {
        log_error("cannot set up signals and timers: %s", strerror(errno));
        goto out;
    }
    if (open_py_sampler(&r) < 0) {
        log_error("out of memory");
        goto out;
    }
    r.gpu = calloc(1, sizeof(*r.gpu));
    r.dcgm = calloc(1, sizeof(*r.dcgm));
    if (!r.gpu || !r.dcgm || sampler_init(&r.sampler, &r.env, &r.series, o->collectors) < 0 ||
        series_get_metric(&r.series, METRIC_STROBE_CPU, "", &r.s_self_cpu) < 0 ||
        writer_start(&r.writer, r.store) < 0 ||
        (store_uri_is_postgres(o->store_uri) &&
         spool_attach(&r.writer, o->spool_dir, &r.run) < 0)) {
        log_error("out of memory");
        goto out;
    }
    int64_t open_every = o->open_every_ns > 0                  ? o->open_every_ns
                         : store_uri_is_postgres(o->store_uri) ? OPEN_EVERY_PG_NS
                                                               : FLUSH_INTERVAL_NS;
    r.series.snap_every = (uint32_t)(open_every / FLUSH_INTERVAL_NS);
    if (r.run.parent_id) {
        r.writer.clock_every_ns = CLOCK_EVERY_NS;
        r.writer.clock_due_ns = clock_monotonic_ns() + CLOCK_EVERY_NS;
        r.writer.clock_offset_ns = r.run.clock_offset_ns;
        r.writer.clock_rtt_ns = r.run.clock_rtt_ns;
        start_judge(&r);
    }
    int64_t gpu_interval = o->gpu_interval_ns > 0 ? o->gpu_interval_ns : 100 * NS_PER_MS;
    log_hold_notes(); /* what the run will lack is news only if the job starts */
    if (gpu_collector_open(r.gpu, gpu_interval) == 0)
        dcgm_collector_open(r.dcgm, gpu_interval); /* only worth a note where there are GPUs */
    r.live = !o->quiet && isatty(STDERR_FILENO);
    if (open_metrics(&r) < 0) {
        log_release_notes(0);
        goto out;
    }
    if (o->start_gate && wait_start_gate(&r) < 0) {
        log_release_notes(0); /* never started, never stored */
        if (o->job_started_out)
            *o->job_started_out = 0;
        goto out;
    }
    start_logs(&r);
    int err = start_child(&r);
    /* at a gate, the job starts first and its row follows: the store's
     * round trip is not in the time from the gate to the job's start */
    if (o->start_gate && insert_run(&r) < 0) {
        abandon_child(&r, err);
        if (o->job_started_out)
            *o->job_started_out = 0;
        goto out;
    }
    for (size_t i = 0; i < 2; i++)
        log_tee_job_started(&r.logs[i]);
    log_release_notes(!err);
    if (err) {
        record_start_failure(&r, err);
        flush(&r);
        writer_wait(&r.writer);
        exit_status = RECORDER_EXIT_NOEXEC;
        if (o->job_started_out)
            *o->job_started_out = 0;
        goto out;
    }
    gate_say(&r, "pid", (int)r.child);
    r.start_mono_ns = clock_monotonic_ns();
    r.start_real_ns = clock_realtime_ns() + r.run.clock_shift_ns;
    r.gpu->clock_shift_ns = r.dcgm->clock_shift_ns = r.run.clock_shift_ns;
    r.last_flush_ns = r.last_live_ns = r.start_mono_ns;
    proc_tree_set_root(&r.tree, r.child);
    on_finding_start(&r.actions, r.child, r.run.id, r.run.clock_shift_ns);
    event_sink_start(&r.events, r.start_mono_ns, r.start_real_ns, r.child);
    if (gpu_collector_start(r.gpu, r.start_mono_ns, r.start_real_ns) < 0)
        log_warn("cannot start the GPU sampling thread: no GPU metrics");
    if (dcgm_collector_start(r.dcgm) < 0)
        log_warn("cannot start the DCGM sampling thread: no SM-level GPU metrics");
    sample_frame(&r, 0); /* the baseline every rate starts from */
    track_py(&r);        /* a job asked for its stacks before the first tick has one */
    arm_timer(&r);
    open_control(&r);
    loop(&r);
    control_stop(&r.ctl); /* the run records no more: ctl refuses it */
    gate_say(&r, "end", r.child_status);
    if (r.gate_fd >= 0) { /* the sweep hears no more from this run */
        close(r.gate_fd);
        r.gate_fd = -1;
    }
    /* the last frame and the end time are the job's exit, not the wait for
     * its output (an orphan may hold the stream open) */
    final_frame(&r);
    exit_status = set_outcome(&r);
    on_finding_finish(&r.actions);
    /* the job's last lines reach the terminal before the summary does */
    for (size_t i = 0; i < 2; i++)
        log_tee_wait(&r.logs[i], LOG_WAIT_MS);
    int rc = final_flush(&r);
    spool_finish(&r.writer); /* the rest goes where writer_store says */
    if (rc == 0)
        finish_rules(&r);
    if (rc == 0) { /* the writer is idle: the store is ours */
        /* the import rewrites the catalog row from r.run: the counters the
         * writer's copies carried go in first, or it would zero them */
        fill_counters(&r, &r.run);
        torch_profile_import(&r.torch_profile, writer_store(&r.writer), &r.run, o->quiet);
        store_logs(&r);
    }
    summary(&r, rc);
    spool_report(&r.writer);
    if (r.tree.n)
        log_note("%u processes of the job are still running", r.tree.n);
out:
    cleanup(&r);
    strbuf_release(&r.store_shown);
    return exit_status;
}
