/* accurate.h: error-free transformations for the oracles.
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

#endif
