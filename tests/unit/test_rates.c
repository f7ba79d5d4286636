/* Rates at the frames' scheduled times (sample/collector.h): a counter's
 * value at each deadline is interpolated between the reads around it, so a
 * late read neither inflates its point nor starves the next, and the rates
 * integrated over the deadlines telescope to the counter's change. */
#include "common/clock.h"
#include "sample/collector.h"
#include "test.h"

#define MS NS_PER_MS

/* One collector's reads of one counter: deadlines every 100 ms. */
struct rig {
    struct sample_ctx ctx;
    struct read_time prev;
    struct rate_counter c;
    int started;
};

/* A read of the counter at value now for the frame due at due_ms, begun
 * late_ms after it; returns the rate (NAN for the first read). */
static double read_at(struct rig *r, int64_t due_ms, double late_ms, uint64_t now)
{
    r->ctx.mono_ns = due_ms * MS;
    r->ctx.read_ns = due_ms * MS + (int64_t)(late_ms * 1e6);
    double rate = NAN;
    if (r->started)
        rate = counter_rate(&r->ctx, &r->prev, &r->c, now);
    else
        rate_counter_start(&r->c, now);
    r->started = 1;
    read_time_set(&r->prev, &r->ctx);
    return rate;
}

TEST(on_time_reads_give_the_plain_change)
{
    struct rig r = {0};
    read_at(&r, 100, 0, 1000);
    ASSERT_NEAR(read_at(&r, 200, 0, 1037), 370.0, 0);
    ASSERT_NEAR(read_at(&r, 400, 0, 1137), 500.0, 0); /* a missed frame: over 200 ms */
}

/* A thread busy all along (1 ns of CPU per ns) read 30 ms late, then on
 * time: the change over 130 ms then 70 ms, each point 100 % of the time. */
TEST(a_late_read_is_not_a_spike_and_the_next_not_a_dip)
{
    struct rig r = {0};
    read_at(&r, 100, 0, 100 * MS);
    double late = read_at(&r, 200, 30, 230 * MS);
    double next = read_at(&r, 300, 0, 300 * MS);
    ASSERT_NEAR(late, 1e9, 1); /* ns per s: one core */
    ASSERT_NEAR(next, 1e9, 1);
}

/* A burst of 40 MB just before a late read: the rates still add up to it. */
TEST(rates_integrate_to_the_change)
{
    struct rig r = {0};
    read_at(&r, 100, 0, 0);
    double sum = 0;
    sum += read_at(&r, 200, 0, 0) * 0.1;
    sum += read_at(&r, 300, 45, 40000000) * 0.1; /* written in the 45 ms after 300 */
    sum += read_at(&r, 400, 0.2, 40000000) * 0.1;
    sum += read_at(&r, 500, 0, 40000000) * 0.1;
    ASSERT_NEAR(sum, 40000000.0, 1e-6);
}

/* Values stay whole counts per interval (they compress as on-time ones). */
TEST(interpolated_counts_are_whole)
{
    struct rig r = {0};
    read_at(&r, 100, 0, 1000);
    double v = read_at(&r, 200, 3.3, 1037); /* 37 over 103.3 ms: 35.8 by the deadline */
    ASSERT_NEAR(v, 360.0, 0);
    ASSERT_NEAR(read_at(&r, 300, 0, 1040), 40.0, 0); /* 1036 -> 1040 */
}

TEST(a_counter_that_goes_back_reads_zero)
{
    struct rig r = {0};
    read_at(&r, 100, 0, 5000);
    ASSERT_NEAR(read_at(&r, 200, 10, 100), 0.0, 0);
    ASSERT_NEAR(read_at(&r, 300, 0, 110), 100.0, 0); /* counts from the new base */
}

/* Reads stamped as given (fixtures, the stepped bench): on time. */
TEST(reads_at_the_deadline_are_taken_whole)
{
    struct sample_ctx ctx = {NULL, NULL, 200 * MS, 200 * MS, 0};
    struct read_time prev = {100 * MS, 100 * MS};
    ASSERT_EQ_U64(counter_at_due(&ctx, &prev, 1000, 1037), 1037);
    ctx.read_ns = 150 * MS; /* before the deadline: nothing to take out */
    ASSERT_EQ_U64(counter_at_due(&ctx, &prev, 1000, 1037), 1037);
    prev.read_ns = 250 * MS; /* the previous read came after this deadline */
    ctx.read_ns = 260 * MS;
    ASSERT_EQ_U64(counter_at_due(&ctx, &prev, 1000, 1037), 1000);
}

TEST_MAIN(on_time_reads_give_the_plain_change, a_late_read_is_not_a_spike_and_the_next_not_a_dip,
          rates_integrate_to_the_change, interpolated_counts_are_whole,
          a_counter_that_goes_back_reads_zero, reads_at_the_deadline_are_taken_whole)
