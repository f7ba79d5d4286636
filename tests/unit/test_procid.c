/*
 * Whether a run's recorder still lives (store/procid.h): the very process
 * named by pid and identity, not whatever has its pid now. A later start
 * time, another boot on the same host, a free pid and a zombie are gone;
 * another host cannot be told; a run recorded before the identity (no boot
 * id) keeps the old rule, pid and host alone. Other pid namespaces are
 * tested end to end (test_run_basics.py: unshare needs root).
 */
#include "store/procid.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define OTHER_BOOT_ID "00000000-0000-4000-8000-000000000000"

/* A pid that no process has: a child's, reaped. Pids are handed out in
 * turn, so it stays free for the few microseconds the test needs. */
static pid_t free_pid(void)
{
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        _exit(0);
    ASSERT_EQ_INT(waitpid(pid, NULL, 0), pid);
    return pid;
}

TEST(self_identity_is_read)
{
    struct procid me;
    procid_self(&me);
    ASSERT_EQ_INT(strlen(me.boot_id), PROCID_BOOT_ID_LEN);
    ASSERT(me.boot_id[8] == '-' && me.boot_id[13] == '-');
    ASSERT(me.pid_ns > 0);
    ASSERT(me.start_ticks >= 0);
    /* the same process, asked twice, is the same */
    struct procid again;
    procid_self(&again);
    ASSERT_EQ_STR(again.boot_id, me.boot_id);
    ASSERT_EQ_INT(again.pid_ns, me.pid_ns);
    ASSERT_EQ_INT(again.start_ticks, me.start_ticks);
}

TEST(live_process_is_alive)
{
    struct procid me;
    procid_self(&me);
    ASSERT_EQ_INT(procid_check(&me, getpid(), 1), PROCID_ALIVE);
    ASSERT_EQ_INT(procid_check(&me, getpid(), 0), PROCID_ALIVE); /* same kernel: host name aside */
}

TEST(pid_with_another_start_time_is_gone)
{
    /* pid reuse: the pid is alive, but it is a later process */
    struct procid me;
    procid_self(&me);
    me.start_ticks += 1;
    ASSERT_EQ_INT(procid_check(&me, getpid(), 1), PROCID_GONE);
}

TEST(free_pid_is_gone)
{
    struct procid me;
    procid_self(&me);
    ASSERT_EQ_INT(procid_check(&me, free_pid(), 1), PROCID_GONE);
}

TEST(zombie_is_gone)
{
    int up[2], down[2];
    ASSERT_EQ_INT(pipe(up), 0);
    ASSERT_EQ_INT(pipe(down), 0);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        struct procid child;
        procid_self(&child);
        close(down[1]); /* so that the parent's close is the end of the pipe */
        char c;
        if (write(up[1], &child, sizeof(child)) != (ssize_t)sizeof(child) ||
            read(down[0], &c, 1) < 0)
            _exit(1);
        _exit(0);
    }
    struct procid child;
    ASSERT_EQ_INT(read(up[0], &child, sizeof(child)), sizeof(child));
    ASSERT_EQ_INT(procid_check(&child, pid, 1), PROCID_ALIVE);
    close(down[1]); /* it exits; not reaped, it is a zombie */
    siginfo_t si;
    ASSERT_EQ_INT(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    ASSERT_EQ_INT(procid_check(&child, pid, 1), PROCID_GONE);
    ASSERT_EQ_INT(waitpid(pid, NULL, 0), pid);
}

TEST(another_boot_is_gone_on_the_same_host_only)
{
    struct procid me;
    procid_self(&me);
    memcpy(me.boot_id, OTHER_BOOT_ID, sizeof(OTHER_BOOT_ID));
    /* same host name, another boot: it has rebooted since, whatever has the pid now */
    ASSERT_EQ_INT(procid_check(&me, getpid(), 1), PROCID_GONE);
    /* another host: its own boot, nothing to tell from here */
    ASSERT_EQ_INT(procid_check(&me, getpid(), 0), PROCID_UNKNOWN);
}

TEST(no_identity_keeps_the_pid_rule)
{
    struct procid old = {"", 0, 0, -1}; /* a run recorded before schema 5 */
    ASSERT_EQ_INT(procid_check(&old, free_pid(), 1), PROCID_GONE);
    ASSERT_EQ_INT(procid_check(&old, free_pid(), 0), PROCID_UNKNOWN);
    /* a live pid may be anyone's: not gone, and not known alive either */
    ASSERT_EQ_INT(procid_check(&old, getpid(), 1), PROCID_UNKNOWN);
}

TEST_MAIN(self_identity_is_read, live_process_is_alive, pid_with_another_start_time_is_gone,
          free_pid_is_gone, zombie_is_gone, another_boot_is_gone_on_the_same_host_only,
          no_identity_keeps_the_pid_rule)
