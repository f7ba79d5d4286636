/*
 * strobe run --torch-profile A-B: a directory for the traces the job's
 * torch.profiler writes (python/strobe/_torch_profile.py, one file per
 * process that ran steps A to B, torch-<pid>.json), and their import into
 * the run once the job has ended, with the code of `strobe import
 * torch-trace`. Nothing here can fail the run: every problem is one
 * warning.
 */
#ifndef STROBE_RECORD_TORCH_PROFILE_H
#define STROBE_RECORD_TORCH_PROFILE_H

#include <stdint.h>

#include "store/store.h"

#define TORCH_PROFILE_ENV     "STROBE_TORCH_PROFILE"     /* "A-B" */
#define TORCH_PROFILE_DIR_ENV "STROBE_TORCH_PROFILE_DIR" /* where the job writes */

struct torch_profile {
    char spec[32];  /* "A-B", normalized; "" without --torch-profile */
    char dir[4096]; /* the directory made for this run; "" when off */
};

/* Parse "A-B" or "A" (steps from 1, B >= A): 0, or -EINVAL. */
int torch_profile_parse(const char *arg, uint32_t *first, uint32_t *last);

/* Make the directory for the run's traces: arg is --torch-profile's A-B,
 * or NULL for a Python job without it (strobe ctl torch-profile's windows
 * write there, record/control.h). 0, or negative (a warning is printed and
 * the run goes on without the profile; tp stays off). */
int torch_profile_open(struct torch_profile *tp, const char *arg);

/* Import every trace the job wrote into run r (r->events grows) and say
 * what came in (a note unless quiet; warnings always). */
void torch_profile_import(struct torch_profile *tp, struct store *s, struct run_record *r,
                          int quiet);

/* Remove the directory and anything left in it; tp is off afterwards. */
void torch_profile_close(struct torch_profile *tp);

#endif
