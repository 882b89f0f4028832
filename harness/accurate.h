/* accurate.h: error-free transformations for the oracles, and correctly
 * rounded steps for the oracles of arithmetic models (explain.h).
 *
 * TwoSum (Knuth) and TwoProduct (through a correctly rounded fma) return a
 * floating-point result and its exact rounding error, so that sums and dot
 * products can be carried in double-double (Ogita, Rump and Oishi 2005,
 * "Accurate sum and dot product": Sum2 and Dot2). The result, rounded once
 * to double, is within u|s| + gamma_n^2 * sum|terms| of the exact value:
 * far below any bound a backend is held to. Compile with -ffp-contract=off:
 * the error terms are only exact if nothing is fused behind our back.
 */
#ifndef KCS_ACCURATE_H
#define KCS_ACCURATE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "dtype.h"

/* A value carried as high + low, |low| <= ulp(high)/2. */
typedef struct {
    double high, low;
} kcs_double_double;

/* sum = a + b rounded, *error = (a + b) - sum exactly. */
static inline double kcs_two_sum(double a, double b, double *error)
{
    double sum = a + b;
    double b_virtual = sum - a;
    double a_virtual = sum - b_virtual;
    *error = (a - a_virtual) + (b - b_virtual);
    return sum;
}

/* product = a * b rounded, *error = a * b - product exactly (barring underflow). */
static inline double kcs_two_product(double a, double b, double *error)
{
    double product = a * b;
    *error = fma(a, b, -product);
    return product;
}

/* Adds a*b to the compensated accumulator (one step of Dot2). */
static inline void kcs_dot2_add(kcs_double_double *accumulator, double a, double b)
{
    double product_error, sum_error;
    double product = kcs_two_product(a, b, &product_error);
    accumulator->high = kcs_two_sum(accumulator->high, product, &sum_error);
    accumulator->low += sum_error + product_error;
}

/* A normal double rounded once, to nearest even, to precision significant
 * bits: the bits below them are cleared after adding half their weight
 * (less one unless the last kept bit is odd); a carry runs into the exponent
 * as it should. */
static inline double kcs_rounded_to_precision(double value, int precision)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    int dropped = 53 - precision;
    uint64_t half = (uint64_t)1 << (dropped - 1), odd = (bits >> dropped) & 1;
    bits = (bits + half - 1 + odd) & ~(((uint64_t)1 << dropped) - 1);
    memcpy(&value, &bits, sizeof bits);
    return value;
}

/* value rounded once, to nearest even, to dtype, as a double (the one home of
 * that rounding: the oracles and every arithmetic model call it). The models' running sums round every step, so the 16-bit types
 * take the bit operations above where the result is normal, and dtype.h's
 * conversions (which scale by powers of two) elsewhere. */
static inline double kcs_rounded_to(kcs_dtype dtype, double value)
{
    if (dtype == KCS_F16 || dtype == KCS_BF16) {
        double smallest_normal = dtype == KCS_F16 ? 0x1p-14 : 0x1p-126;
        if (fabs(value) >= smallest_normal && !isinf(value)) {
            double rounded = kcs_rounded_to_precision(value, dtype == KCS_F16 ? 11 : 8);
            return fabs(rounded) > kcs_largest_finite(dtype) ? copysign(INFINITY, value) : rounded;
        }
        return dtype == KCS_F16 ? kcs_f16_to_double(kcs_f16_from_double(value))
                                : kcs_bf16_to_double(kcs_bf16_from_double(value));
    }
    if (dtype == KCS_F32)
        return (double)(float)value;
    if (dtype == KCS_F64)
        return value;
    unsigned char slot[8]; /* any other type (FP8): through its own conversion */
    kcs_store_element(slot, dtype, 0, value);
    return kcs_load_element(slot, dtype, 0);
}

/* a + b rounded once to dtype (f16, bf16, f32 or f64), for doubles a and b
 * whatever their bits: the double sum is exact or off by its TwoSum error,
 * and a rounding boundary of dtype (a midpoint between two of its values,
 * a double) lies strictly between the double sum and the exact one only
 * when the double sum is that midpoint; the error then says which way. At
 * the overflow threshold (the midpoint above the largest finite value) the
 * same holds, the infinity standing for the neighbour above. */
static inline double kcs_rounded_sum(kcs_dtype dtype, double a, double b)
{
    double error, sum = kcs_two_sum(a, b, &error);
    double rounded = kcs_rounded_to(dtype, sum);
    if (error == 0.0 || rounded == sum || isnan(sum))
        return rounded;
    double largest = kcs_largest_finite(dtype);
    if (isinf(rounded) && !isinf(sum)) /* sum at or beyond the threshold: exactly at it only matters */
        return fabs(sum) == largest + ldexp(kcs_unit_roundoff(dtype), ilogb(largest)) && signbit(error) != signbit(sum)
                   ? copysign(largest, sum)
                   : rounded;
    double mirror = 2.0 * sum - rounded; /* the other neighbour, if sum is a midpoint */
    if (kcs_rounded_to(dtype, mirror) != mirror)
        return rounded;
    return (error > 0.0) == (mirror > rounded) ? mirror : rounded;
}

#endif
