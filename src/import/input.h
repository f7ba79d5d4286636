/*
 * The files an importer is given, read whole: a SageMaker job's system and
 * trace files, a torch.profiler trace.
 */
#ifndef STROBE_IMPORT_INPUT_H
#define STROBE_IMPORT_INPUT_H

#include <stddef.h>

/* Refuse anything but a regular file (-EISDIR): what a walk through a
 * job's directories meets that is not a file is not input. */
#define INPUT_REGULAR_ONLY 0x1

/*
 * Read path whole into *out, NUL-terminated (the caller frees it), its
 * length without the NUL in *len. Without INPUT_REGULAR_ONLY a pipe or a
 * device is read to its end too. 0; -errno from open(2) or read(2); -EISDIR
 * (see above); -EFBIG when it holds more than max_bytes (a regular file is
 * refused by its size before reading); -ENOMEM. On failure *out is untouched.
 */
int input_read_file(const char *path, size_t max_bytes, unsigned flags, char **out, size_t *len);

#endif
