/* Command-line options as data (options.h): getopt_long driven by a table. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli/options.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/strbuf.h"

#define LONG_ONLY_VAL 256 /* getopt's val of an option with no letter: this + its index */
#define HELP_COLUMN   24  /* where the help text starts, unless the option is wider */

static const struct cli_option help_option = CLI_OPT_FLAG('h', "help", NULL, "this help");

/* The options of every table in order, --help last; their count. */
static int collect(const struct cli_option *const *opts, const struct cli_option **all)
{
    int n = 0;
    for (; *opts; opts++)
        for (const struct cli_option *o = *opts; o->type != CLI_OPTION_END; o++)
            if (n < CLI_MAX_OPTIONS)
                all[n++] = o;
    all[n++] = &help_option;
    return n;
}

const char *cli_option_name(const struct cli_option *opt, char *buf, size_t cap)
{
    if (opt->long_name)
        snprintf(buf, cap, "--%s", opt->long_name);
    else
        snprintf(buf, cap, "-%c", opt->short_name);
    return buf;
}

static int option_val(const struct cli_option *const *all, int i)
{
    return all[i]->short_name ? all[i]->short_name : LONG_ONLY_VAL + i;
}

/* getopt_long's table and short-option string for all[0..n). */
static void build_getopt(const struct cli_option *const *all, int n, unsigned flags,
                         struct option *longopts, char *shortopts)
{
    int nl = 0;
    char *s = shortopts;
    if (flags & CLI_PARSE_STOP_AT_OPERAND)
        *s++ = '+';
    for (int i = 0; i < n; i++) {
        int has_arg = all[i]->arg_name ? required_argument : no_argument;
        if (all[i]->long_name)
            longopts[nl++] = (struct option){all[i]->long_name, has_arg, NULL, option_val(all, i)};
        if (all[i]->short_name) {
            *s++ = (char)all[i]->short_name;
            if (has_arg == required_argument)
                *s++ = ':';
        }
    }
    longopts[nl] = (struct option){NULL, 0, NULL, 0};
    *s = '\0';
}

/* The long option arg ("--name" or "--name=value") names, as getopt_long
 * reads it (the whole name, or a prefix of it); *matches counts them. */
static const struct option *long_option_named(const struct option *opts, const char *arg,
                                              int *matches)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    const struct option *found = NULL;
    *matches = 0;
    for (const struct option *o = opts; o->name; o++) {
        if (strncmp(o->name, name, len) != 0)
            continue;
        if (!o->name[len]) {
            *matches = 1;
            return o;
        }
        found = o;
        (*matches)++;
    }
    return found;
}

/* Why getopt_long refused the option it last read: an unknown or ambiguous
 * long option leaves optopt 0; a long one with a missing or unwanted
 * argument leaves its val, a short one its letter. argv[optind - 1] is the
 * long option's word; a short letter may sit inside a cluster (-qz), so it
 * is named from optopt. */
static void option_error(const char *cmd, char **argv, const char *shortopts,
                         const struct option *opts)
{
    const char *word = argv[optind - 1];
    int matches = 0;
    const struct option *o =
        strncmp(word, "--", 2) == 0 ? long_option_named(opts, word, &matches) : NULL;
    const char *before = "unrecognized option"; /* "<before> 'opt'" */
    const char *after = NULL;                   /* or "option 'opt' <after>" */
    char opt[128];
    if (!optopt) {
        snprintf(opt, sizeof(opt), "%.*s", (int)strcspn(word, "="), word);
        if (matches > 1)
            before = "ambiguous option";
    } else if (o && o->val == optopt) {
        snprintf(opt, sizeof(opt), "--%s", o->name); /* in full where a prefix was given */
        after = o->has_arg == required_argument ? "requires an argument" : "takes no argument";
    } else {
        const char *letter = strchr(shortopts, optopt);
        snprintf(opt, sizeof(opt), "-%c", optopt);
        if (letter && letter[1] == ':')
            after = "requires an argument";
    }
    struct strbuf shown;
    strbuf_init(&shown);
    strbuf_add_visible(&shown, opt);
    if (after)
        log_error("%s: option '%s' %s; see 'strobe %s --help'", cmd, shown.buf, after, cmd);
    else
        log_error("%s: %s '%s'; see 'strobe %s --help'", cmd, before, shown.buf, cmd);
    strbuf_release(&shown);
}

static int value_refused(const struct cli_option *opt, const char *arg)
{
    char name[64];
    log_error("%s wants %s (got '%s')", cli_option_name(opt, name, sizeof(name)), opt->wants, arg);
    return -1;
}

static int take_int(const struct cli_option *opt, const char *arg)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (errno || end == arg || *end || v < opt->min || v > opt->max)
        return value_refused(opt, arg);
    *(long *)opt->value = v;
    return 0;
}

static int take_duration(const struct cli_option *opt, const char *arg)
{
    int64_t ns;
    if (duration_parse(arg, &ns) < 0 || ns < opt->min || ns > opt->max)
        return value_refused(opt, arg);
    *(int64_t *)opt->value = ns;
    return 0;
}

static int take_list_item(const struct cli_option *opt, const char *arg)
{
    struct cli_list *l = opt->value;
    char name[64];
    if (l->n == l->max) {
        log_error("at most %d %s", l->max, cli_option_name(opt, name, sizeof(name)));
        return -1;
    }
    l->items[l->n++] = arg;
    l->items[l->n] = NULL;
    return 0;
}

/* Store arg (NULL for a flag) as opt's row says: 0, or -1 after saying why. */
static int take(const struct cli_option *opt, const char *arg)
{
    switch (opt->type) {
    case CLI_OPTION_FLAG:
        *(int *)opt->value = 1;
        return 0;
    case CLI_OPTION_STRING:
        *(const char **)opt->value = arg;
        return 0;
    case CLI_OPTION_INT:
        return take_int(opt, arg);
    case CLI_OPTION_DURATION:
        return take_duration(opt, arg);
    case CLI_OPTION_LIST:
        return take_list_item(opt, arg);
    case CLI_OPTION_CALLBACK:
        return opt->callback(opt, arg);
    case CLI_OPTION_END:
        break;
    }
    return -1;
}

static int option_index(const struct cli_option *const *all, int n, int val)
{
    for (int i = 0; i < n; i++)
        if (option_val(all, i) == val)
            return i;
    return -1;
}

int cli_parse_options(const struct cli_usage *u, const struct cli_option *const *opts, int argc,
                      char **argv)
{
    const struct cli_option *all[CLI_MAX_OPTIONS + 1];
    struct option longopts[CLI_MAX_OPTIONS + 2];
    char shortopts[3 * (CLI_MAX_OPTIONS + 1) + 2];
    int n = collect(opts, all), ch;
    build_getopt(all, n, u->flags, longopts, shortopts);
    optind = 1;
    opterr = 0; /* getopt's own message names neither strobe nor the command */
    while ((ch = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        int i = option_index(all, n, ch);
        if (i < 0) {
            option_error(u->cmd, argv, shortopts, longopts);
            return CLI_PARSE_ERROR;
        }
        if (all[i] == &help_option) {
            cli_print_help(stdout, u, opts);
            return CLI_PARSE_HELP;
        }
        if (take(all[i], optarg) < 0)
            return CLI_PARSE_ERROR;
    }
    return optind;
}

/* "  -e, --experiment E": an option's left column, into sb. */
static void option_left(struct strbuf *sb, const struct cli_option *o)
{
    strbuf_reset(sb);
    if (o->short_name && o->long_name)
        strbuf_addf(sb, "  -%c, --%s", o->short_name, o->long_name);
    else if (o->short_name)
        strbuf_addf(sb, "  -%c", o->short_name);
    else
        strbuf_addf(sb, "      --%s", o->long_name);
    if (o->arg_name)
        strbuf_addf(sb, " %s", o->arg_name);
}

static void print_option(FILE *out, struct strbuf *left, const struct cli_option *o)
{
    option_left(left, o);
    fputs(left->buf, out);
    const char *h = o->help ? o->help : "";
    int pad = HELP_COLUMN - (int)left->len;
    if (pad < 2 && *h) {
        fputc('\n', out); /* too wide: the help goes below, in its column */
        pad = HELP_COLUMN;
    }
    while (*h) {
        size_t len = strcspn(h, "\n");
        fprintf(out, "%*s%.*s\n", pad, "", (int)len, h);
        h += len + (h[len] == '\n');
        pad = HELP_COLUMN;
    }
    if (!o->help || !*o->help)
        fputc('\n', out);
}

void cli_print_help(FILE *out, const struct cli_usage *u, const struct cli_option *const *opts)
{
    const struct cli_option *all[CLI_MAX_OPTIONS + 1];
    int n = collect(opts, all);
    struct strbuf left;
    strbuf_init(&left);
    fprintf(out, "%s\noptions:\n", u->synopsis);
    for (int i = 0; i < n; i++)
        print_option(out, &left, all[i]);
    if (u->notes)
        fprintf(out, "\n%s", u->notes);
    strbuf_release(&left);
}
