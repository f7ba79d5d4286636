/*
 * The floor under any sampler that wakes on a timer: the CPU time one
 * process spends per wake-up when it does nothing else, for the three ways
 * to wait for an absolute deadline (the recorder uses the first).
 *
 *   build/bench/wake_cost [interval_us] [wakes]
 *
 * Prints one line per method: CPU µs per wake (process CPU time over wakes).
 */
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec to_ts(int64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    return t;
}

/* Each wait returns the deadlines it missed: passed whole before the wait
 * returned, as the recorder counts them (a timerfd's expirations past one),
 * so that misses the platform makes are told from the recorder's. */

/* timerfd (absolute, periodic) and a signalfd in epoll, as the recorder waits */
static int64_t wait_timerfd_epoll(int sfd, int64_t start, int64_t interval, int wakes)
{
    int tfd = timerfd_create(CLOCK_MONOTONIC, 0);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = tfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
    ev.data.fd = sfd;
    epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
    struct itimerspec its = {to_ts(interval), to_ts(start + interval)};
    timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
    int64_t missed = 0;
    for (int i = 0; i < wakes;) {
        struct epoll_event got[2];
        uint64_t expirations;
        epoll_wait(ep, got, 2, -1);
        if (read(tfd, &expirations, sizeof(expirations)) < 0 || !expirations)
            break;
        missed += (int64_t)expirations - 1;
        i += (int)expirations;
    }
    close(ep);
    close(tfd);
    return missed;
}

/* Deadlines wholly past when a wait for deadline due returned. */
static int64_t late(int64_t due, int64_t interval)
{
    int64_t now = now_ns(CLOCK_MONOTONIC);
    return now > due + interval ? (now - due) / interval : 0;
}

/* ppoll on the signalfd with the time left to the deadline */
static int64_t wait_ppoll(int sfd, int64_t start, int64_t interval, int wakes)
{
    int64_t missed = 0;
    for (int i = 1; i <= wakes; i++) {
        int64_t due = start + i * interval;
        for (int64_t now = now_ns(CLOCK_MONOTONIC); now < due; now = now_ns(CLOCK_MONOTONIC)) {
            struct timespec left = to_ts(due - now);
            struct pollfd p = {sfd, POLLIN, 0};
            ppoll(&p, 1, &left, NULL);
        }
        int64_t n = late(due, interval);
        missed += n;
        i += (int)n;
    }
    return missed;
}

/* clock_nanosleep to an absolute time (no signal handling at all) */
static int64_t wait_nanosleep(int sfd, int64_t start, int64_t interval, int wakes)
{
    (void)sfd;
    int64_t missed = 0;
    for (int i = 1; i <= wakes; i++) {
        struct timespec due = to_ts(start + i * interval);
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
        int64_t n = late(start + i * interval, interval);
        missed += n;
        i += (int)n;
    }
    return missed;
}

int main(int argc, char **argv)
{
    int64_t interval = (argc > 1 ? atoll(argv[1]) : 1000) * 1000LL;
    int wakes = argc > 2 ? atoi(argv[2]) : 3000;
    if (interval <= 0 || wakes <= 0) {
        fprintf(stderr, "usage: wake_cost [interval_us] [wakes]\n");
        return 2;
    }
    static const struct {
        const char *name;
        int64_t (*wait)(int, int64_t, int64_t, int);
    } methods[] = {
        {"timerfd+epoll", wait_timerfd_epoll},
        {"ppoll", wait_ppoll},
        {"clock_nanosleep", wait_nanosleep},
    };
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK);
    for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
        int64_t cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        int64_t missed = methods[m].wait(sfd, now_ns(CLOCK_MONOTONIC), interval, wakes);
        int64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
        printf("%-16s %8.2f us CPU per wake (%d deadlines every %lld us), %lld missed\n",
               methods[m].name, (double)cpu / 1e3 / (double)(wakes - missed), wakes,
               (long long)(interval / 1000), (long long)missed);
    }
    close(sfd);
    return 0;
}
