/*
 * strobe import sagemaker: SageMaker Debugger profiler output into a run.
 * The layout and the mapping are in docs/import.md, which also says how
 * smdebug's writer files its events (a trace pid is a training phase of one
 * writer, not a process) and how strobe turns that back into processes,
 * ranks and threads.
 */
#include "import/sagemaker.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/steps.h"
#include "common/array.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/label.h"
#include "common/strlist.h"
#include "common/strtab.h"
#include "common/version.h"
#include "import/input.h"
#include "import/json.h"
#include "import/sagemaker_format.h"
#include "record/event_block.h"
#include "record/events.h" /* EVENT_BLOCK_EVENTS, EVENT_NAMES_MAX */
#include "record/runinfo.h"
#include "sample/series.h" /* SERIES_BLOCK_BYTES, SERIES_BLOCK_POINTS */

#define OPEN_MAX 256 /* B events open on one thread at once */
/* The tid of a training phase kept on a thread of its own (a GPU's kernels,
 * a Horovod tensor's row): this plus the phase's index. */
#define SM_LANE_TID (1LL << 32)

struct sm_point {
    int64_t ts_ns;
    double value;
    uint32_t seq; /* order of reading: the first of equal times is kept */
};

struct sm_node_info {
    uint64_t snapshots;  /* CPU snapshots */
    int64_t interval_ns; /* median time between them */
    int has_trace_start;
    int64_t trace_start_ns; /* the earliest start_time_since_epoch_in_micros */
};

struct sm_series {
    uint32_t node;
    char *name;       /* strobe metric name */
    char *labels;     /* canonical labels, without node= */
    const char *unit; /* static */
    char *meta;       /* JSON, or NULL */
    struct sm_point *p;
    uint32_t n, cap;
};

/* flags of an event */
#define EVF_STEP_NUM   0x01 /* a step span whose step number is known */
#define EVF_MODE_SHIFT 1    /* 2 bits: its enum step_mode (analyze/steps.h) */

struct sm_event {
    int64_t ts_ns;
    int64_t value; /* COMPLETE: length ns; COUNTER: the double's bits */
    uint32_t name;
    uint32_t step;
    uint32_t seq;
    uint8_t kind;
    uint8_t flags;
};

struct sm_open {
    int64_t ts_ns;
    uint32_t name;
    uint32_t step;
    uint8_t flags;
};

/*
 * A thread's events. While the files are read a thread is keyed by (stream,
 * OS pid or -1, tid): which process an event without args.pid belongs to is
 * known only once every file was read (resolve_processes). Then threads of
 * one (node, pid, tid) are merged.
 */
struct sm_thread {
    uint32_t node;
    uint32_t stream; /* index in streams */
    int64_t os_pid;  /* args.pid; -1: the stream's own process */
    uint32_t proc;   /* index in procs, once resolved */
    int64_t pid;     /* the OS pid, once resolved */
    int64_t tid;
    struct sm_event *ev;
    uint32_t n, cap;
    struct sm_open *open;
    uint32_t depth, open_cap;
};

struct sm_proc {
    uint32_t node;
    int64_t pid;       /* the OS pid (or the stand-in of a stream without one) */
    int64_t store_pid; /* unique over the run */
    char *name;        /* strobe.process metadata (strobe's export), or NULL */
    int64_t ppid, rank, local_rank, world_size, worker_id;
    int has_events;
};

/*
 * One writer's files: smdebug names a trace file <end-us>_<N>-<host>_<kind>
 * (N the rank in a distributed job, else the OS pid) and keeps one writer
 * per N, so the files of one (node, N) are one process's events.
 */
struct sm_stream {
    uint32_t node;
    int64_t prefix;     /* N, or -1 when the name has none */
    int prefix_is_pid;  /* an event's args.pid repeats N */
    int64_t step_pid;   /* args.pid of its first step, -1 */
    int64_t first_pid;  /* args.pid of its first event not a worker's, -1 */
    int64_t rank;       /* decided after reading: N when N is a rank, else -1 */
    int64_t world_size; /* the ranks found, with rank */
    int64_t pid;        /* decided after reading: the pid of events without args.pid */
};

/* A training phase (a trace pid's process_name), for the thread it goes to:
 * one of its own (GPU kernels, Horovod's per-tensor rows) or the event's. */
struct sm_lane {
    char *name;
};

/* One trace element, held until the file's start time is known. */
struct sm_raw {
    int64_t ts_ns;  /* relative to the file's start time */
    int64_t value;  /* X: duration ns; C: the double's bits */
    int64_t os_pid; /* args.pid, -1 */
    int64_t tid;    /* the thread it goes to */
    uint32_t name;
    uint32_t step;
    char ph;
    uint8_t flags;
};

/* The training phases of the trace file being read: its pids' names. */
struct sm_phase {
    int64_t pid;
    uint32_t lane;   /* index in lanes */
    uint8_t role;    /* enum phase_role */
    uint8_t own_tid; /* its events go to a thread of their own */
};

struct sagemaker_import {
    struct sagemaker_node *nodes; /* in order of first sight */
    uint32_t nnodes, nodes_cap;
    struct sm_node_info *info; /* beside nodes[] */
    uint32_t info_cap;
    uint32_t *order; /* node indexes in natural order of their ids */

    struct sm_series *series;
    uint32_t nseries, series_cap;
    uint32_t *series_slots; /* open addressing: index+1, 0 empty */
    uint32_t series_nslots;

    struct sm_thread *threads;
    uint32_t nthreads, threads_cap;
    uint32_t *thread_slots;
    uint32_t thread_nslots;
    struct sm_proc *procs;
    uint32_t nprocs, procs_cap;
    struct sm_stream *streams;
    uint32_t nstreams, streams_cap;
    struct sm_lane *lanes;
    uint32_t nlanes, lanes_cap;

    struct strtab names;                /* names.s[id - 1]; at most EVENT_NAMES_MAX */
    uint32_t step_ids[STEP_MODE_COUNT]; /* ids of "step", "step:eval", ...; 0 until seen */

    struct sm_raw *raw; /* one trace file's elements */
    uint32_t nraw, raw_cap;
    struct sm_phase *phases; /* one trace file's training phases */
    uint32_t nphases, phases_cap;

    struct json_doc doc;
    struct sagemaker_counts counts;
    uint32_t seq;
    uint32_t last_node; /* node_index's guess */
    int64_t start_ns, end_ns;
};

/* ---- small helpers ---------------------------------------------------------- */

/* a - b, saturating at the ends of int64 (hostile times must not overflow) */
static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r))
        return r;
    return b < 0 ? INT64_MAX : INT64_MIN;
}

/* Natural order: runs of digits compare as numbers ("algo-2" < "algo-10"). */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t na = 0, nb = 0;
            while (isdigit((unsigned char)a[na]))
                na++;
            while (isdigit((unsigned char)b[nb]))
                nb++;
            if (na != nb)
                return na < nb ? -1 : 1;
            int c = strncmp(a, b, na);
            if (c)
                return c;
            a += na;
            b += nb;
        } else {
            if (*a != *b)
                return (unsigned char)*a - (unsigned char)*b;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A name or label value as strobe can store it: the characters that delimit
 * labels ("," "=" "{" "}") and control characters become '_'. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (*s == ',' || *s == '=' || *s == '{' || *s == '}' || (unsigned char)*s < 0x20 ||
            *s == 0x7f)
            *s = '_';
}

/* The bytes of a UTF-8 byte order mark at the start of a file (Windows
 * editors and PowerShell write one): skipped. */
static size_t bom_len(const char *buf, size_t len)
{
    return len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

static int only_space(const char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!isspace((unsigned char)buf[i]))
            return 0;
    return 1;
}

/* ---- nodes ------------------------------------------------------------------ */

/* The node named id (as sanitize() leaves it: the same name is always the
 * same node, the first line's or the hundredth's), added when new. */
static int node_index(struct sagemaker_import *im, const char *id, uint32_t *out)
{
    if (*out < im->nnodes && strcmp(im->nodes[*out].id, id) == 0)
        return 0; /* the node of the previous line, usually */
    char *clean = strdup(id);
    if (!clean)
        return -ENOMEM;
    sanitize(clean);
    for (uint32_t i = 0; i < im->nnodes; i++)
        if (strcmp(im->nodes[i].id, clean) == 0) {
            free(clean);
            *out = i;
            return 0;
        }
    int rc = 0;
    if (im->nnodes >= SM_NODES_MAX)
        rc = -E2BIG;
    else if (array_grow((void **)&im->nodes, &im->nodes_cap, im->nnodes + 1, sizeof(*im->nodes),
                        8) < 0 ||
             array_grow((void **)&im->info, &im->info_cap, im->nnodes + 1, sizeof(*im->info), 8) <
                 0)
        rc = -ENOMEM;
    if (rc < 0) {
        free(clean);
        return rc;
    }
    struct sagemaker_node *n = &im->nodes[im->nnodes];
    memset(n, 0, sizeof(*n));
    memset(&im->info[im->nnodes], 0, sizeof(im->info[0]));
    n->id = clean;
    *out = im->nnodes++;
    return 0;
}

/* ---- names ------------------------------------------------------------------ */

/* The run-wide id of name (1-based), defining it on first sight; 0 when
 * the table is full or memory ran out. */
static uint32_t intern(struct sagemaker_import *im, const char *name)
{
    uint32_t i;
    int rc = strtab_intern(&im->names, name, strlen(name), &i);
    if (rc < 0)
        return 0;
    int mode = rc == 1 ? steps_mode_of(name) : -1;
    if (mode >= 0)
        im->step_ids[mode] = i + 1;
    return i + 1;
}

/* Whether name id is a step span's ("step", "step:eval", ...). */
static int is_step_name(const struct sagemaker_import *im, uint32_t id)
{
    for (int m = 0; m < STEP_MODE_COUNT; m++)
        if (id && im->step_ids[m] == id)
            return 1;
    return 0;
}

static int is_step_event(const struct sagemaker_import *im, const struct sm_event *e)
{
    return e->kind == STROBE_EV_COMPLETE && is_step_name(im, e->name);
}

/* ---- series ----------------------------------------------------------------- */

static uint32_t series_key_hash(uint32_t node, const char *name, const char *labels)
{
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, &node, sizeof(node));
    return hash_fnv1a_str(hash_fnv1a_str(h, name), labels);
}

static uint32_t series_hash(const void *ctx, uint32_t i)
{
    const struct sm_series *s = &((const struct sagemaker_import *)ctx)->series[i];
    return series_key_hash(s->node, s->name, s->labels);
}

static int series_find(struct sagemaker_import *im, uint32_t node, const char *name,
                       const char *labels, const char *unit, const char *meta, uint32_t *out)
{
    if (hash_slots_reserve(&im->series_slots, &im->series_nslots, im->nseries, series_hash, im) < 0)
        return -ENOMEM;
    uint32_t mask = im->series_nslots - 1;
    uint32_t h = series_key_hash(node, name, labels) & mask;
    for (; im->series_slots[h]; h = (h + 1) & mask) {
        struct sm_series *s = &im->series[im->series_slots[h] - 1];
        if (s->node == node && strcmp(s->name, name) == 0 && strcmp(s->labels, labels) == 0) {
            *out = im->series_slots[h] - 1;
            return 0;
        }
    }
    if (im->nseries >= SM_SERIES_MAX)
        return -E2BIG;
    if (array_grow((void **)&im->series, &im->series_cap, im->nseries + 1, sizeof(*im->series),
                   64) < 0)
        return -ENOMEM;
    struct sm_series *s = &im->series[im->nseries];
    memset(s, 0, sizeof(*s));
    s->node = node;
    s->unit = unit;
    s->name = strdup(name);
    s->labels = strdup(labels);
    s->meta = meta ? strdup(meta) : NULL;
    if (!s->name || !s->labels || (meta && !s->meta)) {
        free(s->name);
        free(s->labels);
        free(s->meta);
        return -ENOMEM;
    }
    im->series_slots[h] = im->nseries + 1;
    *out = im->nseries++;
    return 0;
}

static int series_add(struct sagemaker_import *im, uint32_t index, int64_t ts_ns, double value)
{
    struct sm_series *s = &im->series[index];
    if (array_grow((void **)&s->p, &s->cap, s->n + 1, sizeof(*s->p), 256) < 0)
        return -ENOMEM;
    s->p[s->n++] = (struct sm_point){ts_ns, value, im->seq++};
    return 0;
}

/* ---- system metrics ---------------------------------------------------------- */

/* "cpu12" with prefix "cpu": 12. -1 when name is not prefix + digits. */
static long indexed(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || !name[n])
        return -1;
    long v = 0;
    for (const char *p = name + n; *p; p++) {
        if (!isdigit((unsigned char)*p) || v > 999999)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* A unit for a SageMaker metric strobe has no name for. */
static const char *guess_unit(const char *name, const char *dim)
{
    const char *what = dim && *dim ? dim : name;
    if (strstr(what, "BytesPerSecond") || (name && strstr(name, "BytesPerSecond")))
        return "bytes/s";
    if (strstr(what, "Percent") || strstr(what, "Utilization"))
        return "pct";
    return "";
}

/* The net metric of the direction a network metric's Name says
 * ("ReceiveBytesPerSecond"), or -1. */
static int net_metric(const char *name)
{
    static const char *const rx[] = {"receive", "recv", "rx"}, *const tx[] = {"transmit", "send",
                                                                              "sent", "tx"};
    for (size_t i = 0; i < ARRAY_SIZE(rx); i++)
        if (strcasestr(name, rx[i]))
            return METRIC_NET_RX_BYTES_PER_S;
    for (size_t i = 0; i < ARRAY_SIZE(tx); i++)
        if (strcasestr(name, tx[i]))
            return METRIC_NET_TX_BYTES_PER_S;
    return -1;
}

/* A series' meta: the names SageMaker gave it, which export writes back. */
static void sm_meta(struct strbuf *meta, const char *type, const char *name, const char *dim)
{
    struct json_writer jw;
    jw_init(&jw, meta);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "Type", type);
    jw_kv_str(&jw, "Name", name);
    jw_kv_str(&jw, "Dimension", dim);
    jw_end(&jw);
}

static int system_record(struct sagemaker_import *im, uint32_t node, const char *type,
                         const char *name, const char *dim, int64_t ts_ns, double value)
{
    char mname[256], labels[256];
    int metric = -1; /* of the catalog; -1: kept under SageMaker's names */
    const char *unit;
    struct strbuf meta;
    strbuf_init(&meta);
    long i;
    labels[0] = '\0';
    if (strcmp(dim, "CPUUtilization") == 0 && (i = indexed(name, "cpu")) >= 0) {
        metric = METRIC_CPU_UTIL;
        snprintf(labels, sizeof(labels), "core=%ld", i);
    } else if (strcmp(dim, "I/OWaitPercentage") == 0) {
        metric = METRIC_CPU_IOWAIT;
        if ((i = indexed(name, "cpu")) >= 0)
            snprintf(labels, sizeof(labels), "core=%ld", i);
    } else if (strcmp(dim, "GPUUtilization") == 0 && (i = indexed(name, "gpu")) >= 0) {
        metric = METRIC_GPU_UTIL;
        snprintf(labels, sizeof(labels), "gpu=%ld", i);
    } else if (strcmp(dim, "GPUMemoryUtilization") == 0 && (i = indexed(name, "gpu")) >= 0) {
        metric = METRIC_GPU_MEM_UTIL;
        snprintf(labels, sizeof(labels), "gpu=%ld", i);
    } else if (strcmp(dim, "MemoryUsedPercent") == 0 || strcmp(name, "MemoryUsedPercent") == 0) {
        metric = METRIC_MEM_USED_PCT;
    } else if (strcmp(dim, "Algorithm") == 0 && net_metric(name) >= 0) {
        /* the training job's own traffic, what SageMaker's OverallSystemUsage
         * sums as network; its Platform traffic stays apart */
        metric = net_metric(name);
        snprintf(labels, sizeof(labels), "iface=algorithm");
        sm_meta(&meta, type, name, dim);
    }
    if (metric >= 0) {
        snprintf(mname, sizeof(mname), "%s", metric_name((enum metric_id)metric));
        unit = metric_unit((enum metric_id)metric);
    } else {
        /* kept under its own names rather than dropped */
        const char *family = metric_name(METRIC_SAGEMAKER);
        int family_len = (int)metric_family_prefix_len(METRIC_SAGEMAKER);
        if (*dim)
            snprintf(mname, sizeof(mname), "%.*s%s.%s", family_len, family, *type ? type : "other",
                     dim);
        else
            snprintf(mname, sizeof(mname), "%.*s%s", family_len, family, *type ? type : "other");
        if (*name)
            snprintf(labels, sizeof(labels), "name=%s", name);
        sanitize(mname);
        sanitize(labels + (*name ? 5 : 0));
        unit = guess_unit(name, dim);
        sm_meta(&meta, type, name, dim);
    }
    uint32_t index;
    int rc = strbuf_failed(&meta);
    if (rc == 0)
        rc = series_find(im, node, mname, labels, unit, meta.len ? meta.buf : NULL, &index);
    strbuf_release(&meta);
    if (rc == 0)
        rc = series_add(im, index, ts_ns, value);
    return rc;
}

/* SageMaker writes epoch seconds of the day: a Timestamp before 2001 or
 * after 2100 (-5, 7, 9.2e9) is garbage, and one such line next to real ones
 * made a run that began in 1969 and lasted 55 years. */
#define SM_TIME_MIN_NS (INT64_C(1000000000) * NS_PER_S) /* 2001-09-09 */
#define SM_TIME_MAX_NS (INT64_C(4102444800) * NS_PER_S) /* 2100-01-01 */

static int plausible_time(int64_t ts_ns)
{
    return ts_ns >= SM_TIME_MIN_NS && ts_ns < SM_TIME_MAX_NS;
}

/* A step number as an event's args give it, a number or a string (smdebug
 * writes both): a whole number of 0 to 2^32-1 (json_scaled_i64 alone would
 * round 2.5 to 3). */
static int step_num_of(const struct json *v, int64_t *out)
{
    int64_t n, n_e9;
    if (json_scaled_i64(v, 0, &n) < 0 || n < 0 || n > UINT32_MAX ||
        json_scaled_i64(v, 9, &n_e9) < 0 || n_e9 != n * NS_PER_S)
        return -EINVAL;
    *out = n;
    return 0;
}

/* One line of a system metrics file. last: it has no newline after it (the
 * file ends there). */
static int system_line(struct sagemaker_import *im, const char *line, size_t len, int last,
                       const char *file_node)
{
    im->counts.lines++;
    json_doc_reset(&im->doc);
    struct json *v;
    int rc = json_parse(&im->doc, line, len, &v);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        if (last && rc == -ENODATA)
            im->counts.lines_cut++;
        else
            im->counts.lines_garbled++;
        return 0;
    }
    const char *type = json_str(json_get(v, "Type"));
    const char *name = json_str(json_get(v, "Name"));
    const char *dim = json_str(json_get(v, "Dimension"));
    const char *node = json_str(json_get(v, "NodeId"));
    double value;
    int64_t ts_ns;
    const struct json *jv = json_get(v, "Value");
    if (jv && jv->type == JSON_NUMBER && !isfinite(jv->num)) {
        im->counts.values_nonfinite++; /* NaN, Infinity: Python's json writes them */
        return 0;
    }
    if (json_num(jv, &value) < 0 || json_scaled_i64(json_get(v, "Timestamp"), 9, &ts_ns) < 0 ||
        !plausible_time(ts_ns) || (!(name && *name) && !(dim && *dim))) {
        im->counts.lines_garbled++;
        return 0;
    }
    if (!node || !*node)
        node = *file_node ? file_node : SM_DEFAULT_NODE;
    if ((rc = node_index(im, node, &im->last_node)) == 0)
        rc = system_record(im, im->last_node, type ? type : "", name ? name : "", dim ? dim : "",
                           ts_ns, value);
    if (rc == -E2BIG) { /* past the limits on nodes or series: garbage, surely */
        im->counts.lines_garbled++;
        rc = 0;
    }
    return rc;
}

/* Read path whole: 1 with *buf (the caller frees it) holding len bytes and
 * its content from *start (past a UTF-8 BOM), *files counting it; 0 when it
 * is skipped, unreadable or empty (one warning, counted); -ENOMEM. */
static int read_input(struct sagemaker_import *im, const char *path, uint64_t *files, char **buf,
                      size_t *len, size_t *start)
{
    int rc = input_read_file(path, (size_t)SM_FILE_MAX, INPUT_REGULAR_ONLY, buf, len);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        log_warn("cannot read '%s': %s; skipped", path, strerror(-rc));
        im->counts.files_unreadable++;
        return 0;
    }
    (*files)++;
    *start = bom_len(*buf, *len);
    if (only_space(*buf + *start, *len - *start)) {
        log_warn("'%s' is empty; skipped", path);
        im->counts.files_unreadable++;
        free(*buf);
        return 0;
    }
    return 1;
}

static int system_file(struct sagemaker_import *im, const char *path, const char *base)
{
    char *buf;
    size_t len, start;
    int rc = read_input(im, path, &im->counts.system_files, &buf, &len, &start);
    if (rc <= 0)
        return rc;
    rc = 0;
    /* <epoch-seconds>.<node>.json: the node, for lines without NodeId */
    char file_node[128] = "";
    const char *dot = strchr(base, '.');
    if (dot && ends_with(base, ".json")) {
        size_t n = strlen(dot + 1) - 5;
        if (n < sizeof(file_node)) {
            memcpy(file_node, dot + 1, n);
            file_node[n] = '\0';
        }
    }
    for (size_t pos = start; pos < len && rc == 0;) {
        const char *nl = memchr(buf + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - buf) : len;
        size_t a = pos, b = end;
        while (a < b && isspace((unsigned char)buf[a]))
            a++;
        while (b > a && isspace((unsigned char)buf[b - 1]))
            b--;
        if (b > a)
            rc = system_line(im, buf + a, b - a, !nl, file_node);
        pos = nl ? end + 1 : len;
    }
    free(buf);
    return rc;
}

/* ---- framework events: smdebug's writers ---------------------------------------- */

/*
 * How smdebug files its events (smdebug/core/tfevent/timeline_file_writer.py):
 * one writer per process, naming its files <end-us>_<N>-<host>_<kind>.json,
 * N the process's rank in a distributed job and its OS pid otherwise
 * (smdebug/core/utils.py, get_node_id). Inside a file the trace "pid" is the
 * index of a training phase ("Step:ModeKeys.TRAIN", "Forward",
 * "DataLoaderIter", ...; its process_name), not a process: the OS pid is the
 * event's args.pid where smdebug writes one. So a process here is (node,
 * args.pid, else the pid its writer stands for), and a thread is its tid:
 * the phases of one process share its threads, and a step's forward,
 * backward and data loading nest inside it as strobe's phases do.
 */

static const struct sagemaker_import *sort_im; /* qsort has no context argument */

/* The writer of (node, prefix): made on first sight. */
static int stream_get(struct sagemaker_import *im, uint32_t node, int64_t prefix, uint32_t *out)
{
    for (uint32_t i = 0; i < im->nstreams; i++)
        if (im->streams[i].node == node && im->streams[i].prefix == prefix) {
            *out = i;
            return 0;
        }
    if (array_grow((void **)&im->streams, &im->streams_cap, im->nstreams + 1, sizeof(*im->streams),
                   16) < 0)
        return -ENOMEM;
    im->streams[im->nstreams] = (struct sm_stream){
        .node = node,
        .prefix = prefix,
        .step_pid = -1,
        .first_pid = -1,
        .rank = -1,
        .world_size = -1,
        .pid = -1,
    };
    *out = im->nstreams++;
    return 0;
}

static uint32_t thread_key_hash(uint32_t stream, int64_t os_pid, int64_t tid)
{
    uint32_t h = hash_fnv1a(HASH_FNV1A_INIT, &stream, sizeof(stream));
    h = hash_fnv1a(h, &os_pid, sizeof(os_pid));
    return hash_fnv1a(h, &tid, sizeof(tid));
}

static uint32_t thread_hash(const void *ctx, uint32_t i)
{
    const struct sm_thread *t = &((const struct sagemaker_import *)ctx)->threads[i];
    return thread_key_hash(t->stream, t->os_pid, t->tid);
}

static struct sm_proc *proc_get(struct sagemaker_import *im, uint32_t node, int64_t pid,
                                uint32_t *index)
{
    for (uint32_t i = im->nprocs; i-- > 0;)
        if (im->procs[i].node == node && im->procs[i].pid == pid) {
            if (index)
                *index = i;
            return &im->procs[i];
        }
    if (im->nprocs >= SM_PROCS_MAX ||
        array_grow((void **)&im->procs, &im->procs_cap, im->nprocs + 1, sizeof(*im->procs), 16) < 0)
        return NULL;
    struct sm_proc *p = &im->procs[im->nprocs];
    memset(p, 0, sizeof(*p));
    p->node = node;
    p->pid = pid;
    p->ppid = p->rank = p->local_rank = p->world_size = p->worker_id = -1;
    if (index)
        *index = im->nprocs;
    im->nprocs++;
    return p;
}

/* The thread (stream, os_pid, tid) while reading. NULL with *rc -ENOMEM, or
 * -E2BIG past the limit on threads. */
static struct sm_thread *thread_get(struct sagemaker_import *im, uint32_t stream, int64_t os_pid,
                                    int64_t tid, int *rc)
{
    *rc = -ENOMEM;
    if (hash_slots_reserve(&im->thread_slots, &im->thread_nslots, im->nthreads, thread_hash, im) <
        0)
        return NULL;
    uint32_t mask = im->thread_nslots - 1;
    uint32_t h = thread_key_hash(stream, os_pid, tid) & mask;
    for (; im->thread_slots[h]; h = (h + 1) & mask) {
        struct sm_thread *t = &im->threads[im->thread_slots[h] - 1];
        if (t->stream == stream && t->os_pid == os_pid && t->tid == tid)
            return t;
    }
    if (im->nthreads >= SM_THREADS_MAX) {
        *rc = -E2BIG;
        return NULL;
    }
    if (array_grow((void **)&im->threads, &im->threads_cap, im->nthreads + 1, sizeof(*im->threads),
                   16) < 0)
        return NULL;
    struct sm_thread *t = &im->threads[im->nthreads];
    memset(t, 0, sizeof(*t));
    t->node = im->streams[stream].node;
    t->stream = stream;
    t->os_pid = os_pid;
    t->pid = -1;
    t->tid = tid;
    im->thread_slots[h] = ++im->nthreads;
    return t;
}

static int thread_push(struct sagemaker_import *im, struct sm_thread *t, int64_t ts_ns,
                       int64_t value, uint32_t name, uint32_t step, uint8_t kind, uint8_t flags)
{
    if (array_grow((void **)&t->ev, &t->cap, t->n + 1, sizeof(*t->ev), 1024) < 0)
        return -ENOMEM;
    t->ev[t->n++] = (struct sm_event){ts_ns, value, name, step, im->seq++, kind, flags};
    return 0;
}

/* Spans begun (B) and never ended are kept as span-begin events, as the
 * recorder keeps them. */
static int flush_open(struct sagemaker_import *im, struct sm_thread *t, uint32_t down_to)
{
    int rc = 0;
    while (rc == 0 && t->depth > down_to) {
        struct sm_open *o = &t->open[--t->depth];
        rc = thread_push(im, t, o->ts_ns, 0, o->name, o->step, STROBE_EV_SPAN_BEGIN, 0);
    }
    return rc;
}

/* ---- what an event is ---------------------------------------------------------- */

/* What a training phase (smdebug's process_name of a trace pid) says its
 * events are. */
enum phase_role {
    PR_NAME,     /* nothing: the event's own name says */
    PR_DATA,     /* data loading in the training process: data */
    PR_WORKER,   /* a data-loader worker's work: dataloader.worker */
    PR_FORWARD,  /* the forward pass, named after its module: forward */
    PR_BACKWARD, /* the backward pass: backward */
    PR_CPU_OP,   /* the autograd profiler's CPU operators: op:<name> */
    PR_GPU_OP,   /* its GPU kernels, a phase per device: kernel:<name> */
};

static const struct {
    const char *phase;
    uint8_t role;
} phase_roles[] = {
    {"DataLoaderIterInitialize", PR_DATA}, /* PyTorch: an iterator made, each epoch */
    {"DataLoaderIter", PR_DATA},           /* PyTorch: *DataLoaderIter::GetNext */
    {"DataIterator", PR_DATA},             /* TensorFlow: dataset::GetNext */
    {"DataLoaderWorker", PR_WORKER},       /* PyTorch: a worker's batch, with its pid */
    {"Forward", PR_FORWARD},
    {"Backward(post-forward)", PR_BACKWARD},
    {"cpu_functions", PR_CPU_OP},
};

static uint8_t phase_role_of(const char *phase)
{
    for (size_t i = 0; i < ARRAY_SIZE(phase_roles); i++)
        if (strcmp(phase, phase_roles[i].phase) == 0)
            return phase_roles[i].role;
    return strncmp(phase, "gpu_functions", 13) == 0 ? PR_GPU_OP : PR_NAME;
}

/* strobe's own names, kept as they are (the step spans are added to them) */
static const char *const strobe_native[] = {"data", "forward", "backward", "optimizer",
                                            "dataloader.worker"};

static const struct {
    const char *needle; /* matched case-insensitively anywhere in the name */
    const char *name;
} phase_map[] = {
    {"allreduce", "comm:allreduce"},
    {"all_reduce", "comm:allreduce"},
    {"allgather", "comm:allgather"},
    {"all_gather", "comm:allgather"},
    {"reducescatter", "comm:reduce_scatter"},
    {"reduce_scatter", "comm:reduce_scatter"},
    {"alltoall", "comm:alltoall"},
    {"broadcast", "comm:broadcast"},
    {"dataloaderworker", "dataloader.worker"}, /* before "dataloader" */
    {"dataloader", "data"},                    /* DataLoaderIterInitialize, ...::GetNext */
    {"data_loader", "data"},
    {"getnext", "data"}, /* TensorFlow's dataset::GetNext, IteratorGetNext */
    {"backward", "backward"},
    {"forward", "forward"},
    {"optimizer", "optimizer"},
};

/* smdebug's step names, by enum step_mode */
static const char *const step_modes[STEP_MODE_COUNT] = {"TRAIN", "EVAL", "PREDICT", "GLOBAL"};

/* The strobe name of a trace event's name: smdebug's steps become the step
 * span of their mode ("Step:ModeKeys.EVAL" is "step:eval"), what clearly is
 * a phase gets its phase name (analyze/steps.h), the rest stays. */
static const char *strobe_name(const char *name)
{
    if (strncmp(name, "Step:ModeKeys.", 14) == 0)
        for (int m = 0; m < STEP_MODE_COUNT; m++)
            if (strcmp(name + 14, step_modes[m]) == 0)
                return step_span_names[m];
    if (strncmp(name, "comm:", 5) == 0 || steps_mode_of(name) >= 0)
        return name;
    for (size_t i = 0; i < ARRAY_SIZE(strobe_native); i++)
        if (strcmp(name, strobe_native[i]) == 0)
            return name;
    for (size_t i = 0; i < ARRAY_SIZE(phase_map); i++)
        if (strcasestr(name, phase_map[i].needle))
            return phase_map[i].name;
    return name;
}

/* The name a span of phase role gets (buf holds a prefixed one). */
static const char *span_name(const char *name, uint8_t role, char *buf, size_t cap)
{
    switch (role) {
    case PR_DATA:
        return "data";
    case PR_WORKER:
        return "dataloader.worker";
    case PR_FORWARD:
        return "forward";
    case PR_BACKWARD:
        return "backward";
    case PR_CPU_OP:
    case PR_GPU_OP: {
        const char *prefix = role == PR_CPU_OP ? "op:" : "kernel:";
        if (strncmp(name, prefix, strlen(prefix)) == 0)
            return name;
        snprintf(buf, cap, "%s%s", prefix, name);
        return buf;
    }
    default:
        return strobe_name(name);
    }
}

/* An integer field (pid, tid): a number or a numeric string; 0 otherwise. */
static int64_t int_field(const struct json *v)
{
    int64_t x;
    return json_scaled_i64(v, 0, &x) == 0 ? x : 0;
}

/* An OS pid from args ("pid"), or -1 when there is none that could be one. */
static int64_t os_pid_of(const struct json *v)
{
    int64_t x;
    return json_scaled_i64(v, 0, &x) == 0 && x > 0 && x < (1LL << 31) ? x : -1;
}

struct trace_file {
    uint32_t node;
    uint32_t stream;
    int rows_apart; /* a Horovod or smdataparallel timeline: each phase a thread of its own */
    int has_start;
    int64_t start_ns; /* start_time_since_epoch_in_micros, in ns */
};

static int raw_push(struct sagemaker_import *im, const struct sm_raw *r)
{
    if (array_grow((void **)&im->raw, &im->raw_cap, im->nraw + 1, sizeof(*im->raw), 1024) < 0)
        return -ENOMEM;
    im->raw[im->nraw++] = *r;
    return 0;
}

static int lane_get(struct sagemaker_import *im, const char *name, uint32_t *out)
{
    for (uint32_t i = im->nlanes; i-- > 0;)
        if (strcmp(im->lanes[i].name, name) == 0) {
            *out = i;
            return 0;
        }
    if (array_grow((void **)&im->lanes, &im->lanes_cap, im->nlanes + 1, sizeof(*im->lanes), 16) <
            0 ||
        !(im->lanes[im->nlanes].name = strdup(name)))
        return -ENOMEM;
    *out = im->nlanes++;
    return 0;
}

/* A training phase of this file: trace pid `pid` is named `name`. */
static int phase_add(struct sagemaker_import *im, const struct trace_file *f, int64_t pid,
                     const char *name)
{
    uint32_t lane;
    if (lane_get(im, name, &lane) < 0)
        return -ENOMEM;
    uint8_t role = phase_role_of(name);
    struct sm_phase ph = {pid, lane, role, (uint8_t)(role == PR_GPU_OP || f->rows_apart)};
    for (uint32_t i = 0; i < im->nphases; i++)
        if (im->phases[i].pid == pid) {
            im->phases[i] = ph;
            return 0;
        }
    if (array_grow((void **)&im->phases, &im->phases_cap, im->nphases + 1, sizeof(*im->phases),
                   16) < 0)
        return -ENOMEM;
    im->phases[im->nphases++] = ph;
    return 0;
}

static const struct sm_phase *phase_of(const struct sagemaker_import *im, int64_t pid)
{
    for (uint32_t i = 0; i < im->nphases; i++)
        if (im->phases[i].pid == pid)
            return &im->phases[i];
    return NULL;
}

/* A process's attributes from the strobe.process metadata strobe's export
 * writes (smdebug writes none). */
static void process_meta(struct sagemaker_import *im, const struct trace_file *f,
                         const struct json *args)
{
    int64_t pid = os_pid_of(json_get(args, "pid"));
    struct sm_proc *p = pid >= 0 ? proc_get(im, f->node, pid, NULL) : NULL;
    if (!p)
        return;
    const char *pname = json_str(json_get(args, "name"));
    if (pname && *pname && !p->name && (p->name = strndup(pname, SM_COMM_MAX)))
        sanitize(p->name);
    static const char *const keys[] = {"ppid", "rank", "local_rank", "world_size", "worker_id"};
    int64_t *fields[] = {&p->ppid, &p->rank, &p->local_rank, &p->world_size, &p->worker_id};
    for (size_t k = 0; k < 5; k++) {
        int64_t x;
        if (json_scaled_i64(json_get(args, keys[k]), 0, &x) == 0 && x >= 0 && x < (1LL << 31))
            *fields[k] = x;
    }
}

static void metadata(struct sagemaker_import *im, const struct trace_file *f, int64_t pid,
                     const struct json *v, const struct json *args, int *rc)
{
    const char *what = json_str(json_get(v, "name"));
    const char *name = json_str(json_get(args, "name"));
    if (!what)
        return;
    if (strcmp(what, "process_name") == 0 && name && *name)
        *rc = phase_add(im, f, pid, name);
    else if (strcmp(what, "strobe.process") == 0)
        process_meta(im, f, args);
}

/* What an event says of its writer: whether N is the OS pid, and which pid
 * stands for the writer's events that carry none. */
static void stream_note_pid(struct sagemaker_import *im, const struct trace_file *f, int64_t os_pid,
                            int is_step, uint8_t role)
{
    struct sm_stream *s = &im->streams[f->stream];
    if (os_pid < 0)
        return;
    if (os_pid == s->prefix)
        s->prefix_is_pid = 1;
    if (is_step && s->step_pid < 0)
        s->step_pid = os_pid;
    if (role != PR_WORKER && s->first_pid < 0)
        s->first_pid = os_pid;
}

/* A data-loader worker's events carry its pid and worker_id. */
static void worker_note(struct sagemaker_import *im, const struct trace_file *f, int64_t os_pid,
                        const struct json *args)
{
    int64_t id;
    struct sm_proc *p;
    if (os_pid < 0 || json_scaled_i64(json_get(args, "worker_id"), 0, &id) < 0 || id < 0 ||
        id >= (1LL << 31) || !(p = proc_get(im, f->node, os_pid, NULL)))
        return;
    if (p->worker_id < 0)
        p->worker_id = id;
}

/* ph C: a counter per numeric argument, "name" for "value", else name.key */
static int counter_element(struct sagemaker_import *im, struct sm_raw *r, const char *name,
                           const struct json *args)
{
    for (const struct json *m = args && args->type == JSON_OBJECT ? args->child : NULL; m;
         m = m->next) {
        double x;
        if (json_num(m, &x) < 0)
            continue;
        char cname[2 * SM_NAME_MAX + 2];
        if (strcmp(m->key, "value") == 0 || !*name)
            snprintf(cname, sizeof(cname), "%s", *name ? name : m->key);
        else
            snprintf(cname, sizeof(cname), "%s.%s", name, m->key);
        memcpy(&r->value, &x, sizeof(x));
        if (!(r->name = intern(im, cname)))
            return -ENOMEM;
        int rc = raw_push(im, r);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int trace_element(struct sagemaker_import *im, struct trace_file *f, const struct json *v)
{
    if (v->type != JSON_OBJECT) {
        im->counts.events_bad++;
        return 0;
    }
    const struct json *args = json_get(v, "args");
    const struct json *st = json_get(args, "start_time_since_epoch_in_micros");
    int64_t start_ns;
    if (st && !f->has_start && json_scaled_i64(st, 3, &start_ns) == 0) {
        f->has_start = 1;
        f->start_ns = start_ns;
    }
    const char *ph = json_str(json_get(v, "ph"));
    if (!ph || strlen(ph) != 1) {
        im->counts.events_bad++;
        return 0;
    }
    int64_t pid = int_field(json_get(v, "pid"));
    if (*ph == 'M') {
        int rc = 0;
        metadata(im, f, pid, v, args, &rc);
        return rc;
    }
    if (!strchr("XBEiIRC", *ph)) {
        im->counts.events_ignored++;
        return 0;
    }
    const struct sm_phase *phase = phase_of(im, pid);
    struct sm_raw r = {.os_pid = os_pid_of(json_get(args, "pid")), .ph = *ph};
    r.tid = json_get(args, "thread_id") ? int_field(json_get(args, "thread_id"))
                                        : int_field(json_get(v, "tid"));
    if (phase && phase->own_tid)
        r.tid = SM_LANE_TID + phase->lane;
    if (json_scaled_i64(json_get(v, "ts"), 3, &r.ts_ns) < 0) {
        im->counts.events_bad++;
        return 0;
    }
    if (*ph == 'X' && json_get(v, "dur") &&
        (json_scaled_i64(json_get(v, "dur"), 3, &r.value) < 0 || r.value < 0)) {
        im->counts.events_bad++; /* a span that ends before it begins */
        return 0;
    }
    const char *raw_name = json_str(json_get(v, "name"));
    char name[SM_NAME_MAX + 1];
    snprintf(name, sizeof(name), "%s", raw_name ? raw_name : "");
    uint8_t role = phase ? phase->role : PR_NAME;
    if (*ph == 'C')
        return counter_element(im, &r, name, args);
    if ((*ph == 'i' || *ph == 'I') && strcmp(name, "strobe.step") == 0) {
        /* strobe's step-begin marker, as export writes it */
        if (step_num_of(json_get(args, "step_num"), &r.value) < 0) {
            im->counts.events_bad++;
            return 0;
        }
        r.ph = 'S';
        r.step = (uint32_t)r.value;
        stream_note_pid(im, f, r.os_pid, 0, role);
        return raw_push(im, &r);
    }
    char buf[SM_NAME_MAX + 16];
    const char *mapped =
        strchr("XBE", *ph) ? span_name(name, role, buf, sizeof(buf)) : strobe_name(name);
    int mode = *ph == 'X' || *ph == 'B' ? steps_mode_of(mapped) : -1;
    if (mode >= 0) {
        int64_t n;
        r.flags = (uint8_t)(mode << EVF_MODE_SHIFT);
        if (step_num_of(json_get(args, "step_num"), &n) == 0) {
            r.step = (uint32_t)n;
            r.flags |= EVF_STEP_NUM;
        }
    }
    stream_note_pid(im, f, r.os_pid, mode >= 0, role);
    if (role == PR_WORKER)
        worker_note(im, f, r.os_pid, args);
    if (!(r.name = intern(im, mapped)))
        return -ENOMEM;
    return raw_push(im, &r);
}

/* E: closes the innermost open span of its name (the innermost, for an E
 * without a name); an end without its begin is kept as a span-end. */
static int span_close(struct sagemaker_import *im, struct sm_thread *t, const struct sm_raw *r,
                      int64_t ts)
{
    const char *n = im->names.s[r->name - 1];
    uint32_t j = t->depth;
    while (j > 0 && *n && t->open[j - 1].name != r->name)
        j--;
    if (!j)
        return thread_push(im, t, ts, 0, r->name, r->step, STROBE_EV_SPAN_END, 0);
    int rc = flush_open(im, t, j);
    if (rc < 0)
        return rc;
    struct sm_open o = t->open[--t->depth];
    if (!(o.flags & EVF_STEP_NUM) && (r->flags & EVF_STEP_NUM)) {
        o.step = r->step;
        o.flags |= EVF_STEP_NUM;
    }
    return thread_push(im, t, o.ts_ns, ts > o.ts_ns ? sat_sub(ts, o.ts_ns) : 0, o.name, o.step,
                       STROBE_EV_COMPLETE, o.flags);
}

/* One element, at its absolute time ts, into thread t. */
static int thread_event(struct sagemaker_import *im, struct sm_thread *t, const struct sm_raw *r,
                        int64_t ts)
{
    switch (r->ph) {
    case 'X':
        return thread_push(im, t, ts, r->value > 0 ? r->value : 0, r->name, r->step,
                           STROBE_EV_COMPLETE, r->flags);
    case 'B':
        if (t->depth >= OPEN_MAX)
            return thread_push(im, t, ts, 0, r->name, r->step, STROBE_EV_SPAN_BEGIN, 0);
        if (array_grow((void **)&t->open, &t->open_cap, t->depth + 1, sizeof(*t->open), 8) < 0)
            return -ENOMEM;
        t->open[t->depth++] = (struct sm_open){ts, r->name, r->step, r->flags};
        return 0;
    case 'E':
        return span_close(im, t, r, ts);
    case 'C':
        return thread_push(im, t, ts, r->value, r->name, 0, STROBE_EV_COUNTER, 0);
    case 'S':
        return thread_push(im, t, ts, r->value, 0, r->step, STROBE_EV_STEP, 0);
    default: /* i, I, R */
        return thread_push(im, t, ts, 0, r->name, 0, STROBE_EV_INSTANT, 0);
    }
}

/* The elements of one file, read, now placed on the time axis and paired. */
static int trace_feed(struct sagemaker_import *im, struct trace_file *f, const char *path)
{
    if (!f->has_start) {
        /* without the metadata event, times are absolute only if they
         * look it (after 2001 in us since the epoch) */
        if (im->nraw && im->raw[0].ts_ns < SM_ABSOLUTE_TS_NS) {
            log_warn("'%s' has no start_time_since_epoch_in_micros: its %u events are skipped",
                     path, im->nraw);
            im->counts.events_bad += im->nraw;
            im->counts.files_unreadable++;
            return 0;
        }
        f->start_ns = 0;
    } else {
        struct sm_node_info *in = &im->info[f->node];
        if (!in->has_trace_start || f->start_ns < in->trace_start_ns)
            in->trace_start_ns = f->start_ns;
        in->has_trace_start = 1;
    }
    int rc = 0;
    for (uint32_t i = 0; i < im->nraw && rc == 0; i++) {
        const struct sm_raw *r = &im->raw[i];
        int64_t ts;
        if (__builtin_add_overflow(r->ts_ns, f->start_ns, &ts)) {
            im->counts.events_bad++;
            continue;
        }
        int why;
        struct sm_thread *t = thread_get(im, f->stream, r->os_pid, r->tid, &why);
        if (!t && why == -E2BIG) {
            im->counts.events_bad++;
            continue;
        }
        if (!t)
            return why;
        rc = thread_event(im, t, r, ts);
    }
    return rc;
}

/* The number N and the host of smdebug's node id "<N>-<host>" (older
 * releases: "<N>_<host>"); -1 and the whole id when it has no such N. */
static int64_t split_node_id(const char *id, const char **host)
{
    int64_t n = 0;
    size_t k = 0;
    for (; isdigit((unsigned char)id[k]) && k < 10; k++)
        n = n * 10 + (id[k] - '0');
    if (k == 0 || (id[k] != '-' && id[k] != '_') || !id[k + 1] || n >= (1LL << 31)) {
        *host = id;
        return -1;
    }
    *host = id + k + 1;
    return n;
}

static const struct {
    const char *suffix;
    int rows_apart; /* a timeline whose phases run side by side (per tensor) */
} trace_kinds[] = {
    {"_pythontimeline.json", 0},
    {"_model_timeline.json", 0},
    {"_horovod_timeline.json", 1},
    {"_smdataparallel_timeline.json", 1},
};

/* <end-us>_<node id>_<kind>.json: the node and the writer of a file. */
static int trace_node(struct sagemaker_import *im, const char *base, struct trace_file *f)
{
    char id[128];
    const char *us = strchr(base, '_');
    size_t kn = 0, len = strlen(base);
    for (size_t k = 0; k < ARRAY_SIZE(trace_kinds); k++)
        if (ends_with(base, trace_kinds[k].suffix)) {
            kn = strlen(trace_kinds[k].suffix);
            f->rows_apart = trace_kinds[k].rows_apart;
        }
    size_t at = us ? (size_t)(us + 1 - base) : 0;
    if (!us || !kn || at + kn > len || len - kn - at >= sizeof(id))
        id[0] = '\0';
    else
        snprintf(id, sizeof(id), "%.*s", (int)(len - kn - at), us + 1);
    const char *host;
    int64_t prefix = split_node_id(id, &host);
    int rc = node_index(im, *host ? host : SM_DEFAULT_NODE, &f->node);
    if (rc == 0)
        rc = stream_get(im, f->node, prefix, &f->stream);
    return rc;
}

/* The object form, {"traceEvents": [...]}: read whole. */
static int trace_object(struct sagemaker_import *im, struct trace_file *f, const char *path,
                        const char *buf, size_t len)
{
    struct json *v;
    json_doc_reset(&im->doc);
    const struct json *evs = NULL;
    int rc = json_parse(&im->doc, buf, len, &v);
    if (rc == -ENOMEM)
        return rc;
    if (rc == 0)
        evs = json_get(v, "traceEvents");
    if (!evs || evs->type != JSON_ARRAY) {
        log_warn("'%s' is not a trace-event file; skipped", path);
        im->counts.files_unreadable++;
        return 1;
    }
    rc = 0;
    for (const struct json *e = evs->child; e && rc == 0; e = e->next)
        rc = trace_element(im, f, e);
    return rc;
}

/* The array form, an element at a time: a file cut short or garbled in one
 * element keeps the others. */
static int trace_array(struct sagemaker_import *im, struct trace_file *f, const char *buf,
                       size_t len, size_t pos)
{
    int rc;
    for (;;) {
        struct json *v;
        json_doc_reset(&im->doc);
        rc = json_array_next(&im->doc, buf, len, &pos, &v);
        if (rc == 1) {
            if ((rc = trace_element(im, f, v)) < 0)
                break;
            continue;
        }
        if (rc == 0 || rc == -EPIPE || rc == -ENOMEM)
            break;
        im->counts.events_bad++; /* cut short, or garbled: skip to the next line */
        if (rc == -ENODATA || json_array_skip(buf, len, &pos) < 0) {
            rc = 0;
            break;
        }
    }
    return rc == -EPIPE ? 0 : rc;
}

static int trace_file(struct sagemaker_import *im, const char *path, const char *base)
{
    struct trace_file f = {0};
    int rc = trace_node(im, base, &f);
    if (rc == -E2BIG) {
        log_warn("'%s': too many nodes; skipped", path);
        im->counts.files_unreadable++;
        return 0;
    }
    if (rc < 0)
        return rc;
    char *buf;
    size_t len, pos;
    rc = read_input(im, path, &im->counts.trace_files, &buf, &len, &pos);
    if (rc <= 0)
        return rc;
    im->nraw = 0;
    im->nphases = 0; /* a writer declares its phases again in each file */
    rc = json_array_open(buf, len, &pos);
    if (rc == -EBADMSG)
        rc = trace_object(im, &f, path, buf + pos, len - pos);
    else if (rc == 0)
        rc = trace_array(im, &f, buf, len, pos);
    free(buf);
    if (rc == 0)
        rc = trace_feed(im, &f, path);
    return rc < 0 ? rc : 0;
}

/* ---- walking the directory ---------------------------------------------------- */

typedef int file_fn(struct sagemaker_import *im, const char *path, const char *base);

static int want_system(const char *name)
{
    return ends_with(name, ".json");
}

static int want_trace(const char *name)
{
    for (size_t k = 0; k < ARRAY_SIZE(trace_kinds); k++)
        if (ends_with(name, trace_kinds[k].suffix))
            return 1;
    return 0;
}

static int entry_cmp(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* The files of top and of its subdirectories (one level: the date-hour
 * folders), each folder in name order. */
static int walk(struct sagemaker_import *im, const char *top, int depth, int (*want)(const char *),
                file_fn *fn)
{
    struct dirent **ents;
    int n = scandir(top, &ents, NULL, entry_cmp);
    if (n < 0) {
        log_warn("cannot read '%s': %s; skipped", top, strerror(errno));
        im->counts.files_unreadable++;
        return 0;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (rc == 0 && name[0] != '.') {
            struct strbuf path;
            strbuf_init(&path);
            strbuf_addf(&path, "%s/%s", top, name);
            struct stat st;
            if (stat(path.buf, &st) == 0) {
                if (S_ISDIR(st.st_mode) && depth > 0)
                    rc = walk(im, path.buf, depth - 1, want, fn);
                else if (S_ISREG(st.st_mode) && want(name))
                    rc = fn(im, path.buf, name);
            }
            strbuf_release(&path);
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

/* ---- after reading: order, means, clocks ---------------------------------------- */

static int cmp_point(const void *a, const void *b)
{
    const struct sm_point *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Sort by time; of points with equal times keep the first read. */
static void series_sort(struct sagemaker_import *im, struct sm_series *s)
{
    if (s->n > 1)
        qsort(s->p, s->n, sizeof(*s->p), cmp_point);
    uint32_t w = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (w && s->p[w - 1].ts_ns == s->p[i].ts_ns) {
            im->counts.duplicates++;
            continue;
        }
        s->p[w++] = s->p[i];
    }
    s->n = w;
}

/* The whole-host value of a per-core metric: the mean over the cores of each
 * snapshot, stamped with the snapshot's first time. */
static int derive_mean(struct sagemaker_import *im, uint32_t node, const char *name,
                       uint64_t *snapshots, int64_t *interval_ns)
{
    uint32_t total = 0, have_total = 0;
    for (uint32_t i = 0; i < im->nseries; i++) {
        const struct sm_series *s = &im->series[i];
        if (s->node != node || strcmp(s->name, name) != 0)
            continue;
        if (!s->labels[0])
            have_total = s->n;
        else if (strncmp(s->labels, "core=", 5) == 0)
            total += s->n;
    }
    if (!total || have_total)
        return 0;
    struct sm_point *all = malloc(total * sizeof(*all));
    if (!all)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < im->nseries; i++) {
        const struct sm_series *s = &im->series[i];
        if (s->node == node && strcmp(s->name, name) == 0 && strncmp(s->labels, "core=", 5) == 0)
            for (uint32_t j = 0; j < s->n; j++)
                all[n++] = s->p[j];
    }
    qsort(all, n, sizeof(*all), cmp_point);
    uint32_t index;
    int rc = series_find(im, node, name, "", "pct", NULL, &index);
    uint64_t snaps = 0;
    int64_t *starts = NULL;
    if (rc == 0 && snapshots && !(starts = malloc(n * sizeof(*starts))))
        rc = -ENOMEM;
    for (uint32_t i = 0; i < n && rc == 0;) {
        int64_t t0 = all[i].ts_ns;
        double sum = 0;
        uint32_t k = 0;
        for (; i < n && (uint64_t)all[i].ts_ns - (uint64_t)t0 < SAGEMAKER_SNAPSHOT_NS; i++, k++)
            sum += all[i].value;
        rc = series_add(im, index, t0, sum / k);
        if (starts)
            starts[snaps] = t0;
        snaps++;
    }
    if (rc == 0 && snapshots) {
        *snapshots = snaps;
        /* the sampling interval: the median gap between snapshots */
        if (snaps > 1) {
            for (uint64_t i = 0; i + 1 < snaps; i++)
                starts[i] = sat_sub(starts[i + 1], starts[i]);
            *interval_ns = sagemaker_median_i64(starts, snaps - 1);
        }
    }
    free(starts);
    free(all);
    return rc;
}

struct step_start {
    uint64_t key; /* mode << 32 | step number */
    int64_t ts_ns;
};

static int cmp_step_start(const void *a, const void *b)
{
    const struct step_start *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The numbered steps of one node, the earliest start of each number. */
static int node_steps(const struct sagemaker_import *im, uint32_t node, struct step_start **out,
                      uint32_t *nout)
{
    uint32_t n = 0, cap = 0;
    struct step_start *v = NULL;
    for (uint32_t t = 0; t < im->nthreads; t++) {
        const struct sm_thread *th = &im->threads[t];
        if (th->node != node)
            continue;
        for (uint32_t i = 0; i < th->n; i++) {
            const struct sm_event *e = &th->ev[i];
            if (!is_step_event(im, e) || !(e->flags & EVF_STEP_NUM))
                continue;
            if (array_grow((void **)&v, &cap, n + 1, sizeof(*v), 256) < 0) {
                free(v);
                return -ENOMEM;
            }
            uint64_t mode = (e->flags >> EVF_MODE_SHIFT) & 3;
            v[n++] = (struct step_start){mode << 32 | e->step, e->ts_ns};
        }
    }
    if (n)
        qsort(v, n, sizeof(*v), cmp_step_start);
    uint32_t w = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!w || v[w - 1].key != v[i].key)
            v[w++] = v[i];
    *out = v;
    *nout = w;
    return 0;
}

/* Each node's clock against the reference node's: the median, over the step
 * numbers both ran, of the difference of their start times (data-parallel
 * steps start together). */
static int estimate_offsets(struct sagemaker_import *im)
{
    struct step_start *ref = NULL;
    uint32_t nref = 0;
    int rc = 0;
    uint32_t refnode = UINT32_MAX;
    for (uint32_t k = 0; k < im->nnodes && refnode == UINT32_MAX && rc == 0; k++) {
        rc = node_steps(im, im->order[k], &ref, &nref);
        if (rc == 0 && nref)
            refnode = im->order[k];
        else {
            free(ref);
            ref = NULL;
        }
    }
    if (rc < 0 || refnode == UINT32_MAX)
        return rc;
    im->nodes[refnode].reference = 1;
    int64_t *diffs = malloc(nref * sizeof(*diffs));
    if (!diffs) {
        free(ref);
        return -ENOMEM;
    }
    for (uint32_t k = 0; k < im->nnodes && rc == 0; k++) {
        uint32_t node = im->order[k];
        if (node == refnode)
            continue;
        struct step_start *v;
        uint32_t n;
        if ((rc = node_steps(im, node, &v, &n)) < 0)
            break;
        uint32_t nd = 0;
        for (uint32_t i = 0, j = 0; i < n && j < nref;) {
            if (v[i].key < ref[j].key)
                i++;
            else if (v[i].key > ref[j].key)
                j++;
            else
                diffs[nd++] = sat_sub(v[i++].ts_ns, ref[j++].ts_ns);
        }
        free(v);
        if (nd) {
            im->nodes[node].offset_ns = sagemaker_median_i64(diffs, nd);
            im->nodes[node].common_steps = nd;
        }
    }
    free(diffs);
    free(ref);
    return rc;
}

static int64_t event_end(const struct sm_event *e)
{
    if (e->kind != STROBE_EV_COMPLETE || e->value <= 0)
        return e->ts_ns;
    int64_t end;
    return __builtin_add_overflow(e->ts_ns, e->value, &end) ? INT64_MAX : end;
}

/* The order the recorder stores events in: by end (a span is emitted when it
 * ends, after the spans nested in it), the inner of two equal ends first. */
static int cmp_event(const void *a, const void *b)
{
    const struct sm_event *x = a, *y = b;
    int64_t ex = event_end(x), ey = event_end(y);
    if (ex != ey)
        return (ex > ey) - (ex < ey);
    if (x->ts_ns != y->ts_ns)
        return (x->ts_ns < y->ts_ns) - (x->ts_ns > y->ts_ns);
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Each event's step: that of the step span it starts in, else of the last
 * step begun before it (0 before the first). */
static int assign_steps(const struct sagemaker_import *im, struct sm_thread *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->n; i++)
        n += is_step_event(im, &t->ev[i]);
    if (!n)
        return 0;
    struct sm_event *steps = malloc(n * sizeof(*steps));
    if (!steps)
        return -ENOMEM;
    n = 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (is_step_event(im, &t->ev[i]))
            steps[n] = t->ev[i], steps[n].seq = n, n++;
    /* by start */
    for (uint32_t i = 1; i < n; i++) {
        struct sm_event x = steps[i];
        uint32_t j = i;
        for (; j > 0 && steps[j - 1].ts_ns > x.ts_ns; j--)
            steps[j] = steps[j - 1];
        steps[j] = x;
    }
    for (uint32_t i = 0; i < t->n; i++) {
        struct sm_event *e = &t->ev[i];
        if (is_step_event(im, e))
            continue;
        uint32_t lo = 0, hi = n; /* the first step starting after e */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (steps[mid].ts_ns <= e->ts_ns)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo)
            e->step = steps[lo - 1].step;
    }
    free(steps);
    return 0;
}

static void shift_node(struct sagemaker_import *im, uint32_t node, int64_t by)
{
    for (uint32_t i = 0; i < im->nseries; i++)
        if (im->series[i].node == node)
            for (uint32_t j = 0; j < im->series[i].n; j++)
                im->series[i].p[j].ts_ns = sat_sub(im->series[i].p[j].ts_ns, by);
    for (uint32_t i = 0; i < im->nthreads; i++)
        if (im->threads[i].node == node)
            for (uint32_t j = 0; j < im->threads[i].n; j++)
                im->threads[i].ev[j].ts_ns = sat_sub(im->threads[i].ev[j].ts_ns, by);
}

static int cmp_node_order(const void *a, const void *b)
{
    return natural_cmp(sort_im->nodes[*(const uint32_t *)a].id,
                       sort_im->nodes[*(const uint32_t *)b].id);
}

/*
 * A trace file's start_time_since_epoch_in_micros is when its profiler
 * began: the run's start when it comes before the first sample or event,
 * so that rule windows fall where they fell for the job that recorded it.
 * Files rotate hourly, so a start more than an hour before the data is not
 * the profiler's and is ignored.
 */
static void run_start_from_traces(struct sagemaker_import *im)
{
    if (im->start_ns == INT64_MAX)
        return;
    for (uint32_t k = 0; k < im->nnodes; k++) {
        const struct sm_node_info *in = &im->info[k];
        if (!in->has_trace_start)
            continue;
        int64_t t = sat_sub(in->trace_start_ns, im->nodes[k].offset_ns);
        if (t < im->start_ns && im->start_ns - t <= 3600000000000LL)
            im->start_ns = t;
    }
}

/* ---- processes, ranks, threads ------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* How many distinct values v[0..n) holds (sorting v). */
static uint32_t distinct_i64(int64_t *v, uint32_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_i64);
    uint32_t d = 0;
    for (uint32_t i = 0; i < n; i++)
        d += !i || v[i] != v[i - 1];
    return d;
}

/*
 * Each writer's N: a rank or an OS pid. smdebug writes the rank when the job
 * is distributed and the pid when not, and says neither, so: N is a pid when
 * an event's args.pid repeats it; of the rest, those below their count (0 to
 * n-1 of n writers: ranks are numbered from 0, a pid of 0 does not exist and
 * pids below the count are the kernel's) are ranks, the others pids. The pid
 * of a rank's events without args.pid is that of its steps.
 */
static int decide_streams(struct sagemaker_import *im)
{
    int64_t *v = malloc((im->nstreams + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 0; i < im->nstreams; i++)
        if (im->streams[i].prefix >= 0 && !im->streams[i].prefix_is_pid)
            v[n++] = im->streams[i].prefix;
    uint32_t candidates = distinct_i64(v, n), ranks = 0;
    for (uint32_t i = 0; i < n; i++)
        ranks += v[i] < candidates && (!i || v[i] != v[i - 1]);
    free(v);
    for (uint32_t i = 0; i < im->nstreams; i++) {
        struct sm_stream *s = &im->streams[i];
        int is_rank = s->prefix >= 0 && !s->prefix_is_pid && s->prefix < candidates;
        int64_t seen = s->step_pid >= 0 ? s->step_pid : s->first_pid;
        s->rank = is_rank ? s->prefix : -1;
        s->world_size = is_rank ? (int64_t)ranks : -1;
        if (is_rank)
            s->pid = seen >= 0 ? seen : s->prefix;
        else
            s->pid = s->prefix >= 0 ? s->prefix : seen >= 0 ? seen : 0;
    }
    return 0;
}

static int cmp_thread_key(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const struct sm_thread *x = &sort_im->threads[i], *y = &sort_im->threads[j];
    if (x->node != y->node)
        return (x->node > y->node) - (x->node < y->node);
    if (x->pid != y->pid)
        return (x->pid > y->pid) - (x->pid < y->pid);
    if (x->tid != y->tid)
        return (x->tid > y->tid) - (x->tid < y->tid);
    return (i > j) - (i < j);
}

/* Move thread b's events to a (the same node, pid and tid). */
static int thread_absorb(struct sm_thread *a, struct sm_thread *b)
{
    if (array_grow((void **)&a->ev, &a->cap, a->n + b->n, sizeof(*a->ev), 1024) < 0)
        return -ENOMEM;
    memcpy(a->ev + a->n, b->ev, b->n * sizeof(*b->ev));
    a->n += b->n;
    free(b->ev);
    free(b->open);
    b->ev = NULL;
    b->open = NULL;
    b->n = b->cap = 0;
    return 0;
}

/* One thread per (node, pid, tid): the phases a writer filed under other
 * trace pids join the thread of the process they ran in. */
static int merge_threads(struct sagemaker_import *im)
{
    uint32_t *idx = malloc((im->nthreads + 1) * sizeof(*idx));
    if (!idx)
        return -ENOMEM;
    for (uint32_t i = 0; i < im->nthreads; i++)
        idx[i] = i;
    sort_im = im;
    qsort(idx, im->nthreads, sizeof(*idx), cmp_thread_key);
    sort_im = NULL;
    int rc = 0;
    uint32_t keep = 0;
    for (uint32_t k = 0; k < im->nthreads && rc == 0;) {
        struct sm_thread *a = &im->threads[idx[k]];
        uint32_t j = k + 1;
        for (; j < im->nthreads && rc == 0; j++) {
            struct sm_thread *b = &im->threads[idx[j]];
            if (b->node != a->node || b->pid != a->pid || b->tid != a->tid)
                break;
            rc = thread_absorb(a, b);
        }
        idx[keep++] = idx[k];
        k = j;
    }
    if (rc == 0) {
        /* compact in first-seen order, which the thread ids follow */
        qsort(idx, keep, sizeof(*idx), cmp_u32);
        for (uint32_t k = 0; k < keep; k++)
            im->threads[k] = im->threads[idx[k]];
        im->nthreads = keep;
        free(im->thread_slots); /* keyed as read; not needed again */
        im->thread_slots = NULL;
        im->thread_nslots = 0;
    }
    free(idx);
    return rc;
}

/* Every thread's process (node, pid) with its rank; threads merged. */
static int resolve_processes(struct sagemaker_import *im)
{
    int rc = decide_streams(im);
    for (uint32_t i = 0; i < im->nthreads && rc == 0; i++) {
        struct sm_thread *t = &im->threads[i];
        const struct sm_stream *s = &im->streams[t->stream];
        t->pid = t->os_pid >= 0 ? t->os_pid : s->pid;
        struct sm_proc *p = proc_get(im, t->node, t->pid, &t->proc);
        if (!p)
            return -ENOMEM;
        p->has_events = 1;
        if (t->pid == s->pid && s->rank >= 0 && p->rank < 0) {
            p->rank = s->rank;
            p->world_size = s->world_size;
        } else if (t->pid != s->pid && p->worker_id >= 0 && p->ppid < 0) {
            p->ppid = s->pid; /* a data-loader worker of the writer's process */
        }
    }
    return rc == 0 ? merge_threads(im) : rc;
}

static int finish(struct sagemaker_import *im)
{
    int rc = 0;
    for (uint32_t i = 0; i < im->nthreads && rc == 0; i++)
        rc = flush_open(im, &im->threads[i], 0);
    if (rc == 0)
        rc = resolve_processes(im);
    if (rc < 0)
        return rc;
    if (!(im->order = malloc((im->nnodes + 1) * sizeof(*im->order))))
        return -ENOMEM;
    for (uint32_t i = 0; i < im->nnodes; i++)
        im->order[i] = i;
    sort_im = im;
    qsort(im->order, im->nnodes, sizeof(*im->order), cmp_node_order);
    sort_im = NULL;

    for (uint32_t i = 0; i < im->nseries; i++)
        series_sort(im, &im->series[i]);
    for (uint32_t k = 0; k < im->nnodes && rc == 0; k++) {
        rc = derive_mean(im, k, metric_name(METRIC_CPU_UTIL), &im->info[k].snapshots,
                         &im->info[k].interval_ns);
        if (rc == 0)
            rc = derive_mean(im, k, metric_name(METRIC_CPU_IOWAIT), NULL, NULL);
    }
    if (rc == 0)
        rc = estimate_offsets(im);
    if (rc < 0)
        return rc;
    for (uint32_t k = 0; k < im->nnodes; k++)
        if (im->nodes[k].offset_ns)
            shift_node(im, k, im->nodes[k].offset_ns);

    im->start_ns = INT64_MAX;
    im->end_ns = INT64_MIN;
    for (uint32_t i = 0; i < im->nseries; i++) {
        const struct sm_series *s = &im->series[i];
        if (!s->n)
            continue;
        im->counts.points += s->n;
        im->counts.series++;
        if (s->p[0].ts_ns < im->start_ns)
            im->start_ns = s->p[0].ts_ns;
        if (s->p[s->n - 1].ts_ns > im->end_ns)
            im->end_ns = s->p[s->n - 1].ts_ns;
    }
    for (uint32_t i = 0; i < im->nthreads && rc == 0; i++) {
        struct sm_thread *t = &im->threads[i];
        if (t->n > 1)
            qsort(t->ev, t->n, sizeof(*t->ev), cmp_event);
        rc = assign_steps(im, t);
        for (uint32_t j = 0; j < t->n; j++) {
            const struct sm_event *e = &t->ev[j];
            im->counts.events++;
            im->counts.steps += is_step_event(im, e);
            if (e->ts_ns < im->start_ns)
                im->start_ns = e->ts_ns;
            if (event_end(e) > im->end_ns)
                im->end_ns = event_end(e);
        }
    }
    run_start_from_traces(im);
    return rc;
}

#define TF_ONLY                                                                                    \
    "it holds only TensorFlow profiler output (framework/tensorflow/), which strobe does not "     \
    "import: it reads system/incremental/ and framework/pevents/"

/* Whether dir holds what smdebug's TensorFlow profiling writes beside its
 * own files (framework/tensorflow/detailed_profiling, its python stats):
 * a directory with only that gets a message that says so. */
static int tensorflow_only(const char *dir)
{
    struct strbuf p;
    strbuf_init(&p);
    strbuf_addf(&p, "%s/framework/tensorflow", dir);
    struct stat st;
    int found = stat(p.buf, &st) == 0 && S_ISDIR(st.st_mode);
    strbuf_release(&p);
    return found;
}

int sagemaker_import_read(const char *dir, struct sagemaker_import **out, struct strbuf *err)
{
    struct stat st;
    if (stat(dir, &st) < 0) {
        strbuf_addf(err, "%s", strerror(errno));
        return -errno;
    }
    if (!S_ISDIR(st.st_mode)) {
        strbuf_adds(err, "not a directory");
        return -ENOTDIR;
    }
    struct strbuf sys, fw;
    strbuf_init(&sys);
    strbuf_init(&fw);
    strbuf_addf(&sys, "%s/system/incremental", dir);
    strbuf_addf(&fw, "%s/framework/pevents", dir);
    struct stat a, b;
    int have_sys = stat(sys.buf, &a) == 0 && S_ISDIR(a.st_mode);
    int have_fw = stat(fw.buf, &b) == 0 && S_ISDIR(b.st_mode);
    int rc = 0;
    struct sagemaker_import *im = NULL;
    if (!have_sys && !have_fw) {
        if (tensorflow_only(dir))
            strbuf_adds(err, TF_ONLY);
        else
            strbuf_adds(err, "no SageMaker profiler output (system/ or framework/) found");
        rc = -ENOENT;
        goto out;
    }
    if (!(im = calloc(1, sizeof(*im)))) {
        rc = -ENOMEM;
        goto fail;
    }
    json_doc_init(&im->doc);
    im->names.max = EVENT_NAMES_MAX;
    if (have_sys)
        rc = walk(im, sys.buf, 1, want_system, system_file);
    if (rc == 0 && have_fw)
        rc = walk(im, fw.buf, 1, want_trace, trace_file);
    if (rc == 0)
        rc = finish(im);
    if (rc < 0)
        goto fail;
    if (!im->counts.points && !im->counts.events) {
        strbuf_adds(err,
                    tensorflow_only(dir) ? TF_ONLY : "no system metrics or framework events in it");
        rc = -ENODATA;
        goto fail;
    }
    json_doc_release(&im->doc);
    *out = im;
    goto out;
fail:
    if (!err->len)
        strbuf_adds(err, rc == -E2BIG ? "too many nodes, series or threads" : strerror(-rc));
    sagemaker_import_free(im);
out:
    strbuf_release(&sys);
    strbuf_release(&fw);
    return rc;
}

/* ---- storing ----------------------------------------------------------------- */

int64_t sagemaker_median_i64(int64_t *v, uint64_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    if (n % 2)
        return v[n / 2];
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    return a + (int64_t)(((uint64_t)b - (uint64_t)a) / 2); /* b >= a */
}

static int store_series(struct sagemaker_import *im, struct store *s, const char *run_id,
                        const struct sm_series *sr)
{
    struct strbuf labels;
    strbuf_init(&labels);
    int rc = 0;
    if (im->nnodes > 1) /* node=<id> among the labels, escaped, in key order */
        rc = labels_insert(sr->labels, "node", im->nodes[sr->node].id, &labels);
    else
        strbuf_adds(&labels, sr->labels);
    int64_t id;
    if (rc == 0)
        rc = s->ops->series_insert(s, run_id, sr->name, labels.buf, sr->unit, sr->meta, &id);
    strbuf_release(&labels);
    /* blocks exactly as the recorder seals them: at SERIES_BLOCK_POINTS
     * points, or when the next point does not fit */
    uint8_t buf[SERIES_BLOCK_BYTES];
    struct block_enc e;
    block_enc_init(&e, buf, sizeof(buf));
    for (uint32_t i = 0; rc == 0 && i < sr->n; i++) {
        if (e.st.count >= SERIES_BLOCK_POINTS) {
            rc = s->ops->block_upsert(s, id, &e.st, buf, block_enc_size(&e));
            block_enc_init(&e, buf, sizeof(buf));
            if (rc < 0)
                break;
        }
        int ok = block_enc_append(&e, sr->p[i].ts_ns, sr->p[i].value);
        if (ok == -ENOSPC) {
            rc = s->ops->block_upsert(s, id, &e.st, buf, block_enc_size(&e));
            block_enc_init(&e, buf, sizeof(buf));
            if (rc == 0)
                block_enc_append(&e, sr->p[i].ts_ns, sr->p[i].value);
        }
    }
    if (rc == 0 && e.st.count)
        rc = s->ops->block_upsert(s, id, &e.st, buf, block_enc_size(&e));
    return rc;
}

/* pids are per node in the files; the store keys processes by pid, so a pid
 * another node already has moves up by multiples of 10^9 */
static void assign_pids(struct sagemaker_import *im)
{
    uint32_t done = 0;
    uint32_t *assigned = malloc((im->nprocs + 1) * sizeof(*assigned));
    for (uint32_t k = 0; k < im->nnodes; k++)
        for (uint32_t i = 0; i < im->nprocs; i++) {
            struct sm_proc *p = &im->procs[i];
            if (p->node != im->order[k] || !p->has_events)
                continue;
            p->store_pid = p->pid;
            for (int again = 1; again && assigned && im->nnodes > 1;) {
                again = 0;
                for (uint32_t j = 0; j < done; j++)
                    if (im->procs[assigned[j]].store_pid == p->store_pid) {
                        p->store_pid += 1000000000;
                        again = 1;
                        break;
                    }
            }
            if (assigned)
                assigned[done++] = i;
        }
    free(assigned);
}

static int store_processes(struct sagemaker_import *im, struct store *s, const char *run_id)
{
    int rc = 0;
    assign_pids(im);
    for (uint32_t i = 0; i < im->nprocs && rc == 0; i++) {
        const struct sm_proc *p = &im->procs[i];
        if (!p->has_events)
            continue;
        struct strbuf comm;
        strbuf_init(&comm);
        if (im->nnodes > 1)
            strbuf_addf(&comm, "%s%s%s", p->name ? p->name : "", p->name ? "@" : "",
                        im->nodes[p->node].id);
        else if (p->name)
            strbuf_adds(&comm, p->name);
        struct process_record r = {
            .pid = p->store_pid,
            .ppid = p->ppid,
            .comm = comm.len ? comm.buf : NULL,
            .role = p->worker_id >= 0 ? "dataloader"
                    : p->rank >= 0    ? "rank"
                                      : "main",
            .rank = p->rank,
            .local_rank = p->local_rank,
            .world_size = p->world_size,
            .worker_id = p->worker_id,
        };
        rc = s->ops->process_upsert(s, run_id, &r);
        strbuf_release(&comm);
    }
    return rc;
}

static int store_events(struct sagemaker_import *im, struct store *s, const char *run_id)
{
    int rc = 0;
    for (uint32_t i = 0; i < im->names.n && rc == 0; i++)
        rc = s->ops->event_name_insert(s, run_id, (int64_t)i + 1, im->names.s[i]);
    if (rc == 0)
        rc = store_processes(im, s, run_id);
    if (rc < 0 || !im->nthreads)
        return rc;
    struct event_block_writer w;
    struct event *ev = malloc(EVENT_BLOCK_EVENTS * sizeof(*ev));
    if (event_block_writer_init(&w) < 0 || !ev) {
        event_block_writer_release(&w);
        free(ev);
        strbuf_reset(&s->err);
        strbuf_adds(&s->err, strerror(ENOMEM));
        return -ENOMEM;
    }
    for (uint32_t t = 0; t < im->nthreads && rc == 0; t++) {
        const struct sm_thread *th = &im->threads[t];
        for (uint32_t off = 0; off < th->n && rc == 0; off += EVENT_BLOCK_EVENTS) {
            uint32_t n = th->n - off < EVENT_BLOCK_EVENTS ? th->n - off : EVENT_BLOCK_EVENTS;
            for (uint32_t j = 0; j < n; j++) {
                const struct sm_event *e = &th->ev[off + j];
                ev[j] = (struct event){e->ts_ns, e->value, e->name, e->step, e->kind};
            }
            rc = event_block_writer_store(&w, s, run_id, im->procs[th->proc].store_pid, th->tid, ev,
                                          n);
        }
    }
    event_block_writer_release(&w);
    free(ev);
    return rc;
}

int sagemaker_import_store(struct sagemaker_import *im, struct store *s, struct run_record *r)
{
    runinfo_new_id(r->id);
    struct strbuf host;
    strbuf_init(&host);
    uint64_t samples = 0;
    int64_t interval_ns = 0;
    int cpu_count = 0;
    for (uint32_t k = 0; k < im->nnodes; k++) {
        uint32_t node = im->order[k];
        const struct sm_node_info *in = &im->info[node];
        strbuf_addf(&host, "%s%s", k ? "," : "", im->nodes[node].id);
        if (in->snapshots > samples)
            samples = in->snapshots;
        if (!interval_ns && in->interval_ns > 0)
            interval_ns = in->interval_ns;
        int cores = 0; /* the node's cpu.util{core=N} series */
        for (uint32_t i = 0; i < im->nseries; i++)
            cores += im->series[i].node == node && im->series[i].n &&
                     strcmp(im->series[i].name, metric_name(METRIC_CPU_UTIL)) == 0 &&
                     strncmp(im->series[i].labels, "core=", 5) == 0;
        if (cores > cpu_count)
            cpu_count = cores;
    }
    free(r->host);
    r->host = strbuf_detach(&host);
    if (!r->command_json)
        r->command_json = strdup("[]");
    if (!r->strobe_version)
        r->strobe_version = strdup(STROBE_VERSION);
    snprintf(r->status, sizeof(r->status), "%s", RUN_FINISHED);
    r->exit_code = 0;
    r->signal = 0;
    r->start_ns = im->start_ns;
    r->end_ns = r->last_ns = im->end_ns;
    r->cpu_count = cpu_count;
    r->interval_ns = interval_ns;
    r->samples = (int64_t)samples;
    r->points = (int64_t)im->counts.points;
    r->events = (int64_t)im->counts.events;
    r->events_invalid = (int64_t)im->counts.events_bad;
    if (!r->host || !r->command_json || !r->strobe_version) {
        strbuf_reset(&s->err);
        strbuf_adds(&s->err, strerror(ENOMEM));
        return -ENOMEM;
    }

    int rc = s->ops->begin(s);
    if (rc == 0)
        rc = s->ops->run_insert(s, r);
    for (uint32_t i = 0; rc == 0 && i < im->nseries; i++)
        if (im->series[i].n)
            rc = store_series(im, s, r->id, &im->series[i]);
    if (rc == 0)
        rc = store_events(im, s, r->id);
    if (rc == 0)
        rc = s->ops->run_update(s, r);
    if (rc == 0)
        rc = s->ops->commit(s);
    if (rc < 0)
        s->ops->rollback(s);
    return rc;
}

/* ---- the rest of the interface -------------------------------------------------- */

const struct sagemaker_counts *sagemaker_import_counts(const struct sagemaker_import *im)
{
    return &im->counts;
}

const struct sagemaker_node *sagemaker_import_nodes(const struct sagemaker_import *im, uint32_t *n)
{
    *n = im->nnodes;
    return im->nodes;
}

void sagemaker_import_summary(const struct sagemaker_import *im, const struct run_record *r,
                              struct strbuf *o)
{
    const struct sagemaker_counts *c = &im->counts;
    strbuf_addf(o, "imported run %s '%s': %u node%s (", r->id, r->name, im->nnodes,
                im->nnodes == 1 ? "" : "s");
    for (uint32_t k = 0; k < im->nnodes; k++)
        strbuf_addf(o, "%s%s", k ? ", " : "", im->nodes[im->order[k]].id);
    strbuf_addf(o,
                "), %llu series, %llu points, %llu steps, %llu events; skipped %llu lines "
                "(%llu cut short, %llu garbled), %llu duplicate points, %llu bad events",
                (unsigned long long)c->series, (unsigned long long)c->points,
                (unsigned long long)c->steps, (unsigned long long)c->events,
                (unsigned long long)(c->lines_cut + c->lines_garbled),
                (unsigned long long)c->lines_cut, (unsigned long long)c->lines_garbled,
                (unsigned long long)c->duplicates, (unsigned long long)c->events_bad);
    if (c->values_nonfinite)
        strbuf_addf(o, ", %llu values not a number", (unsigned long long)c->values_nonfinite);
    if (c->files_unreadable)
        strbuf_addf(o, ", %llu files unreadable", (unsigned long long)c->files_unreadable);
    strbuf_adds(o, "; clock offsets: ");
    if (im->nnodes < 2) {
        strbuf_adds(o, "none (one node)");
        return;
    }
    int any = 0;
    for (uint32_t k = 0; k < im->nnodes; k++)
        any |= im->nodes[k].reference;
    if (!any) {
        strbuf_adds(o, "not estimated (no numbered steps)");
        return;
    }
    for (uint32_t k = 0; k < im->nnodes; k++) {
        const struct sagemaker_node *n = &im->nodes[im->order[k]];
        strbuf_addf(o, "%s%s ", k ? ", " : "", n->id);
        if (n->reference)
            strbuf_adds(o, "reference");
        else if (n->common_steps) {
            int64_t a = n->offset_ns < 0 ? -n->offset_ns : n->offset_ns;
            strbuf_addf(o, "%c%lld.%06llds (%u steps)", n->offset_ns < 0 ? '-' : '+',
                        (long long)(a / 1000000000), (long long)(a % 1000000000 / 1000),
                        n->common_steps);
        } else
            strbuf_adds(o, "not estimated (no common steps)");
    }
}

void sagemaker_import_free(struct sagemaker_import *im)
{
    if (!im)
        return;
    for (uint32_t i = 0; i < im->nnodes; i++)
        free(im->nodes[i].id);
    free(im->nodes);
    free(im->info);
    free(im->order);
    for (uint32_t i = 0; i < im->nseries; i++) {
        free(im->series[i].name);
        free(im->series[i].labels);
        free(im->series[i].meta);
        free(im->series[i].p);
    }
    free(im->series);
    free(im->series_slots);
    for (uint32_t i = 0; i < im->nthreads; i++) {
        free(im->threads[i].ev);
        free(im->threads[i].open);
    }
    free(im->threads);
    free(im->thread_slots);
    for (uint32_t i = 0; i < im->nprocs; i++)
        free(im->procs[i].name);
    free(im->procs);
    free(im->streams);
    for (uint32_t i = 0; i < im->nlanes; i++)
        free(im->lanes[i].name);
    free(im->lanes);
    free(im->phases);
    strtab_release(&im->names);
    free(im->raw);
    json_doc_release(&im->doc);
    free(im);
}
