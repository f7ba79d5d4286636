/*
 * libstrobe: framework events from C (and from the Python package, which
 * wraps it). Link with -lstrobe, or the static core library.
 *
 * Without a recorder (no $STROBE_SHM, or a segment that fails its checks)
 * every call returns after one branch on a flag. Under `strobe run` each call
 * writes one 32-byte record into this thread's ring in shared memory.
 *
 * Cost (bench/span_cost.c, a 2-core VM): span_begin + span_end 22 ns
 * recording, 3 ns without a recorder (an empty call pair: 2.5 ns). Begin,
 * end and instant are stamped with the TSC where the kernel keeps time with
 * it, else with clock_gettime(CLOCK_MONOTONIC) (about 23 ns more a call).
 *
 * Guarantees: thread-safe; never blocks; never allocates per event (a thread
 * allocates its name table, 26 KiB, at its first event, and a copy of each
 * name the first time it uses it; both are freed when the thread ends);
 * never prints, never aborts. When the thread's ring is full, or every ring is taken, the event is
 * dropped and counted, and the count reaches the run's record. A thread that
 * found every ring taken tries again every 256 events, so it gets a ring once
 * other threads have ended and given theirs back.
 * After fork() the child gets a ring of its own on its first event; after
 * exec() the new image attaches again through the environment.
 *
 * Names are copied (the caller's buffer may change afterwards), interned per
 * thread by content; at most 1023 distinct names per thread, 1 to 255 bytes.
 * An event that cannot be recorded (a NULL, empty or longer name, a name past
 * the thread's 1023, a negative duration) is dropped and counted the same way.
 *
 * Linking: the static libraries (libstrobe.a, the core library) and the
 * shared libstrobe.so (soname libstrobe.so.0) carry the same code. The shared
 * one is built with -fvisibility=hidden and exports only what is marked
 * STROBE_API below.
 */
#ifndef STROBE_STROBE_H
#define STROBE_STROBE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the exported API; expands to nothing where visibility is not a thing. */
#ifndef STROBE_API
#if defined(__GNUC__) || defined(__clang__)
#define STROBE_API __attribute__((visibility("default")))
#else
#define STROBE_API
#endif
#endif

/* Open a span named name on this thread; spans nest. */
STROBE_API void strobe_span_begin(const char *name);
/* Close the innermost open span named name. */
STROBE_API void strobe_span_end(const char *name);
/* A span already measured: it began at start_ns (CLOCK_MONOTONIC) and lasted
 * duration_ns. */
STROBE_API void strobe_span_complete(const char *name, int64_t start_ns, int64_t duration_ns);
/* A point in time. */
STROBE_API void strobe_instant(const char *name);
/* A training step begins; later events belong to it. */
STROBE_API void strobe_step(uint32_t step);
/* A value the script measured (loss, samples/s), stored as app.<name>. */
STROBE_API void strobe_counter(const char *name, double value);
/* The same, for a value that belongs to step step rather than the current one
 * (a loss reported after the step that produced it); the current step does
 * not change. */
STROBE_API void strobe_counter_at_step(const char *name, double value, uint32_t step);
/* 1 when a recorder is listening, else 0. */
STROBE_API int strobe_enabled(void);
/* The recorder's request counter (strobe ctl): 0 when no recorder listens
 * or none was made; a change means a new request waits in the directory
 * the recorder named. One atomic load. */
STROBE_API uint64_t strobe_control_seq(void);

#ifdef __cplusplus
}
#endif

#endif
