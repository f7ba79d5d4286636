#include "common/array.h"
#include "record/runinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/version.h"
#include "sample/pfile.h"
#include "store/procid.h"

#define PROBE_TIMEOUT_MS 3000
#define CAPTURE_MAX      (64 * 1024)
#define NAME_MAX_BYTES   200

extern char **environ;

void runinfo_new_id(char id[RUN_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[RUN_ID_LEN / 2];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
        /* no entropy source: time and pid still make a collision unlikely */
        uint64_t x = (uint64_t)clock_realtime_ns() ^ ((uint64_t)getpid() << 40);
        for (size_t i = 0; i < sizeof(raw); i++, x >>= 8)
            raw[i] = (unsigned char)x;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        id[2 * i] = hex[raw[i] >> 4];
        id[2 * i + 1] = hex[raw[i] & 15];
    }
    id[RUN_ID_LEN] = '\0';
}

int runinfo_check_name(const char *what, const char *name, struct strbuf *why)
{
    size_t n = strlen(name);
    if (n == 0 || n > NAME_MAX_BYTES) {
        strbuf_addf(why, "%s: must be 1 to %d bytes long (got %zu)", what, NAME_MAX_BYTES, n);
        return -EINVAL;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            strbuf_addf(why, "%s: must not contain control characters (byte 0x%02x at %zu)", what,
                        *p, (size_t)((const char *)p - name));
            return -EINVAL;
        }
    return 0;
}

/* In the child: stdin from in_fd (or /dev/null), stdout (and stderr when
 * asked) to out_fd, the extra variables set, then argv. */
static void child_exec(char *const argv[], const struct capture_opts *o, int in_fd, int out_fd)
{
    int devnull = open("/dev/null", O_RDWR);
    dup2(in_fd >= 0 ? in_fd : devnull, STDIN_FILENO);
    dup2(o->with_stderr ? out_fd : devnull, STDERR_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    if (o->cwd && chdir(o->cwd) < 0)
        _exit(127);
    for (const char *const *e = o->env_add; e && *e; e++)
        putenv((char *)*e);
    execvp(argv[0], argv);
    _exit(127);
}

/* Read the child's output into out until it closes it or the deadline. 1
 * when the deadline passed. */
static int capture_output(int fd, int64_t deadline, struct strbuf *out)
{
    for (;;) {
        int64_t left_ms = (deadline - clock_monotonic_ns()) / NS_PER_MS;
        if (left_ms <= 0)
            return 1;
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)left_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 1;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return 0;
        if (out->len + (size_t)n <= CAPTURE_MAX)
            strbuf_add(out, buf, (size_t)n);
    }
}

int run_capture_opts(char *const argv[], const struct capture_opts *o, struct strbuf *out)
{
    int fds[2], in[2] = {-1, -1};
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    if (o->stdin_text && pipe2(in, O_CLOEXEC) < 0) {
        int err = -errno;
        close(fds[0]);
        close(fds[1]);
        return err;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int err = -errno;
        close(fds[0]);
        close(fds[1]);
        if (in[0] >= 0) {
            close(in[0]);
            close(in[1]);
        }
        return err;
    }
    if (pid == 0)
        child_exec(argv, o, in[0], fds[1]);
    close(fds[1]);
    if (in[0] >= 0) { /* a few lines at most: the pipe holds them */
        close(in[0]);
        size_t len = strlen(o->stdin_text);
        if (write(in[1], o->stdin_text, len) != (ssize_t)len) {
            /* the tool did not read its input: its status says the rest */
        }
        close(in[1]);
    }
    int timed_out = capture_output(fds[0], clock_monotonic_ns() + o->timeout_ms * NS_PER_MS, out);
    close(fds[0]);
    if (timed_out)
        kill(pid, SIGKILL);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (timed_out)
        return -ETIMEDOUT;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

int run_capture(char *const argv[], const char *cwd, int timeout_ms, struct strbuf *out)
{
    struct capture_opts o = {.cwd = cwd, .timeout_ms = timeout_ms};
    return run_capture_opts(argv, &o, out);
}

static void chomp(struct strbuf *sb)
{
    while (sb->len && (sb->buf[sb->len - 1] == '\n' || sb->buf[sb->len - 1] == ' '))
        sb->buf[--sb->len] = '\0';
}

static char *first_line(const char *s)
{
    size_t n = strcspn(s, "\n");
    return n ? strndup(s, n) : NULL;
}

static void collect_git(struct run_record *r)
{
    struct strbuf out;
    strbuf_init(&out);
    char *head[] = {"git", "rev-parse", "--verify", "-q", "HEAD", NULL};
    if (run_capture(head, r->cwd, PROBE_TIMEOUT_MS, &out) == 0) {
        chomp(&out);
        if (out.len)
            r->git_commit = strdup(out.buf);
        strbuf_reset(&out);
        /* tracked files only: untracked ones (outputs, checkpoints) would
         * make every training directory dirty */
        char *status[] = {"git", "status", "--porcelain", "--untracked-files=no", NULL};
        int rc = run_capture(status, r->cwd, PROBE_TIMEOUT_MS, &out);
        r->git_dirty = rc == 0 ? out.len > 0 : -1;
    }
    strbuf_release(&out);
}

int runinfo_is_python(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    return strncmp(base, "python", 6) == 0;
}

/* Ask the job's interpreter for its version and torch's, without importing
 * torch (seconds): package metadata is enough. The answer is one marked
 * line: a sitecustomize of the user's may print too. */
#define PROBE_MARK "strobe-probe:"

/* The interpreter's versions, and its installed packages ("name==version"
 * lines, sorted) for the run's texts: one interpreter start for both. */
static void collect_python(struct run_record *r, const char *python, struct kv_list *texts)
{
    static const char probe[] =
        "import platform, importlib.metadata as m\n"
        "try: t = m.version('torch')\n"
        "except Exception: t = ''\n"
        "try: p = sorted({'%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions()"
        " if d.metadata['Name']}, key=str.lower)\n"
        "except Exception: p = []\n"
        "print('\\n" PROBE_MARK "', platform.python_version(), t)\n"
        "print('\\n'.join(p))\n";
    char *argv[] = {(char *)python, "-c", (char *)probe, NULL};
    struct strbuf out;
    strbuf_init(&out);
    if (run_capture(argv, r->cwd, PROBE_TIMEOUT_MS, &out) == 0) {
        const char *line = strstr(out.buf, "\n" PROBE_MARK " ");
        if (line) {
            line += sizeof(PROBE_MARK) + 1;
            char *ans = first_line(line);
            char *space = ans ? strchr(ans, ' ') : NULL;
            if (space) {
                *space = 0;
                if (space[1])
                    r->torch_version = strdup(space + 1);
            }
            r->python_version = ans;
            const char *packages = strchr(line, '\n');
            if (packages && packages[1])
                kv_list_add(texts, "packages", packages + 1);
        }
    }
    strbuf_release(&out);
}

/* The machine as its own tools describe it: lscpu, and nvidia-smi -q where
 * an NVIDIA driver is installed (its absence is not worth a warning). */
static void collect_machine_texts(const char *cwd, struct kv_list *texts)
{
    static char *const lscpu[] = {"lscpu", NULL};
    static char *const smi[] = {"nvidia-smi", "-q", NULL};
    struct {
        const char *kind;
        char *const *argv;
    } tools[] = {{"lscpu", lscpu}, {"nvidia-smi", smi}};
    struct strbuf out;
    strbuf_init(&out);
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
        strbuf_reset(&out);
        if (run_capture(tools[i].argv, cwd, PROBE_TIMEOUT_MS, &out) == 0 && out.len)
            kv_list_add(texts, tools[i].kind, out.buf);
    }
    strbuf_release(&out);
}

/* Set key to value in l, replacing an earlier value: the last of a
 * repeated --key is the one argparse keeps. */
static int kv_list_set(struct kv_list *l, const char *key, const char *value)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].key, key) == 0) {
            char *v = strdup(value);
            if (!v)
                return -ENOMEM;
            free(l->items[i].value);
            l->items[i].value = v;
            return 0;
        }
    return kv_list_add(l, key, value);
}

/* Keep the script's parameter key=value unless --param gave the key, or it
 * breaks the rule --param is held to (1 to 200 bytes, no control
 * characters): then one note says so, and the run lacks it rather than
 * holding a value --param could not have given. */
static void keep_command_param(struct run_record *r, const char *key, const char *value)
{
    if (kv_list_get(&r->params, key))
        return;
    struct strbuf why, shown;
    strbuf_init(&why);
    strbuf_init(&shown);
    if (runinfo_check_name("key", key, &why) < 0 || runinfo_check_name("value", value, &why) < 0) {
        strbuf_add_visible(&shown, key); /* the job's words, on the user's terminal */
        log_note("script parameter --%.*s not kept: %s", 64, shown.buf, why.buf);
    } else {
        kv_list_add(&r->params, key, value);
    }
    strbuf_release(&shown);
    strbuf_release(&why);
}

/*
 * The script's own parameters, as radT takes them: --key value, --key=value
 * and a bare --flag (true) after the script of a Python command
 * (python [-opts] script.py ARGS, or -m module ARGS; -c code has none).
 * Parameters given with --param win.
 */
static void collect_command_params(struct run_record *r, char *const argv[])
{
    int i = 1;
    for (; argv[i] && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "-c") == 0)
            return;
        if (strcmp(argv[i], "-m") == 0 || strcmp(argv[i], "-W") == 0 ||
            strcmp(argv[i], "-X") == 0) {
            if (!argv[++i])
                return;
            if (strcmp(argv[i - 1], "-m") == 0)
                break;
        }
    }
    if (!argv[i])
        return;
    struct kv_list found = {0};
    for (i++; argv[i]; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0 || !a[2] || a[2] == '-')
            continue;
        const char *eq = strchr(a + 2, '=');
        char *key = strndup(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
        const char *value = eq ? eq + 1 : "true";
        if (!eq && argv[i + 1] && strncmp(argv[i + 1], "--", 2) != 0)
            value = argv[++i];
        if (key)
            kv_list_set(&found, key, value);
        free(key);
    }
    for (size_t k = 0; k < found.n; k++)
        keep_command_param(r, found.items[k].key, found.items[k].value);
    kv_list_release(&found);
}

/* Environment that changes what a training job does; secrets excluded. */
static int env_wanted(const char *name, size_t len)
{
    static const char *const exact[] = {
        "CUDA_VISIBLE_DEVICES",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "GROUP_RANK",
        "NODE_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "SLURM_JOB_ID",
        "SLURM_PROCID",
        "PYTHONHASHSEED",
        "VIRTUAL_ENV",
    };
    static const char *const prefixes[] = {"NCCL_", "PYTORCH_", "TORCH_", "CUDA_",  "OMP_",
                                           "KMP_",  "MKL_",     "HF_",    "STROBE_"};
    static const char *const secret[] = {"TOKEN", "SECRET", "PASSWORD", "KEY", "CREDENTIAL"};
    char buf[128];
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(secret); i++)
        if (strstr(buf, secret[i]))
            return 0;
    for (size_t i = 0; i < ARRAY_SIZE(exact); i++)
        if (strcmp(buf, exact[i]) == 0)
            return 1;
    for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
        if (strncmp(buf, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

static void collect_env(struct run_record *r)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !env_wanted(*e, (size_t)(eq - *e)))
            continue;
        char *key = strndup(*e, (size_t)(eq - *e));
        /* STROBE_STORE may be a URI with a password in it: kept without */
        struct strbuf value;
        strbuf_init(&value);
        store_uri_redact(eq + 1, &value);
        if (key && !strbuf_failed(&value))
            kv_list_add(&r->env, key, value.buf);
        strbuf_release(&value);
        free(key);
    }
}

static void collect_machine(struct run_record *r, const char *proc_root)
{
    struct utsname u;
    if (uname(&u) == 0) {
        r->host = strdup(u.nodename);
        r->kernel = strdup(u.release);
    }
    r->cpu_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    r->mem_total_bytes = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/cpuinfo", proc_root);
    struct pfile f = PFILE_INIT;
    if (pfile_read_once(&f, AT_FDCWD, path) == 0) {
        const char *m = strstr(f.buf, "model name");
        const char *colon = m ? strchr(m, ':') : NULL;
        if (colon) {
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            r->cpu_model = first_line(colon);
        }
    }
    pfile_release(&f);
    struct passwd *pw = getpwuid(getuid());
    r->user = strdup(pw ? pw->pw_name : "unknown");
}

static void collect_command(struct run_record *r, char *const argv[])
{
    struct strbuf sb;
    strbuf_init(&sb);
    struct json_writer jw;
    jw_init(&jw, &sb);
    jw_array_begin(&jw);
    for (int i = 0; argv[i]; i++)
        jw_str(&jw, argv[i]);
    jw_end(&jw);
    r->command_json = strbuf_detach(&sb); /* NULL when out of memory: no command */
}

int runinfo_collect(struct run_record *r, char *const argv[], const char *proc_root,
                    struct kv_list *texts)
{
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)))
        r->cwd = strdup(cwd);
    collect_machine(r, proc_root);
    collect_command(r, argv);
    collect_env(r);
    collect_git(r);
    if (runinfo_is_python(argv[0])) {
        collect_python(r, argv[0], texts);
        collect_command_params(r, argv);
    }
    collect_machine_texts(r->cwd, texts);
    r->strobe_version = strdup(STROBE_VERSION);
    r->recorder_pid = getpid();
    procid_self(&r->recorder); /* readers tell this process from a later one with its pid */
    return 0;
}
