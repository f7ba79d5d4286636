/*
 * Command-line options as data, after git's parse-options.h: a command
 * declares each option once, in an array of struct cli_option ended by
 * CLI_OPT_END, and the one table gives the parsing, the --help text and the
 * error messages.
 *
 * Parsing is getopt_long's (a long option may be shortened to a unique
 * prefix, short letters cluster, options and operands mix unless
 * CLI_PARSE_STOP_AT_OPERAND): cli_parse_options() builds getopt_long's
 * table and short-option string from the array, then stores each value
 * where its row says. --help (and -h) come with every table.
 *
 * An option getopt refuses is one line in git's voice, "strobe: ls:
 * unrecognized option '--bogus'; see 'strobe ls --help'" (also "ambiguous
 * option", "option '--store' requires an argument", "option '--help' takes
 * no argument"). A value its row refuses is one line too: "<--name> wants
 * <wants> (got 'x')" for CLI_OPTION_INT and CLI_OPTION_DURATION, a
 * callback's own words otherwise. Parsing stops at the first error.
 *
 * --help prints the command's usage synopsis, then one line per option
 * ("  -e, --experiment E   help"), the help column aligned, then the notes.
 * An option whose help is NULL is still listed, with no help text.
 */
#ifndef STROBE_CLI_OPTIONS_H
#define STROBE_CLI_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

enum cli_option_type {
    CLI_OPTION_END,      /* ends the table */
    CLI_OPTION_FLAG,     /* int *value: set to 1; takes no argument */
    CLI_OPTION_STRING,   /* const char **value: the argument (argv's, not copied) */
    CLI_OPTION_INT,      /* long *value: a decimal whole number in min..max */
    CLI_OPTION_DURATION, /* int64_t *value: a duration (common/clock.h) in min..max ns */
    CLI_OPTION_LIST,     /* struct cli_list *value: the argument appended */
    CLI_OPTION_CALLBACK, /* callback(opt, arg), arg NULL without arg_name; value is its */
};

struct cli_option;
/* Take arg for opt: 0, or -1 after one line saying what is wrong. */
typedef int cli_option_fn(const struct cli_option *opt, const char *arg);

struct cli_option {
    enum cli_option_type type;
    const char *long_name; /* "experiment", or NULL for a letter only */
    int short_name;        /* 'e', or 0 */
    const char *arg_name;  /* "E" in --help; NULL: it takes no argument (a FLAG, a callback) */
    const char *help;      /* lines ('\n' between them) in --help's help column */
    void *value;           /* where the value goes, as the type says */
    cli_option_fn *callback;
    int64_t min, max;  /* INT and DURATION: the values taken */
    const char *wants; /* INT and DURATION: "a count of runs, 0 or more" */
};

/* A repeated option's arguments: items[0..n), NULL after the last; items
 * has room for max + 1. One past max is refused ("at most 64 --metric"). */
struct cli_list {
    const char **items;
    int n;
    int max;
};

/* A table's rows: CLI_OPT_<TYPE>(short letter, long name, &value, argument
 * name, help[, ...]), the table ended by CLI_OPT_END. */
#define CLI_OPT_ROW(type, s, l, v, a, h, fn, lo, hi, w)                                            \
    {                                                                                              \
        type, l, s, a, h, v, fn, lo, hi, w                                                         \
    }
#define CLI_OPT_END              CLI_OPT_ROW(CLI_OPTION_END, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL)
#define CLI_OPT_FLAG(s, l, v, h) CLI_OPT_ROW(CLI_OPTION_FLAG, s, l, v, NULL, h, NULL, 0, 0, NULL)
#define CLI_OPT_STRING(s, l, v, a, h)                                                              \
    CLI_OPT_ROW(CLI_OPTION_STRING, s, l, v, a, h, NULL, 0, 0, NULL)
#define CLI_OPT_INT(s, l, v, a, h, lo, hi, w)                                                      \
    CLI_OPT_ROW(CLI_OPTION_INT, s, l, v, a, h, NULL, lo, hi, w)
#define CLI_OPT_DURATION(s, l, v, a, h, lo, hi, w)                                                 \
    CLI_OPT_ROW(CLI_OPTION_DURATION, s, l, v, a, h, NULL, lo, hi, w)
#define CLI_OPT_LIST(s, l, v, a, h) CLI_OPT_ROW(CLI_OPTION_LIST, s, l, v, a, h, NULL, 0, 0, NULL)
#define CLI_OPT_CALLBACK(s, l, v, a, h, fn)                                                        \
    CLI_OPT_ROW(CLI_OPTION_CALLBACK, s, l, v, a, h, fn, 0, 0, NULL)

enum cli_parse_flags {
    CLI_PARSE_STOP_AT_OPERAND = 1 << 0, /* the first operand ends the options (strobe run's job) */
};

/* What --help and the error lines say of a command, and what it takes. */
struct cli_usage {
    const char *cmd;      /* "ls", "import sagemaker": in the error lines */
    const char *synopsis; /* "usage: strobe ls [--store S] ...\n", one or more lines */
    const char *notes;    /* printed after the options, or NULL */
    int operands;         /* how many operands it takes; -1: the command checks */
    unsigned flags;       /* enum cli_parse_flags */
};

/* What cli_parse_options() returns besides an operand's index. */
#define CLI_PARSE_HELP  (-1) /* --help: printed to stdout */
#define CLI_PARSE_ERROR (-2) /* a refused option or value: said in one line */

/* Parse argv[1..argc) by the tables opts[0], opts[1], ... (NULL-terminated:
 * a command's own and the shared groups it takes, as one list). Returns the
 * index of the first operand (argc when none), CLI_PARSE_HELP or
 * CLI_PARSE_ERROR. At most CLI_MAX_OPTIONS options in all. */
#define CLI_MAX_OPTIONS 48
int cli_parse_options(const struct cli_usage *u, const struct cli_option *const *opts, int argc,
                      char **argv);

/* The synopsis, the options and the notes, to out. */
void cli_print_help(FILE *out, const struct cli_usage *u, const struct cli_option *const *opts);

/* An option's name as the error lines give it: "--name", or "-n". */
const char *cli_option_name(const struct cli_option *opt, char *buf, size_t cap);

#endif
