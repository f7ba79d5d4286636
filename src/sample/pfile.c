#include "sample/pfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define PFILE_MIN_CAP 1024

int pfile_open(struct pfile *f, int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = fd;
    f->len = 0;
    return 0;
}

static int pfile_grow(struct pfile *f)
{
    size_t cap = f->cap ? f->cap * 2 : PFILE_MIN_CAP;
    char *p = realloc(f->buf, cap);
    if (!p)
        return -ENOMEM;
    f->buf = p;
    f->cap = cap;
    return 0;
}

int pfile_read(struct pfile *f)
{
    if (f->fd < 0)
        return -EBADF;
    if (!f->buf && pfile_grow(f) < 0)
        return -ENOMEM;
    for (;;) {
        /* Leave room for the NUL; a read that fills the rest may be cut. */
        ssize_t n = pread(f->fd, f->buf, f->cap - 1, 0);
        if (n < 0)
            return errno == EINTR ? -EAGAIN : -errno;
        if ((size_t)n < f->cap - 1) {
            f->len = (size_t)n;
            f->buf[n] = '\0';
            return 0;
        }
        if (pfile_grow(f) < 0)
            return -ENOMEM;
    }
}

int pfile_read_once(struct pfile *f, int dirfd, const char *path)
{
    int rc = pfile_open(f, dirfd, path);
    if (rc == 0)
        rc = pfile_read(f);
    pfile_close(f);
    return rc;
}

void pfile_close(struct pfile *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

void pfile_release(struct pfile *f)
{
    pfile_close(f);
    free(f->buf);
    f->buf = NULL;
    f->cap = 0;
    f->len = 0;
}
