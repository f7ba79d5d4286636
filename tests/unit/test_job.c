/*
 * Jobs of many nodes (store/job.h), on SQLite and PostgreSQL: which job a
 * node joins, the job's status and span from its nodes, the view that
 * reads a job as one run, and removal.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/array.h"
#include "common/clock.h"
#include "common/err.h"
#include "record/runinfo.h"
#include "store/job.h"
#include "store/store.h"

#include "fixture.h"
#include "store_rig.h"
#include "test.h"

#define SEC NS_PER_S

static struct store *open_rig(struct store_rig *rig)
{
    store_rig_init(rig);
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(rig->db, 0, &s, &err) < 0)
        TEST_FAIL("store_open: %s", err.buf);
    strbuf_release(&err);
    return s;
}

/* A node's run as a recorder starts it: running, recorder unknown (taken
 * as live), started at start_ns. */
static void node_record(struct run_record *r, const char *node, int64_t start_ns)
{
    run_record_init(r);
    runinfo_new_id(r->id);
    r->name = strdup("train");
    r->command_json = strdup("[\"python\",\"train.py\"]");
    r->host = strdup("h");
    r->node = strdup(node);
    r->start_ns = start_ns;
    r->interval_ns = 100000000;
    r->clock_offset_ns = -1500;
    r->clock_rtt_ns = 800;
    snprintf(r->status, sizeof(r->status), "%s", RUN_RUNNING);
}

static int join(struct store *s, const char *key, struct run_record *r, int *slot)
{
    int rc = s->ops->begin(s);
    if (rc == 0)
        rc = store_job_join(s, key, r, slot);
    if (rc == 0)
        return s->ops->commit(s);
    s->ops->rollback(s);
    return rc;
}

static void end_node(struct store *s, struct run_record *r, const char *status, int code,
                     int64_t end_ns)
{
    snprintf(r->status, sizeof(r->status), "%s", status);
    r->exit_code = code;
    r->end_ns = r->last_ns = end_ns;
    r->samples = 10;
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    ASSERT_EQ_INT(s->ops->run_update(s, r), 0);
    ASSERT_EQ_INT(store_job_rollup(s, r->parent_id), 0);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
}

static void job_of(struct store *s, const char *id, struct run_record *out)
{
    ASSERT_EQ_INT(store_resolve_run(s, id, out), 0);
}

TEST(nodes_of_one_key_join_one_job)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t t0 = clock_realtime_ns();
    struct run_record a, b, c;
    node_record(&a, "a", t0);
    node_record(&b, "b", t0 + SEC);
    node_record(&c, "c", t0);
    int slot = -1;
    ASSERT_EQ_INT(join(s, "slurm:1", &a, &slot), 0);
    ASSERT_EQ_INT(slot, 0);
    ASSERT_EQ_INT(join(s, "slurm:1", &b, &slot), 0);
    ASSERT_EQ_INT(slot, 1);
    ASSERT(a.parent_id && b.parent_id);
    ASSERT_EQ_STR(a.parent_id, b.parent_id);
    ASSERT_EQ_INT(join(s, "slurm:2", &c, &slot), 0); /* another key, another job */
    ASSERT(strcmp(c.parent_id, a.parent_id) != 0);
    struct run_record job;
    job_of(s, a.parent_id, &job);
    ASSERT(run_record_is_job(&job));
    ASSERT_EQ_STR(job.join_key, "slurm:1");
    ASSERT_EQ_STR(job.status, RUN_RUNNING);
    ASSERT(job.host == NULL);
    struct run_list nodes;
    ASSERT_EQ_INT(store_job_nodes(s, job.id, &nodes), 0);
    ASSERT_EQ_INT(nodes.n, 2);
    ASSERT_EQ_STR(nodes.items[0].node, "a");
    ASSERT_EQ_STR(nodes.items[1].node, "b");
    ASSERT_EQ_INT(nodes.items[1].clock_offset_ns, -1500);
    ASSERT_EQ_INT(nodes.items[1].clock_rtt_ns, 800);
    run_list_release(&nodes);
    run_record_release(&job);
    /* a live node of that name: refused, and nothing written */
    struct run_record again;
    node_record(&again, "a", t0);
    ASSERT_EQ_INT(join(s, "slurm:1", &again, &slot), -STROBE_EEXIST);
    ASSERT(strstr(s->err.buf, "node 'a' is recording in run") != NULL);
    ASSERT_EQ_INT(store_resolve_run(s, again.id, &job), -STROBE_ENOTFOUND);
    run_record_release(&again);
    run_record_release(&a);
    run_record_release(&b);
    run_record_release(&c);
    store_close(s);
    store_rig_release(&rig);
}

TEST(status_is_the_worst_and_span_covers_all)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t t0 = clock_realtime_ns();
    struct run_record a, b;
    node_record(&a, "a", t0 + SEC);
    node_record(&b, "b", t0);
    int slot;
    ASSERT_EQ_INT(join(s, "k", &a, &slot), 0);
    ASSERT_EQ_INT(join(s, "k", &b, &slot), 0);
    struct run_record job;
    end_node(s, &a, RUN_FINISHED, 0, t0 + 9 * SEC);
    job_of(s, a.parent_id, &job);
    ASSERT_EQ_STR(job.status, RUN_RUNNING); /* b still records */
    ASSERT_EQ_INT(job.end_ns, 0);
    ASSERT_EQ_INT(job.start_ns, t0);
    run_record_release(&job);
    end_node(s, &b, RUN_CRASHED, -1, t0 + 5 * SEC);
    job_of(s, a.parent_id, &job);
    ASSERT_EQ_STR(job.status, RUN_CRASHED);
    ASSERT_EQ_INT(job.start_ns, t0);
    ASSERT_EQ_INT(job.end_ns, t0 + 9 * SEC);
    ASSERT_EQ_INT(job.samples, 20);
    run_record_release(&job);
    /* the job has ended: a node of that key now starts a new one */
    struct run_record late;
    node_record(&late, "a", t0 + 20 * SEC);
    ASSERT_EQ_INT(join(s, "k", &late, &slot), 0);
    ASSERT(strcmp(late.parent_id, a.parent_id) != 0);
    ASSERT_EQ_INT(slot, 0);
    run_record_release(&late);
    run_record_release(&a);
    run_record_release(&b);
    store_close(s);
    store_rig_release(&rig);
}

/* A node stopped by a rule's action (run --on-finding RULE=stop) makes the
 * job stopped over finished ones, but not over a failed one. */
TEST(a_stopped_node_ranks_between_finished_and_failed)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t t0 = clock_realtime_ns();
    struct run_record a, b, c;
    node_record(&a, "a", t0);
    node_record(&b, "b", t0);
    node_record(&c, "c", t0);
    int slot;
    ASSERT_EQ_INT(join(s, "k", &a, &slot), 0);
    ASSERT_EQ_INT(join(s, "k", &b, &slot), 0);
    ASSERT_EQ_INT(join(s, "k", &c, &slot), 0);
    struct run_record job;
    end_node(s, &a, RUN_FINISHED, 0, t0 + SEC);
    end_node(s, &b, RUN_STOPPED, -1, t0 + 2 * SEC);
    job_of(s, a.parent_id, &job);
    ASSERT_EQ_STR(job.status, RUN_RUNNING); /* c still records */
    run_record_release(&job);
    end_node(s, &c, RUN_FINISHED, 0, t0 + 3 * SEC);
    job_of(s, a.parent_id, &job);
    ASSERT_EQ_STR(job.status, RUN_STOPPED);
    run_record_release(&job);
    end_node(s, &a, RUN_FAILED, 1, t0 + SEC);
    job_of(s, a.parent_id, &job);
    ASSERT_EQ_STR(job.status, RUN_FAILED);
    run_record_release(&job);
    run_record_release(&a);
    run_record_release(&b);
    run_record_release(&c);
    store_close(s);
    store_rig_release(&rig);
}

/* A job that ended long ago and lacks the node still does not take it. */
TEST(an_old_ended_job_takes_no_node)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t old = clock_realtime_ns() - JOB_JOIN_WINDOW_NS - 60 * SEC;
    struct run_record a, b;
    node_record(&a, "a", old);
    int slot;
    ASSERT_EQ_INT(join(s, "torchrun:h:29500", &a, &slot), 0);
    end_node(s, &a, RUN_FINISHED, 0, old + SEC);
    node_record(&b, "b", clock_realtime_ns());
    ASSERT_EQ_INT(join(s, "torchrun:h:29500", &b, &slot), 0);
    ASSERT(strcmp(a.parent_id, b.parent_id) != 0);
    run_record_release(&a);
    run_record_release(&b);
    store_close(s);
    store_rig_release(&rig);
}

static int count_series(const struct series_record *r, void *arg)
{
    struct strbuf *b = arg;
    strbuf_addf(b, "%s{%s};", r->name, r->labels);
    return 0;
}

static int note_process(const struct process_record *p, void *arg)
{
    strbuf_addf(arg, "%lld:%s;", (long long)p->pid, p->comm ? p->comm : "");
    return 0;
}

static int note_finding(const struct finding_record *f, void *arg)
{
    strbuf_addf(arg, "%s[%s];", f->rule, f->scope);
    return 0;
}

static int found_one(const struct series_record *r, void *arg)
{
    *(int64_t *)arg = r->id;
    return 0;
}

TEST(the_view_reads_a_job_as_one_run)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t t0 = clock_realtime_ns();
    struct run_record a, b;
    node_record(&a, "a", t0);
    node_record(&b, "b,c", t0); /* a hostile name: escaped in labels */
    int slot;
    ASSERT_EQ_INT(join(s, "k", &a, &slot), 0);
    ASSERT_EQ_INT(join(s, "k", &b, &slot), 0);
    int64_t ids[2];
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, a.id, "proc.cpu", "pid=7", "ratio", NULL, &ids[0]), 0);
    ASSERT_EQ_INT(s->ops->series_insert(s, b.id, "proc.cpu", "pid=7", "ratio", NULL, &ids[1]), 0);
    struct process_record p = {7, 1, "python", "rank", 0, 0, 2, -1};
    ASSERT_EQ_INT(s->ops->process_upsert(s, a.id, &p), 0);
    ASSERT_EQ_INT(s->ops->process_upsert(s, b.id, &p), 0);
    struct finding_record f = {"Straggler", "warning", "rank=1", t0, t0 + SEC, "slow", NULL, NULL};
    ASSERT_EQ_INT(s->ops->finding_insert(s, b.id, 0, &f), 0);
    ASSERT_EQ_INT(s->ops->commit(s), 0);

    struct run_record job;
    job_of(s, a.parent_id, &job);
    struct store *v;
    ASSERT_EQ_INT(store_job_view(s, 0, &job, &v), 0);
    ASSERT_EQ_STR(job.host, "a,b,c");
    struct strbuf got;
    strbuf_init(&got);
    ASSERT_EQ_INT(v->ops->series_query(v, job.id, count_series, &got), 0);
    ASSERT_EQ_STR(got.buf, "proc.cpu{node=a,pid=7};proc.cpu{node=b%2Cc,pid=4194311};");
    int64_t id = 0;
    ASSERT_EQ_INT(
        v->ops->series_find(v, job.id, "proc.cpu", "node=b%2Cc,pid=4194311", found_one, &id), 0);
    ASSERT_EQ_INT(id, ids[1]);
    ASSERT_EQ_INT(v->ops->series_find(v, job.id, "proc.cpu", "node=z,pid=7", found_one, &id),
                  -STROBE_ENOTFOUND);
    strbuf_reset(&got);
    ASSERT_EQ_INT(v->ops->processes_query(v, job.id, note_process, &got), 0);
    ASSERT_EQ_STR(got.buf, "7:python@a;4194311:python@b,c;");
    strbuf_reset(&got);
    ASSERT_EQ_INT(v->ops->findings_query(v, job.id, note_finding, &got), 0);
    ASSERT_EQ_STR(got.buf, "Straggler[node=b%2Cc,rank=1];");
    /* another run's queries pass through untouched */
    strbuf_reset(&got);
    ASSERT_EQ_INT(v->ops->series_query(v, b.id, count_series, &got), 0);
    ASSERT_EQ_STR(got.buf, "proc.cpu{pid=7};");
    strbuf_release(&got);
    store_close(v); /* the store underneath stays open */

    ASSERT_EQ_INT(store_job_delete(s, job.id), 0);
    struct run_record gone;
    ASSERT_EQ_INT(store_resolve_run(s, a.id, &gone), -STROBE_ENOTFOUND);
    ASSERT_EQ_INT(store_resolve_run(s, job.id, &gone), -STROBE_ENOTFOUND);
    run_record_release(&job);
    run_record_release(&a);
    run_record_release(&b);
    store_close(s);
    store_rig_release(&rig);
}

/* Nodes that start together, each in a process and connection of its own,
 * make one job, each with a slot of its own: the join lock serializes
 * them. Each child exits with its slot. */
#define RACERS 16

static void race_to_join(const char *uri, int k)
{
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(uri, 0, &s, &err) < 0)
        _exit(100);
    char node[16];
    snprintf(node, sizeof(node), "n%d", k);
    struct run_record r;
    node_record(&r, node, clock_realtime_ns());
    int slot = -1, rc = -1;
    for (int attempt = 0; rc < 0 && attempt < 50; attempt++) {
        rc = join(s, "race", &r, &slot); /* SQLite: a busy store is retried */
        if (rc < 0)
            usleep(20000);
    }
    store_close(s);
    _exit(rc < 0 ? 101 : slot);
}

TEST(nodes_joining_at_once_make_one_job)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig); /* the schema, made once before the race */
    pid_t kids[RACERS];
    for (int k = 0; k < RACERS; k++)
        if ((kids[k] = fork()) == 0)
            race_to_join(rig.db, k);
    int seen[RACERS] = {0};
    for (int k = 0; k < RACERS; k++) {
        int st;
        ASSERT_EQ_INT(waitpid(kids[k], &st, 0), kids[k]);
        ASSERT(WIFEXITED(st) && WEXITSTATUS(st) < RACERS);
        seen[WEXITSTATUS(st)]++;
    }
    for (int k = 0; k < RACERS; k++)
        ASSERT_EQ_INT(seen[k], 1);
    struct run_list jobs = {0};
    struct run_record job;
    run_record_init(&job);
    ASSERT_EQ_INT(store_resolve_run(s, "last", &job), 0);
    ASSERT(run_record_is_job(&job));
    ASSERT_EQ_INT(store_job_nodes(s, job.id, &jobs), 0);
    ASSERT_EQ_INT(jobs.n, RACERS);
    run_list_release(&jobs);
    run_record_release(&job);
    store_close(s);
    store_rig_release(&rig);
}

TEST(a_file_store_clock_is_this_machines)
{
    struct store_rig rig;
    struct store *s = open_rig(&rig);
    int64_t before = clock_realtime_ns(), got = 0;
    ASSERT_EQ_INT(s->ops->clock_ns(s, &got), 0);
    /* PostgreSQL's clock has microseconds: a reading may fall 1 µs short */
    ASSERT(got >= before - 1000 && got <= clock_realtime_ns() + 1000);
    store_close(s);
    store_rig_release(&rig);
}

TEST_CASES_ONCE(a_file_store_clock_is_this_machines)
TEST_CASES_BOTH(nodes_of_one_key_join_one_job, status_is_the_worst_and_span_covers_all,
                a_stopped_node_ranks_between_finished_and_failed, an_old_ended_job_takes_no_node,
                the_view_reads_a_job_as_one_run, nodes_joining_at_once_make_one_job)
STORE_TEST_MAIN()
