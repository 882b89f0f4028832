/* saboteur_sumsq_test.c: the harness tests itself, on sum of squares. Each deliberately broken
 * kernel of saboteur_backend.c is run through the same path as every real
 * backend (prepare the case from the case files and golden/, poison, run, check)
 * and must fail with the right diagnosis; the reference must pass the same
 * case, so the test fails if either the checker or the case goes wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void dropping_the_last_of_1e8_f64_elements_fails(void **state)
{
    (void)state;
    /* the last element of the ramp is 3e-8 of the sum; the bound is 2.3e-13 of it */
    kcs_test_expect_caught("sumsq/f64-n100000000", "drops-last-element", "times the bound");
}

static void dropping_the_last_of_a_million_f32_elements_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f32-n1000003", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/f64-n7", "drops-last-element", "times the bound");
}

static void accumulating_f64_in_f32_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n1000003", "accumulates-in-float", "times the bound");
    kcs_test_expect_caught("sumsq/f64-ramp-1000", "accumulates-in-float", "times the bound");
    kcs_test_expect_caught("sumsq/f32-n1000003", "accumulates-in-float", "times the bound");
}

static void accumulating_16_bit_input_in_its_own_type_fails(void **state)
{
    (void)state;
    /* an f16 running sum of squares in [-1/4, 1/4] stalls at 128 of about 21000 */
    kcs_test_expect_caught("sumsq/f16-n1000003", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-n1000003", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/f16-tenths", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-tenths", "accumulates-in-storage-type", "times the bound");
}

static void dropping_one_of_a_short_16_bit_sum_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f16-n93", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-n93", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/f16-sum-just-finite", "drops-last-element", "times the bound");
}

static void an_unwritten_output_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n7", "writes-nothing", "never written");
    kcs_test_expect_caught("sumsq/f32-nan", "writes-nothing", "never written"); /* poison is no computed NaN */
}

static void a_zero_answer_fails_and_says_so(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n93", "returns-zero", "all zeros");
}

static void a_modified_input_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n93", "overwrites-input", "input x was modified");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dropping_the_last_of_1e8_f64_elements_fails),
        cmocka_unit_test(dropping_the_last_of_a_million_f32_elements_fails),
        cmocka_unit_test(accumulating_f64_in_f32_fails),
        cmocka_unit_test(accumulating_16_bit_input_in_its_own_type_fails),
        cmocka_unit_test(dropping_one_of_a_short_16_bit_sum_fails),
        cmocka_unit_test(an_unwritten_output_fails),
        cmocka_unit_test(a_zero_answer_fails_and_says_so),
        cmocka_unit_test(a_modified_input_fails),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
