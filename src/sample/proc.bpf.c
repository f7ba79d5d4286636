/*
 * The process-tree reader in the kernel: a BPF_PROG_TYPE_SYSCALL program
 * that the recorder runs once a frame with BPF_PROG_TEST_RUN. It reads, for
 * each pid the recorder lists in the shared map, what /proc/PID/stat, io and
 * schedstat would print, straight from the task structures, and lists the
 * children of every thread, as task/TID/children would. One system call
 * replaces four to five procfs reads per process, and no text is printed or
 * parsed; CPU time comes in nanoseconds instead of 1/USER_HZ ticks. The
 * run-queue wait of every thread comes as its growth since the last run.
 *
 * The RSS is summed as statm sums it (percpu_counter_sum): each counter's
 * central count plus every online CPU's share. A CPU's share lies at the
 * counter's per-CPU pointer plus that CPU's per-CPU offset, which the
 * program finds once (PROCBPF_FIND_CPUS) from the copies of a per-CPU map of
 * its own: the kernel's table of offsets is not a symbol BPF may name here.
 *
 * Built with clang -target bpf against a vmlinux.h dumped from the kernel's
 * BTF; field offsets are relocated at load time (CO-RE), so the object
 * embedded in strobe loads on other kernels with BTF (6.7 or later: open-
 * coded task iterators, bpf_task_from_pid).
 */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "sample/procbpf_abi.h"

char LICENSE[] SEC("license") = "GPL";

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;
extern void bpf_rcu_read_lock(void) __ksym;
extern void bpf_rcu_read_unlock(void) __ksym;
extern int bpf_iter_task_new(struct bpf_iter_task *it, struct task_struct *task,
                             unsigned int flags) __ksym;
extern struct task_struct *bpf_iter_task_next(struct bpf_iter_task *it) __ksym;
extern void bpf_iter_task_destroy(struct bpf_iter_task *it) __ksym;
extern int bpf_iter_num_new(struct bpf_iter_num *it, int start, int end) __ksym;
extern int *bpf_iter_num_next(struct bpf_iter_num *it) __ksym;
extern void bpf_iter_num_destroy(struct bpf_iter_num *it) __ksym;
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym;

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __uint(map_flags, BPF_F_MMAPABLE);
    __type(key, u32);
    __type(value, struct procbpf_shared);
} shared SEC(".maps");

/* One u64 per CPU, never written: where its copies lie, against the per-CPU
 * pointer the map keeps, is each CPU's per-CPU offset. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 1);
    __type(key, u32);
    __type(value, u64);
} pcpu_probe SEC(".maps");

/* Each thread's run-queue wait as the program last read it, in storage the
 * kernel keeps with the thread and frees when it exits: a thread read for
 * the first time has none, and all its wait counts. The recorder gets the
 * growth, so a thread that exits takes only its last frame along, and
 * the sum of live threads' waits, which drops when one exits, is never a
 * rate's base. */
struct {
    __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, u64);
} runq_seen SEC(".maps");

/* A pointer as a number: stored and read back through the shared map (a
 * privileged program may leak a pointer so; arithmetic on it may not). */
static __always_inline u64 as_number(struct procbpf_shared *s, const void *p)
{
    s->scratch = (u64)p;
    return *(volatile u64 *)&s->scratch;
}

/* cpu_off[k] for each cpu_ids[k]: the copy's address less the per-CPU
 * pointer (bpf_array.pptrs[0]). 0, or 1 when the pointer cannot be read or
 * a CPU has no copy. */
static __always_inline int find_cpu_offsets(struct procbpf_shared *s)
{
    u64 map = as_number(s, &pcpu_probe);
    u64 pptr = 0;
    if (bpf_probe_read_kernel(&pptr, sizeof(pptr),
                              (void *)(map + bpf_core_field_offset(struct bpf_array, pptrs))) ||
        !pptr)
        return 1;
    u32 n = s->ncpus;
    struct bpf_iter_num it;
    int *kp;
    int rc = 0;
    bpf_iter_num_new(&it, 0, (int)(n < PROCBPF_MAX_CPUS ? n : PROCBPF_MAX_CPUS));
    while ((kp = bpf_iter_num_next(&it))) {
        u32 k = (u32)*kp;
        u32 zero = 0;
        if (k >= PROCBPF_MAX_CPUS)
            break;
        void *copy = bpf_map_lookup_percpu_elem(&pcpu_probe, &zero, s->cpu_ids[k]);
        if (!copy) {
            rc = 1;
            break;
        }
        s->cpu_off[k] = as_number(s, copy) - pptr;
    }
    bpf_iter_num_destroy(&it);
    return rc;
}

/* A CPU's share of a counter stays below the counter's batch (32 pages on a
 * small machine, twice the CPUs on a big one); one past 2^20 pages cannot be
 * a share at all and means the offsets are wrong. */
#define PCPU_SHARE_MAX (1 << 20)

/* One CPU's share of a counter into *sum: 0, or 1 when it cannot be read or
 * is out of bounds. */
static __always_inline int add_share(s64 *sum, const s32 *shares, u64 cpu_off)
{
    s32 d = 0;
    if (bpf_probe_read_kernel(&d, sizeof(d), (const void *)((u64)shares + cpu_off)) ||
        d >= PCPU_SHARE_MAX || d <= -PCPU_SHARE_MAX)
        return 1;
    *sum += d;
    return 0;
}

/* statm's resident pages of the process whose leader is at leader_addr,
 * into o (rss_ok 0 where ncpus is 0 or a share cannot be read or is out of
 * bounds): file + anon + shmem (mm_types_task.h's counters 0, 1 and 3), each
 * percpu_counter_sum_positive over cpu_ids[0..ncpus), in one walk of the
 * CPUs. A process without memory (a zombie) has none, as in statm. The mm
 * is checked again after the sums: one that exec or exit replaced meanwhile
 * may have been freed under the reads. A global function, so that the
 * verifier proves it once, apart from the states of the loops around its
 * call (inlined, it doubled the program's load time). */
__noinline int read_rss(struct procbpf_shared *s, u64 leader_addr, struct procbpf_proc *o)
{
    if (!s || !o || !s->ncpus)
        return 0;
    struct task_struct *leader =
        bpf_rdonly_cast((void *)leader_addr, bpf_core_type_id_kernel(struct task_struct));
    struct mm_struct *mm = leader->mm;
    if (!mm) {
        o->rss_ok = 1;
        return 0;
    }
    struct percpu_counter *file = &mm->rss_stat[0], *anon = &mm->rss_stat[1],
                          *shmem = &mm->rss_stat[3];
    s64 f = file->count, a = anon->count, m = shmem->count;
    const s32 *fs = file->counters, *as = anon->counters, *ms = shmem->counters;
    u32 n = s->ncpus;
    int bad = 0;
    struct bpf_iter_num it;
    int *kp;
    bpf_iter_num_new(&it, 0, (int)(n < PROCBPF_MAX_CPUS ? n : PROCBPF_MAX_CPUS));
    while ((kp = bpf_iter_num_next(&it))) {
        u32 k = (u32)*kp;
        if (k >= PROCBPF_MAX_CPUS)
            break;
        u64 off = s->cpu_off[k];
        bad |= add_share(&f, fs, off) | add_share(&a, as, off) | add_share(&m, ms, off);
        if (bad)
            break;
    }
    bpf_iter_num_destroy(&it);
    o->rss_pages = (u64)(f > 0 ? f : 0) + (u64)(a > 0 ? a : 0) + (u64)(m > 0 ? m : 0);
    o->rss_ok = !bad && BPF_CORE_READ(leader, mm) == mm;
    return 0;
}

/* What /proc/PID/io adds up for a whole process: one thread's counters. */
static __always_inline void add_io(struct procbpf_proc *o, struct task_io_accounting *io)
{
    o->rchar += io->rchar;
    o->wchar += io->wchar;
    o->read_bytes += io->read_bytes;
    o->write_bytes += io->write_bytes;
}

/* One thread's run-queue wait (schedstat's second field) since the program
 * last read it, into o: all of it the first time. Without storage (no
 * memory) it is left out rather than counted again each frame. */
static __always_inline void add_runq(struct procbpf_proc *o, struct task_struct *t)
{
    u64 *seen = bpf_task_storage_get(&runq_seen, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
    if (!seen)
        return;
    u64 now = t->sched_info.run_delay;
    o->runq_ns += now >= *seen ? now - *seen : now;
    *seen = now;
}

/* Thread tid of pids[parent] had children the run did not list: the
 * recorder reads its children file. */
static __always_inline void cut_thread(struct procbpf_shared *s, s32 parent, s32 tid)
{
    u32 j = s->ncut;
    if (j >= PROCBPF_MAX_CUT) {
        s->kids_lost = 1; /* the recorder looks everywhere */
        return;
    }
    s->cut[j].parent = parent;
    s->cut[j].tid = tid;
    s->ncut = j + 1;
}

/* The children of one thread (only thread-group leaders are linked there),
 * of pids[parent]. Once the list is full, a run's first process has the
 * thread cut, so that a run again from it would not fill it the same way;
 * a later one ends the listing (kids_from), and the recorder runs again
 * from there. */
static __always_inline void list_children(struct procbpf_shared *s, struct task_struct *t,
                                          s32 parent)
{
    if (s->kids_from < s->n)
        return; /* the list filled at an earlier process */
    u64 head = (u64)&t->children;
    u64 sibling_off = bpf_core_field_offset(struct task_struct, sibling);
    u64 pos = (u64)BPF_CORE_READ(t, children.next);
    struct bpf_iter_num it;
    int *k;
    bpf_iter_num_new(&it, 0, PROCBPF_MAX_CHILDREN_PER_THREAD);
    while ((k = bpf_iter_num_next(&it))) {
        if (!pos || pos == head)
            break;
        if (*k == PROCBPF_MAX_CHILDREN_PER_THREAD - 1) {
            cut_thread(s, parent, t->pid); /* more than one walk may take */
            break;
        }
        struct task_struct *c = (struct task_struct *)(pos - sibling_off);
        u32 j = s->nkids;
        if (j >= PROCBPF_MAX_KIDS) {
            if (parent == 0)
                cut_thread(s, parent, t->pid);
            else
                s->kids_from = (u32)parent;
            break;
        }
        s->kids[j].parent = parent;
        s->kids[j].pid = BPF_CORE_READ(c, tgid);
        s->nkids = j + 1;
        pos = (u64)BPF_CORE_READ(c, sibling.next);
    }
    bpf_iter_num_destroy(&it);
}

/* Only the children of a process's threads: for the recorder, which reaps
 * the job's orphans and whose own readings no one takes from here. */
static __always_inline void list_children_only(struct procbpf_shared *s, struct task_struct *leader,
                                               u32 i)
{
    struct bpf_iter_task it;
    struct task_struct *t;
    bpf_rcu_read_lock();
    bpf_iter_task_new(&it, leader, BPF_TASK_ITER_PROC_THREADS);
    while ((t = bpf_iter_task_next(&it)))
        list_children(s, t, (s32)i);
    bpf_iter_task_destroy(&it);
    bpf_rcu_read_unlock();
}

static __always_inline void read_process(struct procbpf_shared *s, u32 i)
{
    struct procbpf_proc *o = &s->out[i];
    s32 pid = s->pids[i];
    __builtin_memset(o, 0, sizeof(*o));
    o->pid = pid;
    struct task_struct *leader = bpf_task_from_pid(pid);
    if (!leader)
        return;
    /* bpf_task_from_pid finds threads too: only a process counts */
    if (leader->tgid != pid) {
        bpf_task_release(leader);
        return;
    }
    if (i < s->kids_only) {
        list_children_only(s, leader, i);
        o->found = 1;
        bpf_task_release(leader);
        return;
    }
    bpf_rcu_read_lock();
    struct signal_struct *sig = leader->signal;
    /* what exited threads left behind (the leader itself is added there
     * only when the process is reaped, so a zombie still adds up) */
    o->cpu_ns = sig->sum_sched_runtime;
    o->child_cpu_ns = sig->cutime + sig->cstime;
    add_io(o, &sig->ioac);
    o->threads = (u32)sig->nr_threads;
    struct bpf_iter_task it;
    struct task_struct *t;
    bpf_iter_task_new(&it, leader, BPF_TASK_ITER_PROC_THREADS);
    while ((t = bpf_iter_task_next(&it))) {
        o->cpu_ns += t->se.sum_exec_runtime;
        add_io(o, &t->ioac);
        add_runq(o, t);
        list_children(s, t, (s32)i);
    }
    bpf_iter_task_destroy(&it);
    o->ppid = leader->real_parent->tgid;
    o->start_ns = leader->start_time;
    o->switches = leader->sched_info.pcount;
    read_rss(s, as_number(s, leader), o);
    bpf_probe_read_kernel_str(o->comm, sizeof(o->comm), leader->comm);
    bpf_rcu_read_unlock();
    o->found = 1;
    bpf_task_release(leader);
}

SEC("syscall")
int read_tree(void *ctx)
{
    u32 zero = 0;
    struct procbpf_shared *s = bpf_map_lookup_elem(&shared, &zero);
    if (!s)
        return 1;
    if (s->op == PROCBPF_FIND_CPUS)
        return find_cpu_offsets(s);
    u32 n = s->n;
    if (n > PROCBPF_MAX_PROCS)
        n = PROCBPF_MAX_PROCS;
    s->n = n;
    s->nkids = 0;
    s->kids_lost = 0;
    s->kids_from = n;
    s->ncut = 0;
    s->read_ns = bpf_ktime_get_ns(); /* the counters' time, whenever the syscall ran */
    struct bpf_iter_num it;
    int *ip;
    bpf_iter_num_new(&it, 0, (int)n);
    while ((ip = bpf_iter_num_next(&it))) {
        u32 i = (u32)*ip;
        if (i >= PROCBPF_MAX_PROCS)
            break;
        read_process(s, i);
    }
    bpf_iter_num_destroy(&it);
    return 0;
}
