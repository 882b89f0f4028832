/* elementwise.c: reference add, mul, relu and sigmoid, out[i] = f(x[i] [, y[i]])
 * (docs/elementwise.md).
 *
 * Each is computed in the working precision (float for f32, double for
 * f64), one element at a time:
 *   add, mul  one IEEE operation: correctly rounded, as the spec requires.
 *   relu      x < 0 ? 0 : x, so relu(NaN) = NaN and relu(-0) = -0; fmax(x, 0)
 *             would turn NaN into 0.
 *   sigmoid   1 / (1 + exp(-x)) with the C library's expf / exp (glibc: within
 *             1 ulp, inside the spec's 3): where exp(-x) overflows the result
 *             is 0, which the spec allows there (the exact value is below
 *             2 / FLT_MAX); sigmoid(+inf) = 1 and sigmoid(-inf) = 0 exactly.
 *
 * Run only it: build/kcs run --backend reference elementwise
 */
#include <math.h>

#include "kcs_ref.h"
#include "reference_backend.h"

void kcs_ref_add_f32(const float *x, const float *y, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] + y[i];
}

void kcs_ref_add_f64(const double *x, const double *y, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] + y[i];
}

void kcs_ref_mul_f32(const float *x, const float *y, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] * y[i];
}

void kcs_ref_mul_f64(const double *x, const double *y, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] * y[i];
}

void kcs_ref_relu_f32(const float *x, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] < 0.0f ? 0.0f : x[i];
}

void kcs_ref_relu_f64(const double *x, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] < 0.0 ? 0.0 : x[i];
}

void kcs_ref_sigmoid_f32(const float *x, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 1.0f / (1.0f + expf(-x[i]));
}

void kcs_ref_sigmoid_f64(const double *x, double *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 1.0 / (1.0 + exp(-x[i]));
}

/* The adapters for the reference backend (ref/backend.c): one per op and type. */

#define KCS_BINARY_ADAPTER(name, function)                                                         \
    static KCS_KERNEL_RUN(name)                                                                     \
    {                                                                                              \
        (void)device, (void)err;                                                                   \
        double start = kcs_reference_now();                                                        \
        function(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(inputs[1]),      \
                 kcs_reference_buffer_data(outputs[0]), args->elementwise.n);                      \
        *kernel_seconds = kcs_reference_now() - start;                                             \
        return KCS_OK;                                                                             \
    }

#define KCS_UNARY_ADAPTER(name, function)                                                          \
    static KCS_KERNEL_RUN(name)                                                                     \
    {                                                                                              \
        (void)device, (void)err;                                                                   \
        double start = kcs_reference_now();                                                        \
        function(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(outputs[0]),      \
                 args->elementwise.n);                                                             \
        *kernel_seconds = kcs_reference_now() - start;                                             \
        return KCS_OK;                                                                             \
    }

KCS_BINARY_ADAPTER(kcs_reference_add_f32, kcs_ref_add_f32)
KCS_BINARY_ADAPTER(kcs_reference_add_f64, kcs_ref_add_f64)
KCS_BINARY_ADAPTER(kcs_reference_mul_f32, kcs_ref_mul_f32)
KCS_BINARY_ADAPTER(kcs_reference_mul_f64, kcs_ref_mul_f64)
KCS_UNARY_ADAPTER(kcs_reference_relu_f32, kcs_ref_relu_f32)
KCS_UNARY_ADAPTER(kcs_reference_relu_f64, kcs_ref_relu_f64)
KCS_UNARY_ADAPTER(kcs_reference_sigmoid_f32, kcs_ref_sigmoid_f32)
KCS_UNARY_ADAPTER(kcs_reference_sigmoid_f64, kcs_ref_sigmoid_f64)

static const kcs_kernel rows[] = {
    {"add", KCS_F64, "loop", "one IEEE add per element", kcs_reference_add_f64, NULL},
    {"add", KCS_F32, "loop", "one IEEE add per element", kcs_reference_add_f32, NULL},
    {"mul", KCS_F64, "loop", "one IEEE multiply per element", kcs_reference_mul_f64, NULL},
    {"mul", KCS_F32, "loop", "one IEEE multiply per element", kcs_reference_mul_f32, NULL},
    {"relu", KCS_F64, "loop", "x < 0 ? 0 : x", kcs_reference_relu_f64, NULL},
    {"relu", KCS_F32, "loop", "x < 0 ? 0 : x", kcs_reference_relu_f32, NULL},
    {"sigmoid", KCS_F64, "loop", "1 / (1 + exp(-x)) with libm exp", kcs_reference_sigmoid_f64, NULL},
    {"sigmoid", KCS_F32, "loop", "1 / (1 + expf(-x)) with libm expf", kcs_reference_sigmoid_f32, NULL},
};

const kcs_kernel_table kcs_reference_elementwise_kernels = KCS_KERNEL_TABLE(rows);
