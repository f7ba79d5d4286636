#include "record/torch_profile.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/strbuf.h"
#include "import/torch_trace.h"

static int parse_u32(const char *s, const char *end, uint32_t *out)
{
    uint64_t v = 0;
    if (s == end)
        return -EINVAL;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || v > UINT32_MAX / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (v > UINT32_MAX)
        return -EINVAL;
    *out = (uint32_t)v;
    return 0;
}

int torch_profile_parse(const char *arg, uint32_t *first, uint32_t *last)
{
    const char *dash = strchr(arg, '-');
    const char *end = arg + strlen(arg);
    if (parse_u32(arg, dash ? dash : end, first) < 0)
        return -EINVAL;
    if (!dash)
        *last = *first;
    else if (parse_u32(dash + 1, end, last) < 0)
        return -EINVAL;
    return *first >= 1 && *last >= *first ? 0 : -EINVAL;
}

int torch_profile_open(struct torch_profile *tp, const char *arg)
{
    uint32_t a, b;
    memset(tp, 0, sizeof(*tp));
    if (arg && torch_profile_parse(arg, &a, &b) < 0)
        return -EINVAL; /* cmd_run checked it already */
    if (arg)
        snprintf(tp->spec, sizeof(tp->spec), "%u-%u", a, b);
    const char *tmp = getenv("TMPDIR");
    snprintf(tp->dir, sizeof(tp->dir), "%s/strobe-torch-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tp->dir)) {
        int err = errno;
        log_warn("%s is off: cannot make a directory in %s: %s",
                 arg ? "--torch-profile" : "strobe ctl torch-profile", tmp && *tmp ? tmp : "/tmp",
                 strerror(err));
        tp->dir[0] = '\0';
        return -err;
    }
    return 0;
}

/* The pid in "torch-<pid>.json" or "torch-<pid>-<seq>.json" (a window
 * strobe ctl opened), or -1 when the name is not one of ours. */
static int64_t trace_pid(const char *name)
{
    const char *p = name + 6, *dot = strstr(name, ".json");
    if (strncmp(name, "torch-", 6) != 0 || !dot || dot[5] != '\0' || dot == p)
        return -1;
    const char *dash = memchr(p, '-', (size_t)(dot - p));
    if (dash) { /* the window's number: digits, checked as the pid's are */
        for (const char *q = dash + 1; q < dot; q++)
            if (*q < '0' || *q > '9')
                return -1;
        if (dash + 1 == dot || dash == p)
            return -1;
        dot = dash;
    }
    int64_t pid = 0;
    for (; p < dot; p++) {
        if (*p < '0' || *p > '9' || pid > INT32_MAX)
            return -1;
        pid = pid * 10 + (*p - '0');
    }
    return pid;
}

static void import_one(struct torch_profile *tp, struct store *s, struct run_record *r,
                       const char *name, int64_t pid, int quiet)
{
    struct strbuf path, err, line;
    strbuf_init(&path);
    strbuf_init(&err);
    strbuf_init(&line);
    strbuf_addf(&path, "%s/%s", tp->dir, name);
    struct torch_trace_result res;
    if (torch_trace_import(s, r, path.buf, pid, &res, &err) < 0) {
        log_warn("--torch-profile: cannot import the trace of process %lld: %s", (long long)pid,
                 err.buf);
    } else {
        torch_trace_warning(&res, name, &line);
        if (line.len)
            log_warn("--torch-profile: %s", line.buf);
        if (!quiet)
            log_note("torch.profiler: %llu events of steps %u-%u of process %lld imported "
                     "(aligned by %llu ProfilerStep markers)",
                     (unsigned long long)res.imported, res.step_min, res.step_max,
                     (long long)res.pid, (unsigned long long)res.markers_matched);
    }
    strbuf_release(&line);
    strbuf_release(&err);
    strbuf_release(&path);
}

void torch_profile_import(struct torch_profile *tp, struct store *s, struct run_record *r,
                          int quiet)
{
    if (!tp->dir[0])
        return;
    DIR *d = opendir(tp->dir);
    if (!d) {
        log_warn("--torch-profile: cannot read %s: %s", tp->dir, strerror(errno));
        return;
    }
    int found = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        int64_t pid = trace_pid(de->d_name);
        if (pid < 0)
            continue;
        found++;
        import_one(tp, s, r, de->d_name, pid, quiet);
    }
    closedir(d);
    if (!found && tp->spec[0])
        log_warn("--torch-profile %s: the job wrote no trace (it ran fewer steps, or does not "
                 "use PyTorch)",
                 tp->spec);
}

/* $STROBE_KEEP_TORCH_TRACES names a directory that keeps torch.profiler's
 * own files (for TensorBoard, or to compare sizes): moved there, not
 * removed. Same file system only; elsewhere they are removed with a warning. */
static void keep_or_remove(const char *path, const char *name)
{
    const char *keep = getenv("STROBE_KEEP_TORCH_TRACES");
    if (keep && *keep) {
        char dest[4400];
        snprintf(dest, sizeof(dest), "%s/%s", keep, name);
        if (rename(path, dest) == 0)
            return;
        log_warn("--torch-profile: cannot keep %s in %s: %s", name, keep, strerror(errno));
    }
    unlink(path);
}

void torch_profile_close(struct torch_profile *tp)
{
    if (!tp->dir[0])
        return;
    DIR *d = opendir(tp->dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            char path[4400];
            snprintf(path, sizeof(path), "%s/%s", tp->dir, de->d_name);
            keep_or_remove(path, de->d_name);
        }
        closedir(d);
    }
    rmdir(tp->dir);
    tp->dir[0] = '\0';
}
