/* Backends behind store_open(); private to src/store/. */
#ifndef STROBE_STORE_BACKEND_H
#define STROBE_STORE_BACKEND_H

#include "store/store.h"

int store_sqlite_open(const char *uri, int readonly, struct store **out, struct strbuf *err);

#endif
