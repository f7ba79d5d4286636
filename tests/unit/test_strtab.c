/* The string table and its hash (common/strtab.c, common/hash.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/hash.h"
#include "common/strtab.h"
#include "test.h"

TEST(fnv1a_matches_the_published_vectors)
{
    ASSERT_EQ_U64(hash_fnv1a(HASH_FNV1A_INIT, "", 0), 0x811c9dc5u);
    ASSERT_EQ_U64(hash_fnv1a(HASH_FNV1A_INIT, "a", 1), 0xe40c292cu);
    ASSERT_EQ_U64(hash_fnv1a(HASH_FNV1A_INIT, "foobar", 6), 0xbf9cf968u);
    /* chained: the same as one call over the bytes */
    ASSERT_EQ_U64(hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, "foo", 3), "bar", 3), 0xbf9cf968u);
    ASSERT_EQ_U64(hash_fnv1a_str(HASH_FNV1A_INIT, "a"), hash_fnv1a(HASH_FNV1A_INIT, "a", 2));
    ASSERT(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV1A_INIT, "ab"), "c") !=
           hash_fnv1a_str(hash_fnv1a_str(HASH_FNV1A_INIT, "a"), "bc"));
}

TEST(intern_numbers_strings_in_order_first_seen)
{
    struct strtab t = {0};
    uint32_t i = 99;
    ASSERT_EQ_INT(strtab_intern(&t, "op:aten::addmm", 14, &i), 1);
    ASSERT_EQ_INT(i, 0);
    ASSERT_EQ_INT(strtab_intern(&t, "step", 4, &i), 1);
    ASSERT_EQ_INT(i, 1);
    ASSERT_EQ_INT(strtab_intern(&t, "op:aten::addmm", 14, &i), 0);
    ASSERT_EQ_INT(i, 0);
    ASSERT_EQ_INT(strtab_intern(&t, "stepped", 4, &i), 0); /* only len bytes count */
    ASSERT_EQ_INT(i, 1);
    ASSERT_EQ_INT(strtab_intern(&t, "ste", 3, &i), 1); /* a prefix is another string */
    ASSERT_EQ_INT(i, 2);
    ASSERT_EQ_INT(strtab_intern(&t, "", 0, &i), 1);
    ASSERT_EQ_INT(i, 3);
    ASSERT_EQ_INT(t.n, 4);
    ASSERT_EQ_STR(t.s[0], "op:aten::addmm");
    ASSERT_EQ_STR(t.s[1], "step");
    ASSERT_EQ_STR(t.s[2], "ste");
    ASSERT_EQ_STR(t.s[3], "");
    strtab_release(&t);
    ASSERT_EQ_INT(t.n, 0);
    strtab_release(&t); /* twice is fine */
}

TEST(intern_survives_growing_the_index)
{
    struct strtab t = {0};
    char name[32];
    uint32_t i;
    for (uint32_t k = 0; k < 5000; k++) {
        snprintf(name, sizeof(name), "name-%u", k);
        ASSERT_EQ_INT(strtab_intern(&t, name, strlen(name), &i), 1);
        ASSERT_EQ_INT(i, k);
    }
    ASSERT(t.nslots >= 2 * t.n);
    for (uint32_t k = 0; k < 5000; k++) {
        snprintf(name, sizeof(name), "name-%u", k);
        ASSERT_EQ_INT(strtab_intern(&t, name, strlen(name), &i), 0);
        ASSERT_EQ_INT(i, k);
    }
    strtab_release(&t);
}

TEST(a_full_table_still_finds_what_it_holds)
{
    struct strtab t = {.max = 2};
    uint32_t i;
    ASSERT_EQ_INT(strtab_intern(&t, "a", 1, &i), 1);
    ASSERT_EQ_INT(strtab_intern(&t, "b", 1, &i), 1);
    ASSERT_EQ_INT(strtab_intern(&t, "c", 1, &i), -ENOSPC);
    ASSERT_EQ_INT(strtab_intern(&t, "b", 1, &i), 0);
    ASSERT_EQ_INT(i, 1);
    ASSERT_EQ_INT(t.n, 2);
    strtab_release(&t);
    ASSERT_EQ_INT(t.max, 2); /* kept for reuse */
}

TEST_MAIN(fnv1a_matches_the_published_vectors, intern_numbers_strings_in_order_first_seen,
          intern_survives_growing_the_index, a_full_table_still_finds_what_it_holds)
