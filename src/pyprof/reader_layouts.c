/*
 * The per-version offsets of CPython's structures (reader_layout.h), for
 * x86-64 and aarch64 Linux builds (LP64; the offsets hold for both). A
 * version is added as a row, checked by test_py_reader's probe against
 * that version's headers (built with -DPy_BUILD_CORE, as the internal
 * ones need). Learnt from CPython's Include/internal headers.
 */
#include "pyprof/reader_layout.h"

#include <stddef.h>

#include "common/array.h"

static const struct py_layout layouts[] = {
    {
        .major = 3,
        .minor = 11,
        /* Include/internal/pycore_runtime.h, pycore_gil.h */
        .runtime_interp_head = 40,
        .runtime_gil_last_holder = 368,
        .runtime_gil_locked = 376,
        /* Include/internal/pycore_interp.h */
        .interp_next = 0,
        .interp_threads_head = 16,
        .interp_runtime = 40,
        /* Include/cpython/pystate.h */
        .tstate_next = 8,
        .tstate_interp = 16,
        .tstate_thread_id = 152,
        .tstate_native_thread_id = 160,
        .tstate_cframe = 56,
        .cframe_current_frame = 8,
        /* Include/internal/pycore_frame.h */
        .frame_code = 32,
        .frame_previous = 48,
        .frame_prev_instr = 56,
        .frame_owner = 69,
        .owner_generator = 1,
        /* Include/cpython/code.h */
        .code_filename = 112,
        .code_name = 120,
        .code_qualname = 128,
        .code_firstlineno = 72,
        .code_linetable = 136,
        .code_firsttraceable = 168,
        .code_code = 184,
        .code_unit_size = 2,
        /* Include/object.h, cpython/bytesobject.h, cpython/unicodeobject.h */
        .object_type = 8,
        .varobject_size = 16,
        .bytes_data = 32,
        .unicode_length = 16,
        .unicode_state = 32,
        .unicode_kind_shift = 2,
        .unicode_compact_bit = 5,
        .unicode_ascii_bit = 6,
        .unicode_ascii_data = 48,
        .unicode_compact_data = 72,
    },
};

const struct py_layout *py_layout_find(int major, int minor)
{
    for (size_t i = 0; i < ARRAY_SIZE(layouts); i++)
        if (layouts[i].major == major && layouts[i].minor == minor)
            return &layouts[i];
    return NULL;
}
