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
    free(b);
}

int procbpf_read(struct procbpf *b, const pid_t *pids, uint32_t n, struct procbpf_result *out)
{
    if (n > PROCBPF_MAX_PROCS)
        return -E2BIG;
    struct procbpf_shared *s = b->shared;
    s->n = n;
    memcpy(s->pids, pids, n * sizeof(pids[0]));
    LIBBPF_OPTS(bpf_test_run_opts, opts);
    if (bpf_prog_test_run_opts(b->prog_fd, &opts) < 0)
        return -errno;
    if (opts.retval != 0)
        return -EIO;
    out->proc = s->out;
    out->kids = s->kids;
    out->nkids = s->nkids < PROCBPF_MAX_KIDS ? s->nkids : PROCBPF_MAX_KIDS;
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
    if ((rc = procbpf_read(b, &self, 1, &r)) < 0) {
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
    if ((rc = self_check(b, why, why_len)) < 0)
        goto fail;
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

int procbpf_read(struct procbpf *b, const pid_t *pids, uint32_t n, struct procbpf_result *out)
{
    (void)b;
    (void)pids;
    (void)n;
    (void)out;
    return -ENOTSUP;
}

#endif
