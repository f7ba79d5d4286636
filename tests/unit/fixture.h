/*
 * Helpers for tests that read the fixture trees in tests/data (see its
 * README.md): load a file into an exactly-sized buffer, copy a tree into a
 * scratch directory, and move a copied tree on to its next snapshot in place.
 *
 * Tests run with the repository root as their working directory, so fixture
 * paths are relative to it. Everything here is static inline so that a test
 * file may use only part of it without -Wunused-function.
 */
#ifndef STROBE_TEST_FIXTURE_H
#define STROBE_TEST_FIXTURE_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"

/* dir/name into out, failing the test if it does not fit. */
static inline void fixture_join(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        TEST_FAIL("path too long: %s/%s", dir, name);
}

/* Read path into a malloc'd buffer of exactly its size, with no NUL after it,
 * so AddressSanitizer reports any read past the end. The caller frees. */
static inline char *fixture_load(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        TEST_FAIL("cannot open fixture '%s': %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) < 0)
        TEST_FAIL("cannot stat '%s': %s", path, strerror(errno));
    size_t n = (size_t)sb.st_size;
    char *buf = malloc(n ? n : 1);
    if (!buf)
        TEST_FAIL("out of memory");
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            TEST_FAIL("cannot read '%s'", path);
        got += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* A copy of the first len bytes of src in a buffer of exactly len bytes. */
static inline char *fixture_exact(const void *src, size_t len)
{
    char *buf = malloc(len ? len : 1);
    if (!buf)
        TEST_FAIL("out of memory");
    if (len)
        memcpy(buf, src, len);
    return buf;
}

/* A fresh scratch directory under $TEST_TMP (tests/run) or /tmp. */
static inline void fixture_tmpdir(char *out, size_t cap)
{
    const char *base = getenv("TEST_TMP");
    snprintf(out, cap, "%s/strobe-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(out))
        TEST_FAIL("mkdtemp '%s': %s", out, strerror(errno));
}

static inline void fixture_write(const char *path, const void *data, size_t len)
{
    /* O_TRUNC on the same inode: an fd kept open on it reads the new bytes */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        TEST_FAIL("cannot write '%s': %s", path, strerror(errno));
    if (len && write(fd, data, len) != (ssize_t)len)
        TEST_FAIL("short write to '%s'", path);
    close(fd);
}

static inline void fixture_write_str(const char *path, const char *s)
{
    fixture_write(path, s, strlen(s));
}

/* Copy (or, where the file exists, overwrite in place) every file of the tree
 * src into dst, creating directories as needed. ".keep" files, which only
 * keep empty directories in git, are not copied. */
static inline void fixture_copy_tree(const char *src, const char *dst)
{
    DIR *d = opendir(src);
    if (!d)
        TEST_FAIL("cannot open fixture directory '%s': %s", src, strerror(errno));
    if (mkdir(dst, 0755) < 0 && errno != EEXIST)
        TEST_FAIL("mkdir '%s': %s", dst, strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strcmp(de->d_name, ".keep") == 0)
            continue;
        char s[1024], t[1024];
        fixture_join(s, sizeof(s), src, de->d_name);
        fixture_join(t, sizeof(t), dst, de->d_name);
        struct stat sb;
        if (stat(s, &sb) < 0)
            TEST_FAIL("stat '%s': %s", s, strerror(errno));
        if (S_ISDIR(sb.st_mode)) {
            fixture_copy_tree(s, t);
        } else {
            size_t len;
            char *buf = fixture_load(s, &len);
            fixture_write(t, buf, len);
            free(buf);
        }
    }
    closedir(d);
}

/* Truncate every file under dst that has no counterpart under next: a
 * process that went away reads as an empty file through the fds kept open on
 * it (the collectors treat an empty stat as a process that is gone). */
static inline void fixture_truncate_missing(const char *dst, const char *next)
{
    DIR *d = opendir(dst);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char s[1024], t[1024];
        fixture_join(s, sizeof(s), dst, de->d_name);
        fixture_join(t, sizeof(t), next, de->d_name);
        struct stat sb, nb;
        if (stat(s, &sb) < 0)
            continue;
        int there = stat(t, &nb) == 0;
        if (S_ISDIR(sb.st_mode))
            fixture_truncate_missing(s, t);
        else if (!there)
            fixture_write(s, "", 0);
    }
    closedir(d);
}

/* Move the copy at dst on to snapshot next, in place. */
static inline void fixture_advance(const char *dst, const char *next)
{
    fixture_truncate_missing(dst, next);
    fixture_copy_tree(next, dst);
}

static inline void fixture_rmtree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        unlink(path);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char s[1024];
        fixture_join(s, sizeof(s), path, de->d_name);
        struct stat sb;
        if (lstat(s, &sb) == 0 && S_ISDIR(sb.st_mode))
            fixture_rmtree(s);
        else
            unlink(s);
    }
    closedir(d);
    rmdir(path);
}

#endif
