/* saboteur_elementwise.c: broken add, mul, relu and sigmoid, each a mistake
 * real kernels make: the wrong operand, a relu that passes negatives or
 * drops NaN (fmax), a sigmoid without its 1 + or with the sign of the
 * exponent flipped, subnormal results flushed to zero, a grid that covers
 * only half the elements; and in f16 and bf16: a sigmoid computed in the
 * 16-bit type instead of f32, bf16 rounding by truncation or ties away from
 * zero, a result rounded twice (through f16 on its way to bf16), an f16
 * conversion that saturates at 65504 or flushes subnormals; and two sigmoids
 * that production code writes, whose accuracy is not the op's: through tanh,
 * and CUDA's fast math. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kcs_ref_half.h"

#include "saboteur_backend.h"

/* Which function a saboteur computes instead, from x and y. */
typedef double (*broken_function)(const kcs_op_args *args, double x, double y);

/* Runs f on every element (or on the first half only), in the case dtype. */
static kcs_status broken_map(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                             kcs_buffer *const out[], broken_function f, int half_only, kcs_error *err)
{
    size_t n = args->elementwise.n, bytes = n * kcs_dtype_size(args->dtype);
    int binary = strcmp(args->op, "add") == 0 || strcmp(args->op, "mul") == 0;
    void *x = NULL, *y = NULL, *result = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    if (status == KCS_OK && binary)
        status = kcs_saboteur_fetch(device, in[1], bytes, &y, err);
    if (status == KCS_OK) /* the poisoned output, so that unwritten elements stay poisoned */
        status = kcs_saboteur_fetch(device, out[0], bytes, &result, err);
    size_t written = half_only ? n / 2 : n;
    for (size_t i = 0; i < written && status == KCS_OK; i++) {
        double xi = kcs_load_element(x, args->dtype, i);
        double yi = binary ? kcs_load_element(y, args->dtype, i) : 0.0;
        double value = f(args, xi, yi);
        if (args->dtype == KCS_F32) /* as a float kernel would: every step in float */
            value = (double)(float)value;
        kcs_store_element(result, args->dtype, i, value);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], result, bytes, err);
    free(x);
    free(y);
    free(result);
    return status;
}

static double twice_x(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    return x + x;
}

static double flushed_product(const kcs_op_args *args, double x, double y)
{
    (void)args;
    double product = (double)(float)(x * y);
    return fabs(product) < 0x1.0p-126 ? 0.0 : product; /* f32 cases only: FLT_MIN */
}

static double identity(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    return x;
}

static double fmax_zero(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    return fmax(x, 0.0);
}

static double sigmoid_without_one(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    return 1.0 / exp(-x);
}

static double sigmoid_sign_flipped(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    return 1.0 / (1.0 + exp(x));
}

/* value rounded to nearest even in dtype, as a double. */
static double rounded(kcs_dtype dtype, double value)
{
    unsigned char element[8];
    kcs_store_element(element, dtype, 0, value);
    return kcs_load_element(element, dtype, 0);
}

/* sigmoid with every step rounded to the 16-bit case type, as a kernel
 * written in __half or bf16 arithmetic computes it. */
static double sigmoid_in_16_bits(const kcs_op_args *args, double x, double y)
{
    (void)y;
    double t = rounded(args->dtype, expf(-(float)x));
    double d = rounded(args->dtype, 1.0 + t);
    return rounded(args->dtype, 1.0 / d);
}

/* The float sum cut to its top 16 bits: bf16 by truncation (bits >> 16). */
static double sum_truncated_to_bf16(const kcs_op_args *args, double x, double y)
{
    (void)args;
    return kcs_bf16_to_float((kcs_bf16){(uint16_t)(kcs_float_bits((float)x + (float)y) >> 16)});
}

/* The float sum rounded to bf16 with ties away from zero: (bits + 0x8000) >> 16. */
static double sum_rounded_ties_away(const kcs_op_args *args, double x, double y)
{
    (void)args;
    return kcs_bf16_to_float((kcs_bf16){(uint16_t)((kcs_float_bits((float)x + (float)y) + 0x8000u) >> 16)});
}

/* The exact float product rounded to f16 first, then to bf16: 11 bits are
 * fewer than the 2 * 8 + 2 that would make the second rounding innocuous. */
static double product_rounded_through_f16(const kcs_op_args *args, double x, double y)
{
    (void)args;
    return rounded(KCS_F16, (double)((float)x * (float)y)); /* broken_map rounds it to bf16 */
}

/* The f16 sum, with overflow clamped to the largest finite value. */
static double sum_saturated_at_65504(const kcs_op_args *args, double x, double y)
{
    double sum = rounded(args->dtype, (double)((float)x + (float)y));
    return isinf(sum) ? copysign(65504.0, sum) : sum;
}

/* The f16 product, with subnormal results flushed to zero. */
static double f16_product_flushed(const kcs_op_args *args, double x, double y)
{
    double product = rounded(args->dtype, (double)((float)x * (float)y));
    return fabs(product) < 0x1.0p-14 ? 0.0 : product;
}

/* sigmoid as 0.5 + 0.5 tanh(x / 2), in the working type (float for f32 and
 * the 16-bit types): right in exact arithmetic, but its error is absolute,
 * about u, and it returns 0 below x = -17 in float. */
static double sigmoid_through_tanh(const kcs_op_args *args, double x, double y)
{
    (void)y;
    if (args->dtype == KCS_F64)
        return 0.5 + 0.5 * tanh(x * 0.5);
    return 0.5f + 0.5f * tanhf((float)x * 0.5f);
}

/* sigmoid as CUDA's -use_fast_math computes it in float: __expf(-x) as
 * ex2.approx of the rounded product -x * log2 e (an error of about 2u |x|,
 * within its documented 2 + floor(1.173 |x|) ulp), results below 2^-126
 * flushed, and __fdividef, which gives 0 for divisors beyond 2^126. */
static double sigmoid_fast_exp(const kcs_op_args *args, double x, double y)
{
    (void)args;
    (void)y;
    float t = exp2f(-(float)x * 1.44269504f);
    if (t < 0x1p-126f)
        t = 0.0f;
    float d = 1.0f + t;
    return d > 0x1p126f ? 0.0 : (double)(1.0f / d);
}

/* The correct function of each op, for the saboteur that writes half. */
static double correct(const kcs_op_args *args, double x, double y)
{
    if (strcmp(args->op, "add") == 0)
        return x + y;
    if (strcmp(args->op, "mul") == 0)
        return x * y;
    if (strcmp(args->op, "relu") == 0)
        return x < 0.0 ? 0.0 : x;
    return 1.0 / (1.0 + exp(-x));
}

#define MAP_SABOTEUR(function, f, half_only)                                                       \
    static kcs_status function(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[], \
                               kcs_buffer *const out[], double *seconds, kcs_error *err)             \
    {                                                                                              \
        *seconds = 0;                                                                              \
        return broken_map(device, args, in, out, f, half_only, err);                               \
    }

MAP_SABOTEUR(add_twice_x, twice_x, 0)
MAP_SABOTEUR(mul_flushes_subnormals, flushed_product, 0)
MAP_SABOTEUR(relu_passes_negatives, identity, 0)
MAP_SABOTEUR(relu_fmax, fmax_zero, 0)
MAP_SABOTEUR(sigmoid_drops_one, sigmoid_without_one, 0)
MAP_SABOTEUR(sigmoid_flips_sign, sigmoid_sign_flipped, 0)
MAP_SABOTEUR(writes_half, correct, 1)
MAP_SABOTEUR(sigmoid_computed_in_16_bits, sigmoid_in_16_bits, 0)
MAP_SABOTEUR(add_truncates_to_bf16, sum_truncated_to_bf16, 0)
MAP_SABOTEUR(add_rounds_ties_away, sum_rounded_ties_away, 0)
MAP_SABOTEUR(mul_rounds_through_f16, product_rounded_through_f16, 0)
MAP_SABOTEUR(add_saturates, sum_saturated_at_65504, 0)
MAP_SABOTEUR(mul_flushes_f16_subnormals, f16_product_flushed, 0)
MAP_SABOTEUR(sigmoid_tanh_form, sigmoid_through_tanh, 0)
MAP_SABOTEUR(sigmoid_fast_math, sigmoid_fast_exp, 0)

#define BOTH_TYPES(op, name, description, function)                                                \
    {op, KCS_F64, name, description, function, NULL}, {op, KCS_F32, name, description, function, NULL}
#define ALL_TYPES(op, name, description, function)                                                 \
    BOTH_TYPES(op, name, description, function), {op, KCS_F16, name, description, function, NULL},  \
        {op, KCS_BF16, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/elementwise.txt says which saboteur must fail where):
 * kcs-saboteur-cases: elementwise/add-f64-n93 elementwise/relu-f32-special elementwise/sigmoid-f64-n93 elementwise/mul-f32-subnormal-results elementwise/sigmoid-f16-n93 elementwise/sigmoid-bf16-n93 elementwise/add-bf16-ties elementwise/mul-bf16-n93 elementwise/add-f16-overflow elementwise/mul-f16-subnormal-results elementwise/sigmoid-f32-large elementwise/sigmoid-bf16-large */
static const kcs_kernel rows[] = {
    BOTH_TYPES("add", "adds-x-to-itself", "x + x: the wrong operand", add_twice_x),
    {"mul", KCS_F32, "flushes-subnormals", "subnormal products flushed to zero", mul_flushes_subnormals,
     NULL},
    BOTH_TYPES("relu", "passes-negatives", "returns x unchanged", relu_passes_negatives),
    BOTH_TYPES("relu", "fmax-zero", "fmax(x, 0), which turns NaN into 0", relu_fmax),
    BOTH_TYPES("sigmoid", "drops-the-one", "1 / exp(-x)", sigmoid_drops_one),
    BOTH_TYPES("sigmoid", "exp-sign-flipped", "1 / (1 + exp(x))", sigmoid_flips_sign),
    ALL_TYPES("add", "writes-half", "right values, first half of the output only", writes_half),
    ALL_TYPES("mul", "writes-half", "right values, first half of the output only", writes_half),
    ALL_TYPES("relu", "writes-half", "right values, first half of the output only", writes_half),
    ALL_TYPES("sigmoid", "writes-half", "right values, first half of the output only", writes_half),
    {"sigmoid", KCS_F16, "computes-in-f16", "every step rounded to f16 instead of computed in f32",
     sigmoid_computed_in_16_bits, NULL},
    {"sigmoid", KCS_BF16, "computes-in-bf16", "every step rounded to bf16 instead of computed in f32",
     sigmoid_computed_in_16_bits, NULL},
    {"add", KCS_BF16, "truncates-to-bf16", "the f32 sum cut to its top 16 bits", add_truncates_to_bf16, NULL},
    {"add", KCS_BF16, "rounds-ties-away", "the f32 sum rounded to bf16 with ties away from zero",
     add_rounds_ties_away, NULL},
    {"mul", KCS_BF16, "rounds-through-f16", "the f32 product rounded to f16, then to bf16", mul_rounds_through_f16,
     NULL},
    {"add", KCS_F16, "saturates-at-65504", "overflow clamped to the largest finite f16", add_saturates, NULL},
    {"mul", KCS_F16, "flushes-subnormals", "subnormal f16 products flushed to zero", mul_flushes_f16_subnormals,
     NULL},
    ALL_TYPES("sigmoid", "through-tanh", "0.5 + 0.5 tanh(x/2) in the working type", sigmoid_tanh_form),
    {"sigmoid", KCS_F32, "fast-exp", "CUDA fast math: __expf and __fdividef, subnormals flushed", sigmoid_fast_math,
     NULL},
    {"sigmoid", KCS_F16, "fast-exp", "CUDA fast math in f32, rounded to f16", sigmoid_fast_math, NULL},
    {"sigmoid", KCS_BF16, "fast-exp", "CUDA fast math in f32, rounded to bf16", sigmoid_fast_math, NULL},
};

const kcs_kernel_table kcs_saboteur_elementwise_kernels = KCS_KERNEL_TABLE(rows);
