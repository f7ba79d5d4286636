/*
 * The job's cgroup: memory used and limit, CPU throttling. Works on cgroup v2,
 * v1, and the v1/v2 hybrid (v2 mounted at /sys/fs/cgroup/unified with no
 * controllers, as on this project's machines): for each resource the v2 file
 * is used when it exists and carries the field, else the v1 controller's.
 *
 * The job is forked after init, so it starts in the recorder's cgroup, read
 * from <proc>/self/cgroup and located through <proc>/self/mountinfo.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cursor.h"
#include "common/json_writer.h"
#include "common/strlist.h"
#include "sample/collector.h"
#include "sample/parse.h"
#include "sample/pfile.h"

#define CG_PATH_MAX  512
#define CG_UNLIMITED (UINT64_C(1) << 62) /* v1 writes PAGE_COUNTER_MAX pages as bytes */

struct cgroup_state {
    struct pfile mem_used;   /* memory.current or memory.usage_in_bytes */
    struct pfile mem_limit;  /* memory.max or memory.limit_in_bytes */
    struct pfile cpu_stat;   /* cpu.stat */
    uint64_t ancestor_limit; /* tightest limit above the job's cgroup, read at init */
    int cpu_v2;              /* cpu.stat has throttled_usec (v2) vs throttled_time (v1, ns) */
    struct rate_counter nr, throttled_ns;
    struct read_time prev; /* of cpu.stat; due_ns 0 before the first */
    uint32_t s_used, s_limit, s_thr, s_thr_pct;
};

struct cg_mounts {
    char v2[CG_PATH_MAX];     /* cgroup2 mount point, "" if none */
    char memory[CG_PATH_MAX]; /* v1 memory controller mount point */
    char cpu[CG_PATH_MAX];    /* v1 cpu controller mount point */
    char v2_path[CG_PATH_MAX];
    char memory_path[CG_PATH_MAX];
    char cpu_path[CG_PATH_MAX];
};

/* Mount points in mountinfo are absolute; with a test --sys-root they are
 * moved under it, so fixtures can carry their own cgroup trees. */
static void rebase_mount(char *dst, size_t cap, const char *mnt, size_t len, const char *sys_root)
{
    if (strcmp(sys_root, "/sys") != 0 && len >= 4 && memcmp(mnt, "/sys", 4) == 0 &&
        (len == 4 || mnt[4] == '/')) {
        char tmp[CG_PATH_MAX];
        cursor_copy_span(tmp, sizeof(tmp), mnt + 4, len - 4);
        snprintf(dst, cap, "%s%s", sys_root, tmp);
    } else {
        cursor_copy_span(dst, cap, mnt, len);
    }
}

/* Whether the comma list opts[0..len), a field of a line, names name. */
static int has_option(const char *opts, size_t len, const char *name)
{
    return strlist_has_n(opts, len, name, strlen(name));
}

/* mountinfo(5): id parent maj:min root mount-point options [optional...] - fstype source super */
static void parse_mountinfo(const char *buf, size_t len, const char *sys_root, struct cg_mounts *m)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    while (!cursor_eof(&c)) {
        struct cursor line = c;
        cursor_next_line(&c);
        const char *mnt, *w, *fstype, *super;
        size_t mnt_len, wl, fstype_len, super_len;
        if (cursor_skip_fields(&line, 4) < 0 || cursor_word(&line, &mnt, &mnt_len) < 0)
            continue;
        do {
            if (cursor_word(&line, &w, &wl) < 0)
                break;
        } while (!(wl == 1 && w[0] == '-'));
        if (cursor_word(&line, &fstype, &fstype_len) < 0 || cursor_skip_fields(&line, 1) < 0 ||
            cursor_word(&line, &super, &super_len) < 0)
            continue;
        if (fstype_len == 7 && memcmp(fstype, "cgroup2", 7) == 0 && !m->v2[0])
            rebase_mount(m->v2, sizeof(m->v2), mnt, mnt_len, sys_root);
        else if (fstype_len == 6 && memcmp(fstype, "cgroup", 6) == 0) {
            if (has_option(super, super_len, "memory") && !m->memory[0])
                rebase_mount(m->memory, sizeof(m->memory), mnt, mnt_len, sys_root);
            if (has_option(super, super_len, "cpu") && !m->cpu[0])
                rebase_mount(m->cpu, sizeof(m->cpu), mnt, mnt_len, sys_root);
        }
    }
}

/* cgroups(7): "hierarchy-ID:controller-list:cgroup-path" per line. */
static void parse_self_cgroup(const char *buf, size_t len, struct cg_mounts *m)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    while (!cursor_eof(&c)) {
        const char *start = c.p;
        cursor_next_line(&c);
        const char *end = c.p;
        if (end > start && end[-1] == '\n')
            end--;
        const char *c1 = memchr(start, ':', (size_t)(end - start));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (!c2)
            continue;
        const char *ctrl = c1 + 1;
        size_t ctrl_len = (size_t)(c2 - ctrl);
        const char *path = c2 + 1;
        size_t path_len = (size_t)(end - path);
        if (ctrl_len == 0)
            cursor_copy_span(m->v2_path, sizeof(m->v2_path), path, path_len);
        if (has_option(ctrl, ctrl_len, "memory"))
            cursor_copy_span(m->memory_path, sizeof(m->memory_path), path, path_len);
        if (has_option(ctrl, ctrl_len, "cpu"))
            cursor_copy_span(m->cpu_path, sizeof(m->cpu_path), path, path_len);
    }
}

static int open_in(struct pfile *f, const char *mnt, const char *path, const char *file)
{
    char full[CG_PATH_MAX * 2 + 64];
    if (!mnt[0])
        return -ENOENT;
    snprintf(full, sizeof(full), "%s%s/%s", mnt, strcmp(path, "/") == 0 ? "" : path, file);
    int rc = pfile_open(f, AT_FDCWD, full);
    if (rc == -ENOENT) { /* inside a cgroup namespace the mount root is our cgroup */
        snprintf(full, sizeof(full), "%s/%s", mnt, file);
        rc = pfile_open(f, AT_FDCWD, full);
    }
    return rc == 0 ? pfile_read(f) : rc;
}

/* The tightest memory limit on the path from the mount point down to path's
 * parent (a v2 limit on an ancestor binds the job too). */
static uint64_t ancestor_limit_v2(const char *mnt, const char *path)
{
    uint64_t best = UINT64_MAX;
    char sub[CG_PATH_MAX];
    snprintf(sub, sizeof(sub), "%s", path);
    for (char *slash = strrchr(sub, '/'); slash && slash != sub; slash = strrchr(sub, '/')) {
        *slash = '\0';
        struct pfile f = PFILE_INIT;
        uint64_t v;
        if (open_in(&f, mnt, sub, "memory.max") == 0 && parse_u64_or_max(f.buf, f.len, &v) == 0 &&
            v < best)
            best = v;
        pfile_release(&f);
    }
    return best;
}

static int cgroup_open_memory(struct cgroup_state *s, const struct cg_mounts *m)
{
    uint64_t v;
    if (open_in(&s->mem_used, m->v2, m->v2_path, "memory.current") == 0 &&
        open_in(&s->mem_limit, m->v2, m->v2_path, "memory.max") == 0) {
        s->ancestor_limit = ancestor_limit_v2(m->v2, m->v2_path);
        return 1;
    }
    pfile_release(&s->mem_used);
    pfile_release(&s->mem_limit);
    if (open_in(&s->mem_used, m->memory, m->memory_path, "memory.usage_in_bytes") == 0 &&
        open_in(&s->mem_limit, m->memory, m->memory_path, "memory.limit_in_bytes") == 0) {
        struct pfile st = PFILE_INIT;
        /* memory.stat's hierarchical_memory_limit folds in every ancestor */
        if (open_in(&st, m->memory, m->memory_path, "memory.stat") == 0 &&
            parse_flat_key(st.buf, st.len, "hierarchical_memory_limit", &v) == 0)
            s->ancestor_limit = v;
        pfile_release(&st);
        return 2;
    }
    pfile_release(&s->mem_used);
    pfile_release(&s->mem_limit);
    return 0;
}

static int cgroup_open_cpu(struct cgroup_state *s, const struct cg_mounts *m)
{
    uint64_t v;
    if (open_in(&s->cpu_stat, m->v2, m->v2_path, "cpu.stat") == 0 &&
        parse_flat_key(s->cpu_stat.buf, s->cpu_stat.len, "throttled_usec", &v) == 0) {
        s->cpu_v2 = 1;
        return 1;
    }
    pfile_release(&s->cpu_stat);
    if (open_in(&s->cpu_stat, m->cpu, m->cpu_path, "cpu.stat") == 0 &&
        parse_flat_key(s->cpu_stat.buf, s->cpu_stat.len, "throttled_time", &v) == 0)
        return 2;
    pfile_release(&s->cpu_stat);
    return 0;
}

static const char *hierarchy_name(int found)
{
    return found == 1 ? "v2" : found == 2 ? "v1" : "none";
}

/* The memory series' meta: which hierarchy each controller came from and the
 * job's cgroup path. Control characters and backslashes in the path show as
 * '_', as they always have; the writer escapes the rest (a quote). None
 * when out of memory. */
static void set_meta(struct series_table *t, uint32_t series, int mem, int cpu, const char *path)
{
    char shown[CG_PATH_MAX];
    snprintf(shown, sizeof(shown), "%s", path);
    for (char *p = shown; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == '\\')
            *p = '_';
    struct strbuf meta;
    strbuf_init(&meta);
    struct json_writer jw;
    jw_init(&jw, &meta);
    jw_object_begin(&jw);
    jw_kv_str(&jw, "memory", hierarchy_name(mem));
    jw_kv_str(&jw, "cpu", hierarchy_name(cpu));
    jw_kv_str(&jw, "path", shown);
    jw_end(&jw);
    if (!jw_failed(&jw))
        series_set_meta(t, series, meta.buf);
    strbuf_release(&meta);
}

static int cgroup_init(void *state, const struct sample_env *env, struct series_table *t)
{
    struct cgroup_state *s = state;
    struct cg_mounts m;
    struct pfile f = PFILE_INIT;
    memset(&m, 0, sizeof(m));
    s->mem_used = s->mem_limit = s->cpu_stat = (struct pfile)PFILE_INIT;
    s->ancestor_limit = UINT64_MAX;
    if (pfile_read_once(&f, env->proc_fd, "self/mountinfo") == 0)
        parse_mountinfo(f.buf, f.len, env->sys_root, &m);
    if (pfile_read_once(&f, env->proc_fd, "self/cgroup") == 0)
        parse_self_cgroup(f.buf, f.len, &m);
    pfile_release(&f);
    int mem = cgroup_open_memory(s, &m);
    int cpu = cgroup_open_cpu(s, &m);
    if (!mem && !cpu)
        return -ENOENT;
    int rc;
    if (mem && ((rc = series_get_metric(t, METRIC_CGROUP_MEM_USED_BYTES, "", &s->s_used)) < 0 ||
                (rc = series_get_metric(t, METRIC_CGROUP_MEM_LIMIT_BYTES, "", &s->s_limit)) < 0))
        return rc;
    if (cpu && ((rc = series_get_metric(t, METRIC_CGROUP_THROTTLED_PER_S, "", &s->s_thr)) < 0 ||
                (rc = series_get_metric(t, METRIC_CGROUP_THROTTLED_PCT, "", &s->s_thr_pct)) < 0))
        return rc;
    if (mem)
        set_meta(t, s->s_used, mem, cpu, mem == 2 ? m.memory_path : m.v2_path);
    return 0;
}

static double limit_value(uint64_t limit)
{
    return limit >= CG_UNLIMITED ? INFINITY : (double)limit;
}

static int cgroup_sample(void *state, struct sample_ctx *ctx)
{
    struct cgroup_state *s = state;
    uint64_t v;
    if (s->mem_used.fd >= 0 && pfile_read(&s->mem_used) == 0 &&
        parse_u64_or_max(s->mem_used.buf, s->mem_used.len, &v) == 0)
        series_put(ctx->series, s->s_used, (double)v);
    if (s->mem_limit.fd >= 0 && pfile_read(&s->mem_limit) == 0 &&
        parse_u64_or_max(s->mem_limit.buf, s->mem_limit.len, &v) == 0)
        series_put(ctx->series, s->s_limit,
                   limit_value(v < s->ancestor_limit ? v : s->ancestor_limit));
    uint64_t nr, thr;
    if (s->cpu_stat.fd >= 0 && pfile_read(&s->cpu_stat) == 0 &&
        parse_flat_key(s->cpu_stat.buf, s->cpu_stat.len, "nr_throttled", &nr) == 0 &&
        parse_flat_key(s->cpu_stat.buf, s->cpu_stat.len,
                       s->cpu_v2 ? "throttled_usec" : "throttled_time", &thr) == 0) {
        uint64_t thr_ns = s->cpu_v2 ? thr * 1000 : thr;
        if (s->prev.due_ns) {
            series_put(ctx->series, s->s_thr, counter_rate(ctx, &s->prev, &s->nr, nr));
            series_put(ctx->series, s->s_thr_pct,
                       pct_step(counter_rate(ctx, &s->prev, &s->throttled_ns, thr_ns) / 1e7));
        } else {
            rate_counter_start(&s->nr, nr);
            rate_counter_start(&s->throttled_ns, thr_ns);
        }
        read_time_set(&s->prev, ctx);
    }
    return 0;
}

static void cgroup_fini(void *state)
{
    struct cgroup_state *s = state;
    pfile_release(&s->mem_used);
    pfile_release(&s->mem_limit);
    pfile_release(&s->cpu_stat);
}

const struct collector_ops collector_cgroup = {
    "cgroup", sizeof(struct cgroup_state), cgroup_init, cgroup_sample, cgroup_fini,
};
