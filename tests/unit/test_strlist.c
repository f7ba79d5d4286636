/* Comma-separated lists (common/strlist.c). */
#include <string.h>

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

TEST(each_item_in_order_empty_ones_too)
{
    struct strbuf b;
    strbuf_init(&b);
    ASSERT_EQ_INT(strlist_each("algo-1,algo-2", bracket, &b), 0);
    ASSERT_EQ_STR(b.buf, "[algo-1][algo-2]");
    strbuf_reset(&b);
    ASSERT_EQ_INT(strlist_each("a,,b,", bracket, &b), 0);
    ASSERT_EQ_STR(b.buf, "[a][][b]"); /* a trailing comma ends the list */
    strbuf_reset(&b);
    ASSERT_EQ_INT(strlist_each("", bracket, &b), 0);
    ASSERT_EQ_STR(b.buf, "");
    strbuf_release(&b);
}

TEST(each_stops_at_the_first_nonzero)
{
    ASSERT_EQ_INT(strlist_each("a,b,c", stop_at_b, NULL), 7);
    ASSERT_EQ_INT(strlist_each("a,c", stop_at_b, NULL), 0);
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

TEST_MAIN(each_item_in_order_empty_ones_too, each_stops_at_the_first_nonzero,
          has_matches_whole_items_only)
