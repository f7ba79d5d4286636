/*
 * The job's process tree: the command strobe started and every process it
 * forks or spawns later, including those that re-parent (the recorder is a
 * child subreaper, so orphans come back to it).
 *
 * Two sources, the same numbers. Where the kernel lets strobe load BPF
 * programs, one BPF program reads every tracked process and the children of
 * every thread in one system call (procbpf.h); only statm is still read from
 * procfs, for an exact RSS. Elsewhere (no BPF, another --proc-root) each
 * process's stat, io, statm and schedstat are read.
 *
 * Discovery through procfs: each sample reads the children file of every
 * tracked process's main thread and of the recorder's own thread (orphans),
 * and once a second the children files of every thread (for processes
 * forked off other threads). Through BPF every thread's children, each frame.
 *
 * Run-queue delay (schedstat's second field, per thread) is summed over a
 * process's threads: through BPF every thread's each frame; through procfs
 * the main thread's each frame (its schedstat is read anyway) and the other
 * threads' in the walk once a second. Either way its points come once a
 * second (every frame at longer intervals): a rule judges it over seconds,
 * and procfs would pay a read per thread per frame for finer ones.
 *
 * File descriptors: a process's /proc/PID and the files its source reads
 * each frame stay open while the tree's budget has room (fd_budget, from
 * the soft RLIMIT_NOFILE, which strobe run raises to the hard one); past
 * it a process keeps none, and each reading opens what it reads and closes
 * it again (stat's start time tells a reused pid). A process whose reading
 * fails for want of fds or memory still counts in proc.count, and
 * proc_tree_unfollowed() says how many did.
 *
 * Totals stay continuous when processes exit: CPU time and I/O of a process
 * that is reaped move into its parent's cutime/cstime and io counters (proc(5)),
 * and a process the recorder reaps itself is read one last time as a zombie
 * (proc_tree_reap_prepare): that reading is its last interval at the next
 * frame, in its own series and the tree's, and then it joins the tree's
 * reaped totals.
 */
#ifndef STROBE_SAMPLE_PROCTREE_H
#define STROBE_SAMPLE_PROCTREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/collector.h"
#include "sample/parse.h"
#include "sample/pfile.h"

struct sample_env;
struct series_table;
struct procbpf;

/* The files kept open per process, relative to its /proc/PID fd. */
enum proc_file {
    PF_STAT,      /* stat: CPU ticks, threads, ppid, comm */
    PF_IO,        /* io: bytes read and written (needs ptrace access) */
    PF_STATM,     /* statm: resident pages (exact; stat's rss can lag) */
    PF_SCHEDSTAT, /* schedstat: the main thread's run-queue wait and times switched in */
    PF_CHILDREN,  /* task/PID/children: the main thread's children */
    PF_COUNT
};

/* At most this many processes of one run get series of their own. */
#define PROC_SERIES_MAX 4096

/* A thread other than the main one, as the procfs source last read its
 * run-queue wait (task/TID/schedstat, once a second). */
struct thread_wait {
    pid_t tid;
    uint32_t seen;    /* the walk that last listed it: one not listed has exited */
    uint64_t wait_ns; /* schedstat's second field; 0 before its first reading */
};

struct proc_entry {
    pid_t pid;
    pid_t ppid;
    pid_t meta_ppid; /* ppid as last written to the series meta */
    int dirfd;       /* /proc/PID, kept (-1 past the fd budget): it also pins the identity */
    struct pfile f[PF_COUNT];
    char comm[64];
    struct pid_stat st;    /* last read */
    struct pid_io iov;     /* last read (zero if unreadable) */
    uint64_t ctxt;         /* last read: context switches (main thread) */
    uint64_t rss_bytes;    /* last read: statm resident, else stat rss */
    uint64_t cpu_ns;       /* last read: CPU time of its threads, live and exited */
    uint64_t child_cpu_ns; /* last read: CPU time of its waited-for children */
    uint64_t start_ns;     /* BPF: the start time read first (a reused pid differs) */
    uint64_t start_ticks;  /* procfs: stat's starttime read first (a reused pid differs) */
    /* Run-queue delay of its threads: each thread's schedstat wait, all of
     * it from the first reading of the thread and its growth after. A
     * thread that exits takes what it waited since its last reading along
     * (no counter keeps exited threads' waits): up to a frame under BPF,
     * up to a second for a thread other than the main one through procfs */
    uint64_t runq_ns;
    uint64_t runq_counted;   /* runq_ns as last added to the tree's total */
    uint64_t main_wait_ns;   /* procfs: the main thread's schedstat wait, last read */
    struct thread_wait *thr; /* procfs: the other threads (a walk once a second) */
    uint32_t nthr, thr_cap;
    int64_t born_mono_ns; /* when it was forked (CLOCK_MONOTONIC), 0 if not known */
    /* cpu_ns, read and write bytes, ctxt, runq_ns as rates need them */
    struct rate_counter r_cpu, r_read, r_write, r_ctxt, r_runq;
    struct read_time prev;      /* the previous sample; due_ns 0 before the first */
    struct read_time runq_prev; /* the previous run-queue point (once a second) */
    uint32_t s_cpu, s_rss, s_threads, s_read, s_write, s_ctxt, s_runq; /* series */
    uint8_t have_series;
    uint8_t no_series; /* past PROC_SERIES_MAX: in the totals only */
    uint8_t io_ok;
    uint8_t ctxt_ok;
    uint8_t gone;   /* BPF: not found this frame, to be removed */
    uint8_t final;  /* reaped by the recorder: its last reading, emitted at the next frame */
    uint8_t kept;   /* keeps its fds between readings (the budget had room) */
    uint8_t unread; /* no reading yet (fds or memory ran out): counted, not emitted */
    uint8_t lost;   /* a reading failed for want of fds or memory: in unfollowed */
};

/* A thread whose children the BPF program did not all list. */
struct proc_cut {
    pid_t pid; /* its process */
    pid_t tid;
};

/* Totals that only grow: tree CPU time and I/O bytes. */
struct tree_totals {
    uint64_t cpu_ns;     /* utime+stime+cutime+cstime */
    uint64_t read_bytes; /* storage reads */
    uint64_t write_bytes;
    uint64_t rchar; /* read(2)-family bytes */
    uint64_t wchar;
};

struct proc_tree {
    struct proc_entry *e; /* live tracked processes */
    uint32_t n;
    uint32_t cap;
    pid_t root_pid;             /* the job; 0 before it starts */
    struct pfile self_children; /* the recorder's own children: the job, orphans */
    struct tree_totals reaped;  /* final totals of processes the recorder reaped */
    struct tree_totals emitted; /* running maximum of the totals, the base of rates */
    uint64_t ctxt_sum;          /* sum of per-process context-switch deltas (of
                                 * processes reaped between frames too) */
    uint64_t runq_sum;          /* sum of per-process run-queue delay growth */
    struct rate_counter r_cpu, r_read, r_write, r_rchar, r_wchar, r_ctxt, r_runq; /* of those */
    struct read_time prev;       /* the previous frame; due_ns 0 before the first */
    struct read_time runq_prev;  /* the previous frame with run-queue points */
    int64_t bpf_read_ns;         /* when the BPF program read the tracked processes */
    int64_t boot_minus_mono_ns;  /* CLOCK_BOOTTIME - CLOCK_MONOTONIC: stat's starttime is on the
                                    former */
    int64_t last_thread_scan_ns; /* the last walk of every thread (once a second) */
    uint32_t walk;               /* walks so far: thread_wait.seen */
    uint32_t series_procs;       /* processes given their own series */
    uint32_t uncharted;          /* processes past the cap, in the totals only */
    uint32_t fds;                /* fds the entries keep */
    uint32_t fd_budget;          /* at most this many kept (set by proc_tree_init) */
    uint32_t unfollowed;         /* processes a reading of failed for want of fds or memory */
    int unfollowed_err;          /* the errno of the last such failure */
    uint32_t untracked;          /* this frame: processes not taken in (no memory), or lists of
                                  * the recorder's own children unread */
    uint32_t untracked_peak;     /* the most in one frame */
    struct series_table *series; /* where per-process series live (set by the collector) */
    uint32_t s_cpu, s_rss, s_threads, s_count, s_read, s_write, s_rchar, s_wchar, s_ctxt, s_runq;
    const struct sample_env *env;
    pid_t not_job[8]; /* the recorder's own children (its output tees, --on-finding's
                         commands): never the job's */
    uint32_t n_not_job;
    struct procbpf *bpf;       /* NULL: the tree is read through procfs */
    pid_t *bpf_pids;           /* the pids of one BPF run, reused */
    pid_t *bpf_kids;           /* the children one frame found, reused */
    struct proc_cut *bpf_cuts; /* the threads one frame's runs cut, reused */
    uint32_t bpf_pids_cap, bpf_kids_cap, bpf_cuts_cap;
    uint32_t *index; /* pid -> entry (proctree.c), index_cap slots, a power of two */
    uint32_t index_cap;
};

enum proc_source { PROC_SOURCE_AUTO, PROC_SOURCE_BPF, PROC_SOURCE_PROCFS };
/* "auto", "bpf" or "procfs"; -1 for anything else. */
int proc_source_parse(const char *s);

int proc_tree_init(struct proc_tree *t, const struct sample_env *env);
/* Read the tree through BPF from now on. 0, or -errno with the reason in why
 * (the tree stays on procfs). */
int proc_tree_use_bpf(struct proc_tree *t, char *why, size_t why_len);
/* "bpf" or "procfs": where the tree's numbers come from. */
const char *proc_tree_source(const struct proc_tree *t);
void proc_tree_release(struct proc_tree *t);
/* pid, a child of the recorder, is its own helper: not the job's, even
 * though it shows among the recorder's children as orphans do. */
void proc_tree_not_job(struct proc_tree *t, pid_t pid);
/* Such a helper has been reaped: its pid may be the job's again. */
void proc_tree_not_job_end(struct proc_tree *t, pid_t pid);
/* Start following pid (the job, just forked). */
int proc_tree_set_root(struct proc_tree *t, pid_t pid);
/* pid, a child of the recorder, is a zombie not yet reaped: read it one last
 * time; the next frame emits that reading and folds it into the reaped
 * totals. Call before waitpid() reaps it. */
void proc_tree_reap_prepare(struct proc_tree *t, pid_t pid);
/* Processes of the job that strobe could not follow all along: a reading
 * failed for want of file descriptors or memory (they still count in
 * proc.count), or could not be taken in at all (the most in one frame).
 * *err gets the errno of the last failure (EMFILE, ENFILE, ENOMEM). */
uint32_t proc_tree_unfollowed(const struct proc_tree *t, int *err);
/* Find a tracked process; NULL if not tracked. */
struct proc_entry *proc_tree_find(struct proc_tree *t, pid_t pid);

#endif
