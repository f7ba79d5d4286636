/*
 * The layout shared by the BPF program (proc.bpf.c, compiled by clang for the
 * BPF target) and the recorder (procbpf.c): one mmap'ed array map holding the
 * pids to read and, after each run of the program, what it read. Fixed-width
 * kernel types only, so both compilers lay it out the same.
 */
#ifndef STROBE_SAMPLE_PROCBPF_ABI_H
#define STROBE_SAMPLE_PROCBPF_ABI_H

/* Processes one run of the program reads; more are read in several runs. */
#define PROCBPF_MAX_PROCS 1024
/* Children listed in one run, and walked per thread. When the list fills
 * while a run's first process is walked, or a thread has more children than
 * one walk takes, that thread is cut (cut[]) and the recorder reads its
 * children file; when it fills at a later process, listing stops there
 * (kids_from) and the recorder runs the program again from that process,
 * for children only. Far above what a training job has. */
#define PROCBPF_MAX_KIDS                4096
#define PROCBPF_MAX_CHILDREN_PER_THREAD 4096
/* Threads cut in one run; past them kids_lost, and the recorder looks for
 * children through procfs everywhere that frame. */
#define PROCBPF_MAX_CUT 64
/* CPUs whose share of the RSS counters the program sums; on a machine with
 * more online, the RSS comes from statm. */
#define PROCBPF_MAX_CPUS 1024

/* What a run of the program does (procbpf_shared.op). */
enum procbpf_op {
    PROCBPF_READ = 0,      /* read pids[0..n) */
    PROCBPF_FIND_CPUS = 1, /* fill cpu_off[0..ncpus) for cpu_ids[0..ncpus) */
};

struct procbpf_proc {
    __s32 pid;
    __s32 ppid;         /* real parent's tgid, as /proc/PID/stat field 4 */
    __u32 found;        /* 0: no such process (reaped) */
    __u32 threads;      /* signal->nr_threads, as stat field 20 */
    __u64 start_ns;     /* the leader's start time: a reused pid differs */
    __u64 cpu_ns;       /* live threads' run time plus that of exited threads */
    __u64 child_cpu_ns; /* cutime + cstime: waited-for children */
    __u64 rchar, wchar, read_bytes, write_bytes; /* as /proc/PID/io */
    __u64 switches; /* the main thread's times switched in, as schedstat */
    /* run-queue wait (schedstat's second field) of its live threads since
     * the program last read each one; all of a thread's on its first read */
    __u64 runq_ns;
    __u64 rss_pages; /* file + anon + shmem pages, as statm's second field */
    __u32 rss_ok;    /* 0: rss_pages not read, take statm */
    __u32 pad;
    char comm[16];
};

struct procbpf_kid {
    __s32 parent; /* index into pids[] of the process whose thread forked it */
    __s32 pid;
};

/* A thread whose children the run did not all list. */
struct procbpf_cut {
    __s32 parent; /* index into pids[] of its process */
    __s32 tid;
};

struct procbpf_shared {
    __u32 n;         /* in: pids[0..n) to read */
    __u32 nkids;     /* out: kids[0..nkids) */
    __u32 kids_lost; /* out: more threads were cut than cut[] holds */
    /* out: pids[kids_from..n) had their children listed in part or not at
     * all (the list was full); n when every process's were */
    __u32 kids_from;
    __u32 ncut; /* out: cut[0..ncut) */
    /* in: pids[0..kids_only) are walked for their children only; their own
     * readings are left unread (pid and found only) */
    __u32 kids_only;
    __u64 read_ns; /* out: CLOCK_MONOTONIC as the program began to read */
    __u32 op;      /* in: enum procbpf_op */
    __u32 ncpus;   /* in: cpu_ids[0..ncpus) are online; 0: no RSS from BPF */
    __u64 scratch; /* the program's own, to turn a pointer into a number */
    /* in: the online CPUs; out of PROCBPF_FIND_CPUS, in to PROCBPF_READ:
     * each one's per-CPU offset (what the kernel adds to a per-CPU pointer
     * to reach that CPU's copy) */
    __u32 cpu_ids[PROCBPF_MAX_CPUS];
    __u64 cpu_off[PROCBPF_MAX_CPUS];
    __s32 pids[PROCBPF_MAX_PROCS];
    struct procbpf_proc out[PROCBPF_MAX_PROCS];
    struct procbpf_kid kids[PROCBPF_MAX_KIDS];
    struct procbpf_cut cut[PROCBPF_MAX_CUT];
};

#endif
