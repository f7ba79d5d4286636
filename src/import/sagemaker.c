/*
 * strobe import sagemaker: SageMaker Debugger profiler output into a run.
 * The layout and the mapping are in docs/import.md; what SageMaker writes is
 * summarised in ../shared/reference/rules.md ("SageMaker's on-disk format").
 */
#include "import/sagemaker.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/version.h"
#include "import/json.h"
#include "import/sagemaker_format.h"
#include "record/events.h" /* EVENT_BLOCK_EVENTS, EVENT_NAMES_MAX */
#include "record/runinfo.h"
#include "sample/series.h" /* SERIES_BLOCK_BYTES, SERIES_BLOCK_POINTS */

#define OPEN_MAX 256 /* B events open on one thread at once */

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
#define EVF_MODE_SHIFT 1    /* 2 bits: 0 TRAIN, 1 EVAL, 2 GLOBAL, 3 PREDICT */

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

struct sm_thread {
    uint32_t node;
    uint32_t proc; /* index in procs */
    int64_t pid, tid;
    struct sm_event *ev;
    uint32_t n, cap;
    struct sm_open *open;
    uint32_t depth, open_cap;
};

struct sm_proc {
    uint32_t node;
    int64_t pid;       /* as the files say */
    int64_t store_pid; /* unique over the run */
    char *name;        /* process_name metadata, or NULL */
    int64_t ppid, rank, local_rank, world_size, worker_id;
    int has_events;
};

/* One trace element, held until the file's start time is known. */
struct sm_raw {
    int64_t ts_ns; /* relative to the file's start time */
    int64_t value; /* X: duration ns; C: the double's bits */
    int64_t pid, tid;
    uint32_t name;
    uint32_t step;
    char ph;
    uint8_t flags;
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

    char **names; /* names[id - 1] */
    uint32_t nnames, names_cap;
    uint32_t *name_slots;
    uint32_t name_nslots;
    uint32_t step_name; /* id of "step", 0 until seen */

    struct sm_raw *raw; /* one trace file's elements */
    uint32_t nraw, raw_cap;

    struct json_doc doc;
    struct sagemaker_counts counts;
    uint32_t seq;
    uint32_t last_node; /* node_index's guess */
    int64_t start_ns, end_ns;
};

/* ---- small helpers ---------------------------------------------------------- */

static uint32_t fnv(uint32_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

static uint32_t fnv_str(uint32_t h, const char *s)
{
    return fnv(h, s, strlen(s) + 1);
}

/* a - b, saturating at the ends of int64 (hostile times must not overflow) */
static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_sub_overflow(a, b, &r))
        return r;
    return b < 0 ? INT64_MAX : INT64_MIN;
}

/* Grow an open-addressing table to twice its size; rehash calls back for
 * each entry's hash. */
typedef uint32_t hash_fn(const struct sagemaker_import *im, uint32_t index);

static int slots_grow(const struct sagemaker_import *im, uint32_t **slots, uint32_t *nslots,
                      uint32_t count, hash_fn *hash)
{
    if ((count + 1) * 2 <= *nslots)
        return 0;
    uint32_t n = *nslots ? *nslots * 2 : 256;
    uint32_t *fresh = calloc(n, sizeof(*fresh));
    if (!fresh)
        return -ENOMEM;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t h = hash(im, i) & (n - 1);
        while (fresh[h])
            h = (h + 1) & (n - 1);
        fresh[h] = i + 1;
    }
    free(*slots);
    *slots = fresh;
    *nslots = n;
    return 0;
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

static int read_file(const char *path, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        int rc = S_ISREG(st.st_mode) ? -errno : -EISDIR;
        close(fd);
        return rc;
    }
    if (st.st_size > SM_FILE_MAX) {
        close(fd);
        return -EFBIG;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return -ENOMEM;
    }
    for (;;) {
        if (n + 1 >= cap) { /* the file grew while we read it */
            if (cap > SM_FILE_MAX)
                break;
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                close(fd);
                return -ENOMEM;
            }
            buf = p;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int rc = -errno;
            free(buf);
            close(fd);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* ---- nodes ------------------------------------------------------------------ */

static int node_index(struct sagemaker_import *im, const char *id, uint32_t *out)
{
    if (*out < im->nnodes && strcmp(im->nodes[*out].id, id) == 0)
        return 0; /* the node of the previous line, usually */
    for (uint32_t i = 0; i < im->nnodes; i++)
        if (strcmp(im->nodes[i].id, id) == 0) {
            *out = i;
            return 0;
        }
    if (im->nnodes >= SM_NODES_MAX)
        return -E2BIG;
    if (array_grow((void **)&im->nodes, &im->nodes_cap, im->nnodes + 1, sizeof(*im->nodes), 8) <
            0 ||
        array_grow((void **)&im->info, &im->info_cap, im->nnodes + 1, sizeof(*im->info), 8) < 0)
        return -ENOMEM;
    struct sagemaker_node *n = &im->nodes[im->nnodes];
    memset(n, 0, sizeof(*n));
    memset(&im->info[im->nnodes], 0, sizeof(im->info[0]));
    if (!(n->id = strdup(id)))
        return -ENOMEM;
    sanitize(n->id);
    *out = im->nnodes++;
    return 0;
}

/* ---- names ------------------------------------------------------------------ */

static uint32_t name_hash(const struct sagemaker_import *im, uint32_t i)
{
    return fnv_str(2166136261u, im->names[i]);
}

/* The run-wide id of name (1-based), defining it on first sight; 0 when
 * the table is full or memory ran out. */
static uint32_t intern(struct sagemaker_import *im, const char *name)
{
    if (slots_grow(im, &im->name_slots, &im->name_nslots, im->nnames, name_hash) < 0)
        return 0;
    uint32_t h = fnv_str(2166136261u, name) & (im->name_nslots - 1);
    for (; im->name_slots[h]; h = (h + 1) & (im->name_nslots - 1))
        if (strcmp(im->names[im->name_slots[h] - 1], name) == 0)
            return im->name_slots[h];
    if (im->nnames >= EVENT_NAMES_MAX ||
        array_grow((void **)&im->names, &im->names_cap, im->nnames + 1, sizeof(*im->names), 64) < 0)
        return 0;
    char *copy = strdup(name);
    if (!copy)
        return 0;
    im->names[im->nnames++] = copy;
    im->name_slots[h] = im->nnames;
    if (strcmp(copy, "step") == 0)
        im->step_name = im->nnames;
    return im->nnames;
}

/* ---- series ----------------------------------------------------------------- */

static uint32_t series_key_hash(uint32_t node, const char *name, const char *labels)
{
    uint32_t h = fnv(2166136261u, &node, sizeof(node));
    return fnv_str(fnv_str(h, name), labels);
}

static uint32_t series_hash(const struct sagemaker_import *im, uint32_t i)
{
    const struct sm_series *s = &im->series[i];
    return series_key_hash(s->node, s->name, s->labels);
}

static int series_find(struct sagemaker_import *im, uint32_t node, const char *name,
                       const char *labels, const char *unit, const char *meta, uint32_t *out)
{
    if (slots_grow(im, &im->series_slots, &im->series_nslots, im->nseries, series_hash) < 0)
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

static int system_record(struct sagemaker_import *im, uint32_t node, const char *type,
                         const char *name, const char *dim, int64_t ts_ns, double value)
{
    char mname[256], labels[256];
    const char *unit = "pct";
    struct strbuf meta;
    strbuf_init(&meta);
    long i;
    labels[0] = '\0';
    if (strcmp(dim, "CPUUtilization") == 0 && (i = indexed(name, "cpu")) >= 0) {
        snprintf(mname, sizeof(mname), "cpu.util");
        snprintf(labels, sizeof(labels), "core=%ld", i);
    } else if (strcmp(dim, "I/OWaitPercentage") == 0) {
        snprintf(mname, sizeof(mname), "cpu.iowait");
        if ((i = indexed(name, "cpu")) >= 0)
            snprintf(labels, sizeof(labels), "core=%ld", i);
    } else if (strcmp(dim, "GPUUtilization") == 0 && (i = indexed(name, "gpu")) >= 0) {
        snprintf(mname, sizeof(mname), "gpu.util");
        snprintf(labels, sizeof(labels), "gpu=%ld", i);
    } else if (strcmp(dim, "GPUMemoryUtilization") == 0 && (i = indexed(name, "gpu")) >= 0) {
        snprintf(mname, sizeof(mname), "gpu.mem_util");
        snprintf(labels, sizeof(labels), "gpu=%ld", i);
    } else if (strcmp(dim, "MemoryUsedPercent") == 0 || strcmp(name, "MemoryUsedPercent") == 0) {
        snprintf(mname, sizeof(mname), "mem.used_pct");
    } else {
        /* kept under its own names rather than dropped */
        if (*dim)
            snprintf(mname, sizeof(mname), "sagemaker.%s.%s", *type ? type : "other", dim);
        else
            snprintf(mname, sizeof(mname), "sagemaker.%s", *type ? type : "other");
        if (*name)
            snprintf(labels, sizeof(labels), "name=%s", name);
        sanitize(mname);
        sanitize(labels + (*name ? 5 : 0));
        unit = guess_unit(name, dim);
        strbuf_adds(&meta, "{\"Type\":");
        strbuf_add_json_str(&meta, type);
        strbuf_adds(&meta, ",\"Name\":");
        strbuf_add_json_str(&meta, name);
        strbuf_adds(&meta, ",\"Dimension\":");
        strbuf_add_json_str(&meta, dim);
        strbuf_addch(&meta, '}');
    }
    uint32_t index;
    int rc = series_find(im, node, mname, labels, unit, meta.len ? meta.buf : NULL, &index);
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
    if (json_num(json_get(v, "Value"), &value) < 0 ||
        json_scaled_i64(json_get(v, "Timestamp"), 9, &ts_ns) < 0 || !plausible_time(ts_ns) ||
        (!(name && *name) && !(dim && *dim))) {
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

static int system_file(struct sagemaker_import *im, const char *path, const char *base)
{
    char *buf;
    size_t len;
    int rc = read_file(path, &buf, &len);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        log_warn("cannot read '%s': %s; skipped", path, strerror(-rc));
        im->counts.files_unreadable++;
        return 0;
    }
    im->counts.system_files++;
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
    for (size_t pos = 0; pos < len && rc == 0;) {
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

/* ---- framework events -------------------------------------------------------- */

static uint32_t thread_key_hash(uint32_t node, int64_t pid, int64_t tid)
{
    uint32_t h = fnv(2166136261u, &node, sizeof(node));
    h = fnv(h, &pid, sizeof(pid));
    return fnv(h, &tid, sizeof(tid));
}

static uint32_t thread_hash(const struct sagemaker_import *im, uint32_t i)
{
    const struct sm_thread *t = &im->threads[i];
    return thread_key_hash(t->node, t->pid, t->tid);
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

/* NULL with *rc -ENOMEM, or -E2BIG past the limits on threads and processes */
static struct sm_thread *thread_get(struct sagemaker_import *im, uint32_t node, int64_t pid,
                                    int64_t tid, int *rc)
{
    *rc = -ENOMEM;
    if (slots_grow(im, &im->thread_slots, &im->thread_nslots, im->nthreads, thread_hash) < 0)
        return NULL;
    uint32_t mask = im->thread_nslots - 1;
    uint32_t h = thread_key_hash(node, pid, tid) & mask;
    for (; im->thread_slots[h]; h = (h + 1) & mask) {
        struct sm_thread *t = &im->threads[im->thread_slots[h] - 1];
        if (t->node == node && t->pid == pid && t->tid == tid)
            return t;
    }
    if (im->nthreads >= SM_THREADS_MAX) {
        *rc = -E2BIG;
        return NULL;
    }
    uint32_t proc;
    struct sm_proc *p = proc_get(im, node, pid, &proc);
    if (!p && im->nprocs >= SM_PROCS_MAX)
        *rc = -E2BIG;
    if (!p || array_grow((void **)&im->threads, &im->threads_cap, im->nthreads + 1,
                         sizeof(*im->threads), 16) < 0)
        return NULL;
    p->has_events = 1;
    struct sm_thread *t = &im->threads[im->nthreads];
    memset(t, 0, sizeof(*t));
    t->node = node;
    t->proc = proc;
    t->pid = pid;
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

/* The strobe name of a trace event's name: steps are "step", what clearly
 * is a phase gets its phase name (analyze/steps.h), the rest stays. */
static const char *const strobe_native[] = {"step",     "data",      "forward",
                                            "backward", "optimizer", "dataloader.worker"};

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
    {"dataloader", "data"},
    {"data_loader", "data"},
    {"backward", "backward"},
    {"forward", "forward"},
    {"optimizer", "optimizer"},
};

static const char *const step_modes[] = {"TRAIN", "EVAL", "GLOBAL", "PREDICT"};

/* mode: set for a step ("Step:ModeKeys.TRAIN" ...), else -1. */
static const char *strobe_name(const char *name, int *mode)
{
    *mode = -1;
    if (strncmp(name, "Step:ModeKeys.", 14) == 0)
        for (int m = 0; m < 4; m++)
            if (strcmp(name + 14, step_modes[m]) == 0) {
                *mode = m;
                return "step";
            }
    if (strncmp(name, "comm:", 5) == 0)
        return name;
    for (size_t i = 0; i < sizeof(strobe_native) / sizeof(strobe_native[0]); i++)
        if (strcmp(name, strobe_native[i]) == 0)
            return name;
    for (size_t i = 0; i < sizeof(phase_map) / sizeof(phase_map[0]); i++)
        if (strcasestr(name, phase_map[i].needle))
            return phase_map[i].name;
    return name;
}

/* An integer field (pid, tid): a number or a numeric string; 0 otherwise. */
static int64_t int_field(const struct json *v)
{
    int64_t x;
    return json_scaled_i64(v, 0, &x) == 0 ? x : 0;
}

struct trace_file {
    uint32_t node;
    int64_t rank; /* from the file name, -1 */
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

/* A process's attributes from its process_name metadata (export writes
 * them; SageMaker writes only the name). */
static void process_meta(struct sagemaker_import *im, struct trace_file *f, int64_t pid,
                         const struct json *args)
{
    const char *pname = json_str(json_get(args, "name"));
    static const char *const keys[] = {"ppid", "rank", "local_rank", "world_size", "worker_id"};
    int any = pname && *pname;
    for (size_t k = 0; k < 5 && !any; k++)
        any = json_get(args, keys[k]) != NULL;
    if (!any)
        return;
    struct sm_proc *p = proc_get(im, f->node, pid, NULL);
    if (!p)
        return;
    if (pname && *pname && !p->name && (p->name = strndup(pname, SM_COMM_MAX)))
        sanitize(p->name);
    int64_t *fields[] = {&p->ppid, &p->rank, &p->local_rank, &p->world_size, &p->worker_id};
    for (size_t k = 0; k < 5; k++) {
        int64_t x;
        if (json_scaled_i64(json_get(args, keys[k]), 0, &x) == 0 && x >= 0 && x < (1LL << 31))
            *fields[k] = x;
    }
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
    int64_t pid = int_field(json_get(v, "pid")), tid = int_field(json_get(v, "tid"));
    if (*ph == 'M') {
        const char *what = json_str(json_get(v, "name"));
        if (what && strcmp(what, "process_name") == 0)
            process_meta(im, f, pid, args);
        return 0;
    }
    if (!strchr("XBEiIRC", *ph)) {
        im->counts.events_ignored++;
        return 0;
    }
    struct sm_raw r = {.pid = pid, .tid = tid, .ph = *ph};
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
    if (*ph == 'C') {
        /* a counter per numeric argument: "name" for "value", else name.key */
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
            memcpy(&r.value, &x, sizeof(x));
            if (!(r.name = intern(im, cname)))
                return -ENOMEM;
            int rc = raw_push(im, &r);
            if (rc < 0)
                return rc;
        }
        return 0;
    }
    if ((*ph == 'i' || *ph == 'I') && strcmp(name, "strobe.step") == 0) {
        /* strobe's step-begin marker, as export writes it */
        if (step_num_of(json_get(args, "step_num"), &r.value) < 0) {
            im->counts.events_bad++;
            return 0;
        }
        r.ph = 'S';
        r.step = (uint32_t)r.value;
        return raw_push(im, &r);
    }
    int mode;
    const char *mapped = strobe_name(name, &mode);
    if (mode >= 0) {
        int64_t n;
        r.flags = (uint8_t)(mode << EVF_MODE_SHIFT);
        if (step_num_of(json_get(args, "step_num"), &n) == 0) {
            r.step = (uint32_t)n;
            r.flags |= EVF_STEP_NUM;
        }
    }
    if (!(r.name = intern(im, mapped)))
        return -ENOMEM;
    return raw_push(im, &r);
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
        struct sm_thread *t = thread_get(im, f->node, r->pid, r->tid, &why);
        if (!t && why == -E2BIG) {
            im->counts.events_bad++;
            continue;
        }
        if (!t)
            return why;
        if (f->rank >= 0 && im->procs[t->proc].rank < 0)
            im->procs[t->proc].rank = f->rank;
        switch (r->ph) {
        case 'X':
            rc = thread_push(im, t, ts, r->value > 0 ? r->value : 0, r->name, r->step,
                             STROBE_EV_COMPLETE, r->flags);
            break;
        case 'B':
            if (t->depth >= OPEN_MAX) {
                rc = thread_push(im, t, ts, 0, r->name, r->step, STROBE_EV_SPAN_BEGIN, 0);
                break;
            }
            if (array_grow((void **)&t->open, &t->open_cap, t->depth + 1, sizeof(*t->open), 8) < 0)
                return -ENOMEM;
            t->open[t->depth++] = (struct sm_open){ts, r->name, r->step, r->flags};
            break;
        case 'E': {
            /* the innermost open span of that name (or the innermost, for
             * an E without a name) */
            const char *n = im->names[r->name - 1];
            uint32_t j = t->depth;
            while (j > 0 && *n && t->open[j - 1].name != r->name)
                j--;
            if (!j) { /* an end without its begin */
                rc = thread_push(im, t, ts, 0, r->name, r->step, STROBE_EV_SPAN_END, 0);
                break;
            }
            rc = flush_open(im, t, j);
            if (rc < 0)
                break;
            struct sm_open o = t->open[--t->depth];
            if (!(o.flags & EVF_STEP_NUM) && (r->flags & EVF_STEP_NUM)) {
                o.step = r->step;
                o.flags |= EVF_STEP_NUM;
            }
            rc = thread_push(im, t, o.ts_ns, ts > o.ts_ns ? sat_sub(ts, o.ts_ns) : 0, o.name,
                             o.step, STROBE_EV_COMPLETE, o.flags);
            break;
        }
        case 'C':
            rc = thread_push(im, t, ts, r->value, r->name, 0, STROBE_EV_COUNTER, 0);
            break;
        case 'S':
            rc = thread_push(im, t, ts, r->value, 0, r->step, STROBE_EV_STEP, 0);
            break;
        default: /* i, I, R */
            rc = thread_push(im, t, ts, 0, r->name, 0, STROBE_EV_INSTANT, 0);
        }
    }
    return rc;
}

/* <end-us>_<node id>_<kind>.json; the node id may carry a rank in front of
 * a node already known from the system metrics ("0_algo-1"). */
static int trace_node(struct sagemaker_import *im, const char *base, struct trace_file *f)
{
    static const char *const kinds[] = {"_pythontimeline.json", "_model_timeline.json",
                                        "_horovod_timeline.json"};
    char id[128];
    const char *us = strchr(base, '_');
    size_t kn = 0;
    for (size_t k = 0; k < 3; k++)
        if (ends_with(base, kinds[k]))
            kn = strlen(kinds[k]);
    f->rank = -1;
    if (!us || !kn || (size_t)(us + 1 - base) + kn > strlen(base) ||
        strlen(base) - kn - (size_t)(us + 1 - base) >= sizeof(id)) {
        snprintf(id, sizeof(id), "%s", SM_DEFAULT_NODE);
    } else {
        size_t n = strlen(base) - kn - (size_t)(us + 1 - base);
        memcpy(id, us + 1, n);
        id[n] = '\0';
        if (!*id)
            snprintf(id, sizeof(id), "%s", SM_DEFAULT_NODE);
    }
    for (uint32_t i = 0; i < im->nnodes; i++) {
        const char *known = im->nodes[i].id;
        size_t a = strlen(id), b = strlen(known);
        if (a > b + 1 && strcmp(id + a - b, known) == 0 &&
            (id[a - b - 1] == '_' || id[a - b - 1] == '-')) {
            long r = 0;
            size_t k = 0;
            for (; k < a - b - 1 && isdigit((unsigned char)id[k]) && r < 1000000; k++)
                r = r * 10 + (id[k] - '0');
            if (k == a - b - 1 && k > 0) {
                f->rank = r;
                snprintf(id, sizeof(id), "%s", known);
                break;
            }
        }
    }
    return node_index(im, id, &f->node);
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
    size_t len;
    rc = read_file(path, &buf, &len);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0) {
        log_warn("cannot read '%s': %s; skipped", path, strerror(-rc));
        im->counts.files_unreadable++;
        return 0;
    }
    im->counts.trace_files++;
    im->nraw = 0;
    size_t pos = 0;
    rc = json_array_open(buf, len, &pos);
    if (rc == -EBADMSG) {
        /* the object form, {"traceEvents": [...]}: read whole */
        struct json *v;
        json_doc_reset(&im->doc);
        const struct json *evs = NULL;
        if ((rc = json_parse(&im->doc, buf, len, &v)) == 0)
            evs = json_get(v, "traceEvents");
        if (rc == -ENOMEM) {
            free(buf);
            return rc;
        }
        if (!evs || evs->type != JSON_ARRAY) {
            log_warn("'%s' is not a trace-event file; skipped", path);
            im->counts.files_unreadable++;
            free(buf);
            return 0;
        }
        for (const struct json *e = evs->child; e && rc == 0; e = e->next)
            rc = trace_element(im, &f, e);
    } else if (rc == 0) {
        for (;;) {
            struct json *v;
            json_doc_reset(&im->doc);
            rc = json_array_next(&im->doc, buf, len, &pos, &v);
            if (rc == 1) {
                if ((rc = trace_element(im, &f, v)) < 0)
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
        if (rc == -EPIPE)
            rc = 0;
    } else {
        rc = 0; /* empty */
    }
    free(buf);
    if (rc == 0)
        rc = trace_feed(im, &f, path);
    return rc;
}

/* ---- walking the directory ---------------------------------------------------- */

typedef int file_fn(struct sagemaker_import *im, const char *path, const char *base);

static int want_system(const char *name)
{
    return ends_with(name, ".json");
}

static int want_trace(const char *name)
{
    return ends_with(name, "_pythontimeline.json") || ends_with(name, "_model_timeline.json") ||
           ends_with(name, "_horovod_timeline.json");
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
            if (e->kind != STROBE_EV_COMPLETE || e->name != im->step_name ||
                !(e->flags & EVF_STEP_NUM))
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
        n += t->ev[i].kind == STROBE_EV_COMPLETE && t->ev[i].name == im->step_name;
    if (!n)
        return 0;
    struct sm_event *steps = malloc(n * sizeof(*steps));
    if (!steps)
        return -ENOMEM;
    n = 0;
    for (uint32_t i = 0; i < t->n; i++)
        if (t->ev[i].kind == STROBE_EV_COMPLETE && t->ev[i].name == im->step_name)
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
        if (e->kind == STROBE_EV_COMPLETE && e->name == im->step_name)
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

static const struct sagemaker_import *sort_im; /* qsort has no context argument */

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

static int finish(struct sagemaker_import *im)
{
    int rc = 0;
    for (uint32_t i = 0; i < im->nthreads && rc == 0; i++)
        rc = flush_open(im, &im->threads[i], 0);
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
        rc = derive_mean(im, k, "cpu.util", &im->info[k].snapshots, &im->info[k].interval_ns);
        if (rc == 0)
            rc = derive_mean(im, k, "cpu.iowait", NULL, NULL);
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
            im->counts.steps += e->kind == STROBE_EV_COMPLETE && e->name == im->step_name;
            if (e->ts_ns < im->start_ns)
                im->start_ns = e->ts_ns;
            if (event_end(e) > im->end_ns)
                im->end_ns = event_end(e);
        }
    }
    run_start_from_traces(im);
    return rc;
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
        strbuf_adds(err, "no SageMaker profiler output (system/ or framework/) found");
        rc = -ENOENT;
        goto out;
    }
    if (!(im = calloc(1, sizeof(*im)))) {
        rc = -ENOMEM;
        goto fail;
    }
    json_doc_init(&im->doc);
    if (have_sys)
        rc = walk(im, sys.buf, 1, want_system, system_file);
    if (rc == 0 && have_fw)
        rc = walk(im, fw.buf, 1, want_trace, trace_file);
    if (rc == 0)
        rc = finish(im);
    if (rc < 0)
        goto fail;
    if (!im->counts.points && !im->counts.events) {
        strbuf_adds(err, "no system metrics or framework events in it");
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

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t sagemaker_median_i64(int64_t *v, uint64_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    if (n % 2)
        return v[n / 2];
    int64_t a = v[n / 2 - 1], b = v[n / 2];
    return a + (int64_t)(((uint64_t)b - (uint64_t)a) / 2); /* b >= a */
}

/* labels plus node=<node>, keys sorted, as strobe writes labels. */
static void labels_with_node(const char *labels, const char *node, struct strbuf *out)
{
    const char *pairs[9];
    size_t lens[9], n = 0;
    for (const char *p = labels; *p && n < 8;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        pairs[n] = p;
        lens[n++] = len;
        p = comma ? comma + 1 : p + len;
    }
    struct strbuf nl;
    strbuf_init(&nl);
    strbuf_addf(&nl, "node=%s", node);
    pairs[n] = nl.buf;
    lens[n++] = nl.len;
    for (size_t i = 1; i < n; i++) { /* insertion sort by key */
        for (size_t j = i; j > 0; j--) {
            size_t ka = strcspn(pairs[j - 1], "="), kb = strcspn(pairs[j], "=");
            size_t m = ka < kb ? ka : kb;
            int c = strncmp(pairs[j - 1], pairs[j], m);
            if (c < 0 || (c == 0 && ka <= kb))
                break;
            const char *tp = pairs[j];
            size_t tl = lens[j];
            pairs[j] = pairs[j - 1];
            lens[j] = lens[j - 1];
            pairs[j - 1] = tp;
            lens[j - 1] = tl;
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            strbuf_addch(out, ',');
        strbuf_add(out, pairs[i], lens[i]);
    }
    strbuf_release(&nl);
}

static int store_series(struct sagemaker_import *im, struct store *s, const char *run_id,
                        const struct sm_series *sr)
{
    struct strbuf labels;
    strbuf_init(&labels);
    if (im->nnodes > 1)
        labels_with_node(sr->labels, im->nodes[sr->node].id, &labels);
    else
        strbuf_adds(&labels, sr->labels);
    int64_t id;
    int rc = s->ops->series_insert(s, run_id, sr->name, labels.buf, sr->unit, sr->meta, &id);
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
    for (uint32_t i = 0; i < im->nnames && rc == 0; i++)
        rc = s->ops->event_name_insert(s, run_id, (int64_t)i + 1, im->names[i]);
    if (rc == 0)
        rc = store_processes(im, s, run_id);
    if (rc < 0 || !im->nthreads)
        return rc;
    struct event_encoder enc;
    struct event *ev = malloc(EVENT_BLOCK_EVENTS * sizeof(*ev));
    size_t cap = event_block_bound(EVENT_BLOCK_EVENTS);
    uint8_t *out = malloc(cap);
    if (!ev || !out || event_encoder_init(&enc) < 0) {
        free(ev);
        free(out);
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
            size_t len;
            struct event_block_info info;
            if ((rc = event_block_encode(&enc, ev, n, out, cap, &len, &info)) < 0) {
                strbuf_reset(&s->err);
                strbuf_addf(&s->err, "cannot encode events: %s", strerror(-rc));
                break;
            }
            struct event_block_record b = {
                .pid = im->procs[th->proc].store_pid,
                .tid = th->tid,
                .start_ns = info.start_ns,
                .end_ns = info.end_ns,
                .step_min = info.step_min,
                .step_max = info.step_max,
                .count = info.count,
                .data = out,
                .len = len,
            };
            rc = s->ops->event_block_insert(s, run_id, &b);
        }
    }
    event_encoder_release(&enc);
    free(ev);
    free(out);
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
                     strcmp(im->series[i].name, "cpu.util") == 0 &&
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
    for (uint32_t i = 0; i < im->nnames; i++)
        free(im->names[i]);
    free(im->names);
    free(im->name_slots);
    free(im->raw);
    json_doc_release(&im->doc);
    free(im);
}
