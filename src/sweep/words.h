/*
 * Command lines as words, without a shell: a sweep's command template and
 * a CSV's Params are split the way sh would split them (blanks between
 * words; '...' literal; "..." with \" \\ \$ \` escapes; \ outside quotes
 * takes the next character), then {key} placeholders are filled from the
 * run's parameters. No expansion of $VAR, globs or ~: a job's arguments
 * are what the file says.
 */
#ifndef STROBE_SWEEP_WORDS_H
#define STROBE_SWEEP_WORDS_H

#include <stddef.h>

#include "common/strbuf.h"
#include "store/store.h"

struct words {
    char **v;    /* n words, NULL-terminated */
    size_t **at; /* at[i][k]: where byte k of word i stands in the text,
                    quotes and backslashes counted (k up to its length) */
    size_t n;
};

/* Split text into w (release with words_release, also after a failure).
 * -1 with the reason in why on an unclosed quote or a trailing backslash. */
int words_split(const char *text, struct words *w, struct strbuf *why);
void words_release(struct words *w);

/* Where character at of word i of w, split from text, came from: its
 * offset in text, past the quotes and backslashes that wrote the word. */
size_t words_source_offset(const char *text, const struct words *w, size_t i, size_t at);

/*
 * word with each {key} replaced by its value in first, else in second
 * (either may be NULL); "{{" and "}}" are literal braces. Into out (reset
 * first). -1 with the reason in why and *bad_at the offset in word of the
 * placeholder that no list has, or of an unclosed brace.
 */
int words_substitute(const char *word, const struct kv_list *first, const struct kv_list *second,
                     struct strbuf *out, struct strbuf *why, size_t *bad_at);

#endif
