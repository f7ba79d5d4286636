/*
 * Bottleneck rules: SageMaker Debugger's built-in profiler rules (names,
 * parameters and defaults as its SDK sends them) and strobe's own, evaluated
 * by one engine over time-ordered windows of samples and framework events.
 *
 * One code path, two modes. The recorder feeds the engine as data arrives
 * (series points through the series table's tap, spans as the event sink
 * pairs them) and calls rules_tick() every frame; a window [t0, t1) closes
 * once the clock is RULES_GRACE_NS past t1, and is judged on the points with
 * t0 <= ts < t1 and the spans that ended before t1. `strobe rules RUN` feeds
 * the same engine from the store (rules/replay.c) with the same window
 * boundaries (multiples of the interval from the run's start), so the two
 * modes see the same data and give the same findings. What a window sees is
 * decided by timestamps only, never by when something arrived.
 *
 * Rules keep state across windows, as SageMaker's do (patience, rolling
 * windows of datapoints, cumulative counts). A rule that fires in several
 * windows yields one finding per scope (a GPU, a rank, the node) whose time
 * range grows; the recorder prints it once, when it first fires.
 * rules_finish() closes the last, partial window and runs every rule's
 * whole-run judgement (StepOutlier over every step, Dataloader's median,
 * OverallSystemUsage's statistics).
 *
 * Threading: an engine belongs to one thread (the recorder's sampling thread).
 * Memory: points and spans wait only until their window closes; per-series
 * and per-thread buffers are capped (RULES_MAX_PENDING), past which new input
 * is dropped and counted in rules_engine.dropped.
 */
#ifndef STROBE_RULES_RULES_H
#define STROBE_RULES_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/steps.h" /* enum phase */
#include "common/strbuf.h"

#define RULES_DEFAULT_INTERVAL_NS (10LL * 1000000000LL)
#define RULES_GRACE_NS            (2LL * 1000000000LL) /* lateness allowed: GPU buffers, the drain */
#define RULES_SPAN_RETAIN_NS      (120LL * 1000000000LL) /* spans kept for long steps */
#define RULES_MAX_PENDING         (1u << 20)             /* points or spans per buffer */
#define RULES_MAX_PARAMS          8
#define RULES_MAX_GPU_INDEX       63 /* GPUs judged per node: gpu=0 to gpu=63 */

enum severity { SEV_INFO, SEV_LOW, SEV_MEDIUM, SEV_HIGH };
extern const char *const severity_names[4];

/* A rule's verdict on the whole run so far. */
enum rule_status {
    RULE_OK,      /* judged, did not fire */
    RULE_FIRED,   /* fired at least once */
    RULE_WAITING, /* not enough data yet (patience, window not full) */
    RULE_NA,      /* does not apply: no GPU, no steps, no ranks ... (reason says) */
    RULE_REPORT,  /* never fires: a statistics report (Overall*) */
};
extern const char *const rule_status_names[5];

/* The values a parameter accepts, checked when it is set: counts and
 * windows are cast to integers, and a value past what the cast holds would
 * turn a patience of 1e30 into none at all. */
enum rule_param_kind {
    RP_NUMBER,   /* 0 to RULES_MAX_NUMBER (the default) */
    RP_PERCENT,  /* 0 to 100 */
    RP_FRACTION, /* 0 to 1 */
    RP_COUNT,    /* a whole number, 0 to RULES_MAX_COUNT */
    RP_WINDOW,   /* a whole number of values or windows, 1 to RULES_MAX_WINDOW */
};
#define RULES_MAX_NUMBER 1e9
#define RULES_MAX_COUNT  4294967295.0 /* UINT32_MAX */
#define RULES_MAX_WINDOW 1048576.0    /* values a rolling window holds */

struct rule_param {
    const char *name;
    double value;        /* the default */
    const char *doc;     /* one line: what it is, its unit */
    const char *choices; /* a word parameter: its words, "all,train,eval"; value is the index */
    enum rule_param_kind kind;
};

/* The word for value v of a choices parameter. */
const char *rule_param_choice(const struct rule_param *p, double v);

/* ---- what a window holds ---------------------------------------------------- */

/* Metrics the rules read. Series of other names are not kept. */
enum rule_metric {
    RM_CPU_UTIL,      /* cpu.util, whole host */
    RM_CPU_CORE,      /* cpu.util{core=N} */
    RM_CPU_IOWAIT,    /* cpu.iowait */
    RM_MEM_USED,      /* mem.used_bytes */
    RM_MEM_TOTAL,     /* mem.total_bytes */
    RM_MEM_AVAILABLE, /* mem.available_bytes */
    RM_MEM_USED_PCT,  /* mem.used_pct (imported SageMaker data) */
    RM_SWAPIN,        /* mem.swapin_per_s */
    RM_PSI_CPU,       /* psi.cpu_some */
    RM_PSI_MEM,       /* psi.mem_some */
    RM_DISK_READ,     /* disk.read_bytes_per_s{dev} */
    RM_DISK_WRITE,    /* disk.write_bytes_per_s{dev} */
    RM_NET_RX,        /* net.rx_bytes_per_s{iface} */
    RM_NET_TX,        /* net.tx_bytes_per_s{iface} */
    RM_CG_MEM_USED,   /* cgroup.mem_used_bytes */
    RM_CG_MEM_LIMIT,  /* cgroup.mem_limit_bytes */
    RM_CG_THROTTLED,  /* cgroup.throttled_pct */
    RM_PROC_CPU,      /* proc.cpu (tree total) */
    RM_PROC_CPU_PID,  /* proc.cpu{pid} */
    RM_PROC_RSS,      /* proc.rss_bytes (tree total) */
    RM_PROC_THREADS,  /* proc.threads (tree total) */
    RM_GPU_UTIL,      /* gpu.util{gpu} */
    RM_GPU_MEM_UTIL,  /* gpu.mem_util{gpu} */
    RM_GPU_MEM_USED,  /* gpu.mem_used_bytes{gpu} */
    RM_GPU_MEM_TOTAL, /* gpu.mem_total_bytes{gpu} */
    RM_GPU_THROTTLE,  /* gpu.throttle_reasons{gpu} */
    RM_GPU_SM_CLOCK,  /* gpu.sm_clock_mhz{gpu} */
    RM_GPU_MIG_MEM,   /* gpu.mig_mem_used_bytes{gpu,mig}: a GPU in MIG mode */
    RM_CPU_STEAL,     /* cpu.steal */
    RM_PROC_RUNQ_PID, /* proc.runq_delay{pid} (the tree's total is not read) */
    RM_COUNT
};

/* One series' points inside the window, in time order. */
struct rule_series {
    enum rule_metric metric;
    const char *name, *labels;
    const char *node; /* the labels' node=, "" for the recording host */
    uint32_t node_id; /* the node's id in the run (RULES_LOCAL_NODE for "") */
    int64_t index;    /* core, gpu or pid from the labels; -1 none */
    const int64_t *ts;
    const double *v;
    uint32_t n;
};

/* One step (a step span of any mode: "step", "step:eval", ...) that ended
 * inside the window, with its phases (exclusive ns, as analyze/steps.h
 * counts them). */
struct rule_step {
    int64_t pid, tid, rank; /* rank -1 without ranks */
    uint32_t node_id;       /* its process's node (RULES_LOCAL_NODE unless imported) */
    int mode;               /* enum step_mode */
    int64_t start_ns, end_ns;
    double phase_ns[PHASE_COUNT];
    double comm_all_ns; /* comm:* on any thread of the process, inside the step */
};

/* What a window holds. The rules that judge training read steps[], the
 * training steps (step_mode_is_training: TRAIN and GLOBAL), so that an
 * evaluation loop never counts as training; all_steps[] has every mode for
 * the rules that keep modes apart (StepOutlier, OverallFrameworkMetrics). */
struct rule_window {
    int64_t t0, t1; /* UTC ns; the whole run for the final judgement */
    int final;      /* 1 in rules_finish()'s whole-run call */
    const struct rule_series *series;
    uint32_t nseries;
    const struct rule_step *steps; /* training steps, by end time */
    uint32_t nsteps;
    const struct rule_step *all_steps; /* steps of every mode, by end time */
    uint32_t nall_steps;
    const uint32_t *nodes; /* ids of the nodes with a cpu.util series in the window */
    uint32_t nnodes;
    uint32_t node_count; /* node ids known so far: every node_id is below it */
    uint32_t workers;    /* data-loader worker processes active in the window */
    uint32_t data_spans;
    /* forward and backward spans that ended in the window, steps or not: a
     * loop that trains without step spans (no optimizer, no strobe.step())
     * still shows them; the earliest start of either (INT64_MAX: none) */
    uint32_t forward_spans, backward_spans;
    int64_t first_fwd_bwd_ns;
};

/* ---- findings ------------------------------------------------------------- */

struct finding {
    char rule[32];
    enum severity severity;
    int64_t start_ns, end_ns; /* the windows it fired in */
    char scope[192]; /* "node", "gpu=0", "rank=1", "mode=eval" (node=NAME, first if imported) */
    char *evidence;  /* the numbers that made it fire */
    char *events;    /* what the framework events show over its range, or NULL */
    const char *recommendation;
    uint32_t windows; /* windows it fired in */
    int printed;      /* the recorder's: already announced */
};

struct rule_result {
    const char *rule;
    enum rule_status status;
    uint64_t datapoints, violations;
    char detail[256]; /* why waiting or n/a; a report's one-line summary */
    char *report;     /* a JSON object (Overall* statistics), or NULL */
};

struct rules_engine;

/* The context a rule's functions get: its parameters, and where to report. */
struct rule_ctx {
    struct rules_engine *eng;
    const struct rule_def *def;
    const double *param; /* values in the order of def->params */
    struct rule_result *result;
};

struct rule_def {
    const char *name;
    const char *origin; /* "sagemaker" or "strobe" */
    enum severity severity;
    const struct rule_param *params;
    uint32_t nparams;
    size_t state_size;            /* zeroed at start */
    void (*release)(void *state); /* may be NULL */
    void (*window)(struct rule_ctx *c, const struct rule_window *w, void *state);
    void (*finish)(struct rule_ctx *c, const struct rule_window *w, void *state); /* may be NULL */
    const char *recommendation;
};

/* Every rule, SageMaker's first. */
extern const struct rule_def *const rule_defs[];
extern const uint32_t rule_def_count;
const struct rule_def *rule_def_find(const char *name);

/* Facts about the run the rules need. */
struct rules_run_info {
    int64_t start_ns; /* window origin */
    int cpu_count;
    int64_t mem_total_bytes;
    const char *host;
    int running; /* offline over a run still recording: its end is not yet the end */
};

struct rules_options {
    int64_t interval_ns;       /* window length; 0: the default */
    const char *rules;         /* comma list, "all" (NULL), or "none" */
    const char *const *params; /* "Rule.param=value", NULL-terminated; may be NULL */
};

/* Called when a finding first fires (live announcement). */
typedef void finding_fn(const struct finding *f, void *arg);

/*
 * New engine. Fails (negative, one-line reason in err) on an unknown rule or
 * parameter or a bad value. *out is NULL when opts->rules is "none".
 */
int rules_engine_new(const struct rules_options *opts, const struct rules_run_info *run,
                     struct rules_engine **out, struct strbuf *err);
void rules_engine_free(struct rules_engine *e);
/* Move the run's start (the first window's) to start_ns, before any data:
 * a run that waited to start with others (strobe sweep). NULL-safe. */
void rules_engine_set_start(struct rules_engine *e, int64_t start_ns);
void rules_engine_on_finding(struct rules_engine *e, finding_fn *fn, void *arg);

/* Input. A series is named once; points of one series come in time order. */
int rules_series(struct rules_engine *e, const char *name, const char *labels); /* slot or -1 */
void rules_put(struct rules_engine *e, int slot, int64_t ts_ns, double v);
/* n points of one series in time order: what rules_put does to each, with
 * the checks and the growth done once for the run of them (the replay). */
void rules_put_many(struct rules_engine *e, int slot, const int64_t *ts_ns, const double *v,
                    uint32_t n);
/* A finished span of thread (pid, tid); name is looked up once per name_id
 * (a run-wide id; 0 when the caller has none: then the name is read). */
void rules_put_span(struct rules_engine *e, int64_t pid, int64_t tid, int64_t start_ns,
                    int64_t end_ns, uint32_t name_id, const char *name);
/* What is known of a process (its rank; -1 unknown). */
void rules_put_process(struct rules_engine *e, int64_t pid, int64_t rank, int64_t worker_id);
/* The node a process ran on, for runs of several nodes (imported): its
 * steps are judged with that node's. Without it a process is the local
 * node's. */
void rules_put_process_node(struct rules_engine *e, int64_t pid, const char *node);

/* Nodes: every name a series' node= label or rules_put_process_node() gave,
 * with an id in order of first sight; RULES_LOCAL_NODE is "" (the recording
 * host, or a one-node import). There is no limit on their number. */
#define RULES_LOCAL_NODE 0u
uint32_t rules_node_count(const struct rules_engine *e);
const char *rules_node_name(const struct rules_engine *e, uint32_t id); /* "" past the end */

/* What the engine could not judge and says so rather than drop in silence
 * (a GPU index past RULES_MAX_GPU_INDEX, ...): one line each, without
 * duplicates, valid until the engine is freed. */
uint32_t rules_warning_count(const struct rules_engine *e);
const char *rules_warning_at(const struct rules_engine *e, uint32_t i);

/* Close every window that ended RULES_GRACE_NS or more before now_ns (UTC).
 * Returns the windows closed. */
int rules_tick(struct rules_engine *e, int64_t now_ns);
/* Close windows up to end_ns, whatever the grace (offline replay). */
int rules_close_until(struct rules_engine *e, int64_t end_ns);
/* The end of the run at end_ns: the last window and the whole-run verdicts. */
void rules_finish(struct rules_engine *e, int64_t end_ns);

/* Results, valid until the engine is freed. */
const struct finding *rules_findings(const struct rules_engine *e, uint32_t *n);
/* The rules in use, in table order: their definitions, parameter values
 * (in the order of def->params) and verdicts. */
uint32_t rules_count(const struct rules_engine *e);
const struct rule_def *rules_def_at(const struct rules_engine *e, uint32_t i);
const double *rules_param_values(const struct rules_engine *e, uint32_t i);
const struct rule_result *rules_result_at(const struct rules_engine *e, uint32_t i);
int64_t rules_interval_ns(const struct rules_engine *e);
uint64_t rules_dropped(const struct rules_engine *e);
/* The parameters in force, as "Rule.param=value" lines (stored with the run). */
void rules_params_text(const struct rules_engine *e, struct strbuf *out, int only_changed);

/* ---- for rule implementations (rules/engine.c) ------------------------------ */

/* Report that the rule fired over [t0, t1) for scope ("node", "gpu=0",
 * "rank=1"), with the numbers that made it fire and, when the rule has them,
 * what the framework events show over that range (events may be NULL). A
 * second firing for the same scope widens the range and replaces the texts. */
void rule_fire_range(struct rule_ctx *c, int64_t t0, int64_t t1, const char *scope,
                     const char *events, const char *evidence_fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* A report rule's statistics: a JSON object the result takes (freed with it). */
void rule_set_report(struct rule_ctx *c, char *json);
/* Set the rule's status and detail (status only rises: OK < WAITING < NA is
 * not an order; the last call wins, except that FIRED is kept). */
void rule_status(struct rule_ctx *c, enum rule_status st, const char *detail_fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rules_have_gpu(const struct rules_engine *e);
/* Why the rules that read GPU utilization cannot judge the window: NULL when
 * they can, "no GPU", or why a GPU that is there has none (NVML reports no
 * utilization for a GPU in MIG mode): a reason for their n/a status. */
const char *rules_gpu_util_missing(const struct rules_engine *e);
/* For a rule that reads GPU utilization: 1, with the rule set n/a for that
 * reason, when the window has none to judge. */
int rule_na_without_gpu_util(struct rule_ctx *c);
const struct rules_run_info *rules_run(const struct rules_engine *e);
/* Add a warning (rules_warning_at) unless the same text is there already. */
void rules_warn(struct rules_engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
