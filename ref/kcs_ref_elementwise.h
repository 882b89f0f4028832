/* kcs_ref_elementwise.h: the reference add, mul, relu and sigmoid
 * (docs/elementwise.md); part of kcs_ref.h. */
#ifndef KCS_REF_ELEMENTWISE_H
#define KCS_REF_ELEMENTWISE_H

#include <stddef.h>

#include "kcs_ref_half.h" /* kcs_f16, kcs_bf16 */

/* The dtypes of the elementwise ops: X(suffix, C type, kcs dtype). The
 * reference, the op descriptors and the reference's kernel rows are
 * generated from this list. */
#define KCS_ELEMENTWISE_TYPES(X)                                                                   \
    X(f16, kcs_f16, KCS_F16) X(bf16, kcs_bf16, KCS_BF16) X(f32, float, KCS_F32) X(f64, double, KCS_F64)

/* Computed in kcs_compute_<suffix> (float for f16, bf16 and f32, double for
 * f64) and rounded once to the type, one element at a time:
 *   void kcs_ref_add_<suffix>(const T *x, const T *y, T *out, size_t n)  x + y, correctly rounded
 *   void kcs_ref_mul_<suffix>(const T *x, const T *y, T *out, size_t n)  x * y, correctly rounded
 *   void kcs_ref_relu_<suffix>(const T *x, T *out, size_t n)             x < 0 ? 0 : x (NaN stays NaN)
 *   void kcs_ref_sigmoid_<suffix>(const T *x, T *out, size_t n)          1 / (1 + exp(-x)), libm exp */
#define KCS_REF_ELEMENTWISE_DECLARE(suffix, T, dtype)                                              \
    void kcs_ref_add_##suffix(const T *x, const T *y, T *out, size_t n);                            \
    void kcs_ref_mul_##suffix(const T *x, const T *y, T *out, size_t n);                            \
    void kcs_ref_relu_##suffix(const T *x, T *out, size_t n);                                       \
    void kcs_ref_sigmoid_##suffix(const T *x, T *out, size_t n);
KCS_ELEMENTWISE_TYPES(KCS_REF_ELEMENTWISE_DECLARE)
#undef KCS_REF_ELEMENTWISE_DECLARE

#endif
