/* sumsq.c: reference sum of squares, s = sum of x[i]^2 (docs/sumsq.md).
 *
 * Accumulates in double for every input type: f32, f16 and bf16 squares
 * are then exact, and a sum carried in float would lose the last element of
 * a long input (docs/sumsq.md derives the bound this keeps). For f16 and
 * bf16 the spec asks only for f32 accumulation; the reference carries more
 * so that it sits far inside the bound that kernels must meet. The double
 * sum is rounded once to the type (kcs_narrow_double_S: for f16 and bf16
 * through float it would round twice). The order is blocked
 * pairwise: within a block of 1024 elements, four running sums take every
 * fourth element (four independent chains keep the adder busy, where one
 * chain waits out the add latency on every element: 3x slower here) and
 * are added at the end of the block; block sums are combined pairwise. Each
 * term passes through at most 255 + 2 + ceil(log2(n/1024)) additions,
 * inside the depth the spec allows. Plain scalar C: no intrinsics, and the
 * compiler may not reassociate (-ffp-contract=off, no fast-math).
 *
 * One body for every dtype of KCS_SUMSQ_TYPES (kcs_ref_sumsq.h).
 *
 * Run only it: build/kcs run --backend reference sumsq
 */
#include <string.h>

#include "kcs_ref.h"
#include "reference_backend.h"

enum { block_length = 1024 };

/* Splits at a block boundary near the middle. */
static size_t split_point(size_t n)
{
    size_t blocks = (n + block_length - 1) / block_length;
    return blocks / 2 * block_length;
}

/* The blocked pairwise sum, the public function and its adapter, for one dtype. */
#define DEFINE_SUMSQ(suffix, T, dtype)                                                             \
    static double square_##suffix(T value)                                                         \
    {                                                                                              \
        double wide = (double)kcs_widen_##suffix(value);                                           \
        return wide * wide;                                                                        \
    }                                                                                              \
                                                                                                   \
    static double block_##suffix(const T *x, size_t n)                                             \
    {                                                                                              \
        double sum[4] = {0.0, 0.0, 0.0, 0.0};                                                      \
        size_t i = 0;                                                                              \
        for (; i + 4 <= n; i += 4)                                                                 \
            for (int lane = 0; lane < 4; lane++)                                                   \
                sum[lane] += square_##suffix(x[i + lane]);                                         \
        for (; i < n; i++)                                                                         \
            sum[i % 4] += square_##suffix(x[i]);                                                   \
        return (sum[0] + sum[1]) + (sum[2] + sum[3]);                                              \
    }                                                                                              \
                                                                                                   \
    static double pairwise_##suffix(const T *x, size_t n)                                          \
    {                                                                                              \
        if (n <= block_length)                                                                     \
            return block_##suffix(x, n);                                                           \
        size_t half = split_point(n);                                                              \
        return pairwise_##suffix(x, half) + pairwise_##suffix(x + half, n - half);                 \
    }                                                                                              \
                                                                                                   \
    T kcs_ref_sumsq_##suffix(const T *x, size_t n)                                                 \
    {                                                                                              \
        return kcs_narrow_double_##suffix(pairwise_##suffix(x, n));                                \
    }                                                                                              \
                                                                                                   \
    static KCS_REFERENCE_STEP(compute_sumsq_##suffix)                                              \
    {                                                                                              \
        (void)err;                                                                                 \
        T result = kcs_ref_sumsq_##suffix(kcs_reference_buffer_data(inputs[0]), args->sumsq.n);    \
        memcpy(kcs_reference_buffer_data(outputs[0]), &result, sizeof result);                     \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_sumsq_##suffix, NULL, compute_sumsq_##suffix)
KCS_SUMSQ_TYPES(DEFINE_SUMSQ)

#define ROW(suffix, T, dtype)                                                                      \
    {"sumsq", dtype, "blocked-pairwise",                                                           \
     "blocks of 1024 in four running sums, blocks pairwise; squares and sums in double",           \
     run_sumsq_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_SUMSQ_TYPES(ROW)};

const kcs_kernel_table kcs_reference_sumsq_kernels = KCS_KERNEL_TABLE(rows);
