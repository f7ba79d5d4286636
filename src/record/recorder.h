/*
 * strobe run: start the job, follow its process tree, sample on absolute
 * deadlines, and keep everything in the store.
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
    const char *name;       /* NULL: the command's base name */
    const char *experiment; /* may be NULL */
    const char *workload;   /* runs started together; may be NULL */
    struct kv_list tags;
    struct kv_list params;
    int64_t interval_ns;
    int64_t gpu_interval_ns; /* GPU sampling period; 0: the default, 100 ms */
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
    const char *torch_profile;      /* --torch-profile "A-B", or NULL */
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
