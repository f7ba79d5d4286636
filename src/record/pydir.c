#include "common/array.h"
#include "record/pydir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the capture loads: a directory lacking one of them (a build that
 * stopped half-way, a copy of the .py files only) cannot record a step. */
static const char *const package_files[] = {
    "strobe/__init__.py",
    "strobe/_strobe.abi3.so",
    "strobe/_boot/sitecustomize.py",
};

static int holds_package(const char *dir)
{
    for (size_t i = 0; i < ARRAY_SIZE(package_files); i++) {
        char probe[4200];
        int n = snprintf(probe, sizeof(probe), "%s/%s", dir, package_files[i]);
        if (n < 0 || (size_t)n >= sizeof(probe) || access(probe, R_OK) != 0)
            return 0;
    }
    return 1;
}

/* Look in dir: 1 (buf holds it) when the package is there, else 0. */
static int try_dir(const char *dir, char *buf, size_t cap, struct strbuf *tried)
{
    if (holds_package(dir)) {
        int n = snprintf(buf, cap, "%s", dir);
        return n >= 0 && (size_t)n < cap;
    }
    if (tried)
        strbuf_addf(tried, "%s%s", tried->len ? ", " : "", dir);
    return 0;
}

/* The executable's directory into exe (already resolved by the kernel:
 * no symbolic link in it); 0, or -1 when /proc/self/exe cannot be read. */
static int exe_dir(char *exe, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", exe, cap - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    return 0;
}

const char *pydir_find(char *buf, size_t cap, struct strbuf *tried)
{
    const char *env = getenv("STROBE_PYTHON_DIR");
    if (env && *env) /* the user's choice: nothing else is looked at */
        return try_dir(env, buf, cap, tried) ? buf : NULL;
    char exe[2048];
    if (exe_dir(exe, sizeof(exe)) < 0) {
        if (tried)
            strbuf_adds(tried, "(the executable's directory: /proc/self/exe unreadable)");
        return NULL;
    }
    char dir[2100];
    snprintf(dir, sizeof(dir), "%s/python", exe);
    if (try_dir(dir, buf, cap, tried))
        return buf;
    /* PREFIX/bin/strobe -> PREFIX/lib/strobe/python, written without ".." */
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    snprintf(dir, sizeof(dir), "%s/lib/strobe/python", exe);
    return try_dir(dir, buf, cap, tried) ? buf : NULL;
}
