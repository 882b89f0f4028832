/* saboteur_softmax_test.c: the harness tests itself, on softmax. Each broken
 * kernel of tests/saboteur_softmax.c runs through the same path as every real
 * backend (prepare the case from cases/ and golden/, poison, run, check) and
 * must fail with the right diagnosis, while the reference passes the same case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void skipping_the_max_subtraction_overflows_near_1e4(void **state)
{
    (void)state;
    /* exp(1e4) is inf in f32 and f64 alike: inf / inf */
    kcs_test_expect_caught("softmax/f32-near-1e4", "no-max-subtraction", "got NaN");
    kcs_test_expect_caught("softmax/f64-near-1e4", "no-max-subtraction", "got NaN");
    /* exp(-1e4) is 0: 0 / 0 */
    kcs_test_expect_caught("softmax/f32-near-minus-1e4", "no-max-subtraction", "got NaN");
}

static void computing_the_last_row_from_the_row_before_fails(void **state)
{
    (void)state;
    /* 65 rows of 33: the last row starts at element 64 * 33 = 2112 */
    kcs_test_expect_caught("softmax/f32-cols33", "last-row-off-by-one", "y[2112]");
    kcs_test_expect_caught("softmax/f64-cols33", "last-row-off-by-one", "y[2112]");
    kcs_test_expect_caught("softmax/f32-cols1000", "last-row-off-by-one", "times the bound");
}

static void a_row_sum_one_element_short_fails(void **state)
{
    (void)state;
    /* the dropped element is a share of its row's sum far above the bound */
    kcs_test_expect_caught("softmax/f32-cols33", "sum-one-element-short", "times the bound");
    kcs_test_expect_caught("softmax/f64-cols33", "sum-one-element-short", "times the bound");
    kcs_test_expect_caught("softmax/f32-cols1000", "sum-one-element-short", "times the bound");
    kcs_test_expect_caught("softmax/f64-cols1000", "sum-one-element-short", "times the bound");
}

static void a_merge_that_lets_an_empty_piece_in_fails_the_attention_cases(void **state)
{
    (void)state;
    /* a causal mask over 64 columns empties work-items and lanes of every
     * variant that runs 64 columns; the CUDA online kernel starts at 108 */
    const char *short_rows[] = {"empty-piece-opencl-group-registers", "empty-piece-opencl-group-online",
                                "empty-piece-cuda-warp-groups", "empty-piece-cuda-warp-staged",
                                "empty-piece-cuda-block-resident"};
    for (size_t v = 0; v < sizeof short_rows / sizeof short_rows[0]; v++) {
        kcs_test_expect_caught("softmax/f32-causal-64", short_rows[v], "got NaN");
        kcs_test_expect_caught("softmax/f64-one-entry-64", short_rows[v], "got NaN");
    }
    kcs_test_expect_caught("softmax/f32-causal-1000", "empty-piece-cuda-online", "got NaN");
    kcs_test_expect_caught("softmax/f64-masked-start-1000", "empty-piece-cuda-online", "got NaN");
    /* cpu-rows' blocks of 2048 empty only in the long rows */
    kcs_test_expect_caught("softmax/f32-causal-20000", "empty-piece-opencl-cpu-rows", "got NaN");
    kcs_test_expect_caught("softmax/f32-one-entry-4097", "empty-piece-opencl-cpu-rows", "got NaN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(skipping_the_max_subtraction_overflows_near_1e4),
        cmocka_unit_test(computing_the_last_row_from_the_row_before_fails),
        cmocka_unit_test(a_row_sum_one_element_short_fails),
        cmocka_unit_test(a_merge_that_lets_an_empty_piece_in_fails_the_attention_cases),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
