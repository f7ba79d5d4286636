/* The spool (spool.h says when, where and why). */
#include "record/spool.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "store/copy.h"

/* How long spool_finish waits between tries of the upload. */
#define FINAL_PAUSE_US 500000

/* ---- the file -------------------------------------------------------------- */

/* The spool's folder: dir, else the XDG state folder's (an absolute
 * $XDG_STATE_HOME, as the spec says to take it, else ~/.local/state). */
static void spool_dir(const char *dir, struct strbuf *out)
{
    const char *state = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    if (dir && *dir) {
        strbuf_adds(out, dir);
    } else if (state && *state == '/') {
        strbuf_addf(out, "%s/strobe/spool", state);
    } else {
        if (!home || !*home) {
            const struct passwd *pw = getpwuid(getuid());
            home = pw ? pw->pw_dir : "/tmp";
        }
        strbuf_addf(out, "%s/.local/state/strobe/spool", home);
    }
}

/* mkdir -p of the folder path is in; 0700, as the store holds the job's
 * environment and output. */
static int make_parents(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return -ENOMEM;
    int rc = 0;
    for (char *p = strchr(dir + 1, '/'); p && rc == 0; p = strchr(p + 1, '/')) {
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
            rc = -errno;
        *p = '/';
    }
    free(dir);
    return rc;
}

/* The spool's file and SQLite's files beside it. */
static void remove_files(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    struct strbuf p;
    strbuf_init(&p);
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        strbuf_reset(&p);
        strbuf_addf(&p, "%s%s", path, suffixes[i]);
        if (!strbuf_failed(&p))
            unlink(p.buf);
    }
    strbuf_release(&p);
}

/* Make the spool, new: a file of that name is an earlier part of this run,
 * already uploaded. */
static int spool_open(struct spool *sp)
{
    remove_files(sp->path);
    strbuf_reset(&sp->err);
    int rc = make_parents(sp->path);
    if (rc < 0) {
        strbuf_addf(&sp->err, "cannot make its folder: %s", strerror(-rc));
        return rc;
    }
    rc = store_open(sp->path, 0, &sp->t.store, &sp->err);
    if (rc == 0)
        writer_target_reset(&sp->t, &sp->run);
    return rc;
}

/* ---- batches ------------------------------------------------------------------ */

/* b is stored: in the spool when spooled. */
static int stored(struct spool *sp, const struct batch *b, int spooled)
{
    if (spooled) {
        sp->batches++;
        sp->points += b->run.points - sp->stored_points;
    }
    sp->stored_points = b->run.points;
    return 0;
}

static int spool_write(struct writer *w, struct batch *b)
{
    struct spool *sp = w->spool;
    int rc = sp->t.store ? 0 : spool_open(sp);
    if (rc == 0 && (rc = writer_commit(w, &sp->t, b)) < 0) {
        strbuf_reset(&sp->err);
        strbuf_adds(&sp->err, sp->t.store->err.buf);
    }
    if (rc < 0 && !sp->failing)
        log_warn("cannot write the spool '%s': %s; keeping the data in memory", sp->path,
                 sp->err.buf);
    sp->failing = rc < 0;
    return rc;
}

/* Merge the spool into the store, and remove it once there. 0, or
 * negative with the reason in sp->err. */
static int upload(struct writer *w)
{
    struct spool *sp = w->spool;
    struct store *from = sp->t.store;
    sp->retry_ns = clock_monotonic_ns() + SPOOL_RETRY_NS;
    if (from) {
        struct run_record r;
        struct store_merge_tally tally;
        strbuf_reset(&sp->err);
        int rc = store_resolve_run(from, sp->run.id, &r);
        if (rc < 0) {
            strbuf_addf(&sp->err, "cannot read the spool: %s", from->err.buf);
            return rc;
        }
        rc = store_copy_merge(from, w->primary.store, &r, &tally, &sp->err);
        run_record_release(&r);
        if (rc < 0)
            return rc;
        store_close(from);
        sp->t.store = NULL;
        remove_files(sp->path);
        writer_target_reset(&sp->t, &sp->run);
        sp->uploads++;
        log_note("store '%s' answers again: what the spool held is in it now",
                 w->primary.store->uri);
    }
    sp->on = 0;
    return 0;
}

int spool_on(const struct writer *w)
{
    return w->spool && w->spool->on;
}

int spool_commit(struct writer *w, struct batch *b)
{
    struct spool *sp = w->spool;
    if (sp->on && clock_monotonic_ns() >= sp->retry_ns)
        upload(w); /* on failure the batch goes to the spool, as before */
    if (!sp->on) {
        if (writer_commit(w, &w->primary, b) == 0)
            return stored(sp, b, 0);
        log_warn("cannot write to store '%s': %s; spooling to '%s' until it answers",
                 w->primary.store->uri, w->primary.store->err.buf, sp->path);
        sp->on = 1;
        sp->retry_ns = clock_monotonic_ns() + SPOOL_RETRY_NS;
        /* the failed commit may have gone through (no answer is no
         * verdict), and uploads will add series: find before defining */
        w->primary.lookup = 1;
    }
    int rc = spool_write(w, b);
    return rc < 0 ? rc : stored(sp, b, 1);
}

/* ---- the end ------------------------------------------------------------------ */

int spool_finish(struct writer *w)
{
    struct spool *sp = w->spool;
    if (!sp || !sp->t.store)
        return 0;
    int64_t end = clock_monotonic_ns() + SPOOL_FINAL_NS;
    while (upload(w) < 0) {
        if (clock_monotonic_ns() + FINAL_PAUSE_US * 1000LL >= end) {
            sp->left = 1;
            return -STROBE_ESTORE;
        }
        usleep(FINAL_PAUSE_US);
    }
    return 0;
}

struct store *writer_store(struct writer *w)
{
    return w->spool && w->spool->left ? w->spool->t.store : w->primary.store;
}

/* s as one shell word: quoted unless every byte is one a shell takes as
 * it is (a URI's '?' and '&' are not). */
static void add_shell_word(struct strbuf *out, const char *s)
{
    if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "_-./:@%+=,") == strlen(s)) {
        strbuf_adds(out, s);
        return;
    }
    strbuf_addch(out, '\'');
    for (; *s; s++)
        if (*s == '\'')
            strbuf_adds(out, "'\\''");
        else
            strbuf_addch(out, *s);
    strbuf_addch(out, '\'');
}

void spool_report(struct writer *w)
{
    struct spool *sp = w->spool;
    if (!sp || !sp->batches)
        return;
    const char *uri = w->primary.store->uri; /* without its password */
    if (!sp->left) {
        log_note("%llu batches (%lld points) went to the spool while store '%s' did not answer; "
                 "the store has them all now",
                 (unsigned long long)sp->batches, (long long)sp->points, uri);
        return;
    }
    struct strbuf cmd;
    strbuf_init(&cmd);
    strbuf_adds(&cmd, "strobe push ");
    add_shell_word(&cmd, sp->path);
    strbuf_adds(&cmd, " --store ");
    add_shell_word(&cmd, uri);
    log_warn("store '%s' did not answer by the end: run %s is in the spool '%s' (%llu batches, "
             "%lld points); send it with: %s",
             uri, sp->run.id, sp->path, (unsigned long long)sp->batches, (long long)sp->points,
             cmd.buf);
    strbuf_release(&cmd);
}

/* ---- setup ---------------------------------------------------------------------- */

int spool_attach(struct writer *w, const char *dir, const struct run_record *run)
{
    struct spool *sp = calloc(1, sizeof(*sp));
    if (!sp)
        return -ENOMEM;
    strbuf_init(&sp->err);
    struct strbuf path;
    strbuf_init(&path);
    spool_dir(dir, &path);
    strbuf_addf(&path, "/%s.db", run->id);
    sp->path = strbuf_detach(&path);
    if (!sp->path || run_record_copy(&sp->run, run) < 0) {
        w->spool = sp;
        spool_close(w);
        return -ENOMEM;
    }
    writer_target_reset(&sp->t, &sp->run);
    struct store *s = w->primary.store;
    s->ops->set_timeout(s, SPOOL_HOLD_MS);
    w->spool = sp;
    return 0;
}

void spool_close(struct writer *w)
{
    struct spool *sp = w->spool;
    if (!sp)
        return;
    store_close(sp->t.store);
    writer_target_release(&sp->t);
    free(sp->path);
    run_record_release(&sp->run);
    strbuf_release(&sp->err);
    free(sp);
    w->spool = NULL;
}
