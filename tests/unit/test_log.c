/* Held notes (common/log.c): dropped or printed whole, in order, never cut
 * mid-line, and errors never held. stderr is a pipe read back here. */
#include <fcntl.h>

#include "common/log.h"
#include "test.h"

static int err_pipe[2];

static void capture_stderr(void)
{
    ASSERT_EQ_INT(pipe2(err_pipe, O_NONBLOCK), 0);
    ASSERT(dup2(err_pipe[1], STDERR_FILENO) >= 0);
}

static size_t read_stderr(char *buf, size_t cap)
{
    ssize_t n = read(err_pipe[0], buf, cap - 1);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

TEST(held_notes_are_dropped_or_printed_in_order)
{
    char buf[16384];
    capture_stderr();
    log_hold_notes();
    log_note("no GPU %d", 1);
    log_error("cannot run '%s'", "x"); /* errors are never held */
    log_release_notes(0);
    read_stderr(buf, sizeof(buf));
    ASSERT_EQ_STR(buf, "strobe: cannot run 'x'\n");
    log_hold_notes();
    log_note("first");
    log_note("second %s", "note");
    ASSERT_EQ_INT(read_stderr(buf, sizeof(buf)), 0);
    log_release_notes(1);
    read_stderr(buf, sizeof(buf));
    ASSERT_EQ_STR(buf, "strobe: first\nstrobe: second note\n");
    log_note("after");
    read_stderr(buf, sizeof(buf));
    ASSERT_EQ_STR(buf, "strobe: after\n"); /* released: notes go straight out again */
}

TEST(held_notes_past_the_room_are_dropped_whole)
{
    char buf[16384], line[200];
    capture_stderr();
    memset(line, 'n', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\0';
    log_hold_notes();
    for (int i = 0; i < 40; i++) /* 40 x 208 bytes: more than the 4 KiB held */
        log_note("%02d %s", i, line);
    log_release_notes(1);
    size_t n = read_stderr(buf, sizeof(buf));
    ASSERT(n > 3000 && n <= 4096);
    ASSERT(buf[n - 1] == '\n');
    size_t lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    ASSERT_EQ_INT(n, lines * (8 + 3 + sizeof(line) - 1 + 1)); /* every line whole */
    ASSERT(strncmp(buf, "strobe: 00 ", 11) == 0);
}

TEST_MAIN(held_notes_are_dropped_or_printed_in_order, held_notes_past_the_room_are_dropped_whole)
