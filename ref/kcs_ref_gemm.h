/* kcs_ref_gemm.h: the reference GEMM (docs/gemm.md); part of kcs_ref.h. */
#ifndef KCS_REF_GEMM_H
#define KCS_REF_GEMM_H

#include <stddef.h>

/* The dtypes of gemm: X(suffix, C type, kcs dtype). The reference, the op
 * descriptor and the reference's kernel rows are generated from this list. */
#define KCS_GEMM_TYPES(X) X(f32, float, KCS_F32) X(f64, double, KCS_F64)

/* c_out = alpha * op(a) * op(b) + beta * c, row-major, op(a) m x k (a stored
 * k x m when transpose_a), op(b) k x n (b stored n x k when transpose_b);
 * accumulated in the type in plain k order; c is not read when beta = 0, a
 * and b not when alpha = 0:
 * void kcs_ref_gemm_<suffix>(int transpose_a, int transpose_b, size_t m, size_t n,
 *                            size_t k, T alpha, const T *a, const T *b, T beta,
 *                            const T *c, T *c_out). */
#define KCS_REF_GEMM_DECLARE(suffix, T, dtype)                                                     \
    void kcs_ref_gemm_##suffix(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, T alpha, \
                               const T *a, const T *b, T beta, const T *c, T *c_out);
KCS_GEMM_TYPES(KCS_REF_GEMM_DECLARE)
#undef KCS_REF_GEMM_DECLARE

#endif
