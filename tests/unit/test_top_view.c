/* strobe top's numbers and text (render/top_view.c), from snapshots
 * written here in serve/expo.h's format. */
#include <locale.h>

#include "common/strbuf.h"
#include "import/json.h"
#include "render/top_view.h"
#include "serve/serve.h"
#include "test.h"

#define NOW_NS (1800000000LL * 1000000000LL)
#define RUN    "run_id=\"abcdef0123456789\",run_name=\"train\",experiment=\"\",node=\"n1\""

/* A snapshot taken at ts_ns: the magic line, then body. */
static void snapshot(struct strbuf *sb, int64_t ts_ns, const char *body)
{
    strbuf_reset(sb);
    strbuf_addf(sb, "strobe-snapshot 1 %lld\n%s", (long long)ts_ns, body);
}

static void add_family(struct strbuf *sb, const char *name, const char *type, const char *unit)
{
    strbuf_addf(sb, "F\t%s\t%s\t%s\thelp\n", name, type, unit);
}

static void add_sample(struct strbuf *sb, const char *suffix, const char *labels, double v)
{
    strbuf_addf(sb, "S\t%s\t" RUN "%s%s\t%.17g\n", suffix, labels[0] ? "," : "", labels, v);
}

/* Two ranks, two GPUs, two processes and two findings. */
static void job_body(struct strbuf *b)
{
    add_family(b, "strobe_proc_cpu_ratio", "gauge", "ratio");
    add_sample(b, "-", "", 1.5);
    add_sample(b, "-", "pid=\"42\",comm=\"python\",role=\"rank\",rank=\"0\"", 0.9);
    add_sample(b, "-", "pid=\"43\",comm=\"python\",role=\"rank\",rank=\"1\"", 0.6);
    add_family(b, "strobe_proc_rss_bytes", "gauge", "bytes");
    add_sample(b, "-", "", 3e9);
    add_sample(b, "-", "pid=\"42\",comm=\"python\",role=\"rank\",rank=\"0\"", 2e9);
    add_family(b, "strobe_proc_threads", "gauge", "-");
    add_sample(b, "-", "pid=\"43\",comm=\"python\",role=\"rank\",rank=\"1\"", 7);
    add_family(b, "strobe_gpu_util_ratio", "gauge", "ratio");
    add_sample(b, "-", "gpu=\"0\"", 0.9);
    add_sample(b, "-", "gpu=\"1\"", 0.5);
    add_family(b, "strobe_gpu_mem_used_bytes", "gauge", "bytes");
    add_sample(b, "-", "gpu=\"0\"", 6e9);
    add_sample(b, "-", "gpu=\"1\"", 2e9);
    add_family(b, "strobe_gpu_proc_mem_bytes", "gauge", "bytes");
    add_sample(b, "-", "gpu=\"0\",pid=\"42\"", 1e9);
    add_family(b, "strobe_step_duration_seconds", "summary", "seconds");
    add_sample(b, "-", "rank=\"0\",quantile=\"0.5\"", 0.100);
    add_sample(b, "-", "rank=\"0\",quantile=\"0.9\"", 0.110);
    add_sample(b, "-", "rank=\"1\",quantile=\"0.5\"", 0.125);
    add_sample(b, "_count", "rank=\"1\"", 80);
    add_family(b, "strobe_steps_per_second", "gauge", "-");
    add_sample(b, "-", "rank=\"0\"", 10);
    add_sample(b, "-", "rank=\"1\"", 8);
    add_family(b, "strobe_finding_last_timestamp_seconds", "gauge", "seconds");
    add_sample(b, "-", "rule=\"CPUBottleneck\",severity=\"info\",scope=\"\"", 1799999990);
    add_sample(b, "-", "rule=\"Straggler\",severity=\"warning\",scope=\"rank 1\"", 1799999998);
    add_family(b, "strobe_finding_windows", "counter", "-");
    add_sample(b, "_total", "rule=\"Straggler\",severity=\"warning\",scope=\"rank 1\"", 3);
}

static void load_job(struct top_run *t, int64_t ts_ns)
{
    struct strbuf body, snap;
    strbuf_init(&body);
    strbuf_init(&snap);
    job_body(&body);
    snapshot(&snap, ts_ns, body.buf);
    ASSERT_EQ_INT(top_run_init(t, "abcdef0123456789", "train", "n1", NOW_NS - 90000000000LL), 0);
    ASSERT_EQ_INT(top_run_load(t, snap.buf, snap.len, NOW_NS), 0);
    strbuf_release(&body);
    strbuf_release(&snap);
}

TEST(row_numbers_from_a_snapshot)
{
    struct top_run t;
    load_job(&t, NOW_NS - 1000000000LL);
    ASSERT(!t.stale && !t.garbled);
    ASSERT_NEAR(t.tree.cpu_ratio, 1.5, 0);
    ASSERT_NEAR(t.tree.rss_bytes, 3e9, 0);
    ASSERT_NEAR(t.gpu_util_ratio, 0.7, 1e-12); /* the mean of 0.9 and 0.5 */
    ASSERT_NEAR(t.gpu_mem_bytes, 8e9, 0);      /* a process's share is not the GPU's */
    ASSERT_NEAR(t.step_p50_s, 0.125, 0);       /* the slowest rank's */
    ASSERT_NEAR(t.steps_per_s, 8, 0);          /* that rank's rate */
    ASSERT(t.last);
    ASSERT_EQ_STR(t.last->rule, "Straggler");
    ASSERT_EQ_STR(t.last->scope, "rank 1");
    ASSERT_NEAR(t.last->windows, 3, 0);
    top_run_release(&t);
}

TEST(detail_per_process_gpu_and_rank)
{
    struct top_run t;
    load_job(&t, NOW_NS - 1000000000LL);
    ASSERT_EQ_INT(t.nprocs, 2);
    ASSERT_EQ_INT(t.procs[0].pid, 42);
    ASSERT_EQ_STR(t.procs[0].role, "rank");
    ASSERT_NEAR(t.procs[0].rss_bytes, 2e9, 0);
    ASSERT(isnan(t.procs[0].threads));
    ASSERT_NEAR(t.procs[1].threads, 7, 0);
    ASSERT_EQ_INT(t.ngpus, 2);
    ASSERT_EQ_INT(t.nranks, 2);
    ASSERT_NEAR(t.ranks[0].p90_s, 0.110, 0);
    ASSERT_NEAR(t.ranks[1].steps, 80, 0);
    struct strbuf out;
    strbuf_init(&out);
    struct top_layout l = {.width = 100, .selected = -1, .now_ns = NOW_NS};
    top_detail_text(&out, &t, &l);
    ASSERT(strstr(out.buf, "\n42 "));
    ASSERT(strstr(out.buf, "Straggler"));
    ASSERT(strstr(out.buf, "125ms"));
    strbuf_release(&out);
    top_run_release(&t);
}

TEST(a_stale_snapshot_shows_no_numbers)
{
    struct top_run t;
    load_job(&t, NOW_NS - EXPO_STALE_NS - 1);
    ASSERT(t.stale);
    ASSERT(isnan(t.tree.cpu_ratio));
    ASSERT_EQ_INT(t.nprocs, 0);
    struct strbuf out;
    strbuf_init(&out);
    struct top_layout l = {.selected = -1, .now_ns = NOW_NS};
    top_table_text(&out, &t, 1, &l);
    ASSERT(strstr(out.buf, "stale"));
    ASSERT(strstr(out.buf, "1m30s")); /* elapsed still counts */
    strbuf_release(&out);
    top_run_release(&t);
}

TEST(a_garbled_snapshot_is_said_not_read)
{
    static const char *bad[] = {
        "",
        "strobe-snapshot 9\t1\n",
        "strobe-snapshot 1 1\nX\tjunk\n",
        "strobe-snapshot 1 1\nF\tonly\n",
        "\x1b[2J\n\n\n",
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct top_run t;
        ASSERT_EQ_INT(top_run_init(&t, "id", "n", "", 0), 0);
        ASSERT_EQ_INT(top_run_load(&t, bad[i], strlen(bad[i]), NOW_NS), 0);
        ASSERT(t.garbled);
        ASSERT(isnan(t.tree.cpu_ratio));
        top_run_release(&t);
    }
}

/* Every line of out has the same display width, and no escape or
 * control byte but the newlines. */
static void assert_clean_table(const char *out, int want_lines)
{
    int lines = 0;
    for (const char *p = out; *p; p++) {
        ASSERT((unsigned char)*p >= 0x20 || *p == '\n');
        ASSERT(*p != 0x7f);
        lines += *p == '\n';
    }
    ASSERT_EQ_INT(lines, want_lines);
}

TEST(hostile_names_stay_in_their_cell)
{
    setlocale(LC_CTYPE, "C.UTF-8");
    static const char *names[] = {
        "evil\x1b[2J\x1b[31mred",
        "two\nlines\rback",
        "\xe8\xae\xad\xe7\xbb\x83-\xf0\x9f\x94\xa5",
        "\xff\xfe bad utf8",
        "\xc2\x9b"
        "31m C1",
    };
    struct top_run runs[ARRAY_SIZE(names)];
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        ASSERT_EQ_INT(top_run_init(&runs[i], "0123456789abcdef", names[i], names[i], 0), 0);
    struct strbuf out;
    strbuf_init(&out);
    struct top_layout l = {.width = 90, .selected = -1, .now_ns = NOW_NS};
    top_table_text(&out, runs, ARRAY_SIZE(names), &l);
    assert_clean_table(out.buf, (int)ARRAY_SIZE(names) + 1);
    ASSERT(strstr(out.buf, "evil\\x1b[2J"));
    ASSERT(strstr(out.buf, "\xe8\xae\xad\xe7\xbb\x83")); /* unicode kept as it is */
    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        top_run_release(&runs[i]);
    strbuf_release(&out);
}

TEST(cells_are_cut_by_display_width)
{
    setlocale(LC_CTYPE, "C.UTF-8");
    struct strbuf out;
    strbuf_init(&out);
    /* four CJK characters are eight columns: five columns hold two */
    ASSERT_EQ_INT(top_add_cell(&out, "\xe8\xae\xad\xe7\xbb\x83\xe8\xae\xad\xe7\xbb\x83", 5), 5);
    ASSERT_EQ_STR(out.buf, "\xe8\xae\xad\xe7\xbb\x83 ");
    strbuf_reset(&out);
    ASSERT_EQ_INT(top_add_cell(&out, "a\tb", 4), 4); /* the tab shows as \t */
    ASSERT_EQ_STR(out.buf, "a\\tb");
    strbuf_release(&out);
}

TEST(table_fits_the_width_given)
{
    setlocale(LC_CTYPE, "C.UTF-8");
    struct top_run t;
    load_job(&t, NOW_NS - 1000000000LL);
    free(t.name);
    t.name = strdup("a-very-long-run-name-that-would-push-every-column-off-the-screen");
    struct strbuf out;
    strbuf_init(&out);
    struct top_layout l = {.width = 120, .selected = -1, .now_ns = NOW_NS};
    top_table_text(&out, &t, 1, &l);
    for (const char *p = out.buf; *p;) {
        const char *nl = strchr(p, '\n');
        ASSERT(nl && nl - p <= 120);
        p = nl + 1;
    }
    ASSERT(strstr(out.buf, "150%")); /* the numbers never give way */
    ASSERT(strstr(out.buf, "125ms"));
    strbuf_release(&out);
    top_run_release(&t);
}

TEST(sorting_puts_the_biggest_first_and_unknowns_last)
{
    struct top_run r[3];
    ASSERT_EQ_INT(top_run_init(&r[0], "a", "b-low", "", 0), 0);
    ASSERT_EQ_INT(top_run_init(&r[1], "b", "c-none", "", 0), 0);
    ASSERT_EQ_INT(top_run_init(&r[2], "c", "a-high", "", 0), 0);
    r[0].tree.cpu_ratio = 0.5;
    r[2].tree.cpu_ratio = 2;
    top_sort_runs(r, 3, TOP_SORT_CPU);
    ASSERT_EQ_STR(r[0].name, "a-high");
    ASSERT_EQ_STR(r[1].name, "b-low");
    ASSERT_EQ_STR(r[2].name, "c-none");
    top_sort_runs(r, 3, (enum top_sort)top_sort_of_key('n'));
    ASSERT_EQ_STR(r[0].name, "a-high");
    ASSERT_EQ_STR(r[2].name, "c-none");
    ASSERT_EQ_INT(top_sort_of_key('x'), -1);
    for (int i = 0; i < 3; i++)
        top_run_release(&r[i]);
}

TEST(json_holds_the_numbers)
{
    struct top_run t;
    load_job(&t, NOW_NS - 1000000000LL);
    struct strbuf out;
    strbuf_init(&out);
    top_json(&out, &t, 1, NOW_NS);
    struct json_doc d;
    struct json *root;
    json_doc_init(&d);
    ASSERT_EQ_INT(json_parse(&d, out.buf, out.len, &root), 0);
    const struct json *run = json_get(root, "runs")->child;
    double v;
    ASSERT_EQ_INT(json_num(json_get(run, "cpu_ratio"), &v), 0);
    ASSERT_NEAR(v, 1.5, 0);
    ASSERT_EQ_INT(json_num(json_get(run, "step_p50_seconds"), &v), 0);
    ASSERT_NEAR(v, 0.125, 0);
    ASSERT_EQ_STR(json_str(json_get(run, "state")), "live");
    ASSERT_EQ_STR(json_str(json_get(json_get(run, "last_finding"), "rule")), "Straggler");
    ASSERT_EQ_INT(json_get(run, "processes")->len, 2);
    json_doc_release(&d);
    strbuf_release(&out);
    top_run_release(&t);
}

TEST(a_huge_snapshot_costs_bounded_memory)
{
    struct strbuf body, snap;
    strbuf_init(&body);
    strbuf_init(&snap);
    add_family(&body, "strobe_proc_cpu_ratio", "gauge", "ratio");
    char labels[64];
    for (int pid = 1; pid <= TOP_MAX_PROCS + 100; pid++) {
        snprintf(labels, sizeof(labels), "pid=\"%d\"", pid);
        add_sample(&body, "-", labels, 0.01);
    }
    snapshot(&snap, NOW_NS, body.buf);
    struct top_run t;
    ASSERT_EQ_INT(top_run_init(&t, "id", "n", "", 0), 0);
    ASSERT_EQ_INT(top_run_load(&t, snap.buf, snap.len, NOW_NS), 0);
    ASSERT_EQ_INT(t.nprocs, TOP_MAX_PROCS);
    ASSERT_EQ_INT(t.dropped, 100);
    top_run_release(&t);
    strbuf_release(&body);
    strbuf_release(&snap);
}

TEST_MAIN(row_numbers_from_a_snapshot, detail_per_process_gpu_and_rank,
          a_stale_snapshot_shows_no_numbers, a_garbled_snapshot_is_said_not_read,
          hostile_names_stay_in_their_cell, cells_are_cut_by_display_width,
          table_fits_the_width_given, sorting_puts_the_biggest_first_and_unknowns_last,
          json_holds_the_numbers, a_huge_snapshot_costs_bounded_memory)
