/*
 * What one read costs when the caches are cold, as in a sampler that sleeps
 * between frames, beside what it costs warm: the reason a paced frame costs
 * several times a frame taken back to back (bench/sample_cost's paced
 * figures), on the kernel's side as much as on strobe's.
 *
 *   build/bench/cold_read [--sleep-ms MS] [--reads N] FILE|getpid ...
 *
 * For each argument: N times, sleep MS (100 by default, the recorder's
 * interval) and time one pread of the kept-open file from its start (or one
 * getpid()) on the thread's CPU clock; then 2000 reads back to back.
 * Prints one line each: the cold median, the warm median, their ratio.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_run.h"
#include "common/clock.h"

#define MAX_READS  1000
#define WARM_READS 2000

static char buf[65536];

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* One read of what the argument names: fd < 0 is getpid(). */
static void read_once(int fd)
{
    if (fd < 0)
        (void)getpid();
    else if (pread(fd, buf, sizeof(buf), 0) < 0)
        exit(1);
}

static double cpu_us_of_one(int fd)
{
    int64_t t0 = clock_thread_cpu_ns();
    read_once(fd);
    return (double)(clock_thread_cpu_ns() - t0) / 1e3;
}

static void measure(const char *what, int fd, long sleep_ms, int reads)
{
    static double cold[MAX_READS];
    const struct timespec nap = {(time_t)(sleep_ms / 1000), (sleep_ms % 1000) * 1000000L};
    read_once(fd); /* the first read of an fd sets its file up */
    for (int i = 0; i < reads; i++) {
        struct timespec left = nap;
        while (nanosleep(&left, &left) == -1 && errno == EINTR)
            ;
        cold[i] = cpu_us_of_one(fd);
    }
    int64_t t0 = clock_thread_cpu_ns();
    for (int i = 0; i < WARM_READS; i++)
        read_once(fd);
    double warm = (double)(clock_thread_cpu_ns() - t0) / 1e3 / WARM_READS;
    double c = median(cold, reads);
    printf("%-28s cold %7.2f us   warm %6.2f us   %5.1fx\n", what, c, warm,
           warm > 0 ? c / warm : 0);
}

static void usage(void)
{
    fprintf(stderr, "usage: cold_read [--sleep-ms MS] [--reads N] FILE|getpid ...\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long sleep_ms = 100;
    int reads = 40, i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--sleep-ms") == 0)
            sleep_ms = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--reads") == 0)
            reads = atoi(argv[i + 1]);
        else
            usage();
    }
    if (i >= argc || sleep_ms < 0 || reads < 1 || reads > MAX_READS)
        usage();
    for (; i < argc; i++) {
        int fd = -1;
        if (strcmp(argv[i], "getpid") != 0 && (fd = open(argv[i], O_RDONLY | O_CLOEXEC)) < 0) {
            fprintf(stderr, "cold_read: cannot open %s: %s\n", argv[i], strerror(errno));
            continue;
        }
        measure(argv[i], fd, sleep_ms, reads);
        if (fd >= 0)
            close(fd);
    }
    return 0;
}
