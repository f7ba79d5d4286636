/* serve/expo.h: snapshots are checked before they join a set, and a set
 * is written as OpenMetrics or Prometheus text. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "serve/expo.h"
#include "test.h"

static void two_runs(struct strbuf *a, struct strbuf *b)
{
    struct strbuf l;
    strbuf_init(&l);
    expo_snap_begin(a, 1000000000);
    expo_snap_family(a, "strobe_cpu_util_ratio", EXPO_GAUGE, "ratio", "Busy share\nof cores");
    expo_label_add(&l, "run_id", "a");
    expo_snap_sample(a, "", l.buf, 0.5);
    expo_snap_family(a, "strobe_proc_cpu_seconds", EXPO_COUNTER, "seconds", "CPU");
    expo_snap_sample(a, "_total", l.buf, 2);
    strbuf_reset(&l);
    expo_snap_begin(b, 2000000000);
    expo_snap_family(b, "strobe_proc_cpu_seconds", EXPO_COUNTER, "seconds", "CPU");
    expo_label_add(&l, "run_id", "b");
    expo_snap_sample(b, "_total", l.buf, 3);
    expo_snap_family(b, "strobe_cpu_util_ratio", EXPO_GAUGE, "ratio", "Busy share\nof cores");
    expo_snap_sample(b, "", l.buf, INFINITY);
    strbuf_release(&l);
}

TEST(families_of_two_snapshots_stay_together)
{
    struct strbuf a, b, out;
    strbuf_init(&a);
    strbuf_init(&b);
    strbuf_init(&out);
    two_runs(&a, &b);
    struct expo_set set;
    expo_set_init(&set);
    int64_t ts = 0;
    ASSERT_EQ_INT(expo_set_add_snapshot(&set, a.buf, a.len, &ts), 0);
    ASSERT(ts == 1000000000);
    ASSERT_EQ_INT(expo_set_add_snapshot(&set, b.buf, b.len, &ts), 0);
    ASSERT_EQ_INT((int)set.n, 2);
    ASSERT_EQ_INT((int)set.samples, 4);
    expo_set_write(&set, 1, &out);
    ASSERT_EQ_STR(out.buf, "# TYPE strobe_cpu_util_ratio gauge\n"
                           "# UNIT strobe_cpu_util_ratio ratio\n"
                           "# HELP strobe_cpu_util_ratio Busy share\\nof cores\n"
                           "strobe_cpu_util_ratio{run_id=\"a\"} 0.5\n"
                           "strobe_cpu_util_ratio{run_id=\"b\"} +Inf\n"
                           "# TYPE strobe_proc_cpu_seconds counter\n"
                           "# UNIT strobe_proc_cpu_seconds seconds\n"
                           "# HELP strobe_proc_cpu_seconds CPU\n"
                           "strobe_proc_cpu_seconds_total{run_id=\"a\"} 2\n"
                           "strobe_proc_cpu_seconds_total{run_id=\"b\"} 3\n"
                           "# EOF\n");
    strbuf_reset(&out);
    expo_set_write(&set, 0, &out);
    ASSERT(strstr(out.buf, "# TYPE strobe_proc_cpu_seconds_total counter\n"));
    ASSERT(strstr(out.buf, "# HELP strobe_proc_cpu_seconds_total CPU\n"));
    ASSERT(!strstr(out.buf, "# UNIT"));
    ASSERT(!strstr(out.buf, "# EOF"));
    expo_set_release(&set);
    strbuf_release(&a);
    strbuf_release(&b);
    strbuf_release(&out);
}

/* A hostile value is escaped, and stays one label. */
TEST(labels_are_escaped_and_read_back)
{
    struct strbuf l;
    strbuf_init(&l);
    expo_label_add(&l, "run_name", "a\"b\\c\nd\te\xff");
    expo_label_add(&l, "node", "n1");
    ASSERT_EQ_STR(l.buf, "run_name=\"a\\\"b\\\\c\\nd\xef\xbf\xbd"
                         "e\xef\xbf\xbd\",node=\"n1\"");
    char buf[64];
    ASSERT_EQ_STR(expo_label(l.buf, "run_name", buf, sizeof(buf)), "a\"b\\c\nd\xef\xbf\xbd"
                                                                   "e\xef\xbf\xbd");
    ASSERT_EQ_STR(expo_label(l.buf, "node", buf, sizeof(buf)), "n1");
    ASSERT(expo_label(l.buf, "rank", buf, sizeof(buf)) == NULL);
    ASSERT_EQ_STR(expo_label(l.buf, "run_name", buf, 4), "a\"b");
    strbuf_release(&l);
}

/* Each garbled snapshot is refused whole: nothing of it joins the set. */
TEST(garbled_snapshots_add_nothing)
{
    static const char *const bad[] = {
        "",
        "strobe-snapshot 2 1\n",
        "strobe-snapshot 1 x\n",
        "strobe-snapshot 1 1\nS\t-\t-\t1\n", /* a sample before any family */
        "strobe-snapshot 1 1\nF\tbad name\tgauge\t-\th\n",
        "strobe-snapshot 1 1\nF\tm\tgauges\t-\th\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\tk=\"v\t1\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\tk=\"v\"\tone\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\tk=\"v\",\t1\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\tk=\"\\x\"\t1\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\t1k=\"v\"\t1\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\tx\t-\t1\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nS\t-\t-\t1e999\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\nX\n",
        "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\\\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct expo_set set;
        expo_set_init(&set);
        ASSERT_EQ_INT(expo_set_add_snapshot(&set, bad[i], strlen(bad[i]), NULL), -EINVAL);
        ASSERT_EQ_INT((int)set.n, 0);
        expo_set_release(&set);
    }
    const char *good = "strobe-snapshot 1 1\nF\tm\tgauge\t-\th\\n\nS\t-\tk=\"v\\n\",j=\"\"\tNaN\n";
    struct expo_set set;
    expo_set_init(&set);
    ASSERT_EQ_INT(expo_set_add_snapshot(&set, good, strlen(good), NULL), 0);
    ASSERT(isnan(expo_set_find(&set, "m")->samples[0].value));
    ASSERT(expo_set_find(&set, "n") == NULL);
    expo_set_release(&set);
}

TEST(a_big_set_grows)
{
    struct strbuf s;
    strbuf_init(&s);
    expo_snap_begin(&s, 5);
    char name[32];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof(name), "strobe_m%d", i);
        expo_snap_family(&s, name, EXPO_GAUGE, NULL, "h");
        expo_snap_sample(&s, NULL, "", i);
    }
    struct expo_set set;
    expo_set_init(&set);
    ASSERT_EQ_INT(expo_set_add_snapshot(&set, s.buf, s.len, NULL), 0);
    ASSERT_EQ_INT((int)set.n, 3000);
    ASSERT_NEAR(expo_set_find(&set, "strobe_m2999")->samples[0].value, 2999, 0);
    expo_set_release(&set);
    strbuf_release(&s);
}

TEST(accept_header_chooses_the_format)
{
    ASSERT(expo_accepts_openmetrics("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"));
    ASSERT(!expo_accepts_openmetrics("text/plain"));
    ASSERT(!expo_accepts_openmetrics(NULL));
}

TEST_MAIN(families_of_two_snapshots_stay_together, labels_are_escaped_and_read_back,
          garbled_snapshots_add_nothing, a_big_set_grows, accept_header_chooses_the_format)
