/*
 * Offline evaluation: feed a stored run to a rule engine the way the
 * recorder fed it live (rules/rules.h): points and spans in time order,
 * windows closed at the same boundaries, then rules_finish() at the run's
 * end. Memory: a chunk of each series' encoded blocks and of the run's
 * event blocks, about 320 MiB in all whatever the run's length or node
 * count (replay.c says how); decoded one block at a time.
 */
#ifndef STROBE_RULES_REPLAY_H
#define STROBE_RULES_REPLAY_H

#include "rules/rules.h"
#include "store/store.h"

/* The end the rules judge a run to: its end, or its last sample if later
 * (or if it is still running). Live and offline use the same. */
int64_t rules_run_end_ns(const struct run_record *r);

/* Replay run r from store s into e and finish it. 0, or negative with a
 * one-line reason in err. */
int rules_replay(struct store *s, const struct run_record *r, struct rules_engine *e,
                 struct strbuf *err);

/* A finding as the store keeps it (pointers into f). */
void rules_finding_record(const struct finding *f, struct finding_record *out);

/* Replace what the store holds of run_id's rules with e's evaluation (one
 * transaction). rules_list: "all" or the --rules list; mode "live" or
 * "offline". 0, or negative with the store's error. */
int rules_save(struct store *s, const char *run_id, const struct rules_engine *e,
               const char *rules_list, const char *mode);

#endif
