#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "import/json.h"
#include "record/runinfo.h"

int cli_open_store(const char *flag, int readonly, struct store **out)
{
    struct strbuf err;
    strbuf_init(&err);
    int rc = store_open(store_default_uri(flag), readonly, out, &err);
    if (rc < 0)
        log_error("%s", err.buf);
    strbuf_release(&err);
    return rc;
}

const char *cli_visible(struct strbuf *sb, const char *s)
{
    strbuf_reset(sb);
    strbuf_add_visible(sb, s);
    return sb->buf;
}

void cli_put_visible(FILE *out, const char *s)
{
    struct strbuf sb;
    strbuf_init(&sb);
    fputs(cli_visible(&sb, s), out);
    strbuf_release(&sb);
}

/* A field out of the series meta JSON: a number as written, a string
 * decoded and made terminal-safe (a process names itself: comm may hold
 * anything but NUL), else "". */
void cli_meta_field(const char *meta, const char *key, char *out, size_t cap)
{
    struct json_doc d;
    struct json *root = NULL;
    json_doc_init(&d);
    out[0] = '\0';
    if (meta && json_parse(&d, meta, strlen(meta), &root) == 0) {
        const struct json *v = json_get(root, key);
        if (v && v->type == JSON_NUMBER) {
            snprintf(out, cap, "%s", v->str);
        } else if (json_str(v)) {
            struct strbuf sb;
            strbuf_init(&sb);
            snprintf(out, cap, "%s", cli_visible(&sb, json_str(v)));
            strbuf_release(&sb);
        }
    }
    json_doc_release(&d);
}

int cli_resolve(struct store *s, const char *ref, struct run_record *out)
{
    int rc = store_resolve_run(s, ref, out);
    if (rc == -STROBE_ENOTFOUND)
        log_error("no run '%s' in store '%s' (see 'strobe ls')", ref, s->uri);
    else if (rc == -STROBE_EAMBIGUOUS)
        log_error("run prefix '%s' matches several runs; give more of the id", ref);
    else if (rc < 0)
        log_error("cannot read store '%s': %s", s->uri, s->err.buf);
    return rc;
}

int cli_split_kv(const char *arg, char **key, char **value)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return -EINVAL;
    *key = strndup(arg, (size_t)(eq - arg));
    *value = strdup(eq + 1);
    if (!*key || !*value) {
        free(*key);
        free(*value);
        return -ENOMEM;
    }
    return 0;
}

int cli_check_text(const char *what, const char *text)
{
    struct strbuf why;
    strbuf_init(&why);
    int rc = runinfo_check_name(what, text, &why);
    if (rc < 0)
        log_error("invalid %s", why.buf);
    strbuf_release(&why);
    return rc;
}

int cli_check_run_name(const char *name)
{
    if (strcmp(name, RUN_REF_LAST) == 0) {
        log_error("run name '%s' is reserved: as RUN it means the newest run, so this run "
                  "would answer to its id only",
                  name);
        return -EINVAL;
    }
    return cli_check_text("run name", name);
}

int cli_add_kv(struct kv_list *l, const char *flag, const char *arg)
{
    char *k, *v;
    if (cli_split_kv(arg, &k, &v) < 0) {
        log_error("%s wants KEY=VALUE, got '%s'", flag, arg);
        return -1;
    }
    int rc = cli_check_text(flag, k) < 0 || cli_check_text(flag, v) < 0 ? -1 : kv_list_add(l, k, v);
    free(k);
    free(v);
    return rc;
}

int cli_rule_param_add(const char **params, int *n, const char *arg)
{
    if (*n == CLI_MAX_RULE_PARAMS) {
        log_error("at most %d --rule-param", CLI_MAX_RULE_PARAMS);
        return -1;
    }
    params[(*n)++] = arg;
    params[*n] = NULL;
    return 0;
}

int cli_rule_interval(const char *arg, int64_t *out_ns)
{
    /* shorter windows hold too few samples at the default 100 ms interval */
    if (duration_parse(arg, out_ns) < 0 || *out_ns < 100 * NS_PER_MS) {
        log_error("--rule-interval wants a duration of 100ms or more (got '%s')", arg);
        return -1;
    }
    return 0;
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
    cli_visible(&shown, opt);
    if (after)
        log_error("%s: option '%s' %s; see 'strobe %s --help'", cmd, shown.buf, after, cmd);
    else
        log_error("%s: %s '%s'; see 'strobe %s --help'", cmd, before, shown.buf, cmd);
    strbuf_release(&shown);
}

int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
               const struct option *opts)
{
    opterr = 0; /* getopt's own message names neither strobe nor the command */
    int ch = getopt_long(argc, argv, shortopts, opts, NULL);
    if (ch == '?')
        option_error(cmd, argv, shortopts, opts);
    return ch;
}

int cli_store_json_options(int argc, char **argv, const char *usage, const char **store_flag,
                           int *json, int *status)
{
    static const struct option opts[] = {
        {"store", required_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch;
    optind = 1;
    while ((ch = cli_getopt(argv[0], argc, argv, "jh", opts)) != -1) {
        if (ch == 's')
            *store_flag = optarg;
        else if (ch == 'j')
            *json = 1;
        else {
            if (ch == 'h')
                fputs(usage, stdout); /* else cli_getopt said why */
            *status = ch == 'h' ? CLI_EXIT_OK : CLI_EXIT_USAGE;
            return 1;
        }
    }
    return 0;
}
