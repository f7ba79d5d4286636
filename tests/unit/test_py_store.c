/*
 * A run's Python samples through the store and back (pyprof/view.c's
 * py_run_load): test_py_view.c's fixture, built with the profile's own
 * builder, taken as blocks, put with py_block_put beside the run's
 * processes and event blocks in a SQLite store, then loaded and viewed; the
 * view must equal the one of the fixture held in memory.
 *
 * With $STROBE_PY_FIXTURE set, the store is written to that path and kept:
 * tests/integration/test_flame.py runs strobe flame, show and trace on it.
 */
#include <sys/stat.h>

#include "codec/events.h"
#include "fixture.h"
#include "pyprof/reader.h"
#include "pyprof/view.h"
#include "strobe/ring.h"
#include "test.h"

#include "py_fixture.h"

#define RUN_ID    "f1a3e00000000001"
#define THREAD_OF "train<&>;\n"

static void put_run(struct store *s)
{
    struct run_record r;
    run_record_init(&r);
    snprintf(r.id, sizeof(r.id), "%s", RUN_ID);
    r.name = strdup("py fixture");
    r.command_json = strdup("[\"python\",\"train.py\"]");
    r.start_ns = 100 * FIX_US;
    r.end_ns = 7000 * FIX_US;
    r.last_ns = r.end_ns;
    r.exit_code = 0;
    snprintf(r.status, sizeof(r.status), "%s", RUN_FINISHED);
    r.interval_ns = 100000000;
    ASSERT_EQ_INT(s->ops->run_insert(s, &r), 0);
    ASSERT_EQ_INT(s->ops->run_update(s, &r), 0);
    run_record_release(&r);
}

static void put_events(struct store *s, const struct run_events *e)
{
    for (uint32_t id = 1; id <= e->nnames; id++)
        ASSERT_EQ_INT(s->ops->event_name_insert(s, RUN_ID, id, e->names[id - 1]), 0);
    for (uint32_t i = 0; i < e->nprocs; i++) {
        const struct proc_info *p = &e->procs[i];
        struct process_record rec = {p->pid,  p->ppid,       "python3",     p->role,
                                     p->rank, p->local_rank, p->world_size, p->worker_id};
        ASSERT_EQ_INT(s->ops->process_upsert(s, RUN_ID, &rec), 0);
    }
    struct event_encoder enc;
    ASSERT_EQ_INT(event_encoder_init(&enc), 0);
    for (uint32_t i = 0; i < e->nthreads; i++) {
        const struct thread_events *t = &e->threads[i];
        size_t cap = event_block_bound(t->n), len;
        uint8_t *buf = malloc(cap);
        struct event_block_info info;
        ASSERT(buf);
        ASSERT_EQ_INT(event_block_encode(&enc, t->ev, t->n, buf, cap, &len, &info), 0);
        struct event_block_record b = {t->pid,      t->tid,        info.start_ns,
                                       info.end_ns, info.step_min, info.step_max,
                                       info.count,  buf,           len};
        ASSERT_EQ_INT(s->ops->event_block_insert(s, RUN_ID, &b), 0);
        free(buf);
    }
    event_encoder_release(&enc);
}

/* p's dictionaries and samples through the builder, its blocks into s. */
static void put_samples(struct store *s, const struct py_profile *p)
{
    struct py_profile b;
    py_profile_init(&b);
    uint32_t *fid = calloc(p->nframes + 1, sizeof(*fid)), *sid = calloc(p->nstacks + 1, 4);
    ASSERT(fid && sid);
    for (uint32_t i = 0; i < p->nframes; i++)
        ASSERT_EQ_INT(py_profile_frame(&b, p->frames[i].func, p->frames[i].file, p->frames[i].line,
                                       &fid[i + 1]),
                      0);
    for (uint32_t i = 0; i < p->nstacks; i++) {
        uint32_t f[8], d = p->stacks[i].depth;
        for (uint32_t k = 0; k < d; k++)
            f[k] = fid[p->stack_frames[p->stacks[i].off + k]];
        ASSERT_EQ_INT(py_profile_stack(&b, f, d, &sid[i + 1]), 0);
    }
    for (uint32_t i = 0; i < p->nprocs; i++) {
        ASSERT_EQ_INT(py_profile_process(&b, p->procs[i].pid, p->procs[i].ppid, "python3"), 0);
        ASSERT_EQ_INT(py_profile_thread(&b, p->procs[i].pid, p->procs[i].pid,
                                        p->procs[i].pid == 100 ? THREAD_OF : "worker"),
                      0);
    }
    for (size_t i = 0; i < p->nsamples; i++) {
        struct py_sample x = p->samples[i];
        x.stack = sid[x.stack];
        ASSERT_EQ_INT(py_profile_add(&b, &x), 0);
    }
    struct py_block_out out[2];
    int n;
    if (!s->ops->py_block_put)
        TEST_FAIL("the %s store has no py_block_put", s->ops->name);
    ASSERT_EQ_INT(py_profile_take(&b, out, &n), 0);
    for (int i = 0; i < n; i++) {
        struct py_block_record rec = {out[i].seq,   out[i].kind, out[i].start_ns, out[i].end_ns,
                                      out[i].count, out[i].data, out[i].len};
        ASSERT_EQ_INT(s->ops->py_block_put(s, RUN_ID, &rec), 0);
        free(out[i].data);
    }
    free(fid);
    free(sid);
    py_profile_release(&b);
}

static void collapsed_of(const struct py_source *src, uint32_t n, const struct run_events *e,
                         struct strbuf *out)
{
    struct py_view v;
    struct py_view_filter f = {NULL, -1, 0, 0, 0, 1};
    ASSERT_EQ_INT(py_view_build(&v, src, n, e, &f), 0);
    ASSERT_EQ_INT(py_view_collapsed(&v, &f, out), 0);
    strbuf_addf(out, "roles %u total %llu interval %lld\n", v.nroles, (unsigned long long)v.total,
                (long long)v.interval_ns);
    py_view_release(&v);
}

TEST(store_round_trip)
{
    const char *keep = getenv("STROBE_PY_FIXTURE");
    char dir[512], path[1024];
    fixture_tmpdir(dir, sizeof(dir));
    fixture_join(path, sizeof(path), dir, "py.db");
    if (keep && *keep)
        snprintf(path, sizeof(path), "%s", keep);
    struct py_profile p;
    struct run_events e;
    fixture(&p, &e);
    struct store *s;
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(store_open(path, 0, &s, &err), 0);
    ASSERT_EQ_INT(s->ops->begin(s), 0);
    put_run(s);
    put_events(s, &e);
    put_samples(s, &p);
    ASSERT_EQ_INT(s->ops->commit(s), 0);
    struct run_record r;
    run_record_init(&r);
    ASSERT_EQ_INT(store_resolve_run(s, RUN_ID, &r), 0);
    struct py_run pr;
    ASSERT_EQ_INT(py_run_load(s, &r, 1, &pr, &err), 0);
    ASSERT_EQ_U64(py_run_samples(&pr), p.nsamples);
    ASSERT_EQ_U64(pr.bad_blocks, 0);
    struct strbuf got, want;
    strbuf_init(&got);
    strbuf_init(&want);
    collapsed_of(pr.src, pr.nprofs, &pr.ev, &got);
    struct py_source mem = {&p, 0};
    collapsed_of(&mem, 1, &e, &want);
    ASSERT_EQ_STR(got.buf, want.buf);
    strbuf_release(&got);
    strbuf_release(&want);
    py_run_release(&pr);
    run_record_release(&r);
    store_close(s);
    strbuf_release(&err);
    prof_free(&p);
    run_events_release(&e);
    if (!keep || !*keep)
        fixture_rmtree(dir);
}

TEST_MAIN(store_round_trip)
