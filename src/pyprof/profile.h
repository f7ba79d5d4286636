/*
 * A Python profile: the stack samples of a run, as the recorder builds them
 * and as the views load them back from the store.
 *
 * Three dictionaries, each id 1-based and dense in order of definition:
 *   frames  (function, file, first line): one per Python function
 *   stacks  a sequence of frame ids, root first
 *   threads (pid, tid, thread name) and processes (pid, ppid, comm)
 * and samples (time, pid, tid, stack, state, GIL). A stack id 0 is a thread
 * with no Python frame.
 *
 * Stored as blocks of the run (store op py_block_insert), numbered by seq:
 *   PY_BLOCK_DICT     the frames, stacks, processes and threads defined since
 *                     the last dictionary block
 *   PY_BLOCK_SAMPLES  samples in time order, zstd over varints
 * A block refers only to ids defined in dictionary blocks of lower seq, so
 * loading all blocks in seq order rebuilds the profile; a reader that loads
 * the dictionaries and only the sample blocks of a time range gets that
 * range. The byte layout is in docs/store-format.md.
 */
#ifndef STROBE_PYPROF_PROFILE_H
#define STROBE_PYPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/strbuf.h"

enum py_block_kind { PY_BLOCK_DICT = 0, PY_BLOCK_SAMPLES = 1 };

/* The run text where the recorder keeps the sampler's notes (processes it
 * could not read), one a line. */
#define PY_NOTES_TEXT "py-notes"

struct py_frame {
    const char *func, *file; /* owned by the profile */
    uint32_t line;           /* the function's first line */
};

struct py_stack {
    uint32_t depth;
    uint32_t off; /* its frame ids are profile->stack_frames[off .. off+depth), root first */
};

struct py_process {
    int32_t pid, ppid;
    char comm[16];
};

struct py_thread {
    int32_t pid, tid;
    char name[16]; /* /proc/PID/task/TID/comm */
};

struct py_sample {
    int64_t t_ns; /* UTC */
    int32_t pid, tid;
    uint32_t stack; /* 0: no Python frame */
    uint8_t state;  /* enum py_thread_state (pyprof/reader.h) */
    uint8_t gil;    /* 1: the thread held the GIL */
};

struct py_profile {
    struct py_frame *frames; /* frames[id - 1] */
    uint32_t nframes, frames_cap;
    struct py_stack *stacks; /* stacks[id - 1] */
    uint32_t nstacks, stacks_cap;
    uint32_t *stack_frames;
    size_t nstack_frames, stack_frames_cap;
    struct py_process *procs;
    uint32_t nprocs, procs_cap;
    struct py_thread *threads;
    uint32_t nthreads, threads_cap;
    struct py_sample *samples;
    size_t nsamples, samples_cap;
    /* private: hash indexes of frames and stacks, and what the last
     * py_profile_take_blocks encoded (its fields are for profile.c) */
    void *index;
    uint32_t taken_frames, taken_stacks, taken_procs, taken_threads;
    int64_t next_seq;
};

void py_profile_init(struct py_profile *p);
void py_profile_release(struct py_profile *p);

/* Building (the recorder). Each returns 0 or -ENOMEM; the id of an equal
 * entry already defined is given back rather than a new one. */
int py_profile_frame(struct py_profile *p, const char *func, const char *file, uint32_t line,
                     uint32_t *id);
int py_profile_stack(struct py_profile *p, const uint32_t *frames_root_first, uint32_t depth,
                     uint32_t *id);
/* Define or update (a process renamed by exec, a thread named late). */
int py_profile_process(struct py_profile *p, int32_t pid, int32_t ppid, const char *comm);
int py_profile_thread(struct py_profile *p, int32_t pid, int32_t tid, const char *name);
int py_profile_add(struct py_profile *p, const struct py_sample *s);
/* Bytes the profile holds (dictionaries and samples): the recorder's cap. */
size_t py_profile_bytes(const struct py_profile *p);

/* One encoded block (owned data: free() it). */
struct py_block_out {
    int64_t seq;
    int kind; /* enum py_block_kind */
    int64_t start_ns, end_ns, count;
    uint8_t *data;
    size_t len;
};
/*
 * Encode what is new since the last call: a PY_BLOCK_DICT when anything
 * was defined or updated, then a PY_BLOCK_SAMPLES of every sample added
 * (which then leaves the profile: samples are not kept once taken). Puts up
 * to two blocks in out[], in seq order, and their number in *n. 0 or
 * -ENOMEM (the profile is as it was).
 */
int py_profile_take(struct py_profile *p, struct py_block_out out[2], int *n);

/* Loading (the views): decode one stored block into p, appending. Blocks
 * must come in seq order. -EINVAL, with a reason in why, for a garbled
 * block (p keeps what it had). */
int py_profile_load(struct py_profile *p, int kind, const uint8_t *data, size_t len,
                    struct strbuf *why);

/* Frame ids of stack id (root first) and its depth; NULL for 0 or unknown. */
const uint32_t *py_profile_stack_frames(const struct py_profile *p, uint32_t stack,
                                        uint32_t *depth);

#endif
