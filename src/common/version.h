#ifndef STROBE_COMMON_VERSION_H
#define STROBE_COMMON_VERSION_H

#include "strobe/version.h"

#endif
