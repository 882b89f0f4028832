/* saboteur_elementwise.c: broken add, mul, relu and sigmoid, each a mistake
 * real kernels make: the wrong operand, a relu that passes negatives or
 * drops NaN (fmax), a sigmoid without its 1 + or with the sign of the
 * exponent flipped, subnormal results flushed to zero, a grid that covers
 * only half the elements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

#define BOTH_TYPES(op, name, description, function)                                                \
    {op, KCS_F64, name, description, function, NULL}, {op, KCS_F32, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/elementwise.txt says which saboteur must fail where):
 * kcs-saboteur-cases: elementwise/add-f64-n93 elementwise/relu-f32-special elementwise/sigmoid-f64-n93 elementwise/mul-f32-subnormal-results */
static const kcs_kernel rows[] = {
    BOTH_TYPES("add", "adds-x-to-itself", "x + x: the wrong operand", add_twice_x),
    {"mul", KCS_F32, "flushes-subnormals", "subnormal products flushed to zero", mul_flushes_subnormals,
     NULL},
    BOTH_TYPES("relu", "passes-negatives", "returns x unchanged", relu_passes_negatives),
    BOTH_TYPES("relu", "fmax-zero", "fmax(x, 0), which turns NaN into 0", relu_fmax),
    BOTH_TYPES("sigmoid", "drops-the-one", "1 / exp(-x)", sigmoid_drops_one),
    BOTH_TYPES("sigmoid", "exp-sign-flipped", "1 / (1 + exp(x))", sigmoid_flips_sign),
    BOTH_TYPES("add", "writes-half", "right values, first half of the output only", writes_half),
    BOTH_TYPES("mul", "writes-half", "right values, first half of the output only", writes_half),
    BOTH_TYPES("relu", "writes-half", "right values, first half of the output only", writes_half),
    BOTH_TYPES("sigmoid", "writes-half", "right values, first half of the output only", writes_half),
};

const kcs_kernel_table kcs_saboteur_elementwise_kernels = KCS_KERNEL_TABLE(rows);
