/* Messages to the user, in git's voice: "strobe: cannot open store 'x': ...".
 * One line each, on stderr. Nothing here is used on the sampling hot path. */
#ifndef STROBE_COMMON_LOG_H
#define STROBE_COMMON_LOG_H

#include <stddef.h>

__attribute__((format(printf, 1, 2))) void log_error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_note(const char *fmt, ...);

/* Quiet mode silences notes (not warnings or errors). */
void log_set_quiet(int quiet);

/* Where whole lines go instead of write(2) to stderr (the recorder's live
 * line shares the terminal's line with the job); NULL for stderr again. */
struct log_writer {
    void (*fn)(void *arg, const char *text, size_t len);
    void *arg;
};
/* w must live until log_set_writer(NULL). */
void log_set_writer(const struct log_writer *w);
/* Whole lines as they are (each with its newline), where log lines go. */
void log_lines(const char *text, size_t len);

/* Hold notes back (up to 4 KiB of them; past that they are dropped) until
 * log_release_notes prints them, or drops them all when print is 0: a note
 * about what a run will lack means nothing when the run never starts. */
void log_hold_notes(void);
void log_release_notes(int print);

#endif
