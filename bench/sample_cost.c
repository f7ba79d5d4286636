/*
 * CPU time of one full sample: every collector, a process tree of 10.
 *
 * The environment is set up as record/recorder.c does it (the same dirfds,
 * clock ticks, page size, self pid/tid, proc tree, all collectors, and the
 * recorder's own strobe.cpu point), then frames are taken back to back and
 * timed with the thread's CPU clock. Sealed blocks are handed back between
 * chunks of frames, outside the timed region, as the store writer does once
 * a second, so a warm frame is what a recorder's frame is.
 *
 * A frame's mono_ns is, as in the recorder, the frame's scheduled time: it
 * moves on 100 ms per frame, so what collectors do once a second (the walk of
 * every thread's children, /proc/vmstat) comes every 10th frame, as at the
 * default interval. The same frames on the real monotonic clock (that work
 * then comes about once in several thousand frames), frames on a clock that
 * moves a second per frame (every frame does it), and frames paced by real
 * sleeps (cold caches) are measured too.
 *
 *   build/bench/sample_cost [--frames N] [--reps R] [--warmup W]
 *                           [--paced-ms MS --paced-frames N]
 *                           [--proc-source auto|bpf|procfs] [--collectors LIST]
 *
 * The process tree is read as the recorder reads it: through BPF where the
 * kernel allows it (auto), or as --proc-source says; "proc_source" in the
 * output tells which.
 *
 * The floor under a frame is measured too: one pread of each host file the
 * collectors keep open and read every frame, on their own fds
 * ("host_files", "host_floor_us"), and one run of the BPF program over the
 * tree ("tree_bpf_read_us"). That is the kernel's work, which no parser or
 * encoder of strobe's can lower.
 *
 * Prints one JSON object on stdout. Times are CPU microseconds of the calling
 * thread (system calls included).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "sample/collector.h"
#include "sample/procbpf.h"
#include "sample/proctree.h"
#include "sample/series.h"

#define TREE_SIZE     10
#define CHUNK_FRAMES  1000
#define FRAME_STEP_NS (100 * NS_PER_MS) /* the default interval: frame times advance by it */
#define MAX_REPS      32
#define SCAN_FRAMES   2000

/* ---- allocation counting -------------------------------------------------
 * malloc and friends are replaced in this binary (glibc supports that) and
 * forward to glibc's own allocator, so every allocation made by the core
 * library while counting is on is seen. Not under a sanitizer, which brings
 * its own allocator. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define COUNT_ALLOCS 0
#endif
#endif
#ifndef COUNT_ALLOCS
#define COUNT_ALLOCS 1
#endif

static uint64_t alloc_calls;

#if COUNT_ALLOCS
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

void *malloc(size_t n)
{
    alloc_calls++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    alloc_calls++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    alloc_calls++;
    return __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}
#endif

/* ---- the process tree ------------------------------------------------------ */

static void sleep_forever(void)
{
    for (;;)
        pause();
}

/* Fork the root of the tree; it forks TREE_SIZE-1 children of its own, then
 * says so on the pipe. Every process dies with its parent. */
static pid_t start_tree(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return -1;
    pid_t root = fork();
    if (root < 0)
        return -1;
    if (root == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        setpgid(0, 0);
        close(fds[0]);
        for (int i = 0; i < TREE_SIZE - 1; i++) {
            pid_t c = fork();
            if (c == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(fds[1]);
                sleep_forever();
            }
        }
        char ok = 1;
        ssize_t w = write(fds[1], &ok, 1);
        (void)w;
        close(fds[1]);
        sleep_forever();
    }
    close(fds[1]);
    char ok = 0;
    ssize_t n;
    while ((n = read(fds[0], &ok, 1)) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    return n == 1 ? root : -1;
}

static void stop_tree(pid_t root)
{
    kill(-root, SIGKILL);
    kill(root, SIGKILL);
    int st;
    waitpid(root, &st, 0);
}

/* ---- the bench ------------------------------------------------------------- */

/* The clock frames read as mono_ns: the real one, or one that moves on by a
 * fixed step per frame (so work a collector does once a second comes once
 * every second of that clock, as in a recorder at that interval). */
enum clock_mode { CLOCK_REAL, CLOCK_STEP };

struct bench {
    struct series_table series;
    struct sample_env env;
    struct proc_tree tree;
    struct sampler sampler;
    uint32_t s_self_cpu;
    int64_t prev_self_cpu_ns, prev_self_mono_ns;
    enum clock_mode mode;
    int64_t step_ns;        /* CLOCK_STEP: per frame */
    int64_t step_now_ns;    /* CLOCK_STEP: the clock */
    int64_t real_offset_ns; /* CLOCK_REAL: added, so the clock never goes back */
};

static void set_clock(struct bench *b, enum clock_mode mode, int64_t step_ns)
{
    int64_t real = clock_monotonic_ns();
    if (b->mode == CLOCK_STEP && mode == CLOCK_REAL && b->step_now_ns > real + b->real_offset_ns)
        b->real_offset_ns = b->step_now_ns - real + NS_PER_MS;
    if (mode == CLOCK_STEP && b->mode == CLOCK_REAL)
        b->step_now_ns = real + b->real_offset_ns;
    b->mode = mode;
    b->step_ns = step_ns;
}

static int64_t bench_mono(struct bench *b)
{
    if (b->mode == CLOCK_STEP)
        return b->step_now_ns += b->step_ns;
    return clock_monotonic_ns() + b->real_offset_ns;
}

/* One frame, as sample_frame() in record/recorder.c takes it. */
static void frame(struct bench *b)
{
    struct sample_ctx ctx = {&b->series, &b->env, bench_mono(b), 0, b->mode == CLOCK_REAL};
    b->series.now_ns += FRAME_STEP_NS;
    sampler_sample(&b->sampler, &ctx);
    int64_t cpu = clock_process_cpu_ns();
    if (b->prev_self_mono_ns && ctx.mono_ns > b->prev_self_mono_ns)
        series_put(&b->series, b->s_self_cpu,
                   100.0 * (double)(cpu - b->prev_self_cpu_ns) /
                       (double)(ctx.mono_ns - b->prev_self_mono_ns));
    b->prev_self_cpu_ns = cpu;
    b->prev_self_mono_ns = ctx.mono_ns;
}

/* One collector alone, at the same frame time step. */
static void frame_one(struct bench *b, struct sampler_slot *slot)
{
    struct sample_ctx ctx = {&b->series, &b->env, bench_mono(b), 0, b->mode == CLOCK_REAL};
    b->series.now_ns += FRAME_STEP_NS;
    if (slot->ops->sample(slot->state, &ctx) < 0)
        slot->errors++;
}

/* What the store writer does after a commit: sealed blocks go back to the
 * table's free list, to be reused by the next seal. */
static void release_sealed(struct series_table *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->items[i].sealed_tail)
            series_release_sealed(t, i, t->items[i].sealed_tail);
}

static double tv_s(const struct timeval *tv)
{
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
    if (!n)
        return 0.0;
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* v must be sorted */
static double quantile(const double *v, size_t n, double q)
{
    if (!n)
        return 0.0;
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

/* Frames in chunks; returns CPU µs per frame. slot NULL: the full frame. */
static double timed_frames(struct bench *b, struct sampler_slot *slot, long frames)
{
    int64_t total = 0;
    for (long done = 0; done < frames;) {
        long n = frames - done < CHUNK_FRAMES ? frames - done : CHUNK_FRAMES;
        release_sealed(&b->series);
        int64_t t0 = clock_thread_cpu_ns();
        for (long i = 0; i < n; i++) {
            if (slot)
                frame_one(b, slot);
            else
                frame(b);
        }
        total += clock_thread_cpu_ns() - t0;
        done += n;
    }
    return (double)total / 1e3 / (double)frames;
}

static double median_of_reps(struct bench *b, struct sampler_slot *slot, long frames, int reps)
{
    double v[MAX_REPS];
    for (int r = 0; r < reps; r++)
        v[r] = timed_frames(b, slot, frames);
    return median(v, (size_t)reps);
}

/* The cost of reading the thread CPU clock twice, in µs. */
static double clock_pair_us(void)
{
    double v[2001];
    for (int i = 0; i < 2001; i++) {
        int64_t t0 = clock_thread_cpu_ns();
        int64_t t1 = clock_thread_cpu_ns();
        v[i] = (double)(t1 - t0) / 1e3;
    }
    return median(v, 2001);
}

/* One pread of fd from its start, in µs (median of 5 × 2000); -1 when
 * it cannot be read (a directory). */
static double pread_fd_us(int fd, ssize_t *bytes)
{
    static char buf[65536];
    ssize_t n = 0;
    for (int k = 0; k < 200; k++)
        if ((n = pread(fd, buf, sizeof(buf), 0)) < 0)
            return -1.0;
    double v[5];
    for (int r = 0; r < 5; r++) {
        int64_t t0 = clock_thread_cpu_ns();
        for (int k = 0; k < 2000; k++)
            n = pread(fd, buf, sizeof(buf), 0);
        v[r] = (double)(clock_thread_cpu_ns() - t0) / 1e3 / 2000.0;
    }
    *bytes = n;
    return median(v, 5);
}

static double pread_us(const char *path, ssize_t *bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1.0;
    double us = pread_fd_us(fd, bytes);
    close(fd);
    return us;
}

/* Files the collectors keep open but read once a second, not every frame. */
static int read_once_a_second(const char *path)
{
    return strcmp(path, "/proc/vmstat") == 0 || strcmp(path, "/sys/devices/system/cpu/online") == 0;
}

/* Whether path is a host file: under /proc or /sys, and not one process's
 * (/proc/PID/...), bar the network namespace's. /proc/net links to
 * /proc/self/net, so a kept fd names a pid ("/proc/PID/net/dev", with
 * " (deleted)" once procfs has dropped that dentry): it is put back as
 * /proc/net/... Nothing a JSON string would need escaped. */
static int host_file(char *path)
{
    if (strpbrk(path, "\"\\"))
        return 0;
    if (strncmp(path, "/sys/", 5) == 0)
        return 1;
    if (strncmp(path, "/proc/", 6) != 0)
        return 0;
    const char *p = path + 6;
    if (!(*p >= '0' && *p <= '9'))
        return 1;
    while (*p >= '0' && *p <= '9')
        p++;
    if (strncmp(p, "/net/", 5) != 0)
        return 0;
    memmove(path + 5, p, strlen(p) + 1);
    char *deleted = strstr(path, " (deleted)");
    if (deleted)
        *deleted = '\0';
    return 1;
}

/* The floor under a frame that no parser or encoder can lower: the kernel
 * writing each host file the collectors read every frame, on the
 * collectors' own kept fds (found among this process's open files), and one
 * run of the BPF program over the tree as a frame makes it (the recorder's
 * pid for its children, then each tracked process). Nothing is parsed or
 * taken from either. */
#define FLOOR_FILES_MAX 128
struct floor {
    int fd[FLOOR_FILES_MAX];
    char path[FLOOR_FILES_MAX][256];
    int nfiles;
    struct procbpf *bpf; /* NULL: the tree is read through procfs */
    pid_t pids[1 + TREE_SIZE * 2];
    uint32_t npids;
};

static void floor_find(struct floor *f, const struct proc_tree *t)
{
    f->nfiles = 0;
    f->bpf = t->bpf;
    f->npids = 0;
    f->pids[f->npids++] = getpid();
    for (uint32_t i = 0; i < t->n && f->npids < sizeof(f->pids) / sizeof(f->pids[0]); i++)
        f->pids[f->npids++] = t->e[i].pid;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    static char buf[65536];
    for (struct dirent *de; (de = readdir(d)) && f->nfiles < FLOOR_FILES_MAX;) {
        char link[64], path[PATH_MAX];
        int fd = atoi(de->d_name);
        if (de->d_name[0] == '.' || fd == dirfd(d))
            continue;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, path, sizeof(path) - 1);
        if (len <= 0)
            continue;
        path[len] = '\0';
        if (!host_file(path) || read_once_a_second(path)) /* host_file may shorten it */
            continue;
        size_t plen = strlen(path);
        if (plen >= sizeof(f->path[0]) || pread(fd, buf, sizeof(buf), 0) < 0) /* a directory */
            continue;
        f->fd[f->nfiles] = fd;
        memcpy(f->path[f->nfiles], path, plen + 1);
        f->nfiles++;
    }
    closedir(d);
}

static void floor_print_files(const struct floor *f)
{
    double sum = 0.0;
    printf(",\"host_files\":[");
    for (int i = 0; i < f->nfiles; i++) {
        ssize_t n = 0;
        double us = pread_fd_us(f->fd[i], &n); /* floor_find kept only readable files */
        printf("%s{\"file\":\"%s\",\"bytes\":%zd,\"us\":%.4f}", i ? "," : "", f->path[i], n, us);
        sum += us;
    }
    printf("],\"host_floor_us\":%.4f", sum);
}

/* One run of the program over the tree, back to back, in µs; -1 when the
 * tree is read through procfs. */
static double floor_tree_us(const struct floor *f)
{
    if (!f->bpf)
        return -1.0;
    double v[5];
    struct procbpf_result r;
    for (int k = 0; k < 200; k++)
        if (procbpf_read(f->bpf, f->pids, f->npids, 1, &r) < 0)
            return -1.0;
    for (int rep = 0; rep < 5; rep++) {
        int64_t t0 = clock_thread_cpu_ns();
        for (int k = 0; k < 2000; k++)
            procbpf_read(f->bpf, f->pids, f->npids, 1, &r);
        v[rep] = (double)(clock_thread_cpu_ns() - t0) / 1e3 / 2000.0;
    }
    return median(v, 5);
}

/* The whole floor once: every file read, the tree's run. */
static void floor_once(const struct floor *f)
{
    static char buf[65536];
    for (int i = 0; i < f->nfiles; i++)
        if (pread(f->fd[i], buf, sizeof(buf), 0) < 0)
            break;
    struct procbpf_result r;
    if (f->bpf)
        procbpf_read(f->bpf, f->pids, f->npids, 1, &r);
}

static void sleep_until(int64_t due)
{
    struct timespec ts = {(time_t)(due / NS_PER_S), (long)(due % NS_PER_S)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* The first whole disk that is not a loop or ram device, for its stat file. */
static int first_disk(char *out, size_t cap)
{
    static const char *const names[] = {"vda", "sda", "nvme0n1", "xvda", "hda", "mmcblk0"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char path[96];
        snprintf(path, sizeof(path), "/sys/block/%s/stat", names[i]);
        if (access(path, R_OK) == 0) {
            snprintf(out, cap, "%s", path);
            return 0;
        }
    }
    return -1;
}

/* What one pread of each file a sampler may read costs, in µs: most of a
 * frame is the kernel formatting these files. */
static void file_costs(pid_t root, pid_t leaf)
{
    static const char *const host_files[] = {
        "/proc/stat",         "/proc/meminfo",         "/proc/vmstat",
        "/proc/pressure/cpu", "/proc/pressure/memory", "/proc/pressure/io",
        "/proc/diskstats",    "/proc/net/dev",
    };
    static const char *const pid_files[] = {"stat", "io", "statm", "schedstat", "status"};
    char path[128];
    ssize_t n;
    double us;
    int first = 1;
    printf(",\"file_reads\":[");
    for (size_t i = 0; i < sizeof(host_files) / sizeof(host_files[0]); i++)
        if ((us = pread_us(host_files[i], &n)) >= 0) {
            printf("%s{\"file\":\"%s\",\"bytes\":%zd,\"us\":%.4f}", first ? "" : ",", host_files[i],
                   n, us);
            first = 0;
        }
    if (first_disk(path, sizeof(path)) == 0 && (us = pread_us(path, &n)) >= 0)
        printf(",{\"file\":\"%s\",\"bytes\":%zd,\"us\":%.4f}", path, n, us);
    for (size_t i = 0; i < sizeof(pid_files) / sizeof(pid_files[0]); i++) {
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)leaf, pid_files[i]);
        if ((us = pread_us(path, &n)) >= 0)
            printf(",{\"file\":\"/proc/PID/%s\",\"bytes\":%zd,\"us\":%.4f}", pid_files[i], n, us);
    }
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)leaf, (int)leaf);
    if ((us = pread_us(path, &n)) >= 0)
        printf(",{\"file\":\"/proc/PID/task/TID/children (a leaf)\",\"bytes\":%zd,\"us\":%.4f}", n,
               us);
    snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)root, (int)root);
    if ((us = pread_us(path, &n)) >= 0)
        printf(",{\"file\":\"/proc/PID/task/TID/children (the root, 9 pids)\",\"bytes\":%zd,"
               "\"us\":%.4f}",
               n, us);
    printf("]");
}

static void json_array(const char *key, const double *v, int n)
{
    printf(",\"%s\":[", key);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? "," : "", v[i]);
    printf("]");
}

static void usage(void)
{
    fprintf(stderr, "usage: sample_cost [--frames N] [--reps R] [--warmup W] [--paced-ms MS "
                    "--paced-frames N] [--proc-source auto|bpf|procfs] [--collectors LIST]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long frames = 20000, warmup = 100, paced_frames = 0;
    int reps = 5, source = PROC_SOURCE_AUTO;
    const char *only = NULL;
    double paced_ms = 0.0;
    static const struct option longopts[] = {
        {"frames", required_argument, NULL, 'n'},
        {"reps", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},
        {"paced-ms", required_argument, NULL, 'p'},
        {"paced-frames", required_argument, NULL, 'f'},
        {"proc-source", required_argument, NULL, 's'},
        {"collectors", required_argument, NULL, 'c'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "n:r:w:p:f:s:c:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n':
            frames = atol(optarg);
            break;
        case 'r':
            reps = atoi(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        case 'p':
            paced_ms = atof(optarg);
            break;
        case 'f':
            paced_frames = atol(optarg);
            break;
        case 's':
            if ((source = proc_source_parse(optarg)) < 0)
                usage();
            break;
        case 'c':
            only = optarg;
            break;
        default:
            usage();
        }
    }
    if (frames < 1 || reps < 1 || reps > MAX_REPS || warmup < 0 || paced_frames < 0)
        usage();

    static struct bench b;
    if (series_table_init(&b.series) < 0)
        return 1;
    b.env.proc_root = "/proc";
    b.env.sys_root = "/sys";
    b.env.proc_fd = open(b.env.proc_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    b.env.sys_fd = open(b.env.sys_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (b.env.proc_fd < 0) {
        perror("/proc");
        return 1;
    }
    b.env.ticks_per_s = sysconf(_SC_CLK_TCK);
    b.env.page_bytes = sysconf(_SC_PAGESIZE);
    b.env.self_pid = getpid();
    b.env.self_tid = (pid_t)gettid();
    b.env.tree = &b.tree;
    proc_tree_init(&b.tree, &b.env);
    char why[160];
    if (source != PROC_SOURCE_PROCFS && proc_tree_use_bpf(&b.tree, why, sizeof(why)) < 0) {
        fprintf(stderr, "sample_cost: the tree is read through procfs: %s\n", why);
        if (source == PROC_SOURCE_BPF)
            return 1;
    }
    if (sampler_init(&b.sampler, &b.env, &b.series, only) < 0 ||
        series_get(&b.series, "strobe.cpu", "", "pct", &b.s_self_cpu) < 0) {
        fprintf(stderr, "sample_cost: out of memory\n");
        return 1;
    }
    pid_t root = start_tree();
    if (root < 0) {
        perror("fork");
        return 1;
    }
    b.series.now_ns = clock_realtime_ns();
    if (proc_tree_set_root(&b.tree, root) < 0) {
        fprintf(stderr, "sample_cost: cannot follow pid %d\n", (int)root);
        stop_tree(root);
        return 1;
    }

    set_clock(&b, CLOCK_STEP, FRAME_STEP_NS);
    for (long i = 0; i < warmup; i++)
        frame(&b);
    release_sealed(&b.series);
    uint32_t tracked = b.tree.n;
    size_t ncoll = b.sampler.count;

    /* 1. full frames back to back, on a clock that moves 100 ms a frame: the
     * once-a-second work comes every 10th frame, as at the default interval.
     * Allocations are counted per repetition: during the first, each series
     * seals its first block and the pool of recycled blocks fills. */
    double full[MAX_REPS], full_reps[MAX_REPS];
    uint64_t allocs_rep[MAX_REPS];
    long long heap_rep[MAX_REPS];
    uint64_t points0 = b.series.points;
    struct rusage ru0, ru1;
    getrusage(RUSAGE_THREAD, &ru0);
    for (int r = 0; r < reps; r++) {
        uint64_t a0 = alloc_calls;
        struct mallinfo2 mi0 = mallinfo2();
        full[r] = timed_frames(&b, NULL, frames);
        struct mallinfo2 mi1 = mallinfo2();
        allocs_rep[r] = alloc_calls - a0;
        heap_rep[r] = (long long)mi1.uordblks - (long long)mi0.uordblks;
    }
    getrusage(RUSAGE_THREAD, &ru1);
    double user_s = tv_s(&ru1.ru_utime) - tv_s(&ru0.ru_utime);
    double sys_s = tv_s(&ru1.ru_stime) - tv_s(&ru0.ru_stime);
    double points_per_frame = (double)(b.series.points - points0) / (double)(frames * reps);
    memcpy(full_reps, full, sizeof(full));
    double full_us = median(full, (size_t)reps);

    /* 2. single frames (one clock pair each, its cost taken off), same clock */
    double pair_us = clock_pair_us();
    long dist_n = frames < 20000 ? frames : 20000;
    double *dist = malloc((size_t)dist_n * sizeof(*dist));
    if (!dist)
        return 1;
    for (long i = 0; i < dist_n; i++) {
        if (i % CHUNK_FRAMES == 0)
            release_sealed(&b.series);
        int64_t t0 = clock_thread_cpu_ns();
        frame(&b);
        dist[i] = (double)(clock_thread_cpu_ns() - t0) / 1e3 - pair_us;
    }
    qsort(dist, (size_t)dist_n, sizeof(*dist), cmp_double);
    double p50 = quantile(dist, (size_t)dist_n, 0.50);
    double p90 = quantile(dist, (size_t)dist_n, 0.90);
    double p99 = quantile(dist, (size_t)dist_n, 0.99);
    double pmax = dist[dist_n - 1];

    /* 3. each collector alone, same clock; then on a clock that moves a
     * second a frame, so every frame does the once-a-second work */
    double *coll_us = calloc(ncoll, sizeof(*coll_us));
    double *coll_sec_us = calloc(ncoll, sizeof(*coll_sec_us));
    if (!coll_us || !coll_sec_us)
        return 1;
    for (size_t c = 0; c < ncoll; c++)
        if (b.sampler.slots[c].enabled)
            coll_us[c] = median_of_reps(&b, &b.sampler.slots[c], frames, reps);
    /* the recorder's own strobe.cpu point: a process CPU clock read and a put */
    double self_v[MAX_REPS];
    for (int r = 0; r < reps; r++) {
        int64_t t0 = clock_thread_cpu_ns();
        for (long i = 0; i < frames; i++) {
            b.series.now_ns += FRAME_STEP_NS;
            series_put(&b.series, b.s_self_cpu, (double)clock_process_cpu_ns());
            if (i % CHUNK_FRAMES == 0)
                release_sealed(&b.series);
        }
        self_v[r] = (double)(clock_thread_cpu_ns() - t0) / 1e3 / (double)frames;
    }
    double self_us = median(self_v, (size_t)reps);
    set_clock(&b, CLOCK_STEP, NS_PER_S);
    long sec_frames = frames / 10 > 200 ? frames / 10 : 200;
    double second_us = median_of_reps(&b, NULL, sec_frames, reps);
    for (size_t c = 0; c < ncoll; c++)
        if (b.sampler.slots[c].enabled)
            coll_sec_us[c] = median_of_reps(&b, &b.sampler.slots[c], sec_frames, reps);

    /* 4. the real clock, back to back (the once-a-second work is then about
     * one frame in several thousand) */
    set_clock(&b, CLOCK_REAL, 0);
    double full_real_us = median_of_reps(&b, NULL, frames, reps);

    /* 5. paced frames on the real clock: one every paced_ms, with caches as
     * cold as in a recorder that sleeps between frames; half way between
     * two, the floor alone, as cold (a wake-up costs no more after 100 ms of
     * sleep than after 20: bench/wake_cost) */
    struct floor fl;
    floor_find(&fl, &b.tree);
    double paced_p50 = 0.0, paced_mean = 0.0, paced_floor_p50 = 0.0;
    if (paced_frames > 0 && paced_ms > 0.0) {
        double *pv = malloc((size_t)paced_frames * sizeof(*pv));
        double *fv = malloc((size_t)paced_frames * sizeof(*fv));
        if (!pv || !fv)
            return 1;
        int64_t step = (int64_t)(paced_ms * 1e6);
        int64_t due = clock_monotonic_ns();
        double sum = 0.0;
        for (long i = 0; i < paced_frames; i++) {
            due += step;
            sleep_until(due);
            release_sealed(&b.series);
            int64_t t0 = clock_thread_cpu_ns();
            frame(&b);
            pv[i] = (double)(clock_thread_cpu_ns() - t0) / 1e3 - pair_us;
            sum += pv[i];
            sleep_until(due + step / 2);
            t0 = clock_thread_cpu_ns();
            floor_once(&fl);
            fv[i] = (double)(clock_thread_cpu_ns() - t0) / 1e3 - pair_us;
        }
        paced_mean = sum / (double)paced_frames;
        paced_p50 = median(pv, (size_t)paced_frames);
        paced_floor_p50 = median(fv, (size_t)paced_frames);
        free(pv);
        free(fv);
    }

    printf("{\"frames\":%ld,\"reps\":%d,\"warmup\":%ld,\"tree_size\":%d,\"procs_tracked\":%u,"
           "\"series\":%u,\"points_per_frame\":%.2f",
           frames, reps, warmup, TREE_SIZE, tracked, b.series.count, points_per_frame);
    printf(",\"proc_source\":\"%s\"", proc_tree_source(&b.tree));
    printf(",\"full_us\":%.4f", full_us);
    json_array("full_us_reps", full_reps, reps);
    /* the kernel splits a thread's time into user and system by ticks: a
     * share over seconds of frames, not an exact split */
    printf(",\"user_share\":%.4f", user_s + sys_s > 0 ? user_s / (user_s + sys_s) : 0.0);
    printf(",\"full_real_clock_us\":%.4f,\"second_frame_us\":%.4f", full_real_us, second_us);
    printf(",\"frame_p50_us\":%.4f,\"frame_p90_us\":%.4f,\"frame_p99_us\":%.4f,"
           "\"frame_max_us\":%.4f,\"clock_pair_us\":%.4f",
           p50, p90, p99, pmax, pair_us);
    printf(",\"self_cpu_point_us\":%.4f", self_us);
    printf(",\"paced_ms\":%.1f,\"paced_frames\":%ld,\"paced_p50_us\":%.4f,\"paced_mean_us\":%.4f",
           paced_ms, paced_frames, paced_p50, paced_mean);
    printf(",\"count_allocs\":%s,\"allocs_per_rep\":[", COUNT_ALLOCS ? "true" : "false");
    for (int r = 0; r < reps; r++)
        printf("%s%llu", r ? "," : "", (unsigned long long)allocs_rep[r]);
    printf("],\"heap_growth_per_rep_bytes\":[");
    for (int r = 0; r < reps; r++)
        printf("%s%lld", r ? "," : "", heap_rep[r]);
    printf("]");
    pid_t leaf = 0;
    for (uint32_t i = 0; i < b.tree.n; i++)
        if (b.tree.e[i].pid != root)
            leaf = b.tree.e[i].pid;
    file_costs(root, leaf ? leaf : root);
    floor_print_files(&fl);
    printf(",\"tree_bpf_read_us\":%.4f,\"paced_floor_p50_us\":%.4f", floor_tree_us(&fl),
           paced_floor_p50);
    printf(",\"collectors\":[");
    for (size_t c = 0; c < ncoll; c++) {
        struct sampler_slot *slot = &b.sampler.slots[c];
        printf("%s{\"name\":\"%s\",\"enabled\":%s,\"us\":%.4f,\"second_frame_us\":%.4f,"
               "\"errors\":%llu}",
               c ? "," : "", slot->ops->name, slot->enabled ? "true" : "false", coll_us[c],
               coll_sec_us[c], (unsigned long long)slot->errors);
    }
    printf("]}\n");

    free(dist);
    free(coll_us);
    free(coll_sec_us);
    stop_tree(root);
    sampler_release(&b.sampler);
    proc_tree_release(&b.tree);
    series_table_release(&b.series);
    close(b.env.proc_fd);
    if (b.env.sys_fd >= 0)
        close(b.env.sys_fd);
    return 0;
}
