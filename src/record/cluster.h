/*
 * Cluster mode from the recorder's side: which job a node joins, under
 * which name, and how far its clock is from the store's.
 *
 * The key. --join KEY names it. Without it, a launcher that says the job
 * spans several recorders gives it, namespaced by launcher:
 *
 *   launcher   key                                           several when
 *   torchrun   TORCHELASTIC_RUN_ID, PET_RDZV_ID or           --nnodes / PET_NNODES > 1,
 *              --rdzv-id; else MASTER_ADDR:MASTER_PORT        or WORLD_SIZE > LOCAL_WORLD_SIZE
 *   Slurm      SLURM_JOB_ID.SLURM_STEP_ID                     SLURM_NTASKS or SLURM_NNODES > 1
 *   SageMaker  TRAINING_JOB_NAME, else SM_HOSTS               SM_HOSTS lists > 1 host
 *   Open MPI   PMIX_NAMESPACE, else OMPI_MCA_ess_base_jobid   OMPI_COMM_WORLD_SIZE > 1
 *
 * torchrun's own flags are read when strobe wraps torchrun (or python -m
 * torch.distributed.run), since torchrun sets its variables only for its
 * workers. A key a later job reuses (MASTER_ADDR:MASTER_PORT, SM_HOSTS)
 * still gives a new run: store/job.h joins only a live job.
 *
 * The node's name. --node NAME, else SM_CURRENT_HOST under SageMaker,
 * else the host name; where the launcher starts several recorders on one
 * host (mpirun, srun with several tasks a node), ":LOCAL_RANK" follows.
 *
 * Rules. Each recorder runs the rules over its own node while it records
 * (its findings are its node's). The rules across nodes (Straggler across
 * every rank, LoadBalancing across every node's GPUs) run when the job
 * ends, in the recorder of the node that ends last: it holds a connection
 * already, needs no election, and reads what every node committed.
 *
 * The clock. The store's clock is the database server's: each node
 * measures the offset of its own against it, several probes at a time,
 * keeping the one with the shortest round trip (NTP's minimum filter). The
 * error is at most half that round trip.
 */
#ifndef STROBE_RECORD_CLUSTER_H
#define STROBE_RECORD_CLUSTER_H

#include <stdint.h>

#include "store/store.h"

struct cluster_join {
    char key[512];
    char node[256];
    char source[64]; /* where the key came from: "--join", "SLURM_JOB_ID", ... */
};

/* The job to join from the flags (NULL when not given) and the launcher's
 * environment and command: 0 with *out filled, 1 when the run is no
 * node of a job, -EINVAL for an empty or overlong --join or --node. */
int cluster_join_find(const char *join_flag, const char *node_flag, char *const argv[],
                      struct cluster_join *out);

/* Probes of the store's clock per estimate. */
#define CLUSTER_CLOCK_PROBES 5

/* The store's clock less this machine's, in ns, from `probes` readings:
 * the one of shortest round trip. */
int cluster_clock_offset(struct store *s, int probes, int64_t *offset_ns, int64_t *rtt_ns);

struct rules_options;

/*
 * Judge the job across its nodes, once none records: the rules replayed
 * over every node's data (store/job.h's view), the findings stored as the
 * job's own. The node that ends last does it (each node's rollup sees the
 * others' final status, so one of them at least finds the job ended); a
 * node that ends while others record leaves it. 1 when judged, 0 when
 * not yet, negative with a one-line reason in err.
 */
int cluster_judge_job(struct store *s, const char *job_id, const struct rules_options *ro,
                      struct strbuf *err);

#endif
