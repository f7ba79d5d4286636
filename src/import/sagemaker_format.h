/*
 * What the SageMaker importer and exporter share (sagemaker.c,
 * sagemaker_export.c): limits, the node name strobe uses for a run recorded
 * on one host, and a median. Private to src/import/.
 */
#ifndef STROBE_IMPORT_SAGEMAKER_FORMAT_H
#define STROBE_IMPORT_SAGEMAKER_FORMAT_H

#include <stdint.h>

/* The node of a run that never had one (a strobe recording), as SageMaker
 * names the first host of a training job. */
#define SM_DEFAULT_NODE "algo-1"

#define SM_FILE_MAX    (1LL << 30) /* bytes of one file read */
#define SM_NODES_MAX   4096
#define SM_SERIES_MAX  (1u << 20)
#define SM_THREADS_MAX (1u << 20)
#define SM_PROCS_MAX   (1u << 20)
#define SM_COMM_MAX    40  /* bytes of a process name kept (room for "@node" in 64) */
#define SM_NAME_MAX    255 /* bytes of an event name kept */
/* Trace times without a start-time event are taken as absolute only above
 * this (1e18 ns: September 2001). */
#define SM_ABSOLUTE_TS_NS 1000000000000000000LL

/* The median of v[0..n) (n > 0), sorting v; the lower middle's and upper
 * middle's mean, rounded down, for even n. */
int64_t sagemaker_median_i64(int64_t *v, uint64_t n);

#endif
