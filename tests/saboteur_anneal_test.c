/* saboteur_anneal_test.c: the harness tests itself, on the anneal steps. Each
 * broken kernel of tests/saboteur_anneal.c runs through the same path as every
 * real backend and must fail with the right diagnosis, while the reference
 * passes the same case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void ties_to_the_largest_index_fail_where_ties_are_exact(void **state)
{
    (void)state;
    kcs_test_expect_caught("anneal/assign-f32-ties-integers", "ties-to-largest",
                           "goes to the smallest index");
    kcs_test_expect_caught("anneal/assign-f16-ties-integers", "ties-to-largest",
                           "goes to the smallest index");
    kcs_test_expect_caught("anneal/assign-f32-all-anchors-equal", "ties-to-largest",
                           "idx[0]: expected anchor 0, got 7");
    kcs_test_expect_caught("anneal/assign-f32-ramp-midway", "ties-to-largest",
                           "goes to the smallest index");
}

static void reading_the_wrong_last_point_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("anneal/assign-f32-small", "last-point-off-by-one", "[99]");
    kcs_test_expect_caught("anneal/assign-f16-d13", "last-point-off-by-one", "[149]");
    /* the last point lies on the last anchor; the one before it does not */
    kcs_test_expect_caught("anneal/assign-f32-ramp-on-anchors", "last-point-off-by-one", "[39]");
}

static void the_textbook_variance_fails_on_a_large_mean(void **state)
{
    (void)state;
    kcs_test_expect_caught("anneal/reduce-f32-large-mean", "cancelling-variance",
                           "times the bound");
    kcs_test_expect_caught("anneal/reduce-f32-large-mean", "cancelling-variance", "var[");
}

static void update_mistakes_fail(void **state)
{
    (void)state;
    /* outputs are checked a_next first: an empty anchor's a_next moves by lr T (v - mu v) too */
    kcs_test_expect_caught("anneal/update-f32-basic", "empty-keeps-velocity", "times the bound");
    kcs_test_expect_caught("anneal/update-f32-all-empty", "empty-keeps-velocity",
                           "times the bound");
    kcs_test_expect_caught("anneal/update-f32-basic", "forgets-temperature", "a_next[");
    /* at T = 0 the anchors must stay exactly where they are */
    kcs_test_expect_caught("anneal/update-f32-t0", "forgets-temperature", "a_next[");
}

static void energy_divided_by_n_minus_1_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("anneal/energy-f32-n1000", "divides-by-n-minus-1", "times the bound");
    kcs_test_expect_caught("anneal/energy-f32-n1000000", "divides-by-n-minus-1", "times the bound");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ties_to_the_largest_index_fail_where_ties_are_exact),
        cmocka_unit_test(reading_the_wrong_last_point_fails),
        cmocka_unit_test(the_textbook_variance_fails_on_a_large_mean),
        cmocka_unit_test(update_mistakes_fail),
        cmocka_unit_test(energy_divided_by_n_minus_1_fails),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
