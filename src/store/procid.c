#include "store/procid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "common/cursor.h"

/* include/linux/proc_ns.h, PROC_PID_INIT_INO: the initial pid namespace's
 * inode is fixed; every namespace created later gets one from 0xF0000000. */
#define PID_NS_INIT_INO 0xEFFFFFFCu

#define PROC_FILE_MAX 4096 /* a process's stat, and the start of its status */

/* Read the small /proc file dir/name into buf (cap bytes; what does not fit
 * is left out), NUL-terminated. Its length, or -errno. */
static ssize_t read_small(const char *dir, const char *name, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, cap - 1);
    int e = errno;
    close(fd);
    if (n < 0)
        return -e;
    buf[n] = '\0';
    return n;
}

/* The inode of dir/ns/NAME, a namespace's identity. 0 or -errno (-EACCES
 * for another user's process: namespaces are shown to who may ptrace it). */
static int ns_inode(const char *dir, const char *name, int64_t *ino)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "%s/ns/%s", dir, name);
    if (stat(path, &st) < 0)
        return -errno;
    *ino = (int64_t)st.st_ino;
    return 0;
}

/* proc(5) dir/stat: field 3, state, and field 22, starttime (clock ticks
 * after boot). comm, field 2, may hold anything: fields count from its last
 * ')'. 0, or -errno (-ENOENT: no such process, or one hidden by hidepid). */
static int read_stat(const char *dir, char *state, int64_t *start_ticks)
{
    char buf[PROC_FILE_MAX];
    ssize_t n = read_small(dir, "stat", buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    const char *rparen = strrchr(buf, ')');
    if (!rparen)
        return -EINVAL;
    struct cursor c;
    cursor_init(&c, rparen + 1, (size_t)(buf + n - (rparen + 1)));
    const char *word;
    size_t len;
    if (cursor_word(&c, &word, &len) < 0 || cursor_skip_fields(&c, 22 - 4) < 0 ||
        cursor_i64(&c, start_ticks) < 0)
        return -EINVAL;
    *state = word[0];
    return 0;
}

/* proc(5) dir/status, NSpid: the process's pid in each pid namespace from
 * the one of this /proc down to its own; the last is its own, and levels
 * says how many there are (1: it is in this /proc's namespace). 0 or
 * -errno. */
static int read_nspid(const char *dir, int64_t *pid, int *levels)
{
    char buf[PROC_FILE_MAX]; /* NSpid comes early: a cut tail does not matter */
    ssize_t n = read_small(dir, "status", buf, sizeof(buf));
    if (n < 0)
        return (int)n;
    struct cursor c;
    cursor_init(&c, buf, (size_t)n);
    if (cursor_find_key(&c, "NSpid:") < 0 || cursor_i64(&c, pid) < 0)
        return -ENOSYS; /* kernels before 4.1 have no NSpid */
    for (*levels = 1; cursor_i64(&c, pid) == 0; ++*levels)
        ;
    return 0;
}

void procid_self(struct procid *out)
{
    memset(out, 0, sizeof(*out));
    out->start_ticks = -1;
    char buf[64], state;
    if (read_small("/proc/sys/kernel/random", "boot_id", buf, sizeof(buf)) >= PROCID_BOOT_ID_LEN)
        cursor_copy_span(out->boot_id, sizeof(out->boot_id), buf, PROCID_BOOT_ID_LEN);
    (void)ns_inode("/proc/self", "pid", &out->pid_ns);
    (void)ns_inode("/proc/self", "time", &out->time_ns);
    (void)read_stat("/proc/self", &state, &out->start_ticks);
}

/* Whether /proc is the caller's pid namespace's: a /proc mounted from
 * another (unshare -p without --mount-proc) numbers processes otherwise. */
static int proc_is_own(void)
{
    char link[32], want[32];
    ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);
    if (n < 0)
        return 0;
    link[n] = '\0';
    snprintf(want, sizeof(want), "%ld", (long)getpid());
    return strcmp(link, want) == 0;
}

/* Whether the process at dir (which has the pid) is the one id names. */
static enum procid_state same_start(const struct procid *id, const struct procid *self,
                                    const char *dir)
{
    char state;
    int64_t ticks;
    if (read_stat(dir, &state, &ticks) < 0)
        return PROCID_UNKNOWN; /* hidden (hidepid), or exited just now */
    if (state == 'Z' || state == 'X')
        return PROCID_GONE; /* it died; its parent has not reaped it yet */
    if (id->time_ns != self->time_ns)
        return PROCID_UNKNOWN; /* starttime is shifted by the reader's time namespace */
    return ticks == id->start_ticks ? PROCID_ALIVE : PROCID_GONE;
}

/* The recorder ran in the caller's pid namespace: its pid means the same. */
static enum procid_state check_here(const struct procid *id, const struct procid *self, int64_t pid)
{
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return PROCID_GONE;
    char dir[32];
    snprintf(dir, sizeof(dir), "/proc/%lld", (long long)pid);
    return same_start(id, self, dir);
}

static int is_pid_name(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* What a look through every process in /proc found of id's namespace. */
struct ns_scan {
    int seen_ns;             /* some process is in it */
    int blind;               /* some process could not be looked at */
    int found;               /* the pid is in it: state says what it is */
    enum procid_state state; /* when found */
};

static void scan_one(struct ns_scan *sc, const struct procid *id, const struct procid *self,
                     int64_t pid, const char *name)
{
    char dir[32];
    int64_t ino = 0, own_pid = 0;
    int levels = 0;
    snprintf(dir, sizeof(dir), "/proc/%.20s", name); /* a pid has at most 10 digits */
    int rc = ns_inode(dir, "pid", &ino);
    if (rc == -EACCES && read_nspid(dir, &own_pid, &levels) == 0 && levels == 1)
        return; /* one we may not inspect (pid 1, often) but in our namespace, not id's */
    if (rc == 0 && ino == id->pid_ns) {
        sc->seen_ns = 1;
        rc = read_nspid(dir, &own_pid, &levels);
        if (rc == 0 && own_pid == pid) {
            sc->found = 1;
            sc->state = same_start(id, self, dir);
        }
    }
    if (rc < 0 && rc != -ENOENT) /* ENOENT: it exited while we looked; else cannot tell */
        sc->blind = 1;
}

/* Whether /proc hides other users' processes from the caller (proc(5),
 * hidepid=1 or 2: mounted with hidepid=, not 0 or off; root sees them). */
static int proc_hides_processes(void)
{
    char line[1024];
    int hides = 0;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return 1;
    while (!hides && fgets(line, sizeof(line), f)) {
        const char *opt = strstr(line, " - proc ");
        if (opt && strstr(line, " /proc ") && (opt = strstr(opt, "hidepid=")))
            hides = strncmp(opt, "hidepid=0", 9) != 0 && strncmp(opt, "hidepid=off", 11) != 0;
    }
    fclose(f);
    return hides && geteuid() != 0;
}

/*
 * The recorder ran in another pid namespace: look for it there. Only a
 * caller in an ancestor namespace sees that namespace's processes, all of
 * them; the initial one is everyone's ancestor, so from there a namespace
 * without a process has ended, and the recorder with it. A process the
 * caller may not inspect, or may not see at all (hidepid), could be it.
 */
static enum procid_state check_in_namespace(const struct procid *id, const struct procid *self,
                                            int64_t pid)
{
    if (proc_hides_processes())
        return PROCID_UNKNOWN;
    DIR *d = opendir("/proc");
    if (!d)
        return PROCID_UNKNOWN;
    struct ns_scan sc = {0, 0, 0, PROCID_UNKNOWN};
    struct dirent *e;
    while (!sc.found && (e = readdir(d)) != NULL)
        if (is_pid_name(e->d_name))
            scan_one(&sc, id, self, pid, e->d_name);
    closedir(d);
    if (sc.found)
        return sc.state;
    if (sc.blind)
        return PROCID_UNKNOWN;
    if (sc.seen_ns || self->pid_ns == (int64_t)PID_NS_INIT_INO)
        return PROCID_GONE;
    return PROCID_UNKNOWN;
}

/* A run recorded before the identity was (or where it could not be read):
 * the pid alone, on the same host. Pid reuse makes this say running. */
static enum procid_state check_pid_only(int64_t pid, int same_host)
{
    if (same_host && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        return PROCID_GONE;
    return PROCID_UNKNOWN;
}

enum procid_state procid_check(const struct procid *id, int64_t pid, int same_host)
{
    struct procid self;
    procid_self(&self);
    if (!id->boot_id[0] || !self.boot_id[0])
        return check_pid_only(pid, same_host);
    if (strcmp(id->boot_id, self.boot_id) != 0) /* another kernel: rebooted, or another host */
        return same_host ? PROCID_GONE : PROCID_UNKNOWN;
    if (!id->pid_ns || id->start_ticks < 0 || !self.pid_ns || !proc_is_own())
        return check_pid_only(pid, same_host);
    if (id->pid_ns == self.pid_ns)
        return check_here(id, &self, pid);
    return check_in_namespace(id, &self, pid);
}
