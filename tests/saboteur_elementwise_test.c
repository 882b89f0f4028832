/* saboteur_elementwise_test.c: the harness tests itself, on add, mul, relu
 * and sigmoid. Each broken kernel of saboteur_elementwise.c must fail with
 * the right diagnosis, while the reference passes the same case, and the
 * failure must be explained by the arithmetic model the kernel implements,
 * or by none (docs/explaining.md). */
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

/* Every saboteur that implements an arithmetic model of its op (docs/elementwise.md,
 * "Arithmetic models") is explained by that model on every case of its
 * "kcs-saboteur-cases:" line where it fails, and on more; where another model
 * fits too, the case cannot tell the two apart (the test accepts that only
 * when explain.c finds their outputs within each other's bounds). */
static void a_conversion_to_16_bits_that_is_not_to_nearest_even_is_named(void **state)
{
    (void)state;
    kcs_test_expect_explained("elementwise/add-bf16-ties", "truncates-to-bf16", "add-truncates");
    kcs_test_expect_explained("elementwise/add-bf16-n93", "truncates-to-bf16", "add-truncates");
    kcs_test_expect_explained("elementwise/add-bf16-ties", "rounds-ties-away", "add-rounds-ties-away");
    kcs_test_expect_explained("elementwise/add-bf16-special", "rounds-ties-away", "add-rounds-ties-away");
    kcs_test_expect_explained("elementwise/mul-bf16-n93", "rounds-through-f16", "mul-rounds-through-f16");
    kcs_test_expect_explained("elementwise/mul-bf16-special", "rounds-through-f16", "mul-rounds-through-f16");
    /* products below f16's range through f16 are 0, as a flush makes them: both fit, with the same values */
    kcs_test_expect_explained("elementwise/mul-bf16-subnormal-results", "rounds-through-f16", "mul-rounds-through-f16");
    kcs_test_expect_explained("elementwise/add-f16-overflow", "saturates-at-65504", "add-saturates");
    /* every sum here is at or above 65504: truncation gives 65504 as saturation does */
    kcs_test_expect_explained("elementwise/add-f16-overflow-ties", "saturates-at-65504", "add-saturates");
    kcs_test_expect_explained("elementwise/add-f16-special", "saturates-at-65504", "add-saturates");
}

static void a_flush_of_subnormals_is_named(void **state)
{
    (void)state;
    kcs_test_expect_explained("elementwise/mul-f32-subnormal-results", "flushes-subnormals", "mul-flushes-subnormals");
    kcs_test_expect_explained("elementwise/mul-f32-special", "flushes-subnormals", "mul-flushes-subnormals");
    kcs_test_expect_explained("elementwise/mul-f16-subnormal-results", "flushes-subnormals", "mul-flushes-subnormals");
    kcs_test_expect_explained("elementwise/mul-f16-n1000003", "flushes-subnormals", "mul-flushes-subnormals");
}

static void a_sigmoid_computed_another_way_is_named(void **state)
{
    (void)state;
    kcs_test_expect_explained("elementwise/sigmoid-f16-n93", "computes-in-f16", "sigmoid-computes-in-storage-type");
    kcs_test_expect_explained("elementwise/sigmoid-f16-subnormal-results", "computes-in-f16",
                              "sigmoid-computes-in-storage-type");
    kcs_test_expect_explained("elementwise/sigmoid-bf16-n93", "computes-in-bf16", "sigmoid-computes-in-storage-type");
    kcs_test_expect_explained("elementwise/sigmoid-bf16-large", "computes-in-bf16", "sigmoid-computes-in-storage-type");
    kcs_test_expect_explained("elementwise/sigmoid-bf16-overflow-edge", "computes-in-bf16",
                              "sigmoid-computes-in-storage-type");
    /* through tanh: an absolute error of about u; 0 below x = -17 in float */
    kcs_test_expect_explained("elementwise/sigmoid-f64-n93", "through-tanh", "sigmoid-through-tanh");
    kcs_test_expect_explained("elementwise/sigmoid-f32-large", "through-tanh", "sigmoid-through-tanh");
    kcs_test_expect_explained("elementwise/sigmoid-f32-n93", "through-tanh", "sigmoid-through-tanh");
    kcs_test_expect_explained("elementwise/sigmoid-f16-n93", "through-tanh", "sigmoid-through-tanh");
    kcs_test_expect_explained("elementwise/sigmoid-bf16-large", "through-tanh", "sigmoid-through-tanh");
    kcs_test_expect_explained("elementwise/sigmoid-f16-subnormal-results", "through-tanh", "sigmoid-through-tanh");
    /* CUDA's fast math: an exp off by about 2u |x|, zeros below x = -87.3 */
    kcs_test_expect_explained("elementwise/sigmoid-f32-large", "fast-exp", "sigmoid-fast-exp");
    kcs_test_expect_explained("elementwise/sigmoid-f32-overflow-edge", "fast-exp", "sigmoid-fast-exp");
    kcs_test_expect_explained("elementwise/sigmoid-f32-n1000003", "fast-exp", "sigmoid-fast-exp");
    /* at x = -6 to -12 its error is below the tanh form's absolute u: both fit, same values */
    kcs_test_expect_explained("elementwise/sigmoid-f32-n93", "fast-exp", "sigmoid-fast-exp");
    /* in bf16 only its zeros fail, where sigmoid(x) is below 2^-126: a flush gives them too */
    kcs_test_expect_explained("elementwise/sigmoid-bf16-large", "fast-exp", "sigmoid-fast-exp");
}

static void mistakes_no_model_describes_are_unexplained(void **state)
{
    (void)state;
    kcs_test_expect_explained("elementwise/add-f64-n93", "adds-x-to-itself", NULL);
    kcs_test_expect_explained("elementwise/add-f32-special", "adds-x-to-itself", NULL);
    kcs_test_expect_explained("elementwise/relu-f32-special", "passes-negatives", NULL);
    kcs_test_expect_explained("elementwise/relu-f32-special", "fmax-zero", NULL);
    kcs_test_expect_explained("elementwise/sigmoid-f64-n93", "drops-the-one", NULL);
    kcs_test_expect_explained("elementwise/sigmoid-f32-large", "drops-the-one", NULL);
    kcs_test_expect_explained("elementwise/sigmoid-f64-n93", "exp-sign-flipped", NULL);
    kcs_test_expect_explained("elementwise/sigmoid-f32-large", "exp-sign-flipped", NULL);
    /* an unwritten element fits no model */
    const char *cases[] = {"elementwise/add-bf16-ties", "elementwise/add-f16-overflow", "elementwise/add-f64-n93",
                           "elementwise/mul-bf16-n93", "elementwise/mul-f16-subnormal-results",
                           "elementwise/mul-f32-subnormal-results", "elementwise/relu-f32-special",
                           "elementwise/sigmoid-bf16-large", "elementwise/sigmoid-f16-n93",
                           "elementwise/sigmoid-f32-large", "elementwise/sigmoid-f64-n93"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        kcs_test_expect_explained(cases[c], "writes-half", NULL);
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
        cmocka_unit_test(a_conversion_to_16_bits_that_is_not_to_nearest_even_is_named),
        cmocka_unit_test(a_flush_of_subnormals_is_named),
        cmocka_unit_test(a_sigmoid_computed_another_way_is_named),
        cmocka_unit_test(mistakes_no_model_describes_are_unexplained),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
