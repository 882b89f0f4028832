/* saboteur_elementwise_test.c: the harness tests itself, on add, mul, relu
 * and sigmoid. Each broken kernel of saboteur_elementwise.c must fail with
 * the right diagnosis, while the reference passes the same case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void adding_the_wrong_operand_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/add-f32-n93", "adds-x-to-itself", "times the bound");
    kcs_test_expect_caught("elementwise/add-f64-n7", "adds-x-to-itself", "times the bound");
}

static void flushing_subnormal_products_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/mul-f32-subnormal-results", "flushes-subnormals", "times the bound");
}

static void a_relu_that_passes_negatives_fails_and_says_so(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/relu-f32-n93", "passes-negatives", "copy of input x");
    kcs_test_expect_caught("elementwise/relu-f64-n1000003", "passes-negatives", "copy of input x");
}

static void a_relu_that_drops_nan_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/relu-f32-special", "fmax-zero", "expected NaN");
    kcs_test_expect_caught("elementwise/relu-f64-special", "fmax-zero", "expected NaN");
}

static void a_sigmoid_without_its_one_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/sigmoid-f32-n93", "drops-the-one", "times the bound");
    kcs_test_expect_caught("elementwise/sigmoid-f64-n1000003", "drops-the-one", "times the bound");
}

static void a_sigmoid_with_the_sign_flipped_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/sigmoid-f32-n7", "exp-sign-flipped", "times the bound");
    kcs_test_expect_caught("elementwise/sigmoid-f64-large", "exp-sign-flipped", "times the bound");
}

static void a_sigmoid_computed_in_the_16_bit_type_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/sigmoid-f16-n93", "computes-in-f16", "times the bound");
    kcs_test_expect_caught("elementwise/sigmoid-bf16-n1000003", "computes-in-bf16", "times the bound");
}

static void bf16_rounding_that_is_not_to_nearest_even_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/add-bf16-ties", "truncates-to-bf16", "times the bound");
    kcs_test_expect_caught("elementwise/add-bf16-ties", "rounds-ties-away", "times the bound");
    kcs_test_expect_caught("elementwise/mul-bf16-n93", "rounds-through-f16", "times the bound");
}

static void f16_overflow_and_underflow_must_be_ieee(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/add-f16-overflow-ties", "saturates-at-65504", "expected +inf, got 65504");
    kcs_test_expect_caught("elementwise/mul-f16-subnormal-results", "flushes-subnormals", "all zeros");
}

static void writing_half_the_output_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("elementwise/add-f32-n1000003", "writes-half", "never written");
    kcs_test_expect_caught("elementwise/mul-f64-n93", "writes-half", "never written");
    kcs_test_expect_caught("elementwise/relu-f32-n7", "writes-half", "never written");
    kcs_test_expect_caught("elementwise/sigmoid-f64-n7", "writes-half", "never written");
    kcs_test_expect_caught("elementwise/add-f16-n7", "writes-half", "never written");
    kcs_test_expect_caught("elementwise/relu-bf16-n93", "writes-half", "never written");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(adding_the_wrong_operand_fails),
        cmocka_unit_test(flushing_subnormal_products_fails),
        cmocka_unit_test(a_relu_that_passes_negatives_fails_and_says_so),
        cmocka_unit_test(a_relu_that_drops_nan_fails),
        cmocka_unit_test(a_sigmoid_without_its_one_fails),
        cmocka_unit_test(a_sigmoid_with_the_sign_flipped_fails),
        cmocka_unit_test(a_sigmoid_computed_in_the_16_bit_type_fails),
        cmocka_unit_test(bf16_rounding_that_is_not_to_nearest_even_fails),
        cmocka_unit_test(f16_overflow_and_underflow_must_be_ieee),
        cmocka_unit_test(writing_half_the_output_fails),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
