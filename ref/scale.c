/* scale.c: reference scale, y[i] = alpha * x[i] (docs/scale.md).
 *
 * One IEEE multiply per element in the type (alpha rounded to the type as
 * a call receives it): correctly rounded, the only result the bound admits.
 * One body for every dtype of KCS_SCALE_TYPES (kcs_ref_scale.h).
 *
 * Run only it: build/kcs run --backend reference --cases tests/cases scale
 */
#include "kcs_ref.h"
#include "kcs_ref_scale.h" /* not in kcs_ref.h: scale is a test-only op */
#include "reference_backend.h"

#define DEFINE_SCALE(suffix, T, dtype)                                                             \
    void kcs_ref_scale_##suffix(T alpha, const T *x, T *y, size_t n)                               \
    {                                                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            y[i] = alpha * x[i];                                                                   \
    }                                                                                              \
                                                                                                   \
    static KCS_REFERENCE_STEP(compute_scale_##suffix)                                              \
    {                                                                                              \
        (void)err;                                                                                 \
        kcs_ref_scale_##suffix((T)args->scale.alpha, kcs_reference_buffer_data(inputs[0]),         \
                               kcs_reference_buffer_data(outputs[0]), args->scale.n);              \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_scale_##suffix, NULL, compute_scale_##suffix)
KCS_SCALE_TYPES(DEFINE_SCALE)

#define ROW(suffix, T, dtype) {"scale", dtype, "loop", "one IEEE multiply per element", run_scale_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_SCALE_TYPES(ROW)};

const kcs_kernel_table kcs_reference_scale_kernels = KCS_KERNEL_TABLE(rows);
