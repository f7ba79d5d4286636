/*
 * A test libdcgm: the DCGM functions strobe's collector calls
 * (DCGM_FUNCTIONS in src/gpu/dcgm.h), answering like a host engine would,
 * scripted by $STROBE_FAKE_DCGM:
 *
 *   unreachable                    dcgmConnect fails (no nv-hostengine)
 *   busy                           dcgmWatchFields fails (counters in use)
 *   gpus=N,<field>=<ratio>,...     N GPUs whose latest values of the fields
 *                                  (sm_active, sm_occupancy, tensor_active,
 *                                  dram_active) are those ratios, stamped now
 *   hang_after=K                   (with the above) calls to
 *                                  dcgmGetLatestValues_v2 after the K-th
 *                                  never return: a hung host engine
 *
 * Every call that matters is logged, one line each, to $STROBE_FAKE_DCGM_LOG
 * when set: "watch <update_us>", "latest", "shutdown".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu/dcgm.h"

#define EXPORT __attribute__((visibility("default")))

/* the prototypes, from the same list the collector resolves */
#define X(ret, name, args) EXPORT ret name args;
DCGM_FUNCTIONS(X)
#undef X
#define DCGM_ST_BADPARAM             (-2)
#define DCGM_ST_CONNECTION_NOT_VALID (-6)
#define DCGM_ST_IN_USE               (-30)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int gpus = 1;
static double ratio[DCGM_FIELDS];
static const char *const names[DCGM_FIELDS] = {"sm_active", "sm_occupancy", "tensor_active",
                                               "dram_active"};
static const unsigned short ids[DCGM_FIELDS] = {DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY,
                                                DCGM_FI_PROF_PIPE_TENSOR_ACTIVE,
                                                DCGM_FI_PROF_DRAM_ACTIVE};
static int watching;
static int hang_after = -1; /* -1: never */
static int latest_calls;

static void logline(const char *what, long long v, int with_value)
{
    const char *path = getenv("STROBE_FAKE_DCGM_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f)
        return;
    if (with_value)
        fprintf(f, "%s %lld\n", what, v);
    else
        fprintf(f, "%s\n", what);
    fclose(f);
}

static const char *mode(void)
{
    const char *m = getenv("STROBE_FAKE_DCGM");
    return m ? m : "";
}

EXPORT dcgmReturn_t dcgmInit(void)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", mode());
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            continue;
        *eq = 0;
        if (strcmp(tok, "gpus") == 0)
            gpus = atoi(eq + 1);
        if (strcmp(tok, "hang_after") == 0)
            hang_after = atoi(eq + 1);
        for (int i = 0; i < DCGM_FIELDS; i++)
            if (strcmp(tok, names[i]) == 0)
                ratio[i] = atof(eq + 1);
    }
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmShutdown(void)
{
    logline("shutdown", 0, 0);
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmConnect(const char *ip, dcgmHandle_t *h)
{
    if (!ip || !h)
        return DCGM_ST_BADPARAM;
    if (strcmp(mode(), "unreachable") == 0)
        return DCGM_ST_CONNECTION_NOT_VALID;
    *h = 0x5e7;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmDisconnect(dcgmHandle_t h)
{
    return h == 0x5e7 ? DCGM_ST_OK : DCGM_ST_BADPARAM;
}

EXPORT dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t h, int n, unsigned short *f, const char *name,
                                         dcgmFieldGrp_t *out)
{
    if (h != 0x5e7 || n <= 0 || !f || !name || !out)
        return DCGM_ST_BADPARAM;
    *out = 7;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t h, dcgmFieldGrp_t g)
{
    return h == 0x5e7 && g == 7 ? DCGM_ST_OK : DCGM_ST_BADPARAM;
}

EXPORT dcgmReturn_t dcgmWatchFields(dcgmHandle_t h, dcgmGpuGrp_t grp, dcgmFieldGrp_t g,
                                    long long update_us, double keep_s, int keep_samples)
{
    (void)keep_s, (void)keep_samples;
    if (h != 0x5e7 || g != 7 || grp != DCGM_GROUP_ALL_GPUS)
        return DCGM_ST_BADPARAM;
    if (strcmp(mode(), "busy") == 0)
        return DCGM_ST_IN_USE;
    logline("watch", update_us, 1);
    watching = 1;
    return DCGM_ST_OK;
}

EXPORT dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t h, dcgmGpuGrp_t grp, dcgmFieldGrp_t g)
{
    (void)grp;
    watching = 0;
    return h == 0x5e7 && g == 7 ? DCGM_ST_OK : DCGM_ST_BADPARAM;
}

EXPORT dcgmReturn_t dcgmGetLatestValues_v2(dcgmHandle_t h, dcgmGpuGrp_t grp, dcgmFieldGrp_t g,
                                           dcgmFieldValueEntityEnumeration_f cb, void *user)
{
    if (h != 0x5e7 || g != 7 || grp != DCGM_GROUP_ALL_GPUS || !cb || !watching)
        return DCGM_ST_BADPARAM;
    if (hang_after >= 0 && __atomic_fetch_add(&latest_calls, 1, __ATOMIC_RELAXED) >= hang_after) {
        logline("hang", 0, 0);
        for (;;) /* the caller must give up on this call, not wait for it */
            pause();
    }
    pthread_mutex_lock(&lock);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
    static dcgmFieldValue_v1 v[DCGM_FIELDS];
    for (int gpu = 0; gpu < gpus; gpu++) {
        for (int i = 0; i < DCGM_FIELDS; i++) {
            memset(&v[i], 0, sizeof(v[i]));
            v[i].fieldId = ids[i];
            v[i].fieldType = DCGM_FT_DOUBLE;
            v[i].ts = us;
            v[i].value.dbl = ratio[i];
        }
        cb(DCGM_FE_GPU, (dcgm_field_eid_t)gpu, v, DCGM_FIELDS, user);
    }
    pthread_mutex_unlock(&lock);
    logline("latest", 0, 0);
    return DCGM_ST_OK;
}
