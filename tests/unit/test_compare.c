/* analyze/compare.c: the arithmetic of a diff, on runs built by hand. */
#include "analyze/compare.h"
#include "test.h"

/* A run of mean step mean_ns with p50/p95 spread_ns apart, its per-step
 * phase times phase_ns (summing to the mean). */
static void fake_run(struct compare_run *c, double spread_ns, const double *phase_ns)
{
    memset(c, 0, sizeof(*c));
    run_record_init(&c->rec);
    double mean = 0;
    for (int p = 0; p < PHASE_COUNT; p++)
        mean += phase_ns[p];
    c->has_steps = 1;
    c->steps.count = 100;
    c->steps.mean_ns = mean;
    c->steps.p50_ns = mean;
    c->steps.p95_ns = mean + spread_ns;
    for (int p = 0; p < PHASE_COUNT; p++) {
        c->phase_step_ns[p] = phase_ns[p];
        c->phase_share[p] = phase_ns[p] / mean;
    }
}

/* The diff of two such runs. */
static void diff_of(double spread_a, const double *phases_a, double spread_b,
                    const double *phases_b, struct compare_diff *d)
{
    struct compare_run a, b;
    fake_run(&a, spread_a, phases_a);
    fake_run(&b, spread_b, phases_b);
    compare_diff_runs(&a, &b, d);
}

TEST(slower_run_explained_by_the_phase_that_grew)
{
    struct compare_diff d;
    diff_of(1e6, (double[PHASE_COUNT]){10e6, 20e6, 10e6, 0, 0, 0}, 1e6,
            (double[PHASE_COUNT]){18e6, 20e6, 12e6, 0, 0, 0}, &d);
    ASSERT(d.steps && d.step_significant);
    ASSERT_NEAR(d.step_mean_ns, 10e6, 1);
    ASSERT_NEAR(d.step_mean_pct, 25.0, 1e-9);
    ASSERT_EQ_INT(d.explained_by, PHASE_DATA);
    ASSERT_NEAR(d.explained_share, 0.8, 1e-9);
    ASSERT_NEAR(d.phase_points[PHASE_DATA], 100.0 * (18.0 / 50 - 10.0 / 40), 1e-9);
}

TEST(faster_run_explained_by_the_phase_that_shrank)
{
    struct compare_diff d;
    diff_of(1e6, (double[PHASE_COUNT]){10e6, 20e6, 10e6, 0, 0, 0}, 1e6,
            (double[PHASE_COUNT]){11e6, 12e6, 10e6, 0, 0, 0}, &d);
    ASSERT(d.step_significant);
    ASSERT_EQ_INT(d.explained_by, PHASE_FORWARD);
    /* forward fell 8 ms of the 7 ms the mean fell: more than all of it */
    ASSERT_NEAR(d.explained_share, 8.0 / 7.0, 1e-9);
}

TEST(within_noise_is_not_significant)
{
    struct compare_diff d;
    struct compare_run a, b;
    fake_run(&a, 3e6, (double[PHASE_COUNT]){10e6, 20e6, 10e6, 0, 0, 0});
    fake_run(&b, 1e6, (double[PHASE_COUNT]){12e6, 20e6, 10e6, 0, 0, 0});
    /* 2 ms on 100 steps each: sigma 1.8 and 0.6 ms, 3 standard errors of
     * the difference 0.58 ms, so a real change */
    compare_diff_runs(&a, &b, &d);
    ASSERT(d.step_significant);
    /* the same on 4 steps each: 3 standard errors are 2.9 ms */
    a.steps.count = b.steps.count = 4;
    compare_diff_runs(&a, &b, &d);
    ASSERT(!d.step_significant);
    /* no spread at all: the 1 % floor still holds back a 0.5 % change */
    ASSERT(!compare_significant(100, 0, 100.5, 0, COMPARE_STEP_MIN_PCT));
    ASSERT(compare_significant(100, 0, 101.5, 0, COMPARE_STEP_MIN_PCT));
}

TEST(no_steps_no_step_diff)
{
    struct compare_run a, b;
    fake_run(&a, 1e6, (double[PHASE_COUNT]){10e6, 20e6, 10e6, 0, 0, 0});
    memset(&b, 0, sizeof(b));
    struct compare_diff d;
    compare_diff_runs(&a, &b, &d);
    ASSERT(!d.steps && !d.step_significant);
    ASSERT_EQ_INT(d.explained_by, -1);
    ASSERT(isnan(d.step_mean_pct));
    ASSERT(isnan(compare_pct(0, 5)));
}

TEST(param_keys_differing_and_equal)
{
    struct compare_run r[3];
    for (int i = 0; i < 3; i++) {
        memset(&r[i], 0, sizeof(r[i]));
        run_record_init(&r[i].rec);
        ASSERT_EQ_INT(kv_list_add(&r[i].rec.params, "bs", "32"), 0);
        ASSERT_EQ_INT(kv_list_add(&r[i].rec.params, "lr", i == 1 ? "0.2" : "0.1"), 0);
    }
    ASSERT_EQ_INT(kv_list_add(&r[2].rec.params, "extra", "yes"), 0);
    const char **keys;
    uint32_t nkeys, nequal;
    ASSERT_EQ_INT(compare_param_keys(r, 3, &keys, &nkeys, &nequal), 0);
    ASSERT_EQ_INT(nkeys, 2);
    ASSERT_EQ_STR(keys[0], "lr");
    ASSERT_EQ_STR(keys[1], "extra");
    ASSERT_EQ_INT(nequal, 1);
    ASSERT(compare_param_changed(&r[0], &r[2], "extra")); /* missing counts as a value */
    ASSERT(!compare_param_changed(&r[0], &r[2], "lr"));
    free(keys);
    for (int i = 0; i < 3; i++)
        compare_run_release(&r[i]);
}

/* Tags go through the same key helpers as /api/compare lists them: every
 * key once in order of first appearance, equal ones included. */
TEST(kv_keys_union_in_first_appearance_order)
{
    struct kv_list a = {0}, b = {0};
    ASSERT_EQ_INT(kv_list_add(&a, "team", "vision"), 0);
    ASSERT_EQ_INT(kv_list_add(&a, "site", "x"), 0);
    ASSERT_EQ_INT(kv_list_add(&b, "site", "x"), 0);
    ASSERT_EQ_INT(kv_list_add(&b, "workload", "w1"), 0);
    const struct kv_list *lists[2] = {&a, &b};
    const char **keys;
    uint32_t n;
    ASSERT_EQ_INT(compare_kv_keys(lists, 2, &keys, &n), 0);
    ASSERT_EQ_INT(n, 3);
    ASSERT_EQ_STR(keys[0], "team");
    ASSERT_EQ_STR(keys[1], "site");
    ASSERT_EQ_STR(keys[2], "workload");
    ASSERT(compare_kv_differs(lists, 2, "team"));     /* missing in b */
    ASSERT(!compare_kv_differs(lists, 2, "site"));    /* equal */
    ASSERT(compare_kv_differs(lists, 2, "workload")); /* missing in the baseline */
    ASSERT(!compare_kv_differs(lists, 1, "team"));    /* one list differs from nothing */
    free(keys);
    kv_list_release(&a);
    kv_list_release(&b);
}

TEST_MAIN(slower_run_explained_by_the_phase_that_grew,
          faster_run_explained_by_the_phase_that_shrank, within_noise_is_not_significant,
          no_steps_no_step_diff, param_keys_differing_and_equal,
          kv_keys_union_in_first_appearance_order)
