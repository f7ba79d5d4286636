/*
 * The job's output as the recorder copies it while the tee still writes:
 * a real tee process fed through its pipe by a thread, as fast as the pipe
 * takes it and in bursts with pauses, and the recorder's copies taken all
 * the while. The byte at stream position p is stream_byte(p), so every
 * copy can be checked whole: the head as written, the note, and a tail
 * that is exactly the bytes before the copy's count. A copy that read a
 * slot the tee had just written over shows as a wrong byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "record/logtee.h"
#include "test.h"

static uint8_t stream_byte(uint64_t p)
{
    /* differs between p and p + the ring's size: a misplaced slot shows */
    return (uint8_t)((p ^ (p >> 7) ^ (p >> 15) ^ (p >> 21)) * 31u + 7u);
}

struct feeder {
    int fd;
    uint64_t until_bytes;
    atomic_int done;
};

static void *feed(void *arg)
{
    struct feeder *f = arg;
    uint8_t buf[4096];
    uint64_t sent = 0, rng = 42;
    while (sent < f->until_bytes) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = stream_byte(sent + i);
        ssize_t n = write(f->fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        sent += (uint64_t)n;
        /* a burst of up to 64 KiB at the pipe's speed, then a pause of up
         * to 200 us: copies land both while the tee writes and between */
        if (rng_next(&rng) % 16 == 0) {
            struct timespec ts = {0, (long)(rng_next(&rng) % 200000)};
            nanosleep(&ts, NULL);
        }
    }
    atomic_store(&f->done, 1);
    return NULL;
}

/* 0 when out is a whole copy as of bytes; else the offset of the first
 * byte that is wrong, plus one. */
static size_t check_copy(const struct strbuf *out, int64_t bytes, uint64_t *kept_out)
{
    uint64_t total = (uint64_t)bytes;
    size_t head = total < LOG_HEAD_BYTES ? (size_t)total : LOG_HEAD_BYTES;
    for (size_t i = 0; i < head && i < out->len; i++)
        if ((uint8_t)out->buf[i] != stream_byte(i))
            return i + 1;
    *kept_out = out->len - head;
    if (total <= LOG_HEAD_BYTES)
        return out->len == head ? 0 : head + 1;
    const char *note = out->buf + head;
    unsigned long long cut = 0, kept = 0;
    unsigned first = 0;
    if (out->len - head < 10 || strncmp(note, "\n[strobe: ", 10) != 0) {
        /* nothing cut yet: the rest follows the head directly */
        if (out->len != total || log_text_tail_start(out->buf, out->len, bytes) != 0)
            return head + 1;
        for (size_t i = head; i < out->len; i++)
            if ((uint8_t)out->buf[i] != stream_byte(i))
                return i + 1;
        return 0;
    }
    const char *end = memmem(note, out->len - head, "]\n", 2);
    if (!end || sscanf(note, "\n[strobe: %llu bytes cut here; the first %u and the last %llu kept]",
                       &cut, &first, &kept) != 3)
        return head + 1;
    const char *tail = end + 2;
    size_t tail_len = out->len - (size_t)(tail - out->buf);
    if (tail_len != kept || first != LOG_HEAD_BYTES || cut + kept + LOG_HEAD_BYTES != total ||
        log_text_tail_start(out->buf, out->len, bytes) != (size_t)(tail - out->buf))
        return head + 1;
    for (size_t i = 0; i < tail_len; i++)
        if ((uint8_t)tail[i] != stream_byte(total - kept + i))
            return (size_t)(tail - out->buf) + i + 1;
    *kept_out = kept;
    return 0;
}

TEST(copies_while_the_tee_writes_are_whole)
{
    int sink = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ASSERT(sink >= 0);
    struct log_tee t;
    ASSERT_EQ_INT(log_tee_start(&t, sink, NULL), 0);
    struct feeder f = {t.job_fd, 192u * 1024 * 1024, 0};
    pthread_t th;
    ASSERT_EQ_INT(pthread_create(&th, NULL, feed, &f), 0);
    struct strbuf out;
    strbuf_init(&out);
    int whole = 0, outrun = 0, wrapped = 0;
    uint64_t min_kept = UINT64_MAX;
    while (!atomic_load(&f.done)) {
        int64_t bytes;
        strbuf_reset(&out);
        int rc = log_tee_text(&t, &out, &bytes);
        if (rc == -EAGAIN) {
            outrun++;
            continue;
        }
        ASSERT_EQ_INT(rc, 0);
        uint64_t kept = 0;
        size_t bad = check_copy(&out, bytes, &kept);
        if (bad)
            TEST_FAIL("copy %d as of %lld bytes: wrong from byte %zu of %zu", whole,
                      (long long)bytes, bad - 1, out.len);
        whole++;
        if ((uint64_t)bytes > LOG_HEAD_BYTES + LOG_TAIL_BYTES) {
            wrapped++;
            min_kept = kept < min_kept ? kept : min_kept;
        }
    }
    pthread_join(th, NULL);
    log_tee_job_started(&t); /* the pipe's end: the tee sees it and exits */
    log_tee_wait(&t, 5000);
    int64_t bytes;
    strbuf_reset(&out);
    ASSERT_EQ_INT(log_tee_text(&t, &out, &bytes), 0);
    uint64_t kept = 0;
    ASSERT_EQ_INT(check_copy(&out, bytes, &kept), 0);
    ASSERT_EQ_U64((uint64_t)bytes, f.until_bytes);
    ASSERT_EQ_U64(kept, LOG_TAIL_BYTES); /* once the tee is done the whole ring is kept */
    fprintf(stderr,
            "  %d whole copies (%d after the ring wrapped, the least kept %llu), %d outrun\n",
            whole, wrapped, (unsigned long long)min_kept, outrun);
    ASSERT(wrapped >= 10);
    ASSERT(min_kept >= LOG_TAIL_BYTES - 256 * 1024); /* the most a fourth try leaves out */
    strbuf_release(&out);
    log_tee_close(&t);
    close(sink);
    waitpid(t.pid, NULL, 0);
}

/* A head of LOG_HEAD_BYTES that holds a lookalike of the cut note, then
 * after. */
static void head_then(struct strbuf *text, const char *after)
{
    strbuf_reset(text);
    ASSERT_EQ_INT(strbuf_adds(text, "\n[strobe: 5 bytes cut here; printed by the job]\n"), 0);
    while (text->len < LOG_HEAD_BYTES)
        ASSERT_EQ_INT(strbuf_addch(text, 'h'), 0);
    ASSERT_EQ_INT(strbuf_adds(text, after), 0);
}

/* The newest bytes of a cut text start after the note that follows the
 * head: not at a lookalike in the job's output, and whether the cut was
 * larger or smaller than the note itself. */
TEST(tail_starts_after_the_cut_note_not_a_lookalike)
{
    struct strbuf text;
    strbuf_init(&text);
    for (unsigned long long cut = 1; cut <= 1000000; cut *= 1000) {
        char after[128];
        snprintf(after, sizeof(after),
                 "\n[strobe: %llu bytes cut here; the first 262144 and the last 4 kept]\nTAIL",
                 cut);
        head_then(&text, after);
        size_t from = log_text_tail_start(text.buf, text.len, (int64_t)(LOG_HEAD_BYTES + cut + 4));
        ASSERT_EQ_STR(text.buf + from, "TAIL");
        /* figures that do not add up to the count: not known to be the note */
        ASSERT_EQ_INT(log_text_tail_start(text.buf, text.len, (int64_t)(LOG_HEAD_BYTES + cut + 5)),
                      text.len);
    }
    /* nothing cut, the job's own text past the head looking like a note */
    head_then(&text, "\n[strobe: 1 bytes cut here; the first 262144 and the last 4 kept]\nmore");
    ASSERT_EQ_INT(log_text_tail_start(text.buf, text.len, (int64_t)text.len), 0);
    head_then(&text, "");
    ASSERT_EQ_INT(log_text_tail_start(text.buf, text.len, (int64_t)text.len), 0);
    strbuf_release(&text);
}

TEST_MAIN(copies_while_the_tee_writes_are_whole, tail_starts_after_the_cut_note_not_a_lookalike)
