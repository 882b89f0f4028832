/* gemm.c: reference GEMM, C_out = alpha * op(A) * op(B) + beta * C, row-major
 * (docs/gemm.md).
 *
 * Each element is accumulated in the working precision (float for f32,
 * double for f64) in plain k order, one rounded product and one rounded add
 * per term (-ffp-contract=off: no fma), then scaled by alpha and added to
 * beta * c: each term passes through at most k + 2 roundings, the order
 * docs/gemm.md's bound gamma_{k+2} allows, and the order a textbook kernel
 * uses, so the reference shows what the bound costs a plain loop.
 * Accumulating f32 in double would be more accurate, but then the reference
 * would not exercise the bound that f32 backends are held to.
 * As the reference BLAS does, alpha = 0 reads neither A nor B and beta = 0
 * does not read C (NaN there does not reach C_out).
 *
 * Loop order: for op(B) = B (not transposed) a row of C_out is accumulated
 * at once (i, p, j), so B is read along its rows; each element still sees
 * its terms in plain p order. For op(B) = B^T each element is one
 * contiguous dot product (i, j, p). TF32 mode (args->gemm.tf32) runs this
 * exact f32 path: its results are within TF32's wider bound.
 *
 * Run only it: build/kcs run --backend reference gemm
 */
#include "kcs_ref.h"
#include "reference_backend.h"

/* The body of every dtype of KCS_GEMM_TYPES (kcs_ref_gemm.h): TYPE is its C type. */
#define KCS_GEMM_BODY(TYPE)                                                                        \
    for (size_t i = 0; i < m; i++) {                                                               \
        TYPE *row = c_out + i * n;                                                                 \
        if (alpha == 0 || k == 0) {                                                                \
            for (size_t j = 0; j < n; j++)                                                         \
                row[j] = 0;                                                                        \
        } else if (!transpose_b) {                                                                 \
            for (size_t j = 0; j < n; j++)                                                         \
                row[j] = 0;                                                                        \
            for (size_t p = 0; p < k; p++) {                                                       \
                TYPE a_ip = transpose_a ? a[p * m + i] : a[i * k + p];                             \
                const TYPE *b_row = b + p * n;                                                     \
                for (size_t j = 0; j < n; j++)                                                     \
                    row[j] += a_ip * b_row[j];                                                     \
            }                                                                                      \
            for (size_t j = 0; j < n; j++)                                                         \
                row[j] = alpha * row[j];                                                           \
        } else {                                                                                   \
            for (size_t j = 0; j < n; j++) {                                                       \
                const TYPE *b_column = b + j * k;                                                  \
                TYPE sum = 0;                                                                      \
                for (size_t p = 0; p < k; p++)                                                     \
                    sum += (transpose_a ? a[p * m + i] : a[i * k + p]) * b_column[p];              \
                row[j] = alpha * sum;                                                              \
            }                                                                                      \
        }                                                                                          \
        if (beta != 0)                                                                             \
            for (size_t j = 0; j < n; j++)                                                         \
                row[j] += beta * c[i * n + j];                                                     \
    }

/* The function and its adapter for one dtype (alpha and beta rounded to the
 * type, as a BLAS call receives them). */
#define DEFINE_GEMM(suffix, T, dtype)                                                              \
    void kcs_ref_gemm_##suffix(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, T alpha, \
                               const T *a, const T *b, T beta, const T *c, T *c_out)               \
    {                                                                                              \
        KCS_GEMM_BODY(T)                                                                           \
    }                                                                                              \
                                                                                                   \
    static KCS_KERNEL_RUN(run_gemm_##suffix)                                                       \
    {                                                                                              \
        (void)device, (void)err;                                                                   \
        const kcs_gemm_args *g = &args->gemm;                                                      \
        double start = kcs_reference_cpu_seconds();                                                        \
        kcs_ref_gemm_##suffix(g->transpose_a, g->transpose_b, g->m, g->n, g->k, (T)g->alpha,       \
                              kcs_reference_buffer_data(inputs[0]),                                \
                              kcs_reference_buffer_data(inputs[1]), (T)g->beta,                    \
                              kcs_reference_buffer_data(inputs[2]),                                \
                              kcs_reference_buffer_data(outputs[0]));                              \
        *kernel_seconds = kcs_reference_cpu_seconds() - start;                                             \
        return KCS_OK;                                                                             \
    }
KCS_GEMM_TYPES(DEFINE_GEMM)

#define ROW(suffix, T, dtype)                                                                      \
    {"gemm", dtype, "plain-k-order", "each element accumulated in the type in k order (f32: tf32 mode too)", \
     run_gemm_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_GEMM_TYPES(ROW)};

const kcs_kernel_table kcs_reference_gemm_kernels = KCS_KERNEL_TABLE(rows);
