#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int log_quiet;

void log_set_quiet(int quiet)
{
    log_quiet = quiet;
}

/* Format the whole line first and write it with one write(2), so lines from
 * the recorder's threads and the job do not interleave mid-line. */
static void log_line(const char *prefix, const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof(line), "strobe: %s", prefix);
    if (n < 0)
        return;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    if (m < 0)
        return;
    size_t len = strlen(line);
    if (len + 1 >= sizeof(line))
        len = sizeof(line) - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
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
    log_line("", fmt, ap);
    va_end(ap);
}
