/* Where strobe run finds its Python package: the strobe package, its C
 * extension, and the sitecustomize that turns the PyTorch capture on. */
#ifndef STROBE_RECORD_PYDIR_H
#define STROBE_RECORD_PYDIR_H

#include <stddef.h>

#include "common/strbuf.h"

/*
 * The directory holding the whole package (strobe/__init__.py,
 * strobe/_strobe.abi3.so and strobe/_boot/sitecustomize.py): only
 * $STROBE_PYTHON_DIR when it is set, else python/ beside the executable
 * (a build tree), else lib/strobe/python beside the executable's directory
 * (an installed strobe). Returns buf (cap bytes) holding that directory, or
 * NULL when none holds the whole package. tried, when not NULL, gets the
 * directories looked in appended, separated by ", " (for the warning).
 */
const char *pydir_find(char *buf, size_t cap, struct strbuf *tried);

#endif
