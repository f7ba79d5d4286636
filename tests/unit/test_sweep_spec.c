/*
 * strobe sweep's experiment files (sweep/spec.h) read into plans: radT's
 * CSV and YAML examples as radT writes them, the CSV's quoting and
 * layout, strobe's columns and keys, the resume identity, the command
 * line splitter (sweep/words.h) and the CSV write-back (sweep/writeback.h).
 * The mistakes a file can make, and hostile files, are in
 * test_sweep_spec_errors.c. Every file is written here, into a scratch
 * folder laid out as radT's examples folder is (sweep_rig.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "sweep/spec.h"
#include "sweep/words.h"
#include "sweep/writeback.h"

#include "sweep_rig.h"
#include "test.h"

#define RADT_HEADER                                                                                \
    "Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Listeners,Params\n"
#define RADT_PARAMS "--batch-size 128 --learning-rate 0.01"
#define CIFAR_ARGV                                                                                 \
    "/usr/bin/python3|@/pytorch/cifar10_context.py|--batch-size|128|--learning-rate|0.01"

/* radT's examples/yaml/experiment_grid_context.yaml, byte for byte in
 * shape (the blank after "learning-rate:" included). */
#define RADT_GRID_YAML                                                                             \
    "name: Sweep name\n"                                                                           \
    "experiment: 0\n"                                                                              \
    "collocation: \"-\"\n"                                                                         \
    "devices: 0\n"                                                                                 \
    "listeners: smi+top\n"                                                                         \
    "file: ../pytorch/cifar10_context.py\n"                                                        \
    "method: grid\n"                                                                               \
    "parameters:\n"                                                                                \
    "  batch-size:\n"                                                                              \
    "    values: [8, 16, 32, 64, 128]\n"                                                           \
    "  learning-rate: \n"                                                                          \
    "    values: [0.001, 0.0015, 0.002]\n"

static const char *collocation(const struct sweep_run *run)
{
    static char buf[64];
    return sweep_run_collocation(run, buf, sizeof(buf));
}

static size_t count_devices(const struct sweep_run *run)
{
    size_t n = 0;
    while (run->devices && run->devices[n])
        n++;
    return n;
}

/* ---- radT's CSV examples ---- */

TEST(csv_radt_single)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s =
        rig_ok(&r, "csv/experiment_single.csv",
               RADT_HEADER
               "0,1,cifar test run,,,0,-,../pytorch/cifar10_context.py,smi+top," RADT_PARAMS "\n");
    ASSERT_EQ_INT(s->format, SWEEP_CSV);
    ASSERT_EQ_STR(s->campaign, "0");
    ASSERT_EQ_INT(s->n, 1);
    const struct sweep_workload *w = &s->w[0];
    ASSERT_EQ_STR(w->experiment, "0");
    ASSERT_EQ_STR(w->name, "1");
    ASSERT_EQ_INT(w->line, 2);
    ASSERT_EQ_INT(w->nruns, 1);
    ASSERT_EQ_INT(w->file_finished, 0);
    ASSERT_EQ_INT(w->timeout_ns, 0);
    ASSERT_EQ_INT(w->retries, 0);
    ASSERT_EQ_INT(w->env.n, 0);
    ASSERT(!w->on_finding);
    const struct sweep_run *run = &w->runs[0];
    ASSERT_EQ_STR(run->name, "cifar test run");
    ASSERT_EQ_STR(rig_argv(&r, run), CIFAR_ARGV);
    ASSERT_EQ_STR(rig_path(&r, run->cwd), "@/pytorch");
    ASSERT_EQ_INT(count_devices(run), 1);
    ASSERT_EQ_STR(run->devices[0], "0");
    ASSERT_EQ_INT(run->share, SWEEP_SHARE_PLAIN);
    ASSERT_EQ_STR(collocation(run), "-");
    ASSERT(!run->wrap); /* smi and top are strobe's own collectors */
    ASSERT_EQ_INT(run->row, 1);
    ASSERT_EQ_INT(run->line, 2);
    rig_release(&r);
}

TEST(csv_radt_double)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(
        &r, "csv/experiment_double.csv",
        RADT_HEADER
        "0,1,cifar collocated test run 1,,,0,-,../pytorch/cifar10.py,smi+top," RADT_PARAMS "\n"
        "0,1,cifar collocated test run 2,,,0,-,../pytorch/cifar10.py,smi+top," RADT_PARAMS "\n");
    ASSERT_EQ_INT(s->n, 1);
    const struct sweep_workload *w = &s->w[0];
    ASSERT_EQ_INT(w->nruns, 2);
    ASSERT_EQ_STR(w->runs[0].name, "cifar collocated test run 1");
    ASSERT_EQ_STR(w->runs[1].name, "cifar collocated test run 2");
    for (size_t i = 0; i < 2; i++) {
        ASSERT_EQ_STR(
            rig_argv(&r, &w->runs[i]),
            "/usr/bin/python3|@/pytorch/cifar10.py|--batch-size|128|--learning-rate|0.01");
        ASSERT_EQ_INT(w->runs[i].row, (int)i + 1);
        ASSERT_EQ_INT(w->runs[i].line, (int)i + 2);
    }
    const char **devices = sweep_workload_devices(w);
    ASSERT(devices);
    ASSERT_EQ_STR(devices[0], "0");
    ASSERT(!devices[1]);
    free(devices);
    rig_release(&r);
}

TEST(csv_radt_collocation)
{
    struct sweep_rig r;
    rig_init(&r);
    const char *file = "../pytorch/cifar10_context.py,smi+top," RADT_PARAMS "\n";
    char text[4096];
    snprintf(text, sizeof(text),
             RADT_HEADER "0,1,no sharing,,,0,-,%s"
                         "0,2,shared gpu 1,,,0,-,%s"
                         "0,2,shared gpu 2,,,0,-,%s"
                         "0,3,MPS shared gpu 1,,,0,MPS,%s"
                         "0,3,MPS shared gpu 2,,,0,MPS,%s"
                         "0,4,MIG shared gpu 1,,,2,3g.20gb,%s"
                         "0,4,MIG shared gpu 2,,,2,3g.20gb,%s",
             file, file, file, file, file, file, file);
    const struct sweep_spec *s = rig_ok(&r, "csv/experiment_collocation.csv", text);
    ASSERT_EQ_INT(s->n, 4);
    static const char *const names[] = {"1", "2", "3", "4"};
    static const size_t nruns[] = {1, 2, 2, 2};
    static const char *const coll[] = {"-", "-", "MPS", "3g.20gb"};
    static const enum sweep_share share[] = {SWEEP_SHARE_PLAIN, SWEEP_SHARE_PLAIN, SWEEP_SHARE_MPS,
                                             SWEEP_SHARE_MIG};
    static const char *const device[] = {"0", "0", "0", "2"};
    int row = 1;
    for (size_t i = 0; i < 4; i++) {
        const struct sweep_workload *w = &s->w[i];
        ASSERT_EQ_STR(w->name, names[i]);
        ASSERT_EQ_STR(w->experiment, "0");
        ASSERT_EQ_INT(w->nruns, nruns[i]);
        for (size_t k = 0; k < w->nruns; k++, row++) {
            const struct sweep_run *run = &w->runs[k];
            ASSERT_EQ_INT(run->row, row);
            ASSERT_EQ_INT(run->share, share[i]);
            ASSERT_EQ_STR(collocation(run), coll[i]);
            ASSERT_EQ_STR(run->devices[0], device[i]);
            ASSERT_EQ_INT(count_devices(run), 1);
            ASSERT_EQ_INT(run->mps_thread_pct, 0);
            ASSERT_EQ_STR(rig_argv(&r, run), CIFAR_ARGV);
        }
    }
    ASSERT_EQ_STR(s->w[3].runs[1].mig_profile, "3g.20gb");
    ASSERT_EQ_STR(s->w[2].runs[0].name, "MPS shared gpu 1");
    ASSERT_EQ_STR(s->w[3].runs[1].name, "MIG shared gpu 2");
    rig_release(&r);
}

/* Rows join their workload by Experiment and Workload wherever they stand;
 * workloads keep the order of their first rows. */
TEST(csv_groups_rows_by_experiment_and_workload)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "g.csv",
                                        "Experiment,Workload,Name,File,Params\n"
                                        "0,a,first,train.py,--i 1\n"
                                        "0,b,second,train.py,--i 2\n"
                                        "1,a,third,train.py,--i 3\n"
                                        "0,a,fourth,train.py,--i 4\n"
                                        "0,b,fifth,train.py,--i 5\n");
    ASSERT_EQ_STR(s->campaign, "0+1");
    ASSERT_EQ_INT(s->n, 3);
    ASSERT_EQ_STR(s->w[0].experiment, "0");
    ASSERT_EQ_STR(s->w[0].name, "a");
    ASSERT_EQ_STR(s->w[1].experiment, "0");
    ASSERT_EQ_STR(s->w[1].name, "b");
    ASSERT_EQ_STR(s->w[2].experiment, "1");
    ASSERT_EQ_STR(s->w[2].name, "a");
    ASSERT_EQ_INT(s->w[0].nruns, 2);
    ASSERT_EQ_STR(s->w[0].runs[0].name, "first");
    ASSERT_EQ_STR(s->w[0].runs[1].name, "fourth");
    ASSERT_EQ_INT(s->w[0].runs[1].row, 4);
    ASSERT_EQ_INT(s->w[0].runs[1].line, 5);
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[1]), "/usr/bin/python3|@/train.py|--i|4");
    ASSERT_EQ_INT(s->w[1].nruns, 2);
    ASSERT_EQ_STR(s->w[1].runs[1].name, "fifth");
    ASSERT_EQ_INT(s->w[2].nruns, 1);
    ASSERT_EQ_STR(s->w[2].runs[0].name, "third");
    /* a file's runs record no parameters: Params are only arguments */
    ASSERT_EQ_INT(s->w[0].runs[0].params.n, 0);
    rig_release(&r);
}

/* ---- the CSV's quoting and layout ---- */

TEST(csv_quoted_fields)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "q.csv",
                                        "Workload,Name,File,Params\n"
                                        "1,\"run, with a comma\",\"train.py\",\"--note \"\"hi "
                                        "there\"\" --x 1\"\n"
                                        "2,two,train.py,\"--msg 'a, b'\n--y 2\"\n"
                                        "3,\"  pad  \",train.py,\n"
                                        "4,\"say \"\"hi\"\"\",train.py,--a=\"\"\n");
    ASSERT_EQ_INT(s->n, 4);
    ASSERT_EQ_STR(s->w[0].runs[0].name, "run, with a comma");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]),
                  "/usr/bin/python3|@/train.py|--note|hi there|--x|1");
    ASSERT_EQ_STR(s->w[1].runs[0].name, "two"); /* a name holds no line break: strobe run's rule */
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[0]), "/usr/bin/python3|@/train.py|--msg|a, b|--y|2");
    ASSERT_EQ_INT(s->w[1].line, 3);
    /* the row after a line break inside quotes is counted on its own line */
    ASSERT_EQ_INT(s->w[2].line, 5);
    ASSERT_EQ_STR(s->w[2].runs[0].name, "  pad  "); /* blanks inside quotes are the field's */
    ASSERT_EQ_STR(rig_argv(&r, &s->w[2].runs[0]), "/usr/bin/python3|@/train.py");
    ASSERT_EQ_STR(s->w[3].runs[0].name, "say \"hi\"");
    /* an unquoted field keeps its quotes; Params' own quoting then applies */
    ASSERT_EQ_STR(rig_argv(&r, &s->w[3].runs[0]), "/usr/bin/python3|@/train.py|--a=");
    rig_release(&r);
}

TEST(csv_crlf_bom_blank_lines_and_spaces)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "crlf.csv",
                                        "\xef\xbb\xbf"
                                        "Workload, Name,  File, Devices, Params\r\n"
                                        "\r\n"
                                        "1,  one, train.py, 0+1,  --a 1\r\n"
                                        "\n"
                                        "\r\n"
                                        "2, two, train.py,GPU-abc,\"--b\r\n2\"\r\n"
                                        "3,three,train.py,,--c 3");
    ASSERT_EQ_INT(s->n, 3);
    ASSERT_EQ_STR(s->w[0].runs[0].name, "one");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]), "/usr/bin/python3|@/train.py|--a|1");
    ASSERT_EQ_INT(count_devices(&s->w[0].runs[0]), 2);
    ASSERT_EQ_STR(s->w[0].runs[0].devices[1], "1");
    ASSERT_EQ_INT(s->w[0].line, 3);
    ASSERT_EQ_INT(s->w[0].runs[0].row, 1);
    /* a line break inside quotes is kept as written (Params splits at it) */
    ASSERT_EQ_STR(s->w[1].runs[0].name, "two");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[0]), "/usr/bin/python3|@/train.py|--b|2");
    ASSERT_EQ_STR(s->w[1].runs[0].devices[0], "GPU-abc");
    ASSERT_EQ_INT(s->w[1].line, 6);
    ASSERT_EQ_INT(s->w[1].runs[0].row, 2);
    ASSERT_EQ_INT(s->w[2].line, 8);
    ASSERT_EQ_INT(count_devices(&s->w[2].runs[0]), 0);
    ASSERT_EQ_STR(rig_argv(&r, &s->w[2].runs[0]), "/usr/bin/python3|@/train.py|--c|3");
    rig_release(&r);
}

/* Columns in any order, in any case; radT's optional ones left out: the
 * experiment is the file's name and runs are numbered. */
TEST(csv_columns_in_any_order_and_optional)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "my-sweep.v2.csv",
                                        "params,FILE,Workload\n"
                                        "--lr 1,train.py,a\n"
                                        "--lr 2,train.py,a\n"
                                        "--lr 3,train.py,b\n");
    ASSERT_EQ_STR(s->campaign, "my-sweep.v2");
    ASSERT_EQ_INT(s->n, 2);
    ASSERT_EQ_STR(s->w[0].experiment, "my-sweep.v2");
    ASSERT_EQ_INT(s->w[0].nruns, 2);
    ASSERT_EQ_STR(s->w[0].runs[0].name, "a.1");
    ASSERT_EQ_STR(s->w[0].runs[1].name, "a.2");
    ASSERT_EQ_STR(s->w[1].runs[0].name, "b.1");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[1]), "/usr/bin/python3|@/train.py|--lr|2");
    ASSERT_EQ_INT(count_devices(&s->w[0].runs[0]), 0);
    ASSERT_EQ_INT(s->w[0].runs[0].share, SWEEP_SHARE_PLAIN);
    ASSERT(!s->w[0].runs[0].wrap);
    /* an empty Name is no name either */
    s = rig_ok(&r, "n.csv", "Workload,Name,File\nw,,train.py\nw,named,train.py\n");
    ASSERT_EQ_STR(s->w[0].runs[0].name, "w.1");
    ASSERT_EQ_STR(s->w[0].runs[1].name, "named");
    rig_release(&r);
}

TEST(csv_status_finished)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "st.csv",
                                        "Workload,Name,Status,Run,File\n"
                                        "1,r1,FINISHED r1,0123456789abcdef,train.py\n"
                                        "1,r2,FINISHED r2,fedcba9876543210,train.py\n"
                                        "2,r3,FINISHED r3,,train.py\n"
                                        "2,r4,FAILED r4,,train.py\n"
                                        "3,r5,,,train.py\n"
                                        "4,r6,FINISHED,,train.py\n");
    ASSERT_EQ_INT(s->n, 4);
    ASSERT_EQ_INT(s->w[0].file_finished, 1);
    ASSERT_EQ_INT(s->w[1].file_finished, 0);
    ASSERT_EQ_INT(s->w[2].file_finished, 0);
    ASSERT_EQ_INT(s->w[3].file_finished, 1);
    rig_release(&r);
}

TEST(csv_strobe_columns)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s =
        rig_ok(&r, "x.csv",
               "Workload,Command,Timeout,Retries,Env,OnFinding,Listeners\n"
               "a,\"sh -c 'echo {workload} {run}'\",90s,2,\"A=1 B=x;C=a=b\",Straggler=stop,nsys\n"
               "a,\"sh -c 'echo {workload} {run}'\",,2,,Straggler=stop,\n"
               "b,echo hi {{x}},10,,,,\n");
    ASSERT_EQ_INT(s->n, 2);
    const struct sweep_workload *a = &s->w[0];
    ASSERT_EQ_INT(a->nruns, 2);
    ASSERT_EQ_STR(rig_argv(&r, &a->runs[0]), "sh|-c|echo a 0");
    ASSERT_EQ_STR(rig_argv(&r, &a->runs[1]), "sh|-c|echo a 1");
    ASSERT_EQ_STR(a->runs[0].cwd, r.dir); /* a command runs beside the experiment file */
    ASSERT_EQ_STR(a->runs[0].wrap, "nsys");
    ASSERT(!a->runs[1].wrap);
    ASSERT_EQ_INT(a->timeout_ns, 90 * NS_PER_S);
    ASSERT_EQ_INT(a->retries, 2);
    ASSERT_EQ_INT(a->env.n, 3);
    ASSERT_EQ_STR(kv_list_get(&a->env, "A"), "1");
    ASSERT_EQ_STR(kv_list_get(&a->env, "B"), "x");
    ASSERT_EQ_STR(kv_list_get(&a->env, "C"), "a=b");
    ASSERT(a->on_finding);
    ASSERT_EQ_STR(a->on_finding[0], "Straggler=stop");
    ASSERT(!a->on_finding[1]);
    const struct sweep_workload *b = &s->w[1];
    ASSERT_EQ_STR(rig_argv(&r, &b->runs[0]), "echo|hi|{x}");
    ASSERT_EQ_INT(b->timeout_ns, 10 * NS_PER_S); /* a bare number is seconds */
    ASSERT_EQ_INT(b->retries, 0);
    ASSERT_EQ_INT(b->env.n, 0);
    ASSERT(!b->on_finding);
    rig_release(&r);
}

/* ---- radT's YAML, and strobe's keys ---- */

TEST(yaml_radt_grid)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "yaml/experiment_grid_context.yaml", RADT_GRID_YAML);
    ASSERT_EQ_INT(s->format, SWEEP_YAML);
    ASSERT_EQ_STR(s->campaign, "0");
    ASSERT_EQ_INT(s->n, 15);
    static const char *const bs[] = {"8", "16", "32", "64", "128"};
    static const char *const lr[] = {"0.001", "0.0015", "0.002"};
    for (size_t i = 0; i < 15; i++) {
        const struct sweep_workload *w = &s->w[i];
        char name[8], argv[256], params[128];
        snprintf(name, sizeof(name), "%03zu", i);
        ASSERT_EQ_STR(w->name, name);
        ASSERT_EQ_STR(w->experiment, "0");
        ASSERT_EQ_INT(w->nruns, 1);
        const struct sweep_run *run = &w->runs[0];
        ASSERT_EQ_STR(run->name, "Sweep name");
        /* the last key varies fastest */
        snprintf(params, sizeof(params), "batch-size=%s,learning-rate=%s", bs[i / 3], lr[i % 3]);
        ASSERT_EQ_STR(rig_params(&r, run), params);
        snprintf(argv, sizeof(argv),
                 "/usr/bin/python3|@/pytorch/cifar10_context.py|--batch-size|%s|--learning-rate|%s",
                 bs[i / 3], lr[i % 3]);
        ASSERT_EQ_STR(rig_argv(&r, run), argv);
        ASSERT_EQ_STR(rig_path(&r, run->cwd), "@/pytorch");
        ASSERT_EQ_INT(count_devices(run), 1);
        ASSERT_EQ_STR(run->devices[0], "0");
        ASSERT_EQ_INT(run->share, SWEEP_SHARE_PLAIN);
        ASSERT(!run->wrap);
        ASSERT_EQ_INT(run->row, 0);
    }
    rig_release(&r);
}

/* Files as radT writes them back after a run: pandas' to_csv (Status
 * "STATUS NAME (LETTER)", Run, "nan" for an empty Collocation) and
 * yaml.dump (keys sorted, block lists, a status mapping). They read as
 * the same plan. */
TEST(radt_written_back_files)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s =
        rig_ok(&r, "csv/done.csv",
               RADT_HEADER "0,1,cifar test run,FINISHED cifar test run (0),0123456789abcdef,0,-,"
                           "../pytorch/cifar10_context.py,smi+top," RADT_PARAMS "\n"
                           "0,2,,FAILED 2.1 (0),fedcba9876543210,0,nan,"
                           "../pytorch/cifar10_context.py,smi+top,\n");
    ASSERT_EQ_INT(s->n, 2);
    ASSERT_EQ_INT(s->w[0].file_finished, 1);
    ASSERT_EQ_INT(s->w[1].file_finished, 0);
    ASSERT_EQ_INT(s->w[1].runs[0].share, SWEEP_SHARE_PLAIN);
    ASSERT_EQ_STR(s->w[1].runs[0].name, "2.1");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[0]), "/usr/bin/python3|@/pytorch/cifar10_context.py");
    char hash[17];
    memcpy(hash, rig_ok(&r, "yaml/grid.yaml", RADT_GRID_YAML)->hash, sizeof(hash));
    s = rig_ok(&r, "yaml/dumped.yaml",
               "collocation: '-'\ndevices: 0\nexperiment: 0\n"
               "file: ../pytorch/cifar10_context.py\nlisteners: smi+top\nmethod: grid\n"
               "name: Sweep name\nparameters:\n  batch-size:\n    values:\n    - 8\n    - 16\n"
               "    - 32\n    - 64\n    - 128\n  learning-rate:\n    values:\n    - 0.001\n"
               "    - 0.0015\n    - 0.002\nstatus:\n"
               "  0: FINISHED 0123abcd (--batch-size 8 --learning-rate 0.001)\n"
               "  1: FAILED 4567 (--batch-size 8 --learning-rate 0.0015)\n");
    ASSERT_EQ_INT(s->n, 15);
    ASSERT_EQ_STR(s->hash, hash);
    rig_release(&r);
}

TEST(yaml_parameter_forms)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "forms.yaml",
                                        "experiment: forms\n"
                                        "file: train.py\n"
                                        "parameters:\n"
                                        "  a:\n"
                                        "    value: 5\n"
                                        "  b: [1, 2]\n"
                                        "  c: plain\n"
                                        "  d:\n"
                                        "    values:\n"
                                        "      - p\n"
                                        "      - \"q r\"\n");
    ASSERT_EQ_INT(s->n, 4);
    ASSERT_EQ_STR(rig_params(&r, &s->w[0].runs[0]), "a=5,b=1,c=plain,d=p");
    ASSERT_EQ_STR(rig_params(&r, &s->w[1].runs[0]), "a=5,b=1,c=plain,d=q r");
    ASSERT_EQ_STR(rig_params(&r, &s->w[2].runs[0]), "a=5,b=2,c=plain,d=p");
    ASSERT_EQ_STR(rig_params(&r, &s->w[3].runs[0]), "a=5,b=2,c=plain,d=q r");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[0]),
                  "/usr/bin/python3|@/train.py|--a|5|--b|1|--c|plain|--d|q r");
    /* no parameters: one workload */
    s = rig_ok(&r, "none.yaml", "experiment: e\nfile: train.py\n");
    ASSERT_EQ_INT(s->n, 1);
    ASSERT_EQ_STR(s->w[0].name, "000");
    ASSERT_EQ_INT(s->w[0].runs[0].params.n, 0);
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]), "/usr/bin/python3|@/train.py");
    /* the name stands for a missing experiment; python for the interpreter */
    s = rig_ok(&r, "n.yaml", "name: only-a-name\nfile: train.py\npython: /opt/py/bin/python\n");
    ASSERT_EQ_STR(s->campaign, "only-a-name");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]), "/opt/py/bin/python|@/train.py");
    rig_release(&r);
}

#define RANDOM_YAML(seed, count)                                                                   \
    "experiment: r\n"                                                                              \
    "file: train.py\n"                                                                             \
    "method: random\n"                                                                             \
    "count: " count "\n"                                                                           \
    "seed: " seed "\n"                                                                             \
    "parameters:\n"                                                                                \
    "  a: [1, 2, 3, 4]\n"                                                                          \
    "  b: [1, 2, 3, 4, 5]\n"

/* The draw as text: each workload's parameters, ';' between. */
static void draw_of(struct sweep_rig *r, const struct sweep_spec *s, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s->n; i++)
        len += (size_t)snprintf(out + len, cap - len, "%s;", rig_params(r, &s->w[i].runs[0]));
}

static int distinct_draws(struct sweep_rig *r, const struct sweep_spec *s)
{
    char seen[64][32];
    for (size_t i = 0; i < s->n && i < 64; i++) {
        snprintf(seen[i], sizeof(seen[i]), "%s", rig_params(r, &s->w[i].runs[0]));
        for (size_t k = 0; k < i; k++)
            if (strcmp(seen[k], seen[i]) == 0)
                return 0;
    }
    return 1;
}

TEST(yaml_random_is_the_same_on_every_read)
{
    struct sweep_rig r;
    rig_init(&r);
    char first[1024], again[1024];
    const struct sweep_spec *s = rig_ok(&r, "r.yaml", RANDOM_YAML("7", "5"));
    ASSERT_EQ_INT(s->n, 5);
    for (size_t i = 0; i < 5; i++) {
        char name[8];
        snprintf(name, sizeof(name), "%03zu", i);
        ASSERT_EQ_STR(s->w[i].name, name);
    }
    ASSERT(distinct_draws(&r, s));
    draw_of(&r, s, first, sizeof(first));
    char hash[17];
    memcpy(hash, s->hash, sizeof(hash));
    s = rig_ok(&r, "r.yaml", RANDOM_YAML("7", "5"));
    draw_of(&r, s, again, sizeof(again));
    ASSERT_EQ_STR(again, first);
    ASSERT_EQ_STR(s->hash, hash);
    rig_release(&r);
}

TEST(yaml_random_seed_and_count)
{
    struct sweep_rig r;
    rig_init(&r);
    char a[1024], b[1024];
    draw_of(&r, rig_ok(&r, "r.yaml", RANDOM_YAML("7", "5")), a, sizeof(a));
    const struct sweep_spec *s = rig_ok(&r, "r.yaml", RANDOM_YAML("8", "5"));
    ASSERT_EQ_INT(s->n, 5);
    ASSERT(distinct_draws(&r, s));
    draw_of(&r, s, b, sizeof(b));
    if (strcmp(a, b) == 0)
        TEST_FAIL("seeds 7 and 8 drew the same: %s", a);
    /* a count past the combinations takes all of them, each once */
    s = rig_ok(&r, "r.yaml", RANDOM_YAML("7", "100"));
    ASSERT_EQ_INT(s->n, 20);
    ASSERT(distinct_draws(&r, s));
    /* and in a shuffled order, not the grid's */
    char grid[1024];
    draw_of(&r, s, a, sizeof(a));
    draw_of(&r,
            rig_ok(&r, "g.yaml",
                   "experiment: r\nfile: train.py\nparameters:\n"
                   "  a: [1, 2, 3, 4]\n  b: [1, 2, 3, 4, 5]\n"),
            grid, sizeof(grid));
    ASSERT_EQ_INT(r.spec.n, 20);
    ASSERT(strcmp(a, grid) != 0);
    rig_release(&r);
}

TEST(yaml_command_template)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s =
        rig_ok(&r, "t.yaml",
               "experiment: t\n"
               "command: 'echo {lr} {workload}-{run} {{literal}} \"{lr}x y\" }'\n"
               "parameters:\n"
               "  lr: [0.1, 0.2]\n");
    ASSERT_EQ_INT(s->n, 2);
    /* a template's parameters are where it puts them, not appended */
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]), "echo|0.1|000-0|{literal}|0.1x y|}");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[0]), "echo|0.2|001-0|{literal}|0.2x y|}");
    ASSERT_EQ_STR(s->w[0].runs[0].cwd, r.dir);
    ASSERT_EQ_STR(rig_params(&r, &s->w[1].runs[0]), "lr=0.2");
    /* a parameter named as {workload} comes before the workload's name */
    s = rig_ok(&r, "t.yaml",
               "experiment: t\ncommand: echo {workload}\nparameters:\n  workload: [x]\n");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[0].runs[0]), "echo|x");
    rig_release(&r);
}

TEST(yaml_runs_make_collocated_runs)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "c.yaml",
                                        "experiment: c\n"
                                        "workload: pair\n"
                                        "runs: 2\n"
                                        "devices: 0\n"
                                        "collocation: MPS\n"
                                        "command: echo {workload} {run}\n");
    ASSERT_EQ_INT(s->n, 1);
    const struct sweep_workload *w = &s->w[0];
    ASSERT_EQ_STR(w->name, "pair");
    ASSERT_EQ_INT(w->nruns, 2);
    ASSERT_EQ_STR(w->runs[0].name, "pair.1");
    ASSERT_EQ_STR(w->runs[1].name, "pair.2");
    ASSERT_EQ_STR(rig_argv(&r, &w->runs[0]), "echo|pair|0");
    ASSERT_EQ_STR(rig_argv(&r, &w->runs[1]), "echo|pair|1");
    for (size_t i = 0; i < 2; i++) {
        ASSERT_EQ_INT(w->runs[i].share, SWEEP_SHARE_MPS);
        ASSERT_EQ_STR(w->runs[i].devices[0], "0");
    }
    /* with a grid: each combination its own workload of two runs */
    s = rig_ok(&r, "c.yaml",
               "experiment: c\nworkload: pair\nruns: 2\nname: n\nfile: train.py\n"
               "parameters:\n  x: [1, 2]\n");
    ASSERT_EQ_INT(s->n, 2);
    ASSERT_EQ_STR(s->w[0].name, "pair-000");
    ASSERT_EQ_STR(s->w[1].name, "pair-001");
    ASSERT_EQ_INT(s->w[1].nruns, 2);
    ASSERT_EQ_STR(s->w[1].runs[1].name, "n");
    ASSERT_EQ_STR(rig_argv(&r, &s->w[1].runs[1]), "/usr/bin/python3|@/train.py|--x|2");
    rig_release(&r);
}

TEST(yaml_workloads_inherit_the_top_level)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "inh.yaml",
                                        "experiment: inh\n"
                                        "file: train.py\n"
                                        "devices: 0\n"
                                        "timeout: 60\n"
                                        "env:\n"
                                        "  A: top\n"
                                        "parameters:\n"
                                        "  lr: [1, 2]\n"
                                        "workloads:\n"
                                        "  - workload: base\n"
                                        "  - workload: other\n"
                                        "    devices: [1, GPU-abc]\n"
                                        "    timeout: 5m\n"
                                        "    parameters:\n"
                                        "      bs: [8]\n"
                                        "    env: {B: mine}\n"
                                        "  - experiment: second\n"
                                        "    retries: 1\n");
    ASSERT_EQ_STR(s->campaign, "inh");
    ASSERT_EQ_INT(s->n, 5);
    static const char *const names[] = {"base-000", "base-001", "other", "000", "001"};
    for (size_t i = 0; i < 5; i++)
        ASSERT_EQ_STR(s->w[i].name, names[i]);
    ASSERT_EQ_STR(s->w[0].experiment, "inh");
    ASSERT_EQ_STR(rig_params(&r, &s->w[1].runs[0]), "lr=2");
    ASSERT_EQ_STR(s->w[1].runs[0].devices[0], "0");
    ASSERT_EQ_INT(s->w[1].timeout_ns, 60 * NS_PER_S);
    ASSERT_EQ_STR(kv_list_get(&s->w[1].env, "A"), "top");
    /* a group's key replaces the default as a whole */
    const struct sweep_workload *o = &s->w[2];
    ASSERT_EQ_STR(rig_params(&r, &o->runs[0]), "bs=8");
    ASSERT_EQ_STR(rig_argv(&r, &o->runs[0]), "/usr/bin/python3|@/train.py|--bs|8");
    ASSERT_EQ_INT(count_devices(&o->runs[0]), 2);
    ASSERT_EQ_STR(o->runs[0].devices[1], "GPU-abc");
    ASSERT_EQ_INT(o->timeout_ns, 5 * 60 * NS_PER_S);
    ASSERT_EQ_INT(o->env.n, 1);
    ASSERT_EQ_STR(kv_list_get(&o->env, "B"), "mine");
    ASSERT_EQ_STR(s->w[4].experiment, "second");
    ASSERT_EQ_INT(s->w[4].retries, 1);
    ASSERT_EQ_STR(rig_params(&r, &s->w[4].runs[0]), "lr=2");
    ASSERT_EQ_INT(s->w[0].retries, 0);
    rig_release(&r);
}

TEST(yaml_workload_settings)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "s.yaml",
                                        "experiment: s\n"
                                        "file: train.py\n"
                                        "timeout: 90s\n"
                                        "retries: 3\n"
                                        "share_devices: true\n"
                                        "report: yes\n"
                                        "interval: 250ms\n"
                                        "env:\n"
                                        "  CUDA_LAUNCH_BLOCKING: 1\n"
                                        "  MY_VAR: \"a b\"\n"
                                        "on_finding: Straggler=stop\n");
    const struct sweep_workload *w = &s->w[0];
    ASSERT_EQ_INT(w->timeout_ns, 90 * NS_PER_S);
    ASSERT_EQ_INT(w->retries, 3);
    ASSERT_EQ_INT(w->share_devices, 1);
    ASSERT_EQ_INT(w->report, 1);
    ASSERT_EQ_INT(w->interval_ns, 250 * NS_PER_MS);
    ASSERT_EQ_INT(w->env.n, 2);
    ASSERT_EQ_STR(kv_list_get(&w->env, "CUDA_LAUNCH_BLOCKING"), "1");
    ASSERT_EQ_STR(kv_list_get(&w->env, "MY_VAR"), "a b");
    ASSERT_EQ_STR(rig_join(&r, w->on_finding), "Straggler=stop");
    s = rig_ok(&r, "s.yaml",
               "experiment: s\nfile: train.py\nshare_devices: off\nreport: false\n"
               "on_finding: [A=stop, \"B=signal:USR1\", 'C,D=exec:echo hi']\n");
    w = &s->w[0];
    ASSERT_EQ_INT(w->share_devices, 0);
    ASSERT_EQ_INT(w->report, 0);
    ASSERT_EQ_INT(w->interval_ns, 0);
    ASSERT_EQ_INT(w->timeout_ns, 0);
    ASSERT_EQ_STR(rig_join(&r, w->on_finding), "A=stop|B=signal:USR1|C,D=exec:echo hi");
    /* timeouts: a bare number is seconds, else a duration */
    static const struct {
        const char *text;
        int64_t ns;
    } timeouts[] = {
        {"90", 90 * NS_PER_S},
        {"\"90s\"", 90 * NS_PER_S},
        {"10m", 600 * NS_PER_S},
        {"500ms", 500 * NS_PER_MS},
        {"1.5s", 1500 * NS_PER_MS},
        {"86400", 86400 * NS_PER_S},
        {"1000000000", 1000000000 * NS_PER_S},
    };
    for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "experiment: s\nfile: train.py\ntimeout: %s\n",
                 timeouts[i].text);
        s = rig_ok(&r, "t.yaml", text);
        if (s->w[0].timeout_ns != timeouts[i].ns)
            TEST_FAIL("timeout %s: %lld ns, want %lld", timeouts[i].text,
                      (long long)s->w[0].timeout_ns, (long long)timeouts[i].ns);
    }
    rig_release(&r);
}

TEST(yaml_devices_and_listeners)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct {
        const char *devices, *want;
    } cases[] = {
        {"0", "0"},   {"\"0+1\"", "0|1"}, {"[0, 1]", "0|1"}, {"\"-\"", ""}, {"GPU-abc", "GPU-abc"},
        {"[2]", "2"}, {"\"0,2\"", "0|2"}, {"cpu", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "experiment: d\nfile: train.py\ndevices: %s\n",
                 cases[i].devices);
        const struct sweep_spec *s = rig_ok(&r, "d.yaml", text);
        ASSERT(s->w[0].runs[0].devices);
        if (strcmp(rig_join(&r, s->w[0].runs[0].devices), cases[i].want) != 0)
            TEST_FAIL("devices %s: \"%s\", want \"%s\"", cases[i].devices, r.text.buf,
                      cases[i].want);
    }
    static const struct {
        const char *listeners, *wrap;
    } lcases[] = {
        {"smi+top", NULL},       {"[smi, top, dcgmi, iostat, free, ps, macmon]", NULL},
        {"[smi, nsys]", "nsys"}, {"SMI+NSYSRAW", "nsysraw"},
        {"\"smi, top\"", NULL},
    };
    for (size_t i = 0; i < sizeof(lcases) / sizeof(lcases[0]); i++) {
        char text[128];
        snprintf(text, sizeof(text), "experiment: l\nfile: train.py\nlisteners: %s\n",
                 lcases[i].listeners);
        const struct sweep_spec *s = rig_ok(&r, "l.yaml", text);
        const char *wrap = s->w[0].runs[0].wrap;
        if (lcases[i].wrap ? !wrap || strcmp(wrap, lcases[i].wrap) != 0 : wrap != NULL)
            TEST_FAIL("listeners %s: wrap %s, want %s", lcases[i].listeners, wrap ? wrap : "none",
                      lcases[i].wrap ? lcases[i].wrap : "none");
    }
    rig_release(&r);
}

TEST(yaml_mps_and_mig)
{
    struct sweep_rig r;
    rig_init(&r);
    const struct sweep_spec *s = rig_ok(&r, "m.yaml",
                                        "experiment: m\n"
                                        "file: train.py\n"
                                        "devices: 0\n"
                                        "workloads:\n"
                                        "  - collocation: MPS:50\n"
                                        "  - collocation: mps\n"
                                        "    mps_threads: 30\n"
                                        "  - collocation: 1g.5gb+me\n"
                                        "  - collocation: \"-\"\n"
                                        "  - {}\n");
    ASSERT_EQ_INT(s->n, 5);
    ASSERT_EQ_INT(s->w[0].runs[0].share, SWEEP_SHARE_MPS);
    ASSERT_EQ_INT(s->w[0].runs[0].mps_thread_pct, 50);
    ASSERT_EQ_STR(collocation(&s->w[0].runs[0]), "MPS:50");
    ASSERT_EQ_INT(s->w[1].runs[0].mps_thread_pct, 30);
    ASSERT_EQ_STR(collocation(&s->w[1].runs[0]), "MPS:30");
    ASSERT_EQ_INT(s->w[2].runs[0].share, SWEEP_SHARE_MIG);
    ASSERT_EQ_STR(collocation(&s->w[2].runs[0]), "1g.5gb+me");
    ASSERT_EQ_INT(s->w[3].runs[0].share, SWEEP_SHARE_PLAIN);
    ASSERT_EQ_INT(s->w[4].runs[0].share, SWEEP_SHARE_PLAIN);
    rig_release(&r);
}

/* ---- the resume identity ---- */

static void keys_of(const struct sweep_spec *s, char (*keys)[17], size_t n)
{
    ASSERT_EQ_INT(s->n, n);
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ_INT(strlen(s->w[i].key), 16);
        memcpy(keys[i], s->w[i].key, 17);
    }
}

TEST(identity_is_stable_and_follows_the_plan)
{
    struct sweep_rig r;
    rig_init(&r);
    char a[15][17], b[15][17], hash[17];
    keys_of(rig_ok(&r, "yaml/g.yaml", RADT_GRID_YAML), a, 15);
    memcpy(hash, r.spec.hash, sizeof(hash));
    for (size_t i = 1; i < 15; i++)
        ASSERT(strcmp(a[i], a[i - 1]) != 0);
    keys_of(rig_ok(&r, "yaml/g.yaml", RADT_GRID_YAML), b, 15);
    for (size_t i = 0; i < 15; i++)
        ASSERT_EQ_STR(b[i], a[i]);
    ASSERT_EQ_STR(r.spec.hash, hash);
    /* another value of learning-rate: the workloads that use it change */
    char text[1024];
    snprintf(text, sizeof(text), "%.*s0.003]\n", (int)strlen(RADT_GRID_YAML) - 7, RADT_GRID_YAML);
    keys_of(rig_ok(&r, "yaml/g.yaml", text), b, 15);
    for (size_t i = 0; i < 15; i++)
        if ((strcmp(b[i], a[i]) != 0) != (i % 3 == 2))
            TEST_FAIL("workload %zu: key %s, was %s", i, b[i], a[i]);
    ASSERT(strcmp(r.spec.hash, hash) != 0);
    /* a CSV: the command and the devices are part of it */
    static const char *const csv[] = {
        "Workload,Command,Devices\nw,echo 1,0\nv,echo 1,0\n",
        "Workload,Command,Devices\nw,echo 2,0\nv,echo 1,0\n",
        "Workload,Command,Devices\nw,echo 1,1\nv,echo 1,0\n",
        "Workload,Command,Devices\nw,echo 1,0+1\nv,echo 1,0\n",
        "Workload,Command,Devices,Env\nw,echo 1,0,A=1\nv,echo 1,0,\n",
        "Workload,Command,Devices,Collocation\nw,echo 1,0,MPS\nv,echo 1,0,\n",
    };
    char first[2][17], csv_hash[17];
    keys_of(rig_ok(&r, "c.csv", csv[0]), first, 2);
    memcpy(csv_hash, r.spec.hash, sizeof(csv_hash));
    for (size_t i = 1; i < sizeof(csv) / sizeof(csv[0]); i++) {
        char k[2][17];
        keys_of(rig_ok(&r, "c.csv", csv[i]), k, 2);
        if (strcmp(k[0], first[0]) == 0)
            TEST_FAIL("variant %zu kept workload w's key %s", i, k[0]);
        ASSERT_EQ_STR(k[1], first[1]);
        ASSERT(strcmp(r.spec.hash, csv_hash) != 0);
    }
    /* what does not change the work keeps the key: a retry count */
    char k[2][17];
    keys_of(rig_ok(&r, "c.csv", "Workload,Command,Devices,Retries\nw,echo 1,0,3\nv,echo 1,0,\n"), k,
            2);
    ASSERT_EQ_STR(k[0], first[0]);
    rig_release(&r);
}

/* ---- words.h ---- */

static void split_ok(const char *text, struct words *w)
{
    struct strbuf why;
    strbuf_init(&why);
    if (words_split(text, w, &why) < 0)
        TEST_FAIL("words_split(\"%s\"): %s", text, why.buf);
    strbuf_release(&why);
}

TEST(words_split_quotes_escapes_and_offsets)
{
    struct words w;
    /*               0         1         2         3
     *               0123456789012345678901234567890123456 */
    const char *t = "  a 'b c'  \"d \\\" e\" f\\ g h'i'\"j\" '' \"x\\\\y\\$z\\n\"";
    split_ok(t, &w);
    ASSERT_EQ_INT(w.n, 7);
    static const char *const want[] = {"a", "b c", "d \" e", "f g", "hij", "", "x\\y$z\\n"};
    /* where each word's first character is written (past an opening quote) */
    static const size_t first[] = {2, 5, 12, 20, 25, 0, 37};
    for (size_t i = 0; i < 7; i++) {
        ASSERT_EQ_STR(w.v[i], want[i]);
        if (want[i][0])
            ASSERT_EQ_INT(words_source_offset(t, &w, i, 0), first[i]);
    }
    ASSERT(!w.v[7]);
    words_release(&w);
    /* blanks of every kind between words; none at all is an empty list */
    split_ok("a\tb\nc\r\nd", &w);
    ASSERT_EQ_INT(w.n, 4);
    ASSERT_EQ_STR(w.v[3], "d");
    words_release(&w);
    split_ok(" \t\n", &w);
    ASSERT_EQ_INT(w.n, 0);
    ASSERT(w.v && !w.v[0]);
    words_release(&w);
    split_ok("", &w);
    ASSERT_EQ_INT(w.n, 0);
    ASSERT(w.v && !w.v[0]);
    words_release(&w);
    /* where a word's characters came from, past quotes and escapes */
    /*   0         1         2
     *   012345678901234567890123 */
    t = "a '-{x}' \"q\\\"{y}\" z\\ {w}";
    split_ok(t, &w);
    ASSERT_EQ_INT(w.n, 4);
    ASSERT_EQ_STR(w.v[2], "q\"{y}");
    ASSERT_EQ_STR(w.v[3], "z {w}");
    static const struct {
        size_t word, at, source;
    } from[] = {{0, 0, 0},  {1, 0, 3},  {1, 1, 4},  {2, 0, 10},
                {2, 1, 12}, {2, 2, 13}, {3, 1, 20}, {3, 2, 21}};
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++)
        if (words_source_offset(t, &w, from[i].word, from[i].at) != from[i].source)
            TEST_FAIL("word %zu character %zu: offset %zu, want %zu", from[i].word, from[i].at,
                      words_source_offset(t, &w, from[i].word, from[i].at), from[i].source);
    words_release(&w);
    /* no expansion: $VAR, globs and ~ are what they say */
    split_ok("$HOME *.py ~", &w);
    ASSERT_EQ_STR(w.v[0], "$HOME");
    ASSERT_EQ_STR(w.v[1], "*.py");
    ASSERT_EQ_STR(w.v[2], "~");
    words_release(&w);
}

TEST(words_split_errors)
{
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"a 'b", "unclosed ' at character 3"},
        {"a \"b\\\"", "unclosed \" at character 3"},
        {"a\\", "a backslash ends the text"},
        {"ok 'fine' \"x", "unclosed \" at character 11"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct words w;
        struct strbuf why;
        strbuf_init(&why);
        if (words_split(cases[i].text, &w, &why) == 0)
            TEST_FAIL("words_split(\"%s\") succeeded", cases[i].text);
        ASSERT_EQ_STR(why.buf, cases[i].why);
        words_release(&w);
        strbuf_release(&why);
    }
}

TEST(words_substitute_placeholders)
{
    struct kv_list first = {0}, second = {0};
    ASSERT_EQ_INT(kv_list_add(&first, "lr", "0.1"), 0);
    ASSERT_EQ_INT(kv_list_add(&second, "lr", "9"), 0);
    ASSERT_EQ_INT(kv_list_add(&second, "workload", "w"), 0);
    struct strbuf out, why;
    strbuf_init(&out);
    strbuf_init(&why);
    static const struct {
        const char *word, *want;
    } good[] = {
        {"{lr}", "0.1"},
        {"x{lr}y{workload}z", "x0.1ywz"},
        {"{{lr}}", "{lr}"},
        {"a}b", "a}b"},
        {"{{{lr}}}", "{0.1}"},
        {"plain", "plain"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        size_t bad_at = 99;
        if (words_substitute(good[i].word, &first, &second, &out, &why, &bad_at) < 0)
            TEST_FAIL("words_substitute(\"%s\"): %s", good[i].word, why.buf);
        ASSERT_EQ_STR(out.buf, good[i].want);
    }
    static const struct {
        const char *word, *why;
        size_t bad_at;
    } bad[] = {
        {"{nope}", "{nope} names no parameter", 0},
        {"ab{lr}{nope}", "{nope} names no parameter", 6},
        {"ab{unclosed", "unclosed {", 2},
        {"x{}", "{} names no parameter", 1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        size_t bad_at = 99;
        strbuf_reset(&why);
        if (words_substitute(bad[i].word, &first, &second, &out, &why, &bad_at) == 0)
            TEST_FAIL("words_substitute(\"%s\") gave \"%s\"", bad[i].word, out.buf);
        if (!strstr(why.buf, bad[i].why))
            TEST_FAIL("\"%s\": \"%s\", want \"%s\"", bad[i].word, why.buf, bad[i].why);
        ASSERT_EQ_INT(bad_at, bad[i].bad_at);
    }
    /* no lists at all */
    size_t bad_at = 99;
    ASSERT_EQ_INT(words_substitute("{x}", NULL, NULL, &out, &why, &bad_at), -1);
    ASSERT_EQ_INT(words_substitute("x", NULL, NULL, &out, &why, &bad_at), 0);
    ASSERT_EQ_STR(out.buf, "x");
    strbuf_release(&out);
    strbuf_release(&why);
    kv_list_release(&first);
    kv_list_release(&second);
}

/* ---- the CSV write-back ---- */

static char *read_text(const char *path)
{
    size_t len;
    char *raw = fixture_load(path, &len);
    char *text = malloc(len + 1);
    ASSERT(text);
    memcpy(text, raw, len);
    text[len] = '\0';
    free(raw);
    return text;
}

/* The plan as text: every workload's runs with names, commands, devices. */
static void plan_text(struct sweep_rig *r, const struct sweep_spec *s, struct strbuf *out)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->w[i].nruns; k++) {
            const struct sweep_run *run = &s->w[i].runs[k];
            strbuf_addf(out, "%s/%s/%s: %s", s->w[i].experiment, s->w[i].name, run->name,
                        rig_argv(r, run));
            strbuf_addf(out, " on %s %s\n", rig_join(r, run->devices), collocation(run));
        }
}

TEST(writeback_keeps_every_other_cell)
{
    struct sweep_rig r;
    rig_init(&r);
    const char *original = "Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Params\n"
                           "0,1,\"a, b\",,,0,-,train.py,\"--note \"\"x y\"\" --z 1\"\n"
                           "0,1,multi,,,0,MPS,train.py,\"--k\nv\"\n"
                           "0,2,\"  pad  \",old,,\"0\",,train.py,\n"
                           "0,3,plain,FINISHED plain,fedcba9876543210,1, 3g.20gb ,train.py,--q\n";
    const struct sweep_spec *s = rig_ok(&r, "wb.csv", original);
    struct strbuf before, after;
    strbuf_init(&before);
    strbuf_init(&after);
    plan_text(&r, s, &before);
    const char *status[] = {NULL, "FINISHED a, b", "FINISHED multi\nline", "FAILED   pad  ", NULL};
    const char *run[] = {NULL, "0123456789abcdef", "\"quoted\"", NULL, NULL};
    struct strbuf err;
    strbuf_init(&err);
    if (sweep_csv_rewrite(r.path, status, run, 4, &err) < 0)
        TEST_FAIL("sweep_csv_rewrite: %s", err.buf);
    char *text = read_text(r.path);
    ASSERT_EQ_STR(text, "Experiment,Workload,Name,Status,Run,Devices,Collocation,File,Params\n"
                        "0,1,\"a, b\",\"FINISHED a, b\",0123456789abcdef,0,-,train.py,\"--note "
                        "\"\"x y\"\" --z 1\"\n"
                        "0,1,multi,\"FINISHED multi\nline\",\"\"\"quoted\"\"\",0,MPS,train.py,"
                        "\"--k\nv\"\n"
                        "0,2,\"  pad  \",\"FAILED   pad  \",,0,,train.py,\n"
                        "0,3,plain,FINISHED plain,fedcba9876543210,1,3g.20gb,train.py,--q\n");
    free(text);
    ASSERT_EQ_INT(rig_load_file(&r, "wb.csv"), 0);
    plan_text(&r, &r.spec, &after);
    ASSERT_EQ_STR(after.buf, before.buf);
    ASSERT_EQ_INT(r.spec.w[0].file_finished, 1);
    ASSERT_EQ_INT(r.spec.w[1].file_finished, 0);
    ASSERT_EQ_INT(r.spec.w[2].file_finished, 1);
    /* a second rewrite with nothing to say changes nothing */
    text = read_text(r.path);
    const char *none[5] = {NULL};
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, none, none, 4, &err), 0);
    char *again = read_text(r.path);
    ASSERT_EQ_STR(again, text);
    free(again);
    free(text);
    strbuf_release(&err);
    strbuf_release(&before);
    strbuf_release(&after);
    rig_release(&r);
}

TEST(writeback_adds_missing_columns)
{
    struct sweep_rig r;
    rig_init(&r);
    rig_ok(&r, "add.csv", "Workload,File\n1,train.py\n2,train.py\n");
    const char *status[] = {NULL, "FINISHED 1.1", NULL};
    const char *run[] = {NULL, "0123456789abcdef", NULL};
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 2, &err), 0);
    char *text = read_text(r.path);
    ASSERT_EQ_STR(text, "Workload,File,Status,Run\n"
                        "1,train.py,FINISHED 1.1,0123456789abcdef\n"
                        "2,train.py,,\n");
    free(text);
    ASSERT_EQ_INT(rig_load_file(&r, "add.csv"), 0);
    ASSERT_EQ_INT(r.spec.n, 2);
    ASSERT_EQ_INT(r.spec.w[0].file_finished, 1);
    ASSERT_EQ_INT(r.spec.w[1].file_finished, 0);
    /* only Run missing: it goes at the end, Status stays where it is */
    rig_ok(&r, "add.csv", "Status,Workload,File\n,1,train.py\n");
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 1, &err), 0);
    text = read_text(r.path);
    ASSERT_EQ_STR(text, "Status,Workload,File,Run\nFINISHED 1.1,1,train.py,0123456789abcdef\n");
    free(text);
    strbuf_release(&err);
    rig_release(&r);
}

TEST(writeback_of_crlf_and_bom_files)
{
    struct sweep_rig r;
    rig_init(&r);
    /* a BOM-less file with CRLF and blank lines */
    rig_ok(&r, "crlf.csv", "Workload,Params,File\r\n\r\n1,\"x\r\ny\",train.py\r\n2,z,train.py\r\n");
    const char *status[] = {NULL, NULL, "FAILED z"};
    const char *run[] = {NULL, NULL, NULL};
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 2, &err), 0);
    char *text = read_text(r.path);
    ASSERT(strncmp(text, "\xef\xbb\xbf", 3) != 0);
    ASSERT_EQ_STR(text, "Workload,Params,File,Status,Run\n"
                        "1,\"x\r\ny\",train.py,,\n"
                        "2,z,train.py,FAILED z,\n");
    free(text);
    ASSERT_EQ_INT(rig_load_file(&r, "crlf.csv"), 0);
    ASSERT_EQ_STR(rig_argv(&r, &r.spec.w[0].runs[0]), "/usr/bin/python3|@/train.py|x|y");
    /* with a byte order mark: still one that sweep_spec_load reads */
    rig_ok(&r, "bom.csv", "\xef\xbb\xbfWorkload,File\n1,train.py\n");
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 1, &err), 0);
    ASSERT_EQ_INT(rig_load_file(&r, "bom.csv"), 0);
    ASSERT_EQ_STR(r.spec.w[0].name, "1");
    strbuf_release(&err);
    rig_release(&r);
}

/* A file edited between the plan and the write-back: rows that no longer
 * fit the header are refused, not read past. */
TEST(writeback_refuses_a_broken_file)
{
    struct sweep_rig r;
    rig_init(&r);
    rig_ok(&r, "b.csv", "Workload,Name,File\n1,a,train.py\n");
    rig_write_str(&r, "b.csv", "Workload,Name,File\n1,a,train.py\n2\n");
    const char *status[] = {NULL, "FINISHED a", "FINISHED b"};
    const char *run[] = {NULL, NULL, NULL};
    struct strbuf err;
    strbuf_init(&err);
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 2, &err), -1);
    ASSERT(strstr(err.buf, ":3:"));
    char *text = read_text(r.path);
    ASSERT_EQ_STR(text, "Workload,Name,File\n1,a,train.py\n2\n");
    free(text);
    /* and an empty one */
    rig_write_str(&r, "b.csv", "");
    strbuf_reset(&err);
    ASSERT_EQ_INT(sweep_csv_rewrite(r.path, status, run, 2, &err), -1);
    ASSERT(err.len > 0);
    strbuf_release(&err);
    rig_release(&r);
}

TEST_MAIN(csv_radt_single, csv_radt_double, csv_radt_collocation,
          csv_groups_rows_by_experiment_and_workload, csv_quoted_fields,
          csv_crlf_bom_blank_lines_and_spaces, csv_columns_in_any_order_and_optional,
          csv_status_finished, csv_strobe_columns, yaml_radt_grid, radt_written_back_files,
          yaml_parameter_forms, yaml_random_is_the_same_on_every_read, yaml_random_seed_and_count,
          yaml_command_template, yaml_runs_make_collocated_runs,
          yaml_workloads_inherit_the_top_level, yaml_workload_settings, yaml_devices_and_listeners,
          yaml_mps_and_mig, identity_is_stable_and_follows_the_plan,
          words_split_quotes_escapes_and_offsets, words_split_errors, words_substitute_placeholders,
          writeback_keeps_every_other_cell, writeback_adds_missing_columns,
          writeback_of_crlf_and_bom_files, writeback_refuses_a_broken_file)
