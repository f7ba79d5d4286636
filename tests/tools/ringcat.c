/*
 * strobe-ringcat: a stand-in recorder for tests and benchmarks. It creates an
 * event segment, prints its name on the first line, then drains it every
 * 10 ms, printing one line per event:
 *
 *   pid tid kind name step value ts_ns
 *
 * kind is begin, end, complete, instant, step or counter; name is "-" for an
 * event without one, else its bytes with space, backslash and non-printing
 * bytes written as \xHH; value is the record's raw 64-bit value in decimal (a
 * counter's double bits, a complete span's length in ns). At SIGTERM, SIGINT
 * or the end of stdin it drains once more, prints
 *
 *   stats records=N names=N invalid=N dropped=N
 *
 * and removes the segment.
 *
 *   strobe-ringcat [-q] [-r rings] [-n records_per_ring] [name]
 *
 * -q leaves out the event lines (the stats line still comes). The name
 * defaults to /strobe-ringcat-PID.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring/ring.h"

#define NAME_IDS 1024 /* libstrobe's ids per ring are below this */

/* The names each ring has defined, by id; allocated at a ring's first name. */
struct names {
    char (**by_ring)[STROBE_NAME_MAX + 1]; /* [ring][id] */
    uint32_t ring_count;
};

struct cat {
    struct names names;
    int quiet; /* 1: no event lines */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static const char *const kind_names[] = {
    [STROBE_EV_SPAN_BEGIN] = "begin",  [STROBE_EV_SPAN_END] = "end",
    [STROBE_EV_COMPLETE] = "complete", [STROBE_EV_INSTANT] = "instant",
    [STROBE_EV_STEP] = "step",         [STROBE_EV_COUNTER] = "counter",
};

static void print_name(const char *name)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p <= ' ' || *p >= 0x7f || *p == '\\')
            printf("\\x%02x", *p);
        else
            putchar(*p);
    }
}

static void on_event(int ring, pid_t pid, pid_t tid, const struct strobe_record *rec,
                     const char *name, void *arg)
{
    struct cat *cat = arg;
    struct names *n = &cat->names;
    if ((uint32_t)ring >= n->ring_count)
        return;
    if (name) { /* a definition: remember it for this ring's later events */
        if (rec->name_id >= NAME_IDS)
            return;
        if (!n->by_ring[ring] && !(n->by_ring[ring] = calloc(NAME_IDS, sizeof(*n->by_ring[0]))))
            return;
        snprintf(n->by_ring[ring][rec->name_id], sizeof(n->by_ring[ring][0]), "%s", name);
        return;
    }
    if (cat->quiet)
        return;
    printf("%d %d %s ", (int)pid, (int)tid, kind_names[rec->kind] ? kind_names[rec->kind] : "?");
    if (!rec->name_id)
        putchar('-');
    else if (rec->name_id < NAME_IDS && n->by_ring[ring] && n->by_ring[ring][rec->name_id][0])
        print_name(n->by_ring[ring][rec->name_id]);
    else
        printf("?%" PRIu32, rec->name_id);
    printf(" %" PRIu32 " %" PRIu64 " %" PRIu64 "\n", rec->step, rec->value, rec->ts_ns);
}

/* Wait up to timeout_ms for stdin; 1 when it has ended. */
static int stdin_ended(int timeout_ms)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int rc = poll(&p, 1, timeout_ms);
    if (rc <= 0 || (p.revents & POLLNVAL))
        return 0; /* timeout, a signal, or no stdin at all: keep going */
    char buf[256];
    ssize_t got = read(STDIN_FILENO, buf, sizeof(buf));
    return got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN);
}

static int parse_u32(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    uint32_t rings = 16, records = 16384;
    struct cat cat = {0};
    int opt;
    while ((opt = getopt(argc, argv, "qr:n:")) != -1) {
        if (opt == 'q')
            cat.quiet = 1;
        else if (!(opt == 'r' && parse_u32(optarg, &rings) == 0) &&
                 !(opt == 'n' && parse_u32(optarg, &records) == 0))
            break;
    }
    if (opt != -1 || argc - optind > 1) {
        fprintf(stderr, "usage: strobe-ringcat [-q] [-r rings] [-n records] [name]\n");
        return 2;
    }
    char name[64];
    if (optind < argc)
        snprintf(name, sizeof(name), "%s", argv[optind]);
    else
        snprintf(name, sizeof(name), "/strobe-ringcat-%d", (int)getpid());

    struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: poll returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct ring_segment seg;
    int rc = ring_segment_create(&seg, name, rings, records);
    if (rc < 0) {
        fprintf(stderr, "strobe-ringcat: cannot create segment '%s': %s\n", name, strerror(-rc));
        return 1;
    }
    cat.names.ring_count = rings;
    cat.names.by_ring = calloc(rings, sizeof(*cat.names.by_ring));
    if (!cat.names.by_ring) {
        fprintf(stderr, "strobe-ringcat: out of memory\n");
        ring_segment_release(&seg);
        return 1;
    }
    printf("%s\n", name);
    fflush(stdout);

    struct drain_stats st = {0};
    while (!stop_requested) {
        ring_drain(&seg, on_event, &cat, &st);
        fflush(stdout);
        if (stdin_ended(10))
            break;
    }
    ring_drain(&seg, on_event, &cat, &st);
    printf("stats records=%" PRIu64 " names=%" PRIu64 " invalid=%" PRIu64 " dropped=%" PRIu64 "\n",
           st.records, st.names, st.invalid, st.dropped);
    fflush(stdout);

    ring_segment_release(&seg);
    for (uint32_t i = 0; i < rings; i++)
        free(cat.names.by_ring[i]);
    free(cat.names.by_ring);
    return 0;
}
