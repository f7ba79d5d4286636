#include "common/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int file_write_stream(FILE *f, const struct strbuf *buf)
{
    int rc = strbuf_write(buf, f);
    if (rc == 0 && fflush(f) != 0)
        rc = -(errno ? errno : EIO);
    return rc;
}

/* Write buf straight into path: a device, a FIFO or the like, which a
 * rename would replace with a file. */
static int write_in_place(const char *path, const struct strbuf *buf)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -errno;
    int rc = file_write_stream(f, buf);
    if (fclose(f) != 0 && rc == 0)
        rc = -(errno ? errno : EIO);
    return rc;
}

/* Through a temporary file beside path, renamed over it. */
static int write_replacing(const char *path, const struct strbuf *buf)
{
    struct strbuf tmp;
    strbuf_init(&tmp);
    strbuf_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    int rc = strbuf_failed(&tmp) ? -ENOMEM : write_in_place(tmp.buf, buf);
    if (rc == 0 && rename(tmp.buf, path) != 0)
        rc = -errno;
    if (rc < 0 && !strbuf_failed(&tmp))
        unlink(tmp.buf);
    strbuf_release(&tmp);
    return rc;
}

int file_replace(const char *path, const struct strbuf *buf)
{
    char *real = realpath(path, NULL);
    const char *target = real ? real : path;
    struct stat st;
    int rc;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && !real)
        rc = write_in_place(path, buf); /* a dangling link: create what it names */
    else if (stat(target, &st) == 0 && !S_ISREG(st.st_mode))
        rc = S_ISDIR(st.st_mode) ? -EISDIR : write_in_place(target, buf);
    else
        rc = write_replacing(target, buf);
    free(real);
    return rc;
}
