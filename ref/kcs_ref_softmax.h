/* kcs_ref_softmax.h: the reference row-wise softmax (docs/softmax.md); part of kcs_ref.h. */
#ifndef KCS_REF_SOFTMAX_H
#define KCS_REF_SOFTMAX_H

#include <stddef.h>

#include "kcs_ref_half.h"

/* The dtypes of softmax: X(suffix, C type, kcs dtype). The reference, the
 * op descriptor and the reference's kernel rows are generated from this list.
 * f16 and bf16 are storage types, computed in float (kcs_compute_<suffix>). */
#define KCS_SOFTMAX_TYPES(X)                                                                       \
    X(f16, kcs_f16, KCS_F16) X(bf16, kcs_bf16, KCS_BF16) X(f32, float, KCS_F32) X(f64, double, KCS_F64)

/* Row-wise softmax of a rows x cols matrix into y: max-subtracted, in the
 * compute type (float for f16, bf16 and f32; double for f64), each output
 * rounded once to the type, -inf entries masked to 0; a row with a NaN or +inf, or of nothing
 * but -inf, is NaN throughout:
 * void kcs_ref_softmax_<suffix>(const T *x, T *y, size_t rows, size_t cols). */
#define KCS_REF_SOFTMAX_DECLARE(suffix, T, dtype)                                                  \
    void kcs_ref_softmax_##suffix(const T *x, T *y, size_t rows, size_t cols);
KCS_SOFTMAX_TYPES(KCS_REF_SOFTMAX_DECLARE)
#undef KCS_REF_SOFTMAX_DECLARE

#endif
