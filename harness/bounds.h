/* bounds.h: the pieces every op's error bound is built from (docs/<op>.md
 * derive each bound from them).
 *
 * gamma(k) is Higham's constant for k roundings in a row; the summation
 * depth is the rule every reduction of kcs allows (docs/sumsq.md): any
 * summation tree in which each term passes through at most D(n) additions.
 * The bounds are themselves computed in double; kcs_bound_widen makes them
 * larger by far more than their own rounding error, so that a bound is
 * never too small by a rounding.
 */
#ifndef KCS_BOUNDS_H
#define KCS_BOUNDS_H

#include <math.h>
#include <stddef.h>

#include "dtype.h"

/* gamma_k = k u / (1 - k u) (Higham, Accuracy and Stability, 2nd ed., 3.4); inf when k u >= 1. */
static inline double kcs_gamma(double k, double u)
{
    return k * u < 1.0 ? k * u / (1.0 - k * u) : INFINITY;
}

/* D(n) = min(n - 1, 2048 + ceil(log2 n)): the most additions a term of an
 * n-term sum may pass through (docs/sumsq.md, "Order"). */
static inline double kcs_summation_depth(size_t n)
{
    if (n <= 1)
        return 0.0;
    return fmin((double)(n - 1), 2048.0 + ceil(log2((double)n)));
}

/* A bound computed in double, made safe against its own rounding. */
static inline double kcs_bound_widen(double bound)
{
    return bound * (1.0 + 0x1.0p-40);
}

/* The bound of a correctly rounded result: half the distance from value (a
 * number of dtype: f16, bf16, f32 or f64) to its nearer neighbour in dtype,
 * so that only value itself is within it. At the largest finite value a
 * quarter, so that value + bound stays below the overflow threshold and an
 * infinity is not accepted in its place (check.c). Near zero in f64 half the
 * gap is 2^-1075, which rounds to 0: only value itself passes there too. */
static inline double kcs_correctly_rounded_bound(double value, kcs_dtype dtype)
{
    double up, down;
    if (dtype == KCS_F32) {
        up = nextafterf((float)value, INFINITY);
        down = nextafterf((float)value, -INFINITY);
    } else if (dtype == KCS_F16 || dtype == KCS_BF16) {
        /* no nextafter for them: the gap above |value| from its binade (the
         * smallest subnormal below the smallest normal), the gap below half
         * that at a power of two above the smallest normal */
        double magnitude = fabs(value), smallest_normal = kcs_smallest_normal(dtype);
        double gap = kcs_smallest_subnormal(dtype);
        int exponent;
        if (magnitude >= smallest_normal) {
            double fraction = frexp(magnitude, &exponent); /* magnitude = fraction 2^exponent, fraction in [1/2, 1) */
            gap = ldexp(2.0 * kcs_unit_roundoff(dtype), exponent - 1);
            if (fraction == 0.5 && magnitude > smallest_normal)
                gap *= 0.5;
        }
        up = value + gap;
        down = value - gap;
    } else {
        up = nextafter(value, INFINITY);
        down = nextafter(value, -INFINITY);
    }
    double half = 0.5 * fmin(up - value, value - down);
    return fabs(value) == kcs_largest_finite(dtype) ? 0.5 * half : half;
}

#endif
