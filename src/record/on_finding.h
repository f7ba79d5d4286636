/*
 * strobe run --on-finding RULE[,RULE]=ACTION: what the recorder does when a
 * rule first fires while the job runs, after SageMaker Debugger's rule
 * actions (StopTraining, notifications).
 *
 *   stop         SIGTERM to the job's root process, SIGKILL grace_ns later
 *                if it still runs; the run is then stored as "stopped"
 *   signal:SIG   SIG to the job's root process; the run goes on
 *   exec:CMD     /bin/sh -c CMD, the finding as one JSON object on its
 *                stdin, STROBE_RUN_ID and STROBE_RULE in its environment
 *
 * Each option acts once per rule per run, at that rule's first finding
 * (rules/rules.h announces each finding once, when it first fires). Only
 * while the job runs: the whole-run verdicts taken after it ended trigger
 * nothing. Each action is one line on stderr (a note; a failure is a
 * warning) and is kept for the run's "actions" text.
 *
 * An exec command never holds up the sampling thread: the recorder forks a
 * shim (not the job's: proc_tree_not_job) that makes itself a child
 * subreaper, runs the command and waits for it and every process it leaves
 * behind, so none of them joins the job's tree. The finding is in a memfd,
 * so nothing waits for the command to read it. At most ON_FINDING_EXEC_MAX
 * shims run at once; the recorder reaps them with its other children
 * (on_finding_reap) and does not wait for them at the end.
 *
 * Threading: the sampling thread only.
 */
#ifndef STROBE_RECORD_ON_FINDING_H
#define STROBE_RECORD_ON_FINDING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/clock.h"
#include "common/strbuf.h"
#include "rules/rules.h"

struct proc_tree;

#define ON_FINDING_MAX       16 /* --on-finding options */
#define ON_FINDING_EXEC_MAX  4  /* exec: commands running at once */
#define ON_FINDING_GRACE_NS  (10 * NS_PER_S)
#define ON_FINDING_TEXT_KIND "actions" /* the run text the actions taken are kept in */

enum on_finding_kind {
    ON_FINDING_STOP,
    ON_FINDING_SIGNAL,
    ON_FINDING_EXEC,
};

/* One --on-finding, parsed; its pointers point into the argument. */
struct on_finding_spec {
    const char *rules; /* the rule list, rules_len bytes up to '=' */
    size_t rules_len;
    int any;            /* "*" or "all": every rule */
    const char *action; /* what follows '=', as given ("signal:USR1") */
    enum on_finding_kind kind;
    int signo;       /* signal: */
    const char *cmd; /* exec: the command, NUL-terminated */
};

/* Parse "RULE[,RULE]=stop|signal:SIG|exec:CMD". Each RULE must be in the
 * rule table (or be "*" or "all"). 0, or -EINVAL with one line in why. */
int on_finding_parse(const char *arg, struct on_finding_spec *out, struct strbuf *why);

/* "TERM", "SIGTERM", "term" or "15": the signal's number; -1 when none. */
int on_finding_signal(const char *name);

/* Whether the spec names rule (as its list spells it). */
int on_finding_names(const struct on_finding_spec *s, const char *rule, size_t len);

/* One action taken. */
struct on_finding_taken {
    uint32_t spec; /* which --on-finding */
    char rule[32];
    char scope[192];
    enum severity severity;
    int64_t at_ns; /* UTC, on the run's clock */
    pid_t pid;     /* exec: its shim while it runs, else 0 */
    int ok;        /* done as asked (an exec: started, and exited 0 if it has ended) */
    char result[192];
};

struct on_finding {
    struct on_finding_spec spec[ON_FINDING_MAX];
    uint32_t nspec;
    int64_t grace_ns;
    struct proc_tree *tree; /* told which children are the shims */
    /* called in a child just forked, before it runs anything: what strobe
     * itself changed for the job to undo (signal mask, dispositions, fd
     * limit); system calls only */
    void (*child_setup)(void *arg);
    void *child_arg;
    char run_id[32];
    int64_t clock_shift_ns; /* added to the clock, as the run's times */
    pid_t job;              /* the job's root while it runs, else 0 */
    int64_t kill_at_ns;     /* monotonic: the stop's SIGKILL is due; 0 none */
    int stopped;            /* the stop's SIGTERM went out */
    uint32_t stopped_by;    /* the index of the stop in taken */
    uint32_t running;       /* shims not reaped yet */
    struct on_finding_taken *taken;
    uint32_t ntaken, cap;
};

/* Parse the NULL-terminated --on-finding arguments (args may be NULL).
 * 0, or -EINVAL after saying why in one line. */
int on_finding_init(struct on_finding *a, const char *const *args, int64_t grace_ns,
                    struct proc_tree *tree);
/* The job has started (pid): actions may be taken from now on. */
void on_finding_start(struct on_finding *a, pid_t job, const char *run_id, int64_t clock_shift_ns);
/* A finding fired for the first time (finding_fn's contract): the actions
 * that name its rule, each once per rule. A no-op unless the job runs. */
void on_finding_fire(struct on_finding *a, const struct finding *f);
/* Every frame or drain tick: the stop's SIGKILL when its grace is up. */
void on_finding_tick(struct on_finding *a, int64_t now_mono_ns);
/* pid has exited (waitid WNOWAIT saw it): 1 when it was a shim, now
 * reaped and its outcome recorded (a failure is a warning); 0 when it is
 * not one of ours (the caller reaps it). */
int on_finding_reap(struct on_finding *a, pid_t pid);
/* The job's root has been reaped: no action from now on. */
void on_finding_job_ended(struct on_finding *a);
/* At the end: reap the shims that are done; those still running are
 * named in a note and left to run. */
void on_finding_finish(struct on_finding *a);
/* Whether a stop ended the job (then a->taken[a->stopped_by] did). */
int on_finding_stopped(const struct on_finding *a);
/* The actions taken as a JSON array, one object a line (the run's
 * "actions" text); nothing when none was taken. */
void on_finding_text(const struct on_finding *a, struct strbuf *out);
void on_finding_release(struct on_finding *a);

#endif
