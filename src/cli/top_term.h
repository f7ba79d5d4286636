/*
 * The terminal of strobe top's live view: raw mode and the alternate
 * screen, given back however strobe top ends, and keys decoded from the
 * bytes a terminal sends.
 */
#ifndef STROBE_CLI_TOP_TERM_H
#define STROBE_CLI_TOP_TERM_H

#include <stddef.h>

/* Keys beyond the bytes themselves (which come as their own value). */
enum top_key {
    TOP_KEY_NONE = -1,
    TOP_KEY_UP = 0x100,
    TOP_KEY_DOWN,
    TOP_KEY_LEFT,
    TOP_KEY_RIGHT,
    TOP_KEY_PGUP,
    TOP_KEY_PGDN,
    TOP_KEY_ESC,
    TOP_KEY_ENTER,
    TOP_KEY_BACK, /* Backspace: 0x7f or ^H */
};

/* Enter raw mode on fd 0 and the alternate screen on fd 1, the cursor
 * hidden; SIGINT, SIGTERM and SIGHUP ask to quit, SIGWINCH to redraw,
 * SIGTSTP gives the terminal back until SIGCONT. 0, or -errno (not a
 * terminal) with nothing changed. */
int top_term_enter(void);
/* Give the terminal back as it was; again does nothing. Also at exit. */
void top_term_leave(void);
/* The signal that asked to quit (0: none), or whether the size changed
 * (cleared by asking). */
int top_term_quit(void);
/* After top_term_leave(): die of the signal that asked to quit, if one
 * did, as a shell expects of a program it sent SIGINT or SIGTERM. */
void top_term_die(void);
int top_term_resized(void);
/* The screen's size (80 x 24 when unknown). */
void top_term_size(int *cols, int *rows);
/* Wait up to timeout_ms for input; decode one key of what came into
 * *key (TOP_KEY_NONE when none). Returns 0, or -EINTR when a signal came. */
int top_term_key(int timeout_ms, int *key);
/* Write all of len bytes to fd 1. */
void top_term_write(const char *buf, size_t len);

#endif
