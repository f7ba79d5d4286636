/* Reading an importer's files whole (import/input.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "import/input.h"

#include "fixture.h"
#include "test.h"

TEST(a_regular_file_whole_and_nul_terminated)
{
    char dir[512], path[600];
    fixture_tmpdir(dir, sizeof(dir));
    fixture_join(path, sizeof(path), dir, "trace.json");
    fixture_write_str(path, "{\"traceEvents\": []}");
    char *buf = NULL;
    size_t len = 0;
    ASSERT_EQ_INT(input_read_file(path, 1024, INPUT_REGULAR_ONLY, &buf, &len), 0);
    ASSERT_EQ_INT(len, 19);
    ASSERT_EQ_STR(buf, "{\"traceEvents\": []}");
    free(buf);
    ASSERT_EQ_INT(input_read_file(path, 19, 0, &buf, &len), 0); /* max_bytes itself is fine */
    free(buf);
    buf = NULL;
    ASSERT_EQ_INT(input_read_file(path, 18, 0, &buf, &len), -EFBIG);
    ASSERT(buf == NULL);
    fixture_write(path, "", 0);
    ASSERT_EQ_INT(input_read_file(path, 1024, 0, &buf, &len), 0);
    ASSERT_EQ_INT(len, 0);
    ASSERT_EQ_STR(buf, "");
    free(buf);
    fixture_rmtree(dir);
}

TEST(what_is_not_a_file)
{
    char dir[512], path[600];
    fixture_tmpdir(dir, sizeof(dir));
    fixture_join(path, sizeof(path), dir, "missing.json");
    char *buf = NULL;
    size_t len;
    ASSERT_EQ_INT(input_read_file(path, 1024, 0, &buf, &len), -ENOENT);
    ASSERT_EQ_INT(input_read_file(dir, 1024, INPUT_REGULAR_ONLY, &buf, &len), -EISDIR);
    ASSERT_EQ_INT(input_read_file(dir, 1024, 0, &buf, &len), -EISDIR); /* read(2) says so */
    ASSERT(buf == NULL);
    fixture_rmtree(dir);
}

/* A pipe of n bytes 'x' from a child, as "/dev/fd/N"; the child's pid in *child. */
static int pipe_of(size_t n, char *path, size_t cap, pid_t *child)
{
    int fds[2];
    ASSERT_EQ_INT(pipe(fds), 0);
    *child = fork();
    ASSERT(*child >= 0);
    if (*child == 0) {
        close(fds[0]);
        char chunk[4096];
        memset(chunk, 'x', sizeof(chunk));
        for (size_t left = n; left;) {
            ssize_t w = write(fds[1], chunk, left < sizeof(chunk) ? left : sizeof(chunk));
            if (w <= 0)
                _exit(1);
            left -= (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    snprintf(path, cap, "/dev/fd/%d", fds[0]);
    return fds[0];
}

TEST(a_pipe_is_read_to_its_end_unless_only_files_will_do)
{
    char path[64];
    pid_t child;
    int fd = pipe_of(200000, path, sizeof(path), &child); /* past the first buffer */
    char *buf = NULL;
    size_t len = 0;
    ASSERT_EQ_INT(input_read_file(path, 1 << 20, 0, &buf, &len), 0);
    ASSERT_EQ_INT(len, 200000);
    ASSERT(buf[0] == 'x' && buf[len - 1] == 'x' && buf[len] == '\0');
    free(buf);
    close(fd);
    waitpid(child, NULL, 0);

    fd = pipe_of(200000, path, sizeof(path), &child);
    ASSERT_EQ_INT(input_read_file(path, 100000, 0, &buf, &len), -EFBIG);
    close(fd);
    waitpid(child, NULL, 0);

    fd = pipe_of(10, path, sizeof(path), &child);
    ASSERT_EQ_INT(input_read_file(path, 1024, INPUT_REGULAR_ONLY, &buf, &len), -EISDIR);
    close(fd);
    waitpid(child, NULL, 0);
}

TEST_MAIN(a_regular_file_whole_and_nul_terminated, what_is_not_a_file,
          a_pipe_is_read_to_its_end_unless_only_files_will_do)
