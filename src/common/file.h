/*
 * Writing a whole file so that no reader sees half of it: the report, and
 * strobe sweep's write-back into an experiment file. A regular file is
 * written beside itself and renamed over (a failure leaves the old one
 * whole, and no temporary); a symbolic link is followed and stays a link;
 * what is not a regular file (/dev/null, a FIFO) is written into, since a
 * rename would replace it.
 */
#ifndef STROBE_COMMON_FILE_H
#define STROBE_COMMON_FILE_H

#include <stdio.h>

#include "common/strbuf.h"

/* Write buf to f and flush it (stdout for "-"): 0, or -errno. */
int file_write_stream(FILE *f, const struct strbuf *buf);

/* Write buf as the whole of path: 0, or -errno (-EISDIR for a folder). */
int file_replace(const char *path, const struct strbuf *buf);

#endif
