/*
 * The offsets the reader needs inside one CPython minor version's
 * structures (private to reader.c and its test). One row per version in
 * reader_layouts.c; a field list as an X-macro, so that the unit test can
 * check every field of a row by name against offsetof() in the real
 * headers (tests/unit/test_py_reader.c) and a new version is one new row.
 */
#ifndef STROBE_PYPROF_READER_LAYOUT_H
#define STROBE_PYPROF_READER_LAYOUT_H

#include <stdint.h>

/* X(field, what the probe prints: the C expression in CPython's own terms) */
#define PY_LAYOUT_FIELDS(X)                                                                        \
    X(runtime_interp_head, "offsetof(_PyRuntimeState, interpreters.head)")                         \
    X(runtime_gil_last_holder, "offsetof(_PyRuntimeState, ceval.gil.last_holder)")                 \
    X(runtime_gil_locked, "offsetof(_PyRuntimeState, ceval.gil.locked)")                           \
    X(interp_next, "offsetof(PyInterpreterState, next)")                                           \
    X(interp_threads_head, "offsetof(PyInterpreterState, threads.head)")                           \
    X(interp_runtime, "offsetof(PyInterpreterState, runtime)")                                     \
    X(tstate_next, "offsetof(PyThreadState, next)")                                                \
    X(tstate_interp, "offsetof(PyThreadState, interp)")                                            \
    X(tstate_thread_id, "offsetof(PyThreadState, thread_id)")                                      \
    X(tstate_native_thread_id, "offsetof(PyThreadState, native_thread_id)")                        \
    X(tstate_cframe, "offsetof(PyThreadState, cframe)")                                            \
    X(cframe_current_frame, "offsetof(_PyCFrame, current_frame)")                                  \
    X(frame_code, "offsetof(_PyInterpreterFrame, f_code)")                                         \
    X(frame_previous, "offsetof(_PyInterpreterFrame, previous)")                                   \
    X(frame_prev_instr, "offsetof(_PyInterpreterFrame, prev_instr)")                               \
    X(frame_owner, "offsetof(_PyInterpreterFrame, owner)")                                         \
    X(owner_generator, "FRAME_OWNED_BY_GENERATOR")                                                 \
    X(code_filename, "offsetof(PyCodeObject, co_filename)")                                        \
    X(code_name, "offsetof(PyCodeObject, co_name)")                                                \
    X(code_qualname, "offsetof(PyCodeObject, co_qualname)")                                        \
    X(code_firstlineno, "offsetof(PyCodeObject, co_firstlineno)")                                  \
    X(code_linetable, "offsetof(PyCodeObject, co_linetable)")                                      \
    X(code_firsttraceable, "offsetof(PyCodeObject, _co_firsttraceable)")                           \
    X(code_code, "offsetof(PyCodeObject, co_code_adaptive)")                                       \
    X(code_unit_size, "sizeof(_Py_CODEUNIT)")                                                      \
    X(object_type, "offsetof(PyObject, ob_type)")                                                  \
    X(varobject_size, "offsetof(PyVarObject, ob_size)")                                            \
    X(bytes_data, "offsetof(PyBytesObject, ob_sval)")                                              \
    X(unicode_length, "offsetof(PyASCIIObject, length)")                                           \
    X(unicode_state, "offsetof(PyASCIIObject, state)")                                             \
    X(unicode_kind_shift, "bit_of(kind)")                                                          \
    X(unicode_compact_bit, "bit_of(compact)")                                                      \
    X(unicode_ascii_bit, "bit_of(ascii)")                                                          \
    X(unicode_ascii_data, "sizeof(PyASCIIObject)")                                                 \
    X(unicode_compact_data, "sizeof(PyCompactUnicodeObject)")

struct py_layout {
    int major, minor;
#define PY_LAYOUT_MEMBER(field, expr) uint16_t field;
    PY_LAYOUT_FIELDS(PY_LAYOUT_MEMBER)
#undef PY_LAYOUT_MEMBER
};

/* The row of major.minor, or NULL: a version without one is not read. */
const struct py_layout *py_layout_find(int major, int minor);

#endif
