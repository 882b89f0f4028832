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

/* Each saboteur that does what a model of docs/anneal.md ("Arithmetic
 * models") describes is explained by that model alone; the others are
 * unexplained. */
static void ties_to_the_largest_index_are_explained_as_such(void **state)
{
    (void)state;
    const char *cases[] = {"anneal/assign-f32-ties-integers", "anneal/assign-f16-ties-integers",
                           "anneal/assign-f32-all-anchors-equal", "anneal/assign-f32-ramp-midway"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "ties-to-largest", "assign-ties-to-largest");
}

static void f16_distances_are_explained_as_such(void **state)
{
    (void)state;
    const char *cases[] = {"anneal/assign-f32-small", "anneal/assign-f32-d7", "anneal/assign-f16-d13",
                           "anneal/assign-f32-d1", "anneal/assign-f32-ramp-on-anchors",
                           "anneal/assign-f16-extremes", "anneal/assign-f16-subnormals"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "f16-distances", "assign-f16-distances");
}

static void a_wrong_point_is_unexplained(void **state)
{
    (void)state;
    const char *cases[] = {"anneal/assign-f32-small", "anneal/assign-f16-d13", "anneal/assign-f32-ties-integers",
                           "anneal/assign-f32-ramp-on-anchors", "anneal/assign-f16-extremes"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "last-point-off-by-one", NULL);
}

static void variances_are_explained_by_their_formula(void **state)
{
    (void)state;
    kcs_test_expect_explained("anneal/reduce-f32-large-mean", "cancelling-variance", "reduce-textbook-variance");
    kcs_test_expect_explained("anneal/reduce-f16-one-anchor-constant", "cancelling-variance",
                              "reduce-textbook-variance");
    kcs_test_expect_explained("anneal/reduce-f32-many-anchors", "cancelling-variance", "reduce-textbook-variance");
    /* anchors of one point too: 0 / 0 */
    const char *cases[] = {"anneal/reduce-f32-small", "anneal/reduce-f32-d13", "anneal/reduce-f32-empty-anchors",
                           "anneal/reduce-f16-extremes", "anneal/reduce-f32-many-tiles",
                           "anneal/reduce-f32-many-anchors"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "sample-variance", "reduce-sample-variance");
}

static void update_mistakes_are_explained_or_not(void **state)
{
    (void)state;
    const char *cases[] = {"anneal/update-f32-basic", "anneal/update-f32-t0", "anneal/update-f32-all-empty",
                           "anneal/update-f32-1024x128"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kcs_test_expect_explained(cases[c], "forgets-temperature", "update-ignores-temperature");
        kcs_test_expect_explained(cases[c], "empty-keeps-velocity", NULL);
    }
    /* T = 1: the temperature model does not apply, and nothing else explains it */
    kcs_test_expect_explained("anneal/update-f32-mu0", "empty-keeps-velocity", NULL);
}

static void energy_divided_by_n_minus_1_is_explained_as_such(void **state)
{
    (void)state;
    const char *cases[] = {"anneal/energy-f32-n1000", "anneal/energy-f32-n1000000", "anneal/energy-f32-constant",
                           "anneal/energy-f32-ramp"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "divides-by-n-minus-1", "energy-divides-by-n-minus-1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ties_to_the_largest_index_fail_where_ties_are_exact),
        cmocka_unit_test(reading_the_wrong_last_point_fails),
        cmocka_unit_test(the_textbook_variance_fails_on_a_large_mean),
        cmocka_unit_test(update_mistakes_fail),
        cmocka_unit_test(energy_divided_by_n_minus_1_fails),
        cmocka_unit_test(ties_to_the_largest_index_are_explained_as_such),
        cmocka_unit_test(f16_distances_are_explained_as_such),
        cmocka_unit_test(a_wrong_point_is_unexplained),
        cmocka_unit_test(variances_are_explained_by_their_formula),
        cmocka_unit_test(update_mistakes_are_explained_or_not),
        cmocka_unit_test(energy_divided_by_n_minus_1_is_explained_as_such),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
