/* half_test.c: the f16 and bf16 conversions of kcs_ref_half.h against the
 * harness's rounding from double (dtype.c), which rounds by scaling and
 * nearbyint instead of bit operations: two independent ways of rounding once
 * to nearest even must agree on every float tried.
 *
 * Every float whose bits are a multiple of 97 (44 million, all exponents and
 * both signs), and every float lying exactly halfway between two
 * neighbouring 16-bit values, where rounding ties to even is decided.
 * Widening is checked for all 65536 patterns of each type.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dtype.h"
#include "kcs_ref_half.h"

static int is_nan_f16(uint16_t bits) { return (bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu); }
static int is_nan_bf16(uint16_t bits) { return (bits & 0x7f80u) == 0x7f80u && (bits & 0x7fu); }

/* Both conversions of value agree (NaN: both NaN, quiet, same sign). */
static void check_float(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    uint16_t half = kcs_f16_from_float(value).bits, brain = kcs_bf16_from_float(value).bits;
    if (isnan(value)) {
        if (!is_nan_f16(half) || !(half & 0x0200u) || (half >> 15) != (bits >> 31))
            fail_msg("f16 of NaN 0x%08x is 0x%04x", (unsigned)bits, (unsigned)half);
        if (!is_nan_bf16(brain) || !(brain & 0x0040u) || (brain >> 15) != (bits >> 31))
            fail_msg("bf16 of NaN 0x%08x is 0x%04x", (unsigned)bits, (unsigned)brain);
        return;
    }
    uint16_t half_expected = kcs_f16_from_double(value), brain_expected = kcs_bf16_from_double(value);
    if (half != half_expected)
        fail_msg("f16 of %a (0x%08x): 0x%04x, expected 0x%04x", (double)value, (unsigned)bits,
                 (unsigned)half, (unsigned)half_expected);
    if (brain != brain_expected)
        fail_msg("bf16 of %a (0x%08x): 0x%04x, expected 0x%04x", (double)value, (unsigned)bits,
                 (unsigned)brain, (unsigned)brain_expected);
}

static void test_rounding_agrees_on_a_sweep_of_floats(void **state)
{
    (void)state;
    for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 97)
        check_float((uint32_t)bits);
    check_float(0x7f800000u); /* inf */
    check_float(0xff800000u);
    check_float(0x7f7fffffu); /* FLT_MAX: bf16 rounds it to inf */
}

static void test_rounding_agrees_at_every_tie(void **state)
{
    (void)state;
    /* Halfway between bf16 neighbours: the 16 dropped bits are 0x8000. */
    for (uint32_t top = 0; top <= 0xffffu; top++)
        check_float(top << 16 | 0x8000u);
    /* Halfway between f16 neighbours, normal and subnormal: the double
     * midpoint of two consecutive finite f16s is exact in float. */
    for (uint32_t bits = 0; bits < 0x7bffu; bits++) {
        double low = kcs_f16_to_double((uint16_t)bits), high = kcs_f16_to_double((uint16_t)(bits + 1));
        float middle = (float)((low + high) / 2);
        assert_true((double)middle == (low + high) / 2);
        uint32_t pattern;
        memcpy(&pattern, &middle, sizeof pattern);
        check_float(pattern);
        check_float(pattern | 0x80000000u);
    }
}

static void test_documented_values(void **state)
{
    (void)state;
    assert_int_equal(kcs_f16_from_float(65504.0f).bits, 0x7bff);
    assert_int_equal(kcs_f16_from_float(65519.99f).bits, 0x7bff);
    assert_int_equal(kcs_f16_from_float(65520.0f).bits, 0x7c00); /* the tie goes to even: inf */
    assert_int_equal(kcs_f16_from_float(0x1p-25f).bits, 0x0000); /* half the smallest subnormal: to even 0 */
    assert_int_equal(kcs_f16_from_float(0x1.8p-25f).bits, 0x0001);
    assert_int_equal(kcs_f16_from_float(-0.0f).bits, 0x8000);
    assert_int_equal(kcs_bf16_from_float(1.0f).bits, 0x3f80);
    assert_int_equal(kcs_bf16_from_float(1.00390625f).bits, 0x3f80); /* 1 + 2^-8: tie to even */
    assert_int_equal(kcs_bf16_from_float(1.01171875f).bits, 0x3f82); /* 1 + 3 * 2^-8: tie to even, up */
    assert_int_equal(kcs_bf16_from_float(0x1.ffp127f).bits, 0x7f80); /* the tie past the largest: inf */
    assert_int_equal(kcs_bf16_from_float(-INFINITY).bits, 0xff80);
    assert_true(kcs_bf16_to_float((kcs_bf16){0x7f7f}) == 0x1.fep127f);
    assert_true(kcs_f16_to_float((kcs_f16){0x0001}) == 0x1p-24f);
}

static void test_widening_is_exact_for_every_pattern(void **state)
{
    (void)state;
    for (uint32_t bits = 0; bits <= 0xffffu; bits++) {
        float half = kcs_f16_to_float((kcs_f16){(uint16_t)bits});
        float brain = kcs_bf16_to_float((kcs_bf16){(uint16_t)bits});
        double half_expected = kcs_f16_to_double((uint16_t)bits);
        if (is_nan_f16((uint16_t)bits))
            assert_true(isnan(half) && kcs_f16_from_float(half).bits == (bits | 0x0200u));
        else
            assert_true((double)half == half_expected && !signbit(half) == !signbit(half_expected) &&
                        kcs_f16_from_float(half).bits == bits);
        if (is_nan_bf16((uint16_t)bits))
            assert_true(isnan(brain) && kcs_bf16_from_float(brain).bits == (bits | 0x0040u));
        else
            assert_true(kcs_bf16_from_float(brain).bits == bits &&
                        kcs_bf16_from_double((double)brain) == bits);
    }
}

/* The once-rounding from double (round to odd in float, then to nearest)
 * agrees with the harness's nearbyint rounding for value. */
static void check_double(double value)
{
    uint16_t half = kcs_narrow_double_f16(value).bits, brain = kcs_narrow_double_bf16(value).bits;
    uint16_t half_expected = kcs_f16_from_double(value), brain_expected = kcs_bf16_from_double(value);
    if (half != half_expected)
        fail_msg("f16 of double %a: 0x%04x, expected 0x%04x", value, (unsigned)half, (unsigned)half_expected);
    if (brain != brain_expected)
        fail_msg("bf16 of double %a: 0x%04x, expected 0x%04x", value, (unsigned)brain,
                 (unsigned)brain_expected);
}

/* Where two roundings go wrong: a double a hair off a tie of the 16-bit
 * type, closer than float can tell, must round away from the tie's even
 * neighbour when it lies past the tie. Every tie of both types (normal and
 * subnormal, both signs), each nudged by one double ulp and by 2^-30 of
 * itself either way; then a sweep of double bit patterns of every exponent. */
static void test_rounding_from_double_is_once(void **state)
{
    (void)state;
    for (uint32_t bits = 0; bits < 0x7bffu; bits++) {
        double low = kcs_f16_to_double((uint16_t)bits), high = kcs_f16_to_double((uint16_t)(bits + 1));
        double tie = (low + high) / 2;
        const double nudges[] = {tie, nextafter(tie, 0.0), nextafter(tie, INFINITY), tie * (1 + 0x1p-30),
                                 tie * (1 - 0x1p-30)};
        for (size_t k = 0; k < sizeof nudges / sizeof nudges[0]; k++) {
            check_double(nudges[k]);
            check_double(-nudges[k]);
        }
    }
    for (uint32_t top = 0; top < 0x7f80u; top++) {
        double tie = (double)kcs_float_from_bits(top << 16 | 0x8000u);
        const double nudges[] = {tie, nextafter(tie, 0.0), nextafter(tie, INFINITY), tie * (1 + 0x1p-30),
                                 tie * (1 - 0x1p-30)};
        for (size_t k = 0; k < sizeof nudges / sizeof nudges[0]; k++) {
            check_double(nudges[k]);
            check_double(-nudges[k]);
        }
    }
    /* A multiplicative sweep of bit patterns: every exponent, ragged low bits. */
    for (uint64_t i = 0; i < 20000000u; i++) {
        uint64_t pattern = i * 0x9e3779b97f4a7c15u;
        double value;
        memcpy(&value, &pattern, sizeof value);
        if (!isnan(value))
            check_double(value);
    }
    check_double(0x1.fffffe1p127); /* past FLT_MAX, below the float overflow threshold */
    check_double(0x1.ffp127);      /* bf16's overflow tie: inf */
    check_double(0x1.fefffffffp127);
    check_double(1e300);
    check_double(0x1p-1074);
    check_double(-0x1p-1074);
    assert_int_equal(kcs_narrow_double_f16(1.0 + 0x1p-11 + 0x1p-40).bits, 0x3c01); /* (float) alone gives 0x3c00 */
    assert_int_equal(kcs_narrow_double_bf16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3f81);
    assert_true(isnan(kcs_f16_to_float(kcs_narrow_double_f16(NAN))));
    assert_true(isnan(kcs_bf16_to_float(kcs_narrow_double_bf16(NAN))));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rounding_agrees_on_a_sweep_of_floats),
        cmocka_unit_test(test_rounding_agrees_at_every_tie),
        cmocka_unit_test(test_documented_values),
        cmocka_unit_test(test_widening_is_exact_for_every_pattern),
        cmocka_unit_test(test_rounding_from_double_is_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
