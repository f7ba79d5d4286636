/*
 * strobe ctl RUN REQUEST: ask a running run's recorder, through its Unix
 * socket (record/control.c says where it is and what it answers), to show
 * its job's Python stacks, open a profiling window, change its interval, or
 * keep a tag or a note. One request, one reply, a 5 s bound.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "record/control.h"
#include "store/job.h"

/* Exit statuses besides cli.h's: why the request never reached a recorder. */
#define CTL_EXIT_NOT_RECORDING 3 /* the run has ended (or its recorder is lost) */
#define CTL_EXIT_OTHER_HOST    4 /* it records on another machine */
#define CTL_EXIT_NO_ANSWER     5 /* no socket, or nobody answers on it */

#define CTL_TIMEOUT_MS 5000
#define CTL_REPLY_MAX  (4u << 20)

static const struct cli_usage ctl_usage = {
    "ctl",
    "usage: strobe ctl [--store S] RUN stacks | torch-profile N | py-profile N |\n"
    "                  py-sample RATE | interval DUR | tag K=V | note TEXT\n",
    "Asks the recorder of a running run, on this machine, as its own user:\n"
    "  stacks          each thread's Python stack now\n"
    "  torch-profile N torch.profiler over the job's next N steps (imported at the end)\n"
    "  py-profile N    Python stacks sampled over the next N steps\n"
    "  py-sample RATE  Python sampling from now on: Hz (100), a period (10ms) or off\n"
    "  interval DUR    the metrics interval from now on, 1ms to 60s\n"
    "  tag K=V         a tag of the run, added or replaced\n"
    "  note TEXT       a timestamped note kept with the run (strobe show)\n"
    "Options go before RUN. Exit 3: the run is not recording; 4: it records on\n"
    "another host; 5: its recorder does not answer; 1: it refused the request.\n",
    -1,
    CLI_PARSE_STOP_AT_OPERAND,
};

/* The request line: the words after RUN, one space apart. */
static int build_request(char **args, int n, struct strbuf *out)
{
    for (int i = 0; i < n; i++) {
        if (strchr(args[i], '\n') || strchr(args[i], '\r')) {
            log_error("ctl: a request is one line: no newline in '%s'", args[0]);
            return -1;
        }
        strbuf_addf(out, "%s%s", i ? " " : "", args[i]);
    }
    strbuf_addch(out, '\n');
    if (out->len > CONTROL_LINE_MAX) {
        log_error("ctl: the request is longer than %d bytes", CONTROL_LINE_MAX);
        return -1;
    }
    return strbuf_failed(out) ? -1 : 0;
}

/* The run must be recording, here. CLI_EXIT_OK or an exit status after one line. */
static int check_run(const struct run_record *r)
{
    const char *status = run_record_status(r);
    if (run_record_is_job(r)) {
        log_error("run %s is a job of several nodes: run strobe ctl on a node's run", r->id);
        return CLI_EXIT_ERROR;
    }
    if (strcmp(status, RUN_RUNNING) != 0) {
        log_error("run %s is not recording: it is %s", r->id, status);
        return CTL_EXIT_NOT_RECORDING;
    }
    struct utsname u;
    if (r->host && uname(&u) == 0 && strcmp(u.nodename, r->host) != 0) {
        log_error("run %s records on host %s: run strobe ctl there", r->id, r->host);
        return CTL_EXIT_OTHER_HOST;
    }
    return CLI_EXIT_OK;
}

/* Connect to the run's socket, in each directory it may be in: an fd, or
 * -errno of the last try. */
static int connect_run(const char *run_id)
{
    char dir[200];
    int err = -ENOENT;
    for (int i = 0; control_dir(i, dir, sizeof(dir)) == 0; i++) {
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir, run_id);
        if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
            continue;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
        err = -errno;
        close(fd);
    }
    return err;
}

/* Send the request and read the reply to its end within the bound. */
static int exchange(int fd, const struct strbuf *req, struct strbuf *reply)
{
    int64_t deadline = clock_monotonic_ns() + CTL_TIMEOUT_MS * NS_PER_MS;
    if (send(fd, req->buf, req->len, MSG_NOSIGNAL) != (ssize_t)req->len)
        return -errno;
    for (;;) {
        int64_t left_ms = (deadline - clock_monotonic_ns()) / NS_PER_MS;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = left_ms > 0 ? poll(&p, 1, (int)left_ms) : 0;
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return rc < 0 ? -errno : -ETIMEDOUT;
        char buf[65536];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        if (reply->len + (size_t)n > CTL_REPLY_MAX || strbuf_add(reply, buf, (size_t)n) < 0)
            return -EMSGSIZE;
    }
}

/* "ok", "ok: text" or "error: text" into stdout or one error line. */
static int print_reply(const struct run_record *r, const struct strbuf *reply)
{
    const char *t = reply->len ? reply->buf : "";
    if (strncmp(t, "ok", 2) == 0 && (t[2] == '\n' || t[2] == ':' || !t[2])) {
        const char *rest = t[2] == ':' ? t + 3 + (t[3] == ' ') : t[2] ? t + 3 : t + 2;
        fputs(rest, stdout);
        return CLI_EXIT_OK;
    }
    const char *why = strncmp(t, "error: ", 7) == 0 ? t + 7 : t;
    int len = (int)strcspn(why, "\n");
    if (!len) {
        log_error("run %s's recorder closed the connection without an answer", r->id);
        return CTL_EXIT_NO_ANSWER;
    }
    log_error("run %s: %.*s", r->id, len, why);
    return CLI_EXIT_ERROR;
}

int cmd_ctl(struct cli_ctx *cli, int argc, char **argv)
{
    const struct cli_option opts[] = {CLI_OPT_END};
    int status = cli_parse(cli, &ctl_usage, opts, argc, argv);
    if (status >= 0)
        return status;
    if (cli->nargs < 2)
        return cli_usage_error(cli, &ctl_usage, opts);
    struct strbuf req, reply;
    strbuf_init(&req);
    strbuf_init(&reply);
    if (build_request(cli->args + 1, cli->nargs - 1, &req) < 0) {
        strbuf_release(&req);
        return CLI_EXIT_USAGE;
    }
    status = cli_open(cli);
    if (status < 0)
        status = check_run(&cli->run);
    if (status == CLI_EXIT_OK) {
        const struct run_record *r = &cli->run;
        int fd = connect_run(r->id);
        int rc = fd < 0 ? fd : exchange(fd, &req, &reply);
        if (fd >= 0)
            close(fd);
        if (rc < 0) {
            log_error("run %s's recorder does not answer: %s", r->id,
                      fd == -ENOENT ? "no control socket (its recorder runs as another user, "
                                      "or predates strobe ctl)"
                                    : strerror(-rc));
            status = CTL_EXIT_NO_ANSWER;
        } else {
            status = print_reply(r, &reply);
        }
    }
    strbuf_release(&req);
    strbuf_release(&reply);
    return status;
}
