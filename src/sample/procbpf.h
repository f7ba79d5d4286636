/*
 * The process tree read by a BPF program instead of procfs text (see
 * proc.bpf.c). Available when strobe was built with BPF support, the kernel
 * has BTF and open-coded task iterators (6.7+), and the recorder may load
 * BPF programs (root, or CAP_BPF with CAP_PERFMON). Anything else makes
 * procbpf_open() fail with the reason, and the tree is read through procfs.
 */
#ifndef STROBE_SAMPLE_PROCBPF_H
#define STROBE_SAMPLE_PROCBPF_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/procbpf_abi.h"

struct procbpf;

/* Load the program and check it against /proc/self (a pid namespace other
 * than the kernel's initial one would give other pids). 0, or -errno with
 * a one-line reason in why. Where its sums of the RSS counters match
 * /proc/self/statm, each reading carries the RSS (rss_ok); else statm is
 * the caller's to read. */
int procbpf_open(struct procbpf **out, char *why, size_t why_len);
void procbpf_close(struct procbpf *b);

/* Once a frame, now_ns its time: where the program sums the RSS, read the
 * online CPUs again once a second, so that a CPU brought online has its
 * share of the counters summed too. */
void procbpf_follow_online(struct procbpf *b, int64_t now_ns);

/* One run: read pids[0..n) (n <= PROCBPF_MAX_PROCS), the first kids_only of
 * them for the children of their threads only (their readings then hold
 * pid and found, nothing else). The results stay valid until the next
 * call. 0 or -errno. */
struct procbpf_result {
    const struct procbpf_proc *proc; /* n of them, in the order of pids */
    const struct procbpf_kid *kids;  /* children of their threads */
    uint32_t nkids;
    /* pids[kids_from..n) had their children listed in part or not at all:
     * run again from there (kids_only n - kids_from); n when all were */
    uint32_t kids_from;
    const struct procbpf_cut *cut; /* threads whose children files hold more */
    uint32_t ncut;
    int kids_lost;   /* more threads were cut than listed: look in procfs everywhere */
    int64_t read_ns; /* CLOCK_MONOTONIC as the program began to read */
};
int procbpf_read(struct procbpf *b, const pid_t *pids, uint32_t n, uint32_t kids_only,
                 struct procbpf_result *out);

#endif
