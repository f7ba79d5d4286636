/*
 * strobe sweep's experiment files: radT's CSV and YAML, read as they are,
 * and strobe's extensions of the YAML (docs/sweep.md). A file becomes a
 * plan: workloads in order, each a set of runs started together.
 *
 * CSV: one row a run, RFC 4180 quoting, the header names the columns
 * (radT's Experiment,Workload,Name,Status,Run,Devices,Collocation,File,
 * Listeners,Params, plus Command, Timeout, Retries, Env, OnFinding). Rows
 * with the same Experiment and Workload are one workload, in order of their
 * first row.
 *
 * YAML (libyaml's document loader, which keeps each node's line and
 * column): radT's keys (name, experiment, collocation, devices, listeners,
 * file, method, parameters) make one group; `workloads:` lists more groups
 * that take the top level's keys as defaults. A group's parameters expand
 * by grid (every combination, in key order with the last key fastest) or
 * random (count combinations drawn with seed, the same on every read, so
 * that a campaign resumes onto the same plan). Each combination is one
 * workload of `runs` runs.
 *
 * Every mistake a file can make (an unknown key or column, a bad value, an
 * unknown device, a template naming a missing parameter, a listener that is
 * not installed) is found here, before anything starts, and reported as
 * "FILE:LINE:COL: what is wrong".
 */
#ifndef STROBE_SWEEP_SPEC_H
#define STROBE_SWEEP_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

/* The most workloads one file may expand to: a grid past it is a mistake. */
#define SWEEP_MAX_WORKLOADS 100000
/* The largest experiment file read (a million CSV rows is about 100 MB). */
#define SWEEP_MAX_FILE_BYTES (256u << 20)
/* The most runs one workload may start together. */
#define SWEEP_MAX_RUNS 64

enum sweep_share {
    SWEEP_SHARE_PLAIN, /* "-": processes share the GPU as they are */
    SWEEP_SHARE_MPS,   /* "MPS": through an MPS control daemon */
    SWEEP_SHARE_MIG,   /* a MIG profile such as "3g.20gb": a slice each */
};

/* One `strobe run` of a workload. Strings owned by the spec. */
struct sweep_run {
    char *name;             /* the run's name */
    char **argv;            /* the job's command, NULL-terminated */
    char *cwd;              /* the job's working directory; NULL: strobe sweep's own */
    struct kv_list params;  /* recorded with the run (--param) */
    char **devices;         /* GPU indexes or UUIDs, NULL-terminated; none: {NULL} */
    enum sweep_share share; /* how it shares its devices */
    char *mig_profile;      /* SWEEP_SHARE_MIG: the profile */
    int mps_thread_pct;     /* SWEEP_SHARE_MPS: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; 0: unset */
    char *wrap;             /* "nsys", "ncu"...: the listener that wraps the command, or NULL */
    int row;                /* the CSV row (from 1, after the header), or 0 */
    int line;               /* where it was defined, for messages */
};

struct sweep_workload {
    char *name;       /* unique in the campaign */
    char *experiment; /* the runs' experiment */
    char key[17];     /* hex hash of everything that defines it: resume identity */
    struct sweep_run *runs;
    size_t nruns;
    struct kv_list env;       /* added to every run's environment */
    char **on_finding;        /* strobe run --on-finding values, NULL-terminated */
    char *rules;              /* strobe run --rules, or NULL */
    char **rule_params;       /* --rule-param values, NULL-terminated, or NULL */
    int64_t rule_interval_ns; /* --rule-interval; 0: its default */
    int64_t timeout_ns;       /* 0: none */
    int64_t interval_ns;      /* strobe run --interval; 0: its default */
    int retries;              /* further tries of a failed workload */
    int share_devices;        /* may share devices with other campaigns */
    int report;               /* write each run's HTML report */
    int file_finished;        /* every row's Status says FINISHED (a radT write-back) */
    int line, col;            /* where it is defined: its first row, or its YAML name or group */
};

enum sweep_format { SWEEP_CSV, SWEEP_YAML };

struct sweep_spec {
    char *path; /* as given */
    enum sweep_format format;
    char *campaign; /* the campaign's name: its experiment */
    char hash[17];  /* of the whole plan */
    struct sweep_workload *w;
    size_t n;
};

/* What the plan may refer to outside the file: the GPUs that exist and the
 * wrapping listeners that are installed. The caller fills it (sweep/gpus.h)
 * so that tests can pass their own. */
struct sweep_env {
    char **gpu_ids;         /* indexes and UUIDs that name a GPU here, NULL-terminated */
    const char *why_no_gpu; /* said when a file names a device and there is none */
    int (*have_command)(const char *name); /* whether name is on PATH */
    const char *python;                    /* the interpreter of file-based runs; NULL: python3 */
    int any_device; /* take any device name (strobe sweep status reads old plans) */
};

/*
 * Read the experiment file at path into spec (zeroed by the caller; release
 * with sweep_spec_release, also after a failure). The format is the file's
 * extension (.csv, .yaml or .yml). -1 with "FILE:LINE:COL: why" in err.
 */
int sweep_spec_load(struct sweep_spec *spec, const char *path, const struct sweep_env *env,
                    struct strbuf *err);
void sweep_spec_release(struct sweep_spec *spec);

/* A workload's devices, each once, in order of first use: NULL-terminated,
 * pointing into the spec (the caller frees the array only). */
const char **sweep_workload_devices(const struct sweep_workload *w);

/* The collocation as the file wrote it ("-", "MPS", "3g.20gb"), into buf. */
const char *sweep_run_collocation(const struct sweep_run *r, char *buf, size_t cap);

#endif
