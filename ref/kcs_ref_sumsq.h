/* kcs_ref_sumsq.h: the reference sum of squares (docs/sumsq.md); part of kcs_ref.h. */
#ifndef KCS_REF_SUMSQ_H
#define KCS_REF_SUMSQ_H

#include <stddef.h>

#include "kcs_ref_half.h"

/* The dtypes of sumsq: X(suffix, C type, kcs dtype). The reference, the op
 * descriptor and the reference's kernel rows are generated from this list. */
#define KCS_SUMSQ_TYPES(X)                                                                         \
    X(f16, kcs_f16, KCS_F16) X(bf16, kcs_bf16, KCS_BF16) X(f32, float, KCS_F32) X(f64, double, KCS_F64)

/* Sum of squares of n elements, accumulated in double whatever the type,
 * rounded once to the type (the result is the input type, for f16 too:
 * docs/sumsq.md): T kcs_ref_sumsq_<suffix>(const T *x, size_t n). */
#define KCS_REF_SUMSQ_DECLARE(suffix, T, dtype) T kcs_ref_sumsq_##suffix(const T *x, size_t n);
KCS_SUMSQ_TYPES(KCS_REF_SUMSQ_DECLARE)
#undef KCS_REF_SUMSQ_DECLARE

#endif
