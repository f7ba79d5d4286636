/*
 * strobe top's terminal (top_term.h).
 *
 * Raw mode is termios without ICANON and ECHO, and with ISIG kept, so ^C
 * and ^Z still reach us as signals. The terminal is given back on every
 * way out: top_term_leave() at the end and from atexit(); SIGINT, SIGTERM
 * and SIGHUP only set a flag, so the loop leaves by the same door; SIGTSTP
 * restores the terminal, stops, and on SIGCONT enters raw mode again.
 * What the handlers call (tcsetattr, write, raise, sigaction) is
 * async-signal-safe.
 *
 * Keys: ESC [ A..D and ESC O A..D are the arrows (xterm's normal and
 * application modes), ESC [ 5 ~ and 6 ~ the page keys. A lone ESC is the
 * Esc key when nothing follows it within 50 ms.
 */
#include "cli/top_term.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#define ENTER_SCREEN "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"
#define LEAVE_SCREEN "\x1b[m\x1b[?25h\x1b[?1049l"
#define ESC_WAIT_MS  50

static struct termios saved;
static volatile sig_atomic_t raw_on, quit_asked, resized;
static unsigned char pending[64];
static size_t npending;

void top_term_write(const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(STDOUT_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return; /* the terminal went away: nothing left to draw on */
        buf += n;
        len -= (size_t)n;
    }
}

static void restore(void)
{
    if (!raw_on)
        return;
    top_term_write(LEAVE_SCREEN, sizeof(LEAVE_SCREEN) - 1);
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
    raw_on = 0;
}

static int make_raw(void)
{
    struct termios raw = saved;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
    raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) < 0)
        return -errno;
    raw_on = 1;
    top_term_write(ENTER_SCREEN, sizeof(ENTER_SCREEN) - 1);
    return 0;
}

static void on_quit(int sig)
{
    quit_asked = sig;
}

static void on_winch(int sig)
{
    (void)sig;
    resized = 1;
}

static void set_handler(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL); /* no SA_RESTART: poll() wakes up */
}

/* ^Z: the shell gets its terminal back while we are stopped. */
static void on_tstp(int sig)
{
    int was_raw = raw_on, saved_errno = errno;
    restore();
    set_handler(SIGTSTP, SIG_DFL);
    raise(sig); /* stops here until SIGCONT */
    set_handler(SIGTSTP, on_tstp);
    if (was_raw)
        make_raw();
    resized = 1; /* redraw the whole screen */
    errno = saved_errno;
}

int top_term_enter(void)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
        return -ENOTTY;
    if (tcgetattr(STDIN_FILENO, &saved) < 0)
        return -errno;
    static int registered;
    if (!registered && atexit(restore) == 0)
        registered = 1;
    set_handler(SIGINT, on_quit);
    set_handler(SIGTERM, on_quit);
    set_handler(SIGHUP, on_quit);
    set_handler(SIGWINCH, on_winch);
    set_handler(SIGTSTP, on_tstp);
    return make_raw();
}

void top_term_leave(void)
{
    restore();
}

int top_term_quit(void)
{
    return quit_asked;
}

void top_term_die(void)
{
    int sig = quit_asked;
    if (!sig)
        return;
    set_handler(sig, SIG_DFL);
    raise(sig);
}

int top_term_resized(void)
{
    int r = resized;
    resized = 0;
    return r;
}

void top_term_size(int *cols, int *rows)
{
    struct winsize ws;
    *cols = 80;
    *rows = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
        *cols = ws.ws_col;
        *rows = ws.ws_row;
    }
}

/* Read what is there (up to the room left) into pending: 0, -EINTR. */
static int fill(int timeout_ms)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? -EINTR : 0;
    if (n == 0 || npending == sizeof(pending))
        return 0;
    ssize_t got = read(STDIN_FILENO, pending + npending, sizeof(pending) - npending);
    if (got < 0)
        return errno == EINTR ? -EINTR : 0;
    if (got == 0 && (p.revents & (POLLHUP | POLLERR)))
        quit_asked = SIGHUP; /* the terminal is gone */
    npending += (size_t)(got > 0 ? got : 0);
    return 0;
}

static void consume(size_t n)
{
    memmove(pending, pending + n, npending - n);
    npending -= n;
}

/* The key of an escape sequence at pending (after ESC), and its length. */
static int escape_key(size_t *len)
{
    static const struct {
        const char *seq;
        int key;
    } seqs[] = {
        {"[A", TOP_KEY_UP},    {"[B", TOP_KEY_DOWN},  {"[C", TOP_KEY_RIGHT}, {"[D", TOP_KEY_LEFT},
        {"OA", TOP_KEY_UP},    {"OB", TOP_KEY_DOWN},  {"OC", TOP_KEY_RIGHT}, {"OD", TOP_KEY_LEFT},
        {"[5~", TOP_KEY_PGUP}, {"[6~", TOP_KEY_PGDN},
    };
    for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
        size_t n = strlen(seqs[i].seq);
        if (npending >= 1 + n && memcmp(pending + 1, seqs[i].seq, n) == 0) {
            *len = 1 + n;
            return seqs[i].key;
        }
    }
    /* another sequence: skip it whole (ESC [ params final byte) */
    size_t n = 1;
    if (npending > 1 && (pending[1] == '[' || pending[1] == 'O')) {
        n = 2;
        while (n < npending && (pending[n] < 0x40 || pending[n] > 0x7e))
            n++;
        n = n < npending ? n + 1 : npending;
    }
    *len = n;
    return n == 1 ? TOP_KEY_ESC : TOP_KEY_NONE;
}

int top_term_key(int timeout_ms, int *key)
{
    *key = TOP_KEY_NONE;
    if (!npending) {
        int rc = fill(timeout_ms);
        if (rc < 0)
            return rc;
    }
    if (!npending)
        return 0;
    if (pending[0] == 0x1b && npending == 1)
        fill(ESC_WAIT_MS); /* the rest of a sequence, or a lone Esc */
    size_t len = 1;
    switch (pending[0]) {
    case 0x1b:
        *key = escape_key(&len);
        break;
    case '\r':
    case '\n':
        *key = TOP_KEY_ENTER;
        break;
    case 0x7f:
    case 0x08:
        *key = TOP_KEY_BACK;
        break;
    default:
        *key = pending[0];
    }
    consume(len);
    return 0;
}
