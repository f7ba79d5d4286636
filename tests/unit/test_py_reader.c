/*
 * The CPython reader (src/pyprof/reader.h) against real interpreters:
 * the 3.11 offsets against offsetof() in the installed headers (a probe
 * compiled at test time), and stacks, lines, thread ids, states and the
 * GIL of /usr/bin/python3 children against what each child says of itself
 * (sys._current_frames, f_lineno, threading.get_native_id). Then what must
 * fail cleanly: a process that is not Python, one that exited, one that
 * cannot be read, and fake "pythons" (built here) with an old version or
 * garbage where the interpreter's structures should be.
 */
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "common/strbuf.h"
#include "fixture.h"
#include "pyprof/reader.h"
#include "pyprof/reader_layout.h"
#include "test.h"

#define PYTHON       "/usr/bin/python3"
#define PY_INCLUDE   "/usr/include/python3.11"
#define MAX_THREADS  16
#define NAME_MAX_LEN 64

/* ---- children ---- */

struct child {
    pid_t pid;
    FILE *out; /* its stdout */
    int in_fd; /* its stdin: closing it ends the Python scripts */
};

static void child_start(struct child *c, char *const argv[])
{
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        TEST_FAIL("pipe: %s", strerror(errno));
    c->pid = fork();
    if (c->pid < 0)
        TEST_FAIL("fork: %s", strerror(errno));
    if (c->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        setenv("PYTHONIOENCODING", "utf-8", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->in_fd = in[1];
    c->out = fdopen(out[0], "r");
}

/* The child's next line, without its newline; NULL at its end. */
static char *child_line(struct child *c, char *buf, size_t cap)
{
    if (!fgets(buf, (int)cap, c->out))
        return NULL;
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

static void child_stop(struct child *c)
{
    close(c->in_fd);
    kill(c->pid, SIGKILL);
    waitpid(c->pid, NULL, 0);
    fclose(c->out);
}

static void write_script(char *path, size_t cap, const char *name, const char *text)
{
    char dir[512];
    fixture_tmpdir(dir, sizeof(dir));
    chmod(dir, 0755);
    snprintf(path, cap, "%s/%s", dir, name);
    fixture_write_str(path, text);
}

static void compile(const char *src_path, const char *bin, const char *flags)
{
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "cc -std=gnu11 -w %s -o %s %s", flags, bin, src_path);
    if (system(cmd) != 0)
        TEST_FAIL("cannot compile: %s", cmd);
}

/* ---- the layout against the headers ---- */

static const char probe_src[] =
    "#define Py_BUILD_CORE 1\n"
    "#include <Python.h>\n"
    "#include <internal/pycore_runtime.h>\n"
    "#include <internal/pycore_frame.h>\n"
    "#include <internal/pycore_interp.h>\n"
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#define bit_of(f) ({ PyASCIIObject o_; memset(&o_, 0, sizeof o_); o_.state.f = 1;\\\n"
    "    unsigned u_; memcpy(&u_, &o_.state, 4); __builtin_ctz(u_); })\n"
    "int main(void)\n{\n"
#define PROBE_LINE(field, expr) "    printf(\"" #field " %d\\n\", (int)(" expr "));\n"
    PY_LAYOUT_FIELDS(PROBE_LINE)
#undef PROBE_LINE
        "    return 0;\n}\n";

static long layout_value(const struct py_layout *l, const char *field)
{
#define LAYOUT_VALUE(f, expr)                                                                      \
    if (strcmp(field, #f) == 0)                                                                    \
        return l->f;
    PY_LAYOUT_FIELDS(LAYOUT_VALUE)
#undef LAYOUT_VALUE
    return -1;
}

TEST(layout_311_matches_headers)
{
    if (access(PY_INCLUDE "/internal/pycore_frame.h", R_OK) != 0) {
        fprintf(stderr, "  note: no %s (python3.11-dev): layout not checked\n", PY_INCLUDE);
        return;
    }
    const struct py_layout *l = py_layout_find(3, 11);
    ASSERT(l != NULL);
    char src[600], bin[700], cmd[800], line[256];
    write_script(src, sizeof(src), "probe.c", probe_src);
    snprintf(bin, sizeof(bin), "%s.bin", src);
    compile(src, bin, "-I" PY_INCLUDE);
    snprintf(cmd, sizeof(cmd), "%s", bin);
    FILE *p = popen(cmd, "r");
    ASSERT(p != NULL);
    int checked = 0;
    while (fgets(line, sizeof(line), p)) {
        char field[64];
        int value;
        ASSERT_EQ_INT(sscanf(line, "%63s %d", field, &value), 2);
        if (layout_value(l, field) != value)
            TEST_FAIL("3.11 %s: table %ld, headers %d", field, layout_value(l, field), value);
        checked++;
    }
    ASSERT_EQ_INT(pclose(p), 0);
#define COUNT_FIELD(f, expr) +1
    ASSERT_EQ_INT(checked, 0 PY_LAYOUT_FIELDS(COUNT_FIELD));
#undef COUNT_FIELD
    ASSERT(py_layout_find(3, 9) == NULL);
}

/* ---- a Python child that knows its own stacks ---- */

/* Each thread stops in a known place; main prints each one's native id
 * and its stack as Python sees it, innermost first, then reads stdin.
 * leaf_sleep's sleep is far below its def: the location table has a long
 * entry there. */
static const char threads_py[] =
    "import os, sys, threading, time\n"
    "lock = threading.Lock()\n"
    "lock.acquire()\n"
    "r, w = os.pipe()\n"
    "tids, idents = {}, {}\n"
    "def nest(n, leaf):\n"
    "    if n == 0:\n"
    "        return leaf()\n"
    "    return nest(n - 1, leaf)\n"
    "def leaf_sleep():\n"
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
    "    time.sleep(1000)\n"
    "def schläfer():\n"
    "    nest(3, leaf_sleep)\n"
    "def 睡眠():\n"
    "    lock.acquire()\n"
    "def 𠀀():\n"
    "    os.read(r, 1)\n"
    "class Worker:\n"
    "    def spin(self):\n"
    "        x = 0\n"
    "        while True:\n"
    "            x += 1\n"
    "def deep(n):\n"
    "    if n == 0:\n"
    "        time.sleep(1000)\n"
    "    deep(n - 1)\n"
    "leaves = {'sleeper': 'leaf_sleep', 'locked': '睡眠', 'reader': '𠀀',\n"
    "          'busy': 'Worker.spin', 'deep': 'deep'}\n"
    "def run(name, fn):\n"
    "    def body():\n"
    "        tids[name] = threading.get_native_id()\n"
    "        idents[name] = threading.get_ident()\n"
    "        fn()\n"
    "    threading.Thread(target=body, daemon=True).start()\n"
    "run('sleeper', schläfer)\n"
    "run('locked', 睡眠)\n"
    "run('reader', 𠀀)\n"
    "run('busy', Worker().spin)\n"
    "run('deep', lambda: deep(300))\n"
    "def stack_of(f):\n"
    "    out = []\n"
    "    while f is not None:\n"
    "        out.append((f.f_code.co_qualname, f.f_code.co_filename, f.f_lineno))\n"
    "        f = f.f_back\n"
    "    return out\n"
    "while True:\n"
    "    frames = sys._current_frames()\n"
    "    if len(idents) == len(leaves) and all(\n"
    "            frames[idents[n]].f_code.co_qualname == q for n, q in leaves.items()):\n"
    "        break\n"
    "    time.sleep(0.01)\n"
    "for name in leaves:\n"
    "    print('T', name, tids[name])\n"
    "    for q, f, l in stack_of(frames[idents[name]]):\n"
    "        print('F', name, q, f, l, sep='\\t')\n"
    "import platform\n"
    "print('M', threading.get_native_id(), platform.python_version(), sys._getframe().f_lineno + "
    "2)\n"
    "print('ready', flush=True)\n"
    "sys.stdin.read()\n";

struct py_frame {
    char name[NAME_MAX_LEN * 2];
    char file[512];
    int line;
};

/* What the child said of one of its threads. */
struct told {
    char name[NAME_MAX_LEN];
    pid_t tid;
    int depth;
    struct py_frame frame[PY_STACK_MAX + 64];
};

struct told_all {
    struct told t[MAX_THREADS];
    int n;
    pid_t main_tid;
    int main_line;
    char version[32];
    char script[600];
};

static struct told *told_named(struct told_all *a, const char *name)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->t[i].name, name) == 0)
            return &a->t[i];
    TEST_FAIL("the child told nothing of thread %s", name);
}

static void told_frame(struct told_all *a, char *line)
{
    char *save = NULL;
    strtok_r(line, "\t", &save); /* "F" */
    struct told *t = told_named(a, strtok_r(NULL, "\t", &save));
    const char *q = strtok_r(NULL, "\t", &save), *f = strtok_r(NULL, "\t", &save);
    const char *l = strtok_r(NULL, "\t", &save);
    ASSERT(q && f && l && t->depth < (int)ARRAY_SIZE(t->frame));
    struct py_frame *fr = &t->frame[t->depth++];
    snprintf(fr->name, sizeof(fr->name), "%s", q);
    snprintf(fr->file, sizeof(fr->file), "%s", f);
    fr->line = atoi(l);
}

static struct told_all *start_threads_child(struct child *c)
{
    static struct told_all a;
    memset(&a, 0, sizeof(a));
    write_script(a.script, sizeof(a.script), "threads.py", threads_py);
    char *argv[] = {PYTHON, a.script, NULL};
    child_start(c, argv);
    char line[2048];
    while (child_line(c, line, sizeof(line)) && strcmp(line, "ready") != 0) {
        if (line[0] == 'T') {
            ASSERT(a.n < MAX_THREADS);
            int tid;
            ASSERT_EQ_INT(sscanf(line, "T %63s %d", a.t[a.n].name, &tid), 2);
            a.t[a.n++].tid = tid;
        } else if (line[0] == 'F') {
            told_frame(&a, line);
        } else if (line[0] == 'M') {
            int tid;
            ASSERT_EQ_INT(sscanf(line, "M %d %31s %d", &tid, a.version, &a.main_line), 3);
            a.main_tid = tid;
            ASSERT(a.n < MAX_THREADS); /* main, by name too: its state is waited for */
            snprintf(a.t[a.n].name, sizeof(a.t[a.n].name), "main");
            a.t[a.n++].tid = tid;
        }
    }
    ASSERT(strcmp(line, "ready") == 0);
    return &a;
}

/* What one sample of every thread gave. */
struct seen {
    struct py_thread_sample t[MAX_THREADS];
    int n;
};

static int collect(const struct py_thread_sample *t, void *arg)
{
    struct seen *s = arg;
    if (s->n < MAX_THREADS)
        s->t[s->n++] = *t;
    return 0;
}

static const struct py_thread_sample *seen_tid(const struct seen *s, pid_t tid)
{
    for (int i = 0; i < s->n; i++)
        if (s->t[i].tid == tid)
            return &s->t[i];
    return NULL;
}

static struct py_reader *open_reader(pid_t pid)
{
    struct strbuf why;
    strbuf_init(&why);
    struct py_reader *r = NULL;
    int rc = py_reader_open(pid, &r, &why);
    if (rc < 0)
        TEST_FAIL("py_reader_open: %d: %s", rc, why.buf);
    strbuf_release(&why);
    return r;
}

/* The threads child, started, and a reader on it. */
static struct py_reader *start_and_open(struct child *c, struct told_all **a)
{
    *a = start_threads_child(c);
    return open_reader(c->pid);
}

static void stop_and_close(struct child *c, struct py_reader *r)
{
    py_reader_close(r);
    child_stop(c);
}

static void sample(struct py_reader *r, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    int rc = py_reader_sample(r, 1, collect, s);
    if (rc < 0)
        TEST_FAIL("py_reader_sample: %d", rc);
}

/* Samples until every named thread is in its state (a thread may not yet
 * have entered its system call when Python's frame is in place). */
static void sample_until_states(struct py_reader *r, struct told_all *a, const char *const *names,
                                const uint8_t *states, int n, struct seen *s)
{
    for (int attempt = 0; attempt < 1000; attempt++) {
        sample(r, s);
        int ok = 1;
        for (int i = 0; i < n && ok; i++) {
            const struct py_thread_sample *t = seen_tid(s, told_named(a, names[i])->tid);
            ok = t && t->state == states[i];
        }
        if (ok)
            return;
        usleep(10000);
    }
    for (int i = 0; i < n; i++) {
        const struct py_thread_sample *t = seen_tid(s, told_named(a, names[i])->tid);
        fprintf(stderr, "  %s: %s, wanted %s\n", names[i],
                t ? py_state_name((enum py_thread_state)t->state) : "absent",
                py_state_name((enum py_thread_state)states[i]));
    }
    TEST_FAIL("threads never reached their states");
}

static void assert_stack(struct py_reader *r, const struct py_thread_sample *t,
                         const struct told *told, int check_lines)
{
    if ((int)t->depth != told->depth)
        TEST_FAIL("%s: depth %u, Python says %d", told->name, t->depth, told->depth);
    for (uint32_t i = 0; i < t->depth; i++) {
        const struct py_code_info *ci = py_reader_code(r, t->code[i]);
        ASSERT(ci != NULL);
        ASSERT_EQ_STR(ci->name, told->frame[i].name);
        ASSERT_EQ_STR(ci->file, told->frame[i].file);
        if (check_lines && t->line[i] != told->frame[i].line)
            TEST_FAIL("%s frame %u (%s): line %d, Python says %d", told->name, i, ci->name,
                      t->line[i], told->frame[i].line);
    }
}

TEST(stacks_match_pythons_own)
{
    struct child c;
    struct told_all *a;
    struct py_reader *r = start_and_open(&c, &a);
    ASSERT_EQ_STR(py_reader_version(r), a->version);
    ASSERT_EQ_INT(py_reader_pid(r), c.pid);
    static const char *const names[] = {"sleeper", "locked", "reader", "main"};
    static const uint8_t states[] = {PY_ST_SLEEP, PY_ST_LOCK, PY_ST_IO, PY_ST_IO};
    struct seen s;
    sample_until_states(r, a, names, states, 4, &s);
    /* every thread of the child: the five and main, by native id */
    ASSERT_EQ_INT(s.n, a->n);
    for (int i = 0; i < 3; i++) {
        const struct told *told = told_named(a, names[i]);
        assert_stack(r, seen_tid(&s, told->tid), told, 1);
    }
    /* the busy thread moves: its functions, not its lines */
    const struct told *busy = told_named(a, "busy");
    assert_stack(r, seen_tid(&s, busy->tid), busy, 0);
    const struct py_thread_sample *m = seen_tid(&s, a->main_tid);
    ASSERT(m != NULL);
    ASSERT_EQ_INT(m->depth, 1);
    ASSERT_EQ_STR(py_reader_code(r, m->code[0])->name, "<module>");
    ASSERT_EQ_STR(py_reader_code(r, m->code[0])->file, a->script);
    ASSERT_EQ_INT(m->line[0], a->main_line);
    stop_and_close(&c, r);
}

TEST(states_and_the_gil)
{
    struct child c;
    struct told_all *a;
    struct py_reader *r = start_and_open(&c, &a);
    static const char *const names[] = {"sleeper", "locked", "reader", "busy", "deep", "main"};
    static const uint8_t states[] = {PY_ST_SLEEP,   PY_ST_LOCK,  PY_ST_IO,
                                     PY_ST_RUNNING, PY_ST_SLEEP, PY_ST_IO};
    struct seen s;
    sample_until_states(r, a, names, states, 6, &s);
    /* Only the busy thread asks for the GIL, the others gave it up. Once it
     * has it (it may be woken and not yet run: the GIL is then free), it
     * keeps it: nobody asks it to drop it. */
    pid_t busy = told_named(a, "busy")->tid;
    int busy_held = 0, rounds = 50;
    for (int i = 0; i < 1000 && !busy_held; i++) {
        sample(r, &s);
        busy_held = seen_tid(&s, busy)->holds_gil;
        usleep(1000);
    }
    ASSERT(busy_held);
    for (int i = 0; i < rounds; i++) {
        sample(r, &s);
        for (int k = 0; k < s.n; k++) {
            if (s.t[k].tid == busy)
                busy_held += s.t[k].holds_gil;
            else if (s.t[k].holds_gil)
                TEST_FAIL("thread %d holds the GIL while blocked", (int)s.t[k].tid);
        }
    }
    ASSERT_EQ_INT(busy_held, 1 + rounds);
    stop_and_close(&c, r);
}

TEST(deep_stack_keeps_the_innermost)
{
    struct child c;
    struct told_all *a;
    struct py_reader *r = start_and_open(&c, &a);
    const struct told *deep = told_named(a, "deep");
    ASSERT(deep->depth > PY_STACK_MAX);
    struct seen s;
    sample(r, &s);
    const struct py_thread_sample *t = seen_tid(&s, deep->tid);
    ASSERT(t != NULL);
    ASSERT_EQ_INT(t->depth, PY_STACK_MAX);
    ASSERT_EQ_INT(t->truncated, 1);
    for (uint32_t i = 0; i < t->depth; i++) {
        ASSERT_EQ_STR(py_reader_code(r, t->code[i])->name, deep->frame[i].name);
        ASSERT_EQ_INT(t->line[i], deep->frame[i].line);
    }
    const struct py_thread_sample *m = seen_tid(&s, a->main_tid);
    ASSERT_EQ_INT(m->truncated, 0);
    stop_and_close(&c, r);
}

TEST(code_ids_are_stable)
{
    struct child c;
    struct told_all *a;
    struct py_reader *r = start_and_open(&c, &a);
    const struct told *sleeper = told_named(a, "sleeper");
    struct seen s1, s2;
    sample(r, &s1);
    memset(&s2, 0, sizeof(s2));
    ASSERT_EQ_INT(py_reader_sample(r, 0, collect, &s2), 0);
    const struct py_thread_sample *t1 = seen_tid(&s1, sleeper->tid);
    const struct py_thread_sample *t2 = seen_tid(&s2, sleeper->tid);
    ASSERT(t1 && t2);
    ASSERT_EQ_INT(t1->depth, t2->depth);
    for (uint32_t i = 0; i < t1->depth; i++) {
        ASSERT_EQ_INT(t1->code[i], t2->code[i]);
        ASSERT_EQ_INT(t2->line[i], -1);
    }
    /* nest() three times: one id, three frames */
    ASSERT_EQ_INT(t1->code[1], t1->code[2]);
    ASSERT(t1->code[0] != t1->code[1]);
    ASSERT(py_reader_code(r, 1u << 30) == NULL);
    ASSERT_EQ_U64(py_reader_torn(r), 0);
    stop_and_close(&c, r);
}

/* ---- what must fail ---- */

static int open_rc(pid_t pid, char *why_out, size_t cap)
{
    struct strbuf why;
    strbuf_init(&why);
    struct py_reader *r = NULL;
    int rc = py_reader_open(pid, &r, &why);
    snprintf(why_out, cap, "%s", why.buf);
    strbuf_release(&why);
    if (rc == 0)
        py_reader_close(r);
    else
        ASSERT(r == NULL);
    return rc;
}

TEST(not_python_is_enoent)
{
    struct child c;
    char *argv[] = {"/bin/sleep", "100", NULL};
    child_start(&c, argv);
    char why[512];
    int rc = -1;
    /* until exec has replaced the test's own image (no _PyRuntime either) */
    for (int i = 0; i < 100; i++) {
        char exe[256] = "", link[64];
        snprintf(link, sizeof(link), "/proc/%d/exe", (int)c.pid);
        ssize_t n = readlink(link, exe, sizeof(exe) - 1);
        if (n > 0 && strstr(exe, "sleep"))
            break;
        usleep(10000);
    }
    rc = open_rc(c.pid, why, sizeof(why));
    ASSERT_EQ_INT(rc, -ENOENT);
    ASSERT(strstr(why, "not a CPython process") != NULL);
    child_stop(&c);
}

TEST(exited_process)
{
    struct child c;
    struct told_all *a;
    struct py_reader *r = start_and_open(&c, &a);
    struct seen s;
    sample(r, &s);
    pid_t pid = c.pid;
    child_stop(&c);
    memset(&s, 0, sizeof(s));
    ASSERT_EQ_INT(py_reader_sample(r, 1, collect, &s), -ESRCH);
    py_reader_close(r);
    char why[512];
    ASSERT_EQ_INT(open_rc(pid, why, sizeof(why)), -ENOENT);
}

TEST(unreadable_memory_is_eperm)
{
    /* a process that made itself non-dumpable: only CAP_SYS_PTRACE reads
     * it, so a root test reads it as nobody */
    char script[600], line[256], why[512];
    write_script(script, sizeof(script), "nodump.py",
                 "import ctypes, sys\n"
                 "ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)\n"
                 "print('ready', flush=True)\n"
                 "sys.stdin.read()\n");
    struct child c;
    char *argv[] = {PYTHON, script, NULL};
    child_start(&c, argv);
    ASSERT(child_line(&c, line, sizeof(line)) && strcmp(line, "ready") == 0);
    pid_t reader = fork();
    if (reader == 0) {
        if (geteuid() == 0 &&
            (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
            _exit(2);
        int rc = open_rc(c.pid, why, sizeof(why));
        if (rc != -EPERM)
            fprintf(stderr, "  py_reader_open: %d (%s)\n", rc, why);
        _exit(rc == -EPERM && strstr(why, "cannot read") ? 0 : 1);
    }
    int status = 0;
    waitpid(reader, &status, 0);
    ASSERT(WIFEXITED(status));
    ASSERT_EQ_INT(WEXITSTATUS(status), 0);
    child_stop(&c);
}

/* A fake python: exports _PyRuntime, Py_Version and PyCode_Type. MODE 0
 * fills _PyRuntime with 0x41. MODE 1 builds, with the offsets of the 3.11
 * row (-DL_field=N), an interpreter, a thread, ten frames, their code
 * objects, names and line tables in a pool, and keeps breaking it while it
 * is read: each round restores it, overwrites a few words at random (0, a
 * pointer into the pool or to PyCode_Type, a small number, a str state,
 * random bits) and waits 200 us. */
static const char fake_src[] =
    "#include <stdint.h>\n"
    "#include <string.h>\n"
    "#include <unistd.h>\n"
    "unsigned char _PyRuntime[4096] __attribute__((aligned(64)));\n"
    "const uint32_t Py_Version = VERSION;\n"
    "unsigned char PyCode_Type[512];\n"
    "static unsigned char pool[1 << 15] __attribute__((aligned(64))), good[1 << 15];\n"
    "static uint64_t s = SEED;\n"
    "static uint64_t rnd(void) { s ^= s >> 12; s ^= s << 25; s ^= s >> 27;\n"
    "    return s * 2685821657736338717ull; }\n"
    "static void put(unsigned char *at, uint64_t v) { memcpy(at, &v, 8); }\n"
    "static uint64_t P(unsigned off) { return (uintptr_t)pool + off; }\n"
    "static const uint64_t states[] = {0xe4, 0xa4, 0xa8, 0xb0};\n"
    "static uint64_t word(void) {\n"
    "    uint64_t pick = rnd() % 8;\n"
    "    if (pick == 0) return 0;\n"
    "    if (pick == 1) return P(rnd() % (sizeof(pool) - 1024) / 8 * 8);\n"
    "    if (pick == 2) return (uintptr_t)PyCode_Type;\n"
    "    if (pick == 3) return rnd() % 64;\n"
    "    if (pick == 4) return states[rnd() % 4];\n"
    "    if (pick == 5) return P(4096);\n"
    "    return rnd();\n"
    "}\n"
    "static void build(void) {\n"
    "    memset(pool, 0, sizeof(pool));\n"
    "    put(pool + L_interp_runtime, (uintptr_t)_PyRuntime);\n"
    "    put(pool + L_interp_threads_head, P(1024));\n"
    "    put(pool + 1024 + L_tstate_interp, P(0));\n"
    "    put(pool + 1024 + L_tstate_native_thread_id, (uint64_t)getpid());\n"
    "    put(pool + 1024 + L_tstate_cframe, P(3072));\n"
    "    put(pool + 3072 + L_cframe_current_frame, P(4096));\n"
    "    for (unsigned i = 0; i < 10; i++) {\n"
    "        unsigned f = 4096 + i * 128, c = 8192 + i * 512, n = 16384 + i * 256;\n"
    "        unsigned t = 24576 + i * 64;\n"
    "        put(pool + f + L_frame_code, P(c));\n"
    "        put(pool + f + L_frame_previous, i < 9 ? P(f + 128) : 0);\n"
    "        put(pool + f + L_frame_prev_instr, P(c + L_code_code + 2 * i));\n"
    "        put(pool + c + L_object_type, (uintptr_t)PyCode_Type);\n"
    "        put(pool + c + L_code_name, P(n));\n"
    "        put(pool + c + L_code_qualname, P(n));\n"
    "        put(pool + c + L_code_filename, P(n));\n"
    "        put(pool + c + L_code_linetable, P(t));\n"
    "        put(pool + c + L_code_firstlineno, i + 1);\n"
    "        put(pool + n + L_unicode_length, 4);\n"
    "        put(pool + n + L_unicode_state, 0xe4);\n"
    "        memcpy(pool + n + L_unicode_ascii_data, \"fn_\", 3);\n"
    "        pool[n + L_unicode_ascii_data + 3] = (unsigned char)('0' + i);\n"
    "        put(pool + t + L_varobject_size, 8);\n"
    "        put(pool + t + L_bytes_data, rnd());\n"
    "    }\n"
    "    memcpy(good, pool, sizeof(pool));\n"
    "}\n"
    "int main(void) {\n"
    "    if (MODE == 0) memset(_PyRuntime, 0x41, sizeof(_PyRuntime));\n"
    "    else { build(); put(_PyRuntime + L_runtime_interp_head, P(0)); }\n"
    "    write(1, \"ready\\n\", 6);\n"
    "    if (MODE == 0) pause();\n"
    "    for (;;) {\n"
    "        memcpy(pool, good, sizeof(pool));\n"
    "        for (unsigned k = rnd() % 6; k > 0; k--)\n"
    "            put(pool + rnd() % (24576 + 640) / 8 * 8, word());\n"
    "        put(pool + L_interp_runtime, (uintptr_t)_PyRuntime);\n"
    "        usleep(200);\n"
    "    }\n"
    "}\n";

static void start_fake(struct child *c, const char *version, int mode, unsigned seed)
{
    static char src[600];
    char bin[700], flags[2048], line[64];
    if (!src[0])
        write_script(src, sizeof(src), "fake.c", fake_src);
    const struct py_layout *l = py_layout_find(3, 11);
    snprintf(bin, sizeof(bin), "%s.%d.%u", src, mode, seed);
    int len = snprintf(flags, sizeof(flags), "-O0 -rdynamic -DVERSION=%s -DMODE=%d -DSEED=%uu",
                       version, mode, seed * 2654435761u + 1);
#define LAYOUT_FLAG(f, expr)                                                                       \
    len += snprintf(flags + len, sizeof(flags) - (size_t)len, " -DL_" #f "=%d", (int)l->f);
    PY_LAYOUT_FIELDS(LAYOUT_FLAG)
#undef LAYOUT_FLAG
    ASSERT(len < (int)sizeof(flags));
    compile(src, bin, flags);
    char *argv[] = {bin, NULL};
    child_start(c, argv);
    ASSERT(child_line(c, line, sizeof(line)) && strcmp(line, "ready") == 0);
}

TEST(old_version_is_enotsup)
{
    struct child c;
    char why[512];
    start_fake(&c, "0x030900f0", 0, 1);
    ASSERT_EQ_INT(open_rc(c.pid, why, sizeof(why)), -ENOTSUP);
    ASSERT(strstr(why, "3.9") != NULL);
    child_stop(&c);
}

TEST(garbage_runtime_is_efault)
{
    struct child c;
    char why[512];
    start_fake(&c, "0x030b02f0", 0, 1);
    ASSERT_EQ_INT(open_rc(c.pid, why, sizeof(why)), -EFAULT);
    ASSERT(strstr(why, "does not look like") != NULL);
    child_stop(&c);
}

static uint64_t garbage_threads, garbage_frames;

static int check_garbage_sample(const struct py_thread_sample *t, void *arg)
{
    struct py_reader *r = arg;
    garbage_threads++;
    garbage_frames += t->depth;
    ASSERT(t->depth <= PY_STACK_MAX);
    ASSERT(t->state < PY_ST_COUNT);
    for (uint32_t i = 0; i < t->depth; i++) {
        const struct py_code_info *ci = py_reader_code(r, t->code[i]);
        ASSERT(ci != NULL);
        const char *names[] = {ci->name, ci->file};
        for (int k = 0; k < 2; k++) {
            const unsigned char *p = (const unsigned char *)names[k];
            ASSERT(strlen(names[k]) <= 512);
            while (*p) {
                size_t n = utf8_seq_len(p);
                ASSERT(n > 0);
                p += n;
            }
        }
    }
    return 0;
}

TEST(random_structures_never_crash)
{
    int opened = 0;
    uint64_t torn = 0;
    for (unsigned seed = 1; seed <= 6; seed++) {
        struct child c;
        start_fake(&c, "0x030b02f0", 1, seed);
        struct strbuf why;
        strbuf_init(&why);
        struct py_reader *r = NULL;
        int rc = py_reader_open(c.pid, &r, &why);
        strbuf_release(&why);
        ASSERT_EQ_INT(rc, 0); /* the fake interpreter points back at _PyRuntime */
        opened++;
        for (int i = 0; i < 300; i++) {
            rc = py_reader_sample(r, i & 1, check_garbage_sample, r);
            ASSERT(rc == 0);
        }
        torn += py_reader_torn(r);
        py_reader_close(r);
        child_stop(&c);
    }
    ASSERT_EQ_INT(opened, 6);
    fprintf(stderr, "  %" PRIu64 " threads, %" PRIu64 " frames read, %" PRIu64 " torn\n",
            garbage_threads, garbage_frames, torn);
    ASSERT(garbage_frames > 0 && torn > 0); /* the walks went as far as code objects */
}

TEST(state_names)
{
    static const char *const want[] = {"running", "lock", "io", "sleep", "gpu", "wait"};
    for (int st = 0; st < PY_ST_COUNT; st++)
        ASSERT_EQ_STR(py_state_name((enum py_thread_state)st), want[st]);
    ASSERT_EQ_STR(py_state_name(PY_ST_COUNT), "?");
}

TEST_MAIN(layout_311_matches_headers, stacks_match_pythons_own, states_and_the_gil,
          deep_stack_keeps_the_innermost, code_ids_are_stable, not_python_is_enoent, exited_process,
          unreadable_memory_is_eperm, old_version_is_enotsup, garbage_runtime_is_efault,
          random_structures_never_crash, state_names)
