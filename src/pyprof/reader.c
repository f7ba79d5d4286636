/*
 * The CPython reader (reader.h): Python stacks of a live process, read
 * from outside with process_vm_readv(2).
 *
 * Finding the interpreter. /proc/PID/maps names the files mapped into the
 * process; the executable (/proc/PID/exe) and any libpython3.* are opened
 * (through /proc/PID/map_files/START-END, which reaches the very file even
 * in another mount namespace or deleted, else /proc/PID/root/PATH) and
 * their ELF symbol tables (.dynsym, then .symtab) parsed by hand with
 * <elf.h>: _PyRuntime, Py_Version (3.11+, a uint32 PY_VERSION_HEX read
 * from the process) and PyCode_Type. Without Py_Version the version comes
 * from the file's name (python3.X). An address is the symbol's value plus
 * the load bias: the start of the file's mapping at offset 0 less the
 * page of the first PT_LOAD's p_vaddr - p_offset (0 for a non-PIE
 * executable). Debian's /usr/bin/python3.11 links libpython statically and
 * exports all three from its .dynsym.
 *
 * The walk (offsets from reader_layouts.c, one row per minor version):
 *   _PyRuntime.interpreters.head -> PyInterpreterState (its .runtime must
 *   point back at _PyRuntime, else the process is not what it seems)
 *   -> .threads.head -> PyThreadState -> .next ...
 *   tstate.cframe -> _PyCFrame.current_frame -> _PyInterpreterFrame
 *   -> .previous ... each frame's f_code is a PyCodeObject.
 * Frames are read from the start of their page to their end, so that the
 * calling frames below them on the same page of the thread's data stack
 * come with them; their code objects' headers then in one
 * process_vm_readv of up to PY_STACK_MAX remote iovecs. A frame that is not complete (3.11's
 * _PyFrame_IsIncomplete: not owned by a generator and prev_instr before
 * _co_firsttraceable) is skipped, as CPython's own tracebacks skip it; 3.11
 * has no shim frames owned by the C stack. The GIL's holder is
 * _PyRuntime.ceval.gil.last_holder while .locked is set.
 *
 * Checks, since the process runs while it is read: every read's length;
 * a code object's ob_type must be PyCode_Type; strings must be compact
 * unicode of kind 1, 2 or 4 and are cut at STR_MAX bytes and made valid
 * UTF-8; depth stops at PY_STACK_MAX (innermost kept, truncated set); a
 * frame chain that loops (Brent's cycle check) or a tstate whose interp
 * is not its interpreter makes the thread torn: skipped and counted.
 * ESRCH from any read ends the sample with -ESRCH.
 *
 * Code ids. A code object is named by content: (qualname, filename,
 * co_firstlineno) interned in a string table, so an id is the same for the
 * reader's life and a freed code object whose address is reused by
 * another gets that other's id. A direct-mapped cache by address
 * (CODE_SLOTS) skips the strings while the object's type, name, qualname,
 * filename, linetable pointers and first line are unchanged; it also keeps
 * the code's co_linetable (read once, at most LINETABLE_MAX bytes), and is
 * emptied when the tables it holds pass LINETABLE_BUDGET bytes. Ids are
 * bounded at CODES_MAX: past that a new code object tears its thread.
 *
 * Lines: the instruction offset is prev_instr - co_code_adaptive (bytes),
 * looked up in the location table (CPython's Objects/locations.md): entries
 * of 1 to 8 code units, each a line delta from co_firstlineno.
 *
 * Thread state: /proc/PID/task/TID/stat's state (proc(5) field 3) 'R' is
 * running; else /proc/PID/task/TID/syscall's number says what it waits
 * on (an ioctl on a /dev/nvidia* fd is the GPU). Both files are kept open
 * per thread and re-read with pread at offset 0; a thread gone from the
 * interpreter has its files closed at the end of the sample.
 *
 * Idle threads cost little: a thread that has not run since its last
 * sample (its CPU time in /proc/.../schedstat unchanged, not running now,
 * its current frame where it was) cannot have changed its stack, so that
 * sample's stack and state are given again without walking its frames. A
 * training process has many such threads (autograd, gloo, pin-memory, the
 * data loader's feeders). Samples with lines always walk.
 */
#include "pyprof/reader.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/array.h"
#include "common/strtab.h"
#include "pyprof/reader_layout.h"

#define STR_MAX          512        /* bytes of UTF-8 kept of a name or a file */
#define CODE_SLOTS       8192       /* the address cache, a power of two */
#define CODES_MAX        (1u << 20) /* distinct code objects (ids) */
#define LINETABLE_MAX    (1u << 16) /* bytes of one co_linetable read */
#define LINETABLE_BUDGET (32u << 20)
#define THREADS_MAX      4096 /* threads of one interpreter walked */
#define INTERPS_MAX      64
#define FILES_MAX        4096 /* threads whose /proc files stay open */
#define SYMTAB_MAX       (64u << 20)
#define MAPS_MAX         (64u << 20)
#define CODE_HDR_MAX     256 /* bytes of a code object's header read */
#define FRAME_HDR_MAX    128
#define FRAME_PAGE       4096 /* frames are read a page at a time (frame_bytes) */

/* One code object seen at an address, and what proves it is still there. */
struct code_slot {
    uint64_t addr; /* 0: empty */
    uint64_t type, filename, name, qualname, linetable_ptr;
    int32_t first_line;
    int32_t first_traceable; /* code units before the first traceable one */
    uint32_t id;
    int32_t linetable_len; /* -1 not read yet */
    unsigned char *linetable;
};

/* A thread's /proc files, kept open across samples, and its last sample
 * while it waited (reused while it does not run). */
struct thread_files {
    pid_t tid;
    int stat_fd;
    int syscall_fd;
    int schedstat_fd;
    uint32_t gen;        /* the sample that last saw the thread */
    uint64_t run_ns;     /* schedstat's time on a CPU at the last sample */
    uint64_t frame;      /* its current frame then */
    uint32_t *kept;      /* that sample's code ids when it waited, else NULL */
    uint32_t kept_depth; /* ... and its depth, */
    uint8_t kept_state;  /* state */
    uint8_t kept_trunc;  /* and truncation */
};

/* The bytes of the process last read while walking frames: [lo, hi). */
struct frame_window {
    uint64_t lo, hi;
    unsigned char buf[FRAME_PAGE + FRAME_HDR_MAX];
};

/* A frame of the walk before its code object is read. */
struct frame_ref {
    uint64_t code;
    uint64_t prev_instr;
    uint8_t owner;
};

struct py_reader {
    pid_t pid;
    const struct py_layout *l;
    char version[16];
    uint64_t runtime;   /* &_PyRuntime in the process */
    uint64_t code_type; /* &PyCode_Type, 0 when not exported */
    int task_fd;        /* /proc/PID/task */
    struct strtab strings;
    struct strtab code_keys; /* "name-index:file-index:line" -> code id */
    struct py_code_info *codes;
    uint32_t codes_cap;
    struct code_slot *slots; /* CODE_SLOTS */
    size_t linetable_bytes;
    struct thread_files *files;
    uint32_t nfiles, files_cap, gen;
    uint64_t torn;
    struct py_thread_sample sample;
    struct frame_ref frames[PY_STACK_MAX];
    unsigned char code_hdr[PY_STACK_MAX][CODE_HDR_MAX];
    size_t code_hdr_len;
};

static const char *const state_names[PY_ST_COUNT] = {"running", "lock", "io",
                                                     "sleep",   "gpu",  "wait"};

const char *py_state_name(enum py_thread_state st)
{
    return (unsigned)st < PY_ST_COUNT ? state_names[st] : "?";
}

/* ---- reading the process ---- */

static int errno_to_read_err(int e)
{
    if (e == ESRCH)
        return -ESRCH;
    if (e == EPERM || e == EACCES)
        return -EPERM;
    return -EFAULT;
}

static int mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    if (addr < 4096 || addr + len < addr)
        return -EFAULT;
    struct iovec local = {buf, len};
    struct iovec remote = {(void *)(uintptr_t)addr, len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n == (ssize_t)len)
        return 0;
    return n < 0 ? errno_to_read_err(errno) : -EFAULT;
}

static uint64_t get_u64(const unsigned char *p, size_t off)
{
    uint64_t v;
    memcpy(&v, p + off, sizeof(v));
    return v;
}

static int32_t get_i32(const unsigned char *p, size_t off)
{
    int32_t v;
    memcpy(&v, p + off, sizeof(v));
    return v;
}

static int mem_u64(pid_t pid, uint64_t addr, uint64_t *out)
{
    return mem_read(pid, addr, out, sizeof(*out));
}

/* ---- ELF symbols ---- */

struct py_symbols {
    uint64_t runtime, version, code_type; /* st_value, 0 absent */
    uint64_t base_vaddr;                  /* first PT_LOAD's p_vaddr - p_offset, paged */
};

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
    ssize_t n = pread(fd, buf, len, (off_t)off);
    return n == (ssize_t)len ? 0 : -EINVAL;
}

static void *pread_alloc(int fd, uint64_t off, uint64_t len)
{
    if (len == 0 || len > SYMTAB_MAX)
        return NULL;
    void *p = malloc(len);
    if (p && pread_full(fd, p, len, off) < 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void symtab_scan(const Elf64_Sym *syms, size_t n, const char *str, size_t strsz,
                        struct py_symbols *out)
{
    static const char *const wanted[] = {"_PyRuntime", "Py_Version", "PyCode_Type"};
    uint64_t *slot[] = {&out->runtime, &out->version, &out->code_type};
    for (size_t i = 0; i < n; i++) {
        if (syms[i].st_name >= strsz || syms[i].st_shndx == SHN_UNDEF || !syms[i].st_value)
            continue;
        const char *name = str + syms[i].st_name;
        size_t room = strsz - syms[i].st_name;
        for (size_t w = 0; w < ARRAY_SIZE(wanted); w++)
            if (!*slot[w] && strnlen(name, room) < room && strcmp(name, wanted[w]) == 0)
                *slot[w] = syms[i].st_value;
    }
}

static int elf_base(int fd, const Elf64_Ehdr *eh, struct py_symbols *out)
{
    if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 || eh->e_phnum > 4096)
        return -EINVAL;
    Elf64_Phdr *ph = pread_alloc(fd, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(*ph));
    if (!ph)
        return -EINVAL;
    int rc = -EINVAL;
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            out->base_vaddr = (ph[i].p_vaddr - ph[i].p_offset) & ~(uint64_t)0xfff;
            rc = 0;
            break;
        }
    free(ph);
    return rc;
}

/* The symbols of the ELF file at fd: .dynsym first, .symtab for what it
 * lacks. 0, or -EINVAL for a file that is not a 64-bit ELF we can read. */
static int elf_symbols(int fd, struct py_symbols *out)
{
    Elf64_Ehdr eh;
    memset(out, 0, sizeof(*out));
    if (pread_full(fd, &eh, sizeof(eh), 0) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
        eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        eh.e_shnum == 0)
        return -EINVAL;
    if (elf_base(fd, &eh, out) < 0)
        return -EINVAL;
    Elf64_Shdr *sh = pread_alloc(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(*sh));
    if (!sh)
        return -EINVAL;
    static const uint32_t kinds[] = {SHT_DYNSYM, SHT_SYMTAB};
    for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
        for (unsigned i = 0; i < eh.e_shnum; i++) {
            if (sh[i].sh_type != kinds[k] || sh[i].sh_link >= eh.e_shnum ||
                sh[i].sh_entsize != sizeof(Elf64_Sym))
                continue;
            const Elf64_Shdr *st = &sh[sh[i].sh_link];
            Elf64_Sym *syms = pread_alloc(fd, sh[i].sh_offset, sh[i].sh_size);
            char *str = pread_alloc(fd, st->sh_offset, st->sh_size);
            if (syms && str)
                symtab_scan(syms, sh[i].sh_size / sizeof(*syms), str, st->sh_size, out);
            free(syms);
            free(str);
        }
    free(sh);
    return 0;
}

/* ---- finding the interpreter ---- */

/* A file mapped at offset 0, as maps(5) gives it. */
struct mapped_file {
    uint64_t start, end;
    char path[4096];
};

static char *read_file_alloc(int dirfd, const char *name, size_t *len)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t got = read(fd, buf + n, cap - n);
        if (got <= 0)
            break;
        n += (size_t)got;
        if (n == cap) {
            char *bigger = cap < MAPS_MAX ? realloc(buf, cap * 2 + 1) : NULL;
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    int e = errno;
    close(fd);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    errno = e;
    return buf;
}

static int is_libpython(const char *path)
{
    const char *base = strrchr(path, '/');
    return strncmp(base ? base + 1 : path, "libpython3", 10) == 0;
}

/* The version in a file's name: "python3.11", "libpython3.11.so.1.0". */
static int version_from_name(const char *path, uint32_t *hex)
{
    const char *base = strrchr(path, '/');
    const char *p = strstr(base ? base + 1 : path, "python");
    if (!p)
        return -1;
    unsigned major = 0, minor = 0;
    if (sscanf(p + 6, "%u.%u", &major, &minor) != 2 || major > 9 || minor > 99)
        return -1;
    *hex = (uint32_t)(major << 24 | minor << 16);
    return 0;
}

/* Opens the file behind a mapping of pid (see the header comment). */
static int open_mapped(pid_t pid, const struct mapped_file *m)
{
    char p[4200];
    snprintf(p, sizeof(p), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, m->path);
    fd = open(p, O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : open(m->path, O_RDONLY | O_CLOEXEC);
}

/* What open found: the file with _PyRuntime and its addresses. */
struct found {
    uint64_t runtime, version_addr, code_type;
    char path[4096];
};

/* 1 when the file of m holds _PyRuntime (filled into *f), else 0. */
static int try_file(pid_t pid, const struct mapped_file *m, struct found *f)
{
    int fd = open_mapped(pid, m);
    if (fd < 0)
        return 0;
    struct py_symbols s;
    int rc = elf_symbols(fd, &s);
    close(fd);
    if (rc < 0 || !s.runtime)
        return 0;
    uint64_t bias = m->start - s.base_vaddr;
    f->runtime = bias + s.runtime;
    f->version_addr = s.version ? bias + s.version : 0;
    f->code_type = s.code_type ? bias + s.code_type : 0;
    snprintf(f->path, sizeof(f->path), "%s", m->path);
    return 1;
}

/* Parses one maps(5) line: "start-end perms offset dev inode path". */
static int parse_maps_line(char *line, struct mapped_file *m)
{
    unsigned long long start, end, offset;
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &offset, &path_at) != 3 ||
        path_at == 0 || offset != 0 || line[path_at] != '/')
        return -1;
    m->start = start;
    m->end = end;
    snprintf(m->path, sizeof(m->path), "%s", line + path_at);
    return 0;
}

/* Looks through pid's mapped libpython and its executable for _PyRuntime:
 * 1 found, 0 not there, or a negative errno (-EPERM, -ENOENT gone). */
static int find_runtime(pid_t pid, struct found *f)
{
    char dir[64], exe[4096];
    snprintf(dir, sizeof(dir), "/proc/%d", (int)pid);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -ENOENT;
    size_t len = 0;
    char *maps = read_file_alloc(dfd, "maps", &len);
    int e = errno;
    ssize_t n = readlinkat(dfd, "exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    close(dfd);
    if (!maps)
        return e == EACCES || e == EPERM ? -EPERM : -ENOENT;
    int found = 0;
    /* libpython first: an executable that loads it does not define _PyRuntime */
    for (int pass = 0; pass < 2 && !found; pass++) {
        char *save = NULL;
        char *copy = strdup(maps);
        for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line && !found;
             line = strtok_r(NULL, "\n", &save)) {
            struct mapped_file m;
            if (parse_maps_line(line, &m) < 0)
                continue;
            int want = pass == 0 ? is_libpython(m.path) : strcmp(m.path, exe) == 0;
            if (want)
                found = try_file(pid, &m, f);
        }
        free(copy);
    }
    free(maps);
    return found;
}

/* ---- open and close ---- */

static int check_interpreter(struct py_reader *r, struct strbuf *why)
{
    uint64_t interp = 0, back = 0;
    int rc = mem_u64(r->pid, r->runtime + r->l->runtime_interp_head, &interp);
    if (rc == -EPERM || rc == -ESRCH) {
        strbuf_addf(why,
                    rc == -EPERM ? "cannot read the memory of process %d" : "process %d exited",
                    (int)r->pid);
        return rc == -ESRCH ? -ENOENT : rc;
    }
    if (rc == 0 && interp == 0) {
        strbuf_addf(why, "the interpreter of process %d is not initialised yet", (int)r->pid);
        return -EAGAIN;
    }
    if (rc == 0)
        rc = mem_u64(r->pid, interp + r->l->interp_runtime, &back);
    if (rc < 0 || back != r->runtime) {
        strbuf_addf(why, "process %d: its interpreter state does not look like Python %s's",
                    (int)r->pid, r->version);
        return rc == -ESRCH ? -ENOENT : -EFAULT;
    }
    return 0;
}

static int read_version(pid_t pid, const struct found *f, uint32_t *hex, struct strbuf *why)
{
    if (f->version_addr) {
        int rc = mem_read(pid, f->version_addr, hex, sizeof(*hex));
        if (rc == -EPERM) {
            strbuf_addf(why, "cannot read the memory of process %d", (int)pid);
            return rc;
        }
        if (rc == 0)
            return 0;
    }
    if (version_from_name(f->path, hex) == 0)
        return 0;
    strbuf_addf(why, "process %d: no Py_Version and no version in '%s'", (int)pid, f->path);
    return -ENOTSUP;
}

static int reader_init(struct py_reader *r, pid_t pid, const struct found *f, uint32_t hex,
                       struct strbuf *why)
{
    int major = (int)(hex >> 24), minor = (int)((hex >> 16) & 0xff);
    r->pid = pid;
    r->runtime = f->runtime;
    r->code_type = f->code_type;
    r->task_fd = -1;
    r->strings.max = CODES_MAX;
    r->code_keys.max = CODES_MAX;
    snprintf(r->version, sizeof(r->version), "%d.%d.%d", major, minor, (int)((hex >> 8) & 0xff));
    r->l = py_layout_find(major, minor);
    if (!r->l) {
        strbuf_addf(why, "process %d: Python %d.%d is not supported (3.11 is)", (int)pid, major,
                    minor);
        return -ENOTSUP;
    }
    r->slots = calloc(CODE_SLOTS, sizeof(*r->slots));
    if (!r->slots) {
        strbuf_adds(why, "out of memory");
        return -ENOMEM;
    }
    char task[64];
    snprintf(task, sizeof(task), "/proc/%d/task", (int)pid);
    r->task_fd = open(task, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return check_interpreter(r, why);
}

int py_reader_open(pid_t pid, struct py_reader **out, struct strbuf *why)
{
    struct found f;
    int rc = find_runtime(pid, &f);
    if (rc < 0) {
        strbuf_addf(why,
                    rc == -EPERM ? "cannot read the memory maps of process %d"
                                 : "process %d does not exist",
                    (int)pid);
        return rc;
    }
    if (rc == 0) {
        strbuf_addf(why, "process %d is not a CPython process (no _PyRuntime)", (int)pid);
        return -ENOENT;
    }
    uint32_t hex = 0;
    rc = read_version(pid, &f, &hex, why);
    if (rc < 0)
        return rc;
    struct py_reader *r = calloc(1, sizeof(*r));
    if (!r) {
        strbuf_adds(why, "out of memory");
        return -ENOMEM;
    }
    rc = reader_init(r, pid, &f, hex, why);
    if (rc < 0) {
        py_reader_close(r);
        return rc;
    }
    *out = r;
    return 0;
}

const char *py_reader_version(const struct py_reader *r)
{
    return r->version;
}

pid_t py_reader_pid(const struct py_reader *r)
{
    return r->pid;
}

uint64_t py_reader_torn(const struct py_reader *r)
{
    return r->torn;
}

const struct py_code_info *py_reader_code(const struct py_reader *r, uint32_t code_id)
{
    return code_id < r->code_keys.n ? &r->codes[code_id] : NULL;
}

static void slots_clear(struct py_reader *r)
{
    for (uint32_t i = 0; i < CODE_SLOTS; i++) {
        free(r->slots[i].linetable);
        r->slots[i] = (struct code_slot){0};
    }
    r->linetable_bytes = 0;
}

static void files_close(struct thread_files *t)
{
    if (t->stat_fd >= 0)
        close(t->stat_fd);
    if (t->syscall_fd >= 0)
        close(t->syscall_fd);
    if (t->schedstat_fd >= 0)
        close(t->schedstat_fd);
    free(t->kept);
}

void py_reader_close(struct py_reader *r)
{
    if (!r)
        return;
    if (r->slots)
        slots_clear(r);
    free(r->slots);
    for (uint32_t i = 0; i < r->nfiles; i++)
        files_close(&r->files[i]);
    free(r->files);
    if (r->task_fd >= 0)
        close(r->task_fd);
    strtab_release(&r->strings);
    strtab_release(&r->code_keys);
    free(r->codes);
    free(r);
}

/* ---- strings ---- */

static size_t put_utf8(char *out, uint32_t c)
{
    if (c >= 0xd800 && c <= 0xdfff)
        c = 0xfffd; /* a lone surrogate is not UTF-8 */
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* chars of kind bytes each as UTF-8 into out (STR_MAX + 1 bytes), cut at a
 * whole character; NUL, an ASCII string's high bytes and a code point past
 * U+10FFFF become U+FFFD. The length. */
static size_t chars_to_utf8(const unsigned char *data, size_t chars, unsigned kind, int ascii,
                            char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < chars; i++) {
        uint32_t c;
        if (kind == 1)
            c = data[i];
        else if (kind == 2)
            c = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
        else
            memcpy(&c, data + 4 * i, 4);
        if (c == 0 || c > 0x10ffff || (ascii && c > 0x7f))
            c = 0xfffd;
        char buf[4];
        size_t len = put_utf8(buf, c);
        if (n + len > STR_MAX)
            break;
        memcpy(out + n, buf, len);
        n += len;
    }
    out[n] = '\0';
    return n;
}

/* The str object at addr as UTF-8, interned: its index in r->strings. */
static int read_str(struct py_reader *r, uint64_t addr, uint32_t *index)
{
    const struct py_layout *l = r->l;
    unsigned char hdr[128];
    if (l->unicode_compact_data > sizeof(hdr))
        return -EFAULT;
    int rc = mem_read(r->pid, addr, hdr, l->unicode_compact_data);
    if (rc < 0)
        return rc;
    uint32_t state;
    memcpy(&state, hdr + l->unicode_state, sizeof(state));
    unsigned kind = (state >> l->unicode_kind_shift) & 7;
    int compact = (state >> l->unicode_compact_bit) & 1;
    int ascii = (state >> l->unicode_ascii_bit) & 1;
    int64_t length = (int64_t)get_u64(hdr, l->unicode_length);
    if (!compact || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1) || length < 0)
        return -EFAULT;
    size_t chars = length > STR_MAX ? STR_MAX : (size_t)length;
    unsigned char data[STR_MAX * 4];
    uint64_t at = addr + (ascii ? l->unicode_ascii_data : l->unicode_compact_data);
    if (chars && (rc = mem_read(r->pid, at, data, chars * kind)) < 0)
        return rc;
    char text[STR_MAX + 1];
    size_t n = chars_to_utf8(data, chars, kind, ascii, text);
    rc = strtab_intern(&r->strings, text, n, index);
    return rc < 0 ? -EFAULT : 0;
}

/* ---- code objects ---- */

static uint32_t slot_of(uint64_t addr)
{
    return (uint32_t)(((addr >> 4) * UINT64_C(0x9e3779b97f4a7c15)) >> 40) & (CODE_SLOTS - 1);
}

static size_t code_hdr_len(const struct py_layout *l)
{
    uint16_t ends[] = {l->object_type,        l->code_filename,    l->code_name,
                       l->code_qualname,      l->code_firstlineno, l->code_linetable,
                       l->code_firsttraceable};
    size_t end = 0;
    for (size_t i = 0; i < ARRAY_SIZE(ends); i++)
        if ((size_t)ends[i] + 8 > end)
            end = (size_t)ends[i] + 8;
    return end;
}

/* The id of (name, file, first line): interned as one key; codes[] grows
 * first, so that every id the key table gives has its entry. */
static int code_id(struct py_reader *r, uint32_t name, uint32_t file, int32_t line, uint32_t *id)
{
    char key[48];
    int len = snprintf(key, sizeof(key), "%u:%u:%d", name, file, (int)line);
    if (array_grow((void **)&r->codes, &r->codes_cap, r->code_keys.n + 1, sizeof(*r->codes), 256) <
        0)
        return -EFAULT;
    int rc = strtab_intern(&r->code_keys, key, (size_t)len, id);
    if (rc < 0)
        return -EFAULT;
    if (rc == 1)
        r->codes[*id] = (struct py_code_info){
            .name = r->strings.s[name], .file = r->strings.s[file], .first_line = (uint32_t)line};
    return 0;
}

/* The slot of the code object at addr whose header is hdr; read anew when
 * the slot held another. */
static int code_lookup(struct py_reader *r, uint64_t addr, const unsigned char *hdr,
                       struct code_slot **out)
{
    const struct py_layout *l = r->l;
    struct code_slot now = {
        .addr = addr,
        .type = get_u64(hdr, l->object_type),
        .filename = get_u64(hdr, l->code_filename),
        .name = get_u64(hdr, l->code_name),
        .qualname = get_u64(hdr, l->code_qualname),
        .linetable_ptr = get_u64(hdr, l->code_linetable),
        .first_line = get_i32(hdr, l->code_firstlineno),
        .first_traceable = get_i32(hdr, l->code_firsttraceable),
        .linetable_len = -1,
    };
    if (r->code_type && now.type != r->code_type)
        return -EFAULT;
    struct code_slot *s = &r->slots[slot_of(addr)];
    if (s->addr == addr && s->type == now.type && s->filename == now.filename &&
        s->name == now.name && s->qualname == now.qualname &&
        s->linetable_ptr == now.linetable_ptr && s->first_line == now.first_line &&
        s->first_traceable == now.first_traceable) {
        *out = s;
        return 0;
    }
    uint32_t name, file;
    int rc = read_str(r, now.qualname ? now.qualname : now.name, &name);
    if (rc == 0)
        rc = read_str(r, now.filename, &file);
    if (rc == 0)
        rc = code_id(r, name, file, now.first_line, &now.id);
    if (rc < 0)
        return rc;
    free(s->linetable);
    if (s->linetable_len > 0)
        r->linetable_bytes -= (size_t)s->linetable_len;
    *s = now;
    *out = s;
    return 0;
}

static void linetable_load(struct py_reader *r, struct code_slot *s)
{
    const struct py_layout *l = r->l;
    uint64_t size = 0;
    s->linetable_len = 0;
    if (mem_u64(r->pid, s->linetable_ptr + l->varobject_size, &size) < 0 || size == 0 ||
        size > LINETABLE_MAX)
        return;
    if (r->linetable_bytes + size > LINETABLE_BUDGET) {
        struct code_slot keep = *s; /* s's table is not read yet: nothing to free */
        slots_clear(r);
        *s = keep;
    }
    unsigned char *t = malloc(size);
    if (!t || mem_read(r->pid, s->linetable_ptr + l->bytes_data, t, size) < 0) {
        free(t);
        return;
    }
    s->linetable = t;
    s->linetable_len = (int32_t)size;
    r->linetable_bytes += size;
}

/* Objects/locations.md: a varint is 6-bit chunks, least significant first,
 * 0x40 set on all but the last. */
static int read_varint(const unsigned char *t, int32_t len, int32_t *i, uint32_t *v)
{
    uint32_t val = 0;
    for (unsigned shift = 0; *i < len && shift < 32; shift += 6) {
        unsigned char b = t[(*i)++];
        val |= (uint32_t)(b & 0x3f) << shift;
        if (!(b & 0x40)) {
            *v = val;
            return 0;
        }
    }
    return -1;
}

static int read_svarint(const unsigned char *t, int32_t len, int32_t *i, int32_t *v)
{
    uint32_t u;
    if (read_varint(t, len, i, &u) < 0)
        return -1;
    *v = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
    return 0;
}

/* The line of the instruction at byte offset addrq (CPython's
 * PyCode_Addr2Line): -1 when it has none or the table is damaged. */
static int32_t location_line(const unsigned char *t, int32_t len, int32_t first_line, int64_t addrq,
                             int32_t unit)
{
    if (addrq < 0)
        return first_line;
    int32_t line = first_line, i = 0;
    int64_t addr = 0;
    while (i < len) {
        unsigned char b = t[i++];
        if (!(b & 0x80))
            return -1;
        int code = (b >> 3) & 15;
        int32_t delta = 0;
        uint32_t skip;
        if (code == 14) { /* long form: line delta, end line, start and end columns */
            if (read_svarint(t, len, &i, &delta) < 0 || read_varint(t, len, &i, &skip) < 0 ||
                read_varint(t, len, &i, &skip) < 0 || read_varint(t, len, &i, &skip) < 0)
                return -1;
        } else if (code == 13) { /* no column */
            if (read_svarint(t, len, &i, &delta) < 0)
                return -1;
        } else if (code >= 10 && code <= 12) { /* one line: two column bytes */
            delta = code - 10;
            i += 2;
        } else if (code < 10) { /* short form: one column byte */
            i += 1;
        }
        line += delta;
        addr += ((b & 7) + 1) * unit;
        if (addrq < addr)
            return code == 15 ? -1 : line;
    }
    return -1;
}

static int32_t frame_line(struct py_reader *r, struct code_slot *s, const struct frame_ref *f)
{
    if (s->linetable_len < 0)
        linetable_load(r, s);
    if (!s->linetable)
        return -1;
    int64_t addrq = (int64_t)(f->prev_instr - (s->addr + r->l->code_code));
    return location_line(s->linetable, s->linetable_len, s->first_line, addrq,
                         r->l->code_unit_size);
}

/* ---- the stack of one thread ---- */

/* Where the frame at addr (len bytes) is: in the window already read, or
 * in a new one from the start of its page to its end. 3.11 allocates
 * frames upwards in the thread's data stack, so the frames it called
 * from are usually below it on the same page: one read serves many. */
static const unsigned char *frame_bytes(struct py_reader *r, uint64_t addr, size_t len,
                                        struct frame_window *w, int *rc)
{
    if (addr >= w->lo && addr + len <= w->hi && addr + len > addr)
        return w->buf + (addr - w->lo);
    uint64_t lo = addr & ~(uint64_t)(FRAME_PAGE - 1);
    *rc = mem_read(r->pid, lo, w->buf, (size_t)(addr - lo) + len);
    if (*rc < 0)
        return NULL;
    w->lo = lo;
    w->hi = addr + len;
    return w->buf + (addr - lo);
}

/* The frames from frame outwards into r->frames: their count, or -EFAULT
 * for a loop, -ESRCH. */
static int walk_frames(struct py_reader *r, uint64_t frame, uint8_t *truncated)
{
    const struct py_layout *l = r->l;
    size_t len = (size_t)l->frame_owner + 1;
    struct frame_window w = {0};
    uint64_t tortoise = 0;
    unsigned power = 1, lam = 0;
    int n = 0, rc = 0;
    *truncated = 0;
    if (len > FRAME_HDR_MAX)
        return -EFAULT;
    while (frame) {
        if (n == PY_STACK_MAX) {
            *truncated = 1;
            break;
        }
        if (frame == tortoise)
            return -EFAULT;
        if (++lam == power) {
            tortoise = frame;
            power *= 2;
            lam = 0;
        }
        const unsigned char *hdr = frame_bytes(r, frame, len, &w, &rc);
        if (!hdr)
            return rc;
        r->frames[n].code = get_u64(hdr, l->frame_code);
        r->frames[n].prev_instr = get_u64(hdr, l->frame_prev_instr);
        r->frames[n].owner = hdr[l->frame_owner];
        n++;
        frame = get_u64(hdr, l->frame_previous);
    }
    return n;
}

/* The headers of the n frames' code objects into r->code_hdr, in one call. */
static int read_code_headers(struct py_reader *r, int n)
{
    if (n == 0)
        return 0;
    struct iovec local[PY_STACK_MAX], remote[PY_STACK_MAX];
    size_t len = r->code_hdr_len;
    for (int i = 0; i < n; i++) {
        if (r->frames[i].code < 4096)
            return -EFAULT;
        local[i] = (struct iovec){r->code_hdr[i], len};
        remote[i] = (struct iovec){(void *)(uintptr_t)r->frames[i].code, len};
    }
    ssize_t got = process_vm_readv(r->pid, local, (unsigned long)n, remote, (unsigned long)n, 0);
    if (got < 0)
        return errno_to_read_err(errno);
    return got == (ssize_t)(len * (size_t)n) ? 0 : -EFAULT;
}

static int read_stack(struct py_reader *r, uint64_t frame, int with_lines,
                      struct py_thread_sample *t)
{
    const struct py_layout *l = r->l;
    int n = walk_frames(r, frame, &t->truncated);
    if (n < 0)
        return n;
    int rc = read_code_headers(r, n);
    if (rc < 0)
        return rc;
    uint32_t depth = 0;
    for (int i = 0; i < n; i++) {
        const struct frame_ref *f = &r->frames[i];
        struct code_slot *s;
        if ((rc = code_lookup(r, f->code, r->code_hdr[i], &s)) < 0)
            return rc;
        uint64_t traceable =
            s->addr + l->code_code + (uint64_t)(uint32_t)s->first_traceable * l->code_unit_size;
        if (f->owner != l->owner_generator && f->prev_instr < traceable)
            continue; /* not yet started: CPython shows no such frame either */
        t->code[depth] = s->id;
        t->line[depth] = with_lines ? frame_line(r, s, f) : -1;
        depth++;
    }
    t->depth = depth;
    return 0;
}

/* ---- thread state from /proc ---- */

struct syscall_state {
    long nr;
    uint8_t state;
};

static const struct syscall_state syscall_states[] = {
    {SYS_futex, PY_ST_LOCK},
#ifdef SYS_futex_waitv
    {SYS_futex_waitv, PY_ST_LOCK},
#endif
    {SYS_read, PY_ST_IO},          {SYS_pread64, PY_ST_IO},
    {SYS_readv, PY_ST_IO},         {SYS_preadv, PY_ST_IO},
    {SYS_write, PY_ST_IO},         {SYS_pwrite64, PY_ST_IO},
    {SYS_writev, PY_ST_IO},        {SYS_recvfrom, PY_ST_IO},
    {SYS_recvmsg, PY_ST_IO},       {SYS_recvmmsg, PY_ST_IO},
    {SYS_sendto, PY_ST_IO},        {SYS_sendmsg, PY_ST_IO},
    {SYS_sendmmsg, PY_ST_IO},      {SYS_ppoll, PY_ST_IO},
    {SYS_pselect6, PY_ST_IO},      {SYS_epoll_pwait, PY_ST_IO},
    {SYS_accept4, PY_ST_IO},       {SYS_connect, PY_ST_IO},
    {SYS_fsync, PY_ST_IO},         {SYS_fdatasync, PY_ST_IO},
    {SYS_openat, PY_ST_IO},
#ifdef SYS_poll
    {SYS_poll, PY_ST_IO},
#endif
#ifdef SYS_select
    {SYS_select, PY_ST_IO},
#endif
#ifdef SYS_epoll_wait
    {SYS_epoll_wait, PY_ST_IO},
#endif
#ifdef SYS_accept
    {SYS_accept, PY_ST_IO},
#endif
    {SYS_nanosleep, PY_ST_SLEEP},  {SYS_clock_nanosleep, PY_ST_SLEEP},
#ifdef SYS_pause
    {SYS_pause, PY_ST_SLEEP},
#endif
    /* a wait for a child, like any other: PY_ST_WAIT */
};

static struct thread_files *thread_files(struct py_reader *r, pid_t tid)
{
    for (uint32_t i = 0; i < r->nfiles; i++)
        if (r->files[i].tid == tid) {
            r->files[i].gen = r->gen;
            return &r->files[i];
        }
    if (r->nfiles >= FILES_MAX || r->task_fd < 0 ||
        array_grow((void **)&r->files, &r->files_cap, r->nfiles + 1, sizeof(*r->files), 16) < 0)
        return NULL;
    char name[64];
    snprintf(name, sizeof(name), "%d/stat", (int)tid);
    int fd = openat(r->task_fd, name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct thread_files *t = &r->files[r->nfiles++];
    *t = (struct thread_files){
        .tid = tid, .stat_fd = fd, .syscall_fd = -1, .schedstat_fd = -1, .gen = r->gen};
    return t;
}

static ssize_t pread_text(int fd, char *buf, size_t cap)
{
    ssize_t n = pread(fd, buf, cap - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    return n;
}

/* An ioctl on a /dev/nvidia* fd: a CUDA call waiting on the GPU. */
static int fd_is_nvidia(pid_t pid, unsigned long long fd)
{
    char path[64], target[64];
    snprintf(path, sizeof(path), "/proc/%d/fd/%llu", (int)pid, fd);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strncmp(target, "/dev/nvidia", 11) == 0;
}

static uint8_t syscall_state(struct py_reader *r, struct thread_files *t)
{
    if (t->syscall_fd < 0) {
        char name[64];
        snprintf(name, sizeof(name), "%d/syscall", (int)t->tid);
        t->syscall_fd = openat(r->task_fd, name, O_RDONLY | O_CLOEXEC);
        if (t->syscall_fd < 0)
            return PY_ST_WAIT;
    }
    char buf[256];
    if (pread_text(t->syscall_fd, buf, sizeof(buf)) <= 0)
        return PY_ST_WAIT;
    if (strncmp(buf, "running", 7) == 0)
        return PY_ST_RUNNING;
    /* proc(5): the number, then the arguments in hex */
    long nr;
    unsigned long long arg0 = 0;
    if (sscanf(buf, "%ld %llx", &nr, &arg0) < 1)
        return PY_ST_WAIT;
    if (nr == SYS_ioctl)
        return fd_is_nvidia(r->pid, arg0) ? PY_ST_GPU : PY_ST_WAIT;
    for (size_t i = 0; i < ARRAY_SIZE(syscall_states); i++)
        if (syscall_states[i].nr == nr)
            return syscall_states[i].state;
    return PY_ST_WAIT;
}

static uint8_t thread_state(struct py_reader *r, struct thread_files *t);

/* proc(5) /proc/PID/task/TID/schedstat: time spent on a CPU, ns; 0 when
 * unknown (then no sample is reused). */
static uint64_t run_time_ns(struct py_reader *r, struct thread_files *t)
{
    if (t->schedstat_fd < 0) {
        char name[64];
        snprintf(name, sizeof(name), "%d/schedstat", (int)t->tid);
        t->schedstat_fd = openat(r->task_fd, name, O_RDONLY | O_CLOEXEC);
        if (t->schedstat_fd < 0)
            return 0;
    }
    char buf[128];
    if (pread_text(t->schedstat_fd, buf, sizeof(buf)) <= 0)
        return 0;
    return strtoull(buf, NULL, 10);
}

/* Give t's last sample again when the thread has not run since and waits
 * on, its current frame unchanged: 1 if given. */
static int reuse_idle(struct py_reader *r, struct thread_files *f, uint64_t frame,
                      struct py_thread_sample *t)
{
    uint64_t run_ns = run_time_ns(r, f);
    int same = f->kept && run_ns && run_ns == f->run_ns && frame == f->frame;
    f->run_ns = run_ns;
    f->frame = frame;
    if (!same || thread_state(r, f) != f->kept_state)
        return 0;
    memcpy(t->code, f->kept, f->kept_depth * sizeof(*t->code));
    for (uint32_t i = 0; i < f->kept_depth; i++)
        t->line[i] = -1;
    t->depth = f->kept_depth;
    t->truncated = f->kept_trunc;
    t->state = f->kept_state;
    return 1;
}

/* Keep t's sample for reuse_idle while its thread waits. */
static void keep_idle(struct thread_files *f, const struct py_thread_sample *t)
{
    free(f->kept);
    f->kept = NULL;
    if (t->state == PY_ST_RUNNING || !f->run_ns)
        return;
    f->kept = malloc((t->depth ? t->depth : 1) * sizeof(*f->kept));
    if (!f->kept)
        return;
    memcpy(f->kept, t->code, t->depth * sizeof(*t->code));
    f->kept_depth = t->depth;
    f->kept_state = t->state;
    f->kept_trunc = t->truncated;
}

static uint8_t thread_state(struct py_reader *r, struct thread_files *t)
{
    char buf[512];
    if (!t || pread_text(t->stat_fd, buf, sizeof(buf)) <= 0)
        return PY_ST_WAIT;
    /* proc(5): field 3, state, after the last ')' of comm */
    const char *paren = strrchr(buf, ')');
    if (!paren || paren[1] != ' ')
        return PY_ST_WAIT;
    if (paren[2] == 'R')
        return PY_ST_RUNNING;
    return syscall_state(r, t);
}

static void files_sweep(struct py_reader *r)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < r->nfiles; i++) {
        if (r->files[i].gen == r->gen)
            r->files[kept++] = r->files[i];
        else
            files_close(&r->files[i]);
    }
    r->nfiles = kept;
}

/* ---- sampling ---- */

struct gil {
    uint64_t holder; /* 0 when the GIL is free */
};

static int read_gil(struct py_reader *r, struct gil *g)
{
    const struct py_layout *l = r->l;
    unsigned char buf[64];
    size_t len = (size_t)l->runtime_gil_locked + 4 - l->runtime_gil_last_holder;
    g->holder = 0;
    if (l->runtime_gil_locked < l->runtime_gil_last_holder || len > sizeof(buf))
        return -EFAULT;
    int rc = mem_read(r->pid, r->runtime + l->runtime_gil_last_holder, buf, len);
    if (rc < 0)
        return rc;
    if (get_i32(buf, l->runtime_gil_locked - l->runtime_gil_last_holder) > 0)
        g->holder = get_u64(buf, 0);
    return 0;
}

static size_t tstate_len(const struct py_layout *l)
{
    uint16_t ends[] = {l->tstate_next, l->tstate_interp, l->tstate_thread_id,
                       l->tstate_native_thread_id, l->tstate_cframe};
    size_t end = 0;
    for (size_t i = 0; i < ARRAY_SIZE(ends); i++)
        if ((size_t)ends[i] + 8 > end)
            end = (size_t)ends[i] + 8;
    return end;
}

/* One thread: its sample to fn. *next the next tstate. 0, fn's non-zero
 * return, -EFAULT when torn (next then 0: the chain is not trusted), -ESRCH. */
static int sample_thread(struct py_reader *r, uint64_t interp, uint64_t tstate, const struct gil *g,
                         int with_lines, py_thread_fn *fn, void *arg, uint64_t *next)
{
    const struct py_layout *l = r->l;
    unsigned char ts[512];
    size_t len = tstate_len(l);
    *next = 0;
    int rc = len <= sizeof(ts) ? mem_read(r->pid, tstate, ts, len) : -EFAULT;
    if (rc < 0)
        return rc;
    if (get_u64(ts, l->tstate_interp) != interp)
        return -EFAULT;
    *next = get_u64(ts, l->tstate_next);
    struct py_thread_sample *t = &r->sample;
    t->tid = (pid_t)get_u64(ts, l->tstate_native_thread_id);
    t->holds_gil = g->holder == tstate;
    t->truncated = 0;
    t->depth = 0;
    uint64_t cframe = get_u64(ts, l->tstate_cframe), frame = 0;
    if (cframe && (rc = mem_u64(r->pid, cframe + l->cframe_current_frame, &frame)) < 0)
        return rc;
    struct thread_files *f = thread_files(r, t->tid);
    if (f && !with_lines && reuse_idle(r, f, frame, t))
        return fn(t, arg);
    if ((rc = read_stack(r, frame, with_lines, t)) < 0)
        return rc;
    t->state = f ? thread_state(r, f) : PY_ST_WAIT;
    if (f)
        keep_idle(f, t);
    return fn(t, arg);
}

static int sample_interp(struct py_reader *r, uint64_t interp, const struct gil *g, int with_lines,
                         py_thread_fn *fn, void *arg, uint64_t *next)
{
    const struct py_layout *l = r->l;
    uint64_t tstate = 0;
    int rc = mem_u64(r->pid, interp + l->interp_next, next);
    if (rc == 0)
        rc = mem_u64(r->pid, interp + l->interp_threads_head, &tstate);
    if (rc < 0)
        return rc;
    for (int i = 0; tstate && i < THREADS_MAX; i++) {
        rc = sample_thread(r, interp, tstate, g, with_lines, fn, arg, &tstate);
        if (rc == -EFAULT) {
            r->torn++;
            continue; /* the next tstate is 0: this interpreter's walk ends */
        }
        if (rc != 0)
            return rc;
    }
    return 0;
}

int py_reader_sample(struct py_reader *r, int with_lines, py_thread_fn *fn, void *arg)
{
    struct gil g;
    uint64_t interp = 0;
    if (!r->code_hdr_len)
        r->code_hdr_len = code_hdr_len(r->l);
    if (r->code_hdr_len > CODE_HDR_MAX)
        return -EINVAL;
    int rc = read_gil(r, &g);
    if (rc == 0)
        rc = mem_u64(r->pid, r->runtime + r->l->runtime_interp_head, &interp);
    if (rc < 0)
        return rc;
    r->gen++;
    for (int i = 0; interp && i < INTERPS_MAX; i++) {
        rc = sample_interp(r, interp, &g, with_lines, fn, arg, &interp);
        if (rc == -EFAULT) {
            r->torn++;
            break;
        }
        if (rc != 0)
            break;
    }
    files_sweep(r);
    return rc == -EFAULT ? 0 : rc;
}
