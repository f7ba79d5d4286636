/*
 * The process tree's run-queue delay through procfs (proc.runq_delay),
 * against the fixture tree tests/data/proc-a: sampled at T0, moved on in
 * place to t1, sampled one second later (as test_collectors.c does). Every
 * thread's schedstat wait counts: the main thread's from its /proc/PID
 * file, the others' from task/TID/schedstat in the walk once a second; a
 * thread new at t1 counts all its wait, one gone drops out without taking
 * the process's counter back. The BPF source reads the same kernel
 * field; test_proc_source.py checks the two against each other and against
 * the threads' own schedstat.
 */
#include "sample/collector.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>

#include "common/clock.h"
#include "sample/proctree.h"
#include "sample/series.h"

#include "fixture.h"
#include "test.h"

#define T0_NS    (INT64_C(1000) * NS_PER_S) /* not 0: 0 means "no previous sample" */
#define T1_NS    (T0_NS + NS_PER_S)
#define REAL0    INT64_C(1717000000000000000)
#define ROOT_PID 4000
#define SELF_PID 3000
#define PROC_A0  "tests/data/proc-a/t0"
#define PROC_A1  "tests/data/proc-a/t1"

struct rig {
    char dir[512];
    char proc[600], sys[600];
    struct sample_env env;
    struct series_table t;
    struct proc_tree tree;
    struct sampler s;
};

/* A copy of proc-a's t0 with the proc collector alone, following 4000. */
static void rig_open(struct rig *r)
{
    memset(r, 0, sizeof(*r));
    fixture_tmpdir(r->dir, sizeof(r->dir));
    fixture_copy_tree(PROC_A0, r->dir);
    snprintf(r->proc, sizeof(r->proc), "%s/proc", r->dir);
    snprintf(r->sys, sizeof(r->sys), "%s/sys", r->dir);
    r->env.proc_fd = open(r->proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    r->env.sys_fd = open(r->sys, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT(r->env.proc_fd >= 0);
    ASSERT(r->env.sys_fd >= 0);
    r->env.proc_root = r->proc;
    r->env.sys_root = r->sys;
    r->env.ticks_per_s = 100;
    r->env.page_bytes = 4096;
    r->env.self_pid = SELF_PID;
    r->env.self_tid = SELF_PID;
    ASSERT_EQ_INT(series_table_init(&r->t), 0);
    ASSERT_EQ_INT(proc_tree_init(&r->tree, &r->env), 0);
    r->tree.boot_minus_mono_ns = 0; /* the fixtures' starttimes are on the rig's clock */
    r->env.tree = &r->tree;
    ASSERT_EQ_INT(sampler_init(&r->s, &r->env, &r->t, "proc"), 0);
    ASSERT_EQ_INT(proc_tree_set_root(&r->tree, ROOT_PID), 0);
}

static void rig_sample(struct rig *r, int64_t mono_ns)
{
    struct sample_ctx ctx = {&r->t, &r->env, mono_ns, 0, 0}; /* fixture time: reads on time */
    r->t.now_ns = REAL0 + (mono_ns - T0_NS);
    sampler_sample(&r->s, &ctx);
    for (size_t i = 0; i < r->s.count; i++)
        if (r->s.slots[i].errors)
            TEST_FAIL("collector '%s' failed", r->s.slots[i].ops->name);
}

/* Write contents to path under the copy (a file of the next snapshot). */
static void rig_write(struct rig *r, const char *path, const char *contents)
{
    char full[1200];
    snprintf(full, sizeof(full), "%s/%s", r->dir, path);
    fixture_write_str(full, contents);
}

static void rig_close(struct rig *r)
{
    sampler_release(&r->s);
    proc_tree_release(&r->tree);
    series_table_release(&r->t);
    close(r->env.proc_fd);
    close(r->env.sys_fd);
    fixture_rmtree(r->dir);
}

static const struct series *must_series(const struct series_table *t, const char *name,
                                        const char *labels)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (strcmp(t->items[i].name, name) == 0 && strcmp(t->items[i].labels, labels) == 0)
            return &t->items[i];
    TEST_FAIL("no series %s{%s}", name, labels);
}

static uint32_t count_of(const struct series_table *t, const char *name, const char *labels)
{
    const struct series *s = must_series(t, name, labels);
    uint32_t n = s->enc.st.count;
    for (const struct sealed_block *b = s->sealed; b; b = b->next)
        n += b->st.count;
    return n;
}

static double last_of(const struct series_table *t, const char *name, const char *labels)
{
    const struct series *s = must_series(t, name, labels);
    if (!s->enc.st.count)
        TEST_FAIL("series %s{%s} holds no point", name, labels);
    return s->enc.st.last;
}

TEST(runq_delay_sums_every_thread)
{
    struct rig r;
    rig_open(&r);
    rig_sample(&r, T0_NS);
    fixture_advance(r.dir, PROC_A1);
    rig_sample(&r, T1_NS);
    /* the first frame is every counter's base: one point each, at t1 */
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", "pid=4000"), 1);
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", ""), 1);
    ASSERT(strcmp(must_series(&r.t, "proc.runq_delay", "")->unit, "pct") == 0);
    /* 4000: main thread 90 -> 103.5 ms, task 4005 200 -> 450 ms, 4006
     * 50 -> 61.5 ms, and 4007, new at t1, all its 30 ms:
     * 13.5 + 250 + 11.5 + 30 = 305 ms over 1 s */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4000"), 30.5, 1e-9);
    /* 4001, one thread: 37.5 -> 45 ms */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4001"), 0.75, 1e-9);
    /* 4002: main 18 -> 23.25 ms; its thread 4010 (70 ms at t0) still
     * listed at t1 but its schedstat empty (it exited between the listing
     * and the read) adds nothing and takes nothing back: 0.525 %, to a
     * quarter 0.5 */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4002"), 0.5, 1e-9);
    /* 4004, forked since t0: from zero, 2.5 ms */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4004"), 0.25, 1e-9);
    /* 4100, an orphan older than t0, has no schedstat: a base, no point */
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", "pid=4100"), 0);
    /* the tree: 305 + 7.5 + 5.25 + 3.75 (4003) + 2.5 = 324 ms: 32.4 %, to a
     * quarter 32.5 */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", ""), 32.5, 1e-9);
    rig_close(&r);
}

/* Between walks only the main thread is read: no point until the next one,
 * a second after the last, which then holds every thread's growth. */
TEST(runq_delay_points_once_a_second)
{
    struct rig r;
    rig_open(&r);
    rig_sample(&r, T0_NS);
    fixture_advance(r.dir, PROC_A1);
    rig_sample(&r, T0_NS + NS_PER_S / 2);
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", "pid=4000"), 0);
    ASSERT_EQ_U64(count_of(&r.t, "proc.cpu", "pid=4000"), 1);
    rig_write(&r, "proc/4000/task/4005/schedstat", "1600000000 550000000 700\n");
    rig_sample(&r, T1_NS);
    /* 13.5 (main, read at the half second) + 350 + 11.5 + 30 = 405 ms */
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", "pid=4000"), 1);
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4000"), 40.5, 1e-9);
    rig_close(&r);
}

/* A process whose threads come and go: twenty threads at t1 beside the
 * three of t0 (the table grows past its first allocation), then at t2 half
 * of them gone and a wait that went back (a new thread that took a freed
 * id): the counter never goes back and counts the new thread whole. */
TEST(runq_delay_follows_threads_coming_and_going)
{
    struct rig r;
    rig_open(&r);
    rig_sample(&r, T0_NS);
    fixture_advance(r.dir, PROC_A1);
    char rel[64], dir[700], file[800];
    for (int k = 0; k < 20; k++) {
        snprintf(dir, sizeof(dir), "%s/proc/4000/task/%d", r.dir, 4200 + k);
        ASSERT_EQ_INT(mkdir(dir, 0755), 0);
        snprintf(rel, sizeof(rel), "proc/4000/task/%d/schedstat", 4200 + k);
        rig_write(&r, rel, "1 10000000 1\n"); /* 10 ms each */
    }
    rig_sample(&r, T1_NS);
    /* 305 ms as above, and 20 new threads of 10 ms */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4000"), 50.5, 1e-9);
    for (int k = 0; k < 20; k++) {
        snprintf(dir, sizeof(dir), "%s/proc/4000/task/%d", r.dir, 4200 + k);
        snprintf(file, sizeof(file), "%s/schedstat", dir);
        if (k % 2) { /* gone */
            ASSERT_EQ_INT(unlink(file), 0);
            ASSERT_EQ_INT(rmdir(dir), 0);
        } else if (k == 0) { /* went back: another thread under the same id */
            fixture_write_str(file, "1 4000000 1\n");
        } else {
            fixture_write_str(file, "1 15000000 1\n"); /* 5 ms more */
        }
    }
    rig_sample(&r, T1_NS + NS_PER_S);
    /* nothing else moved (t1's files again): 4200 4 ms, the 9 others left
     * 5 ms each: 49 ms, 4.9 %, to a quarter 5 */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", "pid=4000"), 5.0, 1e-9);
    /* 4005, 4006, 4007 and the 10 left */
    ASSERT_EQ_U64(proc_tree_find(&r.tree, ROOT_PID)->nthr, 3 + 10);
    rig_close(&r);
}

/* A process its parent reaps between two points: its own series ends at
 * its last point, but the tree's total keeps what it waited up to its last
 * reading (each frame's growth joins the total). */
TEST(runq_delay_of_a_process_reaped_between_points)
{
    struct rig r;
    rig_open(&r);
    rig_sample(&r, T0_NS);
    /* 4001 (one thread) waits 50 ms more by the half second, then is gone */
    rig_write(&r, "proc/4001/schedstat", "2500123456 87500000 15\n");
    rig_sample(&r, T0_NS + NS_PER_S / 2);
    rig_write(&r, "proc/4001/stat", "");
    rig_sample(&r, T1_NS);
    ASSERT(!proc_tree_find(&r.tree, 4001));
    ASSERT_EQ_U64(count_of(&r.t, "proc.runq_delay", "pid=4001"), 0);
    /* nothing else moved: the tree's 50 ms over the second, 5 % */
    ASSERT_NEAR(last_of(&r.t, "proc.runq_delay", ""), 5.0, 1e-9);
    rig_close(&r);
}

TEST_MAIN(runq_delay_sums_every_thread, runq_delay_points_once_a_second,
          runq_delay_follows_threads_coming_and_going,
          runq_delay_of_a_process_reaped_between_points)
