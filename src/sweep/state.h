/*
 * A campaign's state, kept in the store (campaigns table, a JSON document
 * the store does not read) so that a campaign resumes wherever it stopped:
 * the spec's hash, the sweep process that owns it, and each workload's
 * status, attempts and the runs of its last attempt.
 *
 * Statuses: pending, running, finished, failed, stopped (a rule's action
 * ended it), interrupted (Ctrl-C). "lost" is never stored: a workload
 * marked running whose sweep process is gone (killed, crashed, its host
 * rebooted) reads as lost, and the next sweep of the file runs it again.
 *
 * Document: {"version":1,"owner":{"pid","host","boot_id","pid_ns",
 * "time_ns","start_ticks"},"workloads":[{"experiment","name","key",
 * "status","attempts","runs":[ids],"started_ns","ended_ns","devices",
 * "collocation","note"}]}. docs/sweep.md has the whole of it.
 */
#ifndef STROBE_SWEEP_STATE_H
#define STROBE_SWEEP_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/procid.h"
#include "store/store.h"

#define WL_PENDING     "pending"
#define WL_RUNNING     "running"
#define WL_FINISHED    "finished"
#define WL_FAILED      "failed"
#define WL_STOPPED     "stopped"
#define WL_INTERRUPTED "interrupted"
#define WL_LOST        "lost" /* shown, never stored */

struct wl_state {
    char *experiment, *name, *key;
    char status[16];
    int attempts;
    char **runs; /* run ids of the last attempt, NULL-terminated (may be NULL) */
    int64_t started_ns, ended_ns;
    char *devices, *collocation; /* as the plan says, for views */
    char *note;                  /* why it failed, or NULL */
};

struct campaign_state {
    char *name, *spec_hash, *file;
    int64_t created_ns, updated_ns;
    int64_t owner_pid; /* 0: none */
    char *owner_host;
    struct procid owner;
    struct wl_state *w;
    size_t n;
};

void campaign_state_release(struct campaign_state *st);

/* The campaign from the store: 0, -STROBE_ENOTFOUND, or negative with the
 * store's error (a document that does not parse is -EBADMSG). */
int campaign_state_load(struct store *s, const char *name, struct campaign_state *out);
/* The campaign of a store's row (as campaigns_query gives it) into out
 * (zeroed by the caller; release it after a failure too): 0, -EBADMSG or
 * -ENOMEM. */
int campaign_state_of_record(const struct campaign_record *c, struct campaign_state *out);
/* Write st (updated_ns now) to the store. */
int campaign_state_save(struct store *s, struct campaign_state *st);
/* st as its JSON document, into out. */
int campaign_state_json(const struct campaign_state *st, struct strbuf *out);
/* Parse a document into out (zeroed by the caller). 0 or -EBADMSG. */
int campaign_state_parse(const char *json, size_t len, struct campaign_state *out);

/* The workload of that experiment and name, or NULL. */
struct wl_state *campaign_state_find(struct campaign_state *st, const char *experiment,
                                     const char *name);
/* Append a workload (zeroed, status pending); NULL when out of memory. */
struct wl_state *campaign_state_add(struct campaign_state *st, const char *experiment,
                                    const char *name, const char *key);
/* Replace w's runs with ids (n of them). */
int wl_state_set_runs(struct wl_state *w, char ids[][RUN_ID_LEN + 1], size_t n);
int wl_state_set_note(struct wl_state *w, const char *note);

/* Whether the sweep that owns st still runs (PROCID_ALIVE), is gone, or
 * cannot be told from here. */
enum procid_state campaign_owner_state(const struct campaign_state *st);
/* The status to show: "lost" for a running workload whose owner is gone. */
const char *wl_state_shown(const struct campaign_state *st, const struct wl_state *w);
/* The same, with the owner's state found once (campaign_owner_state) for
 * many workloads. */
const char *wl_state_shown_as(const struct wl_state *w, enum procid_state owner);

#endif
