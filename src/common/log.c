#include "common/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int log_quiet;

/* Held notes: lines, each with its newline. The recorder's threads may log
 * while the main thread holds. */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static int holding;
static char held[4096];
static size_t held_len;

void log_set_quiet(int quiet)
{
    log_quiet = quiet;
}

/* One pointer, so a thread that logs while it is set sees the function
 * and its argument together. */
static _Atomic(const struct log_writer *) writer;

void log_set_writer(const struct log_writer *w)
{
    atomic_store_explicit(&writer, w, memory_order_release);
}

void log_lines(const char *text, size_t len)
{
    const struct log_writer *to = atomic_load_explicit(&writer, memory_order_acquire);
    if (to) {
        to->fn(to->arg, text, len);
        return;
    }
    ssize_t w = len ? write(STDERR_FILENO, text, len) : 0;
    (void)w;
}

#define LINE_MAX_BYTES 1024

/* "strobe: <prefix><message>\n" into line (cut to fit): its length, or 0. */
static size_t format_line(char *line, const char *prefix, const char *fmt, va_list ap)
{
    int n = snprintf(line, LINE_MAX_BYTES, "strobe: %s", prefix);
    if (n < 0 || vsnprintf(line + n, LINE_MAX_BYTES - (size_t)n, fmt, ap) < 0)
        return 0;
    size_t len = strlen(line);
    if (len + 1 >= LINE_MAX_BYTES)
        len = LINE_MAX_BYTES - 2;
    line[len++] = '\n';
    return len;
}

/* Format the whole line first and write it with one write(2), so lines from
 * the recorder's threads and the job do not interleave mid-line. */
static void log_line(const char *prefix, const char *fmt, va_list ap)
{
    char line[LINE_MAX_BYTES];
    size_t len = format_line(line, prefix, fmt, ap);
    if (len)
        log_lines(line, len);
}

void log_hold_notes(void)
{
    pthread_mutex_lock(&held_lock);
    holding = 1;
    pthread_mutex_unlock(&held_lock);
}

void log_release_notes(int print)
{
    pthread_mutex_lock(&held_lock);
    if (print && held_len)
        log_lines(held, held_len);
    held_len = 0;
    holding = 0;
    pthread_mutex_unlock(&held_lock);
}

/* Keep the note if notes are held; 1 when kept (or dropped for want of room:
 * a held note goes whole or not at all). */
static int hold_note(const char *fmt, va_list ap)
{
    pthread_mutex_lock(&held_lock);
    int held_now = holding;
    if (held_now) {
        char line[LINE_MAX_BYTES];
        size_t len = format_line(line, "", fmt, ap);
        if (len && len <= sizeof(held) - held_len) {
            memcpy(held + held_len, line, len);
            held_len += len;
        }
    }
    pthread_mutex_unlock(&held_lock);
    return held_now;
}

void log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("", fmt, ap);
    va_end(ap);
}

void log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("warning: ", fmt, ap);
    va_end(ap);
}

void log_note(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    int held_now = hold_note(fmt, ap);
    va_end(ap);
    if (held_now)
        return;
    va_start(ap, fmt);
    log_line("", fmt, ap);
    va_end(ap);
}
