/* elementwise.c: reference add, mul, relu and sigmoid, out[i] = f(x[i] [, y[i]])
 * (docs/elementwise.md).
 *
 * Each element is widened exactly to the type's compute type (float for f16,
 * bf16 and f32; double for f64), computed there, and rounded once to the
 * storage type (kcs_widen_S / kcs_narrow_S, ref/kcs_ref_half.h; both are the
 * identity for f32 and f64):
 *   add, mul  one IEEE operation: correctly rounded in f32 and f64. For f16
 *             and bf16 the float result is rounded again, and that is still
 *             correct rounding (docs/elementwise.md derives it: float has
 *             at least 2p + 2 bits of either, and the products are exact).
 *   relu      x < 0 ? 0 : x, so relu(NaN) = NaN and relu(-0) = -0; fmax(x, 0)
 *             would turn NaN into 0. Exact in every type.
 *   sigmoid   1 / (1 + exp(-x)) with the C library's expf / exp (glibc: within
 *             1 ulp, inside the spec's 3): where exp(-x) overflows the result
 *             is 0, which the spec allows there (the exact value is below
 *             2 / FLT_MAX); sigmoid(+inf) = 1 and sigmoid(-inf) = 0 exactly.
 *             f16 and bf16: the float sigmoid, rounded once to the type.
 *
 * One body for every dtype of the op's type list (KCS_ELEMENTWISE_TYPES in
 * kcs_ref_elementwise.h): the functions, their adapters and the kernel rows.
 *
 * Run only it: build/kcs run --backend reference elementwise
 */
#include <tgmath.h> /* exp of a float is expf, of a double exp */

#include "kcs_ref.h"
#include "reference_backend.h"

/* The reference functions of one dtype (kcs_ref_elementwise.h): each element
 * widened to kcs_compute_S, computed there, narrowed once to T. */
#define DEFINE_REFERENCE(suffix, T, dtype)                                                         \
    void kcs_ref_add_##suffix(const T *x, const T *y, T *out, size_t n)                            \
    {                                                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            out[i] = kcs_narrow_##suffix(kcs_widen_##suffix(x[i]) + kcs_widen_##suffix(y[i]));     \
    }                                                                                              \
    void kcs_ref_mul_##suffix(const T *x, const T *y, T *out, size_t n)                            \
    {                                                                                              \
        for (size_t i = 0; i < n; i++)                                                             \
            out[i] = kcs_narrow_##suffix(kcs_widen_##suffix(x[i]) * kcs_widen_##suffix(y[i]));     \
    }                                                                                              \
    void kcs_ref_relu_##suffix(const T *x, T *out, size_t n)                                       \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            kcs_compute_##suffix value = kcs_widen_##suffix(x[i]);                                 \
            out[i] = kcs_narrow_##suffix(value < 0 ? (kcs_compute_##suffix)0 : value);             \
        }                                                                                          \
    }                                                                                              \
    void kcs_ref_sigmoid_##suffix(const T *x, T *out, size_t n)                                    \
    {                                                                                              \
        for (size_t i = 0; i < n; i++) {                                                           \
            kcs_compute_##suffix value = kcs_widen_##suffix(x[i]);                                 \
            out[i] = kcs_narrow_##suffix((kcs_compute_##suffix)1 / ((kcs_compute_##suffix)1 + exp(-value))); \
        }                                                                                          \
    }
KCS_ELEMENTWISE_TYPES(DEFINE_REFERENCE)

/* The adapters that run the functions above on the reference backend's
 * buffers: one per op and dtype. */
#define BINARY_ADAPTER(function)                                                                   \
    static KCS_REFERENCE_STEP(compute_##function)                                                  \
    {                                                                                              \
        (void)err;                                                                                 \
        function(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(inputs[1]),      \
                 kcs_reference_buffer_data(outputs[0]), args->elementwise.n);                      \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_##function, NULL, compute_##function)

#define UNARY_ADAPTER(function)                                                                    \
    static KCS_REFERENCE_STEP(compute_##function)                                                  \
    {                                                                                              \
        (void)err;                                                                                 \
        function(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(outputs[0]),      \
                 args->elementwise.n);                                                             \
        return KCS_OK;                                                                             \
    }                                                                                              \
    KCS_REFERENCE_RUN(run_##function, NULL, compute_##function)

#define DEFINE_ADAPTERS(suffix, T, dtype)                                                          \
    BINARY_ADAPTER(kcs_ref_add_##suffix)                                                           \
    BINARY_ADAPTER(kcs_ref_mul_##suffix)                                                           \
    UNARY_ADAPTER(kcs_ref_relu_##suffix)                                                           \
    UNARY_ADAPTER(kcs_ref_sigmoid_##suffix)
KCS_ELEMENTWISE_TYPES(DEFINE_ADAPTERS)

#define ROWS(suffix, T, dtype)                                                                     \
    {"add", dtype, "loop", "one IEEE add per element in the compute type", run_kcs_ref_add_##suffix, NULL},           \
    {"mul", dtype, "loop", "one IEEE multiply per element in the compute type", run_kcs_ref_mul_##suffix, NULL},      \
    {"relu", dtype, "loop", "x < 0 ? 0 : x", run_kcs_ref_relu_##suffix, NULL},                    \
    {"sigmoid", dtype, "loop", "1 / (1 + exp(-x)) with libm's exp of the compute type",                   \
     run_kcs_ref_sigmoid_##suffix, NULL},

static const kcs_kernel rows[] = {KCS_ELEMENTWISE_TYPES(ROWS)};

const kcs_kernel_table kcs_reference_elementwise_kernels = KCS_KERNEL_TABLE(rows);
