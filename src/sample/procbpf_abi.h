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
/* Children listed in one run, and walked per thread: past either the run
 * says so (kids_lost) and the recorder looks for children through procfs
 * that frame. Far above what a training job has. */
#define PROCBPF_MAX_KIDS                4096
#define PROCBPF_MAX_CHILDREN_PER_THREAD 4096

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
    char comm[16];
};

struct procbpf_kid {
    __s32 parent; /* index into pids[] of the process whose thread forked it */
    __s32 pid;
};

struct procbpf_shared {
    __u32 n;         /* in: pids[0..n) to read */
    __u32 nkids;     /* out: kids[0..nkids) */
    __u32 kids_lost; /* out: children past PROCBPF_MAX_KIDS were not listed */
    __u32 pad;
    __u64 read_ns; /* out: CLOCK_MONOTONIC as the program began to read */
    __s32 pids[PROCBPF_MAX_PROCS];
    struct procbpf_proc out[PROCBPF_MAX_PROCS];
    struct procbpf_kid kids[PROCBPF_MAX_KIDS];
};

#endif
