/*
 * Experiment files into plans (spec.h). The two readers (CSV rows, YAML
 * groups) reduce each run to a "run source": text fields with the place
 * each came from. One builder turns sources into runs and checks them, so
 * both formats accept the same values and word their errors alike.
 */
#include "sweep/spec.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "common/clock.h"
#include "record/runinfo.h"
#include "import/input.h"
#include "sweep/spec_internal.h"
#include "sweep/words.h"

int sweep_fail_at(struct spec_reader *rd, int line, int col, const char *fmt, ...)
{
    va_list ap;
    strbuf_reset(rd->err);
    strbuf_addf(rd->err, "%s:%d:%d: ", rd->spec->path, line, col);
    va_start(ap, fmt);
    strbuf_vaddf(rd->err, fmt, ap);
    va_end(ap);
    return -1;
}

int sweep_fail_val(struct spec_reader *rd, const struct src_val *v, const char *fmt, ...)
{
    va_list ap;
    strbuf_reset(rd->err);
    strbuf_addf(rd->err, "%s:%d:%d: ", rd->spec->path, v->line, v->col);
    va_start(ap, fmt);
    strbuf_vaddf(rd->err, fmt, ap);
    va_end(ap);
    return -1;
}

void sweep_place_in(const struct src_val *v, size_t offset, int *line, int *col)
{
    *line = v->line;
    *col = v->col;
    if (v->below)
        return;
    *col += v->quote != 0;
    for (size_t i = 0; i < offset && v->text[i]; i++) {
        if (v->text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            *col += v->quote && v->text[i] == v->quote ? 2 : 1;
        }
    }
}

int sweep_given(const struct src_val *v)
{
    return v->text && v->text[0];
}

int sweep_check_name(struct spec_reader *rd, const struct src_val *at, const char *what,
                     const char *name)
{
    if (strcmp(what, "run name") == 0 && strcmp(name, RUN_REF_LAST) == 0)
        return sweep_fail_val(rd, at,
                              "run name '%s' is reserved (as RUN it means the newest run): "
                              "give the run another name",
                              name);
    struct strbuf why;
    strbuf_init(&why);
    int rc = runinfo_check_name(what, name, &why) < 0
                 ? sweep_fail_val(rd, at, "invalid %s", why.len ? why.buf : what)
                 : 0;
    strbuf_release(&why);
    return rc;
}

int sweep_slurp(struct spec_reader *rd, char **out, size_t *len)
{
    int rc = input_read_file(rd->spec->path, SWEEP_MAX_FILE_BYTES, 0, out, len);
    if (rc < 0) {
        strbuf_reset(rd->err);
        strbuf_addf(rd->err, "cannot read '%s': %s", rd->spec->path,
                    rc == -EFBIG ? "larger than 256 MiB" : strerror(-rc));
    }
    return rc < 0 ? -1 : 0;
}

/* ---- hashes: FNV-1a, 64 bits (identity, not security) ---- */

static uint64_t fnv64(uint64_t h, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
        h = (h ^ *p) * 0x100000001b3ULL;
    return (h ^ 0xff) * 0x100000001b3ULL; /* the end of a field */
}

#define FNV64_INIT 0xcbf29ce484222325ULL

/* ---- workloads by name (spec_internal.h) ---- */

static uint64_t index_hash(const struct sweep_index *x, const char *experiment, const char *name)
{
    uint64_t h = fnv64(FNV64_INIT, experiment);
    return x->by_experiment ? h : fnv64(h, name);
}

struct sweep_workload *sweep_index_find(const struct sweep_index *x, struct sweep_spec *s,
                                        const char *experiment, const char *name)
{
    for (size_t k = x->cap ? index_hash(x, experiment, name) & (x->cap - 1) : 0;
         x->cap && x->slot[k]; k = (k + 1) & (x->cap - 1)) {
        struct sweep_workload *w = &s->w[x->slot[k] - 1];
        if (strcmp(w->experiment, experiment) == 0 &&
            (x->by_experiment || strcmp(w->name, name) == 0))
            return w;
    }
    return NULL;
}

static void index_put(struct sweep_index *x, const struct sweep_spec *s, size_t i)
{
    size_t k = index_hash(x, s->w[i].experiment, s->w[i].name) & (x->cap - 1);
    while (x->slot[k])
        k = (k + 1) & (x->cap - 1);
    x->slot[k] = i + 1;
}

int sweep_index_add(struct sweep_index *x, const struct sweep_spec *s, size_t i)
{
    if ((x->n + 1) * 2 > x->cap) {
        size_t *old = x->slot, old_cap = x->cap;
        size_t cap = old_cap ? old_cap * 2 : 64;
        if (!(x->slot = calloc(cap, sizeof(*x->slot)))) {
            x->slot = old;
            return -ENOMEM;
        }
        x->cap = cap;
        for (size_t k = 0; k < old_cap; k++)
            if (old[k])
                index_put(x, s, old[k] - 1);
        free(old);
    }
    index_put(x, s, i);
    x->n++;
    return 0;
}

void sweep_index_release(struct sweep_index *x)
{
    free(x->slot);
    memset(x, 0, sizeof(*x));
}

/* ---- values every format shares ---- */

static const char *const run_listeners[] = {"ps",     "smi",  "dcgmi", "top",
                                            "iostat", "free", "macmon"};
/* The listeners that wrap the command, and the program each needs. */
static const struct {
    const char *name, *program;
} wrap_listeners[] = {
    {"nsys", "nsys"}, {"nsysraw", "nsys"}, {"ncu", "ncu"}, {"ncuraw", "ncu"}, {"ncuattach", "ncu"},
};

static int is_run_listener(const char *name)
{
    for (size_t i = 0; i < sizeof(run_listeners) / sizeof(run_listeners[0]); i++)
        if (strcmp(run_listeners[i], name) == 0)
            return 1;
    return 0;
}

static const char *wrap_program(const char *name)
{
    for (size_t i = 0; i < sizeof(wrap_listeners) / sizeof(wrap_listeners[0]); i++)
        if (strcmp(wrap_listeners[i].name, name) == 0)
            return wrap_listeners[i].program;
    return NULL;
}

/* Listeners "smi+top" (YAML lists arrive joined the same way). The run
 * listeners are strobe's collectors, always on; at most one wraps. */
static int parse_listeners(struct spec_reader *rd, const struct src_val *v, struct sweep_run *run)
{
    if (!sweep_given(v))
        return 0;
    char *copy = strdup(v->text), *save = NULL;
    if (!copy)
        return sweep_fail_val(rd, v, "out of memory");
    int rc = 0;
    for (char *tok = strtok_r(copy, "+, ", &save); tok && rc == 0;
         tok = strtok_r(NULL, "+, ", &save)) {
        for (char *c = tok; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
        const char *program = wrap_program(tok);
        if (is_run_listener(tok))
            continue;
        if (!program)
            rc = sweep_fail_val(
                rd, v,
                "unknown listener '%s' (smi, top, dcgmi, iostat, free, ps, macmon are "
                "strobe's collectors; nsys, nsysraw, ncu, ncuraw, ncuattach wrap the "
                "command)",
                tok);
        else if (run->wrap)
            rc = sweep_fail_val(rd, v, "listeners '%s' and '%s' both wrap the command: choose one",
                                run->wrap, tok);
        else if (rd->env->have_command && !rd->env->have_command(program))
            rc = sweep_fail_val(rd, v,
                                "listener '%s' needs %s, which is not installed (not on PATH)", tok,
                                program);
        else if (!(run->wrap = strdup(tok)))
            rc = sweep_fail_val(rd, v, "out of memory");
    }
    free(copy);
    return rc;
}

static int is_none_device(const char *t)
{
    return !t[0] || strcmp(t, "-") == 0 || strcasecmp(t, "cpu") == 0 || strcasecmp(t, "none") == 0;
}

static int gpu_known(const struct sweep_env *env, const char *id)
{
    for (char **g = env->gpu_ids; g && *g; g++)
        if (strcmp(*g, id) == 0)
            return 1;
    return 0;
}

/* Devices "0", "0+1", "GPU-uuid" or none ("", "-", "cpu"); each must be a
 * GPU of this machine. */
static int parse_devices(struct spec_reader *rd, const struct src_val *v, struct sweep_run *run)
{
    const char *text = v->text ? v->text : "";
    size_t n = 0, cap = 4;
    char **list = calloc(cap, sizeof(*list));
    char *copy = strdup(text), *save = NULL;
    int rc = (!list || !copy) ? sweep_fail_val(rd, v, "out of memory") : 0;
    if (rc == 0 && is_none_device(text)) {
        run->devices = list;
        free(copy);
        return 0;
    }
    for (char *tok = copy ? strtok_r(copy, "+, ", &save) : NULL; tok && rc == 0;
         tok = strtok_r(NULL, "+, ", &save)) {
        if (!rd->env->any_device && !gpu_known(rd->env, tok)) {
            rc = sweep_fail_val(rd, v, "unknown device '%s': %s", tok,
                                rd->env->why_no_gpu ? rd->env->why_no_gpu
                                                    : "not a GPU index or UUID of this machine");
            break;
        }
        if (n + 2 > cap) {
            char **grown = realloc(list, (cap *= 2) * sizeof(*list));
            if (!grown) {
                rc = sweep_fail_val(rd, v, "out of memory");
                break;
            }
            list = grown;
        }
        if (!(list[n++] = strdup(tok)))
            rc = sweep_fail_val(rd, v, "out of memory");
        list[n] = NULL;
    }
    free(copy);
    run->devices = list;
    return rc;
}

/* Collocation "-", "MPS", "MPS:50" (a thread share), or a MIG profile
 * such as "3g.20gb" or "1g.5gb+me". */
static int parse_collocation(struct spec_reader *rd, const struct src_val *v,
                             const struct src_val *mps_pct, struct sweep_run *run)
{
    const char *t = v->text ? v->text : "";
    run->share = SWEEP_SHARE_PLAIN;
    if (!t[0] || strcmp(t, "-") == 0 || strcasecmp(t, "nan") == 0 || strcasecmp(t, "none") == 0) {
        if (sweep_given(mps_pct))
            return sweep_fail_val(rd, mps_pct, "mps_threads needs collocation MPS");
        return 0;
    }
    if (strncasecmp(t, "mps", 3) == 0 && (!t[3] || t[3] == ':')) {
        run->share = SWEEP_SHARE_MPS;
        const char *pct = t[3] == ':' ? t + 4 : sweep_given(mps_pct) ? mps_pct->text : NULL;
        if (pct) {
            char *end;
            long p = strtol(pct, &end, 10);
            if (end == pct || *end || p < 1 || p > 100)
                return sweep_fail_val(rd, t[3] == ':' ? v : mps_pct,
                                      "MPS thread share '%s' is not a percentage from 1 to 100",
                                      pct);
            run->mps_thread_pct = (int)p;
        }
        return 0;
    }
    /* MIG profiles: <n>g.<m>gb with optional +me / +gfx suffixes */
    int g = 0, m = 0, used = 0;
    if (sscanf(t, "%dg.%dgb%n", &g, &m, &used) == 2 && g > 0 && m > 0 &&
        (!t[used] || t[used] == '+')) {
        run->share = SWEEP_SHARE_MIG;
        run->mig_profile = strdup(t);
        return run->mig_profile ? 0 : sweep_fail_val(rd, v, "out of memory");
    }
    return sweep_fail_val(rd, v,
                          "collocation '%s' is not '-', 'MPS', 'MPS:PCT' or a MIG profile such as "
                          "'3g.20gb'",
                          t);
}

/* ---- building runs ---- */

/* The script's path: as written if absolute, else next to the experiment
 * file, else from the current folder. */
static char *resolve_file(struct spec_reader *rd, const char *file)
{
    char *path = NULL;
    if (file[0] != '/' && rd->dir && asprintf(&path, "%s/%s", rd->dir, file) > 0 &&
        access(path, F_OK) == 0) {
        char *real = realpath(path, NULL);
        free(path);
        return real;
    }
    free(path);
    return realpath(file, NULL);
}

static int push_word(char ***argv, size_t *n, size_t *cap, const char *word)
{
    if (*n + 2 > *cap) {
        size_t c = *cap ? *cap * 2 : 8;
        char **grown = realloc(*argv, c * sizeof(**argv));
        if (!grown)
            return -ENOMEM;
        *argv = grown;
        *cap = c;
    }
    if (!((*argv)[*n] = strdup(word)))
        return -ENOMEM;
    (*argv)[++*n] = NULL;
    return 0;
}

/* The command from a script: python FILE, then the combination's
 * parameters as --key value (as radT passes them), then the CSV's Params. */
static int command_from_file(struct spec_reader *rd, const struct run_source *src,
                             struct sweep_run *run, char ***argv, size_t *n, size_t *cap)
{
    char *path = resolve_file(rd, src->file.text);
    if (!path)
        return sweep_fail_val(rd, &src->file, "no such file '%s' (looked beside %s and in .)",
                              src->file.text, rd->spec->path);
    char *slash = strrchr(path, '/');
    run->cwd = strndup(path, slash && slash != path ? (size_t)(slash - path) : 1);
    const char *python = sweep_given(&src->python) ? src->python.text
                         : rd->env->python         ? rd->env->python
                                                   : "python3";
    int rc = (!run->cwd || push_word(argv, n, cap, python) < 0 || push_word(argv, n, cap, path) < 0)
                 ? -ENOMEM
                 : 0;
    free(path);
    for (size_t i = 0; rc == 0 && src->params && i < src->params->n; i++) {
        char *flag = NULL;
        if (asprintf(&flag, "--%s", src->params->items[i].key) < 0)
            return -ENOMEM;
        rc = push_word(argv, n, cap, flag);
        free(flag);
        if (rc == 0)
            rc = push_word(argv, n, cap, src->params->items[i].value);
    }
    return rc < 0 ? sweep_fail_val(rd, &src->file, "out of memory") : 0;
}

/* A template's words with each {key} replaced by the parameter's value
 * ({{ and }} are braces). A key no parameter has is an error at its column. */
static int command_from_template(struct spec_reader *rd, const struct run_source *src, char ***argv,
                                 size_t *n, size_t *cap)
{
    struct words w;
    struct strbuf why, word;
    strbuf_init(&why);
    strbuf_init(&word);
    int rc = 0;
    if (words_split(src->command.text, &w, &why) < 0) {
        rc = sweep_fail_val(rd, &src->command, "command: %s", why.buf);
        goto out;
    }
    if (w.n == 0) {
        rc = sweep_fail_val(rd, &src->command, "command is empty");
        goto out;
    }
    for (size_t i = 0; i < w.n && rc == 0; i++) {
        size_t bad_at = 0;
        int e = words_substitute(w.v[i], src->params, src->extras, &word, &why, &bad_at);
        if (e < 0) {
            int line, col;
            sweep_place_in(&src->command, words_source_offset(src->command.text, &w, i, bad_at),
                           &line, &col);
            rc = sweep_fail_at(rd, line, col, "command: %s", why.buf);
        } else if (push_word(argv, n, cap, word.buf) < 0) {
            rc = sweep_fail_val(rd, &src->command, "out of memory");
        }
    }
out:
    words_release(&w);
    strbuf_release(&why);
    strbuf_release(&word);
    return rc;
}

/* Params "--batch-size 128 --lr=0.01" appended to the command. */
static int append_args(struct spec_reader *rd, const struct src_val *args, char ***argv, size_t *n,
                       size_t *cap)
{
    if (!sweep_given(args))
        return 0;
    struct words w;
    struct strbuf why;
    strbuf_init(&why);
    int rc = 0;
    if (words_split(args->text, &w, &why) < 0)
        rc = sweep_fail_val(rd, args, "Params: %s", why.buf);
    for (size_t i = 0; rc == 0 && i < w.n; i++)
        if (push_word(argv, n, cap, w.v[i]) < 0)
            rc = sweep_fail_val(rd, args, "out of memory");
    if (rc == 0 || w.v)
        words_release(&w);
    strbuf_release(&why);
    return rc;
}

int sweep_build_run(struct spec_reader *rd, const struct run_source *src, const char *workload,
                    const char *default_name, struct sweep_run *run)
{
    char **argv = NULL;
    size_t n = 0, cap = 0;
    run->row = src->row;
    run->line = src->file.line ? src->file.line : src->command.line;
    if (sweep_given(&src->file) && sweep_given(&src->command))
        return sweep_fail_val(rd, &src->command, "give file or command, not both");
    if (!sweep_given(&src->file) && !sweep_given(&src->command))
        return sweep_fail_at(rd, src->line, src->col, "workload '%s' has no file and no command",
                             workload);
    int rc = sweep_given(&src->file) ? command_from_file(rd, src, run, &argv, &n, &cap)
                                     : command_from_template(rd, src, &argv, &n, &cap);
    if (rc == 0 && !run->cwd &&
        !(run->cwd = realpath(rd->dir, NULL))) /* a template runs beside the file */
        rc = sweep_fail_val(rd, &src->command, "cannot resolve the folder of %s", rd->spec->path);
    run->argv = argv; /* released with the run, also on failure */
    if (rc == 0)
        rc = append_args(rd, &src->args, &run->argv, &n, &cap);
    if (rc == 0)
        rc = parse_devices(rd, &src->devices, run);
    if (rc == 0)
        rc = parse_collocation(rd, &src->collocation, &src->mps_pct, run);
    if (rc == 0 && run->share != SWEEP_SHARE_PLAIN && !run->devices[0])
        rc = sweep_fail_val(rd, src->collocation.text ? &src->collocation : &src->devices,
                            "collocation '%s' needs a device", src->collocation.text);
    if (rc == 0)
        rc = parse_listeners(rd, &src->listeners, run);
    for (size_t i = 0; rc == 0 && src->params && i < src->params->n; i++)
        if (kv_list_add(&run->params, src->params->items[i].key, src->params->items[i].value) < 0)
            rc = sweep_fail_val(rd, &src->file, "out of memory");
    if (rc == 0 && !(run->name = strdup(sweep_given(&src->name) ? src->name.text : default_name)))
        rc = sweep_fail_val(rd, &src->name, "out of memory");
    if (rc == 0)
        rc = sweep_check_name(rd, sweep_given(&src->name) ? &src->name : &src->workload, "run name",
                              run->name);
    return rc;
}

/* ---- a workload's own settings ---- */

int sweep_set_timeout(struct spec_reader *rd, const struct src_val *v, int64_t *out_ns)
{
    if (!sweep_given(v))
        return 0;
    const char *t = v->text;
    size_t digits = strspn(t, "0123456789");
    int64_t ns = 0;
    if (digits && !t[digits]) { /* a bare number: seconds, as timeout(1) takes it */
        errno = 0;
        long long s = strtoll(t, NULL, 10);
        if (errno || s > INT64_MAX / NS_PER_S)
            return sweep_fail_val(rd, v, "'%s' is too long a duration", t);
        ns = s * NS_PER_S;
    } else if (duration_parse(t, &ns) < 0)
        return sweep_fail_val(rd, v, "'%s' is not a duration such as 90s, 10m or 500ms", t);
    if (ns <= 0)
        return sweep_fail_val(rd, v, "a duration must be more than 0");
    *out_ns = ns;
    return 0;
}

int sweep_set_count(struct spec_reader *rd, const struct src_val *v, const char *what, long min,
                    long max, long *out)
{
    if (!sweep_given(v))
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v->text, &end, 10);
    if (end == v->text || *end || errno || n < min || n > max)
        return sweep_fail_val(rd, v, "%s '%s' is not a whole number from %ld to %ld", what, v->text,
                              min, max);
    *out = n;
    return 0;
}

int sweep_push_string(char ***list, const char *s)
{
    size_t n = 0;
    while (*list && (*list)[n])
        n++;
    char **grown = realloc(*list, (n + 2) * sizeof(**list));
    if (!grown)
        return -ENOMEM;
    *list = grown;
    if (!(grown[n] = strdup(s)))
        return -ENOMEM;
    grown[n + 1] = NULL;
    return 0;
}

/* RULE[,RULE]=stop|signal:SIG|exec:CMD: the shape only; strobe run checks
 * the rule names and signals when the sweep checks its plan. */
int sweep_add_on_finding(struct spec_reader *rd, struct sweep_workload *w, const struct src_val *v)
{
    if (!sweep_given(v))
        return 0;
    const char *eq = strchr(v->text, '=');
    const char *action = eq ? eq + 1 : "";
    if (!eq || eq == v->text ||
        !(strcmp(action, "stop") == 0 || strncmp(action, "signal:", 7) == 0 ||
          strncmp(action, "exec:", 5) == 0))
        return sweep_fail_val(rd, v,
                              "on_finding '%s' is not RULE=stop, RULE=signal:SIG or "
                              "RULE=exec:CMD",
                              v->text);
    return sweep_push_string(&w->on_finding, v->text) < 0 ? sweep_fail_val(rd, v, "out of memory")
                                                          : 0;
}

int sweep_add_env(struct spec_reader *rd, struct sweep_workload *w, const struct src_val *at,
                  const char *key, const char *value)
{
    if (!key[0] || strchr(key, '=') ||
        strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrst"
                    "uvwxyz0123456789_") != strlen(key) ||
        (key[0] >= '0' && key[0] <= '9'))
        return sweep_fail_val(rd, at, "env: '%s' is not a variable name", key);
    const char *had = kv_list_get(&w->env, key);
    if (had && strcmp(had, value) != 0)
        return sweep_fail_val(rd, at, "env: %s is given twice ('%s' and '%s')", key, had, value);
    if (had)
        return 0;
    return kv_list_add(&w->env, key, value) < 0 ? sweep_fail_val(rd, at, "out of memory") : 0;
}

/* ---- workloads ---- */

struct sweep_workload *sweep_add_workload(struct spec_reader *rd, const char *experiment,
                                          const char *name, int line, int col)
{
    struct sweep_spec *s = rd->spec;
    if (s->n >= SWEEP_MAX_WORKLOADS) {
        sweep_fail_at(rd, line, 1, "the file makes more than %d workloads", SWEEP_MAX_WORKLOADS);
        return NULL;
    }
    if ((s->n & (s->n - 1)) == 0 || s->n == 0) { /* grow at powers of two */
        size_t cap = s->n ? s->n * 2 : 4;
        struct sweep_workload *grown = realloc(s->w, cap * sizeof(*grown));
        if (!grown) {
            sweep_fail_at(rd, line, 1, "out of memory");
            return NULL;
        }
        s->w = grown;
    }
    struct sweep_workload *w = &s->w[s->n++];
    memset(w, 0, sizeof(*w));
    w->line = line;
    w->col = col;
    w->name = strdup(name);
    w->experiment = strdup(experiment);
    if (!w->name || !w->experiment) {
        sweep_fail_at(rd, line, 1, "out of memory");
        return NULL;
    }
    return w;
}

struct sweep_run *sweep_add_run(struct spec_reader *rd, struct sweep_workload *w, int line)
{
    if (w->nruns >= SWEEP_MAX_RUNS) {
        sweep_fail_at(rd, line, 1, "workload '%s' has more than %d runs", w->name, SWEEP_MAX_RUNS);
        return NULL;
    }
    struct sweep_run *grown = realloc(w->runs, (w->nruns + 1) * sizeof(*grown));
    if (!grown) {
        sweep_fail_at(rd, line, 1, "out of memory");
        return NULL;
    }
    w->runs = grown;
    struct sweep_run *r = &w->runs[w->nruns++];
    memset(r, 0, sizeof(*r));
    return r;
}

static void run_release(struct sweep_run *r)
{
    free(r->name);
    for (char **a = r->argv; a && *a; a++)
        free(*a);
    free(r->argv);
    for (char **d = r->devices; d && *d; d++)
        free(*d);
    free(r->devices);
    free(r->cwd);
    free(r->mig_profile);
    free(r->wrap);
    kv_list_release(&r->params);
}

static void workload_release(struct sweep_workload *w)
{
    for (size_t i = 0; i < w->nruns; i++)
        run_release(&w->runs[i]);
    free(w->runs);
    free(w->name);
    free(w->experiment);
    kv_list_release(&w->env);
    for (char **o = w->on_finding; o && *o; o++)
        free(*o);
    free(w->on_finding);
    for (char **o = w->rule_params; o && *o; o++)
        free(*o);
    free(w->rule_params);
    free(w->rules);
}

void sweep_spec_release(struct sweep_spec *spec)
{
    for (size_t i = 0; i < spec->n; i++)
        workload_release(&spec->w[i]);
    free(spec->w);
    free(spec->path);
    free(spec->campaign);
    memset(spec, 0, sizeof(*spec));
}

const char **sweep_workload_devices(const struct sweep_workload *w)
{
    size_t total = 0;
    for (size_t i = 0; i < w->nruns; i++)
        for (char **d = w->runs[i].devices; d && *d; d++)
            total++;
    const char **out = calloc(total + 1, sizeof(*out));
    size_t n = 0;
    for (size_t i = 0; out && i < w->nruns; i++)
        for (char **d = w->runs[i].devices; d && *d; d++) {
            size_t k = 0;
            while (k < n && strcmp(out[k], *d) != 0)
                k++;
            if (k == n)
                out[n++] = *d;
        }
    return out;
}

const char *sweep_run_collocation(const struct sweep_run *r, char *buf, size_t cap)
{
    if (r->share == SWEEP_SHARE_MIG)
        snprintf(buf, cap, "%s", r->mig_profile);
    else if (r->share == SWEEP_SHARE_MPS && r->mps_thread_pct)
        snprintf(buf, cap, "MPS:%d", r->mps_thread_pct);
    else
        snprintf(buf, cap, "%s", r->share == SWEEP_SHARE_MPS ? "MPS" : "-");
    return buf;
}

/* Everything that makes a workload what it is, hashed: a workload whose
 * key is unchanged resumes; an edited one runs anew. */
static void workload_key(struct sweep_workload *w)
{
    uint64_t h = fnv64(FNV64_INIT, w->experiment);
    h = fnv64(h, w->name);
    char buf[64];
    for (size_t i = 0; i < w->nruns; i++) {
        const struct sweep_run *r = &w->runs[i];
        h = fnv64(h, r->name);
        for (char **a = r->argv; a && *a; a++)
            h = fnv64(h, *a);
        h = fnv64(h, "\x01");
        for (size_t k = 0; k < r->params.n; k++)
            h = fnv64(fnv64(h, r->params.items[k].key), r->params.items[k].value);
        for (char **d = r->devices; d && *d; d++)
            h = fnv64(h, *d);
        h = fnv64(fnv64(h, sweep_run_collocation(r, buf, sizeof(buf))), r->wrap);
    }
    for (size_t k = 0; k < w->env.n; k++)
        h = fnv64(fnv64(h, w->env.items[k].key), w->env.items[k].value);
    for (char **o = w->on_finding; o && *o; o++)
        h = fnv64(h, *o);
    snprintf(w->key, sizeof(w->key), "%016llx", (unsigned long long)h);
}

static void finish_spec(struct sweep_spec *s)
{
    uint64_t h = fnv64(FNV64_INIT, s->campaign);
    for (size_t i = 0; i < s->n; i++) {
        workload_key(&s->w[i]);
        h = fnv64(h, s->w[i].key);
    }
    snprintf(s->hash, sizeof(s->hash), "%016llx", (unsigned long long)h);
}

static int check_unique_names(struct spec_reader *rd)
{
    struct sweep_spec *s = rd->spec;
    struct sweep_index names = {0};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        const struct sweep_workload *w = &s->w[i];
        const struct sweep_workload *first = sweep_index_find(&names, s, w->experiment, w->name);
        if (first)
            rc = sweep_fail_at(rd, w->line, w->col,
                               "workload '%s' is defined twice (first at line %d)", w->name,
                               first->line);
        else if (sweep_index_add(&names, s, i) < 0)
            rc = sweep_fail_at(rd, w->line, w->col, "out of memory");
    }
    sweep_index_release(&names);
    return rc;
}

int sweep_spec_load(struct sweep_spec *spec, const char *path, const struct sweep_env *env,
                    struct strbuf *err)
{
    struct spec_reader rd = {.spec = spec, .env = env, .err = err};
    spec->path = strdup(path);
    const char *slash = strrchr(path, '/');
    rd.dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    const char *dot = strrchr(path, '.');
    int rc;
    if (!spec->path || !rd.dir) {
        strbuf_reset(err);
        strbuf_adds(err, "out of memory");
        rc = -1;
    } else if (dot && strcasecmp(dot, ".csv") == 0) {
        spec->format = SWEEP_CSV;
        rc = sweep_read_csv(&rd);
    } else if (dot && (strcasecmp(dot, ".yaml") == 0 || strcasecmp(dot, ".yml") == 0)) {
        spec->format = SWEEP_YAML;
        rc = sweep_read_yaml(&rd);
    } else {
        strbuf_reset(err);
        strbuf_addf(err, "%s: an experiment file is .csv, .yaml or .yml", path);
        rc = -1;
    }
    if (rc == 0 && spec->n == 0)
        rc = sweep_fail_at(&rd, 1, 1, "the file defines no workload");
    if (rc == 0)
        rc = check_unique_names(&rd);
    if (rc == 0)
        finish_spec(spec);
    free(rd.dir);
    return rc;
}
