/*
 * Cluster mode's jobs: one run for the job, one run per node under it.
 *
 * Each node's recorder writes a run of its own, as on one machine: its
 * series, processes, events, texts and live findings, under its own id,
 * with parent_id the job's run and node its name. The job's run holds what
 * the nodes share (name, experiment, command, tags) and what is judged
 * across nodes (the rules run over the job). Nodes never write the same
 * row, so no node waits on another, and a node's part can be spooled,
 * pushed or removed alone.
 *
 * Joining (store_job_join) happens in one transaction under a lock on the
 * key (a PostgreSQL advisory lock; SQLite's write lock): the newest job of
 * that key takes the node when it lacks a node of that name and is still
 * live (a node records, or it started less than JOB_JOIN_WINDOW_NS ago).
 * Else a new job starts. So a key reused by a later job (torchrun's
 * MASTER_ADDR:MASTER_PORT, a --join of a rerun) makes a new run, and a
 * node started late still finds its job. The node's slot, its order of
 * joining, spaces its event name ids apart from the other nodes'.
 *
 * Reading (store_job_view): commands see a job as one run of many nodes,
 * the shape an import of several SageMaker nodes has (docs/import.md): a
 * view over the store lists each node's series with node=NAME among its
 * labels, each node's processes with "@NAME" after the comm and pid
 * (slot << 22) + pid, every node's event blocks and names, and each node's
 * findings with node=NAME in front of their scope, each node's texts as
 * KIND@NAME ("stdout@n1"). The run's host is the comma list of its nodes.
 * Everything else passes through.
 */
#ifndef STROBE_STORE_JOB_H
#define STROBE_STORE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "common/clock.h"
#include "common/strbuf.h"
#include "store/store.h"

/* How long after its start a job takes nodes when none of its nodes records. */
#define JOB_JOIN_WINDOW_NS (10 * 60 * NS_PER_S)
/* Event name ids per node: a node's ids are slot * JOB_NAME_IDS + 1... */
#define JOB_NAME_IDS 65536
/* A node's pids in the job's view: (slot << JOB_PID_SHIFT) + pid (Linux pids < 2^22). */
#define JOB_PID_SHIFT 22

struct run_list {
    struct run_record *items;
    uint32_t n, cap;
};
void run_list_release(struct run_list *l);

/* A job's node runs, by node name in natural order ("n2" before "n10"). */
int store_job_nodes(struct store *s, const char *job_id, struct run_list *out);

/*
 * Join the job of key as node `node_run->node`, in one transaction: the live
 * job of key, or a new one made from node_run (its name, command, tags...).
 * node_run gets its parent_id; *slot the node's order of joining (0 first).
 * A node of that name recording in the job already is an error (one line
 * in s->err, -STROBE_EEXIST).
 */
int store_job_join(struct store *s, const char *key, struct run_record *node_run, int *slot);

/* The job's status, span and counters from its nodes: running while one
 * records, then the worst of theirs (crashed, killed, failed, stopped,
 * finished);
 * from the first start to the last end. In the caller's transaction. */
int store_job_rollup(struct store *s, const char *job_id);

/* The same figures in *job, from its nodes as listed now (no store): a
 * job's record reads current while its nodes record, though the store's
 * row changes only when a node joins or ends. Nothing when nodes is empty. */
void job_rollup_record(struct run_record *job, const struct run_list *nodes);

/* The job's status as shown: its own, or "lost" while it says running but
 * no node records any more (each running node's recorder is gone). */
const char *job_status(const struct run_record *job, const struct run_list *nodes);

/* Remove a job's run and its nodes' runs, in one transaction. */
int store_job_delete(struct store *s, const char *job_id);

/* Whether r is a job's run (cluster mode's parent). */
int run_record_is_job(const struct run_record *r);

/*
 * A view of `inner` in which the job `job` reads as one run of many nodes
 * (above). *job's host becomes the comma list of the nodes, and its status,
 * span and counters its nodes' now (job_rollup_record). With owns, the
 * view owns inner from now on: store_close(view) closes both. On failure
 * inner is left as it was.
 */
int store_job_view(struct store *inner, int owns, struct run_record *job, struct store **out);

#endif
