/*
 * strobe ctl's other end: the recorder's control socket (record/control.c
 * says how it works). The recorder's loop polls the fds it adds to epoll;
 * requests that change what the recorder does (interval, the Python
 * sampler) go through struct control's pointers, set by the recorder.
 */
#ifndef STROBE_RECORD_CONTROL_H
#define STROBE_RECORD_CONTROL_H

#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

#define CONTROL_LINE_MAX   4096                   /* bytes of a request, its newline included */
#define CONTROL_CONNS_MAX  8                      /* clients at once; more are told to retry */
#define CONTROL_WAIT_NS    (1000 * 1000 * 1000LL) /* a client has this long to ask */
#define CONTROL_SEND_NS    (5 * CONTROL_WAIT_NS)  /* ... and to read a long reply */
#define CONTROL_NOTES_MAX  (64 * 1024)            /* bytes of the run's notes text */
#define CONTROL_TAGS_MAX   256                    /* tags set through ctl */
#define CONTROL_NOTES_KIND "notes"                /* the run text of notes, "ISO-time TEXT" lines */
#define CONTROL_REQUEST    "control.json" /* the job's request file, in the torch directory */

struct control_conn {
    int fd;              /* -1: free */
    int64_t deadline_ns; /* monotonic: closed unanswered after it */
    size_t len;
    char buf[CONTROL_LINE_MAX];
    char *out; /* a reply longer than the socket's buffer: the rest to send */
    size_t out_len, out_off;
};

struct strobe_shm_header;
struct py_sampler;
struct event_sink;

/* Change the metrics interval: 0, or negative with why in *why. */
typedef int control_interval_fn(void *arg, int64_t interval_ns, struct strbuf *why);

struct control {
    int listen_fd; /* -1: ctl is off */
    int epfd;
    char path[108]; /* the socket's, sun_path's size */
    struct control_conn conns[CONTROL_CONNS_MAX];
    /* what requests act on, set by the recorder; NULL when the run lacks it */
    struct py_sampler *py;
    struct strobe_shm_header *shm; /* control_seq is bumped there */
    const struct event_sink *events;
    const char *torch_dir; /* where the job reads its request and writes traces */
    control_interval_fn *set_interval;
    void *arg;
    int64_t interval_ns; /* the current one, for the note of a change */
    /* what the store must get: the writer thread takes copies (control_collect) */
    struct kv_list tags;
    struct strbuf notes;
    uint64_t gen, stored_gen; /* bumped by each change; the version the store has */
    uint64_t torch_seq;       /* requests written for the job */
    uint32_t torch_until;     /* the last step of the latest window asked for */
};

/* Directory where run sockets live for this user, into buf: 0, or
 * negative (buf empty). Used by strobe ctl to find them too: each candidate
 * in order (i = 0, 1); -ENOENT past the last. */
int control_dir(int i, char *buf, size_t cap);

/* Listen on <dir>/<run_id>.sock and add the fd to epfd. Never fails the
 * run: a problem is one warning and ctl is off. */
void control_open(struct control *c, const char *run_id, int epfd);
/* Whether fd is one of c's; then handle what it has (accept, read, reply). */
int control_owns(const struct control *c, int fd);
void control_on_fd(struct control *c, int fd, int64_t now_ns);
/* Close clients that did not ask in time (called at each tick). */
void control_tick(struct control *c, int64_t now_ns);
/* The run records no more: close the clients and remove the socket. */
void control_stop(struct control *c);
/* control_stop, and free everything (after the last batch). */
void control_close(struct control *c);

/* The writer's part: copies of the tags and notes the store lacks into
 * tags/notes (replaced), returning the version they are (0: nothing new);
 * after a commit of that version, control_stored. */
uint64_t control_collect(struct control *c, struct kv_list *tags, struct strbuf *notes);
void control_stored(struct control *c, uint64_t gen);
/* Put tags and notes into s (in the caller's transaction). */
int control_put(struct store *s, const char *run_id, const struct kv_list *tags,
                const struct strbuf *notes);

/* Add a line "ISO-time text" to the run's notes: 0, or -ENOSPC when full. */
int control_note(struct control *c, int64_t real_ns, const char *text);

#endif
