/*
 * SageMaker Debugger's profiler output, in and out (docs/import.md).
 *
 * Import reads a profiler output directory (system/incremental/... JSON
 * lines, framework/pevents/... Chrome trace files) into memory, maps it onto
 * strobe's metric, phase and process names, corrects each node's clock
 * against the first node's from their common step numbers, and then stores
 * it as one finished run in one transaction, blocks and event blocks shaped
 * as the recorder writes them. Reading and storing are separate so that a
 * directory with nothing to import fails before the store is touched.
 *
 * Export writes a stored run back out in that layout, so strobe's own
 * recordings can be fed to SageMaker-era tooling (and round-trip).
 *
 * Ownership: sagemaker_import_read() returns a heap object the caller frees
 * with sagemaker_import_free(); everything it points to is its own.
 */
#ifndef STROBE_IMPORT_SAGEMAKER_H
#define STROBE_IMPORT_SAGEMAKER_H

#include <stdint.h>

#include "common/strbuf.h"
#include "store/store.h"

/* Samples of one node less than this far apart form one snapshot: the
 * whole-host cpu.util is the mean of its cores' values (SageMaker's sampler
 * threads wake at slightly different times). */
#define SAGEMAKER_SNAPSHOT_NS (20 * 1000 * 1000LL)

/* What an import read, kept, and skipped. */
struct sagemaker_counts {
    uint64_t system_files;     /* system metric files read */
    uint64_t trace_files;      /* framework trace files read */
    uint64_t lines;            /* non-empty lines of the system files */
    uint64_t lines_cut;        /* last lines cut short (the writer was still writing) */
    uint64_t lines_garbled;    /* lines that are not one metric record */
    uint64_t values_nonfinite; /* lines whose Value is NaN or +-Infinity (not stored) */
    uint64_t duplicates;       /* points at the time of an earlier one of their series */
    uint64_t points;           /* points stored, derived means included */
    uint64_t series;           /* series stored */
    uint64_t events;           /* framework events stored */
    uint64_t steps;            /* step spans among them */
    uint64_t events_bad;       /* trace elements that did not parse or made no sense */
    uint64_t events_ignored;   /* trace events of kinds strobe does not keep (flows, ...) */
    uint64_t files_unreadable; /* files that could not be read, were empty or had no start time */
};

struct sagemaker_node {
    char *id;              /* "algo-1" */
    int64_t offset_ns;     /* its clock minus the reference node's (subtracted) */
    uint32_t common_steps; /* step numbers the offset came from; 0: not estimated */
    int reference;         /* the node the others are aligned to */
};

struct sagemaker_import;

/*
 * Read the profiler output under dir. 0 and *out; or negative with a
 * one-line reason in *err (without the "cannot import" prefix): the
 * directory cannot be read, holds neither system/ nor framework/, or holds
 * nothing to import.
 */
int sagemaker_import_read(const char *dir, struct sagemaker_import **out, struct strbuf *err);

/*
 * Store what was read as one run, in one transaction. r carries what the
 * caller chose (name, experiment, tags, params, command_json); this fills
 * the rest (id, host, times, status finished, counters). 0, or negative with
 * s->err set and nothing stored.
 */
int sagemaker_import_store(struct sagemaker_import *im, struct store *s, struct run_record *r);

/* The counts, and the nodes in the order first seen (the summary lists
 * them in natural order of their ids, "algo-2" before "algo-10"); valid
 * until the import is freed. */
const struct sagemaker_counts *sagemaker_import_counts(const struct sagemaker_import *im);
const struct sagemaker_node *sagemaker_import_nodes(const struct sagemaker_import *im, uint32_t *n);

/* The one-line summary the import command prints (no newline). */
void sagemaker_import_summary(const struct sagemaker_import *im, const struct run_record *r,
                              struct strbuf *out);

void sagemaker_import_free(struct sagemaker_import *im);

/* What an export wrote. */
struct sagemaker_export_counts {
    uint64_t system_files, lines, skipped_points; /* non-finite values have no JSON form */
    uint64_t trace_files, events, steps;
    uint64_t series_left_out; /* series with no SageMaker equivalent */
};

/*
 * Write run r of store s under dir (created if missing, with parents) in
 * SageMaker's layout: system metric lines per node per minute, and one
 * pythontimeline trace per node per hour. 0, or negative with a one-line
 * reason in *err.
 */
int sagemaker_export(struct store *s, const struct run_record *r, const char *dir,
                     struct sagemaker_export_counts *counts, struct strbuf *err);

#endif
