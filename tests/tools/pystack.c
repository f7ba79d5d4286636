/*
 * strobe-pystack: the Python stacks of a process, as the reader
 * (src/pyprof/reader.h) sees them, for checking it by hand.
 *
 *   strobe-pystack PID           one sample, with lines
 *   strobe-pystack -n N PID      N samples, printed last only, and the
 *                                reader's CPU time per thread sample on stderr
 *
 * Each thread is a line "PID TID state [gil]", then its frames, one a
 * line, outermost first and innermost last: "  func (file:line)".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pyprof/reader.h"

struct print_ctx {
    struct py_reader *r;
    int quiet;
    unsigned long threads;
};

static int print_thread(const struct py_thread_sample *t, void *arg)
{
    struct print_ctx *c = arg;
    c->threads++;
    if (c->quiet)
        return 0;
    printf("%d %d %s%s%s\n", (int)py_reader_pid(c->r), (int)t->tid,
           py_state_name((enum py_thread_state)t->state), t->holds_gil ? " gil" : "",
           t->truncated ? " truncated" : "");
    for (uint32_t i = t->depth; i-- > 0;) {
        const struct py_code_info *ci = py_reader_code(c->r, t->code[i]);
        printf("  %s (%s:%d)\n", ci ? ci->name : "?", ci ? ci->file : "?", (int)t->line[i]);
    }
    return 0;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = 1;
    int arg = 1;
    if (argc > 3 && strcmp(argv[1], "-n") == 0) {
        n = strtol(argv[2], NULL, 10);
        arg = 3;
    }
    if (arg != argc - 1 || n < 1) {
        fprintf(stderr, "usage: strobe-pystack [-n N] PID\n");
        return 2;
    }
    struct strbuf why;
    strbuf_init(&why);
    struct print_ctx c = {0};
    int rc = py_reader_open((pid_t)atoi(argv[arg]), &c.r, &why);
    if (rc < 0) {
        fprintf(stderr, "strobe-pystack: %s (%s)\n", why.buf, strerror(-rc));
        strbuf_release(&why);
        return 1;
    }
    double start = cpu_s();
    c.quiet = 1;
    for (long i = 0; i < n - 1 && rc == 0; i++) /* as the recorder samples: no lines */
        rc = py_reader_sample(c.r, 0, print_thread, &c);
    double spent = cpu_s() - start;
    unsigned long timed = c.threads;
    c.quiet = 0;
    if (rc == 0)
        rc = py_reader_sample(c.r, 1, print_thread, &c);
    if (rc < 0)
        fprintf(stderr, "strobe-pystack: cannot sample: %s\n", strerror(-rc));
    if (n > 1)
        fprintf(stderr, "Python %s: %lu thread samples, %.2f us CPU each, %llu torn\n",
                py_reader_version(c.r), timed, timed ? spent * 1e6 / (double)timed : 0.0,
                (unsigned long long)py_reader_torn(c.r));
    py_reader_close(c.r);
    strbuf_release(&why);
    return rc < 0 ? 1 : 0;
}
