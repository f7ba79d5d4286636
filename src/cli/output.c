/* What a command built, written to stdout whole or not at all (cli.h). */
#include "cli/cli.h"
#include "common/err.h"
#include "common/log.h"
#include "common/strbuf.h"

int cli_print(const struct strbuf *o)
{
    int rc = strbuf_write(o, stdout);
    if (rc < 0)
        log_error("cannot write the output: %s", err_str(rc));
    return rc;
}
