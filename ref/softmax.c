/* softmax.c: reference row-wise softmax over the last axis of a rows x cols
 * matrix (docs/softmax.md):
 *
 *     y[r][k] = exp(x[r][k] - M_r) / sum_l exp(x[r][l] - M_r),   M_r = max_l x[r][l]
 *
 * Three passes per row, in the working precision of the input (f32 or
 * f64), as the spec's bound assumes: the max (exact); exp(x - M) into the
 * output row, so that the largest term is exp(0) = 1 and nothing
 * overflows; the row sum; then each term divided by it. The sum is blocked
 * like ref/sumsq.c (sequential within blocks of 1024, blocks pairwise) so
 * that each term passes through at most 1023 + ceil(log2(cols/1024))
 * additions, inside the depth the spec allows also for cols = 32768. -inf
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

/* The blocked sum, the softmax and its adapter, for one dtype. */
#define DEFINE_SOFTMAX(suffix, T, dtype)                                                           \
    static T sum_##suffix(const T *v, size_t n)                                                    \
    {                                                                                              \
        if (n > block_length) {                                                                    \
            size_t half = split_point(n);                                                          \
            return sum_##suffix(v, half) + sum_##suffix(v + half, n - half);                      \
        }                                                                                          \
        T sum = 0;                                                                                 \
        for (size_t i = 0; i < n; i++)                                                             \
            sum += v[i];                                                                           \
        return sum;                                                                                \
    }                                                                                              \
                                                                                                   \
    void kcs_ref_softmax_##suffix(const T *x, T *y, size_t rows, size_t cols)                      \
    {                                                                                              \
        for (size_t r = 0; r < rows; r++) {                                                        \
            const T *in = x + r * cols;                                                            \
            T *out = y + r * cols;                                                                 \
            T max = -INFINITY;                                                                     \
            int special = 0;                                                                       \
            for (size_t k = 0; k < cols; k++) {                                                    \
                special |= isnan(in[k]) || in[k] == INFINITY;                                      \
                if (in[k] > max)                                                                   \
                    max = in[k];                                                                   \
            }                                                                                      \
            if (special || max == -INFINITY) {                                                     \
                for (size_t k = 0; k < cols; k++)                                                  \
                    out[k] = NAN;                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (size_t k = 0; k < cols; k++)                                                      \
                out[k] = exp(in[k] - max);                                                         \
            T sum = sum_##suffix(out, cols);                                                       \
            for (size_t k = 0; k < cols; k++)                                                      \
                out[k] = out[k] / sum;                                                             \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    static KCS_KERNEL_RUN(run_softmax_##suffix)                                                    \
    {                                                                                              \
        (void)device, (void)err;                                                                   \
        double start = kcs_reference_cpu_seconds();                                                        \
        kcs_ref_softmax_##suffix(kcs_reference_buffer_data(inputs[0]),                             \
                                 kcs_reference_buffer_data(outputs[0]), args->softmax.rows,        \
                                 args->softmax.cols);                                              \
        *kernel_seconds = kcs_reference_cpu_seconds() - start;                                             \
        return KCS_OK;                                                                             \
    }
KCS_SOFTMAX_TYPES(DEFINE_SOFTMAX)

#define ROW(suffix, T, dtype)                                                                      \
    {"softmax", dtype, "three-pass", "max, exp(x - max) and a blocked sum, divide; in the type",  \
     run_softmax_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_SOFTMAX_TYPES(ROW)};

const kcs_kernel_table kcs_reference_softmax_kernels = KCS_KERNEL_TABLE(rows);
