/*
 * The filters of strobe ls and strobe rm: which runs of a store a command
 * takes, by experiment, workload, status and name.
 */
#include <errno.h>
#include <fnmatch.h>
#include <string.h>

#include "cli/cli.h"
#include "common/array.h"
#include "common/log.h"
#include "common/strlist.h"

static const char *const filter_statuses[] = {RUN_RUNNING, RUN_FINISHED, RUN_FAILED,
                                              RUN_CRASHED, RUN_KILLED,   RUN_LOST};
#define NSTATUS (ARRAY_SIZE(filter_statuses))

static int status_index(const char *s, size_t len)
{
    for (size_t i = 0; i < NSTATUS; i++)
        if (strlen(filter_statuses[i]) == len && strncmp(filter_statuses[i], s, len) == 0)
            return (int)i;
    return -1;
}

/* One status of the list into the mask (arg); -EINVAL after saying why. */
static int add_status(const char *item, size_t len, void *arg)
{
    unsigned *mask = arg;
    int i = status_index(item, len);
    if (i < 0) {
        log_error("--status: '%.*s' is not a status (running, finished, failed, crashed, "
                  "killed, lost)",
                  (int)len, item);
        return -EINVAL;
    }
    *mask |= 1u << i;
    return 0;
}

/* "failed,crashed" into the mask; 0, or -EINVAL after saying why. An empty
 * item ("" or "failed,") is no status, so strlist_split hands it over. */
static int parse_statuses(const char *arg, unsigned *mask)
{
    return strlist_split(arg, add_status, mask);
}

int run_filter_status_option(const struct cli_option *opt, const char *arg)
{
    return parse_statuses(arg, opt->value) < 0 ? -1 : 0;
}

int run_filter_any(const struct run_filter *f)
{
    return f->experiment || f->workload || f->name_glob || f->status_mask;
}

int run_filter_match(const struct run_filter *f, const struct run_record *r)
{
    /* the experiment is the store's query; checked again for callers that
     * list every run */
    if (f->experiment && (!r->experiment || strcmp(r->experiment, f->experiment) != 0))
        return 0;
    const char *workload = run_record_workload(r);
    if (f->workload && (!workload || strcmp(workload, f->workload) != 0))
        return 0;
    if (f->name_glob && fnmatch(f->name_glob, r->name ? r->name : "", 0) != 0)
        return 0;
    if (f->status_mask) {
        const char *st = run_record_status(r);
        int i = status_index(st, strlen(st));
        if (i < 0 || !(f->status_mask & (1u << i)))
            return 0;
    }
    return 1;
}
