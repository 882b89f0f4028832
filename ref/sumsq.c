/* sumsq.c: reference sum of squares, s = sum of x[i]^2 (docs/sumsq.md).
 *
 * Accumulates in double for both input types: f32 squares are then exact,
 * and a sum carried in float would lose the last element of a long input
 * (docs/sumsq.md derives the bound this keeps). The order is blocked
 * pairwise: within a block of 1024 elements, four running sums take every
 * fourth element (four independent chains keep the adder busy, where one
 * chain waits out the add latency on every element: 3x slower here) and
 * are added at the end of the block; block sums are combined pairwise. Each
 * term passes through at most 255 + 2 + ceil(log2(n/1024)) additions,
 * inside the depth the spec allows. Plain scalar C: no intrinsics, and the
 * compiler may not reassociate (-ffp-contract=off, no fast-math).
 *
 * Run only it: build/kcs run --backend reference sumsq
 */
#include <string.h>

#include "kcs_ref.h"
#include "reference_backend.h"

enum { block_length = 1024 };

static double block_f64(const double *x, size_t n)
{
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int lane = 0; lane < 4; lane++)
            sum[lane] += x[i + lane] * x[i + lane];
    for (; i < n; i++)
        sum[i % 4] += x[i] * x[i];
    return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

static double block_f32(const float *x, size_t n)
{
    double sum[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int lane = 0; lane < 4; lane++) {
            double value = x[i + lane];
            sum[lane] += value * value;
        }
    for (; i < n; i++) {
        double value = x[i];
        sum[i % 4] += value * value;
    }
    return (sum[0] + sum[1]) + (sum[2] + sum[3]);
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

/* The adapters that run the functions above on the reference backend's buffers, and their rows. */

static KCS_KERNEL_RUN(kcs_reference_sumsq_f64)
{
    (void)device, (void)err;
    double start = kcs_reference_now();
    double result = kcs_ref_sumsq_f64(kcs_reference_buffer_data(inputs[0]), args->sumsq.n);
    *kernel_seconds = kcs_reference_now() - start;
    memcpy(kcs_reference_buffer_data(outputs[0]), &result, sizeof result);
    return KCS_OK;
}

static KCS_KERNEL_RUN(kcs_reference_sumsq_f32)
{
    (void)device, (void)err;
    double start = kcs_reference_now();
    float result = kcs_ref_sumsq_f32(kcs_reference_buffer_data(inputs[0]), args->sumsq.n);
    *kernel_seconds = kcs_reference_now() - start;
    memcpy(kcs_reference_buffer_data(outputs[0]), &result, sizeof result);
    return KCS_OK;
}

static const kcs_kernel rows[] = {
    {"sumsq", KCS_F64, "blocked-pairwise", "blocks of 1024 in four running sums, blocks pairwise",
     kcs_reference_sumsq_f64, NULL},
    {"sumsq", KCS_F32, "blocked-pairwise", "as f64: squares and sums in double",
     kcs_reference_sumsq_f32, NULL},
};

const kcs_kernel_table kcs_reference_sumsq_kernels = KCS_KERNEL_TABLE(rows);
