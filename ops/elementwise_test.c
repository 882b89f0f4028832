/* elementwise_test.c: the add, mul, relu and sigmoid oracles and bounds
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

#include "check.h"
#include "explain.h"
#include "kcs_ref_elementwise.h"
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

/* Whether a and b are the same number (either zero for a zero), or both NaN. */
static int same_or_both_nan(double a, double b)
{
    return a == b || (isnan(a) && isnan(b));
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

static void half_add_and_mul_round_correctly_ties_to_even(void **state)
{
    (void)state;
    /* f16 (11 bits): 1 + 2^-11 is a tie, to even 1; (1 + 2^-10) + 2^-11 to even 1 + 2^-9 */
    assert_true(value_of(&kcs_op_add, KCS_F16, 1.0, 0x1p-11) == 1.0);
    assert_true(value_of(&kcs_op_add, KCS_F16, 1.0 + 0x1p-10, 0x1p-11) == 1.0 + 0x1p-9);
    /* a little more than halfway rounds up: 2^-11 + 2^-21 is an f16 (11 bits) */
    assert_true(value_of(&kcs_op_add, KCS_F16, 1.0, 0x1p-11 + 0x1p-21) == 1.0 + 0x1p-10);
    /* bf16 (8 bits): 1 + 2^-8 to even 1, (1 + 2^-7) + 2^-8 to even 1 + 2^-6 */
    assert_true(value_of(&kcs_op_add, KCS_BF16, 1.0, 0x1p-8) == 1.0);
    assert_true(value_of(&kcs_op_add, KCS_BF16, 1.0 + 0x1p-7, 0x1p-8) == 1.0 + 0x1p-6);
    /* (1 + 2^-4)^2 = 1 + 2^-3 + 2^-8: a tie in bf16, to even 1 + 2^-3 */
    assert_true(value_of(&kcs_op_mul, KCS_BF16, 1.0 + 0x1p-4, 1.0 + 0x1p-4) == 1.0 + 0x1p-3);
    /* (1 + 2^-6)^2 = 1 + 2^-5 + 2^-12: a tie in f16, to even 1 + 2^-5 */
    assert_true(value_of(&kcs_op_mul, KCS_F16, 1.0 + 0x1p-6, 1.0 + 0x1p-6) == 1.0 + 0x1p-5);
}

static void half_add_and_mul_overflow_and_keep_subnormals(void **state)
{
    (void)state;
    /* f16: 65504 is the largest; 65520 halfway to 2^16 rounds to even, which is inf */
    assert_true(value_of(&kcs_op_add, KCS_F16, 32752.0, 32752.0) == 65504.0);
    assert_true(value_of(&kcs_op_add, KCS_F16, 32752.0, 32768.0) == INFINITY);
    assert_true(value_of(&kcs_op_add, KCS_F16, 65504.0, 8.0) == 65504.0);
    assert_true(value_of(&kcs_op_mul, KCS_F16, -256.0, 256.0) == -INFINITY);
    /* bf16: the largest 0x1.fep127 plus half its ulp (2^120) is a tie, to even: inf */
    assert_true(value_of(&kcs_op_add, KCS_BF16, 0x1.fep127, 0x1p118) == 0x1.fep127);
    assert_true(value_of(&kcs_op_add, KCS_BF16, 0x1.fep127, 0x1p119) == INFINITY);
    /* f16 subnormal results: 2^-24 is the smallest; 2^-25 a tie, to even 0; 1.5 * 2^-25 up */
    assert_true(value_of(&kcs_op_mul, KCS_F16, 0x1p-12, 0x1p-12) == 0x1p-24);
    assert_true(value_of(&kcs_op_mul, KCS_F16, 0x1p-12, 0x1p-13) == 0.0);
    assert_true(value_of(&kcs_op_mul, KCS_F16, 0x1p-12, 0x1.8p-13) == 0x1p-24);
    /* bf16 subnormals are float's, down to 2^-133 */
    assert_true(value_of(&kcs_op_mul, KCS_BF16, 0x1p-70, 0x1p-63) == 0x1p-133);
    assert_true(value_of(&kcs_op_mul, KCS_BF16, 0x1p-70, 0x1p-64) == 0.0);
    assert_true(value_of(&kcs_op_add, KCS_BF16, 0x1p-133, 0x1p-133) == 0x1p-132);
    assert_true(isnan(value_of(&kcs_op_add, KCS_F16, INFINITY, -INFINITY)));
    assert_true(isnan(value_of(&kcs_op_mul, KCS_BF16, 0.0, INFINITY)));
}

static void half_bound_is_half_the_gap_and_rejects_the_neighbours(void **state)
{
    (void)state;
    /* f16 at 1: gap 2^-11 below, 2^-10 above; bf16: 2^-8 and 2^-7 */
    assert_true(bound_of(&kcs_op_add, KCS_F16, 0.5, 0.5) == 0x1p-12);
    assert_true(bound_of(&kcs_op_add, KCS_F16, 1.0, 0.5) == 0x1p-11);
    assert_true(bound_of(&kcs_op_add, KCS_BF16, 0.5, 0.5) == 0x1p-9);
    assert_true(bound_of(&kcs_op_add, KCS_BF16, 1.0, 0.5) == 0x1p-8);
    /* zero and subnormal results: half the smallest subnormal (f16 2^-24, bf16 2^-133) */
    assert_true(bound_of(&kcs_op_add, KCS_F16, 1.0, -1.0) == 0x1p-25);
    assert_true(bound_of(&kcs_op_mul, KCS_F16, 0x1p-12, 0x1p-12) == 0x1p-25);
    assert_true(bound_of(&kcs_op_add, KCS_F16, 0x1p-14, 0.0) == 0x1p-25); /* smallest normal: gaps equal */
    assert_true(bound_of(&kcs_op_add, KCS_BF16, 1.0, -1.0) == 0x1p-134);
    /* at the largest finite value a quarter of the gap, so inf is not accepted */
    assert_true(bound_of(&kcs_op_add, KCS_F16, 65504.0, 0.0) == 8.0);
    assert_true(bound_of(&kcs_op_add, KCS_BF16, 0x1.fep127, 0.0) == 0x1p118);
    /* every neighbour of a sample is outside the bound, found by rounding from double */
    const double samples[] = {1.0, 1.5, 0.1, 3e-5, 6e-8, 1000.0, -7.25, 65504.0, 0.0, 0x1p-14};
    const kcs_dtype halves[] = {KCS_F16, KCS_BF16};
    for (size_t d = 0; d < 2; d++)
        for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++) {
            double v = value_of(&kcs_op_add, halves[d], samples[s], 0.0);
            double bound = bound_of(&kcs_op_add, halves[d], v, 0.0);
            double gap = kcs_smallest_subnormal(halves[d]);
            double up = v, down = v;
            for (double step = gap; up == v; step *= 2.0) /* the nearest values of the type either side */
                up = value_of(&kcs_op_add, halves[d], v + step, 0.0);
            for (double step = gap; down == v; step *= 2.0)
                down = value_of(&kcs_op_add, halves[d], v - step, 0.0);
            assert_true(bound > 0.0);
            assert_true(up - v > bound && v - down > bound);
            assert_true(fmin(up - v, v - down) == 2.0 * bound || v == 65504.0); /* half the nearer gap, not less */
        }
}

/* A 64-bit pseudo-random sequence for the sweeps below (SplitMix64). */
static uint64_t next_bits(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The reference's add and mul of f16 and bf16 compute in float and round the
 * float result again; docs/elementwise.md shows that this double rounding is
 * innocuous. Here: every bit pattern x against 128 bit patterns y (half of
 * them random, half with an exponent near 1, where most x's sums need
 * rounding), bit for bit against one rounding of the result in double (exact
 * for every product and every f16 sum; innocuous for bf16 sums), as the
 * oracle rounds it (checked against the oracle itself on the first y). */
static void half_add_and_mul_through_float_are_correctly_rounded(void **state)
{
    (void)state;
    enum { ELEMENTS = 65536, YS = 128 };
    static kcs_f16 hx[ELEMENTS], hy[ELEMENTS], hout[ELEMENTS];
    static kcs_bf16 bx[ELEMENTS], by[ELEMENTS], bout[ELEMENTS];
    uint64_t random = 16;
    size_t mismatches = 0, compared = 0;
    for (uint32_t i = 0; i < ELEMENTS; i++) {
        hx[i].bits = (uint16_t)i;
        bx[i].bits = (uint16_t)i;
    }
    for (int j = 0; j < YS; j++) {
        uint16_t bits = (uint16_t)next_bits(&random), near_one = (uint16_t)(j % 8);
        kcs_f16 h = {j % 2 ? (uint16_t)((bits & 0x83ffu) | (uint16_t)((11 + near_one) << 10)) : bits};
        kcs_bf16 b = {j % 2 ? (uint16_t)((bits & 0x807fu) | (uint16_t)((123 + near_one) << 7)) : bits};
        for (uint32_t i = 0; i < ELEMENTS; i++) {
            hy[i] = h;
            by[i] = b;
        }
        for (int op = 0; op < 2; op++) {
            (op == 0 ? kcs_ref_add_f16 : kcs_ref_mul_f16)(hx, hy, hout, ELEMENTS);
            (op == 0 ? kcs_ref_add_bf16 : kcs_ref_mul_bf16)(bx, by, bout, ELEMENTS);
            double hy_value = kcs_f16_to_double(h.bits), by_value = kcs_bf16_to_double(b.bits);
            for (uint32_t i = 0; i < ELEMENTS; i++) {
                double hx_value = kcs_f16_to_double(hx[i].bits), bx_value = kcs_bf16_to_double(bx[i].bits);
                double h_result = op == 0 ? hx_value + hy_value : hx_value * hy_value;
                double b_result = op == 0 ? bx_value + by_value : bx_value * by_value;
                double h_expected = kcs_f16_to_double(kcs_f16_from_double(h_result));
                double b_expected = kcs_bf16_to_double(kcs_bf16_from_double(b_result));
                if (j == 0 && (i % 257 == 0)) { /* the same as the oracle's */
                    const kcs_op *descriptor = op == 0 ? &kcs_op_add : &kcs_op_mul;
                    assert_true(same_or_both_nan(value_of(descriptor, KCS_F16, hx_value, hy_value), h_expected));
                    assert_true(same_or_both_nan(value_of(descriptor, KCS_BF16, bx_value, by_value), b_expected));
                }
                double h_actual = kcs_f16_to_double(hout[i].bits), b_actual = kcs_bf16_to_double(bout[i].bits);
                if (!same_or_both_nan(h_actual, h_expected) && mismatches++ < 5)
                    print_message("f16 %s %a, %a: %a, correctly rounded %a\n", op == 0 ? "add" : "mul", hx_value,
                                  hy_value, h_actual, h_expected);
                if (!same_or_both_nan(b_actual, b_expected) && mismatches++ < 5)
                    print_message("bf16 %s %a, %a: %a, correctly rounded %a\n", op == 0 ? "add" : "mul", bx_value,
                                  by_value, b_actual, b_expected);
                compared += 2;
            }
        }
    }
    assert_int_equal(mismatches, 0);
    assert_true(compared == (size_t)YS * 2 * 2 * ELEMENTS);
}

/* sigmoid computed the way a kernel that works in f16 would: every step rounded to f16. */
static double sigmoid_in_f16_arithmetic(double x)
{
    float t = kcs_f16_to_float(kcs_f16_from_float(expf(-(float)x)));
    float d = kcs_f16_to_float(kcs_f16_from_float(1.0f + t));
    return kcs_f16_to_double(kcs_f16_from_float(1.0f / d).bits);
}

static void half_sigmoid_is_rounded_from_within_the_f32_bound(void **state)
{
    (void)state;
    /* the expected value is the sigmoid rounded to the type; where the f32
     * bound around it holds no midpoint, only that value passes */
    assert_true(value_of(&kcs_op_sigmoid, KCS_F16, 0.0, 0) == 0.5);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F16, 0.0, 0) == 0.0);
    assert_true(value_of(&kcs_op_sigmoid, KCS_F16, 1.0, 0) == 1497 * 0x1p-11); /* 0.73105858 * 2^11 = 1497.2 */
    assert_true(bound_of(&kcs_op_sigmoid, KCS_BF16, 1.0, 0) == 0.0);
    assert_true(value_of(&kcs_op_sigmoid, KCS_BF16, 1.0, 0) == 187 * 0x1p-8); /* 0.73105858 * 2^8 = 187.15 */
    /* f16 subnormal results, and 0 below 2^-25 (x < -17.3) */
    assert_true(value_of(&kcs_op_sigmoid, KCS_F16, -12.0, 0) == 103 * 0x1p-24); /* 6.144e-6 * 2^24 = 103.08 */
    assert_true(value_of(&kcs_op_sigmoid, KCS_F16, -20.0, 0) == 0.0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_F16, -20.0, 0) == 0.0);
    /* bf16 has float's range: sigmoid(-89) = 2.2e-39 is below 2 / FLT_MAX (exp(89)
     * overflows in f32), so 0 is allowed; sigmoid(-80) is not, and 0 fails there */
    assert_true(bound_of(&kcs_op_sigmoid, KCS_BF16, -89.0, 0) >= value_of(&kcs_op_sigmoid, KCS_BF16, -89.0, 0));
    assert_true(value_of(&kcs_op_sigmoid, KCS_BF16, -89.0, 0) > 0.0);
    assert_true(bound_of(&kcs_op_sigmoid, KCS_BF16, -80.0, 0) < value_of(&kcs_op_sigmoid, KCS_BF16, -80.0, 0));
    assert_true(bound_of(&kcs_op_sigmoid, KCS_BF16, INFINITY, 0) == 0.0);
    assert_true(value_of(&kcs_op_sigmoid, KCS_BF16, -INFINITY, 0) == 0.0);

    /* every f16 and every bf16: the reference (float, rounded once) is
     * within the bound, the bound is at most one ulp of the type and
     * nonzero on few elements, and a sigmoid computed in f16 arithmetic
     * fails on many */
    enum { ELEMENTS = 65536 };
    static kcs_f16 hx[ELEMENTS], hout[ELEMENTS];
    static kcs_bf16 bx[ELEMENTS], bout[ELEMENTS];
    for (uint32_t i = 0; i < ELEMENTS; i++) {
        hx[i].bits = (uint16_t)i;
        bx[i].bits = (uint16_t)i;
    }
    kcs_ref_sigmoid_f16(hx, hout, ELEMENTS);
    kcs_ref_sigmoid_bf16(bx, bout, ELEMENTS);
    size_t h_loose = 0, b_loose = 0, finite = 0, f16_arithmetic_fails = 0, moderate = 0;
    for (uint32_t i = 0; i < ELEMENTS; i++) {
        double h = kcs_f16_to_double(hx[i].bits), b = kcs_bf16_to_double(bx[i].bits), g, bound;
        element(&kcs_op_sigmoid, KCS_F16, h, 0, &g, &bound);
        if (isnan(h))
            continue;
        finite++;
        double actual = kcs_f16_to_double(hout[i].bits);
        if (!(fabs(actual - g) <= bound))
            fail_msg("f16 sigmoid(%a): reference %a, expected %a within %a", h, actual, g, bound);
        assert_true(bound <= 0x1p-10 * fmax(g, 0x1p-14)); /* one ulp at most */
        h_loose += bound > 0.0;
        if (fabs(h) <= 8.0) {
            moderate++;
            f16_arithmetic_fails += !(fabs(sigmoid_in_f16_arithmetic(h) - g) <= bound);
        }
        element(&kcs_op_sigmoid, KCS_BF16, b, 0, &g, &bound);
        if (isnan(b))
            continue;
        actual = kcs_bf16_to_double(bout[i].bits);
        if (!(fabs(actual - g) <= bound))
            fail_msg("bf16 sigmoid(%a): reference %a, expected %a within %a", b, actual, g, bound);
        b_loose += bound > 0.0;
    }
    print_message("sigmoid: %zu of %zu f16 and %zu bf16 elements admit two values; f16 arithmetic fails %zu of %zu in [-8, 8]\n",
                  h_loose, finite, b_loose, f16_arithmetic_fails, moderate);
    assert_true(h_loose < finite / 100 && b_loose < finite / 100);
    assert_true(f16_arithmetic_fails > moderate / 10);
}

/* The value of dtype next to value (a value of dtype, positive), upwards or downwards. */
static double half_neighbour(kcs_dtype dtype, double value, int upwards)
{
    uint16_t bits = dtype == KCS_F16 ? kcs_f16_from_double(value) : kcs_bf16_from_double(value);
    bits = (uint16_t)(upwards ? bits + 1 : bits - 1);
    return dtype == KCS_F16 ? kcs_f16_to_double(bits) : kcs_bf16_to_double(bits);
}

static int passes(kcs_dtype dtype, double expected, double bound, double actual)
{
    return kcs_check_element(dtype, expected, bound, actual) <= 1.0;
}

/* Issue 33: sigmoid in f16 and bf16 admits exactly the values of the type
 * that an f32 result within the f32 bound rounds to. For x = 0.00293 (f16
 * 0x1.8p-9), s = 0.500732421875 - 5.2e-10 lies just below the midpoint of
 * 0.50048828125 and 0.5009765625, well within the f32 bound of it: both
 * can come from a conforming kernel, 0.5 cannot, and used to pass at 1.0 of
 * a bound of one ulp around the correctly rounded 0.50048828125. */
static void half_sigmoid_admits_exactly_the_values_the_f32_interval_rounds_to(void **state)
{
    (void)state;
    double g, bound;
    element(&kcs_op_sigmoid, KCS_F16, 0.00293, 0, &g, &bound);
    assert_true(g == 0.500732421875 && bound == 0x1p-12); /* the midpoint, half an ulp */
    assert_true(passes(KCS_F16, g, bound, 0.50048828125));
    assert_true(passes(KCS_F16, g, bound, 0.5009765625));
    assert_false(passes(KCS_F16, g, bound, 0.5));
    assert_false(passes(KCS_F16, g, bound, 0.50146484375));

    /* every f16 and bf16: where two values are admitted, they are the two
     * neighbours of the centre, and the values beyond them fail (in bf16
     * below x = -88.7, where exp(-x) may overflow f32, every value of [0, 2s]) */
    const kcs_dtype types[] = {KCS_F16, KCS_BF16};
    size_t two[2] = {0, 0};
    for (int t = 0; t < 2; t++)
        for (uint32_t i = 0; i < 65536; i++) {
            double x = types[t] == KCS_F16 ? kcs_f16_to_double((uint16_t)i) : kcs_bf16_to_double((uint16_t)i);
            if (isnan(x))
                continue;
            element(&kcs_op_sigmoid, types[t], x, 0, &g, &bound);
            if (bound == 0.0)
                continue;
            two[t]++;
            double low = g - bound, high = g + bound;
            if (low <= 0.0) { /* bf16 where exp(-x) may overflow f32: every value in [0, 2s] */
                assert_true(types[t] == KCS_BF16 && x < -88.0 && low == 0.0 && passes(types[t], g, bound, 0.0));
                assert_false(passes(types[t], g, bound, half_neighbour(types[t], high, 1)));
                continue;
            }
            if (!(low > 0.0 && half_neighbour(types[t], low, 1) == high))
                fail_msg("%s sigmoid(%a): centre %a, bound %a: not two neighbours", kcs_dtype_name(types[t]), x, g,
                         bound);
            assert_true(passes(types[t], g, bound, low) && passes(types[t], g, bound, high));
            assert_false(passes(types[t], g, bound, half_neighbour(types[t], low, 0)));
            assert_false(passes(types[t], g, bound, half_neighbour(types[t], high, 1)));
        }
    /* the counts docs/elementwise.md gives (bf16's include its overflow range) */
    assert_int_equal(two[0], 81);
    assert_int_equal(two[1], 17);
}

/* A model's value and bound of one element of op on x (and y). */
static void model_element(const kcs_op *op, const char *name, kcs_dtype dtype, double x, double y, double *value,
                          double *bound)
{
    const kcs_model *model = kcs_find_model(op, name);
    assert_non_null(model);
    kcs_op_args args = {.op = op->name, .dtype = dtype, .elementwise = {.n = 1}};
    assert_true(!model->applies || model->applies(&args));
    unsigned char x_data[8], y_data[8];
    kcs_store_element(x_data, dtype, 0, x);
    kcs_store_element(y_data, dtype, 0, y);
    void *inputs[2] = {x_data, y_data};
    kcs_expected e = {.count = 1, .values = value, .bounds = bound};
    assert_int_equal(model->expect(&args, inputs, &e, NULL), KCS_OK);
}

/* The models admit exactly their own values (docs/elementwise.md, "Arithmetic
 * models"): one value where their arithmetic is exact, the values of the
 * type an interval converts to where it is not. */
static void the_models_admit_their_own_values(void **state)
{
    (void)state;
    double value, bound;
    /* 1 + 2^-8 is a bf16 tie: truncation and ties-to-even give 1, ties away 1 + 2^-7 */
    model_element(&kcs_op_add, "add-truncates", KCS_BF16, 1.0, 0x1p-8, &value, &bound);
    assert_true(value == 1.0 && bound == 0.0);
    model_element(&kcs_op_add, "add-rounds-ties-away", KCS_BF16, 1.0, 0x1p-8, &value, &bound);
    assert_true(value == 1.0 + 0x1p-7 && bound == 0.0);
    /* 32752 + 32768 = 65520 overflows f16: saturation and truncation give 65504 */
    model_element(&kcs_op_add, "add-saturates", KCS_F16, 32752.0, 32768.0, &value, &bound);
    assert_true(value == 65504.0 && bound == 0.0);
    /* 1 + 2^-8 + 2^-12 through f16 (11 bits) is 1 + 2^-8, a bf16 tie that goes to 1; directly, 1 + 2^-7 */
    model_element(&kcs_op_add, "add-rounds-through-f16", KCS_BF16, 1.0, 0x1p-8 + 0x1p-12, &value, &bound);
    assert_true(value == 1.0 && bound == 0.0);
    /* a subnormal f32 product flushed: 0 whether or not its inputs are */
    model_element(&kcs_op_mul, "mul-flushes-subnormals", KCS_F32, 1e-20, 1e-20, &value, &bound);
    assert_true(value == 0.0 && bound == 0.0);
    /* a subnormal relu input: 0 or itself */
    model_element(&kcs_op_relu, "relu-flushes-subnormals", KCS_F32, 0x1p-130, 0, &value, &bound);
    assert_true(value - bound <= 0.0 && value + bound >= 0x1p-130);
    /* the sigmoid of 0.00293 in f16 lies just below a midpoint of f16: truncated, 0.50048828125 alone */
    model_element(&kcs_op_sigmoid, "sigmoid-truncates", KCS_F16, 0.00293, 0, &value, &bound);
    assert_true(value == 0.50048828125 && bound == 0.0);
    /* through tanh: exactly 0 where tanh(x/2) is -1 (x = -30), an absolute reach of about 5u below 1/4 */
    model_element(&kcs_op_sigmoid, "sigmoid-through-tanh", KCS_F32, -30.0, 0, &value, &bound);
    assert_true(value == 0.0 && bound == 0.0);
    model_element(&kcs_op_sigmoid, "sigmoid-through-tanh", KCS_F32, -10.0, 0, &value, &bound);
    assert_true(bound > 4.0 * 0x1p-24 && bound < 7.0 * 0x1p-24);
    /* CUDA's fast math: exactly 0 once 1 + exp(-x) surely passes 2^126 (x = -88), not at x = -87 */
    model_element(&kcs_op_sigmoid, "sigmoid-fast-exp", KCS_F32, -88.0, 0, &value, &bound);
    assert_true(value == 0.0 && bound == 0.0);
    model_element(&kcs_op_sigmoid, "sigmoid-fast-exp", KCS_F32, -87.0, 0, &value, &bound);
    assert_true(value > 0.0 && bound < value);
    /* computed in f16: exp(-1) = 0.36788 faithful (0.36767578125 or 0.367919921875), then 1 + t and
     * 1 / d rounded: what the f16 saboteur gives (0.73095703125) is admitted, within an ulp */
    model_element(&kcs_op_sigmoid, "sigmoid-computes-in-storage-type", KCS_F16, 1.0, 0, &value, &bound);
    assert_true(fabs(0.73095703125 - value) <= bound && bound <= 0x1p-11);
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
        cmocka_unit_test(half_add_and_mul_round_correctly_ties_to_even),
        cmocka_unit_test(half_add_and_mul_overflow_and_keep_subnormals),
        cmocka_unit_test(half_bound_is_half_the_gap_and_rejects_the_neighbours),
        cmocka_unit_test(half_add_and_mul_through_float_are_correctly_rounded),
        cmocka_unit_test(half_sigmoid_is_rounded_from_within_the_f32_bound),
        cmocka_unit_test(half_sigmoid_admits_exactly_the_values_the_f32_interval_rounds_to),
        cmocka_unit_test(the_models_admit_their_own_values),
        cmocka_unit_test(layouts_bytes_and_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
