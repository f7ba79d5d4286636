#include "common/array.h"
#include "sample/parse.h"

#include <errno.h>
#include <string.h>

#include "common/cursor.h"

static int parse_cpu_fields(struct cursor *c, struct cpu_ticks *t)
{
    uint64_t *f[] = {&t->user,   &t->nice, &t->system,  &t->idle,
                     &t->iowait, &t->irq,  &t->softirq, &t->steal};
    memset(t, 0, sizeof(*t));
    /* proc(5): at least user nice system idle; later kernels add the rest. */
    for (size_t i = 0; i < ARRAY_SIZE(f); i++)
        if (cursor_u64(c, f[i]) < 0)
            return i >= 4 ? 0 : -EINVAL;
    return 0;
}

int parse_proc_stat(const char *buf, size_t len, struct cpu_ticks *total, struct cpu_ticks *cores,
                    uint8_t *core_seen, int max_cores)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    int have_total = 0, ncores = 0;
    if (core_seen)
        memset(core_seen, 0, (size_t)max_cores);
    while (!cursor_eof(&c) && cursor_accept(&c, "cpu")) {
        uint64_t id;
        /* "cpu  1 2 3" is the total; "cpu0 1 2 3" a core: the digit must
         * follow at once, so no blank may be skipped here */
        int is_core = !cursor_eof(&c) && *c.p >= '0' && *c.p <= '9';
        if (!is_core || cursor_u64(&c, &id) < 0) {
            if (parse_cpu_fields(&c, total) < 0)
                return -EINVAL;
            have_total = 1;
        } else {
            struct cpu_ticks t;
            if (parse_cpu_fields(&c, &t) < 0)
                return -EINVAL;
            if (id < (uint64_t)max_cores) {
                cores[id] = t;
                core_seen[id] = 1;
            }
            ncores++;
        }
        cursor_next_line(&c);
    }
    return have_total ? ncores : -EINVAL;
}

int parse_meminfo(const char *buf, size_t len, struct meminfo *out)
{
    static const struct {
        const char *key;
        size_t offset;
        int required;
    } keys[] = {
        {"MemTotal:", offsetof(struct meminfo, total_bytes), 1},
        {"MemFree:", offsetof(struct meminfo, free_bytes), 1},
        {"MemAvailable:", offsetof(struct meminfo, available_bytes), 0},
        {"Buffers:", offsetof(struct meminfo, buffers_bytes), 0},
        {"Cached:", offsetof(struct meminfo, cached_bytes), 0},
        {"SwapTotal:", offsetof(struct meminfo, swap_total_bytes), 0},
        {"SwapFree:", offsetof(struct meminfo, swap_free_bytes), 0},
    };
    memset(out, 0, sizeof(*out));
    struct cursor c;
    cursor_init(&c, buf, len);
    /* The keys come in this order in every kernel since 3.14; search on from
     * where the last one was found, and from the start if one moved. */
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        struct cursor k = c;
        if (cursor_find_key(&k, keys[i].key) < 0) {
            cursor_init(&k, buf, len);
            if (cursor_find_key(&k, keys[i].key) < 0) {
                if (keys[i].required)
                    return -EINVAL;
                continue;
            }
        }
        uint64_t kib;
        if (cursor_u64(&k, &kib) < 0)
            return -EINVAL;
        *(uint64_t *)((char *)out + keys[i].offset) = kib * 1024;
        c = k;
    }
    if (!out->available_bytes) /* kernels before 3.14: estimate as free(1) did */
        out->available_bytes = out->free_bytes + out->buffers_bytes + out->cached_bytes;
    return 0;
}

int parse_vmstat_swap(const char *buf, size_t len, uint64_t *pswpin, uint64_t *pswpout)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    if (cursor_find_key(&c, "pswpin ") < 0 || cursor_u64(&c, pswpin) < 0)
        return -EINVAL;
    if (cursor_find_key(&c, "pswpout ") < 0 || cursor_u64(&c, pswpout) < 0)
        return -EINVAL;
    return 0;
}

static int psi_total(struct cursor *c, uint64_t *out)
{
    /* "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345" */
    const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
    const char *line_end = nl ? nl : c->end;
    const char *t = memmem(c->p, (size_t)(line_end - c->p), "total=", 6);
    if (!t)
        return -EINVAL;
    c->p = t + 6;
    return cursor_u64(c, out);
}

int parse_psi(const char *buf, size_t len, uint64_t *some_us, uint64_t *full_us)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    *full_us = 0;
    if (!cursor_accept(&c, "some ") || psi_total(&c, some_us) < 0)
        return -EINVAL;
    cursor_next_line(&c);
    if (cursor_accept(&c, "full ") && psi_total(&c, full_us) < 0)
        return -EINVAL;
    return 0;
}

/* Documentation/admin-guide/iostats.rst: fields 1-11, the same in
 * /proc/diskstats (after major, minor, name) and /sys/block/DEV/stat. */
static int parse_disk_fields(struct cursor *c, struct diskstat *out)
{
    uint64_t v[11];
    for (int i = 0; i < 11; i++)
        if (cursor_u64(c, &v[i]) < 0)
            return -EINVAL;
    out->reads = v[0];
    out->sectors_read = v[2];
    out->writes = v[4];
    out->sectors_written = v[6];
    out->io_ticks_ms = v[9];
    return 0;
}

int parse_diskstats_next(const char *buf, size_t len, size_t *pos, struct diskstat *out)
{
    if (*pos >= len)
        return 0;
    struct cursor c;
    cursor_init(&c, buf + *pos, len - *pos);
    struct cursor line = c;
    cursor_next_line(&c);
    *pos = (size_t)(c.p - buf);
    const char *name;
    size_t nlen;
    if (cursor_skip_fields(&line, 2) < 0 || cursor_word(&line, &name, &nlen) < 0)
        return -EINVAL;
    struct diskstat ds;
    if (parse_disk_fields(&line, &ds) < 0)
        return -EINVAL;
    cursor_copy_span(ds.name, sizeof(ds.name), name, nlen);
    *out = ds;
    return 1;
}

int parse_block_stat(const char *buf, size_t len, struct diskstat *out)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    return parse_disk_fields(&c, out);
}

int parse_netdev_next(const char *buf, size_t len, size_t *pos, struct netdev *out)
{
    struct cursor c;
    if (*pos == 0) { /* skip the two header lines */
        cursor_init(&c, buf, len);
        cursor_next_line(&c);
        cursor_next_line(&c);
        *pos = (size_t)(c.p - buf);
    }
    if (*pos >= len)
        return 0;
    cursor_init(&c, buf + *pos, len - *pos);
    struct cursor line = c;
    cursor_next_line(&c);
    *pos = (size_t)(c.p - buf);
    cursor_skip_blanks(&line);
    const char *name = line.p;
    /* the name's colon must be on this line, not borrowed from the next */
    const char *colon = memchr(line.p, ':', (size_t)(c.p - line.p));
    if (!colon)
        return -EINVAL;
    cursor_copy_span(out->name, sizeof(out->name), name, (size_t)(colon - name));
    line.p = colon + 1;
    /* rx: bytes packets errs drop fifo frame compressed multicast; tx: bytes ... */
    if (cursor_u64(&line, &out->rx_bytes) < 0 || cursor_skip_fields(&line, 7) < 0 ||
        cursor_u64(&line, &out->tx_bytes) < 0)
        return -EINVAL;
    return 1;
}

int parse_pid_stat(const char *buf, size_t len, struct pid_stat *out)
{
    const char *open = memchr(buf, '(', len);
    const char *close = memrchr(buf, ')', len);
    if (!open || !close || close < open)
        return -EINVAL;
    cursor_copy_span(out->comm, sizeof(out->comm), open + 1, (size_t)(close - open - 1));
    struct cursor c;
    cursor_init(&c, close + 1, (size_t)(buf + len - close - 1));
    cursor_skip_blanks(&c);
    if (cursor_eof(&c))
        return -EINVAL;
    out->state = *c.p++;
    int64_t ppid;
    uint64_t skip;
    /* Fields 4 (ppid) to 24 (rss), numbered as in proc(5). */
    if (cursor_i64(&c, &ppid) < 0 || cursor_skip_fields(&c, 9) < 0 ||
        cursor_u64(&c, &out->utime) < 0 || cursor_u64(&c, &out->stime) < 0)
        return -EINVAL;
    int64_t cut, cst;
    if (cursor_i64(&c, &cut) < 0 || cursor_i64(&c, &cst) < 0)
        return -EINVAL;
    /* fields 18 priority, 19 nice */
    if (cursor_skip_fields(&c, 2) < 0 || cursor_i64(&c, &out->num_threads) < 0 ||
        cursor_u64(&c, &skip) < 0 || cursor_u64(&c, &out->starttime) < 0 ||
        cursor_u64(&c, &skip) < 0)
        return -EINVAL;
    int64_t rss;
    if (cursor_i64(&c, &rss) < 0)
        return -EINVAL;
    out->ppid = (pid_t)ppid;
    out->cutime = cut > 0 ? (uint64_t)cut : 0;
    out->cstime = cst > 0 ? (uint64_t)cst : 0;
    out->rss_pages = rss > 0 ? (uint64_t)rss : 0;
    return 0;
}

int parse_pid_io(const char *buf, size_t len, struct pid_io *out)
{
    static const struct {
        const char *key;
        size_t offset;
    } keys[] = {
        {"rchar:", offsetof(struct pid_io, rchar)},
        {"wchar:", offsetof(struct pid_io, wchar)},
        {"read_bytes:", offsetof(struct pid_io, read_bytes)},
        {"write_bytes:", offsetof(struct pid_io, write_bytes)},
        {"cancelled_write_bytes:", offsetof(struct pid_io, cancelled_write_bytes)},
    };
    struct cursor c;
    cursor_init(&c, buf, len);
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        uint64_t *dst = (uint64_t *)((char *)out + keys[i].offset);
        if (cursor_find_key(&c, keys[i].key) < 0 || cursor_u64(&c, dst) < 0)
            return -EINVAL;
    }
    return 0;
}

int parse_cpu_list(const char *buf, size_t len, uint32_t *cpus, uint32_t max, uint32_t *n)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    uint32_t k = 0;
    uint64_t next = 0; /* the lowest CPU the list may name next */
    while (!cursor_eof(&c) && *c.p != '\n') {
        uint64_t lo, hi;
        if (k && (*c.p++ != ',' || cursor_eof(&c)))
            return -EINVAL;
        if (cursor_u64(&c, &lo) < 0)
            return -EINVAL;
        hi = lo;
        if (!cursor_eof(&c) && *c.p == '-' && (c.p++, cursor_u64(&c, &hi) < 0))
            return -EINVAL;
        if (lo < next || hi < lo || hi >= UINT32_MAX)
            return -EINVAL;
        for (uint64_t cpu = lo; cpu <= hi; cpu++) {
            if (k == max)
                return -E2BIG;
            cpus[k++] = (uint32_t)cpu;
        }
        next = hi + 1;
    }
    if (!k)
        return -EINVAL;
    *n = k;
    return 0;
}

int parse_pid_statm(const char *buf, size_t len, uint64_t *resident_pages)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    uint64_t size;
    if (cursor_u64(&c, &size) < 0 || cursor_u64(&c, resident_pages) < 0)
        return -EINVAL;
    return 0;
}

int parse_pid_schedstat(const char *buf, size_t len, uint64_t *wait_ns, uint64_t *switches)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    uint64_t run_ns;
    if (cursor_u64(&c, &run_ns) < 0 || cursor_u64(&c, wait_ns) < 0 || cursor_u64(&c, switches) < 0)
        return -EINVAL;
    return 0;
}

int parse_pid_list(const char *buf, size_t len, pid_list_fn *fn, void *arg)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    int n = 0;
    for (;;) {
        while (!cursor_eof(&c) && (*c.p == ' ' || *c.p == '\n' || *c.p == '\t'))
            c.p++;
        if (cursor_eof(&c))
            return n;
        uint64_t pid;
        if (cursor_u64(&c, &pid) < 0 || pid == 0 || pid > 0x3fffffff)
            return -EINVAL;
        fn((pid_t)pid, arg);
        n++;
    }
}

int parse_flat_key(const char *buf, size_t len, const char *key, uint64_t *out)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    while (!cursor_eof(&c)) {
        if (cursor_accept(&c, key) && !cursor_eof(&c) && *c.p == ' ')
            return cursor_u64(&c, out);
        cursor_next_line(&c);
    }
    return -ENOENT;
}

int parse_u64_or_max(const char *buf, size_t len, uint64_t *out)
{
    struct cursor c;
    cursor_init(&c, buf, len);
    if (cursor_accept(&c, "max")) {
        *out = UINT64_MAX;
        return 0;
    }
    return cursor_u64(&c, out);
}
