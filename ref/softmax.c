/* softmax.c: reference row-wise softmax over the last axis of a rows x cols
 * matrix (docs/softmax.md):
 *
 *     y[r][k] = exp(x[r][k] - M_r) / sum_l exp(x[r][l] - M_r),   M_r = max_l x[r][l]
 *
 * Three passes per row, in the compute type of the dtype (float for f16,
 * bf16 and f32, double for f64; kcs_ref_half.h), as the spec's bound
 * assumes: the max (exact); the row sum of exp(x - M), so that the largest
 * term is exp(0) = 1 and nothing overflows; then each term exp(x - M),
 * computed again (bit for bit the same), divided by the sum and rounded
 * once to the dtype. The terms are not kept in the output: for f16 and bf16
 * that would round each of them to 11 or 8 bits before the division, the
 * double rounding the bound does not allow. The sum is blocked like
 * ref/sumsq.c (sequential within blocks of 1024, blocks pairwise) so that
 * each term passes through at most 1023 + ceil(log2(cols/1024)) additions,
 * inside the depth the spec allows also for cols = 32768; in float, never in
 * the 16-bit type (whose sum of 65536 terms near 1 would overflow f16). -inf
 * entries give exp(-inf) = 0 without a special case; a row with a NaN or a
 * +inf, or of nothing but -inf, is written NaN throughout, as PyTorch does.
 * Plain scalar C in strict IEEE arithmetic (-ffp-contract=off, no
 * fast-math); glibc's exp and expf are within 1 ulp, inside the 3-ulp budget.
 *
 * One body for every dtype of KCS_SOFTMAX_TYPES (kcs_ref_softmax.h).
 *
 * Run only it: build/kcs run --backend reference softmax
 */
#include <tgmath.h> /* exp of a float is expf, of a double exp */

#include "kcs_ref.h"
#include "reference_backend.h"

enum { block_length = 1024 };

/* Splits at a block boundary near the middle. */
static size_t split_point(size_t n)
{
    size_t blocks = (n + block_length - 1) / block_length;
    return blocks / 2 * block_length;
}

/* The blocked sum of exp(x - max) over n elements, the softmax and its
 * adapter, for one dtype, in its compute type. */
#define DEFINE_SOFTMAX(suffix, T, dtype)                                                           \
    typedef kcs_compute_##suffix compute_##suffix;                                                 \
                                                                                                   \
    static compute_##suffix sum_##suffix(const T *in, size_t n, compute_##suffix max)              \
    {                                                                                              \
        if (n > block_length) {                                                                    \
            size_t half = split_point(n);                                                          \
            return sum_##suffix(in, half, max) + sum_##suffix(in + half, n - half, max);           \
        }                                                                                          \
        compute_##suffix sum = 0;                                                                  \
        for (size_t i = 0; i < n; i++)                                                             \
            sum += exp(kcs_widen_##suffix(in[i]) - max);                                           \
        return sum;                                                                                \
    }                                                                                              \
                                                                                                   \
    void kcs_ref_softmax_##suffix(const T *x, T *y, size_t rows, size_t cols)                      \
    {                                                                                              \
        for (size_t r = 0; r < rows; r++) {                                                        \
            const T *in = x + r * cols;                                                            \
            T *out = y + r * cols;                                                                 \
            compute_##suffix max = -INFINITY;                                                      \
            int special = 0;                                                                       \
            for (size_t k = 0; k < cols; k++) {                                                    \
                compute_##suffix v = kcs_widen_##suffix(in[k]);                                    \
                special |= isnan(v) || v == INFINITY;                                              \
                if (v > max)                                                                       \
                    max = v;                                                                       \
            }                                                                                      \
            if (special || max == -INFINITY) {                                                     \
                for (size_t k = 0; k < cols; k++)                                                  \
                    out[k] = kcs_narrow_##suffix(NAN);                                             \
                continue;                                                                          \
            }                                                                                      \
            compute_##suffix sum = sum_##suffix(in, cols, max);                                    \
            for (size_t k = 0; k < cols; k++)                                                      \
                out[k] = kcs_narrow_##suffix(exp(kcs_widen_##suffix(in[k]) - max) / sum);          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static KCS_REFERENCE_STEP(compute_softmax_##suffix)                                            \
    {                                                                                              \
        (void)err;                                                                                 \
        kcs_ref_softmax_##suffix(kcs_reference_buffer_data(inputs[0]),                             \
                                 kcs_reference_buffer_data(outputs[0]), args->softmax.rows,        \
                                 args->softmax.cols);                                              \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_softmax_##suffix, NULL, compute_softmax_##suffix)
KCS_SOFTMAX_TYPES(DEFINE_SOFTMAX)

#define ROW(suffix, T, dtype)                                                                      \
    {"softmax", dtype, "three-pass",                                                              \
     "max, a blocked sum of exp(x - max), divide; in f32 (f64 for f64), rounded once to the type", \
     run_softmax_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_SOFTMAX_TYPES(ROW)};

const kcs_kernel_table kcs_reference_softmax_kernels = KCS_KERNEL_TABLE(rows);
