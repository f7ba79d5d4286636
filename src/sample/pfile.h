/*
 * A kept-open /proc or /sys file: opened once, re-read each sample with
 * pread(fd, buf, cap, 0) into a buffer that is reused and grown only when the
 * file no longer fits (htop and netdata read procfs this way). Once warm, a
 * read makes no allocation and one system call for a file under 3 KB; a
 * larger one is read on until a read returns nothing, because files printed
 * record by record come at most a page per read.
 */
#ifndef STROBE_SAMPLE_PFILE_H
#define STROBE_SAMPLE_PFILE_H

#include <stddef.h>
#include <stdint.h>

struct pfile {
    int fd;     /* -1 when closed */
    char *buf;  /* contents of the last read, NUL-terminated */
    size_t len; /* bytes read */
    size_t cap; /* capacity of buf */
};

#define PFILE_INIT                                                                                 \
    {                                                                                              \
        -1, NULL, 0, 0                                                                             \
    }

/* Open path relative to dirfd (AT_FDCWD for absolute). 0 or -errno. */
int pfile_open(struct pfile *f, int dirfd, const char *path);
/* Re-read the whole file. 0 or -errno (-ESRCH once a process has gone). */
int pfile_read(struct pfile *f);
/* Open, read once, close: for files read only at start (cpuinfo, limits). */
int pfile_read_once(struct pfile *f, int dirfd, const char *path);
/* Close the fd and free the buffer. Safe on a closed pfile. */
void pfile_release(struct pfile *f);
/* Close the fd but keep the buffer for reuse by the next pfile_open(). */
void pfile_close(struct pfile *f);

/* Re-read a kept /proc/PID/statm: its resident pages. 0, -EBADF when f is
 * closed, -EINVAL when unparsable, or pfile_read's -errno. */
int pfile_read_statm(struct pfile *f, uint64_t *resident_pages);

#endif
