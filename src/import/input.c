#include "import/input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PIPE_FIRST_BYTES 65536 /* the first buffer when the size is not known */

/* fd to its end into a buffer first sized for size_hint bytes. */
static int read_to_end(int fd, size_t size_hint, size_t max_bytes, char **out, size_t *len)
{
    /* + 2: room for the NUL and for the read that sees the end, so a file
     * that keeps its size is read without growing the buffer */
    size_t cap = (size_hint ? size_hint : PIPE_FIRST_BYTES) + 2, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (n + 1 >= cap) { /* a pipe, or a file that grew while we read it */
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                return -ENOMEM;
            }
            buf = p;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int rc = -errno;
            free(buf);
            return rc;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max_bytes) {
            free(buf);
            return -EFBIG;
        }
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

int input_read_file(const char *path, size_t max_bytes, unsigned flags, char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    int regular = rc == 0 && S_ISREG(st.st_mode);
    if (rc == 0 && (flags & INPUT_REGULAR_ONLY) && !regular)
        rc = -EISDIR;
    if (rc == 0 && regular && (unsigned long long)st.st_size > max_bytes)
        rc = -EFBIG;
    if (rc == 0)
        rc = read_to_end(fd, regular ? (size_t)st.st_size : 0, max_bytes, out, len);
    close(fd);
    return rc;
}
