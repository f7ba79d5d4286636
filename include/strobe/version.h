/*
 * strobe's version. The public headers in include/strobe/ are what other
 * programs build against; the event ring ABI and the annotation API will
 * join this one (see docs/architecture.md).
 */
#ifndef STROBE_VERSION_H
#define STROBE_VERSION_H

#define STROBE_VERSION_MAJOR 0
#define STROBE_VERSION_MINOR 1
#define STROBE_VERSION_PATCH 0
#define STROBE_VERSION       "0.1.0"

#endif
