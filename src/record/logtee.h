/*
 * The job's stdout and stderr, passed on to the terminal and kept for the
 * store. Each stream goes through a tee process of its own, forked by the
 * recorder before the job: the job writes into a pipe (a pseudo-terminal when
 * the stream is a terminal, so the job still sees one: line buffering,
 * colours, progress bars), and the tee writes every byte on to where the
 * stream went before and copies it into memory shared with the recorder: the
 * first LOG_HEAD_BYTES and the last LOG_TAIL_BYTES.
 *
 * A process of its own, not the recorder's loop, so that a recorder that is
 * killed or stalls never blocks or breaks the job's output: the tee lives as
 * long as something writes to the stream, ignores the terminal's signals,
 * and exits when its reader goes away (the job then gets SIGPIPE, as it
 * would have without strobe).
 *
 * Checkpoints: while the job runs, the writer's thread copies the kept text
 * out of the shared memory every 5 s, when a stream has grown, and stores it
 * with the batch it commits (log_tee_text says how a copy stays whole while
 * the tee writes). A whole 1 MiB copy takes 150-230 us (measured by hand:
 * 200 copies 20 ms apart); on the sampling loop's thread it used to delay one
 * frame in 5 s, hence the writer's thread. The loop hands the writer a
 * snapshot of the tee, whose shared memory stays mapped until the writer has
 * stopped, and learns from the batch's result whether the copy was whole.
 * tests/unit/test_logtee.c feeds a real tee at the pipe's speed and checks
 * every copy byte for byte; both unsafe variants (no slack, no second read of
 * the total) fail it on every run.
 */
#ifndef STROBE_RECORD_LOGTEE_H
#define STROBE_RECORD_LOGTEE_H

#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"

#define LOG_HEAD_BYTES (256 * 1024)
#define LOG_TAIL_BYTES (768 * 1024)

struct log_capture; /* shared with the tee process */

/*
 * The terminal line that the job's output and strobe's live status line
 * share, when stderr is a terminal. The status line is drawn by the
 * recorder, the job's bytes are written by the tees: each tee erases a
 * status line that is shown before it writes, and notes whether the job
 * left its line open (a progress bar, a prompt); the recorder draws the
 * status only on a line of its own and skips a second when a tee holds the
 * line. Shared memory with a lock that neither side waits on for long: a
 * tee that finds it held for 50 ms writes anyway (the recorder may have been
 * killed holding it), the recorder never waits.
 */
struct log_line;

struct log_line *log_line_open(void);
void log_line_close(struct log_line *l);
/* Draw the status line (text without \r or \n) in place of the last one:
 * 1 when drawn, 0 when the job's line is open or a tee is writing. */
int log_line_status(struct log_line *l, const char *text, size_t n);
/* Write whole lines (a finding, the summary) to fd: the status line goes
 * first, and a job's open line is ended with a newline. l may be NULL. */
void log_line_print(struct log_line *l, int fd, const char *text, size_t n);

struct log_tee {
    struct log_capture *cap; /* NULL: not captured, the job writes directly */
    pid_t pid;               /* the tee process */
    int job_fd;              /* what becomes the job's stream; -1 once handed over */
    int target;              /* STDOUT_FILENO or STDERR_FILENO */
    int exited;              /* reaped */
};

/* Set up the tee of target (1 or 2). 0, or negative: then t captures
 * nothing and the job writes to target itself (the reason is the caller's to
 * say). line: the terminal line target shares with the status line, or
 * NULL. Call before the job is forked. */
int log_tee_start(struct log_tee *t, int target, struct log_line *line);
/* In the job's child, before exec: its stream becomes the tee's input. */
void log_tee_child_setup(const struct log_tee *t);
/* In the recorder once the job runs: its copy of the job's end goes. */
void log_tee_job_started(struct log_tee *t);
/* Whether pid is this tee's process (the recorder reaps every child). */
int log_tee_owns(struct log_tee *t, pid_t pid);
/* Wait up to timeout_ms for the tee to see the stream's end. */
void log_tee_wait(struct log_tee *t, int timeout_ms);
/* What was kept: the head, a one-line note of what was cut if anything was,
 * and the tail; *bytes is everything the job wrote, as of the copy. Safe
 * while the tee still writes (the copy then leaves out the oldest 32 KiB of
 * the tail, up to 256 KiB when the job writes fast). 0, or -ENOMEM, or
 * -EAGAIN when the output outran every try. */
int log_tee_text(const struct log_tee *t, struct strbuf *out, int64_t *bytes);
/* Where the newest bytes start in a text that log_tee_text wrote for
 * `bytes` written: just past the cut note that follows the head; 0 when
 * nothing was cut (the text is every byte); len when neither can be told
 * (no byte is known to be the newest). */
size_t log_text_tail_start(const char *text, size_t len, int64_t bytes);
/* Bytes the job has written so far. */
int64_t log_tee_bytes(const struct log_tee *t);
void log_tee_close(struct log_tee *t);

#endif
