/*
 * Parsers for the /proc and /sys files the collectors read. Each takes a
 * buffer and its length, fills a plain struct, and returns 0 or -EINVAL; none
 * allocates, none reads past len. Kept apart from the collectors so unit
 * tests and fuzzers can feed them fixture files and garbage.
 */
#ifndef STROBE_SAMPLE_PARSE_H
#define STROBE_SAMPLE_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* proc(5) /proc/stat "cpu" lines, in USER_HZ ticks. */
struct cpu_ticks {
    uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/* Parse /proc/stat: the aggregate line into *total and each "cpuN" line into
 * cores[N] for N < max_cores; core_seen[N] is set for cores present. Returns
 * the number of cpuN lines, or -EINVAL. */
int parse_proc_stat(const char *buf, size_t len, struct cpu_ticks *total, struct cpu_ticks *cores,
                    uint8_t *core_seen, int max_cores);

struct meminfo {
    uint64_t total_bytes, free_bytes, available_bytes, buffers_bytes, cached_bytes;
    uint64_t swap_total_bytes, swap_free_bytes;
};
int parse_meminfo(const char *buf, size_t len, struct meminfo *out);

/* /proc/vmstat: pages swapped in and out since boot. */
int parse_vmstat_swap(const char *buf, size_t len, uint64_t *pswpin, uint64_t *pswpout);

/* /proc/pressure/<resource>: the "total=" (µs) of the "some" and "full" lines.
 * full is 0 when the file has no full line (cpu on older kernels). */
int parse_psi(const char *buf, size_t len, uint64_t *some_us, uint64_t *full_us);

/* One /proc/diskstats line. */
struct diskstat {
    char name[32];
    uint64_t sectors_read, sectors_written, io_ticks_ms, reads, writes;
};
/* Parse the line at *pos; advances *pos past it. 1 with a line, 0 at end,
 * -EINVAL for a malformed line (skipped). */
int parse_diskstats_next(const char *buf, size_t len, size_t *pos, struct diskstat *out);

struct netdev {
    char name[32];
    uint64_t rx_bytes, tx_bytes;
};
/* /proc/net/dev, line by line after the two header lines, as above. */
int parse_netdev_next(const char *buf, size_t len, size_t *pos, struct netdev *out);

/* proc(5) /proc/PID/stat fields the process collector needs. */
struct pid_stat {
    char comm[64];       /* field 2, without the parentheses, cut to fit */
    char state;          /* field 3 */
    pid_t ppid;          /* field 4 */
    uint64_t utime;      /* field 14, ticks */
    uint64_t stime;      /* field 15 */
    uint64_t cutime;     /* field 16, waited-for children */
    uint64_t cstime;     /* field 17 */
    int64_t num_threads; /* field 20 */
    uint64_t starttime;  /* field 22, ticks after boot */
    uint64_t rss_pages;  /* field 24 */
};
/* comm may hold spaces and ')': its end is the last ')' in the buffer. */
int parse_pid_stat(const char *buf, size_t len, struct pid_stat *out);

/* /proc/PID/io (proc(5)). */
struct pid_io {
    uint64_t rchar, wchar, read_bytes, write_bytes, cancelled_write_bytes;
};
int parse_pid_io(const char *buf, size_t len, struct pid_io *out);

/* A kernel CPU list ("0-3,8,10-11\n", as /sys/devices/system/cpu/online):
 * the CPUs into cpus[0..*n), ascending. -E2BIG past max of them, -EINVAL
 * for anything else than ranges and numbers in ascending order. */
int parse_cpu_list(const char *buf, size_t len, uint32_t *cpus, uint32_t max, uint32_t *n);

/* /proc/PID/statm: the second field, resident pages. */
int parse_pid_statm(const char *buf, size_t len, uint64_t *resident_pages);

/* /proc/PID/schedstat (and task/TID/schedstat): "run_ns wait_ns
 * timeslices". wait_ns is proc(5)'s time spent waiting on a runqueue; the
 * third field counts the times the task was switched in, that is its
 * context switches (voluntary + involuntary of status, to one, for the
 * main thread). */
int parse_pid_schedstat(const char *buf, size_t len, uint64_t *wait_ns, uint64_t *switches);

/* /sys/block/DEV/stat: the /proc/diskstats fields after the name. name is
 * left as it was. */
int parse_block_stat(const char *buf, size_t len, struct diskstat *out);

/* A list of decimal pids separated by blanks (/proc/PID/task/TID/children,
 * cgroup.procs). Calls fn for each; returns how many, or -EINVAL. */
typedef void pid_list_fn(pid_t pid, void *arg);
int parse_pid_list(const char *buf, size_t len, pid_list_fn *fn, void *arg);

/* One "key value" line from a flat-keyed file (cpu.stat, memory.stat). */
int parse_flat_key(const char *buf, size_t len, const char *key, uint64_t *out);

/* A single number, or "max" (cgroup v2), which yields UINT64_MAX. */
int parse_u64_or_max(const char *buf, size_t len, uint64_t *out);

#endif
