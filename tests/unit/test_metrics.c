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

/* docs/openmetrics.md's table, row by row. */
TEST(openmetrics_names_follow_the_units)
{
    static const struct {
        enum metric_id id;
        const char *name, *unit, *total;
        double scale;
    } want[] = {
        {METRIC_CPU_UTIL, "strobe_cpu_util_ratio", "ratio", "", 0.01},
        {METRIC_MEM_USED_BYTES, "strobe_mem_used_bytes", "bytes", "", 1},
        {METRIC_DISK_READ_BYTES_PER_S, "strobe_disk_read_bytes_per_second", "",
         "strobe_disk_read_bytes", 1},
        {METRIC_PROC_RCHAR_PER_S, "strobe_proc_rchar_bytes_per_second", "",
         "strobe_proc_rchar_bytes", 1},
        {METRIC_MEM_SWAPIN_PER_S, "strobe_mem_swapin_pages_per_second", "",
         "strobe_mem_swapin_pages", 1},
        {METRIC_CGROUP_THROTTLED_PER_S, "strobe_cgroup_throttled_per_second", "",
         "strobe_cgroup_throttled", 1},
        {METRIC_GPU_POWER_W, "strobe_gpu_power_watts", "watts", "", 1},
        {METRIC_GPU_TEMP_C, "strobe_gpu_temp_celsius", "celsius", "", 1},
        {METRIC_GPU_SM_CLOCK_MHZ, "strobe_gpu_sm_clock_hertz", "hertz", "", 1e6},
        {METRIC_GPU_ENERGY_J, "strobe_gpu_energy_joules", "joules", "", 1},
        {METRIC_PROC_THREADS, "strobe_proc_threads", "", "", 1},
        {METRIC_PROC_COUNT, "strobe_proc_processes", "", "", 1},
        {METRIC_PROC_CPU, "strobe_proc_cpu_ratio", "ratio", "strobe_proc_cpu_seconds", 0.01},
        {METRIC_STROBE_CPU, "strobe_recorder_cpu_ratio", "ratio", "strobe_recorder_cpu_seconds",
         0.01},
        {METRIC_APP, "strobe_app", "", "", 1},
        {METRIC_APP_SAMPLES_PER_S, "strobe_app_samples_per_second", "", "", 1},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        struct metric_prom pm;
        metric_prom(want[i].id, &pm);
        ASSERT_EQ_STR(pm.name, want[i].name);
        ASSERT_EQ_STR(pm.unit, want[i].unit);
        ASSERT_EQ_STR(pm.total_name, want[i].total);
        ASSERT_NEAR(pm.scale, want[i].scale, 1e-12);
    }
    struct metric_prom pm;
    metric_prom(METRIC_GPU_ECC_CORRECTED, &pm);
    ASSERT(pm.counter);
}

/* Every family name is a Prometheus name, unique, with its unit last. */
TEST(openmetrics_names_are_unique_and_valid)
{
    char seen[2 * METRIC_COUNT][96];
    int n = 0;
    for (int i = 0; i < METRIC_COUNT; i++) {
        struct metric_prom pm;
        metric_prom((enum metric_id)i, &pm);
        const char *names[2] = {pm.name, pm.total_name};
        const char *units[2] = {pm.unit, pm.total_unit};
        for (int k = 0; k < 2; k++) {
            if (!*names[k])
                continue;
            ASSERT_EQ_INT(strncmp(names[k], "strobe_", 7), 0);
            ASSERT_EQ_INT((int)strspn(names[k], "abcdefghijklmnopqrstuvwxyz0123456789_"),
                          (int)strlen(names[k]));
            size_t nl = strlen(names[k]), ul = strlen(units[k]);
            if (ul)
                ASSERT_EQ_STR(names[k] + nl - ul, units[k]);
            for (int j = 0; j < n; j++)
                if (strcmp(seen[j], names[k]) == 0)
                    TEST_FAIL("%s twice", names[k]);
            snprintf(seen[n++], sizeof(seen[0]), "%s", names[k]);
        }
    }
}

TEST_MAIN(every_row_is_well_formed, every_name_is_spelled_once, lookup_finds_each_row_by_its_name,
          lookup_finds_a_family_member, units_are_those_stored, openmetrics_names_follow_the_units,
          openmetrics_names_are_unique_and_valid)
