/* Comma-separated lists (common/strlist.c). */
#include <string.h>

#include "common/array.h"
#include "common/strbuf.h"
#include "common/strlist.h"
#include "test.h"

/* Each item in brackets, so empty ones show. */
static int bracket(const char *item, size_t len, void *arg)
{
    strbuf_addf(arg, "[%.*s]", (int)len, item);
    return 0;
}

static int stop_at_b(const char *item, size_t len, void *arg)
{
    (void)arg;
    return len == 1 && item[0] == 'b' ? 7 : 0;
}

/* strlist_each ends the list at a trailing comma; strlist_split counts
 * every comma, so "" is one empty item for it. */
TEST(each_item_in_order_empty_ones_too)
{
    static const struct {
        const char *list, *each, *split;
    } cases[] = {
        {"algo-1,algo-2", "[algo-1][algo-2]", "[algo-1][algo-2]"},
        {"a,,b,", "[a][][b]", "[a][][b][]"},
        {",a", "[][a]", "[][a]"},
        {"", "", "[]"},
    };
    struct strbuf b;
    strbuf_init(&b);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        strbuf_reset(&b);
        ASSERT_EQ_INT(strlist_each(cases[i].list, bracket, &b), 0);
        ASSERT_EQ_STR(b.buf, cases[i].each);
        strbuf_reset(&b);
        ASSERT_EQ_INT(strlist_split(cases[i].list, bracket, &b), 0);
        ASSERT_EQ_STR(b.buf, cases[i].split);
    }
    strbuf_release(&b);
}

TEST(each_stops_at_the_first_nonzero)
{
    ASSERT_EQ_INT(strlist_each("a,b,c", stop_at_b, NULL), 7);
    ASSERT_EQ_INT(strlist_each("a,c", stop_at_b, NULL), 0);
    ASSERT_EQ_INT(strlist_split("a,b,c", stop_at_b, NULL), 7);
    ASSERT_EQ_INT(strlist_split("a,c,", stop_at_b, NULL), 0);
}

TEST(has_matches_whole_items_only)
{
    ASSERT(strlist_has("algo-1,algo-2", "algo-2", 6));
    ASSERT(!strlist_has("algo-1,algo-2", "algo", 4));    /* a prefix */
    ASSERT(!strlist_has("algo-1,algo-20", "algo-2", 6)); /* a longer item */
    ASSERT(strlist_has("algo-1,algo-2x", "algo-2x", 6 + 1));
    ASSERT(!strlist_has("", "a", 1));
    ASSERT(strlist_has("a,,b", "", 0));
}

/* The bounded walk stops at len, whatever follows: a field of a line, with
 * no comma or NUL after its last item. */
TEST(each_n_reads_only_len_bytes)
{
    static const struct {
        const char *line;
        size_t len;
        const char *items;
    } cases[] = {
        {"rw,memory,cpu 0:1", 13, "[rw][memory][cpu]"},
        {"memory,cpuacct", 8, "[memory][c]"}, /* cut inside an item */
        {"a,,b,x", 5, "[a][][b]"},            /* a trailing comma ends it */
        {"cpu", 0, ""},
    };
    struct strbuf b;
    strbuf_init(&b);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        strbuf_reset(&b);
        ASSERT_EQ_INT(strlist_each_n(cases[i].line, cases[i].len, bracket, &b), 0);
        ASSERT_EQ_STR(b.buf, cases[i].items);
    }
    strbuf_release(&b);
    ASSERT_EQ_INT(strlist_each_n("a,b,c", 5, stop_at_b, NULL), 7);
    ASSERT_EQ_INT(strlist_each_n("a,b,c", 2, stop_at_b, NULL), 0);
}

TEST(has_n_matches_whole_items_within_len)
{
    const char *opts = "rw,cpu,cpuacct - cgroup";
    ASSERT(strlist_has_n(opts, 14, "cpu", 3));
    ASSERT(strlist_has_n(opts, 14, "cpuacct", 7));
    ASSERT(!strlist_has_n(opts, 13, "cpuacct", 7)); /* past len */
    ASSERT(strlist_has_n(opts, 13, "cpuacc", 6));   /* the item as len cuts it */
    ASSERT(!strlist_has_n(opts, 14, "memory", 6));
    ASSERT(!strlist_has_n(opts, 0, "rw", 2));
}

TEST(nth_counts_as_each_does)
{
    const char *list = "train,eval,,test";
    static const struct {
        size_t offset, len;
    } want[] = {{0, 5}, {6, 4}, {11, 0}, {12, 4}};
    size_t len = 99;
    for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
        ASSERT(strlist_nth(list, i, &len) == list + want[i].offset);
        ASSERT_EQ_INT(len, want[i].len);
    }
    ASSERT(strlist_nth(list, ARRAY_SIZE(want), &len) == NULL);
    ASSERT_EQ_INT(len, 0);
    ASSERT(strlist_nth("", 0, &len) == NULL);
}

static int pair_bracket(const char *key, size_t key_len, const char *value, size_t value_len,
                        void *arg)
{
    strbuf_addf(arg, "[%.*s|%.*s]", (int)key_len, key, (int)value_len, value);
    return 0;
}

static int stop_at_gpu(const char *key, size_t key_len, const char *value, size_t value_len,
                       void *arg)
{
    (void)value;
    (void)value_len;
    (void)arg;
    return key_len == 3 && memcmp(key, "gpu", 3) == 0 ? 5 : 0;
}

TEST(each_pair_splits_at_the_first_equals)
{
    struct strbuf b;
    strbuf_init(&b);
    ASSERT_EQ_INT(strlist_each_pair("node=a,bare,x=y=z,e=,=v", pair_bracket, &b), 0);
    ASSERT_EQ_STR(b.buf, "[node|a][x|y=z][e|][|v]"); /* "bare" has no '=' */
    strbuf_reset(&b);
    ASSERT_EQ_INT(strlist_each_pair("", pair_bracket, &b), 0);
    ASSERT_EQ_STR(b.buf, "");
    strbuf_release(&b);
    ASSERT_EQ_INT(strlist_each_pair("node=a,gpu=0,pid=1", stop_at_gpu, NULL), 5);
}

TEST(value_of_a_key)
{
    size_t len = 99;
    const char *labels = "gpu=0,node=algo-1,nodes=x,pid=";
    ASSERT(strlist_value(labels, "node", &len) == labels + 11);
    ASSERT_EQ_INT(len, 6);
    ASSERT(strlist_value(labels, "gpu", &len) == labels + 4);
    ASSERT_EQ_INT(len, 1);
    ASSERT(strlist_value(labels, "pid", &len) == labels + strlen(labels));
    ASSERT_EQ_INT(len, 0);
    ASSERT(strlist_value(labels, "no", &len) == NULL); /* a prefix of a key */
    ASSERT(strlist_value(labels, "core", &len) == NULL);
    ASSERT_EQ_INT(len, 0);
    ASSERT(strlist_value("a=1,a=2", "a", &len)[0] == '1'); /* the first one */
    ASSERT(strlist_value(NULL, "node", &len) == NULL);
}

TEST_MAIN(each_item_in_order_empty_ones_too, each_stops_at_the_first_nonzero,
          has_matches_whole_items_only, each_n_reads_only_len_bytes,
          has_n_matches_whole_items_within_len, nth_counts_as_each_does,
          each_pair_splits_at_the_first_equals, value_of_a_key)
