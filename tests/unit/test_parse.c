/*
 * The /proc and /sys parsers (sample/parse.h) on the fixture files in
 * tests/data, with the values written there, and on malformed, truncated and
 * random input. Every input is handed over in a buffer of exactly its length
 * with no NUL after it, so AddressSanitizer catches a read past the end.
 */
#include "common/array.h"
#include "sample/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>

#include "sample/pfile.h"

#include "fixture.h"
#include "test.h"

#define PROC_A0 "tests/data/proc-a/t0/proc/"
#define PROC_A1 "tests/data/proc-a/t1/proc/"
#define PARSE   "tests/data/parse/"

/* ---- helpers -------------------------------------------------------------- */

static int stat_str(const char *s, struct pid_stat *st)
{
    char *b = fixture_exact(s, strlen(s));
    memset(st, 0, sizeof(*st));
    int rc = parse_pid_stat(b, strlen(s), st);
    free(b);
    return rc;
}

static int meminfo_str(const char *s, struct meminfo *mi)
{
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_meminfo(b, strlen(s), mi);
    free(b);
    return rc;
}

static int psi_str(const char *s, uint64_t *some, uint64_t *full)
{
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_psi(b, strlen(s), some, full);
    free(b);
    return rc;
}

static int stat_total_str(const char *s, struct cpu_ticks *total)
{
    struct cpu_ticks cores[4];
    uint8_t seen[4];
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_proc_stat(b, strlen(s), total, cores, seen, 4);
    free(b);
    return rc;
}

static int flat_str(const char *s, const char *key, uint64_t *v)
{
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_flat_key(b, strlen(s), key, v);
    free(b);
    return rc;
}

static int u64max_str(const char *s, uint64_t *v)
{
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_u64_or_max(b, strlen(s), v);
    free(b);
    return rc;
}

struct pids {
    pid_t p[16];
    int n;
};

static void collect_pid(pid_t pid, void *arg)
{
    struct pids *l = arg;
    if (l->n < 16)
        l->p[l->n] = pid;
    l->n++;
}

static int pid_list_str(const char *s, struct pids *l)
{
    memset(l, 0, sizeof(*l));
    char *b = fixture_exact(s, strlen(s));
    int rc = parse_pid_list(b, strlen(s), collect_pid, l);
    free(b);
    return rc;
}

/* A 52-field stat line (proc(5)) with the given comm and the fields the
 * parser reads set to recognisable values. */
static void make_stat_line(char *out, size_t cap, const char *comm)
{
    snprintf(out, cap,
             "1234 (%s) S 1 1234 1234 0 -1 4194304 100 0 0 0 11 22 33 44 20 0 5 0 6666 3133440 "
             "777 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0",
             comm);
}

/* ---- /proc/stat ---------------------------------------------------------- */

TEST(proc_stat_fixture)
{
    size_t len;
    char *buf = fixture_load(PROC_A0 "stat", &len);
    struct cpu_ticks total, cores[4];
    uint8_t seen[4];
    memset(cores, 0xee, sizeof(cores));
    ASSERT_EQ_INT(parse_proc_stat(buf, len, &total, cores, seen, 4), 2);
    /* cpu  10000 200 3000 50000 500 100 200 0 0 0 */
    ASSERT_EQ_U64(total.user, 10000);
    ASSERT_EQ_U64(total.nice, 200);
    ASSERT_EQ_U64(total.system, 3000);
    ASSERT_EQ_U64(total.idle, 50000);
    ASSERT_EQ_U64(total.iowait, 500);
    ASSERT_EQ_U64(total.irq, 100);
    ASSERT_EQ_U64(total.softirq, 200);
    ASSERT_EQ_U64(total.steal, 0);
    /* cpu0 6000 100 1500 24000 300 50 100 0 0 0 */
    ASSERT_EQ_U64(cores[0].user, 6000);
    ASSERT_EQ_U64(cores[0].idle, 24000);
    ASSERT_EQ_U64(cores[0].iowait, 300);
    /* cpu1 4000 100 1500 26000 200 50 100 0 0 0 */
    ASSERT_EQ_U64(cores[1].user, 4000);
    ASSERT_EQ_U64(cores[1].idle, 26000);
    ASSERT_EQ_U64(cores[1].softirq, 100);
    ASSERT_EQ_INT(seen[0], 1);
    ASSERT_EQ_INT(seen[1], 1);
    ASSERT_EQ_INT(seen[2], 0);
    ASSERT_EQ_INT(seen[3], 0);
    free(buf);

    buf = fixture_load(PROC_A1 "stat", &len);
    ASSERT_EQ_INT(parse_proc_stat(buf, len, &total, cores, seen, 4), 2);
    /* cpu1 4020 105 1505 26060 205 51 102 2 0 0: steal is the 8th field */
    ASSERT_EQ_U64(cores[1].steal, 2);
    ASSERT_EQ_U64(total.steal, 2);
    free(buf);
}

TEST(proc_stat_total_vs_core_lines)
{
    struct cpu_ticks total, cores[2];
    uint8_t seen[2];
    /* "cpu " (blank after) is the total, "cpu1" a core: a core line must not
     * be taken for the total, nor the total for core 0 */
    const char *s = "cpu 9 8 7 6 5 4 3 2 1 0\ncpu1 1 2 3 4 5 6 7 8 0 0\ncpu0 11 12 13 14\n";
    char *b = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_proc_stat(b, strlen(s), &total, cores, seen, 2), 2);
    ASSERT_EQ_U64(total.user, 9);
    ASSERT_EQ_U64(total.steal, 2);
    ASSERT_EQ_U64(cores[1].user, 1);
    ASSERT_EQ_U64(cores[1].steal, 8);
    ASSERT_EQ_U64(cores[0].user, 11);
    ASSERT_EQ_U64(cores[0].idle, 14);
    ASSERT_EQ_U64(cores[0].iowait, 0); /* four-field line: the rest are zero */
    free(b);

    /* more cores than the caller has room for: counted, not stored */
    s = "cpu  2 0 0 2\ncpu0 1 0 0 1\ncpu1 1 0 0 1\ncpu2 0 0 0 0\n";
    b = fixture_exact(s, strlen(s));
    struct cpu_ticks one[1];
    uint8_t one_seen[1];
    ASSERT_EQ_INT(parse_proc_stat(b, strlen(s), &total, one, one_seen, 1), 3);
    ASSERT_EQ_INT(one_seen[0], 1);
    ASSERT_EQ_U64(one[0].user, 1);
    free(b);
}

TEST(proc_stat_old_and_malformed)
{
    size_t len;
    char *buf = fixture_load(PARSE "stat-4fields", &len);
    struct cpu_ticks total, cores[4];
    uint8_t seen[4];
    ASSERT_EQ_INT(parse_proc_stat(buf, len, &total, cores, seen, 4), 1);
    ASSERT_EQ_U64(total.idle, 400);
    ASSERT_EQ_U64(total.iowait, 0);
    free(buf);

    ASSERT_EQ_INT(stat_total_str("", &total), -EINVAL);
    ASSERT_EQ_INT(stat_total_str("cpu", &total), -EINVAL);
    ASSERT_EQ_INT(stat_total_str("cpu  1 2 3\n", &total), -EINVAL);   /* fewer than 4 */
    ASSERT_EQ_INT(stat_total_str("cpu0 1 2 3 4\n", &total), -EINVAL); /* no total line */
    ASSERT_EQ_INT(stat_total_str("intr 1 2\ncpu  1 2 3 4\n", &total), -EINVAL);
    ASSERT_EQ_INT(stat_total_str("cpu  1 2 3 x\n", &total), -EINVAL);
    ASSERT_EQ_INT(stat_total_str("cpu  1 2 3 4\ncpu0 1 2\n", &total), -EINVAL);
    /* the fields of one line do not run on into the next */
    ASSERT_EQ_INT(stat_total_str("cpu  1 2\n3 4\n", &total), -EINVAL);
    ASSERT_EQ_INT(stat_total_str("cpu  1 2 3 4", &total), 0);
    ASSERT_EQ_U64(total.idle, 4);
    ASSERT_EQ_INT(stat_total_str("cpu  99999999999999999999 2 3 4\n", &total), -EINVAL);
}

/* ---- meminfo, vmstat ----------------------------------------------------- */

TEST(meminfo_fixture)
{
    size_t len;
    char *buf = fixture_load(PROC_A0 "meminfo", &len);
    struct meminfo mi;
    ASSERT_EQ_INT(parse_meminfo(buf, len, &mi), 0);
    ASSERT_EQ_U64(mi.total_bytes, UINT64_C(8000000) * 1024);
    ASSERT_EQ_U64(mi.free_bytes, UINT64_C(2000000) * 1024);
    ASSERT_EQ_U64(mi.available_bytes, UINT64_C(5000000) * 1024);
    ASSERT_EQ_U64(mi.buffers_bytes, UINT64_C(100000) * 1024);
    ASSERT_EQ_U64(mi.cached_bytes, UINT64_C(2500000) * 1024); /* not SwapCached */
    ASSERT_EQ_U64(mi.swap_total_bytes, UINT64_C(2097148) * 1024);
    ASSERT_EQ_U64(mi.swap_free_bytes, UINT64_C(2000000) * 1024);
    free(buf);
}

TEST(meminfo_without_memavailable)
{
    /* Linux 2.6.32 (RHEL 6) has no MemAvailable: free + buffers + cached */
    size_t len;
    char *buf = fixture_load(PARSE "meminfo-2.6.32", &len);
    struct meminfo mi;
    ASSERT_EQ_INT(parse_meminfo(buf, len, &mi), 0);
    ASSERT_EQ_U64(mi.total_bytes, UINT64_C(4046848) * 1024);
    ASSERT_EQ_U64(mi.available_bytes, (UINT64_C(512000) + 128000 + 1024000) * 1024);
    ASSERT_EQ_U64(mi.cached_bytes, UINT64_C(1024000) * 1024);
    ASSERT_EQ_U64(mi.swap_free_bytes, UINT64_C(2093056) * 1024);
    free(buf);
}

TEST(meminfo_malformed)
{
    struct meminfo mi;
    ASSERT_EQ_INT(meminfo_str("", &mi), -EINVAL);
    ASSERT_EQ_INT(meminfo_str("MemTotal: 100 kB\n", &mi), -EINVAL); /* no MemFree */
    ASSERT_EQ_INT(meminfo_str("MemFree: 100 kB\n", &mi), -EINVAL);  /* no MemTotal */
    ASSERT_EQ_INT(meminfo_str("MemTotal: abc kB\nMemFree: 1 kB\n", &mi), -EINVAL);
    ASSERT_EQ_INT(meminfo_str("MemTotal: 10 kB\nMemFree:", &mi), -EINVAL);
    ASSERT_EQ_INT(meminfo_str("MemTotal: 10 kB\nMemFree: 4 kB\nMemAvailable: x\n", &mi), -EINVAL);
    /* a key must start its line: "SwapCached:" is not "Cached:" */
    ASSERT_EQ_INT(meminfo_str("MemTotal: 10 kB\nMemFree: 4 kB\nSwapCached: 3 kB\n", &mi), 0);
    ASSERT_EQ_U64(mi.cached_bytes, 0);
    ASSERT_EQ_U64(mi.available_bytes, 4 * 1024);
    /* keys out of the usual order are still found */
    ASSERT_EQ_INT(meminfo_str("SwapTotal: 8 kB\nMemFree: 4 kB\nMemTotal: 10 kB", &mi), 0);
    ASSERT_EQ_U64(mi.total_bytes, 10 * 1024);
    ASSERT_EQ_U64(mi.swap_total_bytes, 8 * 1024);
}

TEST(vmstat_swap)
{
    size_t len;
    char *buf = fixture_load(PROC_A0 "vmstat", &len);
    uint64_t in = 0, out = 0;
    ASSERT_EQ_INT(parse_vmstat_swap(buf, len, &in, &out), 0);
    ASSERT_EQ_U64(in, 1000);
    ASSERT_EQ_U64(out, 2000);
    free(buf);
    const char *s = "pgpgin 5\npswpin 7\n";
    buf = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_vmstat_swap(buf, strlen(s), &in, &out), -EINVAL);
    free(buf);
    s = "pswpin x\npswpout 1\n";
    buf = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_vmstat_swap(buf, strlen(s), &in, &out), -EINVAL);
    free(buf);
}

/* ---- pressure ------------------------------------------------------------ */

TEST(psi_fixture_and_no_full_line)
{
    size_t len;
    uint64_t some, full;
    char *buf = fixture_load(PROC_A0 "pressure/io", &len);
    ASSERT_EQ_INT(parse_psi(buf, len, &some, &full), 0);
    ASSERT_EQ_U64(some, 3000000);
    ASSERT_EQ_U64(full, 2000000);
    free(buf);

    /* Linux 5.4's cpu file has no full line: full reads 0 */
    buf = fixture_load(PARSE "pressure-cpu-5.4", &len);
    full = 99;
    ASSERT_EQ_INT(parse_psi(buf, len, &some, &full), 0);
    ASSERT_EQ_U64(some, 157622356);
    ASSERT_EQ_U64(full, 0);
    free(buf);
}

TEST(psi_malformed)
{
    uint64_t some, full;
    ASSERT_EQ_INT(psi_str("", &some, &full), -EINVAL);
    ASSERT_EQ_INT(psi_str("full avg10=0.00 total=5\n", &some, &full), -EINVAL);
    ASSERT_EQ_INT(psi_str("some avg10=0.00 avg60=0.00 avg300=0.00\n", &some, &full), -EINVAL);
    ASSERT_EQ_INT(psi_str("some avg10=0.00 total=\n", &some, &full), -EINVAL);
    ASSERT_EQ_INT(psi_str("some total=1\nfull avg10=0.00 total=x\n", &some, &full), -EINVAL);
    /* the total of "some" is not looked for on the next line */
    ASSERT_EQ_INT(psi_str("some avg10=0.00\nfull total=3\n", &some, &full), -EINVAL);
    ASSERT_EQ_INT(psi_str("some total=12", &some, &full), 0);
    ASSERT_EQ_U64(some, 12);
    ASSERT_EQ_U64(full, 0);
}

/* ---- diskstats, net/dev -------------------------------------------------- */

TEST(diskstats_iteration)
{
    size_t len, pos = 0;
    char *buf = fixture_load(PROC_A0 "diskstats", &len);
    struct diskstat ds;
    int n, rc;
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 1);
    ASSERT_EQ_STR(ds.name, "loop0");
    ASSERT_EQ_U64(ds.reads, 0);
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 1);
    ASSERT_EQ_STR(ds.name, "loop1");
    ASSERT_EQ_U64(ds.reads, 52);
    ASSERT_EQ_U64(ds.sectors_read, 2080);
    ASSERT_EQ_U64(ds.io_ticks_ms, 12);
    /* 252 0 vda 64172 8320 5690666 76338 40375 15379 3303416 9576 0 11000 86696 ... */
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 1);
    ASSERT_EQ_STR(ds.name, "vda");
    ASSERT_EQ_U64(ds.reads, 64172);
    ASSERT_EQ_U64(ds.sectors_read, 5690666);
    ASSERT_EQ_U64(ds.writes, 40375);
    ASSERT_EQ_U64(ds.sectors_written, 3303416);
    ASSERT_EQ_U64(ds.io_ticks_ms, 11000);
    n = 3;
    while ((rc = parse_diskstats_next(buf, len, &pos, &ds)) == 1)
        n++;
    ASSERT_EQ_INT(rc, 0);
    ASSERT_EQ_INT(n, 6);
    ASSERT_EQ_STR(ds.name, "nvme0n1p1");
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 0); /* stays at the end */
    free(buf);

    /* Linux 4.15: 11 fields after the name */
    buf = fixture_load(PARSE "diskstats-4.15", &len);
    pos = 0;
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 1);
    ASSERT_EQ_STR(ds.name, "sda");
    ASSERT_EQ_U64(ds.sectors_written, 22170488);
    ASSERT_EQ_U64(ds.io_ticks_ms, 388108);
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 1);
    ASSERT_EQ_STR(ds.name, "sda1");
    ASSERT_EQ_INT(parse_diskstats_next(buf, len, &pos, &ds), 0);
    free(buf);
}

TEST(diskstats_malformed_lines_are_skipped)
{
    const char *s = "   8 0 sda 1 2 3 4 5 6 7 8 9 10\n" /* ten fields: short */
                    "   8 1\n"
                    "garbage\n"
                    "\n"
                    "   8 16 a_device_name_longer_than_thirty_one 1 0 8 0 2 0 16 0 0 3 0\n"
                    "   8 32 sdc 1 0 8 0 2 0 16 0 0 3 0 x\n"
                    "   8 48 sdd 5 0 40 0 6 0 48 0 0 7 7";
    size_t len = strlen(s), pos = 0, prev = 0;
    char *b = fixture_exact(s, len);
    struct diskstat ds;
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), -EINVAL);
    ASSERT(pos > prev);
    prev = pos;
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), -EINVAL);
    ASSERT(pos > prev);
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), -EINVAL);
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), -EINVAL); /* empty line */
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), 1);
    ASSERT_EQ_INT(strlen(ds.name), sizeof(ds.name) - 1); /* cut to fit */
    ASSERT(strncmp(ds.name, "a_device_name_longer_than_thirty_one", sizeof(ds.name) - 1) == 0);
    ASSERT_EQ_U64(ds.sectors_written, 16);
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), 1); /* "x" is field 12, unread */
    ASSERT_EQ_STR(ds.name, "sdc");
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), 1); /* no newline at the end */
    ASSERT_EQ_STR(ds.name, "sdd");
    ASSERT_EQ_U64(ds.io_ticks_ms, 7);
    ASSERT_EQ_INT(parse_diskstats_next(b, len, &pos, &ds), 0);
    free(b);
}

TEST(netdev_iteration)
{
    size_t len, pos = 0;
    char *buf = fixture_load(PROC_A0 "net/dev", &len);
    struct netdev nd;
    ASSERT_EQ_INT(parse_netdev_next(buf, len, &pos, &nd), 1);
    ASSERT_EQ_STR(nd.name, "lo");
    ASSERT_EQ_U64(nd.rx_bytes, 100000);
    ASSERT_EQ_U64(nd.tx_bytes, 100000);
    ASSERT_EQ_INT(parse_netdev_next(buf, len, &pos, &nd), 1);
    ASSERT_EQ_STR(nd.name, "eth0");
    ASSERT_EQ_U64(nd.rx_bytes, UINT64_C(5000000000));
    ASSERT_EQ_U64(nd.tx_bytes, 300000000);
    ASSERT_EQ_INT(parse_netdev_next(buf, len, &pos, &nd), 1);
    ASSERT_EQ_STR(nd.name, "docker0"); /* a 7-letter name leaves no blank before it */
    ASSERT_EQ_U64(nd.rx_bytes, 0);
    ASSERT_EQ_INT(parse_netdev_next(buf, len, &pos, &nd), 0);
    free(buf);

    /* headers only, or nothing at all */
    const char *s = "Inter-|   Receive |  Transmit\n face |bytes |bytes\n";
    char *b = fixture_exact(s, strlen(s));
    pos = 0;
    ASSERT_EQ_INT(parse_netdev_next(b, strlen(s), &pos, &nd), 0);
    free(b);
    b = fixture_exact("", 0);
    pos = 0;
    ASSERT_EQ_INT(parse_netdev_next(b, 0, &pos, &nd), 0);
    free(b);
}

TEST(netdev_malformed_lines_are_skipped)
{
    /* a line without a colon must fail on its own, not borrow the colon of
     * the next line */
    const char *s = "h1\nh2\n"
                    "  eth9 12 34\n"
                    "  eth1: 1 0 0 0 0 0 0 0 2 0 0 0 0 0 0 0\n"
                    "  eth2: 5 0 0\n"
                    "  eth3:7 0 0 0 0 0 0 0 8 0 0 0 0 0 0 0";
    size_t len = strlen(s), pos = 0;
    char *b = fixture_exact(s, len);
    struct netdev nd;
    ASSERT_EQ_INT(parse_netdev_next(b, len, &pos, &nd), -EINVAL);
    ASSERT_EQ_INT(parse_netdev_next(b, len, &pos, &nd), 1);
    ASSERT_EQ_STR(nd.name, "eth1");
    ASSERT_EQ_U64(nd.rx_bytes, 1);
    ASSERT_EQ_U64(nd.tx_bytes, 2);
    ASSERT_EQ_INT(parse_netdev_next(b, len, &pos, &nd), -EINVAL); /* too few fields */
    ASSERT_EQ_INT(parse_netdev_next(b, len, &pos, &nd), 1);       /* no blank after the colon */
    ASSERT_EQ_STR(nd.name, "eth3");
    ASSERT_EQ_U64(nd.rx_bytes, 7);
    ASSERT_EQ_U64(nd.tx_bytes, 8);
    ASSERT_EQ_INT(parse_netdev_next(b, len, &pos, &nd), 0);
    free(b);
}

/* ---- /proc/PID ------------------------------------------------------------ */

TEST(pid_stat_fixture)
{
    size_t len;
    struct pid_stat st;
    char *buf = fixture_load(PROC_A0 "4000/stat", &len);
    ASSERT_EQ_INT(parse_pid_stat(buf, len, &st), 0);
    ASSERT_EQ_STR(st.comm, "python");
    ASSERT_EQ_INT(st.state, 'S');
    ASSERT_EQ_INT(st.ppid, 3000);
    ASSERT_EQ_U64(st.utime, 500);
    ASSERT_EQ_U64(st.stime, 100);
    ASSERT_EQ_U64(st.cutime, 30);
    ASSERT_EQ_U64(st.cstime, 10);
    ASSERT_EQ_INT(st.num_threads, 3);
    ASSERT_EQ_U64(st.starttime, 100000);
    ASSERT_EQ_U64(st.rss_pages, 25000);
    free(buf);

    /* "4001 (a) b) c) S 4000 ...": the comm ends at the last ')' */
    buf = fixture_load(PROC_A0 "4001/stat", &len);
    ASSERT_EQ_INT(parse_pid_stat(buf, len, &st), 0);
    ASSERT_EQ_STR(st.comm, "a) b) c");
    ASSERT_EQ_INT(st.ppid, 4000);
    ASSERT_EQ_U64(st.utime, 200);
    ASSERT_EQ_U64(st.rss_pages, 5000);
    free(buf);

    /* "4002 ((worker (2) S": '(' inside starts at the first '(' */
    buf = fixture_load(PROC_A0 "4002/stat", &len);
    ASSERT_EQ_INT(parse_pid_stat(buf, len, &st), 0);
    ASSERT_EQ_STR(st.comm, "(worker (2");
    ASSERT_EQ_INT(st.num_threads, 2);
    free(buf);

    /* a comm of exactly 15 characters (TASK_COMM_LEN - 1) */
    buf = fixture_load(PROC_A0 "4003/stat", &len);
    ASSERT_EQ_INT(parse_pid_stat(buf, len, &st), 0);
    ASSERT_EQ_STR(st.comm, "dataloader_wrk0");
    ASSERT_EQ_INT(strlen(st.comm), 15);
    ASSERT_EQ_INT(st.state, 'R');
    free(buf);

    buf = fixture_load(PROC_A1 "4000/stat", &len);
    ASSERT_EQ_INT(parse_pid_stat(buf, len, &st), 0);
    ASSERT_EQ_U64(st.cutime, 52);
    ASSERT_EQ_U64(st.cstime, 21);
    free(buf);
}

TEST(pid_stat_comm_edge_cases)
{
    char line[512];
    struct pid_stat st;
    static const struct {
        const char *comm;
        const char *want;
    } cases[] = {
        {"a) b) c", "a) b) c"},
        {") S 9 9 9", ") S 9 9 9"}, /* a comm that looks like the fields after it */
        {"", ""},
        {" ", " "},
        {"((", "(("},
        {"))", "))"},
        {"x\ny", "x\ny"}, /* prctl(PR_SET_NAME) allows a newline */
        {"exactly15chars!", "exactly15chars!"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        make_stat_line(line, sizeof(line), cases[i].comm);
        ASSERT_EQ_INT(stat_str(line, &st), 0);
        ASSERT_EQ_STR(st.comm, cases[i].want);
        ASSERT_EQ_INT(st.state, 'S');
        ASSERT_EQ_INT(st.ppid, 1);
        ASSERT_EQ_U64(st.utime, 11);
        ASSERT_EQ_U64(st.stime, 22);
        ASSERT_EQ_U64(st.cutime, 33);
        ASSERT_EQ_U64(st.cstime, 44);
        ASSERT_EQ_INT(st.num_threads, 5);
        ASSERT_EQ_U64(st.starttime, 6666);
        ASSERT_EQ_U64(st.rss_pages, 777);
    }
    /* a comm longer than the field is cut, NUL-terminated */
    char longc[100];
    memset(longc, 'z', sizeof(longc) - 1);
    longc[sizeof(longc) - 1] = '\0';
    make_stat_line(line, sizeof(line), longc);
    ASSERT_EQ_INT(stat_str(line, &st), 0);
    ASSERT_EQ_INT(strlen(st.comm), sizeof(st.comm) - 1);
    ASSERT_EQ_U64(st.rss_pages, 777);
}

TEST(pid_stat_malformed)
{
    struct pid_stat st;
    char line[512];
    ASSERT_EQ_INT(stat_str("", &st), -EINVAL);
    ASSERT_EQ_INT(stat_str("1234", &st), -EINVAL);
    ASSERT_EQ_INT(stat_str("1234 (x", &st), -EINVAL);          /* no ')' */
    ASSERT_EQ_INT(stat_str("1234 x) S 1", &st), -EINVAL);      /* no '(' */
    ASSERT_EQ_INT(stat_str("1234 )x( S 1 2 3", &st), -EINVAL); /* ')' before '(' */
    ASSERT_EQ_INT(stat_str("1234 (x)", &st), -EINVAL);         /* nothing after */
    ASSERT_EQ_INT(stat_str("1234 (x) S", &st), -EINVAL);       /* no ppid */
    ASSERT_EQ_INT(stat_str("1234 (x) S 1 2 3 4 5 6 7 8", &st), -EINVAL);
    /* every field up to rss present but rss itself missing */
    ASSERT_EQ_INT(stat_str("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5 6", &st), -EINVAL);
    ASSERT_EQ_INT(stat_str("1 (x) S 1 1 1 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 5 6 7", &st), 0);
    ASSERT_EQ_U64(st.rss_pages, 7);
    /* a non-number where utime should be */
    ASSERT_EQ_INT(stat_str("1 (x) S 1 1 1 0 -1 0 0 0 0 0 u 2 3 4 20 0 1 0 5 6 7", &st), -EINVAL);
    /* negative cutime/cstime/rss (signed in the kernel) read as 0 */
    ASSERT_EQ_INT(stat_str("1 (x) Z 1 1 1 0 -1 0 0 0 0 0 1 2 -3 -4 20 0 1 0 5 6 -7", &st), 0);
    ASSERT_EQ_U64(st.cutime, 0);
    ASSERT_EQ_U64(st.cstime, 0);
    ASSERT_EQ_U64(st.rss_pages, 0);
    ASSERT_EQ_INT(st.state, 'Z');
    /* cut at every length: never a read past the end, never a crash */
    make_stat_line(line, sizeof(line), "a) b) c");
    size_t full = strlen(line);
    for (size_t n = 0; n < full; n++) {
        char *b = fixture_exact(line, n);
        int rc = parse_pid_stat(b, n, &st);
        ASSERT(rc == 0 || rc == -EINVAL);
        free(b);
    }
}

TEST(pid_io_and_status)
{
    size_t len;
    struct pid_io io;
    char *buf = fixture_load(PROC_A0 "4000/io", &len);
    ASSERT_EQ_INT(parse_pid_io(buf, len, &io), 0);
    ASSERT_EQ_U64(io.rchar, 10000000);
    ASSERT_EQ_U64(io.wchar, 2000000);
    ASSERT_EQ_U64(io.read_bytes, 4096000);
    ASSERT_EQ_U64(io.write_bytes, 1024000);
    ASSERT_EQ_U64(io.cancelled_write_bytes, 0);
    free(buf);
    const char *s = "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n";
    buf = fixture_exact(s, strlen(s)); /* no cancelled_write_bytes */
    ASSERT_EQ_INT(parse_pid_io(buf, strlen(s), &io), -EINVAL);
    free(buf);
    s = "rchar: 1\nwchar: x\n";
    buf = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_pid_io(buf, strlen(s), &io), -EINVAL);
    free(buf);
}

TEST(pid_rss_and_switches)
{
    size_t len;
    uint64_t v = 0;
    /* statm: "300000 25100 8366 5 0 50000 0", resident is the second field */
    char *buf = fixture_load(PROC_A0 "4000/statm", &len);
    ASSERT_EQ_INT(parse_pid_statm(buf, len, &v), 0);
    ASSERT_EQ_U64(v, 25100);
    free(buf);
    buf = fixture_exact("300000", 6);
    ASSERT_EQ_INT(parse_pid_statm(buf, 6, &v), -EINVAL);
    free(buf);
    buf = fixture_exact("", 0);
    ASSERT_EQ_INT(parse_pid_statm(buf, 0, &v), -EINVAL);
    free(buf);

    /* schedstat: "6000123456 90000000 1200": 90 ms waited, 1000 + 200 switches */
    uint64_t wait;
    buf = fixture_load(PROC_A0 "4000/schedstat", &len);
    ASSERT_EQ_INT(parse_pid_schedstat(buf, len, &wait, &v), 0);
    ASSERT_EQ_U64(wait, 90000000);
    ASSERT_EQ_U64(v, 1200);
    free(buf);
    buf = fixture_exact("6000123456 90000000", 19);
    ASSERT_EQ_INT(parse_pid_schedstat(buf, 19, &wait, &v), -EINVAL);
    free(buf);
    buf = fixture_exact("6000123456 90000000\n1200", 24); /* one line only */
    ASSERT_EQ_INT(parse_pid_schedstat(buf, 24, &wait, &v), -EINVAL);
    free(buf);
}

TEST(block_stat)
{
    size_t len;
    struct diskstat ds;
    snprintf(ds.name, sizeof(ds.name), "vda");
    char *buf = fixture_load("tests/data/proc-a/t1/sys/block/vda/stat", &len);
    ASSERT_EQ_INT(parse_block_stat(buf, len, &ds), 0);
    ASSERT_EQ_STR(ds.name, "vda"); /* left as it was */
    ASSERT_EQ_U64(ds.reads, 64172);
    ASSERT_EQ_U64(ds.sectors_read, 5692714);
    ASSERT_EQ_U64(ds.writes, 40375);
    ASSERT_EQ_U64(ds.sectors_written, 3307512);
    ASSERT_EQ_U64(ds.io_ticks_ms, 11250);
    free(buf);
    /* eleven fields (Linux 4.15) are enough, ten are not */
    const char *s = "1 2 3 4 5 6 7 8 9 10 11\n";
    buf = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_block_stat(buf, strlen(s), &ds), 0);
    ASSERT_EQ_U64(ds.io_ticks_ms, 10);
    free(buf);
    s = "1 2 3 4 5 6 7 8 9 10\n";
    buf = fixture_exact(s, strlen(s));
    ASSERT_EQ_INT(parse_block_stat(buf, strlen(s), &ds), -EINVAL);
    free(buf);
    buf = fixture_exact("", 0);
    ASSERT_EQ_INT(parse_block_stat(buf, 0, &ds), -EINVAL);
    free(buf);
}

TEST(pid_list)
{
    struct pids l;
    size_t len;
    char *buf = fixture_load(PROC_A0 "4000/task/4000/children", &len);
    memset(&l, 0, sizeof(l));
    ASSERT_EQ_INT(parse_pid_list(buf, len, collect_pid, &l), 3); /* "4001 4002 4008 " */
    ASSERT_EQ_INT(l.p[0], 4001);
    ASSERT_EQ_INT(l.p[1], 4002);
    ASSERT_EQ_INT(l.p[2], 4008);
    free(buf);
    buf = fixture_load(PROC_A0 "4000/task/4006/children", &len); /* empty file */
    memset(&l, 0, sizeof(l));
    ASSERT_EQ_INT(parse_pid_list(buf, len, collect_pid, &l), 0);
    free(buf);

    ASSERT_EQ_INT(pid_list_str("", &l), 0);
    ASSERT_EQ_INT(pid_list_str(" \n\t", &l), 0);
    ASSERT_EQ_INT(pid_list_str("3000\n4000\n", &l), 2); /* cgroup.procs: one per line */
    ASSERT_EQ_INT(l.p[1], 4000);
    ASSERT_EQ_INT(pid_list_str("12\t13", &l), 2);
    ASSERT_EQ_INT(pid_list_str("12 x", &l), -EINVAL);
    ASSERT_EQ_INT(pid_list_str("0", &l), -EINVAL);
    ASSERT_EQ_INT(pid_list_str("-5", &l), -EINVAL);
    ASSERT_EQ_INT(pid_list_str("1073741823", &l), 1); /* PID_MAX_LIMIT is 2^22; 2^30-1 passes */
    ASSERT_EQ_INT(pid_list_str("1073741824", &l), -EINVAL);
    ASSERT_EQ_INT(pid_list_str("99999999999999999999999", &l), -EINVAL);
}

static int cpus_str(const char *s, uint32_t *cpus, uint32_t max, uint32_t *n)
{
    char *buf = fixture_exact(s, strlen(s));
    int rc = parse_cpu_list(buf, strlen(s), cpus, max, n);
    free(buf);
    return rc;
}

TEST(cpu_list)
{
    uint32_t c[8], n = 0;
    ASSERT_EQ_INT(cpus_str("0-1\n", c, 8, &n), 0);
    ASSERT_EQ_INT(n, 2);
    ASSERT_EQ_INT(c[0], 0);
    ASSERT_EQ_INT(c[1], 1);
    ASSERT_EQ_INT(cpus_str("0", c, 8, &n), 0); /* one CPU, no newline */
    ASSERT_EQ_INT(n, 1);
    ASSERT_EQ_INT(cpus_str("0,2-4,7\n", c, 8, &n), 0); /* offline CPUs between */
    ASSERT_EQ_INT(n, 5);
    ASSERT_EQ_INT(c[1], 2);
    ASSERT_EQ_INT(c[3], 4);
    ASSERT_EQ_INT(c[4], 7);
    ASSERT_EQ_INT(cpus_str("1-8", c, 8, &n), 0); /* exactly max */
    ASSERT_EQ_INT(c[7], 8);
    ASSERT_EQ_INT(cpus_str("0-8", c, 8, &n), -E2BIG);
    ASSERT_EQ_INT(cpus_str("0-4000000000", c, 8, &n), -E2BIG); /* stops at max, not at the end */
    ASSERT_EQ_INT(cpus_str("", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("\n", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("3-1", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("2,1", c, 8, &n), -EINVAL);   /* not ascending */
    ASSERT_EQ_INT(cpus_str("0-2,2", c, 8, &n), -EINVAL); /* named twice */
    ASSERT_EQ_INT(cpus_str("0,", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("0-", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("0;1", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("x", c, 8, &n), -EINVAL);
    ASSERT_EQ_INT(cpus_str("4294967295", c, 8, &n), -EINVAL);
}

/* ---- cgroup files ---------------------------------------------------------- */

TEST(flat_key)
{
    size_t len;
    uint64_t v = 0;
    char *buf = fixture_load(
        "tests/data/cgroup-v2/t0/sys/fs/cgroup/system.slice/train.service/cpu.stat", &len);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "usage_usec", &v), 0);
    ASSERT_EQ_U64(v, 1000000);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "nr_throttled", &v), 0);
    ASSERT_EQ_U64(v, 20);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "throttled_usec", &v), 0);
    ASSERT_EQ_U64(v, 400000);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "burst_usec", &v), 0);
    ASSERT_EQ_U64(v, 0);
    /* v1's name is absent from v2's file */
    ASSERT_EQ_INT(parse_flat_key(buf, len, "throttled_time", &v), -ENOENT);
    /* a key is a whole word at the start of a line */
    ASSERT_EQ_INT(parse_flat_key(buf, len, "usage", &v), -ENOENT);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "throttled", &v), -ENOENT);
    free(buf);

    buf = fixture_load("tests/data/cgroup-v1/t0/sys/fs/cgroup/memory/docker/0123abcd/memory.stat",
                       &len);
    ASSERT_EQ_INT(parse_flat_key(buf, len, "hierarchical_memory_limit", &v), 0);
    ASSERT_EQ_U64(v, UINT64_C(2147483648));
    free(buf);

    ASSERT_EQ_INT(flat_str("", "nr_throttled", &v), -ENOENT);
    ASSERT_EQ_INT(flat_str("nr_throttled", "nr_throttled", &v), -ENOENT);
    ASSERT_EQ_INT(flat_str("nr_throttled x\n", "nr_throttled", &v), -EINVAL);
    ASSERT_EQ_INT(flat_str("nr_throttled ", "nr_throttled", &v), -EINVAL);
    ASSERT_EQ_INT(flat_str("a 1\nnr_throttled 7", "nr_throttled", &v), 0);
    ASSERT_EQ_U64(v, 7);
}

TEST(u64_or_max)
{
    uint64_t v = 0;
    ASSERT_EQ_INT(u64max_str("max\n", &v), 0);
    ASSERT_EQ_U64(v, UINT64_MAX);
    ASSERT_EQ_INT(u64max_str("9223372036854771712\n", &v), 0);
    ASSERT_EQ_U64(v, UINT64_C(9223372036854771712));
    ASSERT_EQ_INT(u64max_str("18446744073709551615", &v), 0);
    ASSERT_EQ_U64(v, UINT64_MAX);
    ASSERT_EQ_INT(u64max_str("0\n", &v), 0);
    ASSERT_EQ_U64(v, 0);
    ASSERT_EQ_INT(u64max_str("", &v), -EINVAL);
    ASSERT_EQ_INT(u64max_str("ma", &v), -EINVAL);
    ASSERT_EQ_INT(u64max_str("\n", &v), -EINVAL);
    ASSERT_EQ_INT(u64max_str("-1\n", &v), -EINVAL);
    ASSERT_EQ_INT(u64max_str("18446744073709551616", &v), -EINVAL); /* 2^64 */

    size_t len;
    char *buf = fixture_load(
        "tests/data/cgroup-v2/t1/sys/fs/cgroup/system.slice/train.service/memory.max", &len);
    ASSERT_EQ_INT(parse_u64_or_max(buf, len, &v), 0);
    ASSERT_EQ_U64(v, UINT64_C(6442450944));
    free(buf);
}

/* ---- every parser on every prefix and on noise ------------------------------ */

static void noop_pid(pid_t pid, void *arg)
{
    (void)pid;
    (void)arg;
}

/* Run every parser over buf[0..len); checks only the contract: the return
 * value is one of those documented and iterators move forward and stop. */
static void parse_everything(const char *buf, size_t len)
{
    struct cpu_ticks total, cores[4];
    uint8_t seen[4];
    int rc = parse_proc_stat(buf, len, &total, cores, seen, 4);
    ASSERT(rc >= 0 || rc == -EINVAL);
    struct meminfo mi;
    rc = parse_meminfo(buf, len, &mi);
    ASSERT(rc == 0 || rc == -EINVAL);
    uint64_t a, b;
    rc = parse_vmstat_swap(buf, len, &a, &b);
    ASSERT(rc == 0 || rc == -EINVAL);
    rc = parse_psi(buf, len, &a, &b);
    ASSERT(rc == 0 || rc == -EINVAL);
    size_t pos = 0, prev = 0;
    struct diskstat ds;
    while ((rc = parse_diskstats_next(buf, len, &pos, &ds)) != 0) {
        ASSERT(rc == 1 || rc == -EINVAL);
        ASSERT(pos > prev && pos <= len);
        prev = pos;
    }
    pos = prev = 0;
    struct netdev nd;
    while ((rc = parse_netdev_next(buf, len, &pos, &nd)) != 0) {
        ASSERT(rc == 1 || rc == -EINVAL);
        ASSERT(pos > prev && pos <= len);
        prev = pos;
    }
    struct pid_stat st;
    rc = parse_pid_stat(buf, len, &st);
    ASSERT(rc == 0 || rc == -EINVAL);
    struct pid_io io;
    rc = parse_pid_io(buf, len, &io);
    ASSERT(rc == 0 || rc == -EINVAL);
    rc = parse_pid_statm(buf, len, &a);
    ASSERT(rc == 0 || rc == -EINVAL);
    rc = parse_pid_schedstat(buf, len, &a, &a);
    ASSERT(rc == 0 || rc == -EINVAL);
    rc = parse_block_stat(buf, len, &ds);
    ASSERT(rc == 0 || rc == -EINVAL);
    rc = parse_pid_list(buf, len, noop_pid, NULL);
    ASSERT(rc >= 0 || rc == -EINVAL);
    rc = parse_flat_key(buf, len, "nr_throttled", &a);
    ASSERT(rc == 0 || rc == -EINVAL || rc == -ENOENT);
    rc = parse_u64_or_max(buf, len, &a);
    ASSERT(rc == 0 || rc == -EINVAL);
}

TEST(every_prefix_of_every_fixture)
{
    static const char *const files[] = {
        PROC_A0 "stat",
        PROC_A0 "meminfo",
        PROC_A0 "vmstat",
        PROC_A0 "pressure/cpu",
        PROC_A0 "diskstats",
        PROC_A0 "net/dev",
        PROC_A0 "4001/stat",
        PROC_A0 "4002/stat",
        PROC_A0 "4000/io",
        PROC_A0 "4000/status",
        PROC_A0 "self/mountinfo",
        PROC_A0 "4000/task/4000/children",
        PARSE "meminfo-2.6.32",
        PARSE "pressure-cpu-5.4",
        PARSE "diskstats-4.15",
        PROC_A0 "4000/statm",
        PROC_A0 "4000/schedstat",
        "tests/data/proc-a/t0/sys/block/vda/stat",
        "tests/data/cgroup-v2/t0/sys/fs/cgroup/system.slice/train.service/cpu.stat",
    };
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        size_t len;
        char *whole = fixture_load(files[f], &len);
        for (size_t n = 0; n <= len; n++) {
            char *b = fixture_exact(whole, n);
            parse_everything(b, n);
            free(b);
        }
        free(whole);
    }
}

TEST(random_noise)
{
    /* bytes drawn from the characters the parsers look for, so the noise
     * reaches deep into each of them */
    static const char alphabet[] = "0123456789 \t\n:()-=maxcputotalsomefull_kB";
    uint64_t s = 0x5eed;
    char tmp[256];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(rng_next(&s) % sizeof(tmp));
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&s);
            tmp[i] = (r & 0x300) ? alphabet[r % (sizeof(alphabet) - 1)] : (char)(r >> 16);
        }
        char *b = fixture_exact(tmp, n);
        parse_everything(b, n);
        free(b);
    }
}

/* ---- pfile: reading the whole file ---------------------------------------- */

static void write_file(const char *path, size_t n)
{
    FILE *f = fopen(path, "w");
    ASSERT(f);
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    fclose(f);
}

TEST(pfile_reads_files_of_every_size)
{
    char path[] = "/tmp/strobe-pfile-XXXXXX";
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    close(fd);
    static const size_t sizes[] = {0, 1, 1022, 1023, 1024, 3071, 3072, 3500, 4096, 10000, 70000};
    struct pfile f = PFILE_INIT;
    for (size_t k = 0; k < ARRAY_SIZE(sizes); k++) {
        write_file(path, sizes[k]);
        ASSERT_EQ_INT(0, pfile_open(&f, AT_FDCWD, path));
        ASSERT_EQ_INT(0, pfile_read(&f));
        ASSERT_EQ_U64(f.len, sizes[k]);
        for (size_t i = 0; i < f.len; i++)
            if (f.buf[i] != 'a' + (int)(i % 26))
                TEST_FAIL("byte %zu of %zu differs", i, f.len);
        ASSERT(f.buf[f.len] == '\0');
    }
    pfile_release(&f);
    unlink(path);
}

static void count_pid(pid_t pid, void *arg)
{
    (void)pid;
    (*(int *)arg)++;
}

/* A children list is printed pid by pid and comes one page per read, cut
 * short well before the buffer is full: the reader must go on past it. The
 * bug this guards against lost every child past the 820th. */
TEST(pfile_reads_a_children_list_longer_than_a_page)
{
    enum { KIDS = 1500 };
    static pid_t kids[KIDS];
    int n = 0;
    for (; n < KIDS; n++) {
        kids[n] = fork();
        if (kids[n] == 0) {
            pause();
            _exit(0);
        }
        if (kids[n] < 0)
            break;
    }
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
    struct pfile f = PFILE_INIT;
    int rc = pfile_read_once(&f, AT_FDCWD, path);
    int seen = 0;
    if (rc == 0)
        parse_pid_list(f.buf, f.len, count_pid, &seen);
    for (int i = 0; i < n; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    ASSERT_EQ_INT(n, KIDS);
    ASSERT_EQ_INT(0, rc);
    ASSERT(f.len > 4096);
    ASSERT_EQ_INT(seen, KIDS);
    pfile_release(&f);
}

TEST_MAIN(pfile_reads_files_of_every_size, pfile_reads_a_children_list_longer_than_a_page,
          proc_stat_fixture, proc_stat_total_vs_core_lines, proc_stat_old_and_malformed,
          meminfo_fixture, meminfo_without_memavailable, meminfo_malformed, vmstat_swap,
          psi_fixture_and_no_full_line, psi_malformed, diskstats_iteration,
          diskstats_malformed_lines_are_skipped, netdev_iteration,
          netdev_malformed_lines_are_skipped, pid_stat_fixture, pid_stat_comm_edge_cases,
          pid_stat_malformed, pid_io_and_status, pid_rss_and_switches, block_stat, pid_list,
          cpu_list, flat_key, u64_or_max, every_prefix_of_every_fixture, random_noise)
