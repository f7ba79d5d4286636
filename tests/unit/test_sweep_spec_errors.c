/*
 * The mistakes an experiment file can make (sweep/spec.h), each reported
 * at the FILE:LINE:COL of the cell or YAML node that makes it: the tests
 * check the place, not only the words. Then hostile files (NUL bytes, a
 * megabyte on one line, deep nesting, alias bombs, huge parameter spaces),
 * which must fail cleanly or load quickly. The plans of good files are in
 * test_sweep_spec.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"
#include "sweep/spec.h"

#include "sweep_rig.h"
#include "test.h"

/* ---- columns and keys ---- */

TEST(csv_unknown_and_missing_columns)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"c.csv", "Workload,File,Colour\n1,train.py,red\n", 1, 15, "unknown column 'Colour'"},
        {"c.csv", "\xef\xbb\xbfWorkload,  Bogus\n1,x\n", 1, 12, "unknown column 'Bogus'"},
        {"c.csv", "\n\nWorkload,File,file\n1,a,b\n", 3, 15, "column 'File' is given twice"},
        {"c.csv", "File,Name\ntrain.py,x\n", 1, 1, "no Workload column"},
        {"c.csv", "Workload,Name\n1,x\n", 1, 1, "neither a File nor a Command"},
        {"c.csv", "File,Workload\ntrain.py,\n", 2, 10, "the row has no Workload"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(yaml_unknown_keys)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"k.yaml", "experiment: e\nfile: train.py\nfiel: x\n", 3, 1, "unknown key 'fiel'"},
        {"k.yaml", "experiment: e\nfile: train.py\nworkloads:\n  - workload: a\n    devics: 0\n", 5,
         5, "unknown key 'devics'"},
        /* keys of the top level only */
        {"k.yaml", "experiment: e\nfile: train.py\nworkloads:\n  - {status: x}\n", 4, 6,
         "unknown key 'status'"},
        {"k.yaml", "experiment: e\nworkloads:\n  - workloads: []\n", 3, 5,
         "unknown key 'workloads'"},
        {"k.yaml", "experiment: e\nfile: train.py\nparameters:\n  lr:\n    valeus: [1]\n", 5, 5,
         "unknown key 'valeus' of parameter 'lr'"},
        {"k.yaml", "experiment: e\nfile: train.py\nparameters:\n  lr: {value: 1, values: [2]}\n", 4,
         18, "parameter 'lr' has both values and value"},
        {"k.yaml", "experiment: e\nfile: train.py\nparameters:\n  lr: [1]\n  lr: [2]\n", 5, 3,
         "parameter 'lr' is given twice"},
        {"k.yaml", "experiment: e\nfile: train.py\nparameters:\n  lr: []\n", 4, 7,
         "parameter 'lr' has an empty list of values"},
        {"k.yaml", "experiment: e\nfile: train.py\nparameters: [lr]\n", 3, 13,
         "parameters: a mapping"},
        {"k.yaml", "experiment: e\nfile: [a, b]\n", 2, 7, "file: one value is wanted here"},
        {"k.yaml", "file: train.py\n", 1, 1, "no experiment"},
        /* a key twice: the second would silently win */
        {"k.yaml", "experiment: e\nfile: train.py\ndevices: 0\ndevices: 1\n", 4, 1,
         "key 'devices' is given twice"},
        {"k.yaml", "experiment: e\nworkloads:\n  - {file: train.py, runs: 2, file: x.py}\n", 3, 31,
         "key 'file' is given twice"},
        {"k.yaml", "experiment: e\nfile: train.py\nworkloads: []\n", 3, 12, "the list is empty"},
        {"k.yaml", "experiment: e\nworkloads:\n  - file: train.py\n  - [x]\n", 4, 5,
         "a mapping of keys"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(yaml_method_count_seed_runs)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: bayes\n", 3, 9,
         "method 'bayes' is not grid or random"},
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: random\ncount: 0\n", 4, 8,
         "count '0' is not a whole number from 1 to 100000"},
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: random\ncount: many\n", 4, 8,
         "count 'many'"},
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: random\ncount: 100001\n", 4, 8,
         "count '100001'"},
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: random\nseed: -1\n", 4, 7, "seed '-1'"},
        {"m.yaml", "experiment: e\nfile: train.py\ncount: 5\n", 3, 8,
         "count and seed are for method: random"},
        {"m.yaml", "experiment: e\nfile: train.py\nmethod: grid\nseed: 5\n", 4, 7,
         "count and seed are for method: random"},
        {"m.yaml", "experiment: e\nfile: train.py\nruns: 65\n", 3, 7,
         "runs '65' is not a whole number from 1 to 64"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

/* ---- devices, collocation, listeners ---- */

TEST(unknown_devices)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"d.csv", "Workload,File,Devices\n1,train.py,0+7\n", 2, 12,
         "unknown device '7': not a GPU index or UUID of this machine"},
        /* places past a BOM, CRLF, blank lines and spaces */
        {"d.csv", "\xef\xbb\xbfWorkload,File,Devices\r\n\r\n1,train.py,0\r\n2,train.py, GPU-x\r\n",
         4, 13, "unknown device 'GPU-x'"},
        /* and past a line break inside quotes */
        {"d.csv", "Workload,Name,File,Devices\n1,\"a\nb\",train.py,3\n", 3, 13,
         "unknown device '3'"},
        {"d.yaml", "experiment: e\nfile: train.py\ndevices: [0, 9]\n", 3, 10, "unknown device '9'"},
        {"d.yaml", "experiment: e\nfile: train.py\ndevices: gpu-abc\n", 3, 10,
         "unknown device 'gpu-abc'"},
        {"d.yaml", "experiment: e\nfile: train.py\ndevices: {a: 1}\n", 3, 10,
         "a value or a list of values"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(devices_on_a_machine_without_gpus)
{
    struct sweep_rig r;
    rig_init(&r);
    r.env.gpu_ids = NULL;
    r.env.why_no_gpu = "no NVIDIA driver here (libnvidia-ml.so.1 not found)";
    static const struct spec_error_case cases[] = {
        {"g.csv", "Workload,File,Devices\n1,train.py,0\n", 2, 12,
         "unknown device '0': no NVIDIA driver here (libnvidia-ml.so.1 not found)"},
        {"g.yaml", "experiment: e\nfile: train.py\ndevices: 0\n", 3, 10, "no NVIDIA driver here"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    /* no device is fine */
    const struct sweep_spec *s = rig_ok(&r, "g.csv", "Workload,File,Devices\n1,train.py,-\n");
    ASSERT(!s->w[0].runs[0].devices[0]);
    /* and a reader of old plans takes any name */
    r.env.any_device = 1;
    s = rig_ok(&r, "g.csv", "Workload,File,Devices\n1,train.py,7+GPU-gone\n");
    ASSERT_EQ_STR(s->w[0].runs[0].devices[1], "GPU-gone");
    rig_release(&r);
}

TEST(collocation_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"c.csv", "Workload,File,Devices,Collocation\n1,train.py,,3g.20gb\n", 2, 13,
         "collocation '3g.20gb' needs a device"},
        {"c.csv", "Workload,File,Collocation\n1,train.py,MPS\n", 2, 12,
         "collocation 'MPS' needs a device"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: \"-\"\ncollocation: MPS\n", 4, 14,
         "collocation 'MPS' needs a device"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: 0\ncollocation: 4g\n", 4, 14,
         "collocation '4g' is not"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: 0\ncollocation: 3g.0gb\n", 4, 14,
         "collocation '3g.0gb' is not"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: 0\ncollocation: MPS:150\n", 4, 14,
         "MPS thread share '150' is not a percentage from 1 to 100"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: 0\ncollocation: MPS\nmps_threads: 0\n",
         5, 14, "MPS thread share '0'"},
        {"c.yaml",
         "experiment: e\nfile: train.py\ndevices: 0\ncollocation: mps\nmps_threads: "
         "half\n",
         5, 14, "MPS thread share 'half'"},
        {"c.yaml", "experiment: e\nfile: train.py\ndevices: 0\nmps_threads: 50\n", 4, 14,
         "mps_threads needs collocation MPS"},
        {"c.csv", "Workload,File,Devices,Collocation\n1,train.py,0,MPS:x\n", 2, 14,
         "MPS thread share 'x'"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(listener_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"l.csv", "Workload,File,Listeners\n1,train.py,smi+gpustat\n", 2, 12,
         "unknown listener 'gpustat'"},
        {"l.csv", "Workload,File,Listeners\n1,train.py,smi+ncu\n", 2, 12,
         "listener 'ncu' needs ncu, which is not installed"},
        {"l.yaml", "experiment: e\nfile: train.py\nlisteners: [top, ncuattach]\n", 3, 12,
         "listener 'ncuattach' needs ncu"},
        {"l.yaml", "experiment: e\nfile: train.py\nlisteners: nsys+nsysraw\n", 3, 12,
         "listeners 'nsys' and 'nsysraw' both wrap the command: choose one"},
        {"l.yaml", "experiment: e\nfile: train.py\nlisteners: [smi, [top]]\n", 3, 18,
         "a list of plain values"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

/* ---- commands ---- */

TEST(template_names_a_missing_parameter)
{
    struct sweep_rig r;
    rig_init(&r);
    /* the column is the brace's: plain, quoted, inside sh quotes */
    static const struct spec_error_case cases[] = {
        {"t.yaml", "experiment: e\ncommand: python3 train.py --lr {lrx}\nparameters:\n  lr: [1]\n",
         2, 32, "command: {lrx} names no parameter"},
        {"t.yaml",
         "experiment: e\ncommand: \"python3 train.py --lr {lrx}\"\nparameters:\n  lr: [1]\n", 2, 33,
         "{lrx} names no parameter"},
        {"t.yaml", "experiment: e\ncommand: echo '--x={lrx}'\n", 2, 20, "{lrx} names no parameter"},
        {"t.yaml", "experiment: e\ncommand: 'echo \"a b\" x{y}'\n", 2, 23,
         "{y} names no parameter"},
        {"t.yaml", "experiment: e\ncommand: echo {workload} {lr\n", 2, 26,
         "unclosed { (write {{ for a brace)"},
        {"t.csv", "Workload,Command\n1,echo {nope}\n", 2, 8, "{nope} names no parameter"},
        {"t.csv", "Workload,Command\n1, \"echo \"\"a\"\" {nope}\"\n", 2, 16,
         "{nope} names no parameter"},
        {"t.csv", "Workload,Command\n1,\"echo a\nb {nope}\"\n", 3, 3, "{nope} names no parameter"},
        /* a block scalar's text starts below its node: the node is the place */
        {"t.yaml", "experiment: e\ncommand: >-\n  echo {nope}\n", 2, 10,
         "{nope} names no parameter"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(command_line_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"p.csv", "Workload,File,Params\n1,train.py,--msg 'hi\n", 2, 12,
         "Params: unclosed ' at character 7"},
        {"p.csv", "Workload,File,Params\n1,train.py,\"--a \"\"b\"\n", 2, 12,
         "Params: unclosed \" at character 5"},
        {"p.csv", "Workload,File,Params\n1,train.py,--x \\\n", 2, 12,
         "Params: a backslash ends the text"},
        {"p.yaml", "experiment: e\ncommand: \"echo 'x\"\n", 2, 10,
         "command: unclosed ' at character 6"},
        {"p.yaml", "experiment: e\ncommand: \"  \"\n", 2, 10, "command is empty"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(file_and_command)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"f.yaml", "experiment: e\nfile: train.py\ncommand: echo\n", 3, 10,
         "give file or command, not both"},
        {"f.csv", "Workload,File,Command\n1,train.py,echo\n", 2, 12,
         "give file or command, not both"},
        /* a group's command does not undo the top level's file */
        {"f.yaml",
         "experiment: e\nfile: train.py\nworkloads:\n  - workload: a\n    command: echo\n", 5, 14,
         "give file or command, not both"},
        /* neither: the row or the group is the place */
        {"f.csv", "Workload,Name,File,Command\n1,n,,\n", 2, 1,
         "workload '1' has no file and no command"},
        {"f.csv", "Workload,File\n1,train.py\n2,\n", 3, 1,
         "workload '2' has no file and no command"},
        {"f.yaml", "experiment: e\nparameters:\n  x: [1]\n", 1, 1,
         "workload '000' has no file and no command"},
        {"f.yaml",
         "name: n\nexperiment: e\nworkloads:\n  - command: echo\n  - workload: a\n"
         "    devices: 0\n",
         5, 5, "workload 'a' has no file and no command"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(missing_files)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"m.yaml", "experiment: e\nfile: nothere.py\n", 2, 7, "no such file 'nothere.py'"},
        {"m.csv", "Workload,File\n1,  missing.py\n", 2, 5, "no such file 'missing.py'"},
        {"sub/m.csv", "Workload,File\n1,../pytorch/none.py\n", 2, 3,
         "no such file '../pytorch/none.py'"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    /* the experiment file itself */
    ASSERT_EQ_INT(rig_load_file(&r, "absent.csv"), -1);
    ASSERT(strstr(r.err.buf, "cannot read"));
    ASSERT(strstr(r.err.buf, "absent.csv"));
    ASSERT_EQ_INT(rig_load_file(&r, "absent.yaml"), -1);
    ASSERT(strstr(r.err.buf, "cannot read"));
    rig_write_str(&r, "plan.txt", "Workload,File\n1,train.py\n");
    ASSERT_EQ_INT(rig_load_file(&r, "plan.txt"), -1);
    ASSERT(strstr(r.err.buf, "an experiment file is .csv, .yaml or .yml"));
    /* a folder named like a file */
    rig_write_str(&r, "dir.csv/x", "");
    ASSERT_EQ_INT(rig_load_file(&r, "dir.csv"), -1);
    ASSERT(strstr(r.err.buf, "dir.csv"));
    rig_release(&r);
}

TEST(grid_past_the_limit)
{
    struct sweep_rig r;
    rig_init(&r);
    struct strbuf t;
    strbuf_init(&t);
    strbuf_adds(&t, "experiment: e\nfile: train.py\nparameters:\n");
    for (int k = 0; k < 10; k++)
        strbuf_addf(&t, "  p%d: [1, 2, 3, 4]\n", k);
    rig_fails_at(&r, "g.yaml", t.buf, 4, 3,
                 "the grid makes 1048576 workloads, more than 100000: use method: random");
    /* random draws from it; past 2^62 combinations is too many even so */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nfile: train.py\nmethod: random\ncount: 3\nparameters:\n");
    for (int k = 0; k < 64; k++)
        strbuf_addf(&t, "  p%d: [a, b]\n", k);
    rig_fails_at(&r, "g.yaml", t.buf, 6, 3, "the parameters make too many combinations");
    strbuf_release(&t);
    rig_release(&r);
}

TEST(empty_files)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"e.csv", "", 1, 1, "the file is empty"},
        {"e.csv", "\n\r\n\n", 1, 1, "the file is empty"},
        {"e.csv", "\xef\xbb\xbf", 1, 1, "the file is empty"},
        {"e.csv", "Workload,File\n", 1, 1, "the file defines no workload"},
        {"e.yaml", "", 1, 1, "the file is empty"},
        {"e.yaml", "# nothing here\n", 1, 1, "the file is empty"},
        {"e.yaml", "---\n", 2, 1, "a mapping of keys"}, /* the null node after --- */
        {"e.yaml", "[]\n", 1, 1, "a mapping of keys"},
        {"e.yaml", "just text\n", 1, 1, "a mapping of keys"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

/* libyaml's own place for the mistake, which PyYAML (the same scanner)
 * gives too: 0-based there, 1-based here. */
TEST(yaml_syntax_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"s.yaml", "experiment: e\nfile: [train.py\n", 3, 1, "did not find expected ',' or ']'"},
        /* (libyaml 0.2.5 words it "found a tab character that violates
         * indentation", older ones "found character that cannot start any token") */
        {"s.yaml", "experiment: e\n\tfile: x\n", 2, 1, "found "},
        {"s.yaml", "experiment: e\nfile: \"x\n", 3, 1, "found unexpected end of stream"},
        {"s.yaml", "experiment: e\n  file: x\n", 2, 7,
         "mapping values are not allowed in this context"},
        {"s.yaml", "experiment: *nowhere\n", 1, 13, "found undefined alias"},
        {"s.yaml", "experiment: e\n---\nexperiment: f\n", 2, 1,
         "a second YAML document: an experiment file holds one"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    /* one document, marked at both ends, is one */
    ASSERT_EQ_INT(rig_ok(&r, "s.yaml", "---\nexperiment: e\nfile: train.py\n...\n")->n, 1);
    rig_release(&r);
}

TEST(csv_row_shape_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"s.csv", "Workload,File\n1,train.py,extra\n", 2, 12, "the row has 3 fields, the header 2"},
        {"s.csv", "Workload,File\n1,train.py\n2,train.py, \"x\" ,y\n", 3, 13,
         "the row has 4 fields, the header 2"},
        {"s.csv", "Workload,File,Params\n1,train.py\n", 2, 1, "the row has 2 fields, the header 3"},
        {"s.csv", "Workload,File\n1,\"train.py\n", 2, 3, "a quoted field is never closed"},
        {"s.csv", "Workload,File\n1,train.py\n2,\"a\"\"\n\n", 3, 3,
         "a quoted field is never closed"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(workload_defined_twice)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"w.yaml", "experiment: e\nfile: train.py\nworkloads:\n  - workload: a\n  - workload: a\n",
         5, 15, "workload 'a' is defined twice (first at line 4)"},
        /* a numbered name taken by hand: the numbered group is the place */
        {"w.yaml",
         "experiment: e\nfile: train.py\nworkloads:\n  - workload: \"000\"\n"
         "  - devices: 0\n",
         5, 5, "workload '000' is defined twice (first at line 4)"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    /* another experiment is another workload */
    const struct sweep_spec *s = rig_ok(&r, "w.yaml",
                                        "experiment: e\nfile: train.py\nworkloads:\n"
                                        "  - workload: a\n  - {workload: a, experiment: f}\n");
    ASSERT_EQ_INT(s->n, 2);
    rig_release(&r);
}

TEST(on_finding_errors)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"o.yaml", "experiment: e\nfile: train.py\non_finding: Straggler\n", 3, 13,
         "on_finding 'Straggler' is not RULE=stop, RULE=signal:SIG or RULE=exec:CMD"},
        {"o.yaml", "experiment: e\nfile: train.py\non_finding: [A=stop, B=explode]\n", 3, 22,
         "on_finding 'B=explode'"},
        {"o.yaml", "experiment: e\nfile: train.py\non_finding: {A: stop}\n", 3, 13,
         "on_finding: RULE=ACTION, or a list of them"},
        {"o.yaml", "experiment: e\nfile: train.py\non_finding: [[A=stop]]\n", 3, 14,
         "on_finding: RULE=ACTION values only"},
        {"o.csv", "Workload,File,OnFinding\n1,train.py,=stop\n", 2, 12, "on_finding '=stop'"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

/* Workload-wide columns: every row that gives one gives the same. */
TEST(csv_conflicting_workload_settings)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct spec_error_case cases[] = {
        {"x.csv", "Workload,File,Timeout\n1,train.py,10s\n1,train.py,20s\n", 3, 12,
         "Timeout '20s' differs from '10s' in the same workload (line 2)"},
        {"x.csv", "Workload,File,Env\n1,train.py,A=1\n2,train.py,\n1,train.py,A=2\n", 4, 12,
         "Env 'A=2' differs from 'A=1'"},
        {"x.csv", "Workload,File,Retries\n1,train.py,1\n1,train.py,2\n", 3, 12,
         "Retries '2' differs"},
        {"x.csv", "Workload,File,OnFinding\n1,train.py,A=stop\n1,train.py,B=stop\n", 3, 12,
         "OnFinding 'B=stop' differs"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

TEST(bad_values)
{
    struct sweep_rig r;
    rig_init(&r);
    static const struct {
        const char *line, *why;
        int col;
    } yaml_cases[] = {
        {"timeout: soon", "'soon' is not a duration such as 90s, 10m or 500ms", 10},
        {"timeout: 0", "a duration must be more than 0", 10},
        {"timeout: 0s", "a duration must be more than 0", 10},
        {"timeout: 9999999999", "'9999999999' is too long a duration", 10},
        {"timeout: -5", "'-5' is not a duration", 10},
        {"retries: -1", "retries '-1' is not a whole number from 0 to 100", 10},
        {"retries: 101", "retries '101'", 10},
        {"interval: 0.5ms", "interval '0.5ms' is not a duration from 1ms to 60s", 11},
        {"interval: 2m", "interval '2m'", 11},
        {"share_devices: maybe", "share_devices: true or false, not 'maybe'", 16},
        {"report: 1", "report: true or false, not '1'", 9},
        {"env: {1BAD: x}", "env: '1BAD' is not a variable name", 7},
        {"env: {\"A=B\": x}", "env: 'A=B' is not a variable name", 7},
        {"env: {A: [1, 2]}", "env: plain names and values only", 7},
        {"env: [A]", "env: a mapping of variable names to values", 6},
        {"timeout: [1]", "timeout: one value is wanted here", 10},
    };
    for (size_t i = 0; i < ARRAY_SIZE(yaml_cases); i++) {
        char text[256];
        snprintf(text, sizeof(text), "experiment: e\nfile: train.py\n%s\n", yaml_cases[i].line);
        rig_write_str(&r, "v.yaml", text);
        if (rig_load_file(&r, "v.yaml") == 0)
            TEST_FAIL("'%s' loaded", yaml_cases[i].line);
        rig_check_error(&r, "v.yaml", 3, yaml_cases[i].col, yaml_cases[i].why);
    }
    static const struct spec_error_case cases[] = {
        {"v.csv", "Workload,File,Env\n1,train.py,NOEQUALS\n", 2, 12,
         "Env 'NOEQUALS' is not KEY=VALUE"},
        {"v.csv", "Workload,File,Env\n1,train.py,A=1 A=2\n", 2, 12,
         "env: A is given twice ('1' and '2')"},
        {"v.csv", "Workload,File,Env\n1,train.py,A-B=1\n", 2, 12,
         "env: 'A-B' is not a variable name"},
        {"v.csv", "Workload,File,Timeout\n1,train.py,1h\n", 2, 12, "'1h' is not a duration"},
        {"v.csv", "Workload,File,Retries\n1,train.py,2x\n", 2, 12,
         "Retries '2x' is not a whole number from 0 to 100"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    rig_release(&r);
}

/* ---- hostile files: fail cleanly or load quickly, never crash ---- */

TEST(hostile_nul_bytes)
{
    struct sweep_rig r;
    rig_init(&r);
    static const char csv[] = "Workload,File\n1,tr\0ain.py\n";
    rig_write(&r, "n.csv", csv, sizeof(csv) - 1);
    ASSERT_EQ_INT(rig_load_file(&r, "n.csv"), -1);
    rig_check_error(&r, "n.csv", 2, 5, "the file holds a NUL byte");
    static const char yaml[] = "experiment: e\nfile: tr\0ain.py\n";
    rig_write(&r, "n.yaml", yaml, sizeof(yaml) - 1);
    ASSERT_EQ_INT(rig_load_file(&r, "n.yaml"), -1);
    rig_check_error(&r, "n.yaml", 2, 9, "control characters are not allowed");
    /* not UTF-8 at all */
    static const char latin1[] = "experiment: caf\xe9\nfile: train.py\n";
    rig_write(&r, "l.yaml", latin1, sizeof(latin1) - 1);
    ASSERT_EQ_INT(rig_load_file(&r, "l.yaml"), -1);
    rig_check_error(&r, "l.yaml", 1, 16, "invalid");
    static const char stray[] = "experiment: \xc3\xa9t\xc3\xa9\x80\nfile: train.py\n";
    rig_write(&r, "l.yaml", stray, sizeof(stray) - 1);
    ASSERT_EQ_INT(rig_load_file(&r, "l.yaml"), -1);
    rig_check_error(&r, "l.yaml", 1, 18, "invalid leading UTF-8 octet");
    rig_release(&r);
}

TEST(hostile_megabyte_lines)
{
    struct sweep_rig r;
    rig_init(&r);
    const size_t mb = 1 << 20;
    struct strbuf t;
    strbuf_init(&t);
    double t0 = rig_now_s();
    /* a header cell of a megabyte */
    for (size_t i = 0; i < mb; i++)
        strbuf_addch(&t, 'A');
    strbuf_adds(&t, "\n1\n");
    rig_fails_at(&r, "h.csv", t.buf, 1, 1, "unknown column 'AAAA");
    /* Params of a megabyte: 262144 words */
    strbuf_reset(&t);
    strbuf_adds(&t, "Workload,File,Params\n1,train.py,");
    for (size_t i = 0; i < mb / 4; i++)
        strbuf_adds(&t, "--x ");
    strbuf_addch(&t, '\n');
    const struct sweep_spec *s = rig_ok(&r, "h.csv", t.buf);
    size_t n = 0;
    while (s->w[0].runs[0].argv[n])
        n++;
    ASSERT_EQ_INT(n, 2 + mb / 4);
    /* a YAML command of a megabyte, and a key of one */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\ncommand: echo ");
    for (size_t i = 0; i < mb; i++)
        strbuf_addch(&t, 'b');
    strbuf_addch(&t, '\n');
    s = rig_ok(&r, "h.yaml", t.buf);
    ASSERT_EQ_INT(strlen(s->w[0].runs[0].argv[1]), mb);
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\n");
    for (size_t i = 0; i < mb; i++)
        strbuf_addch(&t, 'k');
    strbuf_adds(&t, ": 1\n");
    rig_write_str(&r, "h.yaml", t.buf);
    ASSERT_EQ_INT(rig_load_file(&r, "h.yaml"), -1);
    /* a workload name of a megabyte */
    strbuf_reset(&t);
    strbuf_adds(&t, "Workload,File\n");
    for (size_t i = 0; i < mb; i++)
        strbuf_addch(&t, 'w');
    strbuf_adds(&t, ",train.py\n");
    /* refused as strobe run would refuse it, in well under a second */
    rig_fails_at(&r, "h.csv", t.buf, 2, 1, "invalid workload name: must be 1 to 200 bytes");
    double took = rig_now_s() - t0;
    if (took > 10)
        TEST_FAIL("megabyte lines took %.1f s", took);
    strbuf_release(&t);
    rig_release(&r);
}

TEST(hostile_deep_nesting)
{
    struct sweep_rig r;
    rig_init(&r);
    const int depth = 100000;
    struct strbuf t;
    strbuf_init(&t);
    double t0 = rig_now_s();
    /* flow sequences */
    strbuf_adds(&t, "experiment: e\nfile: train.py\nparameters:\n  x: ");
    for (int i = 0; i < depth; i++)
        strbuf_addch(&t, '[');
    for (int i = 0; i < depth; i++)
        strbuf_addch(&t, ']');
    strbuf_addch(&t, '\n');
    rig_fails_at(&r, "n.yaml", t.buf, 4, 68, "lists and mappings nested deeper than 64");
    /* flow mappings, never closed */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nenv: ");
    for (int i = 0; i < depth; i++)
        strbuf_adds(&t, "{a: ");
    rig_fails_at(&r, "n.yaml", t.buf, 2, 6 + 63 * 4, "nested deeper than 64");
    /* block mappings, one deeper each line */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nfile: train.py\nworkloads:\n  - env:\n");
    for (int i = 0; i < 2000; i++) {
        for (int k = 0; k < 6 + i; k++)
            strbuf_addch(&t, ' ');
        strbuf_addf(&t, "k%d:\n", i);
    }
    rig_fails_at(&r, "n.yaml", t.buf, 66, 68, "nested deeper than 64");
    /* as deep as allowed is read (and refused for what it says) */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nfile: train.py\nparameters:\n  x: ");
    for (int i = 0; i < 62; i++)
        strbuf_addch(&t, '[');
    for (int i = 0; i < 62; i++)
        strbuf_addch(&t, ']');
    strbuf_addch(&t, '\n');
    rig_fails_at(&r, "n.yaml", t.buf, 4, 7, "a value of parameter 'x' must be plain");
    double took = rig_now_s() - t0;
    if (took > 10)
        TEST_FAIL("deep nesting took %.1f s", took);
    strbuf_release(&t);
    rig_release(&r);
}

/* Anchors of anchors: nine to the ninth references, which the document
 * loader keeps as references and the reader never expands. */
TEST(hostile_alias_bombs)
{
    struct sweep_rig r;
    rig_init(&r);
    struct strbuf t, bomb;
    strbuf_init(&t);
    strbuf_init(&bomb);
    strbuf_adds(&bomb, "  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (int i = 1; i < 10; i++) {
        strbuf_addf(&bomb, "  l%d: &l%d [", i, i);
        for (int k = 0; k < 9; k++)
            strbuf_addf(&bomb, "%s*l%d", k ? ", " : "", i - 1);
        strbuf_adds(&bomb, "]\n");
    }
    double t0 = rig_now_s();
    /* libyaml's document keeps no place for an alias: the place is the
     * node it names (l0's list), not the alias in l1's */
    strbuf_addf(&t, "experiment: e\nfile: train.py\nparameters:\n%s", bomb.buf);
    rig_fails_at(&r, "b.yaml", t.buf, 4, 7, "a value of parameter 'l1' must be plain");
    strbuf_reset(&t);
    strbuf_addf(&t, "experiment: e\nfile: train.py\nenv:\n%s", bomb.buf);
    rig_fails_at(&r, "b.yaml", t.buf, 4, 3, "env: plain names and values only");
    /* scalars aliased across nine parameters: 9^9 combinations, drawn */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nfile: train.py\nmethod: random\ncount: 50\nseed: 1\n"
                    "parameters:\n  p0: [&a a, &b b, &c c, &d d, &e e, &f f, &g g, &h h, &i i]\n");
    for (int i = 1; i < 9; i++)
        strbuf_addf(&t, "  p%d: [*a, *b, *c, *d, *e, *f, *g, *h, *i]\n", i);
    const struct sweep_spec *s = rig_ok(&r, "b.yaml", t.buf);
    ASSERT_EQ_INT(s->n, 50);
    /* a sequence that holds itself */
    static const struct spec_error_case cases[] = {
        {"b.yaml", "experiment: e\nfile: train.py\ndevices: &d [0, *d]\n", 3, 10,
         "a list of plain values"},
        {"b.yaml", "experiment: e\nfile: train.py\nparameters:\n  x: &x [1, *x]\n", 4, 6,
         "a value of parameter 'x' must be plain"},
    };
    rig_fails_each(&r, cases, ARRAY_SIZE(cases));
    /* one group aliased into many workloads */
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\nworkloads:\n  - &g {command: \"echo {workload}\"}\n");
    for (int i = 1; i < 5000; i++)
        strbuf_adds(&t, "  - *g\n");
    s = rig_ok(&r, "b.yaml", t.buf);
    ASSERT_EQ_INT(s->n, 5000);
    ASSERT_EQ_STR(s->w[4999].runs[0].argv[1], "4999");
    double took = rig_now_s() - t0;
    if (took > 10)
        TEST_FAIL("alias bombs took %.1f s", took);
    strbuf_release(&t);
    strbuf_release(&bomb);
    rig_release(&r);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The largest plans: a full grid of SWEEP_MAX_WORKLOADS workloads, and as
 * many drawn from a space too large to shuffle, load in seconds. */
TEST(hostile_largest_plans)
{
    struct sweep_rig r;
    rig_init(&r);
    struct strbuf t;
    strbuf_init(&t);
    strbuf_adds(&t, "experiment: e\ncommand: echo {a}{b}{c}{d}{e}\nparameters:\n");
    for (char k = 'a'; k <= 'e'; k++)
        strbuf_addf(&t, "  %c: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n", k);
    double t0 = rig_now_s();
    const struct sweep_spec *s = rig_ok(&r, "big.yaml", t.buf);
    double grid_s = rig_now_s() - t0;
    ASSERT_EQ_INT(s->n, SWEEP_MAX_WORKLOADS);
    ASSERT_EQ_STR(s->w[99999].name, "99999");
    ASSERT_EQ_STR(s->w[12345].runs[0].argv[1], "12345");
    strbuf_reset(&t);
    strbuf_adds(&t, "experiment: e\ncommand: echo {a}\nmethod: random\ncount: 100000\n"
                    "parameters:\n");
    for (int k = 0; k < 15; k++)
        strbuf_addf(&t, "  %c: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n", 'a' + k);
    t0 = rig_now_s();
    s = rig_ok(&r, "big.yaml", t.buf);
    double random_s = rig_now_s() - t0;
    ASSERT_EQ_INT(s->n, 100000);
    if (grid_s > 10 || random_s > 10)
        TEST_FAIL("a grid of 100000 took %.1f s, a draw of 100000 %.1f s", grid_s, random_s);
    /* the draws are distinct: each workload's parameters, sorted */
    char **seen = calloc(s->n, sizeof(*seen));
    ASSERT(seen);
    for (size_t i = 0; i < s->n; i++)
        seen[i] = strdup(rig_params(&r, &s->w[i].runs[0]));
    qsort(seen, s->n, sizeof(*seen), compare_strings);
    for (size_t i = 1; i < s->n; i++)
        if (strcmp(seen[i - 1], seen[i]) == 0)
            TEST_FAIL("combination %s drawn twice", seen[i]);
    for (size_t i = 0; i < s->n; i++)
        free(seen[i]);
    free(seen);
    strbuf_release(&t);
    rig_release(&r);
}

TEST_MAIN(csv_unknown_and_missing_columns, yaml_unknown_keys, yaml_method_count_seed_runs,
          unknown_devices, devices_on_a_machine_without_gpus, collocation_errors, listener_errors,
          template_names_a_missing_parameter, command_line_errors, file_and_command, missing_files,
          grid_past_the_limit, empty_files, yaml_syntax_errors, csv_row_shape_errors,
          workload_defined_twice, on_finding_errors, csv_conflicting_workload_settings, bad_values,
          hostile_nul_bytes, hostile_megabyte_lines, hostile_deep_nesting, hostile_alias_bombs,
          hostile_largest_plans)
