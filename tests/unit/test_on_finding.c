/*
 * --on-finding's actions (record/on_finding.c): what RULE=ACTION parses
 * to and what it refuses, signal names, and that each option acts once per
 * rule, only while the job runs. The actions on real jobs (stop, exec) are
 * tests/integration/test_on_finding.py's.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/array.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "record/on_finding.h"

#include "test.h"

TEST(signals_by_name_and_number)
{
    static const struct {
        const char *name;
        int signo;
    } cases[] = {
        {"TERM", SIGTERM},
        {"SIGTERM", SIGTERM},
        {"usr1", SIGUSR1},
        {"SigUsr2", SIGUSR2},
        {"INT", SIGINT},
        {"15", SIGTERM},
        {"1", SIGHUP},
        {"0", -1},
        {"", -1},
        {"SIG", -1},
        {"BOGUS", -1},
        {"15x", -1},
        {"-15", -1},
        {"99999", -1},
        {"99999999999999999999", -1},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        ASSERT_EQ_INT(on_finding_signal(cases[i].name), cases[i].signo);
    ASSERT_EQ_INT(on_finding_signal("34"), 34 <= SIGRTMAX ? 34 : -1);
}

TEST(actions_parse)
{
    struct on_finding_spec s;
    struct strbuf why;
    strbuf_init(&why);
    ASSERT_EQ_INT(on_finding_parse("InputBound,StepOutlier=stop", &s, &why), 0);
    ASSERT_EQ_INT(s.kind, ON_FINDING_STOP);
    ASSERT(!s.any);
    ASSERT(on_finding_names(&s, "StepOutlier", 11));
    ASSERT(!on_finding_names(&s, "Straggler", 9));
    ASSERT_EQ_INT(on_finding_parse("*=signal:USR1", &s, &why), 0);
    ASSERT_EQ_INT(s.kind, ON_FINDING_SIGNAL);
    ASSERT_EQ_INT(s.signo, SIGUSR1);
    ASSERT(s.any && on_finding_names(&s, "Straggler", 9));
    /* the command is all after "exec:", '=' and ',' too */
    ASSERT_EQ_INT(on_finding_parse("all=exec:a=b, c", &s, &why), 0);
    ASSERT_EQ_INT(s.kind, ON_FINDING_EXEC);
    ASSERT_EQ_STR(s.cmd, "a=b, c");
    ASSERT(s.any);
    ASSERT_EQ_INT(why.len, 0);
    strbuf_release(&why);
}

TEST(bad_actions_say_why)
{
    static const struct {
        const char *arg, *why;
    } cases[] = {
        {"NoSuchRule=stop", "unknown rule 'NoSuchRule'"},
        {"InputBound,=stop", "ends with a comma"},
        {",InputBound=stop", "unknown rule ''"},
        {"InputBound", "is not RULE[,RULE]=ACTION"},
        {"=stop", "is not RULE[,RULE]=ACTION"},
        {"InputBound=", "is not an action"},
        {"InputBound=halt", "is not an action"},
        {"InputBound=exec:", "is not an action"},
        {"InputBound=signal:", "is not a signal"},
        {"InputBound=signal:NOPE", "'NOPE' is not a signal"},
        {"inputbound=stop", "unknown rule"}, /* names are as the table spells them */
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct on_finding_spec s;
        struct strbuf why;
        strbuf_init(&why);
        ASSERT_EQ_INT(on_finding_parse(cases[i].arg, &s, &why), -EINVAL);
        if (!strstr(why.buf, cases[i].why))
            TEST_FAIL("%s: '%s' lacks '%s'", cases[i].arg, why.buf, cases[i].why);
        strbuf_release(&why);
    }
}

static struct finding finding_of(const char *rule, const char *scope)
{
    struct finding f;
    memset(&f, 0, sizeof(f));
    snprintf(f.rule, sizeof(f.rule), "%s", rule);
    snprintf(f.scope, sizeof(f.scope), "%s", scope);
    f.severity = SEV_HIGH;
    return f;
}

/* Two options on one rule act once each per rule, whatever its scopes; a
 * rule neither names acts not; nothing acts before the job starts or after
 * it ended. SIGCONT to a live child is harmless and can be sent. */
TEST(each_option_acts_once_per_rule_while_the_job_runs)
{
    pid_t kid = fork();
    if (kid == 0) {
        pause();
        _exit(0);
    }
    static const char *const args[] = {"InputBound=signal:CONT", "*=signal:CONT", NULL};
    struct on_finding a;
    log_set_quiet(1); /* the notes of the actions */
    ASSERT_EQ_INT(on_finding_init(&a, args, ON_FINDING_GRACE_NS, NULL), 0);
    ASSERT_EQ_INT(a.nspec, 2);
    struct finding ib = finding_of("InputBound", "node"), ib2 = finding_of("InputBound", "rank=1");
    struct finding so = finding_of("StepOutlier", "node");
    on_finding_fire(&a, &ib); /* not started */
    ASSERT_EQ_INT(a.ntaken, 0);
    on_finding_start(&a, kid, "0123456789abcdef", 0);
    on_finding_fire(&a, &ib);
    on_finding_fire(&a, &ib2);
    ASSERT_EQ_INT(a.ntaken, 2);
    on_finding_fire(&a, &so);
    ASSERT_EQ_INT(a.ntaken, 3);
    ASSERT_EQ_INT(a.taken[2].spec, 1);
    ASSERT_EQ_STR(a.taken[2].rule, "StepOutlier");
    ASSERT(a.taken[0].ok && strstr(a.taken[0].result, "SIGCONT to pid") != NULL);
    ASSERT(!on_finding_stopped(&a));
    on_finding_job_ended(&a);
    struct finding late = finding_of("Straggler", "rank=0");
    on_finding_fire(&a, &late);
    ASSERT_EQ_INT(a.ntaken, 3);
    struct strbuf text;
    strbuf_init(&text);
    on_finding_text(&a, &text);
    ASSERT(strstr(text.buf, "\"rule\":\"StepOutlier\",\"severity\":\"high\",\"scope\":\"node\","
                            "\"action\":\"signal\"") != NULL);
    strbuf_release(&text);
    on_finding_release(&a);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
}

TEST_MAIN(signals_by_name_and_number, actions_parse, bad_actions_say_why,
          each_option_acts_once_per_rule_while_the_job_runs)
