/* Growing and sorting arrays (common/array.c). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/array.h"
#include "test.h"

static unsigned comparisons;

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    comparisons++;
    return (x > y) - (x < y);
}

TEST(sort_of_an_array_in_order_is_one_pass)
{
    int v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = i / 3; /* equal neighbours are in order too */
    comparisons = 0;
    array_sort(v, 1000, sizeof(*v), cmp_int);
    ASSERT_EQ_INT(comparisons, 999);
    for (int i = 0; i < 1000; i++)
        ASSERT_EQ_INT(v[i], i / 3);
}

TEST(sort_of_an_array_out_of_order_sorts_it)
{
    int v[1000];
    srand(7);
    for (int i = 0; i < 1000; i++)
        v[i] = rand() % 100;
    v[999] = -1; /* out of order only at the very end */
    array_sort(v, 1000, sizeof(*v), cmp_int);
    ASSERT_EQ_INT(v[0], -1);
    for (int i = 1; i < 1000; i++)
        ASSERT(v[i - 1] <= v[i]);
}

TEST(sort_of_nothing_or_one_compares_nothing)
{
    comparisons = 0;
    array_sort(NULL, 0, sizeof(int), cmp_int); /* qsort(NULL, 0) would be undefined */
    int one = 5;
    array_sort(&one, 1, sizeof(one), cmp_int);
    ASSERT_EQ_INT(comparisons, 0);
    ASSERT_EQ_INT(one, 5);
}

TEST(grow_doubles_from_first_and_keeps_the_contents)
{
    int *v = NULL;
    uint32_t cap = 0;
    ASSERT_EQ_INT(array_grow((void **)&v, &cap, 1, sizeof(*v), 16), 0);
    ASSERT_EQ_INT(cap, 16);
    for (int i = 0; i < 16; i++)
        v[i] = i;
    ASSERT_EQ_INT(array_grow((void **)&v, &cap, 40, sizeof(*v), 16), 0);
    ASSERT_EQ_INT(cap, 64);
    for (int i = 0; i < 16; i++)
        ASSERT_EQ_INT(v[i], i);
    ASSERT_EQ_INT(array_grow((void **)&v, &cap, 64, sizeof(*v), 16), 0); /* room already */
    ASSERT_EQ_INT(cap, 64);
    ASSERT_EQ_INT(array_grow((void **)&v, &cap, UINT32_MAX, sizeof(*v), 16), -ENOMEM);
    ASSERT_EQ_INT(cap, 64);
    free(v);
}

TEST_MAIN(sort_of_an_array_in_order_is_one_pass, sort_of_an_array_out_of_order_sorts_it,
          sort_of_nothing_or_one_compares_nothing, grow_doubles_from_first_and_keeps_the_contents)
