/*
 * Loading and running proc.bpf.c, the process-tree reader in the kernel
 * (what it reads: the header of proc.bpf.c; when it is used: procbpf.h).
 *
 * Each frame the recorder writes the tracked pids into an mmap'ed array map,
 * runs the program once with BPF_PROG_TEST_RUN, and reads back, for each pid,
 * what stat, io and schedstat would print, and the children linked to every
 * thread. The recorder's own pid leads the list and is walked for its
 * threads' children only: those are the orphans handed to it as subreaper,
 * and its own readings are not wanted.
 *
 * The RSS check at load: strobe faults pages of its own one by one (each
 * lands in this CPU's share of the counters) and requires the program's sum
 * to equal /proc/self/statm to the page, three times. Otherwise statm is read
 * per process; a kernel whose statm shows the rounded counts alone, as older
 * ones did, fails the check too. A share outside the counter's batch, or a
 * process whose mm changed under the read (exec, exit), falls back to statm
 * for that reading. The online CPUs are read again once a second, so that a
 * CPU brought online has its share counted.
 *
 * At load strobe also reads itself through the program and through
 * /proc/self/stat; if they disagree (a pid namespace), it keeps procfs.
 *
 * The object: clang builds it against a vmlinux.h dumped from the build
 * machine's BTF; bpftool gen object strips its DWARF (36 KB); the Makefile
 * embeds it with xxd -i; libbpf relocates it to the running kernel at load
 * (CO-RE). Loading costs about 25 ms of CPU once: libbpf parses the kernel's
 * BTF, and the verifier proves the program in about 22 ms.
 */
#include "sample/procbpf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef STROBE_BPF

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "common/clock.h"
#include "sample/parse.h"
#include "sample/pfile.h"

/* The object built from proc.bpf.c, embedded by the Makefile. */
extern const unsigned char procbpf_object[];
extern const size_t procbpf_object_len;

struct procbpf {
    struct bpf_object *obj;
    int prog_fd;
    struct procbpf_shared *shared; /* the map, mmap'ed */
    size_t shared_len;
    struct pfile online;                    /* /sys/devices/system/cpu/online, kept open */
    int64_t online_read_ns;                 /* when it was last read */
    uint32_t cpus[PROCBPF_MAX_CPUS], ncpus; /* what it said */
};

/* libbpf explains a failed load at length on stderr; the recorder says one
 * line instead (procbpf_open's why). */
static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    (void)fmt;
    (void)ap;
    return 0;
}

void procbpf_close(struct procbpf *b)
{
    if (!b)
        return;
    if (b->shared)
        munmap(b->shared, b->shared_len);
    bpf_object__close(b->obj);
    pfile_release(&b->online);
    free(b);
}

/* One run of the program: 0 when it returned 0, -EIO when it returned
 * anything else, or -errno. */
static int run_program(struct procbpf *b)
{
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    if (bpf_prog_test_run_opts(b->prog_fd, &opts) < 0)
        return -errno;
    return opts.retval == 0 ? 0 : -EIO;
}

/* Have the program sum the RSS over cpus[0..n): find their per-CPU
 * offsets. On failure it is left off (ncpus 0) and statm is read. */
static int find_cpus(struct procbpf *b, const uint32_t *cpus, uint32_t n)
{
    struct procbpf_shared *s = b->shared;
    memcpy(s->cpu_ids, cpus, n * sizeof(cpus[0]));
    s->ncpus = n;
    s->op = PROCBPF_FIND_CPUS;
    int rc = run_program(b);
    s->op = PROCBPF_READ;
    if (rc < 0)
        s->ncpus = 0;
    return rc;
}

/* The online CPUs into b->cpus: 0, or -errno (-E2BIG past
 * PROCBPF_MAX_CPUS of them). */
static int read_online(struct procbpf *b)
{
    int rc = b->online.fd >= 0 ? pfile_read(&b->online) : -EBADF;
    if (rc < 0)
        return rc;
    return parse_cpu_list(b->online.buf, b->online.len, b->cpus, PROCBPF_MAX_CPUS, &b->ncpus);
}

void procbpf_follow_online(struct procbpf *b, int64_t now_ns)
{
    struct procbpf_shared *s = b->shared;
    if (!s->ncpus || now_ns - b->online_read_ns < 1000000000)
        return; /* not summing, or looked within the second */
    b->online_read_ns = now_ns;
    if (read_online(b) < 0)
        s->ncpus = 0; /* statm from now on */
    else if (b->ncpus != s->ncpus || memcmp(b->cpus, s->cpu_ids, b->ncpus * sizeof(b->cpus[0])))
        find_cpus(b, b->cpus, b->ncpus); /* a CPU came or went; statm if that fails */
}

int procbpf_read(struct procbpf *b, const pid_t *pids, uint32_t n, uint32_t kids_only,
                 struct procbpf_result *out)
{
    if (n > PROCBPF_MAX_PROCS)
        return -E2BIG;
    struct procbpf_shared *s = b->shared;
    s->n = n;
    s->kids_only = kids_only < n ? kids_only : n;
    memcpy(s->pids, pids, n * sizeof(pids[0]));
    int rc = run_program(b);
    if (rc < 0)
        return rc;
    out->proc = s->out;
    out->kids = s->kids;
    out->nkids = s->nkids < PROCBPF_MAX_KIDS ? s->nkids : PROCBPF_MAX_KIDS;
    out->kids_from = s->kids_from < n ? s->kids_from : n;
    out->cut = s->cut;
    out->ncut = s->ncut < PROCBPF_MAX_CUT ? s->ncut : PROCBPF_MAX_CUT;
    out->kids_lost = s->kids_lost != 0;
    out->read_ns = (int64_t)s->read_ns;
    return 0;
}

/* The program must see this process as procfs does: same parent, same
 * thread count, a CPU time at least what stat's ticks say. A recorder in a
 * pid namespace of its own would find another process, or none. */
static int self_check(struct procbpf *b, char *why, size_t why_len)
{
    struct pfile f = PFILE_INIT;
    struct pid_stat st;
    int rc = pfile_read_once(&f, AT_FDCWD, "/proc/self/stat");
    if (rc < 0 || parse_pid_stat(f.buf, f.len, &st) < 0) {
        pfile_release(&f);
        snprintf(why, why_len, "cannot read /proc/self/stat");
        return -EIO;
    }
    pfile_release(&f);
    pid_t self = getpid();
    struct procbpf_result r;
    if ((rc = procbpf_read(b, &self, 1, 0, &r)) < 0) {
        snprintf(why, why_len, "running the program failed: %s", strerror(-rc));
        return rc;
    }
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t stat_ns = (st.utime + st.stime) * (uint64_t)(1000000000 / (hz > 0 ? hz : 100));
    const struct procbpf_proc *p = &r.proc[0];
    if (!p->found || p->ppid != getppid() || (int64_t)p->threads != st.num_threads ||
        p->cpu_ns + 20000000u < stat_ns) {
        snprintf(why, why_len, "it does not see this process as /proc does (a pid namespace?)");
        return -ENOTSUP;
    }
    return 0;
}

/* The sums must be statm's to the page, shares on this CPU included: each
 * try faults a page of its own (a CPU's share takes it unless the share
 * reaches the counter's batch), so sums that miss the shares, or read them
 * from a wrong place, differ. A try where statm moved between its two
 * reads (another thread) does not count. */
static int rss_matches_statm(struct procbpf *b)
{
    enum { PAGES = 4, TRIES = 12, NEEDED = 3 };
    long page = sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, PAGES * (size_t)page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 0;
    struct pfile f = PFILE_INIT;
    int matched = 0;
    pid_t self = getpid();
    if (pfile_open(&f, AT_FDCWD, "/proc/self/statm") == 0)
        for (int i = 0; i < TRIES && matched >= 0 && matched < NEEDED; i++) {
            if (i < PAGES)
                mem[(size_t)i * (size_t)page] = 1;
            uint64_t before, after;
            struct procbpf_result r;
            if (pfile_read_statm(&f, &before) < 0 || procbpf_read(b, &self, 1, 0, &r) < 0 ||
                pfile_read_statm(&f, &after) < 0)
                matched = -1;
            else if (before == after)
                matched = r.proc[0].rss_ok && r.proc[0].rss_pages == before ? matched + 1 : -1;
        }
    pfile_release(&f);
    munmap(mem, PAGES * (size_t)page);
    return matched >= NEEDED;
}

/* Sum the RSS in the program where it adds up to statm's; else leave it
 * off, and statm is read. */
static void rss_setup(struct procbpf *b)
{
    if (pfile_open(&b->online, AT_FDCWD, "/sys/devices/system/cpu/online") < 0 ||
        read_online(b) < 0 || find_cpus(b, b->cpus, b->ncpus) < 0)
        return;
    b->online_read_ns = clock_monotonic_ns();
    if (!rss_matches_statm(b))
        b->shared->ncpus = 0;
}

int procbpf_open(struct procbpf **out, char *why, size_t why_len)
{
    *out = NULL;
    struct procbpf *b = calloc(1, sizeof(*b));
    if (!b) {
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    libbpf_set_print(libbpf_quiet);
    LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "strobe_proc");
    b->obj = bpf_object__open_mem(procbpf_object, procbpf_object_len, &oo);
    int rc = 0;
    if (!b->obj) {
        rc = -errno;
        snprintf(why, why_len, "cannot open the embedded program: %s", strerror(-rc));
        goto fail;
    }
    if ((rc = bpf_object__load(b->obj)) < 0) {
        snprintf(why, why_len, "the kernel refused the program (%s)%s", strerror(-rc),
                 geteuid() != 0 ? "; loading BPF needs root or CAP_BPF and CAP_PERFMON" : "");
        goto fail;
    }
    struct bpf_program *prog = bpf_object__find_program_by_name(b->obj, "read_tree");
    int map_fd = bpf_object__find_map_fd_by_name(b->obj, "shared");
    if (!prog || map_fd < 0) {
        rc = -ENOENT;
        snprintf(why, why_len, "the embedded program lacks read_tree or its map");
        goto fail;
    }
    b->prog_fd = bpf_program__fd(prog);
    long page = sysconf(_SC_PAGESIZE);
    b->shared_len = (sizeof(struct procbpf_shared) + (size_t)page - 1) & ~((size_t)page - 1);
    void *m = mmap(NULL, b->shared_len, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
    if (m == MAP_FAILED) {
        rc = -errno;
        snprintf(why, why_len, "cannot map the program's memory: %s", strerror(-rc));
        goto fail;
    }
    b->shared = m;
    b->online.fd = -1;
    if ((rc = self_check(b, why, why_len)) < 0)
        goto fail;
    rss_setup(b);
    *out = b;
    return 0;
fail:
    procbpf_close(b);
    return rc < 0 ? rc : -EIO;
}

#else /* built without BPF */

struct procbpf {
    int unused;
};

int procbpf_open(struct procbpf **out, char *why, size_t why_len)
{
    *out = NULL;
    snprintf(why, why_len, "strobe was built without BPF (clang, bpftool or libbpf missing)");
    return -ENOTSUP;
}

void procbpf_close(struct procbpf *b)
{
    (void)b;
}

void procbpf_follow_online(struct procbpf *b, int64_t now_ns)
{
    (void)b;
    (void)now_ns;
}

int procbpf_read(struct procbpf *b, const pid_t *pids, uint32_t n, uint32_t kids_only,
                 struct procbpf_result *out)
{
    (void)b;
    (void)pids;
    (void)n;
    (void)kids_only;
    (void)out;
    return -ENOTSUP;
}

#endif
