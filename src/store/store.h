/*
 * The store: a catalog of runs, their series, and the series' compressed
 * blocks. One interface, chosen by URI: a file path selects SQLite (the
 * default), postgresql:// (or postgres://) selects PostgreSQL with the same
 * tables. The schema and block format are in docs/store-format.md.
 *
 * Threading: a struct store is used by one thread at a time. The recorder's
 * writer thread owns its own; readers (ls, show) open their own.
 */
#ifndef STROBE_STORE_STORE_H
#define STROBE_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "codec/gorilla.h"
#include "common/strbuf.h"
#include "store/procid.h"

#define RUN_ID_LEN 16

struct kv {
    char *key;
    char *value;
};

struct kv_list {
    struct kv *items;
    size_t n;
    size_t cap;
};

int kv_list_add(struct kv_list *l, const char *key, const char *value);
/* Value for key, or NULL. */
const char *kv_list_get(const struct kv_list *l, const char *key);
void kv_list_release(struct kv_list *l);
struct json_writer;
/* The list as a JSON object of strings, {"k":"v",...}: one value for jw. */
void kv_list_json(struct json_writer *jw, const struct kv_list *l);

/* Run status values, as stored. */
#define RUN_RUNNING  "running"
#define RUN_FINISHED "finished" /* exit code 0 */
#define RUN_FAILED   "failed"   /* non-zero exit, or could not start */
#define RUN_CRASHED  "crashed"  /* killed by a fault signal (SEGV, ABRT, BUS, ...) */
#define RUN_KILLED   "killed"   /* killed by another signal (KILL, TERM, INT, ...) */
#define RUN_STOPPED  "stopped"  /* ended after strobe stopped it (run --on-finding RULE=stop) */
/* Shown, never stored: running in the store, its recorder gone (run_record_status). */
#define RUN_LOST "lost"

/* The run text that holds the live metrics' latest snapshot (serve/expo.h):
 * replaced whole every second, so its size says nothing of how far a run
 * has come (strobe copy judges by the run record instead). */
#define RUN_TEXT_SNAPSHOT "metrics"

/* One run's catalog row. Strings are owned (run_record_release frees). */
struct run_record {
    char id[RUN_ID_LEN + 1];
    char *name;
    char *experiment;   /* may be NULL */
    char *workload;     /* runs started together (a sweep's batch); may be NULL */
    char *command_json; /* JSON array of argv */
    char *cwd, *user, *host, *kernel, *cpu_model;
    int cpu_count;
    int64_t mem_total_bytes;
    int64_t start_ns; /* UTC */
    int64_t end_ns;   /* 0 while running */
    int64_t last_ns;  /* time of the last committed sample */
    int exit_code;    /* -1 when none (killed by a signal, or running) */
    int signal;       /* 0 when none */
    char status[16];
    char *git_commit;                     /* NULL outside a git work tree */
    int git_dirty;                        /* -1 unknown */
    char *python_version, *torch_version; /* NULL when not a Python command */
    int64_t interval_ns;
    int64_t samples;        /* frames sampled */
    int64_t points;         /* points stored, all series */
    int64_t missed;         /* frames missed (late deadlines) */
    int64_t dropped;        /* points dropped (store could not keep up) */
    int64_t events;         /* framework events stored */
    int64_t events_dropped; /* events lost: full rings, no free ring, memory cap */
    int64_t events_invalid; /* records and rings the drain rejected (garbage, torn) */
    int64_t recorder_pid;   /* in its own pid namespace */
    struct procid recorder; /* which process that pid was; unknown before schema 5 */
    char *strobe_version;
    char *error; /* why a run failed to start, or NULL */
    struct kv_list tags, params, env;
    /* cluster mode (record/cluster.h): a node's part of a job has the job's
     * run as parent and its node's name; the job's run has the join key */
    char *parent_id, *node, *join_key; /* NULL outside cluster mode */
    int64_t clock_offset_ns;           /* the store's clock less the node's; on a node's run */
    int64_t clock_rtt_ns;              /* the round trip it was measured with; 0: not measured */
    int64_t clock_shift_ns;            /* what the node added to its times: the offset at join */
};

void run_record_init(struct run_record *r);
void run_record_release(struct run_record *r);

struct series_record {
    int64_t id;
    const char *run_id;
    const char *name;
    const char *labels;
    const char *unit;
    const char *meta; /* JSON or NULL */
    /* summary over all blocks, from block headers only */
    int64_t count;
    double min, max, sum;
    int64_t start_ns, end_ns;
    int64_t bytes; /* encoded bytes of its blocks */
};

struct block_record {
    int64_t series_id;
    struct block_stats st;
    const uint8_t *data; /* valid during the callback */
    size_t len;
};

/* A process that wrote framework events. -1 in an int field: unknown. */
struct process_record {
    int64_t pid, ppid;
    const char *comm; /* may be NULL */
    const char *role; /* "main", "rank", "dataloader", or NULL */
    int64_t rank, local_rank, world_size, worker_id;
};

/* One stored block of framework events of one thread (codec/events.h). */
struct event_block_record {
    int64_t pid, tid;
    int64_t start_ns, end_ns; /* UTC; end covers the last span's end */
    int64_t step_min, step_max;
    int64_t count;
    const uint8_t *data; /* valid during the callback */
    size_t len;
};

/* The rules' output for a run (rules/rules.h), as stored. */
struct finding_record {
    const char *rule, *severity, *scope;
    int64_t start_ns, end_ns;
    const char *evidence;
    const char *events;         /* may be NULL */
    const char *recommendation; /* may be NULL */
};

struct rule_result_record {
    const char *rule, *status;
    int64_t datapoints, violations;
    const char *detail; /* may be NULL */
    const char *report; /* JSON, or NULL */
};

struct rule_config_record {
    int64_t interval_ns;
    const char *rules;  /* "all" or a comma list */
    const char *params; /* "Rule.param=value" lines, "" for the defaults */
    const char *mode;   /* "live" or "offline" */
    int64_t evaluated_ns;
};

/* Callbacks return 0 to go on, non-zero to stop (passed back to the caller). */
typedef int run_fn(const struct run_record *r, void *arg);
typedef int series_fn(const struct series_record *s, void *arg);
typedef int block_fn(const struct block_record *b, void *arg);
/* Whether a block's points are needed, from its summary alone (a nonzero
 * answer reads its data; zero leaves data NULL and len 0). */
typedef int block_want_fn(const struct block_stats *st, void *arg);
typedef int event_name_fn(int64_t id, const char *name, void *arg);
typedef int process_fn(const struct process_record *p, void *arg);
typedef int event_block_fn(const struct event_block_record *b, void *arg);
typedef int finding_rec_fn(const struct finding_record *f, void *arg);
typedef int rule_result_fn(const struct rule_result_record *r, void *arg);
typedef int rule_config_fn(const struct rule_config_record *c, void *arg);

/* A text kept with a run: the job's stdout or stderr, the environment's
 * package list, lscpu, nvidia-smi -q. bytes is the original size, more than
 * len when it was cut (the start and the end are kept). */
struct run_text_record {
    const char *kind;
    const char *data;
    size_t len;
    int64_t bytes;
};
typedef int run_text_fn(const struct run_text_record *t, void *arg);

/* A campaign of strobe sweep (its state is a JSON document the sweep owns).
 * Strings a query gives live during the callback only. */
struct campaign_record {
    const char *name;      /* the key: the campaign's experiment name */
    const char *spec_hash; /* hex digest of the experiment file's plan */
    const char *file;      /* the experiment file, absolute path, as last run; may be NULL */
    int64_t created_ns;    /* first put (kept by later puts: the store keeps the first value) */
    int64_t updated_ns;
    const char *state; /* JSON text, opaque to the store */
};
typedef int campaign_fn(const struct campaign_record *c, void *arg);

/* One stored block of a run's Python stack samples (pyprof/profile.h): a
 * dictionary (kind 0) or samples (kind 1), numbered by seq within the run. */
struct py_block_record {
    int64_t seq;
    int kind;
    int64_t start_ns, end_ns; /* UTC; a dictionary's are those of the samples block after it */
    int64_t count;            /* samples, or entries defined */
    const uint8_t *data;      /* valid during the callback */
    size_t len;
};
typedef int py_block_fn(const struct py_block_record *b, void *arg);

struct store;

/* Which runs runs_where lists. */
enum run_key {
    RUNS_OF_PARENT,   /* a job's node runs: parent_id = value */
    RUNS_OF_JOIN_KEY, /* jobs that nodes joined on key value */
    RUNS_OF_ID,       /* the run of id value: one index lookup */
    RUNS_OF_STATUS,   /* runs whose status is value ("running": serve's /metrics, top) */
};

/* One block to write (blocks_put): its series, summary and encoded data. */
struct block_put {
    int64_t series_id;
    struct block_stats st;
    const void *data;
    size_t len;
};

struct store_ops {
    const char *name;
    void (*close)(struct store *s);
    int (*begin)(struct store *s);
    int (*commit)(struct store *s);
    int (*rollback)(struct store *s);
    int (*run_insert)(struct store *s, const struct run_record *r);
    /* Updates the fields that change during a run: end, last, exit, signal,
     * status, counters, error, clock offset; the start too unless 0 (a
     * job's start is its first node's). */
    int (*run_update)(struct store *s, const struct run_record *r);
    int (*series_insert)(struct store *s, const char *run_id, const char *name, const char *labels,
                         const char *unit, const char *meta, int64_t *out_id);
    int (*series_update_meta)(struct store *s, int64_t series_id, const char *meta);
    /* Insert a block, or replace the one of that series with the same start
     * (an open block grows in place until sealed). */
    int (*block_upsert)(struct store *s, int64_t series_id, const struct block_stats *st,
                        const void *data, size_t len);
    /* block_upsert of each of n blocks, in order (a later one of the same
     * series and start wins). PostgreSQL sends them in a few statements, not
     * one round trip a block: the recorder's writer commits this way. */
    int (*blocks_put)(struct store *s, const struct block_put *blocks, size_t n);
    /* Runs newest first; experiment NULL for all. */
    int (*runs_query)(struct store *s, const char *experiment, run_fn *fn, void *arg);
    /* Series of a run in name order, with summaries. */
    int (*series_query)(struct store *s, const char *run_id, series_fn *fn, void *arg);
    /* Blocks of a series in time order. */
    int (*blocks_query)(struct store *s, int64_t series_id, block_fn *fn, void *arg);
    /* In the caller's transaction when one is open, else in its own. */
    int (*run_delete)(struct store *s, const char *run_id);
    /* Framework events: names are run-wide ids, defined once; a process row
     * is replaced as its attributes become known (rank, worker id). */
    int (*event_name_insert)(struct store *s, const char *run_id, int64_t id, const char *name);
    int (*process_upsert)(struct store *s, const char *run_id, const struct process_record *p);
    int (*event_block_insert)(struct store *s, const char *run_id,
                              const struct event_block_record *b);
    int (*event_names_query)(struct store *s, const char *run_id, event_name_fn *fn, void *arg);
    int (*processes_query)(struct store *s, const char *run_id, process_fn *fn, void *arg);
    /* Event blocks overlapping [from_ns, to_ns] in time order of their start
     * (INT64_MIN, INT64_MAX for all); a job's view gives them node by node,
     * each node's in that order. */
    int (*event_blocks_query)(struct store *s, const char *run_id, int64_t from_ns, int64_t to_ns,
                              event_block_fn *fn, void *arg);
    /* Rules: rules_clear removes a run's config, results and findings (before
     * writing a new evaluation, in the same transaction). */
    int (*rules_clear)(struct store *s, const char *run_id);
    int (*rule_config_put)(struct store *s, const char *run_id, const struct rule_config_record *c);
    int (*rule_result_insert)(struct store *s, const char *run_id,
                              const struct rule_result_record *r);
    int (*finding_insert)(struct store *s, const char *run_id, int64_t seq,
                          const struct finding_record *f);
    int (*rule_config_query)(struct store *s, const char *run_id, rule_config_fn *fn, void *arg);
    int (*rule_results_query)(struct store *s, const char *run_id, rule_result_fn *fn, void *arg);
    /* Findings in the order they fired. */
    int (*findings_query)(struct store *s, const char *run_id, finding_rec_fn *fn, void *arg);
    /* Texts: one per kind and run, replaced when put again. */
    int (*run_text_put)(struct store *s, const char *run_id, const struct run_text_record *t);
    int (*run_texts_query)(struct store *s, const char *run_id, run_text_fn *fn, void *arg);
    /* The text of one kind (fn is not called when there is none): a reader
     * of one small text need not read a job's logs (serve's /metrics). */
    int (*run_text_get)(struct store *s, const char *run_id, const char *kind, run_text_fn *fn,
                        void *arg);
    /* Insert or replace each attribute of l, of kind "tag" or "param", of
     * a run already in the store (strobe ctl tag on a running run). */
    int (*run_attrs_put)(struct store *s, const char *run_id, const char *kind,
                         const struct kv_list *l);
    /* Blocks of a series overlapping [from_ns, to_ns] in time order, their
     * data read only where want() asks for it: downsampled views read the
     * summaries of most blocks and decode only those at bucket edges.
     * want() may be asked of every block before fn() sees the first. */
    int (*blocks_range_query)(struct store *s, int64_t series_id, int64_t from_ns, int64_t to_ns,
                              block_want_fn *want, block_fn *fn, void *arg);
    /* The series of a run with this name and labels, without its summary
     * (count and bytes 0, min/max/sum NaN; start_ns and end_ns are set, 0
     * without blocks): index lookups only. fn is called
     * once when it exists; -STROBE_ENOTFOUND when it does not. */
    int (*series_find)(struct store *s, const char *run_id, const char *name, const char *labels,
                       series_fn *fn, void *arg);
    /* Runs whose parent_id or join_key is value, newest first. */
    int (*runs_where)(struct store *s, enum run_key key, const char *value, run_fn *fn, void *arg);
    /* In a transaction: hold back other joins on key until it ends, so that
     * nodes starting together make one job (SQLite's write lock does it). */
    int (*join_lock)(struct store *s, const char *key);
    /* The store's clock, ns since the epoch: the database server's, this
     * machine's for a file. */
    int (*clock_ns)(struct store *s, int64_t *out);
    /* Become the one connection that leads on key (1), or learn another
     * leads (0). The lead holds until the connection closes, however the
     * process ends (a PostgreSQL session lock). A file's store has no
     * sessions: every caller leads. */
    int (*try_lead)(struct store *s, const char *key);
    /* How long one request may wait for the store before it fails, in ms.
     * PostgreSQL: each round trip and each reconnection; past it the
     * connection is dropped, and the next begin opens a new one (0: no
     * bound, the default). SQLite: the busy timeout (0: the default, 5 s). */
    void (*set_timeout)(struct store *s, int ms);
    /* Campaigns (strobe sweep), one row each, in the caller's transaction
     * when one is open, else each call in its own. A reader of a store from
     * before schema 7 that it may not upgrade finds none. */
    /* Insert or replace the campaign of that name (created_ns kept from the first put). */
    int (*campaign_put)(struct store *s, const struct campaign_record *c);
    /* fn once for the campaign of that name; -STROBE_ENOTFOUND when none. */
    int (*campaign_get)(struct store *s, const char *name, campaign_fn *fn, void *arg);
    /* Every campaign, most recently updated first (ties by name). */
    int (*campaigns_query)(struct store *s, campaign_fn *fn, void *arg);
    /* 0, or -STROBE_ENOTFOUND. */
    int (*campaign_delete)(struct store *s, const char *name);
    /* Python stack samples (schema 8). Insert, or replace the block of that
     * run and seq (a batch sent again after a failed commit). */
    int (*py_block_put)(struct store *s, const char *run_id, const struct py_block_record *b);
    /* In seq order: every dictionary block, and the samples blocks that
     * overlap [from_ns, to_ns] (INT64_MIN, INT64_MAX for all). A store
     * from before schema 8 that may not be upgraded has none. A job's run
     * in cluster mode has none of its own: its node runs (parent_id the
     * job's) hold them, so a caller iterates those. */
    int (*py_blocks_query)(struct store *s, const char *run_id, int64_t from_ns, int64_t to_ns,
                           py_block_fn *fn, void *arg);
};

struct store {
    const struct store_ops *ops;
    char *uri;         /* as given, less any password: safe to print */
    char *open_uri;    /* as given, password and all: to open another connection, never shown */
    struct strbuf err; /* detail of the last error */
};

/*
 * Open (creating and migrating as needed) the store at uri. On failure
 * returns negative and, if err is not NULL, a one-line reason in *err.
 * readonly: do not create or migrate (ls, show on a missing store fail).
 */
int store_open(const char *uri, int readonly, struct store **out, struct strbuf *err);
void store_close(struct store *s);

/* The store URI from --store, else $STROBE_STORE, else ./strobe.db. */
const char *store_default_uri(const char *flag);

/* Whether uri names a PostgreSQL database (postgresql:// or postgres://),
 * not a file. */
int store_uri_is_postgres(const char *uri);
/* Append uri to out without its password (postgresql://user:pw@host/db and
 * ?password=pw): the form to print, log or keep. Other URIs are appended
 * as they are. Returns strbuf_failed(out). */
int store_uri_redact(const char *uri, struct strbuf *out);
/* Whether uri holds a password that store_uri_redact() removes. */
int store_uri_has_password(const char *uri);

/*
 * Resolve RUN, trying in turn: RUN_REF_LAST (the newest run), a whole id, a
 * run name (the newest run of that name), a unique id prefix of 4 or more.
 * A name thus shadows an id prefix, never a whole id, and a run named
 * RUN_REF_LAST answers to its id only. Fills out (caller releases).
 * -STROBE_ENOTFOUND or -STROBE_EAMBIGUOUS on failure.
 */
#define RUN_REF_LAST "last"
int store_resolve_run(struct store *s, const char *ref, struct run_record *out);

/* Seconds from start to end, or to the last committed sample while a run is
 * still recording (or was lost). */
double run_record_duration_s(const struct run_record *r);
/* Whether r's recorder has exited: that very process is gone (its pid is
 * free or another process's, its namespace has ended, or its host has
 * rebooted since). 0 when that cannot be told from here (another host, a
 * pid namespace this process cannot see into). store/procid.h decides. */
int run_record_recorder_gone(const struct run_record *r);
/* The status to show: "lost" for a run still marked running whose recorder
 * is gone (it died without finishing the run). */
const char *run_record_status(const struct run_record *r);

/* The run's workload: its own column, else (runs recorded before it had
 * one) the tag or parameter named workload; NULL when none. */
const char *run_record_workload(const struct run_record *r);
/* The members every JSON view of a run starts with, in this order, without
 * braces: id, name, experiment, workload, status, exit_code (null unless the
 * job exited), signal, start_ns, end_ns (null while running), duration_s.
 * One writer, so that ls, show, the API and the report agree. */
void run_record_json_head(struct json_writer *jw, const struct run_record *r);
/* Where it ran, as members: cwd, user, host, kernel, cpu_model, cpu_count,
 * mem_total_bytes, git_commit (show --json and the report; git_dirty,
 * spelled differently by each, comes next). */
void run_record_json_host(struct json_writer *jw, const struct run_record *r);
/* What ran, as members: python_version, torch_version, strobe_version and
 * error, null when unknown. */
void run_record_json_versions(struct json_writer *jw, const struct run_record *r);

/* Deep copy of a run record. */
int run_record_copy(struct run_record *dst, const struct run_record *src);

#endif
