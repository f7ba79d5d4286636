#include "common/array.h"
#include "common/err.h"

#include <string.h>

static const char *const err_messages[] = {
#define X(name, msg) msg,
    STROBE_ERR_MAP(X)
#undef X
};

const char *err_str(int rc)
{
    int code = -rc;
    if (code > STROBE_ERR_BASE && code <= STROBE_ERR_BASE + (int)(ARRAY_SIZE(err_messages)))
        return err_messages[code - STROBE_ERR_BASE - 1];
    return strerror(code);
}
