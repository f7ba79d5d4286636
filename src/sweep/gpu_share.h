/*
 * The GPUs a sweep may name, and the ways its runs share them, through
 * NVIDIA's own tools as radT drives them (tests put fakes first on PATH):
 *
 *  - which GPUs exist: `nvidia-smi -L` (index and UUID of each GPU and each
 *    MIG device);
 *  - MPS: `nvidia-cuda-mps-control -d` with CUDA_MPS_PIPE_DIRECTORY and
 *    CUDA_MPS_LOG_DIRECTORY set to folders of the workload's own, and
 *    CUDA_VISIBLE_DEVICES its devices by UUID; stopped by writing "quit"
 *    to the same control with the same folders. Runs get the same two
 *    folders, their devices by UUID (the server renumbers indexes), and
 *    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE when the file gives a share;
 *  - MIG: the GPU must be in MIG mode (`nvidia-smi -i D --query-gpu=
 *    mig.mode.current`) and strobe root. `nvidia-smi mig -i D -cgi PROFILE
 *    -C` makes a GPU instance with its compute instance; the new MIG
 *    device's UUID is the one `nvidia-smi -L` did not list before; after
 *    the workload, `-dci -gi ID` then `-dgi -gi ID` destroy them.
 *
 * A device lock (a file per GPU under the lock folder, named by the GPU's
 * UUID, flock(2)) keeps two campaigns off one GPU, whoever runs them:
 * exclusive, or shared where every campaign on it asks to share. The lock
 * goes with the process however it ends.
 */
#ifndef STROBE_SWEEP_GPU_SHARE_H
#define STROBE_SWEEP_GPU_SHARE_H

#include "common/strbuf.h"

/* How long one call of an NVIDIA tool may take. */
#define GPU_TOOL_TIMEOUT_MS 60000

/* The ids that name a GPU here: each GPU's index and UUID, each MIG
 * device's UUID, NULL-terminated (free with gpu_ids_free). With none, *why
 * says why (no nvidia-smi, or it failed). Never fails otherwise. */
char **gpu_ids_list(const char **why);
void gpu_ids_free(char **ids);

/* The UUID of each of devices (GPU indexes or UUIDs, as `nvidia-smi -L`
 * lists them), comma-separated into out: "GPU-a,GPU-b". An MPS server
 * renumbers the devices its clients see, so that an index means another
 * GPU to them; a UUID means the same. 0, or -1 with why. */
int gpu_uuids_join(const char *const *devices, struct strbuf *out, struct strbuf *why);

/* Whether name is an executable on PATH (or a path to one). */
int gpu_have_command(const char *name);

struct mps_daemon {
    char *pipe_dir, *log_dir;
    char *devices; /* CUDA_VISIBLE_DEVICES of the daemon */
    char *env[4];  /* the variables as "K=V", NULL-terminated: for the daemon and its runs */
    int running;
};

/* Start a control daemon for devices ("GPU-a,GPU-b") with folders under base.
 * 0, or -1 with why. */
int mps_start(struct mps_daemon *m, const char *base, const char *devices, struct strbuf *why);
/* Stop it (if started) and free m's strings. 0, or -1 with why. */
int mps_stop(struct mps_daemon *m, struct strbuf *why);

/* Whether a MIG slice may be made on device: root, and MIG mode on. 0, or
 * -1 with why. */
int mig_check(const char *device, struct strbuf *why);

struct mig_slice {
    char *device;
    int gpu_instance;
    char *uuid; /* MIG-...: the run's CUDA_VISIBLE_DEVICES */
};

/* Make a slice of profile on device. 0, or -1 with why. */
int mig_create(struct mig_slice *s, const char *device, const char *profile, struct strbuf *why);
/* Destroy it (compute, then GPU instance) and free its strings. */
int mig_destroy(struct mig_slice *s, struct strbuf *why);

/* Hold the lock of each device (GPU index or UUID) in lock_dir: 0 with the
 * fds in out (one per device, -1 for none); -EAGAIN when another process
 * holds one (none is then held), with its holder in why; else -errno.
 * ids, when not NULL, names each device's lock instead (its GPU's UUID,
 * so that "0" and "GPU-..." are one lock); devices name it in messages. */
int device_locks_take(const char *lock_dir, const char *const *devices, const char *const *ids,
                      int shared, int *out, struct strbuf *why);
void device_locks_drop(int *fds, size_t n);

#endif
