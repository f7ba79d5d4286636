/*
 * A weak placeholder for the interactive flame graph page until it is built
 * (the real one wins where both are linked):
 * strobe flame --format html says so and fails.
 */
#include "render/flame_html.h"

#include <errno.h>

#include "common/log.h"

__attribute__((weak)) int flame_html_write(const struct strbuf *flame_json, FILE *out)
{
    (void)flame_json;
    (void)out;
    log_error("html is not built yet");
    return -ENOSYS;
}
