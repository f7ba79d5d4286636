/* The catalog of metrics (src/common/metrics.def): every row is well formed
 * and found by its name. */
#include <ctype.h>

#include "common/metrics.h"
#include "test.h"

/* A stored name: lower-case words joined by dots, or a family's prefix and '*'. */
static int well_named(const char *name)
{
    size_t n = strlen(name), dots = 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '.')
            dots++;
        else if (!(islower((unsigned char)c) || isdigit((unsigned char)c) || c == '_') &&
                 !(c == '*' && i == n - 1))
            return 0;
    }
    return n > 2 && dots >= 1 && name[0] != '.';
}

TEST(every_row_is_well_formed)
{
    for (int i = 0; i < METRIC_COUNT; i++) {
        const struct metric_info *m = metric_info((enum metric_id)i);
        if (!well_named(m->name))
            TEST_FAIL("row %d: bad name '%s'", i, m->name);
        ASSERT(m->unit && m->labels && m->source && *m->source && m->help && *m->help);
        ASSERT(metric_kind_name(m->kind) != NULL);
    }
}

TEST(every_name_is_spelled_once)
{
    for (int i = 0; i < METRIC_COUNT; i++)
        for (int j = i + 1; j < METRIC_COUNT; j++)
            if (strcmp(metric_name((enum metric_id)i), metric_name((enum metric_id)j)) == 0)
                TEST_FAIL("'%s' is in the catalog twice", metric_name((enum metric_id)i));
}

TEST(lookup_finds_each_row_by_its_name)
{
    for (int i = 0; i < METRIC_COUNT; i++)
        if (!metric_is_family((enum metric_id)i))
            ASSERT_EQ_INT(metric_lookup(metric_name((enum metric_id)i)), i);
    ASSERT_EQ_INT(metric_lookup("no.such_metric"), -1);
    ASSERT_EQ_INT(metric_lookup("proc"), -1);
}

TEST(lookup_finds_a_family_member)
{
    ASSERT_EQ_INT(metric_lookup("app.loss"), METRIC_APP);
    ASSERT_EQ_INT(metric_lookup("app.samples_per_s"), METRIC_APP_SAMPLES_PER_S);
    ASSERT_EQ_INT(metric_lookup("sagemaker.cpu.x"), METRIC_SAGEMAKER);
    ASSERT(metric_in_family("app.loss", METRIC_APP));
    ASSERT(!metric_in_family("apps.loss", METRIC_APP));
    ASSERT_EQ_INT(metric_family_prefix_len(METRIC_APP), 4);
}

/* Stored units must not change: a few that stores already hold. */
TEST(units_are_those_stored)
{
    ASSERT_EQ_STR(metric_unit(METRIC_PROC_CPU), "pct");
    ASSERT_EQ_STR(metric_unit(METRIC_MEM_SWAPIN_PER_S), "pages/s");
    ASSERT_EQ_STR(metric_unit(METRIC_NET_RX_BYTES_PER_S), "bytes/s");
    ASSERT_EQ_STR(metric_unit(METRIC_CGROUP_THROTTLED_PER_S), "1/s");
    ASSERT_EQ_STR(metric_unit(METRIC_GPU_THROTTLE_REASONS), "mask");
    ASSERT_EQ_STR(metric_unit(METRIC_APP), "");
    ASSERT_EQ_STR(metric_kind_name(METRIC_KIND_RATE), "rate");
}

TEST_MAIN(every_row_is_well_formed, every_name_is_spelled_once, lookup_finds_each_row_by_its_name,
          lookup_finds_a_family_member, units_are_those_stored)
