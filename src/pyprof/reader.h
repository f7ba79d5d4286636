/*
 * Reading a CPython process's Python stacks from outside, as py-spy and
 * austin do: process_vm_readv(2) on the interpreter's own structures. No
 * code runs in the target, no GIL is taken, the target is never stopped.
 *
 * Finding the interpreter: the ELF symbol _PyRuntime (and Py_Version, the
 * PY_VERSION_HEX of 3.11 and later) in the executable or the libpython
 * mapped into the process (/proc/PID/maps), relocated by its load address.
 * The structures' offsets come from a table with one row per CPython
 * minor version (reader_layouts.c); a version without a row is refused
 * with a note, never guessed.
 *
 * A stack is read while the process runs, so it may be torn: every pointer
 * read is checked (the code object's type is PyCode_Type, the depth is
 * bounded, a cycle ends the walk), and a torn stack is dropped and counted.
 *
 * Thread state (running or waiting, and on what) comes from
 * /proc/PID/task/TID/stat and, for a waiting thread, /proc/.../syscall.
 */
#ifndef STROBE_PYPROF_READER_H
#define STROBE_PYPROF_READER_H

#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"

#define PY_STACK_MAX 256 /* frames kept per thread; deeper stacks keep the innermost */

/* What a thread was doing when sampled. Stored: values are part of the
 * store format (docs/store-format.md). */
enum py_thread_state {
    PY_ST_RUNNING = 0, /* on a CPU or runnable ('R') */
    PY_ST_LOCK = 1,    /* futex: a lock, a condition, the GIL, a queue's get() */
    PY_ST_IO = 2,      /* read, write, poll, select, epoll, recv, send, accept, ... */
    PY_ST_SLEEP = 3,   /* nanosleep, clock_nanosleep, pause */
    PY_ST_GPU = 4,     /* ioctl on /dev/nvidia*: CUDA synchronisation */
    PY_ST_WAIT = 5,    /* waiting on something else, or the syscall is not known */
    PY_ST_COUNT
};
/* "running", "lock", "io", "sleep", "gpu", "wait" */
const char *py_state_name(enum py_thread_state st);

/* A code object, as far as a stack needs it. Strings owned by the reader,
 * valid until py_reader_close. */
struct py_code_info {
    const char *name; /* co_qualname (3.11+), else co_name */
    const char *file; /* co_filename */
    uint32_t first_line;
};

/* One thread's stack at one sample. code[] holds reader-local code ids,
 * innermost first: the same code object gives the same id for the reader's
 * life, and a code object freed and another made at its address gets a new
 * one. */
struct py_thread_sample {
    pid_t tid;           /* native thread id */
    uint8_t state;       /* enum py_thread_state */
    uint8_t holds_gil;   /* the thread is the GIL's holder */
    uint8_t truncated;   /* deeper than PY_STACK_MAX: the outermost frames are missing */
    uint32_t depth;      /* frames in code[] (0: a thread with no Python frame) */
    uint32_t code[PY_STACK_MAX];
    int32_t line[PY_STACK_MAX]; /* current line of each frame; -1 unknown or not asked */
};

struct py_reader;

/*
 * Open pid for reading. 0 and *out on success. Otherwise a negative errno
 * and a one-line reason in why (not cleared first):
 *   -ENOENT   not a CPython process (no _PyRuntime), or it exited
 *   -ENOTSUP  a CPython without a layout row ("Python 3.9 is not supported")
 *   -EPERM    its memory cannot be read (ptrace rules, a non-dumpable process)
 *   -EFAULT   its interpreter state does not look like one (garbled)
 * An interpreter not yet initialised also gives -EAGAIN: try again later.
 */
int py_reader_open(pid_t pid, struct py_reader **out, struct strbuf *why);
/* "3.11.2" */
const char *py_reader_version(const struct py_reader *r);
pid_t py_reader_pid(const struct py_reader *r);

typedef int py_thread_fn(const struct py_thread_sample *t, void *arg);
/*
 * Sample every thread of the interpreter: fn once per thread (a non-zero
 * return stops and is returned). with_lines: fill line[] (one more read
 * per frame). Returns 0, or negative when the process could not be read at
 * all (-ESRCH: it exited); a torn thread is skipped and counted in
 * py_reader_torn().
 */
int py_reader_sample(struct py_reader *r, int with_lines, py_thread_fn *fn, void *arg);
/* The code object behind an id fn saw; NULL for an id it never gave. */
const struct py_code_info *py_reader_code(const struct py_reader *r, uint32_t code_id);
/* Stacks dropped because they were torn while read. */
uint64_t py_reader_torn(const struct py_reader *r);
void py_reader_close(struct py_reader *r);

#endif
