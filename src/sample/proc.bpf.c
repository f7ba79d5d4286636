/*
 * The process-tree reader in the kernel: a BPF_PROG_TYPE_SYSCALL program
 * that the recorder runs once a frame with BPF_PROG_TEST_RUN. It reads, for
 * each pid the recorder lists in the shared map, what /proc/PID/stat, io and
 * schedstat would print, straight from the task structures, and lists the
 * children of every thread, as task/TID/children would. One system call
 * replaces four to five procfs reads per process, and no text is printed or
 * parsed; CPU time comes in nanoseconds instead of 1/USER_HZ ticks.
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

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __uint(map_flags, BPF_F_MMAPABLE);
    __type(key, u32);
    __type(value, struct procbpf_shared);
} shared SEC(".maps");

/* What /proc/PID/io adds up for a whole process: one thread's counters. */
static __always_inline void add_io(struct procbpf_proc *o, struct task_io_accounting *io)
{
    o->rchar += io->rchar;
    o->wchar += io->wchar;
    o->read_bytes += io->read_bytes;
    o->write_bytes += io->write_bytes;
}

/* The children of one thread (only thread-group leaders are linked there). */
static __always_inline void list_children(struct procbpf_shared *s, struct task_struct *t,
                                          s32 parent)
{
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
            s->kids_lost = 1; /* more than one walk may take */
            break;
        }
        struct task_struct *c = (struct task_struct *)(pos - sibling_off);
        u32 j = s->nkids;
        if (j >= PROCBPF_MAX_KIDS) {
            s->kids_lost = 1;
            break;
        }
        s->kids[j].parent = parent;
        s->kids[j].pid = BPF_CORE_READ(c, tgid);
        s->nkids = j + 1;
        pos = (u64)BPF_CORE_READ(c, sibling.next);
    }
    bpf_iter_num_destroy(&it);
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
        list_children(s, t, (s32)i);
    }
    bpf_iter_task_destroy(&it);
    o->ppid = leader->real_parent->tgid;
    o->start_ns = leader->start_time;
    o->switches = leader->sched_info.pcount;
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
    s->nkids = 0;
    s->kids_lost = 0;
    s->read_ns = bpf_ktime_get_ns(); /* the counters' time, whenever the syscall ran */
    u32 n = s->n;
    if (n > PROCBPF_MAX_PROCS)
        n = PROCBPF_MAX_PROCS;
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
