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
 * every rank, LoadBalancing across every node's GPUs) run in the job's
 * leader while it runs (struct job_judge below), and once more, over the
 * whole job, in the recorder of the node that ends last. The database is
 * the only meeting point: no node talks to another.
 *
 * The clock. The store's clock is the database server's: each node
 * measures the offset of its own against it, several probes at a time,
 * keeping the one with the shortest round trip (NTP's minimum filter). The
 * error is at most half that round trip. The offset at join shifts every
 * time the node records (the recorder's wall-clock anchor, the GPU
 * drivers' stamps, the run's start and end), so all views line the nodes
 * up; later readings (every minute, by the writer) only show drift.
 */
#ifndef STROBE_RECORD_CLUSTER_H
#define STROBE_RECORD_CLUSTER_H

#include <pthread.h>
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
 * Judge the job across its nodes: the rules replayed over every node's data
 * (store/job.h's view), the findings stored as the job's own. Without
 * live, only once no node records (1 when judged, 0 when not yet); with
 * live, now, the verdicts over whole runs left waiting. Negative with a
 * one-line reason in err.
 */
int cluster_judge_job(struct store *s, const char *job_id, const struct rules_options *ro, int live,
                      struct strbuf *err);

/*
 * The rules across nodes while the job runs: a thread of each node's
 * recorder, on a connection of its own, tries for the job's lead (a
 * PostgreSQL session lock: store_ops.try_lead) once a period. The one
 * that holds it judges the job live; if its recorder dies, its connection
 * ends, the lock goes, and another node's thread takes the lead at its
 * next try. The period is the rule interval, or ten times the last
 * judgment's length if that is longer: replaying a long job costs more
 * each time, and the thread keeps to a tenth of a core.
 */
struct job_judge {
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    const char *store_uri;
    char job_id[RUN_ID_LEN + 1];
    const struct rules_options *ro; /* the recorder's: outlives the thread */
    int64_t min_period_ns;
    /* read after cluster_judge_stop() */
    unsigned judged; /* judgments stored */
    unsigned failed; /* judgments that failed */
    int leader;      /* whether this node led */
    char error[256]; /* the last failure's reason */
};

/* Start the thread (nothing when ro has no rules); 0 or negative. */
int cluster_judge_start(struct job_judge *j, const char *store_uri, const char *job_id,
                        const struct rules_options *ro, int64_t min_period_ns);
/* Stop it (a judgment under way finishes first). */
void cluster_judge_stop(struct job_judge *j);

#endif
