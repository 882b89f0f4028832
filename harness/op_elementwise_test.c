/* op_elementwise_test.c: the add, mul, relu and sigmoid oracles and bounds
 * (docs/elementwise.md), on values whose answers are known exactly. The
 * sigmoid constants were computed with Python's decimal module at 60 digits
 * (its exp is correctly rounded) and rounded once to double. */
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

#include "op.h"

extern const kcs_op kcs_op_add, kcs_op_mul, kcs_op_relu, kcs_op_sigmoid;

/* Oracle value and bound of one element of op on x (and y). */
static void element(const kcs_op *op, kcs_dtype dtype, double x, double y, double *value, double *bound)
{
    kcs_op_args args = {.op = op->name, .dtype = dtype, .elementwise = {.n = 1}};
    unsigned char x_data[8], y_data[8];
    kcs_store_element(x_data, dtype, 0, x);
    kcs_store_element(y_data, dtype, 0, y);
    void *inputs[2] = {x_data, y_data};
    kcs_expected e = {.count = 1, .values = value, .bounds = bound};
    assert_int_equal(op->oracle(&args, inputs, &e, NULL), KCS_OK);
    assert_int_equal(op->bounds(&args, inputs, &e, NULL), KCS_OK);
}

static double value_of(const kcs_op *op, kcs_dtype dtype, double x, double y)
{
    double value, bound;
    element(op, dtype, x, y, &value, &bound);
    return value;
}

static double bound_of(const kcs_op *op, kcs_dtype dtype, double x, double y)
{
    double value, bound;
    element(op, dtype, x, y, &value, &bound);
    return bound;
}

static void add_and_mul_round_correctly_ties_to_even(void **state)
{
    (void)state;
    /* 1 + 2^-24 is halfway between 1 and 1 + 2^-23 in f32: to even, 1 */
    assert_true(value_of(&kcs_op_add, KCS_F32, 1.0, 0x1p-24) == 1.0);
    /* (1 + 2^-23) + 2^-24 is halfway again: to even, 1 + 2^-22 */
    assert_true(value_of(&kcs_op_add, KCS_F32, 1.0 + 0x1p-23, 0x1p-24) == 1.0 + 0x1p-22);
    /* a little more than halfway rounds up */
    assert_true(value_of(&kcs_op_add, KCS_F32, 1.0, 0x1p-24 + 0x1p-47) == 1.0 + 0x1p-23);
    /* (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie in f32, to even 1 + 2^-11; exact in f64 */
    assert_true(value_of(&kcs_op_mul, KCS_F32, 1.0 + 0x1p-12, 1.0 + 0x1p-12) == 1.0 + 0x1p-11);
    assert_true(value_of(&kcs_op_mul, KCS_F64, 1.0 + 0x1p-12, 1.0 + 0x1p-12) == 1.0 + 0x1p-11 + 0x1p-24);
    /* f64: 1 + 2^-53 is a tie, to even 1 */
    assert_true(value_of(&kcs_op_add, KCS_F64, 1.0, 0x1p-53) == 1.0);
}

static void add_and_mul_keep_special_values(void **state)
{
    (void)state;
    assert_true(isnan(value_of(&kcs_op_add, KCS_F32, INFINITY, -INFINITY)));
    assert_true(isnan(value_of(&kcs_op_mul, KCS_F64, 0.0, INFINITY)));
    assert_true(value_of(&kcs_op_add, KCS_F32, FLT_MAX, FLT_MAX) == INFINITY);
    assert_true(value_of(&kcs_op_add, KCS_F32, -FLT_MAX, FLT_MAX) == 0.0);
    /* subnormal results are kept, not flushed */
    assert_true(value_of(&kcs_op_mul, KCS_F32, 0x1p-70, 0x1p-70) == 0x1p-140);
    assert_true(value_of(&kcs_op_mul, KCS_F32, 0x1p-75, 0x1p-75) == 0.0);           /* 2^-150: tie, to even 0 */
    assert_true(value_of(&kcs_op_mul, KCS_F32, 0x1p-75, 0x1.8p-75) == 0x1p-149);    /* 1.5 * 2^-150 rounds up */
    assert_true(value_of(&kcs_op_add, KCS_F64, 0x1p-1074, 0x1p-1074) == 0x1p-1073); /* exact */
    assert_true(bound_of(&kcs_op_add, KCS_F32, INFINITY, -INFINITY) == 0.0);
}

static void add_and_mul_bound_is_half_the_gap(void **state)
{
    (void)state;
    /* at 1 the gap below is 2^-24 and above 2^-23 (f32): half the nearer */
    assert_true(bound_of(&kcs_op_add, KCS_F32, 0.5, 0.5) == 0x1p-25);
    assert_true(bound_of(&kcs_op_add, KCS_F32, 1.0, 0.5) == 0x1p-24);
    assert_true(bound_of(&kcs_op_add, KCS_F64, 1.0, 0.5) == 0x1p-53);
    /* zero and subnormal results: half the smallest subnormal */
    assert_true(bound_of(&kcs_op_add, KCS_F32, 1.0, -1.0) == 0x1p-150);
    assert_true(bound_of(&kcs_op_mul, KCS_F32, 0x1p-70, 0x1p-70) == 0x1p-150);
    /* in f64 half of 2^-1074 is no double: the bound is 0, only the exact value passes */
    assert_true(bound_of(&kcs_op_mul, KCS_F64, 0x1p-537, 0x1p-537) == 0.0);
    /* at the largest finite value a quarter of the gap, so inf is not accepted */
    double at_max = bound_of(&kcs_op_add, KCS_F32, FLT_MAX, 0.5);
    assert_true(at_max == 0x1p102);
    assert_true(FLT_MAX + at_max < 0x1.ffffffp127);
}

static void add_and_mul_bound_rejects_the_neighbours(void **state)
{
    (void)state;
    /* tightness: the correctly rounded value's neighbours are outside the bound */
    const double samples[] = {1.0, 1.5, 0.1, 3e-39, 1e30, -7.25, 0x1p-149, FLT_MAX};
    for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++) {
        float v = (float)samples[s];
        double bound = bound_of(&kcs_op_add, KCS_F32, v, 0.0);
        assert_true(fabs((double)nextafterf(v, INFINITY) - v) > bound);
        assert_true(fabs((double)nextafterf(v, -INFINITY) - v) > bound);
        double w = samples[s];
        double bound64 = bound_of(&kcs_op_mul, KCS_F64, w, 1.0);
        assert_true(fabs(nextafter(w, INFINITY) - w) > bound64);
        assert_true(fabs(nextafter(w, -INFINITY) - w) > bound64);
    }
}

static void relu_is_exact_and_keeps_nan(void **state)
{
    (void)state;
    assert_true(value_of(&kcs_op_relu, KCS_F32, -0.5, 0) == 0.0);
    assert_true(value_of(&kcs_op_relu, KCS_F32, 0.75, 0) == 0.75);
    assert_true(isnan(value_of(&kcs_op_relu, KCS_F32, NAN, 0)));
    assert_true(isnan(value_of(&kcs_op_relu, KCS_F64, -NAN, 0)));
    assert_true(value_of(&kcs_op_relu, KCS_F64, -INFINITY, 0) == 0.0);
    assert_true(value_of(&kcs_op_relu, KCS_F64, INFINITY, 0) == INFINITY);
    assert_true(value_of(&kcs_op_relu, KCS_F64, -0.0, 0) == 0.0); /* either sign of zero compares equal */
    assert_true(value_of(&kcs_op_relu, KCS_F64, 0x1p-1074, 0) == 0x1p-1074);
    assert_true(bound_of(&kcs_op_relu, KCS_F64, 0.3, 0) == 0.0);
    assert_true(bound_of(&kcs_op_relu, KCS_F32, -0.3, 0) == 0.0);
}

/* Whether a is within one ulp of the double b. */
static int within_an_ulp(double a, double b)
{
    return a == b || a == nextafter(b, INFINITY) || a == nextafter(b, -INFINITY);
}

static void sigmoid_oracle_matches_high_precision_values(void **state)
{
    (void)state;
    static const struct {
        double x, sigmoid;
    } known[] = {
        {0.0, 0x1.0000000000000p-1},     {1.0, 0x1.764d4f5d5a2bdp-1},   {-1.0, 0x1.136561454ba86p-2},
        {0.5, 0x1.3eb2fd4d34391p-1},     {-3.75, 0x1.78761313f225ap-6}, {20.0, 0x1.ffffffee4b79bp-1},
        {-20.0, 0x1.1b4865556b5d5p-29},  {-100.0, 0x1.a8c1f14e2af5dp-145},
        {-700.0, 0x1.14f2b0fb9307fp-1010}, {-740.0, 0x0.0000000000055p-1022}, {36.0, 0x1.ffffffffffffep-1},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        double value = value_of(&kcs_op_sigmoid, KCS_F64, known[i].x, 0);
        if (!within_an_ulp(value, known[i].sigmoid))
            fail_msg("sigmoid(%g): oracle %a, expected %a", known[i].x, value, known[i].sigmoid);
    }
    assert_true(value_of(&kcs_op_sigmoid, KCS_F64, INFINITY, 0) == 1.0);
    assert_true(value_of(&kcs_op_sigmoid, KCS_F64, -INFINITY, 0) == 0.0);
    assert_true(value_of(&kcs_op_sigmoid, KCS_F32, -1000.0, 0) == 0.0); /* e^-1000 is far below 2^-1074 */
    assert_true(isnan(value_of(&kcs_op_sigmoid, KCS_F32, NAN, 0)));
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F32, INFINITY, 0) == 0.0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F32, -INFINITY, 0) == 0.0);
}

static void sigmoid_bound_follows_the_derivation(void **state)
{
    (void)state;
    double u = 0x1p-24, u64 = 0x1p-53;
    /* at x = 0: relative (1 + 5u) / ((1 - 6u)(1 - u)) - 1 of 1/2 (exp 3 ulp,
     * f32 divide 2.5 ulp), the oracle's u64 + 2^-59, and half a subnormal of
     * f32 and of f64 (2^-1075 rounded up) */
    double relative = (1 + 5 * u) / ((1 - 6 * u) * (1 - u)) - 1, oracle = u64 + 0x1p-59;
    double largest = (0.5 + 0x1p-1074) / (1 - oracle);
    double expected = (relative * largest + oracle * largest + (0x1p-150 + 0x1p-1074)) * (1 + 0x1p-40);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F32, 0.0, 0) == expected);
    /* 12u relative, and 1/2 sits at the bottom of its binade (an ulp there is 2^-24 = 2u of it): 6 ulp */
    assert_true(expected > 5.9 * 0x1p-24 && expected < 6.1 * 0x1p-24);
    /* f64: the oracle's own rounding (u64 + 2^-59) widens 4u by about an eighth */
    double bound64 = bound_of(&kcs_op_sigmoid, KCS_F64, 0.0, 0);
    assert_true(bound64 > 4.4 * 0x1p-53 && bound64 < 4.6 * 0x1p-53);
}

static void sigmoid_accepts_zero_only_where_exp_overflows(void **state)
{
    (void)state;
    /* sigmoid(-100) = 3.7e-44 in f32: below 2 / FLT_MAX = 5.9e-39, exp(100) overflows, 0 is allowed */
    double g = value_of(&kcs_op_sigmoid, KCS_F32, -100.0, 0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F32, -100.0, 0) >= g);
    /* sigmoid(-80) = 1.8e-35: exp(80) is finite, so 0 is not allowed */
    g = value_of(&kcs_op_sigmoid, KCS_F32, -80.0, 0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F32, -80.0, 0) < 1e-5 * g);
    /* f64: sigmoid(-720) = 2.2e-313 is below 2 / DBL_MAX; sigmoid(-700) = 9.9e-305 is not */
    g = value_of(&kcs_op_sigmoid, KCS_F64, -720.0, 0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F64, -720.0, 0) >= g);
    g = value_of(&kcs_op_sigmoid, KCS_F64, -700.0, 0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F64, -700.0, 0) < 1e-10 * g);
}

static void sigmoid_bound_is_tight_enough(void **state)
{
    (void)state;
    /* a missing 1 +, or exp(x) for exp(-x), errs by far more than the bound */
    for (double x = -4.0; x <= 4.0; x += 0.25) {
        double bound = bound_of(&kcs_op_sigmoid, KCS_F32, x, 0), g = value_of(&kcs_op_sigmoid, KCS_F32, x, 0);
        assert_true(fabs(exp(x) - g) > 1e4 * bound);
        if (x != 0.0)
            assert_true(fabs(1.0 / (1.0 + exp(x)) - g) > 1e3 * bound);
        /* and one computed in f32 where f64 was asked for is outside the f64 bound */
        double bound64 = bound_of(&kcs_op_sigmoid, KCS_F64, x, 0);
        double in_float = 1.0f / (1.0f + expf(-(float)x));
        if (in_float != g)
            assert_true(fabs(in_float - value_of(&kcs_op_sigmoid, KCS_F64, x, 0)) > bound64);
    }
}

static void layouts_bytes_and_flops(void **state)
{
    (void)state;
    kcs_op_args add = {.op = "add", .dtype = KCS_F32, .elementwise = {.n = 7}};
    kcs_op_args sigmoid = {.op = "sigmoid", .dtype = KCS_F64, .elementwise = {.n = 7}};
    kcs_layout layout;
    assert_int_equal(kcs_op_add.layout(&add, &layout, NULL), KCS_OK);
    assert_int_equal(layout.input_count, 2);
    assert_string_equal(layout.inputs[1].name, "y");
    assert_string_equal(layout.outputs[0].name, "out");
    assert_int_equal(kcs_array_bytes(&layout.outputs[0]), 28);
    assert_true(kcs_op_add.bytes(&add) == 84 && kcs_op_add.flops(&add) == 7);
    assert_int_equal(kcs_op_sigmoid.layout(&sigmoid, &layout, NULL), KCS_OK);
    assert_int_equal(layout.input_count, 1);
    assert_true(kcs_op_sigmoid.bytes(&sigmoid) == 112 && kcs_op_sigmoid.flops(&sigmoid) == 28);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(add_and_mul_round_correctly_ties_to_even),
        cmocka_unit_test(add_and_mul_keep_special_values),
        cmocka_unit_test(add_and_mul_bound_is_half_the_gap),
        cmocka_unit_test(add_and_mul_bound_rejects_the_neighbours),
        cmocka_unit_test(relu_is_exact_and_keeps_nan),
        cmocka_unit_test(sigmoid_oracle_matches_high_precision_values),
        cmocka_unit_test(sigmoid_bound_follows_the_derivation),
        cmocka_unit_test(sigmoid_accepts_zero_only_where_exp_overflows),
        cmocka_unit_test(sigmoid_bound_is_tight_enough),
        cmocka_unit_test(layouts_bytes_and_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
