#include "record/on_finding.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/array.h"
#include "common/fmt.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/strlist.h"
#include "sample/proctree.h"

/* ---- parsing ---------------------------------------------------------------- */

static const struct {
    const char *name; /* without SIG */
    int signo;
} signal_names[] = {
    {"HUP", SIGHUP},       {"INT", SIGINT},   {"QUIT", SIGQUIT},   {"ILL", SIGILL},
    {"TRAP", SIGTRAP},     {"ABRT", SIGABRT}, {"BUS", SIGBUS},     {"FPE", SIGFPE},
    {"KILL", SIGKILL},     {"USR1", SIGUSR1}, {"SEGV", SIGSEGV},   {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE},     {"ALRM", SIGALRM}, {"TERM", SIGTERM},   {"CHLD", SIGCHLD},
    {"CONT", SIGCONT},     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP},   {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU},     {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ},
    {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},       {"SYS", SIGSYS},
};

int on_finding_signal(const char *name)
{
    if (*name >= '0' && *name <= '9') {
        long n = 0;
        for (const char *p = name; *p; p++) {
            if (*p < '0' || *p > '9' || n > SIGRTMAX)
                return -1;
            n = n * 10 + (*p - '0');
        }
        return n >= 1 && n <= SIGRTMAX ? (int)n : -1;
    }
    if (strncasecmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
        if (strcasecmp(name, signal_names[i].name) == 0)
            return signal_names[i].signo;
    return -1;
}

/* "SIGUSR1", or "signal 40" for one without a name here. */
static const char *signal_name(int signo, char *buf, size_t cap)
{
    for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
        if (signal_names[i].signo == signo) {
            snprintf(buf, cap, "SIG%s", signal_names[i].name);
            return buf;
        }
    snprintf(buf, cap, "signal %d", signo);
    return buf;
}

struct rule_check {
    struct on_finding_spec *spec;
    struct strbuf *why;
};

static int check_rule(const char *item, size_t len, void *arg)
{
    struct rule_check *c = arg;
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)len, item);
    if (strcmp(name, "*") == 0 || strcmp(name, "all") == 0) {
        c->spec->any = 1;
        return 0;
    }
    if (!len || !rule_def_find(name)) {
        strbuf_addf(c->why, "unknown rule '%s'; see 'strobe rules --list'", name);
        return -EINVAL;
    }
    return 0;
}

int on_finding_parse(const char *arg, struct on_finding_spec *out, struct strbuf *why)
{
    memset(out, 0, sizeof(*out));
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        strbuf_addf(why, "'%s' is not RULE[,RULE]=ACTION", arg);
        return -EINVAL;
    }
    out->rules = arg;
    out->rules_len = (size_t)(eq - arg);
    out->action = eq + 1;
    struct rule_check c = {out, why};
    if (eq[-1] == ',') { /* strlist_each_n ends the list there: an empty name */
        strbuf_addf(why, "'%.*s' ends with a comma", (int)out->rules_len, arg);
        return -EINVAL;
    }
    if (strlist_each_n(arg, out->rules_len, check_rule, &c))
        return -EINVAL;
    const char *a = out->action;
    if (strcmp(a, "stop") == 0) {
        out->kind = ON_FINDING_STOP;
    } else if (strncmp(a, "signal:", 7) == 0) {
        out->kind = ON_FINDING_SIGNAL;
        if ((out->signo = on_finding_signal(a + 7)) < 0) {
            strbuf_addf(why, "'%s' is not a signal: a name (TERM, SIGUSR1, USR1) or a number",
                        a + 7);
            return -EINVAL;
        }
    } else if (strncmp(a, "exec:", 5) == 0 && a[5]) {
        out->kind = ON_FINDING_EXEC;
        out->cmd = a + 5;
    } else {
        strbuf_addf(why, "'%s' is not an action: stop, signal:SIG or exec:CMD", a);
        return -EINVAL;
    }
    return 0;
}

int on_finding_names(const struct on_finding_spec *s, const char *rule, size_t len)
{
    return s->any || strlist_has_n(s->rules, s->rules_len, rule, len);
}

int on_finding_init(struct on_finding *a, const char *const *args, int64_t grace_ns,
                    struct proc_tree *tree)
{
    memset(a, 0, sizeof(*a));
    a->grace_ns = grace_ns;
    a->tree = tree;
    struct strbuf why;
    strbuf_init(&why);
    int rc = 0;
    for (; args && *args && rc == 0; args++) {
        if (a->nspec == ON_FINDING_MAX) {
            strbuf_addf(&why, "at most %d of them", ON_FINDING_MAX);
            rc = -EINVAL;
        } else {
            rc = on_finding_parse(*args, &a->spec[a->nspec++], &why);
        }
    }
    if (rc < 0)
        log_error("--on-finding: %s", why.buf ? why.buf : "out of memory");
    strbuf_release(&why);
    return rc;
}

void on_finding_start(struct on_finding *a, pid_t job, const char *run_id, int64_t clock_shift_ns)
{
    a->job = job;
    a->clock_shift_ns = clock_shift_ns;
    snprintf(a->run_id, sizeof(a->run_id), "%s", run_id);
}

/* ---- the actions -------------------------------------------------------------- */

static const char *const kind_names[] = {"stop", "signal", "exec"};

/* One line per action: a note when it went as asked, else a warning. */
static void say(const struct on_finding *a, const struct on_finding_taken *t)
{
    const char *kind = kind_names[a->spec[t->spec].kind];
    if (t->ok)
        log_note("on-finding %s [%s]: %s: %s", t->rule, t->scope, kind, t->result);
    else
        log_warn("on-finding %s [%s]: %s: %s", t->rule, t->scope, kind, t->result);
}

/* Append to an action's result: what happened to it later. */
__attribute__((format(printf, 2, 3))) static void add_result(struct on_finding_taken *t,
                                                             const char *fmt, ...)
{
    size_t len = strlen(t->result);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->result + len, sizeof(t->result) - len, fmt, ap);
    va_end(ap);
}

static void stop_job(struct on_finding *a, struct on_finding_taken *t)
{
    char grace[32];
    if (kill(a->job, SIGTERM) < 0) {
        snprintf(t->result, sizeof(t->result), "cannot send SIGTERM to pid %d: %s", (int)a->job,
                 strerror(errno));
        return;
    }
    a->stopped = 1;
    a->stopped_by = (uint32_t)(t - a->taken);
    a->kill_at_ns = clock_monotonic_ns() + a->grace_ns;
    t->ok = 1;
    snprintf(t->result, sizeof(t->result), "SIGTERM to pid %d; SIGKILL in %s if it still runs",
             (int)a->job, fmt_duration((double)a->grace_ns / 1e9, grace, sizeof(grace)));
}

static void signal_job(struct on_finding *a, struct on_finding_taken *t)
{
    char name[32];
    int signo = a->spec[t->spec].signo;
    signal_name(signo, name, sizeof(name));
    if (kill(a->job, signo) < 0) {
        snprintf(t->result, sizeof(t->result), "cannot send %s to pid %d: %s", name, (int)a->job,
                 strerror(errno));
        return;
    }
    t->ok = 1;
    snprintf(t->result, sizeof(t->result), "%s to pid %d", name, (int)a->job);
}

/* "2026-12-01T07:15:02.123Z", as JavaScript's toISOString writes it. */
static const char *iso_time(int64_t ns, char *buf, size_t cap)
{
    time_t s = (time_t)(ns / NS_PER_S);
    struct tm tm;
    gmtime_r(&s, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03dZ", (int)(ns % NS_PER_S / NS_PER_MS));
    return buf;
}

/* What an exec command reads on its stdin: the finding, one object. */
static void finding_json(const struct on_finding *a, const struct finding *f, struct strbuf *out)
{
    char start[40], end[40];
    struct json_writer jw;
    jw_init(&jw, out);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "run_id", a->run_id);
    jw_kv_str(&jw, "rule", f->rule);
    jw_kv_str(&jw, "severity", severity_names[f->severity]);
    jw_kv_str(&jw, "scope", f->scope);
    jw_kv_int(&jw, "start_ns", f->start_ns);
    jw_kv_int(&jw, "end_ns", f->end_ns);
    jw_kv_str(&jw, "start", iso_time(f->start_ns, start, sizeof(start)));
    jw_kv_str(&jw, "end", iso_time(f->end_ns, end, sizeof(end)));
    jw_kv_str(&jw, "evidence", f->evidence);
    jw_kv_str_or_null(&jw, "events", f->events);
    jw_kv_str(&jw, "recommendation", f->recommendation);
    jw_end(&jw);
    jw_space(&jw, "\n");
}

/* A memfd holding text, at its start: a stdin nobody waits on. */
static int text_fd(const struct strbuf *text)
{
    int fd = memfd_create("strobe-finding", MFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    for (size_t done = 0; done < text->len;) {
        ssize_t n = write(fd, text->buf + done, text->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int err = n < 0 ? errno : EIO;
            close(fd);
            return -err;
        }
        done += (size_t)n;
    }
    if (lseek(fd, 0, SEEK_SET) < 0) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

/* Every fd from 3 up: strobe's (its store, its tees' pipes) must not live
 * on in a shim that never execs. */
static void close_from_3(void)
{
    if (syscall(SYS_close_range, 3U, ~0U, 0U) == 0)
        return;
    struct rlimit rl; /* a kernel before 5.9: the slow way */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        for (rlim_t fd = 3; fd < rl.rlim_cur; fd++)
            close((int)fd);
}

/*
 * The shim between strobe and the command: a child subreaper, so that what
 * the command leaves behind re-parents to it and not to strobe (whose
 * children the tree takes for the job's). It exits once every one of them
 * has, with the command's status. Its stdin is the finding, its stdout and
 * stderr /dev/null: nothing of strobe's stays open in it, so that no
 * reader of strobe's output waits for a command that outlives it. Forked
 * from a process with threads: system calls only.
 */
static _Noreturn void exec_shim(const struct on_finding *a, int in, char *const argv[],
                                char *const env[])
{
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
        dup2(null, STDERR_FILENO) < 0)
        _exit(127);
    close_from_3();
    if (a->child_setup)
        a->child_setup(a->child_arg);
    prctl(PR_SET_NAME, "strobe-exec");
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        _exit(127);
    pid_t sh = fork();
    if (sh == 0) {
        execve("/bin/sh", argv, env);
        _exit(127);
    }
    if (sh < 0)
        _exit(127);
    int status = 0, st;
    for (;;) {
        pid_t p = wait(&st);
        if (p == sh)
            status = st;
        else if (p < 0 && errno != EINTR)
            break; /* ECHILD: the last of them is gone */
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void exec_command(struct on_finding *a, struct on_finding_taken *t, const struct finding *f)
{
    if (a->running >= ON_FINDING_EXEC_MAX) {
        snprintf(t->result, sizeof(t->result), "not run: %d commands still running",
                 ON_FINDING_EXEC_MAX);
        return;
    }
    struct strbuf json;
    strbuf_init(&json);
    finding_json(a, f, &json);
    int in = json.buf ? text_fd(&json) : -ENOMEM;
    strbuf_release(&json);
    /* strobe's environment (not the job's) and the two variables, built
     * before fork: the child must not allocate */
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = in >= 0 ? calloc(n + 3, sizeof(*env)) : NULL;
    if (!env) {
        snprintf(t->result, sizeof(t->result), "cannot pass the finding: %s",
                 strerror(in < 0 ? -in : ENOMEM));
        if (in >= 0)
            close(in);
        return;
    }
    char run_var[64], rule_var[64];
    snprintf(run_var, sizeof(run_var), "STROBE_RUN_ID=%s", a->run_id);
    snprintf(rule_var, sizeof(rule_var), "STROBE_RULE=%s", f->rule);
    size_t k = 0;
    env[k++] = run_var;
    env[k++] = rule_var;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "STROBE_RUN_ID=", 14) != 0 &&
            strncmp(environ[i], "STROBE_RULE=", 12) != 0)
            env[k++] = environ[i];
    char *argv[] = {"sh", "-c", (char *)a->spec[t->spec].cmd, NULL};
    pid_t pid = fork();
    if (pid == 0)
        exec_shim(a, in, argv, env);
    int err = errno;
    close(in);
    free(env);
    if (pid < 0) {
        snprintf(t->result, sizeof(t->result), "cannot fork: %s", strerror(err));
        return;
    }
    proc_tree_not_job(a->tree, pid);
    a->running++;
    t->pid = pid;
    t->ok = 1;
    snprintf(t->result, sizeof(t->result), "pid %d started", (int)pid);
}

/* Whether spec i has acted on rule already. */
static int acted(const struct on_finding *a, uint32_t i, const char *rule)
{
    for (uint32_t k = 0; k < a->ntaken; k++)
        if (a->taken[k].spec == i && strcmp(a->taken[k].rule, rule) == 0)
            return 1;
    return 0;
}

void on_finding_fire(struct on_finding *a, const struct finding *f)
{
    if (!a || !a->job)
        return;
    for (uint32_t i = 0; i < a->nspec; i++) {
        const struct on_finding_spec *s = &a->spec[i];
        if (!on_finding_names(s, f->rule, strlen(f->rule)) || acted(a, i, f->rule) ||
            (s->kind == ON_FINDING_STOP && a->stopped))
            continue;
        if (array_grow((void **)&a->taken, &a->cap, a->ntaken + 1, sizeof(*a->taken), 8) < 0) {
            log_warn("on-finding %s: out of memory: no action taken", f->rule);
            continue;
        }
        struct on_finding_taken *t = &a->taken[a->ntaken++];
        memset(t, 0, sizeof(*t));
        t->spec = i;
        snprintf(t->rule, sizeof(t->rule), "%s", f->rule);
        snprintf(t->scope, sizeof(t->scope), "%s", f->scope);
        t->severity = f->severity;
        t->at_ns = clock_realtime_ns() + a->clock_shift_ns;
        if (s->kind == ON_FINDING_STOP)
            stop_job(a, t);
        else if (s->kind == ON_FINDING_SIGNAL)
            signal_job(a, t);
        else
            exec_command(a, t, f);
        say(a, t);
    }
}

void on_finding_tick(struct on_finding *a, int64_t now_mono_ns)
{
    if (!a->kill_at_ns || now_mono_ns < a->kill_at_ns || !a->job)
        return;
    a->kill_at_ns = 0;
    struct on_finding_taken *t = &a->taken[a->stopped_by];
    char grace[32];
    fmt_duration((double)a->grace_ns / 1e9, grace, sizeof(grace));
    if (kill(a->job, SIGKILL) < 0) {
        log_warn("on-finding %s [%s]: stop: cannot send SIGKILL to pid %d: %s", t->rule, t->scope,
                 (int)a->job, strerror(errno));
        return;
    }
    add_result(t, "; still running after %s: SIGKILL", grace);
    log_note("on-finding %s [%s]: stop: pid %d still ran %s after SIGTERM: SIGKILL", t->rule,
             t->scope, (int)a->job, grace);
}

static struct on_finding_taken *shim_of(struct on_finding *a, pid_t pid)
{
    for (uint32_t k = 0; pid > 0 && k < a->ntaken; k++)
        if (a->taken[k].pid == pid)
            return &a->taken[k];
    return NULL;
}

/* A shim has been reaped with status st. */
static void shim_done(struct on_finding *a, struct on_finding_taken *t, int st)
{
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    proc_tree_not_job_end(a->tree, t->pid);
    a->running--;
    add_result(t, ", exited %d", code);
    if (code) {
        t->ok = 0;
        log_warn("on-finding %s [%s]: exec: pid %d exited %d", t->rule, t->scope, (int)t->pid,
                 code);
    }
    t->pid = 0;
}

int on_finding_reap(struct on_finding *a, pid_t pid)
{
    struct on_finding_taken *t = shim_of(a, pid);
    int st = 0;
    if (!t)
        return 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    shim_done(a, t, st);
    return 1;
}

void on_finding_job_ended(struct on_finding *a)
{
    a->job = 0;
    a->kill_at_ns = 0;
}

void on_finding_finish(struct on_finding *a)
{
    on_finding_job_ended(a);
    for (uint32_t k = 0; k < a->ntaken; k++) {
        struct on_finding_taken *t = &a->taken[k];
        int st;
        if (!t->pid)
            continue;
        if (waitpid(t->pid, &st, WNOHANG) == t->pid) {
            shim_done(a, t, st);
            continue;
        }
        add_result(t, "; still running at the run's end");
        log_note("on-finding %s [%s]: exec: pid %d still runs; strobe does not wait for it",
                 t->rule, t->scope, (int)t->pid);
    }
}

int on_finding_stopped(const struct on_finding *a)
{
    return a->stopped;
}

void on_finding_text(const struct on_finding *a, struct strbuf *out)
{
    if (!a->ntaken)
        return;
    struct json_writer jw;
    jw_init(&jw, out);
    jw_array_begin(&jw);
    jw_lines(&jw, "\n", "\n");
    for (uint32_t k = 0; k < a->ntaken; k++) {
        const struct on_finding_taken *t = &a->taken[k];
        jw_object_begin(&jw);
        jw_kv_str(&jw, "rule", t->rule);
        jw_kv_str(&jw, "severity", severity_names[t->severity]);
        jw_kv_str(&jw, "scope", t->scope);
        jw_kv_str(&jw, "action", kind_names[a->spec[t->spec].kind]);
        jw_kv_int(&jw, "at_ns", t->at_ns);
        jw_kv_bool(&jw, "ok", t->ok);
        jw_kv_bool(&jw, "stopped_run", a->stopped && k == a->stopped_by);
        jw_kv_str(&jw, "result", t->result);
        jw_end(&jw);
    }
    jw_space(&jw, "\n");
    jw_end(&jw);
    jw_space(&jw, "\n");
}

void on_finding_release(struct on_finding *a)
{
    free(a->taken);
    memset(a, 0, sizeof(*a));
}
