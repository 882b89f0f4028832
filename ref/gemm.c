/* gemm.c: reference GEMM, C_out = alpha * op(A) * op(B) + beta * C, row-major
 * (docs/gemm.md), for every dtype of KCS_GEMM_TYPES (kcs_ref_gemm.h).
 *
 * Each element is accumulated in the compute type (float for f16, bf16 and
 * f32, double for f64) in plain k order, one rounded product and one
 * rounded add per term (-ffp-contract=off: no fma), then scaled by alpha and
 * added to beta * c: each term passes through at most k + 2 roundings, the
 * order docs/gemm.md's bound gamma_{k+2} allows, and the order a textbook
 * kernel uses, so the reference shows what the bound costs a plain loop.
 * Accumulating f32 in double would be more accurate, but then the reference
 * would not exercise the bound that f32 backends are held to.
 * f16 and bf16 inputs are widened exactly to float (kcs_widen_<suffix>), so
 * their products are exact there (22 and 16 significant bits); the result
 * is rounded once to the type of C_out (kcs_narrow_<suffix>): the storage
 * type, or none for the f32 output of c_dtype=f32 (kcs_ref_gemm_<suffix>_f32_out).
 * As the reference BLAS does, alpha = 0 reads neither A nor B and beta = 0
 * does not read C (NaN there does not reach C_out).
 *
 * Loop order: for op(B) = B (not transposed) a chunk of a row of C_out is
 * accumulated at once (i, p, j), so B is read along its rows; each element
 * still sees its terms in plain p order. For op(B) = B^T each element is one
 * contiguous dot product (i, j, p). TF32 mode (args->gemm.tf32) runs this
 * exact f32 path: its results are within TF32's wider bound.
 * FP8 (e4m3, e5m2) inputs widen exactly to float too, and their scales fold
 * into alpha (kcs_ref_gemm_<fp8>_<out>): the oracle path of the FP8 mode,
 * which no other backend here has a kernel for.
 *
 * Run only it: build/kcs run --backend reference gemm
 */
#include "kcs_ref.h"
#include "reference_backend.h"

/* Columns of a row of C_out accumulated at once when op(B) = B. */
enum { chunk_columns = 256 };

/* The body for inputs of type-list suffix S (C type T) and C, C_out of
 * suffix OUT (C type OUT_T): compute type kcs_compute_S. */
#define KCS_GEMM_BODY(S, T, OUT, OUT_T)                                                            \
    typedef kcs_compute_##S compute;                                                               \
    const int products = alpha != 0 && k > 0;                                                      \
    for (size_t i = 0; i < m; i++) {                                                               \
        for (size_t j0 = 0; j0 < n; j0 += chunk_columns) {                                         \
            size_t width = n - j0 < chunk_columns ? n - j0 : chunk_columns;                        \
            compute sums[chunk_columns];                                                           \
            for (size_t j = 0; j < width; j++)                                                     \
                sums[j] = 0;                                                                       \
            if (products && !transpose_b) {                                                        \
                for (size_t p = 0; p < k; p++) {                                                   \
                    compute a_ip = kcs_widen_##S(transpose_a ? a[p * m + i] : a[i * k + p]);       \
                    const T *b_row = b + p * n + j0;                                               \
                    for (size_t j = 0; j < width; j++)                                             \
                        sums[j] += a_ip * kcs_widen_##S(b_row[j]);                                 \
                }                                                                                  \
            } else if (products) {                                                                 \
                for (size_t j = 0; j < width; j++) {                                               \
                    const T *b_column = b + (j0 + j) * k;                                          \
                    compute sum = 0;                                                               \
                    for (size_t p = 0; p < k; p++)                                                 \
                        sum += kcs_widen_##S(transpose_a ? a[p * m + i] : a[i * k + p]) *          \
                               kcs_widen_##S(b_column[p]);                                         \
                    sums[j] = sum;                                                                 \
                }                                                                                  \
            }                                                                                      \
            for (size_t j = 0; j < width; j++) {                                                   \
                compute value = products ? alpha * sums[j] : 0;                                    \
                if (beta != 0)                                                                     \
                    value += beta * kcs_widen_##OUT(c[i * n + j0 + j]);                            \
                c_out[i * n + j0 + j] = kcs_narrow_##OUT(value);                                   \
            }                                                                                      \
        }                                                                                          \
    }

/* kcs_ref_gemm_<suffix>: C and C_out in the case type. */
#define DEFINE_GEMM(suffix, T, dtype)                                                              \
    void kcs_ref_gemm_##suffix(int transpose_a, int transpose_b, size_t m, size_t n, size_t k,     \
                               kcs_compute_##suffix alpha, const T *a, const T *b,                \
                               kcs_compute_##suffix beta, const T *c, T *c_out)                   \
    {                                                                                              \
        KCS_GEMM_BODY(suffix, T, suffix, T)                                                        \
    }
KCS_GEMM_TYPES(DEFINE_GEMM)

/* kcs_ref_gemm_<suffix>_f32_out: 16-bit inputs, C and C_out in f32. */
#define DEFINE_GEMM_F32_OUT(suffix, T, dtype)                                                      \
    void kcs_ref_gemm_##suffix##_f32_out(int transpose_a, int transpose_b, size_t m, size_t n,     \
                                         size_t k, float alpha, const T *a, const T *b, float beta, \
                                         const float *c, float *c_out)                             \
    {                                                                                              \
        KCS_GEMM_BODY(suffix, T, f32, float)                                                       \
    }
KCS_GEMM_F32_OUTPUT_TYPES(DEFINE_GEMM_F32_OUT)

/* The call of kcs_ref_gemm_<suffix>_f32_out for a case with c_dtype=f32. */
#define CALL_F32_OUT(suffix, T, dtype)                                                             \
    case dtype:                                                                                    \
        kcs_ref_gemm_##suffix##_f32_out(g->transpose_a, g->transpose_b, g->m, g->n, g->k,          \
                                        (float)g->alpha, a, b, (float)g->beta, c, c_out);          \
        break;

static void run_f32_out(const kcs_op_args *args, const void *a, const void *b, const void *c, void *c_out)
{
    const kcs_gemm_args *g = &args->gemm;
    switch (args->dtype) {
        KCS_GEMM_F32_OUTPUT_TYPES(CALL_F32_OUT)
    default: /* ops/gemm.c accepts c_dtype=f32 for these dtypes only */
        break;
    }
}

/* The adapter of one dtype (alpha and beta rounded to the compute type, as a
 * BLAS call receives them). */
#define DEFINE_RUN(suffix, T, dtype)                                                               \
    static KCS_REFERENCE_STEP(compute_gemm_##suffix)                                               \
    {                                                                                              \
        (void)err;                                                                                 \
        const kcs_gemm_args *g = &args->gemm;                                                      \
        const void *a = kcs_reference_buffer_data(inputs[0]), *b = kcs_reference_buffer_data(inputs[1]); \
        const void *c = kcs_reference_buffer_data(inputs[2]);                                      \
        void *c_out = kcs_reference_buffer_data(outputs[0]);                                       \
        if (kcs_gemm_c_dtype(args) != dtype)                                                       \
            run_f32_out(args, a, b, c, c_out);                                                     \
        else                                                                                       \
            kcs_ref_gemm_##suffix(g->transpose_a, g->transpose_b, g->m, g->n, g->k,                \
                                  (kcs_compute_##suffix)g->alpha, a, b, (kcs_compute_##suffix)g->beta, \
                                  c, c_out);                                                       \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_gemm_##suffix, NULL, compute_gemm_##suffix)
KCS_GEMM_TYPES(DEFINE_RUN)

/* FP8 (docs/gemm.md, "FP8"): the same body with the scales folded into
 * alpha in f32, (alpha * a_scale) * b_scale, as one epilogue scaling of the
 * f32 sum (two roundings more than the plain body, inside the FP8 bound). */
#define DEFINE_GEMM_FP8(in, IN, in_dtype, out, OUT, out_dtype)                                     \
    void kcs_ref_gemm_##in##_##out(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, \
                                   float alpha, float a_scale, float b_scale, const IN *a,         \
                                   const IN *b, float beta, const OUT *c, OUT *c_out)              \
    {                                                                                              \
        alpha = alpha * a_scale * b_scale;                                                         \
        KCS_GEMM_BODY(in, IN, out, OUT)                                                            \
    }
KCS_GEMM_FP8_PAIRS(DEFINE_GEMM_FP8)

/* The FP8 adapter: the function of the case's input dtype and c_dtype. */
#define CALL_FP8(in, IN, in_dtype, out, OUT, out_dtype)                                            \
    if (args->dtype == in_dtype && kcs_gemm_c_dtype(args) == out_dtype)                            \
        kcs_ref_gemm_##in##_##out(g->transpose_a, g->transpose_b, g->m, g->n, g->k, (float)g->alpha, \
                                  (float)g->a_scale, (float)g->b_scale, a, b, (float)g->beta, c, c_out);

static KCS_REFERENCE_STEP(compute_gemm_fp8)
{
    (void)err;
    const kcs_gemm_args *g = &args->gemm;
    const void *a = kcs_reference_buffer_data(inputs[0]), *b = kcs_reference_buffer_data(inputs[1]);
    const void *c = kcs_reference_buffer_data(inputs[2]);
    void *c_out = kcs_reference_buffer_data(outputs[0]);
    KCS_GEMM_FP8_PAIRS(CALL_FP8) /* ops/gemm.c admits exactly these pairs */
    return KCS_OK;
}

KCS_REFERENCE_RUN(run_gemm_fp8, NULL, compute_gemm_fp8)

#define FP8_ROW(suffix, T, dtype)                                                                  \
    {"gemm", dtype, "plain-k-order",                                                               \
     "products exact in f32, summed in k order, scaled by alpha * a_scale * b_scale, rounded once to C's type", \
     run_gemm_fp8, NULL},

#define ROW(suffix, T, dtype)                                                                      \
    {"gemm", dtype, "plain-k-order",                                                               \
     "each element accumulated in the compute type in k order, rounded once to C's type (f32: tf32 mode too)", \
     run_gemm_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_GEMM_TYPES(ROW) KCS_GEMM_FP8_TYPES(FP8_ROW)};

const kcs_kernel_table kcs_reference_gemm_kernels = KCS_KERNEL_TABLE(rows);
