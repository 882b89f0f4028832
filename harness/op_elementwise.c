/* op_elementwise.c: the elementwise descriptors: add(x, y), mul(x, y),
 * relu(x) and sigmoid(x), out[i] = f(x[i] [, y[i]]), f16, bf16, f32 and f64.
 *
 * docs/elementwise.md is the normative definition and derives the bounds
 * computed here, per function:
 *   add, mul  correctly rounded, in every type: f16 and bf16 computed in
 *             f32 and rounded again still are (the docs derive it). The
 *             oracle computes the correctly rounded result itself (in double,
 *             which is exact or rounds innocuously: Figueroa 1995, then
 *             rounded once to the type), and the bound is half the gap to its
 *             nearest neighbour, so only that value passes.
 *   relu      exact: x < 0 ? 0 : x, so relu(NaN) is NaN; bound 0.
 *   sigmoid   1 / (1 + exp(-x)) with exp within 3 ulp and, in f32, the
 *             divide within 2.5 ulp (OpenCL's limits without fast math; f64
 *             divides are correctly rounded): relative error below
 *             (1 + 2Du) / ((1 - 6u)(1 - u)) - 1 with D = 2.5 or 0.5 (about
 *             12u in f32, 8u in f64), plus half the smallest subnormal; where
 *             exp(-x) overflows the exact result is below 2 / (largest
 *             finite) and 0 is allowed.
 *             f16 and bf16 are computed in f32 and rounded once to the type:
 *             the values of the type that a result within the f32 bound can
 *             round to (usually the correctly rounded one alone; both
 *             neighbours of a midpoint where the f32 error straddles it) are
 *             given as their centre, the expected value, and half their
 *             spread, the bound, so that exactly they pass.
 *             The oracle uses long double expl (64-bit significand).
 * One file holds the four ops (configure.py registers each kcs_op below).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bounds.h"
#include "op.h"
#include "kcs_ref_elementwise.h"

_Static_assert(LDBL_MANT_DIG >= 64, "the sigmoid oracle needs long double with a 64-bit significand or more");

static const char *const sizes[] = {"n", NULL};
static const char *const params[] = {NULL};
static const char *const binary_inputs[] = {"x", "y", NULL};
static const kcs_dtype dtypes[] = {KCS_ELEMENTWISE_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};
static const char *const unary_inputs[] = {"x", NULL};

/* The ulp budget of the device's exp in sigmoid (OpenCL 1.2, 7.4: exp is
 * within 3 ulp in f32 and f64; CUDA's expf is within 2, exp within 1). */
static const double sigmoid_exp_ulps = 3.0;

/* The type a dtype is computed in (../shared/SPEC.md: f16 and bf16 in f32). */
static kcs_dtype compute_dtype(kcs_dtype dtype)
{
    return dtype == KCS_F64 ? KCS_F64 : KCS_F32;
}

/* The ulp budget of its divide: OpenCL allows 2.5 ulp for an f32 divide
 * unless the program asks for correct rounding; f64 divides are IEEE. */
static double sigmoid_divide_ulps(kcs_dtype compute)
{
    return compute == KCS_F32 ? 2.5 : 0.5;
}

/* Relative error of the long double sigmoid before its rounding to double:
 * expl within 8 of its ulps (glibc documents 1 on x86-64), the add and the
 * divide 1/2 ulp each, an ulp of long double being at most 2^-63 relative. */
static const double sigmoid_oracle_error = 0x1.0p-59;

/* Which of the four ops, from the op name (looked up once per call, not per element). */
typedef enum { ADD, MUL, RELU, SIGMOID } function;

static function function_of(const kcs_op_args *args)
{
    if (strcmp(args->op, "add") == 0)
        return ADD;
    if (strcmp(args->op, "mul") == 0)
        return MUL;
    return strcmp(args->op, "relu") == 0 ? RELU : SIGMOID;
}

static int is_binary(const kcs_op_args *args)
{
    return function_of(args) <= MUL;
}

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    (void)err;
    args->elementwise.n = (size_t)kcs_case_size(c, "n", 0);
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    size_t n = args->elementwise.n;
    memset(layout, 0, sizeof *layout);
    layout->input_count = is_binary(args) ? 2 : 1;
    kcs_vector_spec(&layout->inputs[0], "x", args->dtype, n);
    if (is_binary(args))
        kcs_vector_spec(&layout->inputs[1], "y", args->dtype, n);
    layout->output_count = 1;
    kcs_vector_spec(&layout->outputs[0], "out", args->dtype, n);
    return KCS_OK;
}

/* value rounded once, to nearest even, to dtype (f16, bf16, f32), as a double. */
static double rounded_to(kcs_dtype dtype, double value)
{
    unsigned char element[8];
    kcs_store_element(element, dtype, 0, value);
    return kcs_load_element(element, dtype, 0);
}

/* The correctly rounded sum and product in the case dtype. For f16, bf16
 * and f32 the double result is exact (every product; the sums of f16) or
 * rounded once more to the type, which is still correct rounding since
 * 53 >= 2p + 2 for p = 24, 11, 8 (Figueroa 1995; double has the exponent
 * range of every such sum and product, so nothing underflows on the way). */
static double correctly_rounded(function f, kcs_dtype dtype, double x, double y)
{
    double exact_or_rounded = f == ADD ? x + y : x * y;
    return dtype == KCS_F64 ? exact_or_rounded : rounded_to(dtype, exact_or_rounded);
}

/* relu(x) = x < 0 ? 0 : x: NaN stays NaN (fmax(x, 0) would give 0). */
static double relu(double x)
{
    return x < 0.0 ? 0.0 : x;
}

/* 1 / (1 + e^-x) in long double, rounded once to double. */
static double sigmoid(double x)
{
    long double t = expl(-(long double)x);
    return (double)(1.0L / (1.0L + t));
}

/* The bound of sigmoid at an expected value g computed in f32 or f64 and
 * returned in that type (docs/elementwise.md). */
static double sigmoid_bound(double g, kcs_dtype compute)
{
    double u = kcs_unit_roundoff(compute), u64 = kcs_unit_roundoff(KCS_F64);
    double tiny = kcs_smallest_subnormal(compute), tiny64 = kcs_smallest_subnormal(KCS_F64);
    double exp_error = 2.0 * sigmoid_exp_ulps * u; /* E ulp, an ulp being at most 2u relative */
    double divide_error = 2.0 * sigmoid_divide_ulps(compute) * u;
    double relative = (1.0 + divide_error) / ((1.0 - exp_error) * (1.0 - u)) - 1.0;
    double oracle_relative = u64 + sigmoid_oracle_error;
    /* half a subnormal of the compute type (rounding a subnormal quotient) and
     * of f64 (rounding the oracle), summed and rounded up: 2^-1075 is no double */
    double half_subnormals = compute == KCS_F64 ? tiny64 : tiny / 2.0 + tiny64;
    double largest = (g + tiny64) / (1.0 - oracle_relative); /* the exact value is at most this */
    double bound = relative * largest + oracle_relative * largest + half_subnormals;
    if (largest <= 2.0 / kcs_largest_finite(compute))
        bound = fmax(bound, largest); /* exp(-x) may overflow and give 0 */
    return kcs_bound_widen(bound);
}

/* The values of f16 or bf16 a sigmoid of x computed in f32 may give
 * (docs/elementwise.md): the f32 result lies within the f32 bound of the
 * oracle's value s, and rounding it to the type is monotone, so the output is
 * one of the values of the type from the rounding of s - reach to that of
 * s + reach, every one of which can occur. */
static void half_sigmoid_values(double x, kcs_dtype dtype, double *lowest, double *highest)
{
    double s = sigmoid(x);
    /* the f32 bound, widened by far more than the rounding of s +- reach */
    double reach = sigmoid_bound(s, compute_dtype(dtype)) + fabs(s) * 0x1.0p-50;
    *lowest = rounded_to(dtype, s - reach);
    *highest = rounded_to(dtype, s + reach);
}

/* The expected value of sigmoid in f16 or bf16: the centre of those values,
 * so that a bound of half their spread admits them and nothing else (the
 * correctly rounded value where only it can occur; the midpoint between the
 * two neighbours where the f32 interval straddles a midpoint of the type,
 * which is not itself a value of the type). */
static double half_sigmoid_centre(double x, kcs_dtype dtype)
{
    if (isnan(x) || isinf(x))
        return sigmoid(x); /* NaN, or exactly 1 or 0 */
    double lowest, highest;
    half_sigmoid_values(x, dtype, &lowest, &highest);
    return lowest + (highest - lowest) / 2.0; /* exact: two values of the type, in double */
}

/* The bound of sigmoid in f16 or bf16 at x for the expected value g: the
 * distance from g to the farther of the values it may give. At the oracle's
 * centre that is half their spread (0 where one value alone can occur), and
 * exactly those values pass; an expected value given from elsewhere is
 * widened to reach both ends. */
static double half_sigmoid_bound(double x, double g, kcs_dtype dtype)
{
    double lowest, highest;
    half_sigmoid_values(x, dtype, &lowest, &highest);
    return fmax(g - lowest, highest - g);
}

static double element_value(function f, kcs_dtype dtype, double x, double y)
{
    switch (f) {
    case ADD:
    case MUL: return correctly_rounded(f, dtype, x, y);
    case RELU: return relu(x);
    default: /* f16, bf16: the centre of the values an f32 sigmoid within its bound may round to */
        return compute_dtype(dtype) == dtype ? sigmoid(x) : half_sigmoid_centre(x, dtype);
    }
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    kcs_expected *e = &expected[0];
    function f = function_of(args);
    int binary = is_binary(args);
    for (size_t t = 0; t < e->count; t++) {
        size_t i = e->indices ? e->indices[t] : t;
        double x = kcs_load_element(in[0], args->dtype, i);
        double y = binary ? kcs_load_element(in[1], args->dtype, i) : 0.0;
        e->values[t] = element_value(f, args->dtype, x, y);
    }
    return KCS_OK;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    kcs_expected *e = &expected[0];
    function f = function_of(args);
    int binary = is_binary(args);
    for (size_t t = 0; t < e->count; t++) {
        double g = e->values[t];
        size_t i = e->indices ? e->indices[t] : t;
        double x = kcs_load_element(in[0], args->dtype, i);
        if (!isfinite(g) || (f == SIGMOID && isinf(x)) || f == RELU)
            e->bounds[t] = 0.0; /* exact: NaN, infinities, relu, sigmoid(+-inf) = 1, 0 */
        else if (binary)
            e->bounds[t] = kcs_correctly_rounded_bound(g, args->dtype);
        else if (compute_dtype(args->dtype) != args->dtype)
            e->bounds[t] = half_sigmoid_bound(x, g, args->dtype);
        else
            e->bounds[t] = sigmoid_bound(g, args->dtype);
    }
    return KCS_OK;
}

static double bytes(const kcs_op_args *args)
{
    double arrays = is_binary(args) ? 3.0 : 2.0;
    return arrays * (double)args->elementwise.n * (double)kcs_dtype_size(args->dtype);
}

static double flops(const kcs_op_args *args)
{
    /* sigmoid: negate, exp (counted as one), add, divide */
    double per_element = function_of(args) == SIGMOID ? 4.0 : 1.0;
    return per_element * (double)args->elementwise.n;
}

/* add and mul are correctly rounded: their bounds are measured from the
 * value of the type (relu's exact result is one already). sigmoid in f16 and
 * bf16 is not: its expected value is the centre of the values it may give,
 * which is not a value of the type where there are two, and an expected
 * value given more precisely is kept as it is (its bound reaches both ends). */
static int bound_from_rounded(const kcs_op_args *args, int output)
{
    (void)output;
    function f = function_of(args);
    return f == ADD || f == MUL;
}

/* What the four descriptors share: all but the name, summary and inputs. */

#define ELEMENTWISE_COMMON                                                                         \
    .sizes = sizes, .params = params, .dtypes = dtypes, .parse_args = parse_args, .layout = layout, \
    .oracle = oracle, .bounds = bounds, .bound_from_rounded = bound_from_rounded, .bytes = bytes, .flops = flops

const kcs_op kcs_op_add = {
    .name = "add",
    .summary = "out[i] = x[i] + y[i], correctly rounded",
    .inputs = binary_inputs,
    ELEMENTWISE_COMMON,
};

const kcs_op kcs_op_mul = {
    .name = "mul",
    .summary = "out[i] = x[i] * y[i], correctly rounded",
    .inputs = binary_inputs,
    ELEMENTWISE_COMMON,
};

const kcs_op kcs_op_relu = {
    .name = "relu",
    .summary = "out[i] = x[i] < 0 ? 0 : x[i], exact (NaN stays NaN)",
    .inputs = unary_inputs,
    ELEMENTWISE_COMMON,
};

const kcs_op kcs_op_sigmoid = {
    .name = "sigmoid",
    .summary = "out[i] = 1 / (1 + exp(-x[i])), within about 12 ulp (f32), 8 (f64); f16, bf16 rounded from within the f32 bound",
    .inputs = unary_inputs,
    ELEMENTWISE_COMMON,
};
