/*
 * Error codes. Functions return 0 on success and a negative value on
 * failure: -errno for system errors, or one of strobe's own codes below,
 * which sit above the errno range. err_str() gives the message for either
 * (after libuv's UV_ERRNO_MAP: one table yields both code and text).
 */
#ifndef STROBE_COMMON_ERR_H
#define STROBE_COMMON_ERR_H

#define STROBE_ERR_MAP(X)                                                                          \
    X(STORE, "store error")                                                                        \
    X(FULL, "database or disk is full")                                                            \
    X(BUSY, "store is locked by another writer")                                                   \
    X(CORRUPT, "store is corrupt or not a strobe store")                                           \
    X(SCHEMA, "store was written by a newer strobe")                                               \
    X(NOTFOUND, "no such run")                                                                     \
    X(AMBIGUOUS, "run reference is ambiguous")                                                     \
    X(EXIST, "already recording")

enum {
    STROBE_ERR_BASE = 10000,
#define X(name, msg) STROBE_E##name,
    STROBE_ERR_MAP(X)
#undef X
};

/* Message for a negative return value (static string). */
const char *err_str(int rc);

#endif
