/*
 * The collectors, driven through their table (sampler_init/sampler_sample)
 * against the fixture trees of tests/data. A tree is copied into a scratch
 * directory, sampled once at T0, moved on in place to its next snapshot (the
 * collectors keep their fds, so the files are rewritten, not replaced), and
 * sampled again one second later. The expected values are worked out by hand
 * from the fixture numbers in the comments beside each check; ticks are
 * USER_HZ = 100 and pages 4096 bytes.
 */
#include "common/array.h"
#include "sample/collector.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sys/resource.h>

#include "common/clock.h"
#include "sample/proctree.h"
#include "sample/series.h"

#include "fixture.h"
#include "test.h"

#define T0_NS    (INT64_C(1000) * NS_PER_S) /* not 0: 0 means "no previous sample" */
#define T1_NS    (T0_NS + NS_PER_S)
#define REAL0    INT64_C(1717000000000000000)
#define TOL      1e-9
#define ROOT_PID 4000
#define SELF_PID 3000

struct rig {
    char dir[512];
    char proc[600], sys[600];
    struct sample_env env;
    struct series_table t;
    struct proc_tree tree;
    struct sampler s;
    int have_tree;
};

/* The process tree's fd budget in the rigs opened next; -1: its own. */
static int64_t rig_fd_budget = -1;

/* Copy fixture (a directory holding proc/ and sys/) and start the
 * collectors named in only (NULL: all) on the copy. root_pid 0: no job. */
static void rig_open(struct rig *r, const char *fixture, pid_t root_pid, const char *only,
                     const char *const *overrides)
{
    memset(r, 0, sizeof(*r));
    fixture_tmpdir(r->dir, sizeof(r->dir));
    fixture_copy_tree(fixture, r->dir);
    snprintf(r->proc, sizeof(r->proc), "%s/proc", r->dir);
    snprintf(r->sys, sizeof(r->sys), "%s/sys", r->dir);
    /* overrides: pairs of (path under the copy, new contents), NULL-ended */
    for (size_t i = 0; overrides && overrides[i]; i += 2) {
        char path[1200];
        snprintf(path, sizeof(path), "%s/%s", r->dir, overrides[i]);
        if (overrides[i + 1])
            fixture_write_str(path, overrides[i + 1]);
        else
            unlink(path);
    }
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
    if (root_pid) {
        ASSERT_EQ_INT(proc_tree_init(&r->tree, &r->env), 0);
        r->tree.boot_minus_mono_ns = 0; /* the fixtures' starttimes are on the rig's clock */
        if (rig_fd_budget >= 0)
            r->tree.fd_budget = (uint32_t)rig_fd_budget;
        r->env.tree = &r->tree;
        r->have_tree = 1;
    }
    ASSERT_EQ_INT(sampler_init(&r->s, &r->env, &r->t, only), 0);
    /* as the recorder does: the job is forked, then followed */
    if (root_pid)
        ASSERT_EQ_INT(proc_tree_set_root(&r->tree, root_pid), 0);
}

static void rig_sample(struct rig *r, int64_t mono_ns)
{
    struct sample_ctx ctx = {&r->t, &r->env, mono_ns, 0, 0}; /* fixture time: reads on time */
    r->t.now_ns = REAL0 + (mono_ns - T0_NS);
    sampler_sample(&r->s, &ctx);
    for (size_t i = 0; i < r->s.count; i++)
        if (r->s.slots[i].errors)
            TEST_FAIL("collector '%s' failed %" PRIu64 " times", r->s.slots[i].ops->name,
                      r->s.slots[i].errors);
}

static void rig_advance(struct rig *r, const char *fixture)
{
    fixture_advance(r->dir, fixture);
}

static int rig_enabled(const struct rig *r, const char *name)
{
    for (size_t i = 0; i < r->s.count; i++)
        if (strcmp(r->s.slots[i].ops->name, name) == 0)
            return r->s.slots[i].enabled;
    TEST_FAIL("no collector '%s'", name);
}

static void rig_close(struct rig *r)
{
    sampler_release(&r->s);
    if (r->have_tree)
        proc_tree_release(&r->tree);
    series_table_release(&r->t);
    close(r->env.proc_fd);
    close(r->env.sys_fd);
    fixture_rmtree(r->dir);
}

/* Index of an existing series; unlike series_get, never creates one. */
static int find_series(const struct series_table *t, const char *name, const char *labels)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (strcmp(t->items[i].name, name) == 0 && strcmp(t->items[i].labels, labels) == 0)
            return (int)i;
    return -1;
}

static const struct series *must_series(const struct series_table *t, const char *name,
                                        const char *labels)
{
    int i = find_series(t, name, labels);
    if (i < 0)
        TEST_FAIL("no series %s{%s}", name, labels);
    return &t->items[i];
}

/* Points the series holds: its open block and sealed blocks not yet persisted
 * (a process that left the tree has its series sealed). */
static uint32_t count_of(const struct series_table *t, const char *name, const char *labels)
{
    const struct series *s = must_series(t, name, labels);
    uint32_t n = s->enc.st.count;
    for (const struct sealed_block *b = s->sealed; b; b = b->next)
        n += b->st.count;
    return n;
}

/* The last value; the series must hold at least one. */
static double last_of(const struct series_table *t, const char *name, const char *labels)
{
    const struct series *s = must_series(t, name, labels);
    if (!s->enc.st.count)
        TEST_FAIL("series %s{%s} holds no point", name, labels);
    return s->enc.st.last;
}

/* The i-th value of the open block. */
static double value_at(const struct series_table *t, const char *name, const char *labels,
                       uint32_t i)
{
    const struct series *s = must_series(t, name, labels);
    struct block_dec d;
    block_dec_init(&d, s->open_buf, block_enc_size(&s->enc), s->enc.st.count, s->enc.st.start_ns);
    int64_t ts;
    double v = NAN;
    for (uint32_t k = 0; k <= i; k++)
        if (block_dec_next(&d, &ts, &v) != 1)
            TEST_FAIL("series %s{%s} has no point %u", name, labels, i);
    return v;
}

#define PROC_A0 "tests/data/proc-a/t0"
#define PROC_A1 "tests/data/proc-a/t1"

/* Two samples of proc-a, every collector on. */
static void run_proc_a(struct rig *r)
{
    rig_open(r, PROC_A0, ROOT_PID, NULL, NULL);
    rig_sample(r, T0_NS);
    rig_advance(r, PROC_A1);
    rig_sample(r, T1_NS);
}

/* ---- host ------------------------------------------------------------------ */

TEST(all_collectors_start_on_proc_a)
{
    struct rig r;
    run_proc_a(&r);
    for (size_t i = 0; i < r.s.count; i++)
        if (!r.s.slots[i].enabled)
            TEST_FAIL("collector '%s' is off", r.s.slots[i].ops->name);
    ASSERT_EQ_U64(r.t.rejected, 0);
    rig_close(&r);
}

TEST(cpu_util_total_and_per_core)
{
    struct rig r;
    run_proc_a(&r);
    /* deltas t0 -> t1 (user nice system idle iowait irq softirq steal):
     *   cpu0: 60 0 10 20 5 2 3 0 = 100, idle+iowait 25 -> busy 75%
     *   cpu1: 20 5  5 60 5 1 2 2 = 100, idle+iowait 65 -> busy 35%
     *   all:  80 5 15 80 10 3 5 2 = 200, idle+iowait 90 -> busy 110/200 = 55% */
    ASSERT_EQ_INT(count_of(&r.t, "cpu.util", ""), 1); /* the first sample has no delta */
    ASSERT_NEAR(last_of(&r.t, "cpu.util", ""), 55.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cpu.util", "core=0"), 75.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cpu.util", "core=1"), 35.0, TOL);
    ASSERT_EQ_INT(find_series(&r.t, "cpu.util", "core=2"), -1);
    /* user+nice 85/200; system+irq+softirq 23/200; iowait 10/200; steal 2/200 */
    ASSERT_NEAR(last_of(&r.t, "cpu.user", ""), 42.5, TOL);
    ASSERT_NEAR(last_of(&r.t, "cpu.system", ""), 11.5, TOL);
    ASSERT_NEAR(last_of(&r.t, "cpu.iowait", ""), 5.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cpu.steal", ""), 1.0, TOL);
    rig_close(&r);
}

TEST(mem_used_is_total_minus_available)
{
    struct rig r;
    run_proc_a(&r);
    /* MemTotal 8000000 kB; MemAvailable 5000000 kB at t0, 4900000 kB at t1 */
    ASSERT_EQ_INT(count_of(&r.t, "mem.used_bytes", ""), 2);
    ASSERT_NEAR(value_at(&r.t, "mem.used_bytes", "", 0), 3000000.0 * 1024, 0);
    ASSERT_NEAR(value_at(&r.t, "mem.used_bytes", "", 1), 3100000.0 * 1024, 0);
    ASSERT_NEAR(last_of(&r.t, "mem.total_bytes", ""), 8000000.0 * 1024, 0);
    ASSERT_NEAR(last_of(&r.t, "mem.available_bytes", ""), 4900000.0 * 1024, 0);
    /* SwapTotal 2097148 kB, SwapFree 1990000 kB at t1 */
    ASSERT_NEAR(last_of(&r.t, "mem.swap_used_bytes", ""), 107148.0 * 1024, 0);
    /* pswpin 1000 -> 1250, pswpout 2000 -> 2100 over 1 s */
    ASSERT_EQ_INT(count_of(&r.t, "mem.swapin_per_s", ""), 1);
    ASSERT_NEAR(last_of(&r.t, "mem.swapin_per_s", ""), 250.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "mem.swapout_per_s", ""), 100.0, TOL);
    rig_close(&r);
}

TEST(psi_rates_from_totals)
{
    struct rig r;
    run_proc_a(&r);
    /* (total1 - total0) µs / 1e6 over 1 s, in percent:
     *   cpu some 1000000 -> 1250000: 25%; memory some 500000 -> 600000: 10%,
     *   full 200000 -> 250000: 5%; io some 3000000 -> 3400000: 40%,
     *   full 2000000 -> 2300000: 30% */
    ASSERT_EQ_INT(count_of(&r.t, "psi.cpu_some", ""), 1);
    ASSERT_NEAR(last_of(&r.t, "psi.cpu_some", ""), 25.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "psi.mem_some", ""), 10.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "psi.mem_full", ""), 5.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "psi.io_some", ""), 40.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "psi.io_full", ""), 30.0, TOL);
    ASSERT_EQ_INT(find_series(&r.t, "psi.cpu_full", ""), -1); /* not meaningful system-wide */
    rig_close(&r);
}

static void check_disks(const struct rig *r)
{
    /* vda: sectors read +2048, written +4096, io_ticks 11000 -> 11250 ms */
    ASSERT_EQ_INT(count_of(&r->t, "disk.read_bytes_per_s", "dev=vda"), 1);
    ASSERT_NEAR(last_of(&r->t, "disk.read_bytes_per_s", "dev=vda"), 2048.0 * 512, TOL);
    ASSERT_NEAR(last_of(&r->t, "disk.write_bytes_per_s", "dev=vda"), 4096.0 * 512, TOL);
    ASSERT_NEAR(last_of(&r->t, "disk.util", "dev=vda"), 25.0, TOL);
    /* nvme0n1: io_ticks +1002 ms in 1000 ms reads 100.2%, clamped to 100 */
    ASSERT_NEAR(last_of(&r->t, "disk.util", "dev=nvme0n1"), 100.0, TOL);
    ASSERT_NEAR(last_of(&r->t, "disk.read_bytes_per_s", "dev=nvme0n1"), 0.0, TOL);
    /* loop1 has been used (52 reads) and is a whole disk: kept, idle */
    ASSERT_NEAR(last_of(&r->t, "disk.util", "dev=loop1"), 0.0, TOL);
    /* loop0 never used; partitions have no /sys/block entry */
    ASSERT_EQ_INT(find_series(&r->t, "disk.util", "dev=loop0"), -1);
    ASSERT_EQ_INT(find_series(&r->t, "disk.util", "dev=vda1"), -1);
    ASSERT_EQ_INT(find_series(&r->t, "disk.util", "dev=nvme0n1p1"), -1);
}

/* Put the t0 version of one file back into the copy, after it moved on. */
static void rig_restore_t0(struct rig *r, const char *rel)
{
    char src[1024], dst[1024];
    size_t len;
    fixture_join(src, sizeof(src), PROC_A0, rel);
    fixture_join(dst, sizeof(dst), r->dir, rel);
    char *buf = fixture_load(src, &len);
    fixture_write(dst, buf, len);
    free(buf);
}

TEST(disk_rates_and_util)
{
    /* every whole disk has /sys/block/DEV/stat: those are read, and
     * /proc/diskstats (left stale here) is not */
    struct rig r;
    rig_open(&r, PROC_A0, 0, "disk", NULL);
    rig_sample(&r, T0_NS);
    rig_advance(&r, PROC_A1);
    rig_restore_t0(&r, "proc/diskstats");
    rig_sample(&r, T1_NS);
    check_disks(&r);
    rig_close(&r);
}

TEST(disk_rates_from_diskstats)
{
    /* one whole disk without its own stat file: /proc/diskstats for all,
     * and a per-device file (left stale here) is not read */
    static const char *const over[] = {"sys/block/nvme0n1/stat", NULL, NULL};
    struct rig r;
    rig_open(&r, PROC_A0, 0, "disk", over);
    rig_sample(&r, T0_NS);
    rig_advance(&r, PROC_A1);
    rig_restore_t0(&r, "sys/block/vda/stat");
    rig_sample(&r, T1_NS);
    check_disks(&r);
    rig_close(&r);
}

TEST(net_rates)
{
    struct rig r;
    run_proc_a(&r);
    /* eth0 rx 5000000000 -> 5012500000, tx 300000000 -> 300250000; lo +1000 both */
    ASSERT_EQ_INT(count_of(&r.t, "net.rx_bytes_per_s", "iface=eth0"), 1);
    ASSERT_NEAR(last_of(&r.t, "net.rx_bytes_per_s", "iface=eth0"), 12500000.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "net.tx_bytes_per_s", "iface=eth0"), 250000.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "net.rx_bytes_per_s", "iface=lo"), 1000.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "net.tx_bytes_per_s", "iface=lo"), 1000.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "net.rx_bytes_per_s", "iface=docker0"), 0.0, TOL);
    rig_close(&r);
}

/* ---- cgroup ------------------------------------------------------------------ */

TEST(cgroup_hybrid)
{
    /* proc-a: cgroup2 at /sys/fs/cgroup/unified without controllers (no
     * memory.current, cpu.stat without throttled_usec), v1 memory and cpu */
    struct rig r;
    run_proc_a(&r);
    const char *cg_meta = "{\"memory\":\"v1\",\"cpu\":\"v1\",\"path\":\"/user.slice/"
                          "user-1000.slice/session-2.scope\"}";
    ASSERT_EQ_STR(must_series(&r.t, "cgroup.mem_used_bytes", "")->meta, cg_meta);
    /* memory.usage_in_bytes 1073741824 -> 1610612736 */
    ASSERT_EQ_INT(count_of(&r.t, "cgroup.mem_used_bytes", ""), 2);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 0), 1073741824.0, 0);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 1), 1610612736.0, 0);
    /* memory.limit_in_bytes 9223372036854771712 (PAGE_COUNTER_MAX): unlimited */
    double limit = last_of(&r.t, "cgroup.mem_limit_bytes", "");
    ASSERT(isinf(limit) && limit > 0);
    /* v1 cpu.stat: nr_throttled 100 -> 105, throttled_time 5e9 -> 5.25e9 ns:
     * 5 per s, 0.25 s of each s = 25% */
    ASSERT_EQ_INT(count_of(&r.t, "cgroup.throttled_per_s", ""), 1);
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_per_s", ""), 5.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_pct", ""), 25.0, TOL);
    rig_close(&r);
}

TEST(cgroup_v1)
{
    struct rig r;
    rig_open(&r, "tests/data/cgroup-v1/t0", 0, "cgroup", NULL);
    ASSERT(rig_enabled(&r, "cgroup"));
    ASSERT(!rig_enabled(&r, "cpu"));
    rig_sample(&r, T0_NS);
    rig_advance(&r, "tests/data/cgroup-v1/t1");
    rig_sample(&r, T1_NS);
    ASSERT_EQ_STR(must_series(&r.t, "cgroup.mem_used_bytes", "")->meta,
                  "{\"memory\":\"v1\",\"cpu\":\"v1\",\"path\":\"/docker/0123abcd\"}");
    /* usage 524288000 -> 536870912 */
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 0), 524288000.0, 0);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 1), 536870912.0, 0);
    /* limit_in_bytes 4 GiB, but hierarchical_memory_limit (a parent's) 2 GiB */
    ASSERT_EQ_INT(count_of(&r.t, "cgroup.mem_limit_bytes", ""), 2);
    ASSERT_NEAR(last_of(&r.t, "cgroup.mem_limit_bytes", ""), 2147483648.0, 0);
    /* the cpu,cpuacct mount: nr_throttled 0 -> 50, throttled_time 0 -> 0.5e9 ns */
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_per_s", ""), 50.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_pct", ""), 50.0, TOL);
    rig_close(&r);
}

TEST(cgroup_v2)
{
    struct rig r;
    rig_open(&r, "tests/data/cgroup-v2/t0", 0, "cgroup", NULL);
    rig_sample(&r, T0_NS);
    rig_advance(&r, "tests/data/cgroup-v2/t1");
    rig_sample(&r, T1_NS);
    ASSERT_EQ_STR(must_series(&r.t, "cgroup.mem_used_bytes", "")->meta,
                  "{\"memory\":\"v2\",\"cpu\":\"v2\",\"path\":\"/system.slice/train.service\"}");
    /* memory.current 2 GiB -> 3 GiB (not the parent slice's 4 GiB -> 5 GiB) */
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 0), 2147483648.0, 0);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_used_bytes", "", 1), 3221225472.0, 0);
    /* memory.max "max" (and "max" above it) at t0; 6442450944 at t1 */
    double limit0 = value_at(&r.t, "cgroup.mem_limit_bytes", "", 0);
    ASSERT(isinf(limit0) && limit0 > 0);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_limit_bytes", "", 1), 6442450944.0, 0);
    /* nr_throttled 20 -> 30; throttled_usec 400000 -> 700000: 0.3 s of 1 s */
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_per_s", ""), 10.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "cgroup.throttled_pct", ""), 30.0, TOL);
    rig_close(&r);
}

TEST(cgroup_v2_ancestor_limit_binds)
{
    /* a limit on the parent slice binds the job even when its own is "max" */
    static const char *const over[] = {"sys/fs/cgroup/system.slice/memory.max", "1073741824\n",
                                       NULL};
    struct rig r;
    rig_open(&r, "tests/data/cgroup-v2/t0", 0, "cgroup", over);
    rig_sample(&r, T0_NS);
    rig_advance(&r, "tests/data/cgroup-v2/t1"); /* puts the parent's "max" back: read at init */
    rig_sample(&r, T1_NS);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_limit_bytes", "", 0), 1073741824.0, 0);
    ASSERT_NEAR(value_at(&r.t, "cgroup.mem_limit_bytes", "", 1), 1073741824.0, 0);
    rig_close(&r);
}

TEST(cgroup_missing_turns_collector_off)
{
    static const char *const over[] = {"proc/self/mountinfo", NULL, NULL};
    struct rig r;
    rig_open(&r, "tests/data/cgroup-v2/t0", 0, "cgroup", over);
    ASSERT(!rig_enabled(&r, "cgroup"));
    rig_sample(&r, T0_NS);
    ASSERT_EQ_INT(find_series(&r.t, "cgroup.mem_used_bytes", ""), -1);
    rig_close(&r);
}

/* ---- the job's process tree ------------------------------------------------- */

TEST(proc_tree_totals)
{
    struct rig r;
    run_proc_a(&r);
    /* t0: 4000 python, 4001 "a) b) c", 4002 "(worker (2", 4003 dataloader_wrk0
     * (found through thread 4005's children), 4008 gcc. t1: 4008 reaped by
     * 4000; 4004 sh (child of 4001) and 4100 sleep (an orphan re-parented to
     * the recorder, 3000) appear. */
    ASSERT_NEAR(value_at(&r.t, "proc.count", "", 0), 5, 0);
    ASSERT_NEAR(value_at(&r.t, "proc.count", "", 1), 6, 0);
    /* utime+stime+cutime+cstime:
     *   t0: 640 + 250 + 120 + 50 + 30                  = 1090
     *   t1: 763 (cutime 52, cstime 21 now hold gcc's 33) + 308 + 155 + 75
     *       + 5 (sh) + 1 (sleep)                       = 1307
     * 217 ticks over 1 s at 100 ticks/s = 217% */
    ASSERT_EQ_INT(count_of(&r.t, "proc.cpu", ""), 1);
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", ""), 217.0, TOL);
    /* resident pages (statm; 4000's is 100 pages above its stat rss, which
     * lags): t0: 25100+5000+3000+2000+1000 = 36100;
     *        t1: 25700+5100+3000+2048+200+150 = 36198 */
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "", 0), 36100.0 * 4096, 0);
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "", 1), 36198.0 * 4096, 0);
    /* threads t0: 3+1+2+1+1 = 8; t1: 3+1+2+1+1+1 = 9 */
    ASSERT_NEAR(value_at(&r.t, "proc.threads", "", 0), 8, 0);
    ASSERT_NEAR(value_at(&r.t, "proc.threads", "", 1), 9, 0);
    /* read_bytes (4002 has no io file):
     *   t0: 4096000 + 0 + 409600 + 8192               = 4513792
     *   t1: 5152768 + 4096 + 2506752 + 0 + 0          = 7663616 -> 3149824/s
     * write_bytes t0: 1024000 + 0 + 0 + 4096         = 1028096
     *             t1: 1556480 + 8192 + 0 + 0 + 0     = 1564672 -> 536576/s
     * rchar t0: 10000000+50000+1000000+20000          = 11070000
     *       t1: 11024000+60000+3000000+1000+500       = 14085500 -> 3015500/s
     * wchar t0: 2000000+1000+0+10000                  = 2011000
     *       t1: 2512000+2000+0+100+0                  = 2514100 -> 503100/s */
    ASSERT_NEAR(last_of(&r.t, "proc.read_bytes_per_s", ""), 3149824.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.write_bytes_per_s", ""), 536576.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.rchar_per_s", ""), 3015500.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.wchar_per_s", ""), 503100.0, TOL);
    /* context switches (schedstat's third field) of processes seen at both
     * samples: 4000 1200 -> 1350, 4001 15 -> 40, 4002 200 -> 270, 4003 50 -> 85;
     * and 4004's 3, forked since t0 (from zero); not 4100's, older than t0 */
    ASSERT_NEAR(last_of(&r.t, "proc.ctx_switches_per_s", ""), 150 + 25 + 70 + 35 + 3, TOL);
    ASSERT(!proc_tree_find(&r.tree, 4008));
    ASSERT(proc_tree_find(&r.tree, 4004));
    ASSERT(proc_tree_find(&r.tree, 4100));
    ASSERT(!proc_tree_find(&r.tree, SELF_PID)); /* the recorder is not part of the job */
    ASSERT_EQ_U64(r.tree.series_procs, 7);      /* every process seen got its series */
    rig_close(&r);
}

TEST(proc_per_process_series)
{
    struct rig r;
    run_proc_a(&r);
    /* 4000: utime+stime 600 -> 690 (cutime/cstime are its children's): 90% */
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", "pid=4000"), 90.0, TOL);
    /* statm resident 25100 -> 25700 pages (stat's rss says 25000 -> 25600) */
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "pid=4000", 0), 25100.0 * 4096, 0);
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "pid=4000", 1), 25700.0 * 4096, 0);
    ASSERT_NEAR(last_of(&r.t, "proc.threads", "pid=4000"), 3, 0);
    /* read_bytes 4096000 -> 5152768, write_bytes 1024000 -> 1556480 */
    ASSERT_NEAR(last_of(&r.t, "proc.read_bytes_per_s", "pid=4000"), 1056768.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.write_bytes_per_s", "pid=4000"), 532480.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.ctx_switches_per_s", "pid=4000"), 150.0, TOL);
    /* 4001: 250 -> 300: 50%; 4002: 120 -> 155: 35%; 4003: 50 -> 75: 25% */
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", "pid=4001"), 50.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", "pid=4002"), 35.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", "pid=4003"), 25.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.rss_bytes", "pid=4003"), 2048.0 * 4096, 0);
    ASSERT_NEAR(last_of(&r.t, "proc.read_bytes_per_s", "pid=4002"), 0.0, 0); /* no io */
    /* new at t1 and forked since t0 (starttime 1000.5 s): its counters
     * started from zero then, so its first interval has rates: 3+2 ticks
     * over the 1 s since t0 */
    ASSERT_EQ_INT(count_of(&r.t, "proc.rss_bytes", "pid=4004"), 1);
    ASSERT_EQ_INT(count_of(&r.t, "proc.cpu", "pid=4004"), 1);
    ASSERT_NEAR(last_of(&r.t, "proc.cpu", "pid=4004"), 5.0, TOL);
    ASSERT_NEAR(last_of(&r.t, "proc.ctx_switches_per_s", "pid=4004"), 3.0, TOL);
    /* new at t1 but older than t0 (an orphan come back, starttime 990 s):
     * a level, no rate yet */
    ASSERT_NEAR(last_of(&r.t, "proc.rss_bytes", "pid=4100"), 150.0 * 4096, 0);
    ASSERT_EQ_INT(count_of(&r.t, "proc.cpu", "pid=4100"), 0);
    /* gone at t1: its series keep what they had, sealed, their buffer given back */
    ASSERT_EQ_INT(count_of(&r.t, "proc.rss_bytes", "pid=4008"), 1);
    ASSERT(must_series(&r.t, "proc.rss_bytes", "pid=4008")->open_buf == NULL);
    ASSERT_EQ_INT(find_series(&r.t, "proc.cpu", "pid=3000"), -1);
    rig_close(&r);
}

TEST(proc_comm_in_series_meta)
{
    struct rig r;
    run_proc_a(&r);
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4000")->meta,
                  "{\"pid\":4000,\"ppid\":3000,\"comm\":\"python\",\"root\":true}");
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4001")->meta,
                  "{\"pid\":4001,\"ppid\":4000,\"comm\":\"a) b) c\",\"root\":false}");
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4002")->meta,
                  "{\"pid\":4002,\"ppid\":4000,\"comm\":\"(worker (2\",\"root\":false}");
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4003")->meta,
                  "{\"pid\":4003,\"ppid\":4000,\"comm\":\"dataloader_wrk0\",\"root\":false}");
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4004")->meta,
                  "{\"pid\":4004,\"ppid\":4001,\"comm\":\"sh\",\"root\":false}");
    ASSERT_EQ_STR(must_series(&r.t, "proc.cpu", "pid=4100")->meta,
                  "{\"pid\":4100,\"ppid\":3000,\"comm\":\"sleep\",\"root\":false}");
    rig_close(&r);
}

TEST(proc_rss_without_statm_is_stat_rss)
{
    static const char *const over[] = {"proc/4000/statm", NULL, NULL};
    struct rig r;
    rig_open(&r, PROC_A0, ROOT_PID, "proc", over);
    rig_sample(&r, T0_NS);
    /* the copy of t1 brings a statm back, but the fd was never opened */
    rig_advance(&r, PROC_A1);
    rig_sample(&r, T1_NS);
    /* stat field 24: 25000 -> 25600 pages */
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "pid=4000", 0), 25000.0 * 4096, 0);
    ASSERT_NEAR(value_at(&r.t, "proc.rss_bytes", "pid=4000", 1), 25600.0 * 4096, 0);
    rig_close(&r);
}

/* Every point of every proc.* series of a, in b too, the same. */
static void same_proc_series(const struct series_table *a, const struct series_table *b)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->count; i++) {
        const struct series *s = &a->items[i];
        if (strncmp(s->name, "proc.", 5) != 0)
            continue;
        const struct series *o = must_series(b, s->name, s->labels);
        if (count_of(a, s->name, s->labels) != count_of(b, s->name, s->labels))
            TEST_FAIL("%s{%s}: %u points, %u with every fd kept", s->name, s->labels,
                      count_of(a, s->name, s->labels), count_of(b, s->name, s->labels));
        for (uint32_t k = 0; k < s->enc.st.count; k++)
            if (value_at(a, s->name, s->labels, k) != value_at(b, s->name, s->labels, k))
                TEST_FAIL("%s{%s} point %u: %g, %g with every fd kept", s->name, s->labels, k,
                          value_at(a, s->name, s->labels, k), value_at(b, s->name, s->labels, k));
        n += o != NULL;
    }
    ASSERT(n > 20);
}

/* Past its fd budget the tree keeps no fds for a process and reads it by
 * name: the same numbers, whatever the budget, and no more fds kept than
 * it allows (a /proc/PID and five files a process through procfs). */
TEST(proc_tree_past_the_fd_budget_reads_by_name)
{
    struct rig full;
    run_proc_a(&full);
    ASSERT(full.tree.fds > 5 * full.tree.n); /* 4002 has no io */
    ASSERT(full.tree.fds <= 6 * full.tree.n);
    static const uint32_t budgets[] = {0, 5, 6, 13, 20};
    for (size_t i = 0; i < ARRAY_SIZE(budgets); i++) {
        struct rig r;
        rig_fd_budget = budgets[i];
        rig_open(&r, PROC_A0, ROOT_PID, NULL, NULL);
        rig_sample(&r, T0_NS);
        ASSERT(r.tree.fds <= budgets[i]);
        rig_advance(&r, PROC_A1);
        rig_sample(&r, T1_NS);
        ASSERT(r.tree.fds <= budgets[i]);
        ASSERT(r.tree.fds >= budgets[i] / 6 * 5);
        same_proc_series(&r.t, &full.t);
        int err;
        ASSERT_EQ_U64(proc_tree_unfollowed(&r.tree, &err), 0);
        rig_close(&r);
    }
    rig_fd_budget = -1;
    rig_close(&full);
}

/* Out of fds altogether: the processes found still count in proc.count,
 * and the tree says how many it could not read, and why. Once fds are
 * back they are read, and their series begin. */
TEST(proc_tree_out_of_fds_counts_and_says_so)
{
    struct rig r;
    rig_open(&r, PROC_A0, ROOT_PID, "proc", NULL); /* the root keeps its fds */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT(fd >= 0);
    close(fd); /* the lowest free fd: no more from here */
    struct rlimit old, none;
    ASSERT_EQ_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
    none = old;
    none.rlim_cur = (rlim_t)fd;
    ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &none), 0);
    rig_sample(&r, T0_NS);
    ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &old), 0);
    /* 4000, and its main thread's children 4001, 4002, 4008, unread (4003
     * hangs off a thread, whose children the walk could not open) */
    ASSERT_NEAR(value_at(&r.t, "proc.count", "", 0), 4, 0);
    int err;
    ASSERT_EQ_U64(proc_tree_unfollowed(&r.tree, &err), 4);
    ASSERT_EQ_INT(err, EMFILE);
    ASSERT_EQ_INT(find_series(&r.t, "proc.cpu", "pid=4001"), -1);
    rig_advance(&r, PROC_A1);
    rig_sample(&r, T1_NS);
    /* fds again: all six of t1 (proc_tree_totals) are read */
    ASSERT_NEAR(value_at(&r.t, "proc.count", "", 1), 6, 0);
    ASSERT_EQ_INT(count_of(&r.t, "proc.rss_bytes", "pid=4001"), 1);
    ASSERT_EQ_U64(proc_tree_unfollowed(&r.tree, &err), 4);
    rig_close(&r);
}

/* A generated process of the churn test: a child of the root, older than
 * the first frame, with just the files the procfs source reads. */
static void churn_spawn(struct rig *r, pid_t pid)
{
    char path[1200], buf[512];
    snprintf(path, sizeof(path), "%s/%d/task/%d", r->proc, (int)pid, (int)pid);
    char cmd[1300];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
    ASSERT_EQ_INT(system(cmd), 0);
    snprintf(buf, sizeof(buf),
             "%d (gen) S %d 1 1 0 -1 0 0 0 0 0 %d 1 0 0 20 0 1 0 99000 1000 10 0 0 0 0 0 0 0 0 "
             "0 0 0 0 0 17 1 0 0 0 0 0\n",
             (int)pid, ROOT_PID, (int)pid % 7);
    snprintf(path, sizeof(path), "%s/%d/stat", r->proc, (int)pid);
    fixture_write_str(path, buf);
    snprintf(path, sizeof(path), "%s/%d/statm", r->proc, (int)pid);
    fixture_write_str(path, "1000 10 5 1 0 100 0\n");
    snprintf(path, sizeof(path), "%s/%d/task/%d/children", r->proc, (int)pid, (int)pid);
    fixture_write_str(path, "");
}

/* Processes come and go by the hundred, the way a pool of workers does:
 * after every frame the tree holds exactly the live ones, each found by its
 * pid (the pid index: open addressing, entries moved on removal). */
TEST(proc_tree_follows_a_churning_tree)
{
    enum { POOL = 600, ROUNDS = 12 };
    static uint8_t live[POOL];
    static pid_t pids[POOL];
    struct rig r;
    rig_open(&r, PROC_A0, ROOT_PID, "proc", NULL);
    uint32_t seed = 12345;
    /* random pids, as a busy host hands them out: consecutive ones would
     * never collide in the index and leave its deletion untested */
    for (int i = 0; i < POOL; i++) {
        int fresh;
        do {
            seed = seed * 1103515245u + 12345u;
            pids[i] = 5000 + (pid_t)((seed >> 8) % 4000000u);
            fresh = 1;
            for (int k = 0; k < i; k++)
                fresh &= pids[k] != pids[i];
        } while (!fresh);
    }
    char path[1200];
    snprintf(path, sizeof(path), "%s/%d/task/%d/children", r.proc, ROOT_PID, ROOT_PID);
    static char list[POOL * 9 + 64];
    for (int round = 0; round < ROUNDS; round++) {
        size_t len = (size_t)snprintf(list, sizeof(list), "4001 4002 ");
        for (int i = 0; i < POOL; i++) {
            seed = seed * 1103515245u + 12345u;
            int want = (seed >> 16) % 3 != 0; /* two thirds alive each round */
            pid_t pid = pids[i];
            if (want && !live[i])
                churn_spawn(&r, pid);
            if (!want && live[i]) { /* gone: procfs then shows an empty stat */
                char stat[1200];
                snprintf(stat, sizeof(stat), "%s/%d/stat", r.proc, (int)pid);
                fixture_write_str(stat, "");
            }
            live[i] = (uint8_t)want;
            if (want)
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%d ", (int)pid);
        }
        fixture_write_str(path, list);
        rig_sample(&r, T0_NS + round * NS_PER_S);
        uint32_t n_live = 0;
        for (int i = 0; i < POOL; i++) {
            struct proc_entry *e = proc_tree_find(&r.tree, pids[i]);
            if (live[i] && (!e || e->pid != pids[i]))
                TEST_FAIL("round %d: live pid %d not found", round, (int)pids[i]);
            if (!live[i] && e)
                TEST_FAIL("round %d: gone pid %d still found", round, (int)pids[i]);
            n_live += live[i];
        }
        /* the root, 4001, 4002 (4003 hangs off a thread, found by the once-a-
         * second walk), and the live pool */
        for (uint32_t i = 0; i < r.tree.n; i++)
            ASSERT(proc_tree_find(&r.tree, r.tree.e[i].pid) == &r.tree.e[i]);
        ASSERT(r.tree.n >= n_live + 3);
        ASSERT(r.tree.n <= n_live + 5);
    }
    rig_close(&r);
}

TEST_MAIN(proc_tree_follows_a_churning_tree, all_collectors_start_on_proc_a,
          cpu_util_total_and_per_core, mem_used_is_total_minus_available, psi_rates_from_totals,
          disk_rates_and_util, disk_rates_from_diskstats, net_rates, cgroup_hybrid, cgroup_v1,
          cgroup_v2, cgroup_v2_ancestor_limit_binds, cgroup_missing_turns_collector_off,
          proc_tree_totals, proc_per_process_series, proc_comm_in_series_meta,
          proc_rss_without_statm_is_stat_rss, proc_tree_past_the_fd_budget_reads_by_name,
          proc_tree_out_of_fds_counts_and_says_so)
