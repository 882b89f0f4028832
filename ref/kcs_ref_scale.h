/* kcs_ref_scale.h: the reference scale, y = alpha * x (docs/scale.md); part
 * of kcs_ref.h. scale is the op the tests add to prove that a new op takes
 * new files only (docs/adding-an-op.md); its cases are in tests/cases/. */
#ifndef KCS_REF_SCALE_H
#define KCS_REF_SCALE_H

#include <stddef.h>

/* The dtypes of scale: X(suffix, C type, kcs dtype). The reference, the op
 * descriptor and every backend's kernel rows are generated from this list. */
#define KCS_SCALE_TYPES(X) X(f32, float, KCS_F32) X(f64, double, KCS_F64)

/* y[i] = alpha * x[i], one correctly rounded multiply in the type:
 * void kcs_ref_scale_<suffix>(T alpha, const T *x, T *y, size_t n). */
#define KCS_REF_SCALE_DECLARE(suffix, T, dtype) void kcs_ref_scale_##suffix(T alpha, const T *x, T *y, size_t n);
KCS_SCALE_TYPES(KCS_REF_SCALE_DECLARE)
#undef KCS_REF_SCALE_DECLARE

#endif
