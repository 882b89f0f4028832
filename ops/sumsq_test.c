/* sumsq_test.c: the sum-of-squares oracle, closed form and bound
 * (docs/sumsq.md), on values whose answers are known exactly. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "accurate.h"
#include "check.h"
#include "explain.h"
#include "op.h"

extern const kcs_op kcs_op_sumsq;

static double oracle_of(kcs_dtype dtype, const void *x, size_t n)
{
    kcs_op_args args = {.op = "sumsq", .dtype = dtype, .sumsq = {.n = n}};
    double value, bound;
    kcs_expected e = {.count = 1, .values = &value, .bounds = &bound};
    void *inputs[1] = {(void *)x};
    assert_int_equal(kcs_op_sumsq.oracle(&args, inputs, &e, NULL), KCS_OK);
    return value;
}

static double bound_of(kcs_dtype dtype, size_t n, double expected)
{
    kcs_op_args args = {.op = "sumsq", .dtype = dtype, .sumsq = {.n = n}};
    double bound;
    kcs_expected e = {.count = 1, .values = &expected, .bounds = &bound};
    assert_int_equal(kcs_op_sumsq.bounds(&args, NULL, &e, NULL), KCS_OK);
    return bound;
}

static void oracle_is_exact_where_the_answer_is_known(void **state)
{
    (void)state;
    double pythagoras[2] = {3, -4};
    assert_true(oracle_of(KCS_F64, pythagoras, 2) == 25);
    assert_true(oracle_of(KCS_F64, pythagoras, 0) == 0);
    /* 1 + 3 * 2^-54 rounds up to 1 + 2^-52; summed left to right in double,
     * each 2^-54 is lost against 1 and the answer is 1. */
    double x[4] = {1.0, 0x1p-27, 0x1p-27, 0x1p-27};
    assert_true(oracle_of(KCS_F64, x, 4) == 1.0 + 0x1p-52);
    float f[3] = {3, 4, 12};
    assert_true(oracle_of(KCS_F32, f, 3) == 169);
}

static void oracle_handles_extremes(void **state)
{
    (void)state;
    double nan_and_inf[3] = {1, INFINITY, NAN};
    assert_true(isnan(oracle_of(KCS_F64, nan_and_inf, 3)));
    assert_true(oracle_of(KCS_F64, nan_and_inf, 2) == INFINITY);
    double big[2] = {1e200, 1e200};
    assert_true(oracle_of(KCS_F64, big, 2) == INFINITY);
    double just_finite[2] = {9e153, 9e153};
    assert_true(oracle_of(KCS_F64, just_finite, 2) == 2 * 9e153 * 9e153);
    double tiny[2] = {0x1p-600, 0x1p-600}; /* each square 2^-1200 underflows; the sum is 2^-1199: 0 */
    assert_true(oracle_of(KCS_F64, tiny, 2) == 0);
    double small[2] = {0x1p-520, 0x1p-520}; /* squares are subnormal: 2 * 2^-1040 = 2^-1039 */
    assert_true(oracle_of(KCS_F64, small, 2) == 0x1p-1039);
    float f32_big[1] = {2e19f}; /* 4e38 overflows float but not the f64 accumulator */
    assert_true(oracle_of(KCS_F32, f32_big, 1) == INFINITY);
    float f32_subnormal[1] = {0x1p-149f};
    assert_true(oracle_of(KCS_F32, f32_subnormal, 1) == 0x1p-298);
}

static void closed_form_agrees_with_the_oracle(void **state)
{
    (void)state;
    const char *text =
        "```kcs-case\ncase: r\nop: sumsq\ndtype: f64\nsizes: n=5001\ninput x: ramp start=-77 step=3\n"
        "expect: closed-form\n```\n";
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, NULL), KCS_OK);
    assert_int_equal(list.count, 1);
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    kcs_error err;
    assert_int_equal(kcs_op_prepare(&list.cases[0], &op, &args, &layout, &err), KCS_OK);
    double closed, bound;
    kcs_expected e = {.count = 1, .values = &closed, .bounds = &bound};
    assert_int_equal(op->closed_form(&list.cases[0], &args, &e, &err), KCS_OK);
    double x[5001];
    for (int i = 0; i < 5001; i++)
        x[i] = -77 + 3.0 * i;
    assert_true(oracle_of(KCS_F64, x, 5001) == closed);
    /* by hand: sum (a + 3i)^2 for i < n with a = -77 */
    long double check = 0;
    for (int i = 0; i < 5001; i++)
        check += (long double)x[i] * x[i];
    assert_true(closed == (double)check);
    kcs_case_list_free(&list);
}

static void closed_form_refuses_inexact_inputs(void **state)
{
    (void)state;
    const char *text =
        "```kcs-case\ncase: r\nop: sumsq\ndtype: f32\nsizes: n=100000000\ninput x: ramp start=1\n"
        "expect: closed-form\n```\n";
    kcs_case_list list = {0};
    kcs_parse_case_text(text, "t.md", &list, NULL);
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    kcs_error err;
    assert_int_equal(kcs_op_prepare(&list.cases[0], &op, &args, &layout, &err), KCS_OK);
    double closed, bound;
    kcs_expected e = {.count = 1, .values = &closed, .bounds = &bound};
    assert_int_equal(op->closed_form(&list.cases[0], &args, &e, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "exact in f32"));
    kcs_case_list_free(&list);
}

static void bound_follows_the_derivation(void **state)
{
    (void)state;
    double u = 0x1p-53, u32 = 0x1p-24;
    /* n = 3: D = 2, so (gamma_3 + 2u) s / (1 - u) + 3 * 2^-1074 */
    double gamma3 = 3 * u / (1 - 3 * u);
    double expected = ((gamma3 + 2 * u) * 25.0 / (1 - u) + 3 * 0x1p-1074) * (1 + 0x1p-40);
    assert_true(bound_of(KCS_F64, 3, 25.0) == expected);
    /* n = 10^8: D = 2048 + 27 */
    double s = 1e8;
    double depth = 2048 + 27, gamma_d1 = (depth + 1) * u / (1 - (depth + 1) * u);
    assert_true(fabs(bound_of(KCS_F64, 100000000, s) / (((gamma_d1 + 2 * u) * s / (1 - u) +
                                                          1e8 * 0x1p-1074) * (1 + 0x1p-40)) - 1) < 1e-15);
    /* f32: the final rounding to float dominates */
    double f32_bound = bound_of(KCS_F32, 1000, 1.0);
    assert_true(f32_bound > u32 && f32_bound < 1.1 * u32);
    assert_true(bound_of(KCS_F64, 0, 0.0) == 0);
    assert_true(bound_of(KCS_F64, 5, INFINITY) == 0);
}

static void bound_is_tight_enough_to_catch_a_dropped_element(void **state)
{
    (void)state;
    /* 10^8 f64 elements of similar size: one element is 1e-8 of the sum; the bound must be far below */
    assert_true(bound_of(KCS_F64, 100000000, 1.0) < 1e-3 * 1e-8);
    /* 10^6 f32 elements: one element is 1e-6 of the sum */
    assert_true(bound_of(KCS_F32, 1000003, 1.0) < 0.1 * 1e-6);
    /* a sum carried in f32 over 10^6 elements errs by far more than the f32 bound allows */
    assert_true(bound_of(KCS_F32, 1000003, 1.0) < 1e3 * 0x1p-24 * 0.01);
}

/* Issue 33: whole squares summing to 65519 (255^2 + 22^2 + 3^2 + 1^2), then
 * 600 squares of f16 0.044 (0.0019366 each, below half an f32 ulp at 65519):
 * summed in that order in f32, each term a depth the docs allow, the sum
 * stays 65519 and rounds to the finite 65504, while the exact sum,
 * 65520.16, is past f16's overflow threshold. The expected value stays
 * finite and both 65504 and +inf pass, as gemm's do; where even the lowest
 * f32 sum reaches 65520 (1024 eights: 65536, an f32 error of at most 4) the
 * answer is +inf and a saturated 65504 fails. */
static void an_f16_sum_just_past_65520_may_end_finite(void **state)
{
    (void)state;
    uint16_t x[604];
    double whole[4] = {255, 22, 3, 1};
    for (int i = 0; i < 604; i++)
        x[i] = kcs_f16_from_double(i < 4 ? whole[i] : 0.044);
    double g = oracle_of(KCS_F16, x, 604);
    assert_true(g > 65520.0 && g < 65520.2);
    double b = bound_of(KCS_F16, 604, g);
    double fraction = kcs_check_element(KCS_F16, g, b, 65504.0);
    assert_true(fraction > 0.45 && fraction < 0.5); /* 16.2 of 34.3 */
    assert_true(kcs_check_element(KCS_F16, g, b, INFINITY) <= 1.0);
    assert_true(kcs_check_element(KCS_F16, g, b, 65472.0) > 1.0); /* the f16 below 65504 is out */
    /* the f32 sum in index order is 65519, as the issue says */
    float sum = 0.0f;
    for (int i = 0; i < 604; i++) {
        float v = (float)kcs_f16_to_double(x[i]);
        sum += v * v;
    }
    assert_true(sum == 65519.0f && kcs_f16_to_double(kcs_f16_from_double(sum)) == 65504.0);

    uint16_t eights[1024];
    for (int i = 0; i < 1024; i++)
        eights[i] = kcs_f16_from_double(8.0);
    assert_true(oracle_of(KCS_F16, eights, 1024) == INFINITY);
    assert_true(bound_of(KCS_F16, 1024, INFINITY) == 0.0);
    assert_true(kcs_check_element(KCS_F16, INFINITY, 0.0, 65504.0) > 1.0);
    assert_true(oracle_of(KCS_F16, eights, 1000) == 64000.0);
}

/* kcs_rounded_sum (accurate.h), which the models' running sums use, rounds
 * once where the double sum would round twice. */
static void a_rounded_sum_rounds_once(void **state)
{
    (void)state;
    /* 1 + 2^-24 + 2^-60 is 1 + 2^-24 in double, an f32 midpoint: the rest says up */
    assert_true(kcs_rounded_sum(KCS_F32, 1.0, 0x1p-24 + 0x1p-60) == 1.0 + 0x1p-23);
    assert_true((float)(1.0 + (0x1p-24 + 0x1p-60)) == 1.0f);
    assert_true(kcs_rounded_sum(KCS_F32, 1.0, 0x1p-24 - 0x1p-60) == 1.0);
    assert_true(kcs_rounded_sum(KCS_F32, 1.0, 0x1p-24) == 1.0); /* an exact tie: to even */
    /* just below f16's overflow threshold, 65520, whose double is the threshold itself */
    assert_true(kcs_rounded_sum(KCS_F16, 65504.0, 16.0 - 0x1p-40) == 65504.0);
    assert_true(kcs_rounded_sum(KCS_F16, 65504.0, 16.0) == INFINITY);
    assert_true(kcs_rounded_sum(KCS_BF16, 256.0, 1.0 + 0x1p-45) == 258.0);
    assert_true(kcs_rounded_sum(KCS_BF16, 256.0, 1.0) == 256.0);
    /* the bit operations of kcs_rounded_to agree with dtype.h's conversions,
     * on ties, near the overflow threshold and below the smallest normal */
    uint64_t state_bits = 12345;
    for (int i = 0; i < 200000; i++) {
        state_bits = state_bits * 6364136223846793005ull + 1442695040888963407ull;
        double value = ldexp((double)(state_bits >> 11) * 0x1p-53 + 0.5, (int)(state_bits % 60) - 30);
        if (i % 3 == 0) { /* a tie of f16 or bf16: 12 or 9 significant bits, the last set */
            int kept = i % 2 ? 8 : 11, exponent = ilogb(value);
            value = ldexp(floor(ldexp(value, kept - 1 - exponent)) + 0.5, exponent - (kept - 1));
        }
        if (i % 5 == 0)
            value = -value;
        assert_true(kcs_rounded_to(KCS_F16, value) == kcs_f16_to_double(kcs_f16_from_double(value)));
        assert_true(kcs_rounded_to(KCS_BF16, value) == kcs_bf16_to_double(kcs_bf16_from_double(value)));
    }
    double edges[] = {65504.0, 65519.99, 65520.0, 65535.9, 0x1p-14, 0x1p-14 - 0x1p-40, 0x1.ffp127, 0x1.ff8p127,
                      0x1p-126, 0x1.0p-133, 0.0, -0.0};
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++) {
        assert_true(kcs_rounded_to(KCS_F16, edges[e]) == kcs_f16_to_double(kcs_f16_from_double(edges[e])));
        assert_true(kcs_rounded_to(KCS_BF16, edges[e]) == kcs_bf16_to_double(kcs_bf16_from_double(edges[e])));
    }
}

/* A model's value and bound on x[0..n) of dtype. */
static void model_of(const char *name, kcs_dtype dtype, const void *x, size_t n, double *value, double *bound)
{
    const kcs_model *model = kcs_find_model(&kcs_op_sumsq, name);
    assert_non_null(model);
    kcs_op_args args = {.op = "sumsq", .dtype = dtype, .sumsq = {.n = n}};
    assert_true(!model->applies || model->applies(&args));
    kcs_expected e = {.count = 1, .values = value, .bounds = bound};
    void *inputs[1] = {(void *)x};
    assert_int_equal(model->expect(&args, inputs, &e, NULL), KCS_OK);
}

static void models_compute_their_arithmetic(void **state)
{
    (void)state;
    double value, bound;
    /* an f16 running sum of ones stops at 2048: 2048 + 1 is a tie, to even */
    uint16_t ones[3000];
    for (int i = 0; i < 3000; i++)
        ones[i] = kcs_f16_from_double(1.0);
    model_of("sumsq-accumulates-in-storage-type", KCS_F16, ones, 3000, &value, &bound);
    assert_true(value == 2048.0 && bound == 0.0);
    /* f64 through an f32 running sum: 2^24 + 1 + 1 + 1 stays 2^24 every way */
    double big_then_ones[4] = {0x1p12, 1.0, 1.0, 1.0};
    model_of("sumsq-accumulates-in-f32", KCS_F64, big_then_ones, 4, &value, &bound);
    assert_true(value == 0x1p24 && bound == 0.0);
    /* f32 ones: 4 to a 16-byte vector, so of 7 the last 3 are left out */
    float seven[7] = {1, 2, 3, 4, 5, 6, 7};
    model_of("sumsq-drops-ragged-tail", KCS_F32, seven, 7, &value, &bound);
    assert_true(value == 30.0 && bound > 0.0 && bound < 30.0 * 0x1p-23);
    model_of("sumsq-drops-last-element", KCS_F32, seven, 7, &value, &bound);
    assert_true(value == 91.0);
    /* where the model is the op's own arithmetic it does not apply */
    kcs_op_args whole_vectors = {.op = "sumsq", .dtype = KCS_F16, .sumsq = {.n = 16}};
    assert_false(kcs_find_model(&kcs_op_sumsq, "sumsq-drops-ragged-tail")->applies(&whole_vectors));
    assert_false(kcs_find_model(&kcs_op_sumsq, "sumsq-accumulates-in-f32")->applies(&whole_vectors));
}

static void layout_is_a_vector_in_and_a_scalar_out(void **state)
{
    (void)state;
    kcs_op_args args = {.op = "sumsq", .dtype = KCS_F32, .sumsq = {.n = 7}};
    kcs_layout layout;
    assert_int_equal(kcs_op_sumsq.layout(&args, &layout, NULL), KCS_OK);
    assert_int_equal(layout.input_count, 1);
    assert_int_equal(kcs_array_bytes(&layout.inputs[0]), 28);
    assert_int_equal(layout.output_count, 1);
    assert_int_equal(kcs_array_element_count(&layout.outputs[0]), 1);
    assert_true(kcs_op_sumsq.bytes(&args) == 32);
    assert_true(kcs_op_sumsq.flops(&args) == 14);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(oracle_is_exact_where_the_answer_is_known),
        cmocka_unit_test(oracle_handles_extremes),
        cmocka_unit_test(closed_form_agrees_with_the_oracle),
        cmocka_unit_test(closed_form_refuses_inexact_inputs),
        cmocka_unit_test(bound_follows_the_derivation),
        cmocka_unit_test(bound_is_tight_enough_to_catch_a_dropped_element),
        cmocka_unit_test(an_f16_sum_just_past_65520_may_end_finite),
        cmocka_unit_test(a_rounded_sum_rounds_once),
        cmocka_unit_test(models_compute_their_arithmetic),
        cmocka_unit_test(layout_is_a_vector_in_and_a_scalar_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
