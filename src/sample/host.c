/*
 * Host collectors: CPU per core and total, memory and swap, pressure stall
 * information, block devices and network interfaces. Metric names follow the
 * architecture brief; utilisations are percent 0-100, sizes bytes, rates per
 * second.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/label.h"
#include "sample/collector.h"
#include "sample/parse.h"
#include "sample/pfile.h"

#define MAX_CORES        1024
#define VMSTAT_PERIOD_NS 1000000000LL

/* ---- cpu: /proc/stat ---------------------------------------------------- */

struct cpu_state {
    struct pfile stat;
    struct cpu_ticks prev_total;
    struct cpu_ticks prev_core[MAX_CORES];
    struct cpu_ticks core[MAX_CORES];
    uint8_t seen[MAX_CORES];
    uint8_t prev_seen[MAX_CORES];
    uint32_t s_core[MAX_CORES]; /* series index + 1; 0 until first seen */
    uint32_t s_util, s_user, s_system, s_iowait, s_steal;
    int ncores; /* one past the highest core id seen */
    int have_prev;
    int64_t min_window_ns; /* one 1/USER_HZ tick: what /proc/stat counts in */
    int64_t prev_mono_ns;  /* the frame of prev_total */
};

static uint64_t ticks_sum(const struct cpu_ticks *t)
{
    /* guest time is already inside user (proc(5)), so it is not added */
    return t->user + t->nice + t->system + t->idle + t->iowait + t->irq + t->softirq + t->steal;
}

static double share_pct(uint64_t part, uint64_t whole)
{
    return whole ? pct_step(100.0 * (double)part / (double)whole) : 0.0;
}

/* Differences of two tick sets; a counter that went back (CPU hot-plug)
 * reads as zero rather than wrapping. */
static uint64_t tick_delta(uint64_t now, uint64_t before)
{
    return now >= before ? now - before : 0;
}

static int cpu_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct cpu_state *s = state;
    s->stat = (struct pfile)PFILE_INIT;
    int rc = pfile_open(&s->stat, env->proc_fd, "stat");
    if (rc < 0)
        return rc;
    s->min_window_ns = NS_PER_S / (env->ticks_per_s > 0 ? env->ticks_per_s : 100);
    if ((rc = series_get_metric(t, METRIC_CPU_UTIL, "", &s->s_util)) < 0 ||
        (rc = series_get_metric(t, METRIC_CPU_USER, "", &s->s_user)) < 0 ||
        (rc = series_get_metric(t, METRIC_CPU_SYSTEM, "", &s->s_system)) < 0 ||
        (rc = series_get_metric(t, METRIC_CPU_IOWAIT, "", &s->s_iowait)) < 0 ||
        (rc = series_get_metric(t, METRIC_CPU_STEAL, "", &s->s_steal)) < 0)
        return rc;
    return 0;
}

/* One core's point; 0 when no tick of it has been counted since its last
 * point (its window then goes on into the next frame). */
static int cpu_put_core(struct cpu_state *s, struct series_table *t, int i)
{
    if (!s->s_core[i]) {
        char labels[32];
        uint32_t idx;
        snprintf(labels, sizeof(labels), "core=%d", i);
        if (series_get_metric(t, METRIC_CPU_UTIL, labels, &idx) < 0)
            return 1;
        s->s_core[i] = idx + 1;
    }
    uint64_t idle = tick_delta(s->core[i].idle, s->prev_core[i].idle) +
                    tick_delta(s->core[i].iowait, s->prev_core[i].iowait);
    uint64_t all = tick_delta(ticks_sum(&s->core[i]), ticks_sum(&s->prev_core[i]));
    if (!all)
        return 0;
    series_put(t, s->s_core[i] - 1, share_pct(all - (idle < all ? idle : all), all));
    return 1;
}

static int cpu_sample(void *state, struct sample_ctx *ctx)
{
    struct cpu_state *s = state;
    struct series_table *t = ctx->series;
    struct cpu_ticks total;
    /* /proc/stat counts in ticks of 1/USER_HZ s (10 ms): a shorter window
     * sees no tick in most frames, and a share of no ticks is no reading
     * (reading it as 0 % put a half-busy host at 10 % at 1 ms). At short
     * intervals the cpu series therefore have a point every few frames. */
    if (s->have_prev && ctx->mono_ns - s->prev_mono_ns < s->min_window_ns)
        return 0;
    int rc = pfile_read(&s->stat);
    if (rc < 0)
        return rc;
    if (parse_proc_stat(s->stat.buf, s->stat.len, &total, s->core, s->seen, MAX_CORES) < 0)
        return -EINVAL;
    const uint8_t *last = memrchr(s->seen, 1, MAX_CORES);
    if (last && last - s->seen + 1 > s->ncores)
        s->ncores = (int)(last - s->seen + 1);
    if (s->have_prev) {
        const struct cpu_ticks *p = &s->prev_total;
        uint64_t all = tick_delta(ticks_sum(&total), ticks_sum(p));
        if (!all) /* not a tick yet: this window goes on */
            return 0;
        uint64_t idle = tick_delta(total.idle, p->idle) + tick_delta(total.iowait, p->iowait);
        uint64_t busy = all > idle ? all - idle : 0;
        series_put(t, s->s_util, share_pct(busy, all));
        series_put(t, s->s_user,
                   share_pct(tick_delta(total.user + total.nice, p->user + p->nice), all));
        series_put(t, s->s_system,
                   share_pct(tick_delta(total.system + total.irq + total.softirq,
                                        p->system + p->irq + p->softirq),
                             all));
        series_put(t, s->s_iowait, share_pct(tick_delta(total.iowait, p->iowait), all));
        series_put(t, s->s_steal, share_pct(tick_delta(total.steal, p->steal), all));
    }
    /* only up to the highest core seen: the arrays are sized for 1024 */
    for (int i = 0; i < s->ncores; i++)
        if (!(s->have_prev && s->seen[i] && s->prev_seen[i]) || cpu_put_core(s, t, i))
            s->prev_core[i] = s->core[i];
    s->prev_total = total;
    memcpy(s->prev_seen, s->seen, (size_t)s->ncores);
    s->prev_mono_ns = ctx->mono_ns;
    s->have_prev = 1;
    return 0;
}

static void cpu_fini(void *state)
{
    struct cpu_state *s = state;
    pfile_release(&s->stat);
}

const struct collector_ops collector_cpu = {
    "cpu", sizeof(struct cpu_state), cpu_init, cpu_sample, cpu_fini,
};

/* ---- mem: /proc/meminfo and /proc/vmstat -------------------------------- */

struct mem_state {
    struct pfile meminfo, vmstat;
    struct rate_counter pswpin, pswpout;
    struct read_time prev; /* of /proc/vmstat; due_ns 0 before the first */
    long page_bytes;
    uint32_t s_total, s_used, s_avail, s_swap_used, s_swapin, s_swapout;
};

static int mem_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct mem_state *s = state;
    s->meminfo = (struct pfile)PFILE_INIT;
    s->vmstat = (struct pfile)PFILE_INIT;
    s->page_bytes = env->page_bytes;
    int rc = pfile_open(&s->meminfo, env->proc_fd, "meminfo");
    if (rc < 0)
        return rc;
    if (pfile_open(&s->vmstat, env->proc_fd, "vmstat") < 0)
        s->vmstat.fd = -1; /* swap rates are then not recorded */
    if ((rc = series_get_metric(t, METRIC_MEM_TOTAL_BYTES, "", &s->s_total)) < 0 ||
        (rc = series_get_metric(t, METRIC_MEM_USED_BYTES, "", &s->s_used)) < 0 ||
        (rc = series_get_metric(t, METRIC_MEM_AVAILABLE_BYTES, "", &s->s_avail)) < 0 ||
        (rc = series_get_metric(t, METRIC_MEM_SWAP_USED_BYTES, "", &s->s_swap_used)) < 0)
        return rc;
    if (s->vmstat.fd >= 0 &&
        ((rc = series_get_metric(t, METRIC_MEM_SWAPIN_PER_S, "", &s->s_swapin)) < 0 ||
         (rc = series_get_metric(t, METRIC_MEM_SWAPOUT_PER_S, "", &s->s_swapout)) < 0))
        return rc;
    return 0;
}

static int mem_sample(void *state, struct sample_ctx *ctx)
{
    struct mem_state *s = state;
    struct series_table *t = ctx->series;
    struct meminfo mi;
    int rc = pfile_read(&s->meminfo);
    if (rc < 0)
        return rc;
    if (parse_meminfo(s->meminfo.buf, s->meminfo.len, &mi) < 0)
        return -EINVAL;
    /* used = total - available, as free(1) of procps 4 and psutil's "used"
     * intent: memory that cannot be handed to a new process without swapping. */
    series_put(t, s->s_total, (double)mi.total_bytes);
    series_put(
        t, s->s_used,
        (double)(mi.total_bytes > mi.available_bytes ? mi.total_bytes - mi.available_bytes : 0));
    series_put(t, s->s_avail, (double)mi.available_bytes);
    series_put(t, s->s_swap_used,
               (double)(mi.swap_total_bytes > mi.swap_free_bytes
                            ? mi.swap_total_bytes - mi.swap_free_bytes
                            : 0));
    /* /proc/vmstat is ~190 lines that cost the kernel ~20 us to write, for
     * two counters: swap rates are read once a second, whatever the interval */
    uint64_t in, out;
    if (s->prev.due_ns && ctx->mono_ns - s->prev.due_ns < VMSTAT_PERIOD_NS)
        return 0;
    if (s->vmstat.fd >= 0 && pfile_read(&s->vmstat) == 0 &&
        parse_vmstat_swap(s->vmstat.buf, s->vmstat.len, &in, &out) == 0) {
        if (s->prev.due_ns) {
            series_put(t, s->s_swapin, counter_rate(ctx, &s->prev, &s->pswpin, in));
            series_put(t, s->s_swapout, counter_rate(ctx, &s->prev, &s->pswpout, out));
        } else {
            rate_counter_start(&s->pswpin, in);
            rate_counter_start(&s->pswpout, out);
        }
        read_time_set(&s->prev, ctx);
    }
    return 0;
}

static void mem_fini(void *state)
{
    struct mem_state *s = state;
    pfile_release(&s->meminfo);
    pfile_release(&s->vmstat);
}

const struct collector_ops collector_mem = {
    "mem", sizeof(struct mem_state), mem_init, mem_sample, mem_fini,
};

/* ---- psi: /proc/pressure ------------------------------------------------- */

enum { PSI_CPU, PSI_MEM, PSI_IO, PSI_COUNT };

struct psi_state {
    struct pfile file[PSI_COUNT];
    struct rate_counter some[PSI_COUNT], full[PSI_COUNT];
    struct read_time prev[PSI_COUNT]; /* due_ns 0 before the first read */
    uint32_t s_some[PSI_COUNT], s_full[PSI_COUNT];
};

static const struct {
    const char *path;
    enum metric_id some;
    enum metric_id full; /* METRIC_COUNT: full is not meaningful (cpu at system level) */
} psi_files[PSI_COUNT] = {
    {"pressure/cpu", METRIC_PSI_CPU_SOME, METRIC_COUNT},
    {"pressure/memory", METRIC_PSI_MEM_SOME, METRIC_PSI_MEM_FULL},
    {"pressure/io", METRIC_PSI_IO_SOME, METRIC_PSI_IO_FULL},
};

static int psi_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct psi_state *s = state;
    int opened = 0, rc;
    for (int i = 0; i < PSI_COUNT; i++) {
        s->file[i] = (struct pfile)PFILE_INIT;
        if (pfile_open(&s->file[i], env->proc_fd, psi_files[i].path) < 0)
            continue;
        opened++;
        if ((rc = series_get_metric(t, psi_files[i].some, "", &s->s_some[i])) < 0)
            return rc;
        if (psi_files[i].full != METRIC_COUNT &&
            (rc = series_get_metric(t, psi_files[i].full, "", &s->s_full[i])) < 0)
            return rc;
    }
    return opened ? 0 : -ENOENT;
}

/* A share of the time is at most all of it. A read preempted inside the
 * syscall (tens of ms, when the job keeps every core busy) is generated at
 * some instant within it, so one window can hold a little more stall than
 * its length: 109 % read by a reader that timed each read itself. */
static double at_most_all(double pct)
{
    return pct > 100.0 ? 100.0 : pct_step(pct);
}

static int psi_sample(void *state, struct sample_ctx *ctx)
{
    struct psi_state *s = state;
    for (int i = 0; i < PSI_COUNT; i++) {
        uint64_t some, full;
        /* each file at its own read: a recorder preempted between two (the
         * host is busy when stalls matter) reads the next one late */
        if (i && ctx->measure_reads)
            ctx->read_ns = clock_monotonic_ns();
        if (s->file[i].fd < 0 || pfile_read(&s->file[i]) < 0 ||
            parse_psi(s->file[i].buf, s->file[i].len, &some, &full) < 0)
            continue;
        if (s->prev[i].due_ns) {
            /* total= is stall time in µs: its rate over wall time is the
             * stalled share, exact, where avg10 is a 10 s moving average. */
            series_put(ctx->series, s->s_some[i],
                       at_most_all(counter_rate(ctx, &s->prev[i], &s->some[i], some) / 1e4));
            if (psi_files[i].full != METRIC_COUNT)
                series_put(ctx->series, s->s_full[i],
                           at_most_all(counter_rate(ctx, &s->prev[i], &s->full[i], full) / 1e4));
        } else {
            rate_counter_start(&s->some[i], some);
            rate_counter_start(&s->full[i], full);
        }
        read_time_set(&s->prev[i], ctx);
    }
    return 0;
}

static void psi_fini(void *state)
{
    struct psi_state *s = state;
    for (int i = 0; i < PSI_COUNT; i++)
        pfile_release(&s->file[i]);
}

const struct collector_ops collector_psi = {
    "psi", sizeof(struct psi_state), psi_init, psi_sample, psi_fini,
};

/* ---- disk: /sys/block/DEV/stat, else /proc/diskstats ----------------------- */

#define MAX_DEVS 64

struct dev_slot {
    char name[32];
    struct pfile stat;           /* disk: /sys/block/DEV/stat when per-device */
    struct rate_counter a, b, c; /* counters (meaning per collector) */
    struct read_time prev;       /* of the counters; due_ns 0 before the first */
    uint32_t s_a, s_b, s_c;      /* series */
    uint8_t used;
    uint8_t admitted; /* looked at: series made, or skip set */
    uint8_t skip;     /* not a whole disk, or an idle loop/ram device */
};

struct dev_state {
    struct pfile file;
    int sys_fd;
    int per_device; /* read each disk's own small stat file, not diskstats */
    struct dev_slot dev[MAX_DEVS];
};

static struct dev_slot *dev_find(struct dev_state *s, const char *name)
{
    struct dev_slot *free_slot = NULL;
    for (int i = 0; i < MAX_DEVS; i++) {
        if (s->dev[i].used && strcmp(s->dev[i].name, name) == 0)
            return &s->dev[i];
        if (!s->dev[i].used && !free_slot)
            free_slot = &s->dev[i];
    }
    if (free_slot) {
        memset(free_slot, 0, sizeof(*free_slot));
        free_slot->stat = (struct pfile)PFILE_INIT;
        snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
        free_slot->used = 1;
    }
    return free_slot;
}

/* Whole disks have a directory in /sys/block; partitions do not. */
static int is_whole_disk(int sys_fd, const char *name)
{
    char path[64];
    snprintf(path, sizeof(path), "block/%s", name);
    return faccessat(sys_fd, path, F_OK, 0) == 0;
}

static int dev_labels(const char *key, const char *name, char *out, size_t cap)
{
    return label_format(out, cap, key, name); /* an interface may be named "x,y=z" */
}

static int disk_admit(struct dev_state *s, struct dev_slot *d, const struct diskstat *ds,
                      struct series_table *t)
{
    int virtual_idle = (strncmp(ds->name, "loop", 4) == 0 || strncmp(ds->name, "ram", 3) == 0) &&
                       ds->reads == 0 && ds->writes == 0;
    d->admitted = 1;
    if (!is_whole_disk(s->sys_fd, ds->name) || virtual_idle) {
        d->skip = 1;
        return 0;
    }
    char labels[64]; /* a name of 15 bytes, each escaped to 3 */
    int rc;
    if ((rc = dev_labels("dev", ds->name, labels, sizeof(labels))) < 0 ||
        (rc = series_get_metric(t, METRIC_DISK_READ_BYTES_PER_S, labels, &d->s_a)) < 0 ||
        (rc = series_get_metric(t, METRIC_DISK_WRITE_BYTES_PER_S, labels, &d->s_b)) < 0 ||
        (rc = series_get_metric(t, METRIC_DISK_UTIL, labels, &d->s_c)) < 0) {
        d->admitted = 0;
        return rc;
    }
    return 0;
}

/* diskstats lists every partition and loop device: /proc/diskstats costs the
 * kernel ~10 us to write here, a whole disk's own stat file ~1 us. Use the
 * small files when every disk has one; disks attached later are then not
 * seen (diskstats mode finds them). */
static int disk_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct dev_state *s = state;
    s->file = (struct pfile)PFILE_INIT;
    s->sys_fd = env->sys_fd;
    int rc = pfile_open(&s->file, env->proc_fd, "diskstats");
    if (rc < 0 || (rc = pfile_read(&s->file)) < 0)
        return rc;
    size_t pos = 0;
    struct diskstat ds;
    int opened = 0, missing = 0;
    while ((rc = parse_diskstats_next(s->file.buf, s->file.len, &pos, &ds)) != 0) {
        struct dev_slot *d = rc > 0 ? dev_find(s, ds.name) : NULL;
        if (!d || disk_admit(s, d, &ds, t) < 0 || d->skip)
            continue;
        char path[64];
        snprintf(path, sizeof(path), "block/%s/stat", d->name);
        if (pfile_open(&d->stat, s->sys_fd, path) == 0)
            opened++;
        else
            missing++;
    }
    s->per_device = opened > 0 && missing == 0;
    if (s->per_device)
        pfile_close(&s->file);
    return 0;
}

/* Two counters of a device (a and b) as rates, or their first reading. */
static void dev_put_pair(struct dev_slot *d, struct sample_ctx *ctx, uint64_t a, uint64_t b,
                         double scale)
{
    if (d->prev.due_ns) {
        series_put(ctx->series, d->s_a, counter_rate(ctx, &d->prev, &d->a, a) * scale);
        series_put(ctx->series, d->s_b, counter_rate(ctx, &d->prev, &d->b, b) * scale);
    } else {
        rate_counter_start(&d->a, a);
        rate_counter_start(&d->b, b);
    }
}

static void disk_put(struct dev_slot *d, const struct diskstat *ds, struct sample_ctx *ctx)
{
    if (d->prev.due_ns) {
        double util = counter_rate(ctx, &d->prev, &d->c, ds->io_ticks_ms) / 10.0;
        series_put(ctx->series, d->s_c, util > 100.0 ? 100.0 : pct_step(util));
    } else {
        rate_counter_start(&d->c, ds->io_ticks_ms);
    }
    /* the kernel counts 512-byte sectors whatever the device's own size */
    dev_put_pair(d, ctx, ds->sectors_read, ds->sectors_written, 512.0);
    read_time_set(&d->prev, ctx);
}

static void disk_sample_devices(struct dev_state *s, struct sample_ctx *ctx)
{
    for (int i = 0; i < MAX_DEVS; i++) {
        struct dev_slot *d = &s->dev[i];
        struct diskstat ds;
        if (d->used && !d->skip && d->stat.fd >= 0 && pfile_read(&d->stat) == 0 &&
            parse_block_stat(d->stat.buf, d->stat.len, &ds) == 0)
            disk_put(d, &ds, ctx);
    }
}

static int disk_sample_diskstats(struct dev_state *s, struct sample_ctx *ctx)
{
    int rc = pfile_read(&s->file);
    if (rc < 0)
        return rc;
    size_t pos = 0;
    struct diskstat ds;
    while ((rc = parse_diskstats_next(s->file.buf, s->file.len, &pos, &ds)) != 0) {
        struct dev_slot *d = rc > 0 ? dev_find(s, ds.name) : NULL;
        if (!d || (!d->admitted && disk_admit(s, d, &ds, ctx->series) < 0) || d->skip)
            continue;
        disk_put(d, &ds, ctx);
    }
    return 0;
}

static int disk_sample(void *state, struct sample_ctx *ctx)
{
    struct dev_state *s = state;
    if (s->per_device) {
        disk_sample_devices(s, ctx);
        return 0;
    }
    return disk_sample_diskstats(s, ctx);
}

static void dev_fini(void *state)
{
    struct dev_state *s = state;
    pfile_release(&s->file);
    for (int i = 0; i < MAX_DEVS; i++)
        if (s->dev[i].used)
            pfile_release(&s->dev[i].stat);
}

const struct collector_ops collector_disk = {
    "disk", sizeof(struct dev_state), disk_init, disk_sample, dev_fini,
};

/* ---- net: /proc/net/dev --------------------------------------------------- */

static int net_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct dev_state *s = state;
    (void)t;
    s->file = (struct pfile)PFILE_INIT;
    return pfile_open(&s->file, env->proc_fd, "net/dev");
}

static int net_sample(void *state, struct sample_ctx *ctx)
{
    struct dev_state *s = state;
    int rc = pfile_read(&s->file);
    if (rc < 0)
        return rc;
    size_t pos = 0;
    struct netdev nd;
    while ((rc = parse_netdev_next(s->file.buf, s->file.len, &pos, &nd)) != 0) {
        if (rc < 0)
            continue;
        struct dev_slot *d = dev_find(s, nd.name);
        if (!d)
            continue;
        if (!d->admitted) {
            char labels[64]; /* IFNAMSIZ 16: 15 bytes, each escaped to 3 */
            if (dev_labels("iface", nd.name, labels, sizeof(labels)) < 0 ||
                series_get_metric(ctx->series, METRIC_NET_RX_BYTES_PER_S, labels, &d->s_a) < 0 ||
                series_get_metric(ctx->series, METRIC_NET_TX_BYTES_PER_S, labels, &d->s_b) < 0)
                continue;
            d->admitted = 1;
        }
        dev_put_pair(d, ctx, nd.rx_bytes, nd.tx_bytes, 1.0);
        read_time_set(&d->prev, ctx);
    }
    return 0;
}

const struct collector_ops collector_net = {
    "net", sizeof(struct dev_state), net_init, net_sample, dev_fini,
};
