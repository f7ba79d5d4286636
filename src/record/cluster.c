#include "record/cluster.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "common/clock.h"
#include "record/runinfo.h"
#include "rules/replay.h"
#include "store/job.h"

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static long env_long(const char *name)
{
    const char *v = env(name);
    return v ? strtol(v, NULL, 10) : 0;
}

/* ---- torchrun's flags ----------------------------------------------------- */

/* Whether argv starts torchrun: torchrun ..., python -m torch.distributed.run
 * (or .launch). */
static int is_torchrun(char *const argv[])
{
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (strcmp(base, "torchrun") == 0)
        return 1;
    if (!runinfo_is_python(argv[0]))
        return 0;
    for (int i = 1; argv[i] && argv[i + 1]; i++)
        if (strcmp(argv[i], "-m") == 0)
            return strcmp(argv[i + 1], "torch.distributed.run") == 0 ||
                   strcmp(argv[i + 1], "torch.distributed.launch") == 0;
    return 0;
}

/* The value of torchrun flag --a-b (or --a_b, --a-b=V) in argv, or NULL. */
static const char *torchrun_flag(char *const argv[], const char *dashed)
{
    size_t n = strlen(dashed);
    for (int i = 1; argv[i]; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            continue;
        int same = 1;
        for (size_t k = 0; same && k < n; k++)
            same = a[2 + k] == dashed[k] || (dashed[k] == '-' && a[2 + k] == '_');
        if (!same)
            continue;
        if (a[2 + n] == '=')
            return a + 3 + n;
        if (a[2 + n] == '\0' && argv[i + 1])
            return argv[i + 1];
    }
    return NULL;
}

/* --nnodes N or MIN:MAX: more than one node at most */
static int several_nodes(const char *nnodes)
{
    const char *max = nnodes ? strchr(nnodes, ':') : NULL;
    return nnodes && strtol(max ? max + 1 : nnodes, NULL, 10) > 1;
}

/* ---- the key, launcher by launcher ----------------------------------------- */

/* key "PREFIXa" or "PREFIXa.b" (b NULL: none), source where it came from */
static int set_key(struct cluster_join *j, const char *source, const char *prefix, const char *a,
                   const char *sep, const char *b)
{
    snprintf(j->source, sizeof(j->source), "%s", source);
    int n = snprintf(j->key, sizeof(j->key), "%s%s%s%s", prefix, a, b ? sep : "", b ? b : "");
    return n > 0 && (size_t)n < sizeof(j->key) ? 0 : -EINVAL;
}

static int torchrun_key(char *const argv[], struct cluster_join *j)
{
    int wraps = is_torchrun(argv);
    const char *nnodes = wraps ? torchrun_flag(argv, "nnodes") : NULL;
    int several =
        several_nodes(nnodes ? nnodes : env("PET_NNODES")) ||
        (env_long("WORLD_SIZE") > env_long("LOCAL_WORLD_SIZE") && env("LOCAL_WORLD_SIZE"));
    if (!several)
        return 1;
    const char *id = env("TORCHELASTIC_RUN_ID");
    if (!id)
        id = env("PET_RDZV_ID");
    if (!id && wraps)
        id = torchrun_flag(argv, "rdzv-id");
    if (id && strcmp(id, "none") != 0)
        return set_key(j, "TORCHELASTIC_RUN_ID", "torchrun:", id, "", NULL);
    const char *addr = wraps ? torchrun_flag(argv, "master-addr") : NULL;
    const char *port = wraps ? torchrun_flag(argv, "master-port") : NULL;
    if (!addr)
        addr = env("MASTER_ADDR");
    if (!port)
        port = env("MASTER_PORT");
    if (!addr || !port)
        return 1;
    return set_key(j, "MASTER_ADDR:MASTER_PORT", "torchrun:", addr, ":", port);
}

static int slurm_key(struct cluster_join *j)
{
    const char *job = env("SLURM_JOB_ID");
    if (!job || (env_long("SLURM_NTASKS") < 2 && env_long("SLURM_NNODES") < 2 &&
                 env_long("SLURM_JOB_NUM_NODES") < 2))
        return 1;
    const char *step = env("SLURM_STEP_ID");
    return set_key(j, "SLURM_JOB_ID", "slurm:", job, ".", step);
}

static int sagemaker_key(struct cluster_join *j)
{
    const char *hosts = env("SM_HOSTS");
    if (!hosts || !strchr(hosts, ','))
        return 1; /* ["algo-1"]: one host */
    const char *name = env("TRAINING_JOB_NAME");
    return name ? set_key(j, "TRAINING_JOB_NAME", "sagemaker:", name, "", NULL)
                : set_key(j, "SM_HOSTS", "sagemaker:", hosts, "", NULL);
}

static int mpi_key(struct cluster_join *j)
{
    if (env_long("OMPI_COMM_WORLD_SIZE") < 2)
        return 1;
    const char *ns = env("PMIX_NAMESPACE");
    if (ns)
        return set_key(j, "PMIX_NAMESPACE", "mpi:", ns, "", NULL);
    const char *id = env("OMPI_MCA_ess_base_jobid");
    return id ? set_key(j, "OMPI_MCA_ess_base_jobid", "mpi:", id, "", NULL) : 1;
}

/* ---- the node's name ------------------------------------------------------ */

/* The host, and ":LOCAL_RANK" where the launcher starts several recorders
 * on one host. */
static void default_node(struct cluster_join *j)
{
    struct utsname u;
    const char *host = env("SM_CURRENT_HOST");
    if (!host)
        host = uname(&u) == 0 ? u.nodename : "localhost";
    const char *local = NULL;
    if (env_long("OMPI_COMM_WORLD_LOCAL_SIZE") > 1)
        local = env("OMPI_COMM_WORLD_LOCAL_RANK");
    else if (env("SLURM_LOCALID") && env_long("SLURM_NTASKS") > env_long("SLURM_NNODES"))
        local = env("SLURM_LOCALID");
    snprintf(j->node, sizeof(j->node), local ? "%s:%s" : "%s%s", host, local ? local : "");
}

int cluster_join_find(const char *join_flag, const char *node_flag, char *const argv[],
                      struct cluster_join *out)
{
    memset(out, 0, sizeof(*out));
    if ((join_flag && !*join_flag) || (node_flag && !*node_flag) ||
        (node_flag && strlen(node_flag) >= sizeof(out->node)))
        return -EINVAL;
    int rc = 1;
    if (join_flag)
        rc = set_key(out, "--join", "", join_flag, "", NULL);
    if (rc == 1)
        rc = torchrun_key(argv, out);
    if (rc == 1)
        rc = slurm_key(out);
    if (rc == 1)
        rc = sagemaker_key(out);
    if (rc == 1)
        rc = mpi_key(out);
    if (rc != 0)
        return rc;
    if (node_flag)
        snprintf(out->node, sizeof(out->node), "%s", node_flag);
    else
        default_node(out);
    return 0;
}

/* ---- the clock ------------------------------------------------------------ */

int cluster_clock_offset(struct store *s, int probes, int64_t *offset_ns, int64_t *rtt_ns)
{
    int64_t best_rtt = INT64_MAX, best = 0;
    for (int i = 0; i < probes; i++) {
        int64_t server, t0 = clock_realtime_ns();
        int rc = s->ops->clock_ns(s, &server);
        int64_t t1 = clock_realtime_ns();
        if (rc < 0)
            return rc;
        if (t1 - t0 < best_rtt) {
            best_rtt = t1 - t0;
            best = server - (t0 + (t1 - t0) / 2);
        }
    }
    *offset_ns = best;
    *rtt_ns = best_rtt > 0 ? best_rtt : 1; /* 0 means "not measured" */
    return 0;
}

/* ---- the rules across nodes ------------------------------------------------ */

static int judge(struct store *view, struct run_record *job, const struct rules_options *ro,
                 int running, struct strbuf *err)
{
    struct rules_run_info info = {job->start_ns, job->cpu_count, job->mem_total_bytes, job->host,
                                  running};
    struct rules_engine *e = NULL;
    int rc = rules_engine_new(ro, &info, &e, err);
    if (rc < 0 || !e)
        return rc;
    rc = rules_replay(view, job, e, err);
    if (rc == 0 && (rc = rules_save(view, job->id, e, ro->rules ? ro->rules : "all",
                                    running ? "live" : "offline")) < 0)
        strbuf_addf(err, "cannot store the job's findings: %s", view->err.buf);
    rules_engine_free(e);
    return rc < 0 ? rc : 1;
}

int cluster_judge_job(struct store *s, const char *job_id, const struct rules_options *ro, int live,
                      struct strbuf *err)
{
    struct run_record job;
    int rc = store_resolve_run(s, job_id, &job);
    int running = rc == 0 && strcmp(job.status, RUN_RUNNING) == 0;
    if (rc < 0) {
        strbuf_addf(err, "cannot read job %s: %s", job_id, s->err.buf);
    } else if (live || !running) {
        /* the view rolls the job's record up from its nodes: a running
         * job's last sample is its nodes' latest commit */
        struct store *view;
        rc = store_job_view(s, 0, &job, &view);
        if (rc == 0) {
            rc = judge(view, &job, ro, running, err);
            store_close(view);
        } else {
            strbuf_addf(err, "cannot read job %s's nodes: %s", job_id, s->err.buf);
        }
    }
    run_record_release(&job);
    return rc;
}

/* ---- the judge of a running job ------------------------------------------- */

/* Wait up to ns or until stopped; whether to go on. */
static int judge_wait(struct job_judge *j, int64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    int64_t t = (int64_t)until.tv_sec * NS_PER_S + until.tv_nsec + ns;
    until.tv_sec = (time_t)(t / NS_PER_S);
    until.tv_nsec = (long)(t % NS_PER_S);
    pthread_mutex_lock(&j->lock);
    while (!j->stop && pthread_cond_timedwait(&j->wake, &j->lock, &until) == 0)
        ;
    int go = !j->stop;
    pthread_mutex_unlock(&j->lock);
    return go;
}

static void judge_once(struct job_judge *j, struct store *s, const char *lead_key, int64_t *period)
{
    if (!j->leader && (j->leader = s->ops->try_lead(s, lead_key)) < 0) {
        j->leader = 0;
        j->failed++;
        snprintf(j->error, sizeof(j->error), "cannot take the lead: %s", s->err.buf);
        return;
    }
    if (!j->leader)
        return;
    struct strbuf err;
    strbuf_init(&err);
    int64_t t0 = clock_monotonic_ns();
    if (cluster_judge_job(s, j->job_id, j->ro, 1, &err) < 0) {
        j->failed++;
        snprintf(j->error, sizeof(j->error), "%s", err.buf);
    } else {
        j->judged++;
    }
    int64_t took = clock_monotonic_ns() - t0;
    *period = 10 * took > j->min_period_ns ? 10 * took : j->min_period_ns;
    strbuf_release(&err);
}

static void *judge_main(void *arg)
{
    struct job_judge *j = arg;
    struct store *s = NULL;
    struct strbuf err;
    strbuf_init(&err);
    if (store_open(j->store_uri, 0, &s, &err) < 0) {
        j->failed++;
        snprintf(j->error, sizeof(j->error), "%s", err.buf);
        strbuf_release(&err);
        return NULL;
    }
    strbuf_release(&err);
    char lead_key[64];
    snprintf(lead_key, sizeof(lead_key), "judge:%s", j->job_id);
    int64_t period = j->min_period_ns;
    while (judge_wait(j, period))
        judge_once(j, s, lead_key, &period);
    store_close(s); /* ends the session: the lead goes with it */
    return NULL;
}

int cluster_judge_start(struct job_judge *j, const char *store_uri, const char *job_id,
                        const struct rules_options *ro, int64_t min_period_ns)
{
    memset(j, 0, sizeof(*j));
    if (ro->rules && strcmp(ro->rules, "none") == 0)
        return 0;
    j->store_uri = store_uri;
    snprintf(j->job_id, sizeof(j->job_id), "%s", job_id);
    j->ro = ro;
    j->min_period_ns = min_period_ns;
    pthread_mutex_init(&j->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&j->wake, &ca);
    pthread_condattr_destroy(&ca);
    int rc = pthread_create(&j->thread, NULL, judge_main, j);
    if (rc) {
        pthread_mutex_destroy(&j->lock);
        pthread_cond_destroy(&j->wake);
        return -rc;
    }
    j->started = 1;
    return 0;
}

void cluster_judge_stop(struct job_judge *j)
{
    if (!j->started)
        return;
    pthread_mutex_lock(&j->lock);
    j->stop = 1;
    pthread_cond_signal(&j->wake);
    pthread_mutex_unlock(&j->lock);
    pthread_join(j->thread, NULL);
    pthread_mutex_destroy(&j->lock);
    pthread_cond_destroy(&j->wake);
    j->started = 0;
}
