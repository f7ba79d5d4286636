/*
 * strobe run: start the job, follow its process tree, sample on absolute
 * deadlines, and keep everything in the store.
 *
 * A run, in order:
 *  1. Open the store (creating and migrating it) and insert the run row; a
 *     store that cannot be opened or written is one line and exit 125, and
 *     the job never runs. Collectors open their files in the recorder's own
 *     cgroup, which the job will inherit. Git and Python/torch versions are
 *     probed with bounded timeouts (torch's from package metadata, without
 *     importing torch).
 *  2. Block signals in every thread and read them from a signalfd. Become a
 *     child subreaper (PR_SET_CHILD_SUBREAPER), so the job's orphans
 *     re-parent to the recorder and stay in the tree.
 *  3. Create the event segment /strobe-<run id> (a failure is one warning:
 *     the run goes on without framework events) and build the job's
 *     environment before the fork (STROBE_SHM; PYTHONPATH with the package
 *     and its sitecustomize in front).
 *  4. Fork and execvpe the job; a close-on-exec pipe reports a failed exec's
 *     errno, which becomes one line, exit 127 and a failed run.
 *  5. Sample: a baseline frame at once, then a periodic absolute timerfd on
 *     CLOCK_MONOTONIC. More than one expiration counts missed deadlines, and
 *     each frame is stamped start_real + k * interval, so the period cannot
 *     drift and timestamps compress to one bit each. Ticks drain the event
 *     rings at most every 10 ms; a separate 100 ms timer does when the
 *     interval is longer. The GPU threads (gpu/gpu.h, gpu/dcgm.h) queue
 *     their readings, and each tick moves them into the series table.
 *     The rules judge as windows close; a finding may set off an
 *     --on-finding action (record/on_finding.h): stop the job, signal it,
 *     or run a command.
 *  6. Reap: waitid(WNOWAIT) finds each exited child, the tree reads it one
 *     last time as a zombie (after draining the rings), then it is reaped.
 *  7. End: one last frame (see the end of recorder.c), the run row's end
 *     time, then a wait of up to 2 s for the job's last output, so that an
 *     orphan holding stdout delays the summary but not the run's end. Orphans
 *     still running are named in a note and not followed further. The last
 *     batch is committed, the run gets its exit code or signal and status,
 *     and strobe exits with the job's status.
 */
#ifndef STROBE_RECORD_RECORDER_H
#define STROBE_RECORD_RECORDER_H

#include <stdint.h>

#include "store/store.h"

/* strobe's own failure (bad usage, store unusable): the job never started. */
#define RECORDER_EXIT_SELF   125
#define RECORDER_EXIT_NOEXEC 127

struct recorder_opts {
    const char *store_uri;
    const char *spool_dir;  /* where batches a PostgreSQL store does not take go (record/spool.h);
                               NULL: the default */
    const char *name;       /* NULL: the command's base name */
    const char *experiment; /* may be NULL */
    const char *workload;   /* runs started together; may be NULL */
    struct kv_list tags;
    struct kv_list params;
    int64_t interval_ns;
    int64_t gpu_interval_ns; /* GPU sampling period; 0: the default, 100 ms */
    int64_t open_every_ns;   /* --open-every: how often each series' open block is written
                                again; 0: every second into a file, 5 s into PostgreSQL */
    int quiet;
    int no_logs;                    /* the job's stdout and stderr not kept (nor teed) */
    const char *proc_root;          /* "/proc" unless testing */
    const char *sys_root;           /* "/sys" unless testing */
    int proc_source;                /* enum proc_source: auto, bpf or procfs */
    const char *collectors;         /* comma list, or NULL for all */
    int no_framework;               /* no zero-code PyTorch capture (the event API still works) */
    const char *rules;              /* --rules: NULL or "all", "none", or a comma list */
    const char *const *rule_params; /* --rule-param "Rule.p=v", NULL-terminated; may be NULL */
    int64_t rule_interval_ns;       /* --rule-interval; 0: the default, 10 s */
    const char *const *on_finding;  /* --on-finding "RULE[,RULE]=ACTION", NULL-terminated; may
                                       be NULL (record/on_finding.h) */
    int64_t stop_grace_ns;          /* --stop-grace: SIGTERM to SIGKILL of a stop action */
    const char *torch_profile;      /* --torch-profile "A-B", or NULL */
    double py_sample_hz;            /* --py-sample: Python stacks this often; 0 off */
    const char *py_profile;         /* --py-profile "A-B": stacks at 100 Hz over those steps */
    const char *join_key;           /* --join: the job's key (record/cluster.h), or NULL */
    const char *node;               /* --node: this node's name in the job, or NULL */
    const char *listen;             /* --listen HOST:PORT: serve /metrics, or NULL */
    const char *listen_token;       /* --token: required of a scrape; needed off loopback */
    int no_join;                    /* --no-join: no job, whatever the launcher says */
    const char *start_gate;         /* --start-gate "R,G" (strobe sweep's barrier): once ready,
                                       write the run id and a newline to fd R; when fd G gives
                                       a byte, write the run row and start the job; G's end
                                       first (or INT, TERM, HUP) exits with nothing stored */
    char **argv;                    /* the job's command, NULL-terminated */
    char *run_id_out;               /* if not NULL (RUN_ID_LEN + 1 bytes): the run's id, set
                                       once the run is in the store, else left "" */
    int *job_started_out;           /* if not NULL: set to 0 when the command could not be
                                       started (exec failed), else left as it is */
};

/* Run the job under the recorder. Returns the exit status strobe should
 * exit with: the job's, 128+N for signal N, 127 if it could not start, 125
 * if strobe itself could not start. */
int recorder_run(const struct recorder_opts *o);

#endif
