/*
 * A small unit-test harness in the manner of libuv's runner: each test runs in
 * its own forked process under a timeout, so a crash or a hang fails that test
 * only. Output is one TAP-like line per test ("ok - name" / "not ok - name"),
 * which tests/run counts.
 *
 * Usage:
 *   TEST(parses_stat) { ASSERT_EQ_INT(1, 1); }
 *   TEST_MAIN(parses_stat, other_test)
 */
#ifndef STROBE_TEST_H
#define STROBE_TEST_H

#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void test_fn(void);

struct test_case {
    const char *name;
    test_fn *fn;
};

#define TEST(name) static void test_##name(void)

#define TEST_FAIL(...)                                                                             \
    do {                                                                                           \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                          \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

#define ASSERT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond))                                                                               \
            TEST_FAIL("assertion failed: %s", #cond);                                              \
    } while (0)

#define ASSERT_EQ_INT(a, b)                                                                        \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_)                                                                              \
            TEST_FAIL("%s == %s: %lld != %lld", #a, #b, a_, b_);                                   \
    } while (0)

#define ASSERT_EQ_U64(a, b)                                                                        \
    do {                                                                                           \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                           \
        if (a_ != b_)                                                                              \
            TEST_FAIL("%s == %s: %" PRIu64 " != %" PRIu64, #a, #b, a_, b_);                        \
    } while (0)

#define ASSERT_EQ_STR(a, b)                                                                        \
    do {                                                                                           \
        const char *a_ = (a), *b_ = (b);                                                           \
        if (!a_ || !b_ || strcmp(a_, b_) != 0)                                                     \
            TEST_FAIL("%s == %s: \"%s\" != \"%s\"", #a, #b, a_ ? a_ : "(null)",                    \
                      b_ ? b_ : "(null)");                                                         \
    } while (0)

#define ASSERT_NEAR(a, b, tol)                                                                     \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b), t_ = (double)(tol);                             \
        if (!(fabs(a_ - b_) <= t_))                                                                \
            TEST_FAIL("%s ~= %s (±%g): %.17g vs %.17g", #a, #b, t_, a_, b_);                       \
    } while (0)

#define TEST_TIMEOUT_S 30

/* Names of shared-memory segments a test made: removed when the test's
 * process exits, failed assertions included (TEST_FAIL exits, so atexit runs). */
#include <sys/mman.h>

#include "common/array.h"
#define TEST_SHM_MAX 16
static char test_shm_names[TEST_SHM_MAX][64];
static int test_shm_count;

static inline void test_shm_cleanup(void)
{
    for (int i = 0; i < test_shm_count; i++)
        shm_unlink(test_shm_names[i]);
}

static inline void test_shm_track(const char *name)
{
    if (test_shm_count == 0)
        atexit(test_shm_cleanup);
    if (test_shm_count < TEST_SHM_MAX)
        snprintf(test_shm_names[test_shm_count++], sizeof(test_shm_names[0]), "%s", name);
}

/* xorshift64*: deterministic across runs, so a failure replays. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

/* The bits of a double and back: values are compared bit for bit. */
static inline uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static inline double bdbl(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof(v));
    return v;
}

static inline int test_run_one(const struct test_case *tc)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(TEST_TIMEOUT_S);
        tc->fn();
        exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) {
        printf("not ok - %s (cannot fork)\n", tc->name);
        return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        printf("ok - %s\n", tc->name);
        return 0;
    }
    if (WIFSIGNALED(status))
        printf("not ok - %s (signal %d%s)\n", tc->name, WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? ", timed out" : "");
    else
        printf("not ok - %s\n", tc->name);
    return 1;
}

static inline int test_main(const struct test_case *cases, size_t n, int argc, char **argv)
{
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc > 1 && !strstr(cases[i].name, argv[1]))
            continue;
        failed += test_run_one(&cases[i]);
    }
    return failed ? 1 : 0;
}

#define TEST_ENTRY(name) {#name, test_##name},

/* TEST_MAIN(a, b, c): one entry per test function, in order. */
#define TEST_MAIN(...)                                                                             \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        static const struct test_case cases[] = {TEST_FOREACH(TEST_ENTRY, __VA_ARGS__)};           \
        return test_main(cases, ARRAY_SIZE(cases), argc, argv);                                    \
    }

/* A bounded FOR_EACH for up to 40 tests per file. */
#define TEST_FE_1(m, a)       m(a)
#define TEST_FE_2(m, a, ...)  m(a) TEST_FE_1(m, __VA_ARGS__)
#define TEST_FE_3(m, a, ...)  m(a) TEST_FE_2(m, __VA_ARGS__)
#define TEST_FE_4(m, a, ...)  m(a) TEST_FE_3(m, __VA_ARGS__)
#define TEST_FE_5(m, a, ...)  m(a) TEST_FE_4(m, __VA_ARGS__)
#define TEST_FE_6(m, a, ...)  m(a) TEST_FE_5(m, __VA_ARGS__)
#define TEST_FE_7(m, a, ...)  m(a) TEST_FE_6(m, __VA_ARGS__)
#define TEST_FE_8(m, a, ...)  m(a) TEST_FE_7(m, __VA_ARGS__)
#define TEST_FE_9(m, a, ...)  m(a) TEST_FE_8(m, __VA_ARGS__)
#define TEST_FE_10(m, a, ...) m(a) TEST_FE_9(m, __VA_ARGS__)
#define TEST_FE_11(m, a, ...) m(a) TEST_FE_10(m, __VA_ARGS__)
#define TEST_FE_12(m, a, ...) m(a) TEST_FE_11(m, __VA_ARGS__)
#define TEST_FE_13(m, a, ...) m(a) TEST_FE_12(m, __VA_ARGS__)
#define TEST_FE_14(m, a, ...) m(a) TEST_FE_13(m, __VA_ARGS__)
#define TEST_FE_15(m, a, ...) m(a) TEST_FE_14(m, __VA_ARGS__)
#define TEST_FE_16(m, a, ...) m(a) TEST_FE_15(m, __VA_ARGS__)
#define TEST_FE_17(m, a, ...) m(a) TEST_FE_16(m, __VA_ARGS__)
#define TEST_FE_18(m, a, ...) m(a) TEST_FE_17(m, __VA_ARGS__)
#define TEST_FE_19(m, a, ...) m(a) TEST_FE_18(m, __VA_ARGS__)
#define TEST_FE_20(m, a, ...) m(a) TEST_FE_19(m, __VA_ARGS__)
#define TEST_FE_21(m, a, ...) m(a) TEST_FE_20(m, __VA_ARGS__)
#define TEST_FE_22(m, a, ...) m(a) TEST_FE_21(m, __VA_ARGS__)
#define TEST_FE_23(m, a, ...) m(a) TEST_FE_22(m, __VA_ARGS__)
#define TEST_FE_24(m, a, ...) m(a) TEST_FE_23(m, __VA_ARGS__)
#define TEST_FE_25(m, a, ...) m(a) TEST_FE_24(m, __VA_ARGS__)
#define TEST_FE_26(m, a, ...) m(a) TEST_FE_25(m, __VA_ARGS__)
#define TEST_FE_27(m, a, ...) m(a) TEST_FE_26(m, __VA_ARGS__)
#define TEST_FE_28(m, a, ...) m(a) TEST_FE_27(m, __VA_ARGS__)
#define TEST_FE_29(m, a, ...) m(a) TEST_FE_28(m, __VA_ARGS__)
#define TEST_FE_30(m, a, ...) m(a) TEST_FE_29(m, __VA_ARGS__)
#define TEST_FE_31(m, a, ...) m(a) TEST_FE_30(m, __VA_ARGS__)
#define TEST_FE_32(m, a, ...) m(a) TEST_FE_31(m, __VA_ARGS__)
#define TEST_FE_33(m, a, ...) m(a) TEST_FE_32(m, __VA_ARGS__)
#define TEST_FE_34(m, a, ...) m(a) TEST_FE_33(m, __VA_ARGS__)
#define TEST_FE_35(m, a, ...) m(a) TEST_FE_34(m, __VA_ARGS__)
#define TEST_FE_36(m, a, ...) m(a) TEST_FE_35(m, __VA_ARGS__)
#define TEST_FE_37(m, a, ...) m(a) TEST_FE_36(m, __VA_ARGS__)
#define TEST_FE_38(m, a, ...) m(a) TEST_FE_37(m, __VA_ARGS__)
#define TEST_FE_39(m, a, ...) m(a) TEST_FE_38(m, __VA_ARGS__)
#define TEST_FE_40(m, a, ...) m(a) TEST_FE_39(m, __VA_ARGS__)
#define TEST_FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17,   \
                     _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32,    \
                     _33, _34, _35, _36, _37, _38, _39, _40, N, ...)                               \
    N
#define TEST_FOREACH(m, ...)                                                                       \
    TEST_FE_PICK(__VA_ARGS__, TEST_FE_40, TEST_FE_39, TEST_FE_38, TEST_FE_37, TEST_FE_36,          \
                 TEST_FE_35, TEST_FE_34, TEST_FE_33, TEST_FE_32, TEST_FE_31, TEST_FE_30,           \
                 TEST_FE_29, TEST_FE_28, TEST_FE_27, TEST_FE_26, TEST_FE_25, TEST_FE_24,           \
                 TEST_FE_23, TEST_FE_22, TEST_FE_21, TEST_FE_20, TEST_FE_19, TEST_FE_18,           \
                 TEST_FE_17, TEST_FE_16, TEST_FE_15, TEST_FE_14, TEST_FE_13, TEST_FE_12,           \
                 TEST_FE_11, TEST_FE_10, TEST_FE_9, TEST_FE_8, TEST_FE_7, TEST_FE_6, TEST_FE_5,    \
                 TEST_FE_4, TEST_FE_3, TEST_FE_2, TEST_FE_1)                                       \
    (m, __VA_ARGS__)

#endif
