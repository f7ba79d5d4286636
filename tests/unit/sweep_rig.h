/*
 * What the tests of strobe sweep's experiment files share: a scratch
 * folder laid out as radT's examples are (csv/, yaml/ and pytorch/ with
 * its scripts, a train.py at the top), a sweep_env with made-up GPUs (0, 1,
 * 2 and GPU-abc) where nsys is installed and ncu is not, and helpers that
 * write a file there, load it and check the plan or the error's place.
 */
#ifndef STROBE_TEST_SWEEP_RIG_H
#define STROBE_TEST_SWEEP_RIG_H

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/strbuf.h"
#include "sweep/spec.h"

#include "fixture.h"
#include "test.h"

struct sweep_rig {
    char dir[PATH_MAX]; /* the scratch folder, as realpath() gives it */
    char path[PATH_MAX + 64];
    char *gpus[5];
    struct sweep_env env;
    struct sweep_spec spec; /* the last file loaded */
    struct strbuf err;      /* its error */
    struct strbuf text;     /* rig_argv's answer */
};

static inline int rig_have_command(const char *name)
{
    return strcmp(name, "nsys") == 0;
}

/* dir/name, with the folders on the way made. */
static inline const char *rig_write(struct sweep_rig *r, const char *name, const void *data,
                                    size_t len)
{
    snprintf(r->path, sizeof(r->path), "%s/%s", r->dir, name);
    for (char *s = strchr(r->path + strlen(r->dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(r->path, 0755);
        *s = '/';
    }
    fixture_write(r->path, data, len);
    return r->path;
}

static inline const char *rig_write_str(struct sweep_rig *r, const char *name, const char *text)
{
    return rig_write(r, name, text, strlen(text));
}

static inline void rig_init(struct sweep_rig *r)
{
    memset(r, 0, sizeof(*r));
    char tmp[PATH_MAX];
    fixture_tmpdir(tmp, sizeof(tmp));
    if (!realpath(tmp, r->dir))
        TEST_FAIL("realpath '%s'", tmp);
    r->gpus[0] = "0";
    r->gpus[1] = "1";
    r->gpus[2] = "2";
    r->gpus[3] = "GPU-abc";
    r->env.gpu_ids = r->gpus;
    r->env.have_command = rig_have_command;
    r->env.python = "/usr/bin/python3";
    strbuf_init(&r->err);
    strbuf_init(&r->text);
    rig_write_str(r, "train.py", "print('train')\n");
    rig_write_str(r, "pytorch/cifar10.py", "print('cifar')\n");
    rig_write_str(r, "pytorch/cifar10_context.py", "print('cifar context')\n");
}

static inline void rig_release(struct sweep_rig *r)
{
    sweep_spec_release(&r->spec);
    strbuf_release(&r->err);
    strbuf_release(&r->text);
    fixture_rmtree(r->dir);
}

/* Load dir/name as it is now: sweep_spec_load's answer. */
static inline int rig_load_file(struct sweep_rig *r, const char *name)
{
    sweep_spec_release(&r->spec);
    strbuf_reset(&r->err);
    snprintf(r->path, sizeof(r->path), "%s/%s", r->dir, name);
    return sweep_spec_load(&r->spec, r->path, &r->env, &r->err);
}

/* Write text to dir/name and load it; the plan, or the test fails. */
static inline const struct sweep_spec *rig_ok(struct sweep_rig *r, const char *name,
                                              const char *text)
{
    rig_write_str(r, name, text);
    if (rig_load_file(r, name) < 0)
        TEST_FAIL("%s: %s", name, r->err.buf);
    return &r->spec;
}

/* The error must be "DIR/name:LINE:COL: ..." and hold needle. */
static inline void rig_check_error(struct sweep_rig *r, const char *name, int line, int col,
                                   const char *needle)
{
    char want[PATH_MAX + 128];
    snprintf(want, sizeof(want), "%s/%s:%d:%d: ", r->dir, name, line, col);
    if (strncmp(r->err.buf, want, strlen(want)) != 0)
        TEST_FAIL("error \"%s\" is not at \"%s\"", r->err.buf, want);
    if (!strstr(r->err.buf, needle))
        TEST_FAIL("error \"%s\" does not say \"%s\"", r->err.buf, needle);
}

/* Write text to dir/name: loading it must fail at line:col saying needle. */
static inline void rig_fails_at(struct sweep_rig *r, const char *name, const char *text, int line,
                                int col, const char *needle)
{
    rig_write_str(r, name, text);
    if (rig_load_file(r, name) == 0)
        TEST_FAIL("%s loaded; wanted an error at %d:%d saying \"%s\"", name, line, col, needle);
    rig_check_error(r, name, line, col, needle);
}

/* A file that must fail to load: its name and text, and the place and
 * words of its error. */
struct spec_error_case {
    const char *name, *text;
    int line, col;
    const char *needle;
};

static inline void rig_fails_each(struct sweep_rig *r, const struct spec_error_case *cases,
                                  size_t n)
{
    for (size_t i = 0; i < n; i++)
        rig_fails_at(r, cases[i].name, cases[i].text, cases[i].line, cases[i].col, cases[i].needle);
}

/* A NULL-terminated list of words as one text, "a|b|c", where the rig's
 * folder reads "@"; valid until the next call. */
static inline const char *rig_join(struct sweep_rig *r, char *const *words)
{
    strbuf_reset(&r->text);
    size_t dirlen = strlen(r->dir);
    for (char *const *w = words; w && *w; w++) {
        if (w != words)
            strbuf_addch(&r->text, '|');
        const char *s = *w;
        if (strncmp(s, r->dir, dirlen) == 0 && (s[dirlen] == '/' || !s[dirlen])) {
            strbuf_addch(&r->text, '@');
            s += dirlen;
        }
        strbuf_adds(&r->text, s);
    }
    return r->text.buf;
}

/* One path as rig_join shows it. */
static inline const char *rig_path(struct sweep_rig *r, const char *path)
{
    char *one[2] = {(char *)path, NULL};
    return rig_join(r, one);
}

static inline const char *rig_argv(struct sweep_rig *r, const struct sweep_run *run)
{
    return rig_join(r, run->argv);
}

/* The run's parameters as "k=v,k=v". */
static inline const char *rig_params(struct sweep_rig *r, const struct sweep_run *run)
{
    strbuf_reset(&r->text);
    for (size_t i = 0; i < run->params.n; i++)
        strbuf_addf(&r->text, "%s%s=%s", i ? "," : "", run->params.items[i].key,
                    run->params.items[i].value);
    return r->text.buf;
}

static inline double rig_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
