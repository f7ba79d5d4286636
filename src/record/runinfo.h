/* What a run records about itself before the job starts: the machine, the
 * user, the command and where it ran, git state, Python and torch versions,
 * and chosen environment variables. */
#ifndef STROBE_RECORD_RUNINFO_H
#define STROBE_RECORD_RUNINFO_H

#include "common/strbuf.h"
#include "store/store.h"

/* Fill r (already holding name, experiment, tags, params) from the system,
 * and the texts kept with the run into texts (kind -> text: packages,
 * lscpu, nvidia-smi). argv is the job's command; for a Python command its
 * --key value arguments are parameters too (after those given). Never fails
 * for lack of a detail: a field it cannot learn stays NULL. */
int runinfo_collect(struct run_record *r, char *const argv[], const char *proc_root,
                    struct kv_list *texts);

/* A fresh random run id of RUN_ID_LEN hex digits. */
void runinfo_new_id(char id[RUN_ID_LEN + 1]);

/*
 * Run argv with stdin and stderr on /dev/null and capture stdout (at most
 * 64 KiB) into out; kill it after timeout_ms. Returns its exit status (0-255),
 * or negative if it could not run or timed out.
 */
int run_capture(char *const argv[], const char *cwd, int timeout_ms, struct strbuf *out);

/* run_capture with more to say: extra environment ("K=V" strings, which
 * must outlive the call), text for its stdin, stderr captured with stdout. */
struct capture_opts {
    const char *cwd;
    const char *const *env_add; /* NULL-terminated, or NULL */
    const char *stdin_text;     /* NULL: /dev/null */
    int with_stderr;
    int timeout_ms;
};
int run_capture_opts(char *const argv[], const struct capture_opts *o, struct strbuf *out);

/* Whether a command's argv[0] names a Python interpreter (python, python3.11). */
int runinfo_is_python(const char *argv0);

/* Check a user-given run name (or experiment, tag...): 0, or -EINVAL with
 * why in *why. Names are 1-200 bytes with no control characters. */
int runinfo_check_name(const char *what, const char *name, struct strbuf *why);

#endif
