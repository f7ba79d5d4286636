/* Which job a node joins, from flags, the launcher's environment and its
 * command (record/cluster.h); and the label helpers the job's view uses. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "common/array.h"
#include "common/label.h"
#include "record/cluster.h"
#include "test.h"

/* Every variable the launchers set, cleared: a test sets its own. */
static void clear_launchers(void)
{
    static const char *const vars[] = {"TORCHELASTIC_RUN_ID",
                                       "PET_RDZV_ID",
                                       "PET_NNODES",
                                       "MASTER_ADDR",
                                       "MASTER_PORT",
                                       "WORLD_SIZE",
                                       "LOCAL_WORLD_SIZE",
                                       "SLURM_JOB_ID",
                                       "SLURM_STEP_ID",
                                       "SLURM_NTASKS",
                                       "SLURM_NNODES",
                                       "SLURM_JOB_NUM_NODES",
                                       "SLURM_LOCALID",
                                       "SM_HOSTS",
                                       "SM_CURRENT_HOST",
                                       "TRAINING_JOB_NAME",
                                       "OMPI_COMM_WORLD_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_SIZE",
                                       "OMPI_COMM_WORLD_LOCAL_RANK",
                                       "PMIX_NAMESPACE",
                                       "OMPI_MCA_ess_base_jobid"};
    for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
        unsetenv(vars[i]);
}

static char *python_argv[] = {"python3", "train.py", NULL};

static const char *host(void)
{
    static struct utsname u;
    uname(&u);
    return u.nodename;
}

TEST(no_launcher_no_job)
{
    clear_launchers();
    struct cluster_join j;
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 1);
    /* one node of each launcher is no job either */
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_NTASKS", "1", 1);
    setenv("SM_HOSTS", "[\"algo-1\"]", 1);
    setenv("MASTER_ADDR", "10.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("LOCAL_WORLD_SIZE", "2", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 1);
}

TEST(join_flag_wins_and_node_defaults_to_the_host)
{
    clear_launchers();
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("SLURM_NNODES", "2", 1);
    struct cluster_join j;
    ASSERT_EQ_INT(cluster_join_find("exp-42", NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "exp-42");
    ASSERT_EQ_STR(j.source, "--join");
    ASSERT_EQ_STR(j.node, host());
    ASSERT_EQ_INT(cluster_join_find("exp-42", "gpu-7", python_argv, &j), 0);
    ASSERT_EQ_STR(j.node, "gpu-7");
    ASSERT_EQ_INT(cluster_join_find("", NULL, python_argv, &j), -EINVAL);
    ASSERT_EQ_INT(cluster_join_find("k", "", python_argv, &j), -EINVAL);
}

TEST(torchrun_keys)
{
    clear_launchers();
    struct cluster_join j;
    /* inside a worker of a two-node torchrun */
    setenv("TORCHELASTIC_RUN_ID", "abc", 1);
    setenv("WORLD_SIZE", "8", 1);
    setenv("LOCAL_WORLD_SIZE", "4", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "torchrun:abc");
    /* env:// ranks without an elastic id: the rendezvous address */
    unsetenv("TORCHELASTIC_RUN_ID");
    setenv("MASTER_ADDR", "10.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "torchrun:10.0.0.1:29500");
    ASSERT_EQ_STR(j.source, "MASTER_ADDR:MASTER_PORT");
    /* strobe wrapping torchrun: its own flags (both spellings) */
    clear_launchers();
    char *wrap[] = {"torchrun", "--nnodes=2", "--rdzv_id", "job9", "train.py", NULL};
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, wrap, &j), 0);
    ASSERT_EQ_STR(j.key, "torchrun:job9");
    char *module[] = {"/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "1:4",
                      "--master-addr",    "h0", "--master-port=1234",    "train.py", NULL};
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, module, &j), 0);
    ASSERT_EQ_STR(j.key, "torchrun:h0:1234");
    char *single[] = {"torchrun", "--nnodes", "1", "--rdzv-id", "x", "train.py", NULL};
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, single, &j), 1);
}

TEST(slurm_sagemaker_and_mpi_keys)
{
    clear_launchers();
    struct cluster_join j;
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    setenv("SLURM_NNODES", "2", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_LOCALID", "1", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "slurm:4242.3");
    char want[300];
    snprintf(want, sizeof(want), "%s:1", host()); /* four tasks a node: one recorder each */
    ASSERT_EQ_STR(j.node, want);

    clear_launchers();
    setenv("SM_HOSTS", "[\"algo-1\",\"algo-2\"]", 1);
    setenv("SM_CURRENT_HOST", "algo-2", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "sagemaker:[\"algo-1\",\"algo-2\"]");
    ASSERT_EQ_STR(j.node, "algo-2");
    setenv("TRAINING_JOB_NAME", "resnet-2026-12-06", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "sagemaker:resnet-2026-12-06");

    clear_launchers();
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 1); /* no job id: no key */
    setenv("PMIX_NAMESPACE", "prterun-h0-123@1", 1);
    ASSERT_EQ_INT(cluster_join_find(NULL, NULL, python_argv, &j), 0);
    ASSERT_EQ_STR(j.key, "mpi:prterun-h0-123@1");
    snprintf(want, sizeof(want), "%s:1", host());
    ASSERT_EQ_STR(j.node, want);
}

TEST(labels_insert_keeps_keys_in_order)
{
    static const struct {
        const char *labels, *key, *value, *want;
    } cases[] = {
        {"", "node", "a", "node=a"},
        {"gpu=0", "node", "a", "gpu=0,node=a"},
        {"pid=12", "node", "a", "node=a,pid=12"},
        {"core=1,pid=3", "node", "x,y", "core=1,node=x%2Cy,pid=3"},
        {"node=b", "node", "a", "node=b,node=a"}, /* after its equals */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct strbuf b;
        strbuf_init(&b);
        ASSERT_EQ_INT(labels_insert(cases[i].labels, cases[i].key, cases[i].value, &b), 0);
        ASSERT_EQ_STR(b.buf, cases[i].want);
        strbuf_release(&b);
    }
}

TEST(labels_take_splits_one_key_out)
{
    struct strbuf rest, value;
    strbuf_init(&rest);
    strbuf_init(&value);
    ASSERT_EQ_INT(labels_take("gpu=0,node=x%2Cy,pid=3", "node", &rest, &value), 1);
    ASSERT_EQ_STR(rest.buf, "gpu=0,pid=3");
    ASSERT_EQ_STR(value.buf, "x%2Cy");
    strbuf_reset(&rest);
    ASSERT_EQ_INT(labels_take("nodes=2", "node", &rest, &value), 0);
    ASSERT_EQ_STR(rest.buf, "nodes=2");
    strbuf_release(&rest);
    strbuf_release(&value);
}

TEST_MAIN(no_launcher_no_job, join_flag_wins_and_node_defaults_to_the_host, torchrun_keys,
          slurm_sagemaker_and_mpi_keys, labels_insert_keeps_keys_in_order,
          labels_take_splits_one_key_out)
