/*
 * The job of bench/sweep_overhead.py: a process of known, tiny cost that
 * says when it ran, measured inside it. Its start is the first thing main
 * does (after exec and the loader: linked statically, with libc alone, so
 * that part is small and the same under every launcher); its end the last,
 * before exit.
 *
 *   build/bench/sweep_job OUT TAG [MS]
 *
 * Sleeps MS milliseconds (default 0) between the two, then appends one
 * line "TAG START_NS END_NS PID" (CLOCK_REALTIME) to OUT in one write, so
 * that jobs running together do not mix their lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t realtime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv)
{
    int64_t start_ns = realtime_ns();
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: sweep_job OUT TAG [MS]\n");
        return 2;
    }
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "sweep_job: cannot open '%s': %s\n", argv[1], strerror(errno));
        return 1;
    }
    long ms = argc == 4 ? strtol(argv[3], NULL, 10) : 0;
    if (ms > 0) {
        struct timespec d = {(time_t)(ms / 1000), (ms % 1000) * 1000000L};
        while (nanosleep(&d, &d) < 0 && errno == EINTR) {
        }
    }
    char line[256];
    int64_t end_ns = realtime_ns();
    int n = snprintf(line, sizeof(line), "%s %lld %lld %d\n", argv[2], (long long)start_ns,
                     (long long)end_ns, (int)getpid());
    int rc = n > 0 && n < (int)sizeof(line) && write(fd, line, (size_t)n) == n ? 0 : 1;
    close(fd);
    return rc;
}
