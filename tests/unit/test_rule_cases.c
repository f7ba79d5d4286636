/*
 * Rule cases from files (tests/cases/rules/NAME.case, format in
 * tests/cases/rules/README.md): each file describes a run (series on a grid,
 * steps with their phases, data-loader workers), the rule and parameters
 * under test, and what must come out. The run is fed to the engine the way
 * the offline replay feeds a stored run: everything before a window's end,
 * then the window closes. One "ok"/"not ok" line per case.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "rules/rules.h"

#define START_NS  1700000000000000000LL
#define MAX_ITEMS 64

struct series_spec {
    char name[64], labels[64];
    char value[64];
    int64_t from, to;
};

struct steps_spec {
    int64_t pid, tid, rank, every, from, to;
    double phase[PHASE_COUNT];
    int slow_n;
    double slow_f;
    int comm_threads; /* each comm span also on this many other threads, at the same time */
    int worker;       /* dataloader.worker spans instead of steps */
    double busy;
    int mode;      /* enum step_mode: the step span's name */
    char node[48]; /* the process's node ("" the local one) */
    int no_step;   /* the phases only, without the step span around them */
};

struct expect {
    char what[16]; /* fired, not-fired, status, evidence */
    char arg[256];
    int min, max; /* max 0: no bound */
};

struct rcase {
    char rule[64];
    const char *params[MAX_ITEMS + 1];
    char param_buf[MAX_ITEMS][128];
    int nparams;
    int cpus;
    int64_t duration, interval, window;
    struct series_spec series[MAX_ITEMS];
    int nseries;
    struct steps_spec steps[MAX_ITEMS];
    int nsteps;
    struct expect expect[MAX_ITEMS];
    int nexpect;
};

/* ---- parsing ------------------------------------------------------------------ */

static int dur(const char *s, int64_t *out)
{
    return duration_parse(s, out);
}

/* from=T, to=T, every=T (when every is wanted): 1 when tok was one, 0 when
 * it is something else, -1 when its duration is bad. */
static int parse_opt_range(char *tok, int64_t *from, int64_t *to, int64_t *every)
{
    int64_t *dst = NULL;
    if (strncmp(tok, "from=", 5) == 0)
        dst = from;
    else if (strncmp(tok, "to=", 3) == 0)
        dst = to;
    else if (every && strncmp(tok, "every=", 6) == 0)
        dst = every;
    if (!dst)
        return 0;
    return dur(strchr(tok, '=') + 1, dst) < 0 ? -1 : 1;
}

static int parse_steps(struct rcase *c, char *rest, int worker, int no_step)
{
    if (c->nsteps == MAX_ITEMS)
        return -1;
    struct steps_spec *s = &c->steps[c->nsteps++];
    memset(s, 0, sizeof(*s));
    s->pid = 1000;
    s->rank = -1;
    s->to = c->duration;
    s->worker = worker;
    s->no_step = no_step;
    s->phase[PHASE_FORWARD] = 1;
    int phases_given = 0;
    for (char *tok = strtok(rest, " \t"); tok; tok = strtok(NULL, " \t")) {
        int r = parse_opt_range(tok, &s->from, &s->to, &s->every);
        if (r < 0)
            return -1;
        if (r)
            continue;
        if (sscanf(tok, "pid=%lld", (long long *)&s->pid) == 1 ||
            sscanf(tok, "tid=%lld", (long long *)&s->tid) == 1 ||
            sscanf(tok, "rank=%lld", (long long *)&s->rank) == 1 ||
            sscanf(tok, "busy=%lf", &s->busy) == 1 ||
            sscanf(tok, "comm_threads=%d", &s->comm_threads) == 1 ||
            sscanf(tok, "slow=%d:%lf", &s->slow_n, &s->slow_f) == 2 ||
            sscanf(tok, "node=%47s", s->node) == 1)
            continue;
        if (strncmp(tok, "mode=", 5) == 0) {
            if ((s->mode = step_mode_parse(tok + 5)) < 0)
                return -1;
            continue;
        }
        char *eq = strchr(tok, '=');
        if (!eq)
            return -1;
        *eq = 0;
        int p = -1;
        for (int k = 0; k < PHASE_COUNT; k++)
            if (strcmp(tok, phase_names[k]) == 0)
                p = k;
        if (p < 0)
            return -1;
        if (!phases_given++)
            memset(s->phase, 0, sizeof(s->phase));
        s->phase[p] = atof(eq + 1);
    }
    if (!s->tid)
        s->tid = s->pid;
    return s->every > 0 ? 0 : -1;
}

static int parse_line(struct rcase *c, char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = 0;
    char *key = strtok(line, " \t\r\n");
    if (!key)
        return 0;
    char *rest = strtok(NULL, "\r\n");
    if (!rest)
        rest = "";
    if (strcmp(key, "rule") == 0)
        return sscanf(rest, "%63s", c->rule) == 1 ? 0 : -1;
    if (strcmp(key, "param") == 0) {
        if (c->nparams == MAX_ITEMS)
            return -1;
        sscanf(rest, "%127s", c->param_buf[c->nparams]);
        c->params[c->nparams] = c->param_buf[c->nparams];
        c->nparams++;
        return 0;
    }
    if (strcmp(key, "cpus") == 0)
        return (c->cpus = atoi(rest)) >= 0 ? 0
                                           : -1; /* 0: unknown, as an import without CPU metrics */
    char word[64];
    if (strcmp(key, "duration") == 0 || strcmp(key, "interval") == 0 ||
        strcmp(key, "window") == 0) {
        if (sscanf(rest, "%63s", word) != 1)
            return -1;
        int64_t *dst = key[0] == 'd' ? &c->duration : key[0] == 'i' ? &c->interval : &c->window;
        return dur(word, dst);
    }
    if (strcmp(key, "series") == 0) {
        if (c->nseries == MAX_ITEMS)
            return -1;
        struct series_spec *s = &c->series[c->nseries++];
        memset(s, 0, sizeof(*s));
        s->to = INT64_MAX;
        char *name = strtok(rest, " \t"), *labels = strtok(NULL, " \t"),
             *value = strtok(NULL, " \t");
        if (!name || !labels || !value)
            return -1;
        snprintf(s->name, sizeof(s->name), "%s", name);
        snprintf(s->labels, sizeof(s->labels), "%s", strcmp(labels, "-") == 0 ? "" : labels);
        snprintf(s->value, sizeof(s->value), "%s", value);
        for (char *tok = strtok(NULL, " \t"); tok; tok = strtok(NULL, " \t"))
            if (parse_opt_range(tok, &s->from, &s->to, NULL) <= 0)
                return -1;
        return 0;
    }
    if (strcmp(key, "steps") == 0)
        return parse_steps(c, rest, 0, 0);
    if (strcmp(key, "phases") == 0)
        return parse_steps(c, rest, 0, 1);
    if (strcmp(key, "worker") == 0)
        return parse_steps(c, rest, 1, 0);
    if (strcmp(key, "expect") == 0) {
        if (c->nexpect == MAX_ITEMS)
            return -1;
        struct expect *x = &c->expect[c->nexpect++];
        memset(x, 0, sizeof(*x));
        x->min = 1;
        char *what = strtok(rest, " \t");
        if (!what)
            return -1;
        char *tilde = strchr(what, '~');
        char *eq = strchr(what, '=');
        if (tilde) { /* evidence~TEXT, detail~TEXT, report~TEXT: the rest of the line */
            *tilde = 0;
            if (strcmp(what, "evidence") && strcmp(what, "detail") && strcmp(what, "report"))
                return -1;
            snprintf(x->what, sizeof(x->what), "%s", what);
            char *more = strtok(NULL, "");
            int n = snprintf(x->arg, sizeof(x->arg), "%s%s%s", tilde + 1, more ? " " : "",
                             more ? more : "");
            return n > 0 && (size_t)n < sizeof(x->arg) ? 0 : -1; /* cut short: say so */
        }
        if (eq) {
            *eq = 0;
            snprintf(x->arg, sizeof(x->arg), "%s", eq + 1);
        }
        snprintf(x->what, sizeof(x->what), "%s", what);
        if (strcmp(what, "fired") && strcmp(what, "not-fired") && strcmp(what, "status") &&
            strcmp(what, "datapoints") && strcmp(what, "violations"))
            return -1; /* an expectation the runner would not check */
        for (char *tok = strtok(NULL, " \t"); tok; tok = strtok(NULL, " \t")) {
            if (strncmp(tok, "scope=", 6) == 0)
                snprintf(x->arg, sizeof(x->arg), "%s", tok + 6);
            else if (strncmp(tok, "min=", 4) == 0)
                x->min = atoi(tok + 4);
            else if (strncmp(tok, "max=", 4) == 0 && atoi(tok + 4) > 0)
                x->max = atoi(tok + 4);
            else
                return -1;
        }
        return 0;
    }
    return -1;
}

static int parse_case(const char *path, struct rcase *c, char *err, size_t cap)
{
    memset(c, 0, sizeof(*c));
    c->cpus = 2;
    c->duration = 60 * NS_PER_S;
    c->interval = 100 * NS_PER_MS;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, cap, "cannot open: %s", strerror(errno));
        return -1;
    }
    char line[512];
    int n = 0;
    while (fgets(line, sizeof(line), f)) {
        n++;
        char copy[512];
        snprintf(copy, sizeof(copy), "%s", line);
        if (parse_line(c, line) < 0) {
            snprintf(err, cap, "line %d: cannot parse: %s", n, copy);
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    if (!c->rule[0]) {
        snprintf(err, cap, "no 'rule' line");
        return -1;
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------------ */

/* The value of spec s at offset t (the spec covers it). */
static double spec_value(const struct series_spec *s, int64_t t, int64_t duration)
{
    double a, b, period;
    int64_t from = s->from, to = s->to == INT64_MAX ? duration : s->to;
    double frac = to > from ? (double)(t - from) / (double)(to - from) : 0;
    if (strcmp(s->value, "nan") == 0)
        return NAN;
    if (sscanf(s->value, "ramp:%lf:%lf", &a, &b) == 2)
        return a + (b - a) * frac;
    if (sscanf(s->value, "wave:%lf:%lf:%lf", &a, &b, &period) == 3) {
        double ph = fmod((double)(t - from) / 1e9, period);
        return ph < period / 2 ? a : b;
    }
    return atof(s->value);
}

struct point {
    int64_t ts;
    int slot;
    double v;
};

struct span {
    int64_t pid, tid, start, end;
    const char *name;
};

struct feed {
    struct point *p;
    size_t np, pcap;
    struct span *s;
    size_t ns, scap;
};

static int add_point(struct feed *f, int64_t ts, int slot, double v)
{
    if (f->np == f->pcap) {
        size_t cap = f->pcap ? f->pcap * 2 : 4096;
        struct point *q = realloc(f->p, cap * sizeof(*q));
        if (!q)
            return -1;
        f->p = q;
        f->pcap = cap;
    }
    f->p[f->np++] = (struct point){ts, slot, v};
    return 0;
}

static int add_span(struct feed *f, int64_t pid, int64_t tid, int64_t a, int64_t b,
                    const char *name)
{
    if (f->ns == f->scap) {
        size_t cap = f->scap ? f->scap * 2 : 4096;
        struct span *q = realloc(f->s, cap * sizeof(*q));
        if (!q)
            return -1;
        f->s = q;
        f->scap = cap;
    }
    f->s[f->ns++] = (struct span){pid, tid, a, b, name};
    return 0;
}

static void gen_series(struct rules_engine *e, const struct rcase *c, struct feed *f)
{
    for (int i = 0; i < c->nseries; i++) {
        const struct series_spec *s = &c->series[i];
        int first = 1; /* the first spec of a name and labels defines the series */
        for (int j = 0; j < i; j++)
            if (!strcmp(c->series[j].name, s->name) && !strcmp(c->series[j].labels, s->labels))
                first = 0;
        if (!first)
            continue;
        int slot = rules_series(e, s->name, s->labels);
        for (int64_t t = 0; t <= c->duration; t += c->interval) {
            int have = 0;
            double v = 0;
            for (int j = i; j < c->nseries; j++) { /* later lines override */
                const struct series_spec *o = &c->series[j];
                if (strcmp(o->name, s->name) || strcmp(o->labels, s->labels) || t < o->from ||
                    t >= o->to)
                    continue;
                v = spec_value(o, t, c->duration);
                have = 1;
            }
            if (have)
                add_point(f, START_NS + t, slot, v);
        }
    }
}

static void gen_steps(struct rules_engine *e, const struct rcase *c, struct feed *f)
{
    for (int i = 0; i < c->nsteps; i++) {
        const struct steps_spec *s = &c->steps[i];
        if (s->rank >= 0 || s->worker)
            rules_put_process(e, s->pid, s->rank, s->worker ? 0 : -1);
        if (s->node[0])
            rules_put_process_node(e, s->pid, s->node);
        int64_t t = s->from;
        for (int k = 1; t < s->to; k++) {
            int64_t d = s->every;
            if (s->slow_n > 0 && k % s->slow_n == 0)
                d = (int64_t)((double)d * s->slow_f);
            if (t + d > s->to)
                break;
            if (s->worker) {
                add_span(f, s->pid, s->tid, START_NS + t,
                         START_NS + t + (int64_t)((double)d * s->busy), "dataloader.worker");
            } else {
                int64_t p = t;
                for (int q = 0; q < PHASE_OTHER; q++) {
                    int64_t len = (int64_t)((double)d * s->phase[q]);
                    if (len <= 0)
                        continue;
                    static const char *const names[] = {"data", "forward", "backward", "optimizer",
                                                        "comm:allreduce"};
                    add_span(f, s->pid, s->tid, START_NS + p, START_NS + p + len, names[q]);
                    for (int o = 0; q == PHASE_COMM && o < s->comm_threads; o++)
                        add_span(f, s->pid, s->tid + 1 + o, START_NS + p, START_NS + p + len,
                                 names[q]);
                    p += len;
                }
                if (!s->no_step)
                    add_span(f, s->pid, s->tid, START_NS + t, START_NS + t + d,
                             step_span_names[s->mode]);
            }
            t += d;
        }
    }
}

static int cmp_point(const void *a, const void *b)
{
    const struct point *x = a, *y = b;
    if (x->ts != y->ts)
        return (x->ts > y->ts) - (x->ts < y->ts);
    return x->slot - y->slot;
}

static int cmp_span_end(const void *a, const void *b)
{
    const struct span *x = a, *y = b;
    if (x->end != y->end)
        return (x->end > y->end) - (x->end < y->end);
    return (x->start < y->start) - (x->start > y->start); /* inner spans end first */
}

static void run_case(struct rules_engine *e, const struct rcase *c)
{
    struct feed f = {0};
    gen_series(e, c, &f);
    gen_steps(e, c, &f);
    if (f.np) /* qsort(NULL, 0, ...) is undefined: a case without series or steps */
        qsort(f.p, f.np, sizeof(*f.p), cmp_point);
    if (f.ns) /* as the recorder stores them: at their end */
        qsort(f.s, f.ns, sizeof(*f.s), cmp_span_end);
    size_t ip = 0, is = 0;
    int64_t step = rules_interval_ns(e), end = START_NS + c->duration;
    for (int64_t t1 = START_NS + step; t1 <= end; t1 += step) {
        while (ip < f.np && f.p[ip].ts < t1) {
            rules_put(e, f.p[ip].slot, f.p[ip].ts, f.p[ip].v);
            ip++;
        }
        while (is < f.ns && f.s[is].end < t1) {
            rules_put_span(e, f.s[is].pid, f.s[is].tid, f.s[is].start, f.s[is].end, 0,
                           f.s[is].name);
            is++;
        }
        rules_close_until(e, t1);
    }
    for (; ip < f.np; ip++)
        rules_put(e, f.p[ip].slot, f.p[ip].ts, f.p[ip].v);
    for (; is < f.ns; is++)
        rules_put_span(e, f.s[is].pid, f.s[is].tid, f.s[is].start, f.s[is].end, 0, f.s[is].name);
    rules_finish(e, end);
    free(f.p);
    free(f.s);
}

/* ---- expectations ------------------------------------------------------------------ */

static int check(const struct rules_engine *e, const struct rcase *c, char *why, size_t cap)
{
    const struct rule_result *res = rules_result_at(e, 0);
    uint32_t nf;
    const struct finding *f = rules_findings(e, &nf);
    for (int i = 0; i < c->nexpect; i++) {
        const struct expect *x = &c->expect[i];
        int n = 0;
        for (uint32_t k = 0; k < nf; k++)
            if (!x->arg[0] || strcmp(x->what, "fired") || strcmp(f[k].scope, x->arg) == 0)
                n++;
        if (strcmp(x->what, "fired") == 0 && n < x->min) {
            snprintf(why, cap, "want %d finding(s)%s%s, got %d; status %s: %s", x->min,
                     x->arg[0] ? " for " : "", x->arg, n, rule_status_names[res->status],
                     res->detail);
            return -1;
        }
        if (strcmp(x->what, "fired") == 0 && x->max && n > x->max) {
            snprintf(why, cap, "want at most %d finding(s)%s%s, got %d; the last: %s", x->max,
                     x->arg[0] ? " for " : "", x->arg, n, f[nf - 1].evidence);
            return -1;
        }
        if (strcmp(x->what, "not-fired") == 0 && nf) {
            snprintf(why, cap, "want no finding, got %u: [%s] %s", nf, f[0].scope, f[0].evidence);
            return -1;
        }
        if (strcmp(x->what, "status") == 0 && strcmp(rule_status_names[res->status], x->arg)) {
            snprintf(why, cap, "want status %s, got %s: %s", x->arg, rule_status_names[res->status],
                     res->detail);
            return -1;
        }
        if (strcmp(x->what, "datapoints") == 0 || strcmp(x->what, "violations") == 0) {
            unsigned long long want = strtoull(x->arg, NULL, 10);
            unsigned long long got = x->what[0] == 'd' ? res->datapoints : res->violations;
            if (got != want) {
                snprintf(why, cap, "want %s=%llu, got %llu; status %s: %s", x->what, want, got,
                         rule_status_names[res->status], res->detail);
                return -1;
            }
        }
        if (strcmp(x->what, "evidence") == 0) {
            int found = 0;
            for (uint32_t k = 0; k < nf; k++)
                if (f[k].evidence && strstr(f[k].evidence, x->arg))
                    found = 1;
            if (!found) {
                snprintf(why, cap, "no finding's evidence contains '%s'%s%s", x->arg,
                         nf ? "; first: " : "", nf ? f[0].evidence : "");
                return -1;
            }
        }
        if (strcmp(x->what, "detail") == 0 && !strstr(res->detail, x->arg)) {
            snprintf(why, cap, "the detail does not contain '%s': %s", x->arg, res->detail);
            return -1;
        }
        if (strcmp(x->what, "report") == 0 && (!res->report || !strstr(res->report, x->arg))) {
            snprintf(why, cap, "the report does not contain '%s': %.600s", x->arg,
                     res->report ? res->report : "(none)");
            return -1;
        }
    }
    return 0;
}

static int one(const char *dir, const char *file)
{
    char path[512], err[768];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    struct rcase *c = calloc(1, sizeof(*c));
    if (!c)
        return 1;
    int failed = 1;
    if (parse_case(path, c, err, sizeof(err)) < 0) {
        printf("not ok - rule case %s: %s\n", file, err);
        free(c);
        return 1;
    }
    c->params[c->nparams] = NULL;
    struct rules_options ro = {c->window, c->rule, c->params};
    struct rules_run_info info = {START_NS, c->cpus, 16LL << 30, "testhost", 0};
    struct rules_engine *e = NULL;
    struct strbuf sb;
    strbuf_init(&sb);
    if (rules_engine_new(&ro, &info, &e, &sb) < 0 || !e) {
        printf("not ok - rule case %s: %s\n", file, sb.buf);
    } else {
        run_case(e, c);
        if (check(e, c, err, sizeof(err)) < 0)
            printf("not ok - rule case %s: %s\n", file, err);
        else {
            printf("ok - rule case %s\n", file);
            failed = 0;
        }
    }
    rules_engine_free(e);
    strbuf_release(&sb);
    free(c);
    return failed;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "tests/cases/rules";
    DIR *d = opendir(dir);
    if (!d) {
        printf("not ok - rule cases: cannot open %s\n", dir);
        return 1;
    }
    char *names[1024];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 1024) {
        size_t len = strlen(de->d_name);
        if (len > 5 && strcmp(de->d_name + len - 5, ".case") == 0)
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof(*names), cmp_name);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        failed += one(dir, names[i]);
        free(names[i]);
    }
    if (!n)
        printf("not ok - rule cases: none in %s\n", dir);
    return failed || !n ? 1 : 0;
}
