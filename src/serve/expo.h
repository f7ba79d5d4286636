/*
 * Live metrics as OpenMetrics and Prometheus text: the snapshot a recorder
 * takes of its run, and the exposition written from one or many of them.
 *
 * A recorder (record/live_metrics.h) writes a snapshot every second: every
 * family with its type, unit and help, and every sample with its labels
 * already rendered (run labels first). It serves the snapshot itself on
 * `strobe run --listen`, and stores it with the run as run text "metrics"
 * (EXPO_TEXT_KIND), where `strobe serve`'s /metrics and `strobe top` read
 * every running run's. One producer, one writer: a number means the same
 * wherever it is read.
 *
 * The snapshot is text, one record a line, fields split by tabs:
 *
 *   strobe-snapshot 1 <unix ns>                  first line: version, time taken
 *   F <family> <type> <unit> <help>              type: gauge counter summary info
 *   S <suffix> <labels> <value>                  a sample of the family above it
 *
 * <suffix> is what the sample's name adds to the family's ("", "_total",
 * "_sum", "_count", "_info"); it is "-" for none, so that no field is empty.
 * <labels> is `key="value",...` as the exposition writes it (values
 * escaped: \\ \" \n), "-" for none; it may hold tabs, so a parser takes the
 * suffix up to the first tab and the value after the last. <value> is a
 * C double in %.17g, or +Inf, -Inf, NaN. <unit> is "-" for none. <help> is
 * escaped as OpenMetrics escapes it (\\ and \n). Nothing else may appear.
 *
 * A set (struct expo_set) gathers the families of any number of snapshots:
 * a family's samples stay together, in the order they came, as both
 * formats require.
 */
#ifndef STROBE_SERVE_EXPO_H
#define STROBE_SERVE_EXPO_H

#include <stddef.h>
#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h" /* RUN_TEXT_SNAPSHOT */

#define EXPO_TEXT_KIND           RUN_TEXT_SNAPSHOT /* the run text a recorder keeps its snapshot in */
#define EXPO_SNAPSHOT_MAGIC      "strobe-snapshot 1"
#define EXPO_CONTENT_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"
#define EXPO_CONTENT_TEXT        "text/plain; version=0.0.4; charset=utf-8"

enum expo_type {
    EXPO_GAUGE,
    EXPO_COUNTER, /* samples "_total" */
    EXPO_SUMMARY, /* samples "" with quantile="q", "_sum", "_count" */
    EXPO_INFO,    /* samples "_info", value 1 */
};

struct expo_sample {
    const char *suffix; /* "" for none */
    const char *labels; /* rendered, "" for none */
    double value;
};

struct expo_family {
    const char *name;
    enum expo_type type;
    const char *unit; /* "" for none */
    const char *help; /* escaped */
    struct expo_sample *samples;
    uint32_t n, cap;
};

/* Families by name; strings live in the set's own arena. */
struct expo_set {
    struct expo_family *fam;
    uint32_t n, cap;
    uint32_t *slots; /* open addressing on the name: index + 1, 0 empty */
    uint32_t nslots;
    struct expo_chunk *arena;
    size_t samples; /* in all families */
};

void expo_set_init(struct expo_set *set);
void expo_set_release(struct expo_set *set);

/* Add snapshot text (len bytes) to set. Its time goes to *ts_ns (may be
 * NULL). A sample whose family is already in set joins it (the first
 * snapshot's type, unit and help stand). Returns 0; -EINVAL (with nothing
 * added) when text is not a snapshot of this version or a line is garbled;
 * -ENOMEM. */
int expo_set_add_snapshot(struct expo_set *set, const char *text, size_t len, int64_t *ts_ns);

/* A snapshot older than this lost its recorder: /metrics leaves it out,
 * strobe top says "stale". */
#define EXPO_STALE_NS (60 * 1000000000LL)

/* The time a snapshot was taken, from its first line alone: 0, or -EINVAL
 * when text does not start as a snapshot of this version. */
int expo_snapshot_time(const char *text, size_t len, int64_t *ts_ns);

/* The family named name, or NULL. */
const struct expo_family *expo_set_find(const struct expo_set *set, const char *name);

/* Write set as an exposition: OpenMetrics 1.0.0 (openmetrics != 0: # UNIT
 * lines, counters' family names without _total, info families, "# EOF"),
 * else Prometheus' text format 0.0.4 (what promtool check metrics reads:
 * no units, counters and info as named by their samples). */
void expo_set_write(const struct expo_set *set, int openmetrics, struct strbuf *out);

/* Whether an HTTP Accept header asks for OpenMetrics (Prometheus' scrapes
 * do). NULL: no. */
int expo_accepts_openmetrics(const char *accept);

/* The value of key in rendered labels, unescaped into buf (cap bytes,
 * cut to fit); NULL when labels have no such key. */
const char *expo_label(const char *labels, const char *key, char *buf, size_t cap);

/* ---- writing a snapshot (record/live_metrics.c) ---------------------------------------- */

/* The first line, at time ts_ns. */
void expo_snap_begin(struct strbuf *o, int64_t ts_ns);
/* A family line; help is escaped here. unit may be "" or NULL. */
void expo_snap_family(struct strbuf *o, const char *name, enum expo_type type, const char *unit,
                      const char *help);
/* A sample line: suffix "" or NULL for none, labels rendered ("" for none). */
void expo_snap_sample(struct strbuf *o, const char *suffix, const char *labels, double value);

/* Append `key="value"` to labels (with a ',' first when labels is not
 * empty), value escaped as both formats escape it. */
void expo_label_add(struct strbuf *labels, const char *key, const char *value);

#endif
