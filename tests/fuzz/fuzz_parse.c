/*
 * libFuzzer target for the /proc and /sys parsers (sample/parse.h).
 *
 * The input is copied into a buffer of exactly its size with no NUL after
 * it, and every parser reads all of it: none may read out of bounds, each
 * returns one of its documented values, and the line iterators always move
 * forward and stop at the end. The first byte also picks a flat key, so the
 * key matching is fuzzed along with the values.
 *
 *   clang -std=c11 -D_GNU_SOURCE -Iinclude -Isrc -fsanitize=fuzzer,address,undefined \
 *     tests/fuzz/fuzz_parse.c src/sample/parse.c src/common/cursor.c -o fuzz_parse
 *   mkdir -p /tmp/corpus && ./fuzz_parse -max_total_time=30 /tmp/corpus tests/data
 * (new inputs go to the first directory; the fixture trees seed it)
 */
#include "common/array.h"
#include "sample/parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

#define MAX_CORES 8

static const char *const flat_keys[] = {
    "nr_throttled",   "throttled_usec",
    "throttled_time", "hierarchical_memory_limit",
    "usage_usec",     "", /* the empty key: matches any line that starts with a blank */
};

static void count_pid(pid_t pid, void *arg)
{
    CHECK(pid > 0);
    (*(int *)arg)++;
}

static void iterate_diskstats(const char *buf, size_t len)
{
    size_t pos = 0, prev = 0;
    struct diskstat ds;
    int rc;
    while ((rc = parse_diskstats_next(buf, len, &pos, &ds)) != 0) {
        CHECK(rc == 1 || rc == -EINVAL);
        CHECK(pos > prev && pos <= len);
        if (rc == 1)
            CHECK(memchr(ds.name, '\0', sizeof(ds.name)) != NULL);
        prev = pos;
    }
}

static void iterate_netdev(const char *buf, size_t len)
{
    size_t pos = 0, prev = 0;
    struct netdev nd;
    int rc;
    while ((rc = parse_netdev_next(buf, len, &pos, &nd)) != 0) {
        CHECK(rc == 1 || rc == -EINVAL);
        CHECK(pos > prev && pos <= len);
        if (rc == 1)
            CHECK(memchr(nd.name, '\0', sizeof(nd.name)) != NULL);
        prev = pos;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);
    const char *b = buf;

    struct cpu_ticks total, cores[MAX_CORES];
    uint8_t seen[MAX_CORES];
    int rc = parse_proc_stat(b, size, &total, cores, seen, MAX_CORES);
    CHECK(rc >= 0 || rc == -EINVAL);

    struct meminfo mi;
    rc = parse_meminfo(b, size, &mi);
    CHECK(rc == 0 || rc == -EINVAL);

    uint64_t x, y;
    rc = parse_vmstat_swap(b, size, &x, &y);
    CHECK(rc == 0 || rc == -EINVAL);
    rc = parse_psi(b, size, &x, &y);
    CHECK(rc == 0 || rc == -EINVAL);

    iterate_diskstats(b, size);
    iterate_netdev(b, size);

    struct pid_stat st;
    rc = parse_pid_stat(b, size, &st);
    CHECK(rc == 0 || rc == -EINVAL);
    if (rc == 0)
        CHECK(memchr(st.comm, '\0', sizeof(st.comm)) != NULL);
    struct pid_io io;
    rc = parse_pid_io(b, size, &io);
    CHECK(rc == 0 || rc == -EINVAL);
    rc = parse_pid_statm(b, size, &x);
    CHECK(rc == 0 || rc == -EINVAL);
    rc = parse_pid_schedstat(b, size, &x, &x);
    CHECK(rc == 0 || rc == -EINVAL);
    struct diskstat ds;
    rc = parse_block_stat(b, size, &ds);
    CHECK(rc == 0 || rc == -EINVAL);

    int n = 0;
    rc = parse_pid_list(b, size, count_pid, &n);
    CHECK(rc == -EINVAL || (rc >= 0 && rc == n));

    const char *key = flat_keys[size ? data[0] % (ARRAY_SIZE(flat_keys)) : 0];
    rc = parse_flat_key(b, size, key, &x);
    CHECK(rc == 0 || rc == -EINVAL || rc == -ENOENT);
    rc = parse_u64_or_max(b, size, &x);
    CHECK(rc == 0 || rc == -EINVAL);

    free(buf);
    return 0;
}
