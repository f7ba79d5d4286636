#include "sample/pfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "sample/parse.h"

#define PFILE_MIN_CAP 1024
/* Below this a short read is the whole file: a seq_file's page (4096 bytes
 * at the least) less room for its longest record, which is far shorter. */
#define PFILE_WHOLE_MAX 3072

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
    size_t len = 0;
    for (;;) {
        /* Leave room for the NUL; a read that fills the rest may be cut. */
        if (len + 1 >= f->cap && pfile_grow(f) < 0)
            return -ENOMEM;
        ssize_t n = pread(f->fd, f->buf + len, f->cap - 1 - len, (off_t)len);
        if (n < 0)
            return errno == EINTR ? -EAGAIN : -errno;
        len += (size_t)n;
        /* A file printed record by record (a children list, /proc/net/dev,
         * /proc/vmstat) comes at most one page per read however large the
         * buffer, cut where the next record would not fit; a short read
         * under PFILE_WHOLE_MAX bytes cannot be such a cut. */
        if (n == 0 || (len < f->cap - 1 && (size_t)n < PFILE_WHOLE_MAX))
            break;
    }
    f->len = len;
    f->buf[len] = '\0';
    return 0;
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

int pfile_read_statm(struct pfile *f, uint64_t *resident_pages)
{
    if (f->fd < 0)
        return -EBADF;
    int rc = pfile_read(f);
    return rc < 0 ? rc : parse_pid_statm(f->buf, f->len, resident_pages);
}
