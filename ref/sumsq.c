/* sumsq.c: reference sum of squares, s = sum of x[i]^2 (docs/sumsq.md).
 *
 * Accumulates in double for both input types: f32 squares are then exact,
 * and a sum carried in float would lose the last element of a long input
 * (docs/sumsq.md derives the bound this keeps). The order is blocked
 * pairwise: blocks of 1024 elements are summed left to right, and block sums
 * are combined pairwise, so each term passes through at most
 * 1023 + ceil(log2(n/1024)) additions, inside the depth the spec allows.
 *
 * Run only it: build/kcs run --backend reference sumsq
 */
#include "kcs_ref.h"

enum { block_length = 1024 };

static double block_f64(const double *x, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i] * x[i];
    return sum;
}

static double block_f32(const float *x, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double value = x[i];
        sum += value * value;
    }
    return sum;
}

/* Splits at a block boundary near the middle, so that both halves are whole blocks but the last. */
static size_t split_point(size_t n)
{
    size_t blocks = (n + block_length - 1) / block_length;
    return blocks / 2 * block_length;
}

static double pairwise_f64(const double *x, size_t n)
{
    if (n <= block_length)
        return block_f64(x, n);
    size_t half = split_point(n);
    return pairwise_f64(x, half) + pairwise_f64(x + half, n - half);
}

static double pairwise_f32(const float *x, size_t n)
{
    if (n <= block_length)
        return block_f32(x, n);
    size_t half = split_point(n);
    return pairwise_f32(x, half) + pairwise_f32(x + half, n - half);
}

double kcs_ref_sumsq_f64(const double *x, size_t n)
{
    return pairwise_f64(x, n);
}

float kcs_ref_sumsq_f32(const float *x, size_t n)
{
    return (float)pairwise_f32(x, n);
}
