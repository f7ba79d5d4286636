/*
 * The rules, live: the recorder's glue to the rule engine (rules/rules.h).
 * Every point appended to the series table and every span the event sink
 * keeps is handed to the engine through their taps; each tick closes the
 * windows that are due; a finding is announced on stderr once, when it first
 * fires, and handed to --on-finding's actions (record/on_finding.h); at the
 * end the whole-run verdicts are taken and everything is stored with the
 * settings used, so `strobe rules RUN` can repeat it.
 *
 * Threading: the sampling thread only (the taps run on it). Off (every call a
 * no-op) when opts.rules is "none".
 */
#ifndef STROBE_RECORD_LIVE_RULES_H
#define STROBE_RECORD_LIVE_RULES_H

#include <stdint.h>

#include "record/events.h"
#include "rules/rules.h"
#include "sample/series.h"
#include "store/store.h"

struct on_finding;

struct live_rules {
    struct rules_engine *e; /* NULL when off */
    const char *rules_list;
    int32_t *slot; /* series index -> engine slot; -2 not looked up yet, -1 not read */
    uint32_t nslot;
    struct series_table *series;
    int announce;               /* print findings as they fire */
    struct on_finding *actions; /* what each finding sets off, or NULL */
};

/* Build the engine (fails, with the reason in err, on a bad rule list or
 * parameter) and attach the taps. start_ns: the run's start (the window
 * origin, as stored). */
int live_rules_open(struct live_rules *l, const struct rules_options *opts,
                    const struct rules_run_info *run, struct series_table *series,
                    struct event_sink *sink, struct strbuf *err);
void live_rules_tick(struct live_rules *l, int64_t now_ns);
void live_rules_finish(struct live_rules *l, int64_t end_ns);
/* Store the evaluation (the writer thread must be idle). */
int live_rules_save(struct live_rules *l, struct store *s, const char *run_id);
/* "InputBound (high), StepOutlier (medium)" into out; 0 findings: "". */
void live_rules_names(const struct live_rules *l, char *out, size_t cap);
void live_rules_close(struct live_rules *l);

#endif
