/*
 * What the experiment file readers (spec_csv.c, spec_yaml.c) share with
 * the builder in spec.c. Private to src/sweep.
 */
#ifndef STROBE_SWEEP_SPEC_INTERNAL_H
#define STROBE_SWEEP_SPEC_INTERNAL_H

#include "sweep/spec.h"

/* A value and where it stands in the file (line and column from 1). */
struct src_val {
    const char *text; /* NULL: not given */
    int line, col;
    char quote; /* the quote at line:col that opens the text ('"' or '\''), in which the
                 * quote itself is written with two characters; 0: none */
    int below;  /* the text starts on a later line, indented (a YAML block scalar) */
};

struct spec_reader {
    struct sweep_spec *spec;
    const struct sweep_env *env;
    struct strbuf *err;
    char *dir; /* the file's folder, for relative paths */
};

/* One run as a file states it; sweep_build_run checks and resolves it. */
struct run_source {
    struct src_val name, devices, collocation, mps_pct, listeners, file, command, python, args;
    struct src_val workload;      /* where the workload is named: a run named after it */
    const struct kv_list *params; /* the combination's parameters (YAML), or NULL */
    const struct kv_list *extras; /* {workload} and {run} for templates */
    int row;
    int line, col; /* the CSV row or YAML group: the place of what it lacks */
};

/* Set err to "FILE:LINE:COL: message"; return -1. */
int sweep_fail_at(struct spec_reader *rd, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int sweep_fail_val(struct spec_reader *rd, const struct src_val *v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The place (line and column from 1, in bytes) of byte offset in v's
 * text: past its opening quote and the doubled quotes before it, on a
 * later line after a line break. A block scalar's text starts below at an
 * indent not kept: there, v's own place. */
void sweep_place_in(const struct src_val *v, size_t offset, int *line, int *col);
/* The experiment file's bytes into *out (the caller frees; NUL-terminated
 * past len), or -1 with "cannot read 'FILE': why" in err. */
int sweep_slurp(struct spec_reader *rd, char **out, size_t *len);
/* Whether v holds a non-empty text. */
int sweep_given(const struct src_val *v);
/* Whether strobe run takes name as its what ("run name", "experiment
 * name", "workload name", "parameter name", "parameter value"): 0, or -1
 * with the error at at. A run name may not be RUN_REF_LAST. */
int sweep_check_name(struct spec_reader *rd, const struct src_val *at, const char *what,
                     const char *name);

/* The plan's workloads by experiment and name (by experiment alone when
 * by_experiment), to find one without a walk over all of them: files of
 * 100000 workloads took minutes. Zeroed to start; sweep_index_release. */
struct sweep_index {
    size_t *slot; /* a workload's index + 1; 0: empty */
    size_t cap;   /* a power of two, at most half full */
    size_t n;
    int by_experiment;
};

/* The workload of s indexed under experiment and name (NULL when
 * by_experiment), or NULL. */
struct sweep_workload *sweep_index_find(const struct sweep_index *x, struct sweep_spec *s,
                                        const char *experiment, const char *name);
/* Index s->w[i]; -ENOMEM. */
int sweep_index_add(struct sweep_index *x, const struct sweep_spec *s, size_t i);
void sweep_index_release(struct sweep_index *x);

/* A new workload at the end of the plan, defined at line:col, or NULL
 * (err set). */
struct sweep_workload *sweep_add_workload(struct spec_reader *rd, const char *experiment,
                                          const char *name, int line, int col);
/* A new, zeroed run at the end of w, or NULL (err set). */
struct sweep_run *sweep_add_run(struct spec_reader *rd, struct sweep_workload *w, int line);
/* Fill run from src: its command, devices, collocation, listeners. */
int sweep_build_run(struct spec_reader *rd, const struct run_source *src, const char *workload,
                    const char *default_name, struct sweep_run *run);
/* A workload's own settings, as text, checked and set on w. */
int sweep_set_timeout(struct spec_reader *rd, const struct src_val *v, int64_t *out_ns);
int sweep_set_count(struct spec_reader *rd, const struct src_val *v, const char *what, long min,
                    long max, long *out);
/* Add one --on-finding value (checked for its shape, RULE=ACTION). */
int sweep_add_on_finding(struct spec_reader *rd, struct sweep_workload *w, const struct src_val *v);
/* Add "K=V K=V" (CSV) or one K, V pair (YAML) to w->env. */
int sweep_add_env(struct spec_reader *rd, struct sweep_workload *w, const struct src_val *at,
                  const char *key, const char *value);

/* Append a copy of s to a NULL-terminated list. 0 or -ENOMEM. */
int sweep_push_string(char ***list, const char *s);

int sweep_read_csv(struct spec_reader *rd);
int sweep_read_yaml(struct spec_reader *rd);

#endif
