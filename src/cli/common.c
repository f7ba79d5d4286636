#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "cli/cli.h"
#include "common/clock.h"
#include "common/err.h"
#include "common/log.h"
#include "import/json.h"
#include "record/runinfo.h"
#include "rules/rules.h"

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

int cli_arg_redact(const char *arg, struct strbuf *out)
{
    /* --store=URI, and copy's --from=URI and --to=URI: a long option's
     * value after '=' (a value that is no URI stays as it is) */
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t prefix = eq ? (size_t)(eq + 1 - arg) : 0;
    strbuf_add(out, arg, prefix);
    return store_uri_redact(arg + prefix, out);
}

int cli_same_store(const struct store *a, const struct store *b)
{
    struct stat x, y;
    if (store_uri_is_postgres(a->uri) || store_uri_is_postgres(b->uri))
        return strcmp(a->uri, b->uri) == 0;
    return stat(a->uri, &x) == 0 && stat(b->uri, &y) == 0 && x.st_dev == y.st_dev &&
           x.st_ino == y.st_ino;
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

void cli_rules_init(struct cli_rules *r)
{
    memset(r, 0, sizeof(*r));
    r->param_list = (struct cli_list){r->params, 0, CLI_MAX_RULE_PARAMS};
}

int cli_rules_check(const struct cli_rules *r, struct rules_options *out)
{
    *out = (struct rules_options){r->interval_ns, r->rules, r->params};
    struct rules_run_info info = {0, 1, 0, "", 0};
    struct rules_engine *e = NULL;
    struct strbuf err;
    strbuf_init(&err);
    int rc = rules_engine_new(out, &info, &e, &err);
    if (rc < 0)
        log_error("%s", err.len ? err.buf : "out of memory");
    rules_engine_free(e);
    strbuf_release(&err);
    return rc;
}

int cli_run_name_option(const struct cli_option *opt, const char *arg)
{
    *(const char **)opt->value = arg;
    return cli_check_run_name(arg) < 0 ? -1 : 0;
}

int cli_group_name_option(const struct cli_option *opt, const char *arg)
{
    char what[64];
    *(const char **)opt->value = arg;
    snprintf(what, sizeof(what), "%s name", opt->long_name);
    return cli_check_text(what, arg) < 0 ? -1 : 0;
}

int cli_kv_option(const struct cli_option *opt, const char *arg)
{
    char flag[64];
    return cli_add_kv(opt->value, cli_option_name(opt, flag, sizeof(flag)), arg);
}

int cli_parse_steps(const char *arg, uint32_t *from, uint32_t *to)
{
    char *end;
    errno = 0;
    unsigned long a = strtoul(arg, &end, 10), b = a;
    if (end == arg || errno || *arg == '-')
        return -1;
    if (*end == '-') {
        const char *s = end + 1;
        b = strtoul(s, &end, 10);
        if (end == s || errno || *s == '-')
            return -1;
    }
    if (*end || a == 0 || b < a || b > UINT32_MAX)
        return -1;
    *from = (uint32_t)a;
    *to = (uint32_t)b;
    return 0;
}
