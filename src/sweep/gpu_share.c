#include "sweep/gpu_share.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/runinfo.h"

/* Run an NVIDIA tool with extra variables and stdin text: its exit status,
 * with stdout and stderr in out; negative when it could not run. */
static int tool(char *const argv[], const char *const *env, const char *input, struct strbuf *out)
{
    struct capture_opts o = {
        .env_add = env, .stdin_text = input, .with_stderr = 1, .timeout_ms = GPU_TOOL_TIMEOUT_MS};
    strbuf_reset(out);
    return run_capture_opts(argv, &o, out);
}

/* One line of a tool's output, for a message: the first that is not blank
 * and does not report a success (nvidia-smi mig -cgi -C says "Successfully
 * created GPU instance" before it says why the compute instance failed);
 * else the first that is not blank. */
static const char *first_words(const struct strbuf *out, char *buf, size_t cap)
{
    const char *text = out->buf ? out->buf : "", *first = NULL;
    for (const char *p = text; *p;) {
        while (*p == '\n' || *p == ' ')
            p++;
        size_t len = strcspn(p, "\n");
        if (len && !first)
            first = p;
        if (len && strncmp(p, "Successfully", 12) != 0) {
            snprintf(buf, cap, "%.*s", (int)len, p);
            return buf;
        }
        p += len;
    }
    if (!first)
        return "no output";
    snprintf(buf, cap, "%.*s", (int)strcspn(first, "\n"), first);
    return buf;
}

static void tool_failed(struct strbuf *why, const char *what, int rc, const struct strbuf *out)
{
    char line[200];
    if (rc == 127 || rc == -ENOENT)
        strbuf_addf(why, "%s: not installed (not on PATH)", what);
    else if (rc < 0)
        strbuf_addf(why, "%s: %s", what, rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
    else
        strbuf_addf(why, "%s exited with %d: %s", what, rc, first_words(out, line, sizeof(line)));
}

int gpu_have_command(const char *name)
{
    if (strchr(name, '/'))
        return access(name, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, ":");
        char full[4096];
        if (snprintf(full, sizeof(full), "%.*s/%s", (int)n, n ? p : ".", name) <
                (int)sizeof(full) &&
            access(full, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

static int push_id(char ***ids, size_t *n, const char *id, size_t len)
{
    char **grown = realloc(*ids, (*n + 2) * sizeof(**ids));
    if (!grown)
        return -ENOMEM;
    *ids = grown;
    if (!(grown[*n] = strndup(id, len)))
        return -ENOMEM;
    grown[++*n] = NULL;
    return 0;
}

/* The UUID in "... (UUID: X)" on one line, its length in *len. */
static const char *uuid_of(const char *line, size_t line_len, size_t *len)
{
    const char *u = memmem(line, line_len, "UUID: ", 6);
    if (!u)
        return NULL;
    u += 6;
    *len = strcspn(u, ")\n");
    return u;
}

/* Each GPU's index and UUID and each MIG device's UUID from `-L`. */
static int parse_list(const char *text, char ***ids, size_t *n)
{
    for (const char *line = text; *line;) {
        size_t len = strcspn(line, "\n"), ulen = 0;
        unsigned index;
        int used = 0;
        if (sscanf(line, "GPU %u:%n", &index, &used) == 1 && used) {
            char num[16];
            int k = snprintf(num, sizeof(num), "%u", index);
            if (push_id(ids, n, num, (size_t)k) < 0)
                return -ENOMEM;
        }
        const char *u = uuid_of(line, len, &ulen);
        if (u && ulen && push_id(ids, n, u, ulen) < 0)
            return -ENOMEM;
        line += len + (line[len] == '\n');
    }
    return 0;
}

/* `nvidia-smi -L` into out (released on failure). 0, or -1 with why. */
static int list_gpus(struct strbuf *out, struct strbuf *why)
{
    char *argv[] = {"nvidia-smi", "-L", NULL};
    int rc = tool(argv, NULL, NULL, out);
    if (rc == 0)
        return 0;
    tool_failed(why, "nvidia-smi -L", rc, out);
    strbuf_release(out);
    return -1;
}

int gpu_uuids_join(const char *const *devices, struct strbuf *out, struct strbuf *why)
{
    struct strbuf list;
    strbuf_init(&list);
    int rc = list_gpus(&list, why);
    if (rc < 0)
        return -1;
    strbuf_reset(out);
    for (size_t i = 0; devices[i] && rc == 0; i++) {
        const char *d = devices[i], *uuid = NULL;
        size_t ulen = 0;
        if (strncmp(d, "GPU-", 4) == 0 || strncmp(d, "MIG-", 4) == 0) {
            uuid = d;
            ulen = strlen(d);
        }
        /* "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)" */
        for (const char *line = list.buf ? list.buf : ""; !uuid && *line;) {
            size_t len = strcspn(line, "\n");
            unsigned index;
            char num[16];
            if (sscanf(line, "GPU %u:", &index) == 1 &&
                snprintf(num, sizeof(num), "%u", index) > 0 && strcmp(num, d) == 0)
                uuid = uuid_of(line, len, &ulen);
            line += len + (line[len] == '\n');
        }
        if (!uuid || !ulen) {
            strbuf_addf(why, "nvidia-smi -L lists no GPU %s", d);
            rc = -1;
        } else {
            strbuf_addf(out, "%s%.*s", i ? "," : "", (int)ulen, uuid);
        }
    }
    if (rc == 0 && strbuf_failed(out)) {
        strbuf_adds(why, "out of memory");
        rc = -1;
    }
    strbuf_release(&list);
    return rc;
}

char **gpu_ids_list(const char **why)
{
    char **ids = calloc(1, sizeof(*ids));
    size_t n = 0;
    *why = NULL;
    if (!ids)
        return NULL;
    if (!gpu_have_command("nvidia-smi")) {
        *why = "this machine has no GPU (nvidia-smi is not installed)";
        return ids;
    }
    struct strbuf out;
    strbuf_init(&out);
    char *argv[] = {"nvidia-smi", "-L", NULL};
    int rc = tool(argv, NULL, NULL, &out);
    if (rc != 0 || parse_list(out.buf ? out.buf : "", &ids, &n) < 0)
        *why = "nvidia-smi -L failed: no GPU can be named";
    else if (n == 0)
        *why = "nvidia-smi lists no GPU";
    strbuf_release(&out);
    return ids;
}

void gpu_ids_free(char **ids)
{
    for (char **p = ids; p && *p; p++)
        free(*p);
    free(ids);
}

/* ---- MPS ---- */

static int make_dir(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -errno;
}

int mps_start(struct mps_daemon *m, const char *base, const char *devices, struct strbuf *why)
{
    memset(m, 0, sizeof(*m));
    if (asprintf(&m->pipe_dir, "%s/pipe", base) < 0 || asprintf(&m->log_dir, "%s/log", base) < 0 ||
        !(m->devices = strdup(devices)) ||
        asprintf(&m->env[0], "CUDA_MPS_PIPE_DIRECTORY=%s", m->pipe_dir) < 0 ||
        asprintf(&m->env[1], "CUDA_MPS_LOG_DIRECTORY=%s", m->log_dir) < 0 ||
        asprintf(&m->env[2], "CUDA_VISIBLE_DEVICES=%s", devices) < 0) {
        strbuf_adds(why, "out of memory");
        return -1;
    }
    int err = make_dir(base);
    if (!err)
        err = make_dir(m->pipe_dir);
    if (!err)
        err = make_dir(m->log_dir);
    if (err) {
        strbuf_addf(why, "cannot make MPS folders under %s: %s", base, strerror(-err));
        return -1;
    }
    struct strbuf out;
    strbuf_init(&out);
    char *argv[] = {"nvidia-cuda-mps-control", "-d", NULL};
    int rc = tool(argv, (const char *const *)m->env, NULL, &out);
    if (rc != 0)
        tool_failed(why, "nvidia-cuda-mps-control -d", rc, &out);
    m->running = rc == 0;
    strbuf_release(&out);
    return rc == 0 ? 0 : -1;
}

int mps_stop(struct mps_daemon *m, struct strbuf *why)
{
    int rc = 0;
    if (m->running) {
        struct strbuf out;
        strbuf_init(&out);
        char *argv[] = {"nvidia-cuda-mps-control", NULL};
        rc = tool(argv, (const char *const *)m->env, "quit\n", &out);
        if (rc != 0)
            tool_failed(why, "nvidia-cuda-mps-control (quit)", rc, &out);
        strbuf_release(&out);
    }
    free(m->pipe_dir);
    free(m->log_dir);
    free(m->devices);
    for (size_t i = 0; i < 3; i++)
        free(m->env[i]);
    memset(m, 0, sizeof(*m));
    return rc == 0 ? 0 : -1;
}

/* ---- MIG ---- */

int mig_check(const char *device, struct strbuf *why)
{
    if (geteuid() != 0) {
        strbuf_addf(why,
                    "MIG slices of GPU %s need root (nvidia-smi mig): run strobe sweep as "
                    "root, or choose collocation '-' or 'MPS'",
                    device);
        return -1;
    }
    struct strbuf out;
    strbuf_init(&out);
    char *argv[] = {
        "nvidia-smi", "-i", (char *)device, "--query-gpu=mig.mode.current", "--format=csv,noheader",
        NULL};
    int rc = tool(argv, NULL, NULL, &out);
    if (rc != 0)
        tool_failed(why, "nvidia-smi --query-gpu=mig.mode.current", rc, &out);
    else if (!out.buf || strncmp(out.buf, "Enabled", 7) != 0)
        strbuf_addf(why,
                    "GPU %s is not in MIG mode: enable it with 'nvidia-smi -i %s -mig 1' "
                    "(as root, with no process on the GPU)",
                    device, device);
    int ok = rc == 0 && out.buf && strncmp(out.buf, "Enabled", 7) == 0;
    strbuf_release(&out);
    return ok ? 0 : -1;
}

/* The MIG UUIDs listed under GPU device (its index) in `-L` output. */
static int mig_uuids(const char *device, char ***ids, size_t *n, struct strbuf *why)
{
    struct strbuf out;
    strbuf_init(&out);
    int rc = list_gpus(&out, why);
    if (rc < 0)
        return -1;
    int under = 0;
    for (const char *line = out.buf ? out.buf : ""; *line && rc == 0;) {
        size_t len = strcspn(line, "\n"), ulen = 0;
        unsigned index;
        if (sscanf(line, "GPU %u:", &index) == 1) {
            char num[16];
            snprintf(num, sizeof(num), "%u", index);
            const char *u = uuid_of(line, len, &ulen);
            under = strcmp(num, device) == 0 ||
                    (u && strlen(device) == ulen && strncmp(u, device, ulen) == 0);
        } else if (under) {
            const char *u = uuid_of(line, len, &ulen);
            if (u && ulen > 4 && strncmp(u, "MIG-", 4) == 0 && push_id(ids, n, u, ulen) < 0)
                rc = -1;
        }
        line += len + (line[len] == '\n');
    }
    strbuf_release(&out);
    if (rc < 0)
        strbuf_adds(why, "out of memory");
    return rc;
}

static int listed(char **ids, const char *id)
{
    for (char **p = ids; p && *p; p++)
        if (strcmp(*p, id) == 0)
            return 1;
    return 0;
}

int mig_create(struct mig_slice *s, const char *device, const char *profile, struct strbuf *why)
{
    memset(s, 0, sizeof(*s));
    s->gpu_instance = -1;
    char **before = NULL, **after = NULL;
    size_t nb = 0, na = 0;
    if (mig_uuids(device, &before, &nb, why) < 0)
        return -1;
    struct strbuf out;
    strbuf_init(&out);
    char *argv[] = {"nvidia-smi", "mig", "-i", (char *)device, "-cgi", (char *)profile, "-C", NULL};
    int rc = tool(argv, NULL, NULL, &out);
    /* "Successfully created GPU instance ID  1 on GPU  0 using profile MIG
     * 3g.20gb (ID  9)", then the compute instance's line: the GPU
     * instance is read also when the compute instance failed, to be
     * destroyed */
    const char *gi = out.buf ? strstr(out.buf, "created GPU instance ID") : NULL;
    if (!gi || sscanf(gi, "created GPU instance ID %d", &s->gpu_instance) != 1)
        s->gpu_instance = -1;
    if (rc != 0)
        tool_failed(why, "nvidia-smi mig -cgi", rc, &out);
    else if (s->gpu_instance < 0) {
        strbuf_addf(why, "nvidia-smi mig -cgi %s: no GPU instance ID in its output", profile);
        rc = -1;
    }
    if (!(s->device = strdup(device)) && rc == 0) {
        strbuf_adds(why, "out of memory");
        rc = -1;
    }
    if (rc == 0 && mig_uuids(device, &after, &na, why) < 0)
        rc = -1;
    for (size_t i = 0; rc == 0 && i < na && !s->uuid; i++)
        if (!listed(before, after[i]))
            s->uuid = strdup(after[i]);
    if (rc == 0 && !s->uuid) {
        strbuf_addf(why, "nvidia-smi -L lists no new MIG device on GPU %s", device);
        rc = -1;
    }
    strbuf_release(&out);
    gpu_ids_free(before);
    gpu_ids_free(after);
    if (rc != 0) {
        struct strbuf ignored;
        strbuf_init(&ignored);
        mig_destroy(s, &ignored); /* leave the GPU as it was */
        strbuf_release(&ignored);
    }
    return rc == 0 ? 0 : -1;
}

int mig_destroy(struct mig_slice *s, struct strbuf *why)
{
    int rc = 0;
    if (s->device && s->gpu_instance >= 0) {
        char gi[16];
        snprintf(gi, sizeof(gi), "%d", s->gpu_instance);
        struct strbuf out;
        strbuf_init(&out);
        char *dci[] = {"nvidia-smi", "mig", "-i", s->device, "-dci", "-gi", gi, NULL};
        char *dgi[] = {"nvidia-smi", "mig", "-i", s->device, "-dgi", "-gi", gi, NULL};
        rc = tool(dci, NULL, NULL, &out);
        if (rc != 0)
            tool_failed(why, "nvidia-smi mig -dci", rc, &out);
        int rc2 = tool(dgi, NULL, NULL, &out);
        if (rc2 != 0) {
            if (why->len)
                strbuf_adds(why, "; ");
            tool_failed(why, "nvidia-smi mig -dgi", rc2, &out);
        }
        rc = rc ? rc : rc2;
        strbuf_release(&out);
    }
    free(s->device);
    free(s->uuid);
    memset(s, 0, sizeof(*s));
    s->gpu_instance = -1;
    return rc == 0 ? 0 : -1;
}

/* ---- device locks ---- */

/* The lock file's name for a device: its id, with anything but
 * [A-Za-z0-9-] as '_'. */
static void lock_path(const char *dir, const char *device, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/gpu-", dir);
    size_t at = n > 0 ? (size_t)n : 0;
    for (const char *p = device; *p && at + 6 < cap; p++) {
        char c = *p;
        int ok =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        buf[at++] = ok ? c : '_';
    }
    snprintf(buf + at, cap - at, ".lock");
}

static void holder_of(int fd, struct strbuf *why, const char *device)
{
    char text[256] = "";
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    text[strcspn(text, "\n")] = '\0';
    strbuf_addf(why, "GPU %s is held by %s", device, text[0] ? text : "another campaign");
}

/* The lock folder, made for every user (campaigns of several users share
 * the GPUs): sticky and world-writable, as /tmp is. */
static int lock_dir_make(const char *dir)
{
    if (mkdir(dir, 01777) == 0)
        return chmod(dir, 01777) == 0 ? 0 : -errno; /* past the umask */
    return errno == EEXIST ? 0 : -errno;
}

/* A device's lock file, made for every user when it is new. Opened
 * without O_CREAT when it exists: in a sticky world-writable folder,
 * fs.protected_regular refuses O_CREAT on another user's file. Read-only
 * where it is not ours to write (flock needs no more). fd, or -errno. */
static int lock_open(const char *path)
{
    for (int tries = 0; tries < 3; tries++) {
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == EACCES)
            fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT)
            return fd >= 0 ? fd : -errno;
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            if (fchmod(fd, 0666) < 0) {
                /* others may only read it: flock still works for them */
            }
            return fd;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EAGAIN;
}

int device_locks_take(const char *lock_dir, const char *const *devices, const char *const *ids,
                      int shared, int *out, struct strbuf *why)
{
    size_t n = 0;
    while (devices[n])
        n++;
    for (size_t i = 0; i < n; i++)
        out[i] = -1;
    int err = n ? lock_dir_make(lock_dir) : 0;
    if (err < 0) {
        strbuf_addf(why, "cannot make the lock folder %s: %s", lock_dir, strerror(-err));
        return err;
    }
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        lock_path(lock_dir, ids ? ids[i] : devices[i], path, sizeof(path));
        int fd = lock_open(path);
        if (fd < 0) {
            strbuf_addf(why, "cannot open the device lock %s: %s", path, strerror(-fd));
            device_locks_drop(out, n);
            return fd == -EAGAIN ? -EIO : fd;
        }
        if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
            int busy = errno == EWOULDBLOCK ? -EAGAIN : -errno;
            holder_of(fd, why, devices[i]);
            close(fd);
            device_locks_drop(out, n);
            return busy;
        }
        if (!shared) { /* who holds it, for the next campaign's message */
            char text[128];
            int len = snprintf(text, sizeof(text), "strobe sweep (pid %d)\n", (int)getpid());
            if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)len, 0) != len) {
                /* the lock holds without the note */
            }
        }
        out[i] = fd;
    }
    return 0;
}

void device_locks_drop(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
}
