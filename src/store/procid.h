/*
 * Which process a recorder was, told apart from any process that later has
 * its pid: a pid is only a number inside one pid namespace and one boot, and
 * it is reused. A recorder stores its identity with its run (schema 5); a
 * reader asks whether that very process still lives, from wherever it runs.
 * docs/cli.md ("lost") says what is decided where.
 */
#ifndef STROBE_STORE_PROCID_H
#define STROBE_STORE_PROCID_H

#include <stdint.h>

#define PROCID_BOOT_ID_LEN 36 /* a UUID: 8-4-4-4-12 hex digits */

struct procid {
    char boot_id[PROCID_BOOT_ID_LEN + 1]; /* /proc/sys/kernel/random/boot_id; "" unknown */
    int64_t pid_ns;                       /* inode of /proc/self/ns/pid; 0 unknown */
    int64_t time_ns;     /* inode of /proc/self/ns/time; 0 when none (kernels before 5.6) */
    int64_t start_ticks; /* proc(5) /proc/PID/stat field 22, starttime; -1 unknown */
};

/* What a reader can tell of a process from its pid and identity. */
enum procid_state {
    PROCID_UNKNOWN, /* cannot be told from here (another kernel, a namespace not seen) */
    PROCID_ALIVE,   /* that very process runs */
    PROCID_GONE,    /* it has exited (its pid is free, or another process's) */
};

/* The calling process's identity; what cannot be read stays unknown. */
void procid_self(struct procid *out);

/*
 * Whether the process pid (in its own pid namespace) with identity id still
 * runs, as seen by the caller. same_host says the run's host name is the
 * caller's: a boot id other than the caller's then means that host rebooted
 * since, where on another host it means nothing. An identity with no boot
 * id (a run recorded before schema 5) is judged by its pid alone, and only
 * on the same host: gone when no process has it.
 */
enum procid_state procid_check(const struct procid *id, int64_t pid, int same_host);

#endif
