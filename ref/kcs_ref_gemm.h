/* kcs_ref_gemm.h: the reference GEMM (docs/gemm.md); part of kcs_ref.h. */
#ifndef KCS_REF_GEMM_H
#define KCS_REF_GEMM_H

#include <stddef.h>

#include "kcs_ref_fp8.h"
#include "kcs_ref_half.h"

/* The dtypes of gemm: X(suffix, C type, kcs dtype). The reference, the op
 * descriptor and the reference's kernel rows are generated from this list.
 * f16 and bf16 are storage types computed in f32 (kcs_compute_<suffix>). */
#define KCS_GEMM_TYPES(X)                                                                          \
    X(f32, float, KCS_F32) X(f64, double, KCS_F64) X(f16, kcs_f16, KCS_F16) X(bf16, kcs_bf16, KCS_BF16)

/* The dtypes whose cases may keep C and C_out in f32 (params c_dtype=f32):
 * 16-bit inputs with an f32 result, as cublasGemmEx's Ctype = CUDA_R_32F. */
#define KCS_GEMM_F32_OUTPUT_TYPES(X) X(f16, kcs_f16, KCS_F16) X(bf16, kcs_bf16, KCS_BF16)

/* c_out = alpha * op(a) * op(b) + beta * c, row-major, op(a) m x k (a stored
 * k x m when transpose_a), op(b) k x n (b stored n x k when transpose_b);
 * computed in kcs_compute_<suffix> (f32 for f16, bf16 and f32; f64 for f64)
 * in plain k order and rounded once to the type of c_out; c is not read
 * when beta = 0, a and b not when alpha = 0:
 * void kcs_ref_gemm_<suffix>(int transpose_a, int transpose_b, size_t m, size_t n,
 *                            size_t k, kcs_compute_<suffix> alpha, const T *a, const T *b,
 *                            kcs_compute_<suffix> beta, const T *c, T *c_out). */
#define KCS_REF_GEMM_DECLARE(suffix, T, dtype)                                                     \
    void kcs_ref_gemm_##suffix(int transpose_a, int transpose_b, size_t m, size_t n, size_t k,     \
                               kcs_compute_##suffix alpha, const T *a, const T *b,                \
                               kcs_compute_##suffix beta, const T *c, T *c_out);
KCS_GEMM_TYPES(KCS_REF_GEMM_DECLARE)
#undef KCS_REF_GEMM_DECLARE

/* The same with c and c_out in f32 (no rounding to 16 bits at the end):
 * void kcs_ref_gemm_<suffix>_f32_out(..., float alpha, const T *a, const T *b,
 *                                    float beta, const float *c, float *c_out). */
#define KCS_REF_GEMM_F32_OUT_DECLARE(suffix, T, dtype)                                             \
    void kcs_ref_gemm_##suffix##_f32_out(int transpose_a, int transpose_b, size_t m, size_t n,     \
                                         size_t k, float alpha, const T *a, const T *b, float beta, \
                                         const float *c, float *c_out);
KCS_GEMM_F32_OUTPUT_TYPES(KCS_REF_GEMM_F32_OUT_DECLARE)
#undef KCS_REF_GEMM_F32_OUT_DECLARE

/* FP8 (docs/gemm.md, "FP8"): OCP e4m3 and e5m2 inputs,
 * computed in f32, with per-tensor scales, and C and C_out in f32, bf16 or
 * f16 (the case's c_dtype): X(input suffix, input C type, input dtype,
 * output suffix, output C type, output dtype), one line per pair. */
#define KCS_GEMM_FP8_TYPES(X) X(fp8_e4m3, kcs_fp8_e4m3, KCS_FP8_E4M3) X(fp8_e5m2, kcs_fp8_e5m2, KCS_FP8_E5M2)
#define KCS_GEMM_FP8_PAIRS(X)                                                                      \
    X(fp8_e4m3, kcs_fp8_e4m3, KCS_FP8_E4M3, f32, float, KCS_F32)                                   \
    X(fp8_e4m3, kcs_fp8_e4m3, KCS_FP8_E4M3, bf16, kcs_bf16, KCS_BF16)                              \
    X(fp8_e4m3, kcs_fp8_e4m3, KCS_FP8_E4M3, f16, kcs_f16, KCS_F16)                                 \
    X(fp8_e5m2, kcs_fp8_e5m2, KCS_FP8_E5M2, f32, float, KCS_F32)                                   \
    X(fp8_e5m2, kcs_fp8_e5m2, KCS_FP8_E5M2, bf16, kcs_bf16, KCS_BF16)                              \
    X(fp8_e5m2, kcs_fp8_e5m2, KCS_FP8_E5M2, f16, kcs_f16, KCS_F16)

/* c_out = alpha * a_scale * b_scale * op(a) op(b) + beta * c, FP8 a and b,
 * as cuBLASLt's FP8 GEMM defines it: products exact in f32, summed in f32
 * in plain k order, scaled by the f32 product (alpha * a_scale) * b_scale,
 * plus beta * c, rounded once to c_out's type; c not read when beta = 0, a
 * and b not when alpha = 0:
 * void kcs_ref_gemm_<input>_<output>(int transpose_a, int transpose_b, size_t m, size_t n,
 *     size_t k, float alpha, float a_scale, float b_scale, const IN *a, const IN *b,
 *     float beta, const OUT *c, OUT *c_out). */
#define KCS_REF_GEMM_FP8_DECLARE(in, IN, in_dtype, out, OUT, out_dtype)                            \
    void kcs_ref_gemm_##in##_##out(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, \
                                   float alpha, float a_scale, float b_scale, const IN *a,         \
                                   const IN *b, float beta, const OUT *c, OUT *c_out);
KCS_GEMM_FP8_PAIRS(KCS_REF_GEMM_FP8_DECLARE)
#undef KCS_REF_GEMM_FP8_DECLARE

#endif
