/* elementwise.c: the elementwise descriptors: add(x, y), mul(x, y),
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
 *
 * Each op's arithmetic models (explain.h) follow: a 16-bit conversion that
 * truncates, rounds ties away, rounds through f16 or saturates; a flush of
 * subnormals; sigmoid through tanh, with CUDA's fast math, or computed in the
 * 16-bit type. They share the oracle, the f32 bound and its rounding to the
 * type with the op.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "explain.h"
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

/* The correctly rounded sum and product in the case dtype. For f16, bf16
 * and f32 the double result is exact (every product; the sums of f16) or
 * rounded once more to the type, which is still correct rounding since
 * 53 >= 2p + 2 for p = 24, 11, 8 (Figueroa 1995; double has the exponent
 * range of every such sum and product, so nothing underflows on the way). */
static double correctly_rounded(function f, kcs_dtype dtype, double x, double y)
{
    double exact_or_rounded = f == ADD ? x + y : x * y;
    return dtype == KCS_F64 ? exact_or_rounded : kcs_rounded_to(dtype, exact_or_rounded);
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

/* How a kernel turns its f32 result into f16 or bf16: to nearest even (the
 * definition), or as the arithmetic models of docs/elementwise.md do. */
typedef enum {
    TO_NEAREST,  /* to nearest, ties to even */
    TOWARD_ZERO, /* truncated: bf16 as the top 16 bits of the float */
    TIES_AWAY,   /* to nearest, ties away from zero */
    THROUGH_F16, /* to f16, then to bf16: two roundings */
    SATURATING,  /* to nearest even, overflow clamped to the largest finite value */
    FLUSHING,    /* to nearest even, a subnormal of the type flushed to zero */
} conversion;

/* How a kernel computes sigmoid in f32 or f64 (the models' bounds below). */
typedef enum {
    SIGMOID_DEFINITION, /* 1 / (1 + exp(-x)) within the op's allowances */
    THROUGH_TANH,       /* 0.5 + 0.5 tanh(x / 2) */
    FAST_EXP,           /* __expf and __fdividef, CUDA's fast math */
    IN_STORAGE_TYPE,    /* every step rounded to the 16-bit type */
} sigmoid_form;

/* The arithmetic of the op's definition or of one of its models. */
typedef struct {
    conversion to_type;
    sigmoid_form form;
} arithmetic;

static const arithmetic definition = {TO_NEAREST, SIGMOID_DEFINITION};

/* value rounded to the 16-bit dtype by the conversion. */
static double converted(conversion to_type, kcs_dtype dtype, double value);

/* How far from the oracle's value s an f32 or f64 sigmoid of x computed by
 * form may lie; 0 where it is exactly 0 or 1 (*exact). */
static double sigmoid_reach(sigmoid_form form, double x, double s, kcs_dtype compute, double *exact);

/* The values of f16 or bf16 a sigmoid of x computed in f32 by the arithmetic
 * may give (docs/elementwise.md): the f32 result lies within its bound of the
 * oracle's value s, and every conversion is monotone, so the output is one of
 * the values of the type from the conversion of s - reach to that of
 * s + reach, every one of which can occur. */
static void half_sigmoid_values(double x, kcs_dtype dtype, const arithmetic *a, double *lowest, double *highest)
{
    double s = sigmoid(x), exact = s;
    double reach = sigmoid_reach(a->form, x, s, compute_dtype(dtype), &exact);
    if (reach == 0.0) {
        *lowest = *highest = converted(a->to_type, dtype, exact);
        return;
    }
    reach += fabs(s) * 0x1.0p-50; /* far more than the rounding of s +- reach */
    *lowest = converted(a->to_type, dtype, s - reach);
    *highest = converted(a->to_type, dtype, s + reach);
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
    half_sigmoid_values(x, dtype, &definition, &lowest, &highest);
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
    half_sigmoid_values(x, dtype, &definition, &lowest, &highest);
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

/* ---- Arithmetic models: what a failure is explained by ----------------------
 *
 * docs/elementwise.md, "Arithmetic models", derives each model's values and
 * bound. The models share the op's oracle (sigmoid), its f32 bound and its
 * rounding to the 16-bit types (half_sigmoid_values, with the model's form and
 * conversion); each element's value is the centre of the values the model
 * admits and its bound half their spread, so that exactly they pass. */

/* The value of the 16-bit dtype next to value (one of its values), one step
 * up or down in magnitude: its bits + 1 or - 1 (sign and magnitude). */
static double half_step(kcs_dtype dtype, double value, int away_from_zero)
{
    uint16_t bits = dtype == KCS_F16 ? kcs_f16_from_double(value) : kcs_bf16_from_double(value);
    bits = (uint16_t)(away_from_zero ? bits + 1 : bits - 1);
    return dtype == KCS_F16 ? kcs_f16_to_double(bits) : kcs_bf16_to_double(bits);
}

/* value rounded toward zero to the 16-bit dtype: never above it in magnitude,
 * so a finite value never becomes infinite. */
static double toward_zero(kcs_dtype dtype, double value)
{
    double nearest = kcs_rounded_to(dtype, value);
    return fabs(nearest) > fabs(value) ? half_step(dtype, nearest, 0) : nearest;
}

static double converted(conversion to_type, kcs_dtype dtype, double value)
{
    if (isnan(value))
        return value;
    double nearest = kcs_rounded_to(dtype, value);
    switch (to_type) {
    case TOWARD_ZERO: return toward_zero(dtype, value);
    case TIES_AWAY: {
        double below = toward_zero(dtype, value);
        if (below == value)
            return below;
        double above = half_step(dtype, below, 1);
        return fabs(value - below) == fabs(above - value) ? above : nearest;
    }
    case THROUGH_F16: return kcs_rounded_to(dtype, kcs_rounded_to(KCS_F16, value));
    case SATURATING: /* as PTX's cvt .satfinite: an infinity too becomes the largest finite value */
        return isinf(nearest) ? copysign(kcs_largest_finite(dtype), value) : nearest;
    case FLUSHING: return fabs(nearest) < kcs_smallest_normal(dtype) ? copysign(0.0, nearest) : nearest;
    default: return nearest;
    }
}

/* The bound of 0.5 + 0.5 tanh(x / 2) in f32 or f64 at the oracle's value s:
 * tanh within 5 ulp (OpenCL's limit), the halving exact, one rounding of the
 * sum (or of the fma). The error is absolute, 5u |2s - 1| + u s, where the
 * definition's is relative; plus the oracle's own error and 4 smallest
 * subnormals for the underflow of x / 2, of tanh and of the halving. (Where
 * tanh(x / 2) lies within u/8 of -1 or 1, sigmoid_reach takes tanh to return
 * exactly -1 or 1, as every implementation does there, and the result to be
 * exactly 0 or 1.) */
static double tanh_form_bound(double s, kcs_dtype compute)
{
    const double tanh_ulps = 5.0;
    double u = kcs_unit_roundoff(compute), tiny = kcs_smallest_subnormal(compute);
    double tiny64 = kcs_smallest_subnormal(KCS_F64), oracle_relative = kcs_unit_roundoff(KCS_F64) + sigmoid_oracle_error;
    double largest = (s + tiny64) / (1.0 - oracle_relative);
    double tanh_size = fmin(1.0, fabs(2.0 * s - 1.0) + 2.0 * (oracle_relative * largest + tiny64)); /* |tanh(x/2)| */
    double bound = tanh_ulps * u * tanh_size * (1.0 + u) + u * largest + 4.0 * tiny + oracle_relative * largest + tiny64;
    return kcs_bound_widen(bound);
}

/* The bound of CUDA's fast-math sigmoid in f32 at x with the oracle's value
 * s: __expf within 2 + floor(1.173 |x|) ulp (CUDA C++ Programming Guide,
 * intrinsic functions) and flushing results below 2^-126, the add rounded,
 * __fdividef within 2 ulp for divisors up to 2^126 and 0 beyond. The
 * definition's derivation with those allowances. Where the divisor surely
 * passes 2^126 the result is exactly 0 (*exact, and reach 0; it is never
 * subnormal), and 0 is admitted wherever it may. */
static double fast_exp_bound(double x, double s, double *exact)
{
    double u = kcs_unit_roundoff(KCS_F32), tiny64 = kcs_smallest_subnormal(KCS_F64);
    double oracle_relative = kcs_unit_roundoff(KCS_F64) + sigmoid_oracle_error;
    double exp_error = 2.0 * (2.0 + floor(1.173 * fabs(x))) * u;
    double largest = (s + tiny64) / (1.0 - oracle_relative);
    double share = fmin(1.0, fmax(0.0, 1.0 - (s - tiny64) / (1.0 + oracle_relative))); /* 1 - s, at most */
    double low = 1.0 - exp_error * share - kcs_smallest_normal(KCS_F32); /* a flushed exp is off by < 2^-126 */
    double bound = low > 0.0 ? ((1.0 + 4.0 * u) / (low * (1.0 - u)) - 1.0) * largest : INFINITY;
    bound += oracle_relative * largest + tiny64;
    long double t = expl(-(long double)x); /* the divisor 1 + exp(-x), as small and as large as it may be */
    if ((1.0L + t * (1.0L - exp_error)) * (1.0L - u) > 0x1.0p126L) {
        *exact = 0.0; /* __fdividef gives 0 */
        return 0.0;
    }
    if ((1.0L + t * (1.0L + exp_error)) * (1.0L + u) > 0x1.0p126L)
        bound = fmax(bound, largest); /* it may give 0 */
    return kcs_bound_widen(bound);
}

static double sigmoid_reach(sigmoid_form form, double x, double s, kcs_dtype compute, double *exact)
{
    double saturated = kcs_unit_roundoff(compute) / 16.0;
    switch (form) {
    case THROUGH_TANH:
        if (s < saturated || 1.0 - s < saturated) {
            *exact = s < saturated ? 0.0 : 1.0; /* tanh(x / 2) is exactly -1 or 1 */
            return 0.0;
        }
        return tanh_form_bound(s, compute);
    case FAST_EXP: return fast_exp_bound(x, s, exact);
    default: return sigmoid_bound(s, compute);
    }
}

/* The two values of the 16-bit dtype around the positive value, or value itself
 * twice where it is one; beyond the largest finite value the upper one is
 * infinite, and past the next power of two both are. */
static void half_neighbours(kcs_dtype dtype, double value, double *below, double *above)
{
    double nearest = kcs_rounded_to(dtype, value), largest = kcs_largest_finite(dtype);
    if (value > largest) {
        *below = value >= ldexp(1.0, ilogb(largest) + 1) ? INFINITY : largest;
        *above = INFINITY;
    } else if (nearest == value) {
        *below = *above = value;
    } else if (nearest > value) {
        *below = half_step(dtype, nearest, 0);
        *above = nearest;
    } else {
        *below = nearest;
        *above = half_step(dtype, nearest, 1);
    }
}

/* sigmoid with every step in the 16-bit dtype: t = exp(-x) faithful (either
 * value of the type around the exponential), 1 + t and 1 / d correctly rounded
 * (as IEEE half arithmetic, or f32 arithmetic rounded to the type, gives them). */
static double sigmoid_in_storage_type(kcs_dtype dtype, double t)
{
    double d = kcs_rounded_to(dtype, 1.0 + t); /* inf stays inf */
    return kcs_rounded_to(dtype, 1.0 / d);
}

/* The values a model admits from low to high: their centre and half their spread. */
static void admit(double low, double high, double *value, double *bound)
{
    *value = low + (high - low) / 2.0;
    *bound = low == high ? 0.0 : kcs_bound_widen(fmax(*value - low, high - *value));
}

/* One of two results, with or without subnormal inputs read as zero: both admitted. */
static void admit_either(double one, double other, double *value, double *bound)
{
    if (one == other || isnan(one) || isnan(other) || isinf(one) || isinf(other)) {
        *value = one; /* a NaN or an infinity: the result with the inputs as they are */
        *bound = 0.0;
    } else {
        admit(fmin(one, other), fmax(one, other), value, bound);
    }
}

/* value, or zero where it is a subnormal of dtype. */
static double flushed(kcs_dtype dtype, double value)
{
    return fabs(value) < kcs_smallest_normal(dtype) ? copysign(0.0, value) : value;
}

/* The value and bound of one element under a model's arithmetic. */
static void model_element(const arithmetic *a, function f, kcs_dtype dtype, double x, double y, double *value,
                          double *bound)
{
    int half = compute_dtype(dtype) != dtype;
    *bound = 0.0;
    if (f == RELU) { /* only a flush departs from it: a subnormal x read as zero */
        *value = relu(x);
        if (a->to_type == FLUSHING && x > 0.0 && x < kcs_smallest_normal(dtype))
            admit(0.0, x, value, bound);
    } else if (f != SIGMOID && a->to_type == FLUSHING) {
        admit_either(flushed(dtype, correctly_rounded(f, dtype, x, y)),
                     flushed(dtype, correctly_rounded(f, dtype, flushed(dtype, x), flushed(dtype, y))), value, bound);
    } else if (f != SIGMOID) { /* a 16-bit add or mul: the f32 result, exact or correctly rounded, converted */
        float x32 = (float)x, y32 = (float)y;
        *value = converted(a->to_type, dtype, (double)(f == ADD ? x32 + y32 : x32 * y32));
    } else if (isnan(x) || isinf(x)) {
        *value = sigmoid(x); /* NaN, or exactly 1 or 0 in every model */
    } else if (a->form == IN_STORAGE_TYPE) {
        double below, above;
        half_neighbours(dtype, (double)expl(-(long double)x), &below, &above);
        admit(sigmoid_in_storage_type(dtype, above), sigmoid_in_storage_type(dtype, below), value, bound);
    } else if (half) {
        double lowest, highest;
        half_sigmoid_values(x, dtype, a, &lowest, &highest);
        admit(lowest, highest, value, bound);
    } else {
        double s = sigmoid(x), exact = s, reach = sigmoid_reach(a->form, x, s, dtype, &exact);
        *value = exact;
        *bound = reach;
        if (a->to_type == FLUSHING && s - reach < kcs_smallest_normal(dtype))
            admit(0.0, flushed(dtype, s + reach), value, bound);
    }
}

static kcs_status model_expect(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                               const arithmetic *a)
{
    kcs_expected *e = &expected[0];
    function f = function_of(args);
    int binary = is_binary(args);
    for (size_t t = 0; t < e->count; t++) {
        size_t i = e->indices ? e->indices[t] : t;
        double x = kcs_load_element(in[0], args->dtype, i);
        double y = binary ? kcs_load_element(in[1], args->dtype, i) : 0.0;
        model_element(a, f, args->dtype, x, y, &e->values[t], &e->bounds[t]);
    }
    return KCS_OK;
}

static int is_16_bit(const kcs_op_args *args)
{
    return compute_dtype(args->dtype) != args->dtype;
}

static int is_bf16(const kcs_op_args *args)
{
    return args->dtype == KCS_BF16;
}

static int computed_in_f32(const kcs_op_args *args)
{
    return compute_dtype(args->dtype) == KCS_F32;
}

/* A model's expect function: the shared routine with its arithmetic. */
#define MODEL_EXPECT(function, ...)                                                                \
    static kcs_status function(const kcs_op_args *args, void *const in[], kcs_expected expected[],  \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const arithmetic a = {__VA_ARGS__};                                                 \
        (void)err;                                                                                 \
        return model_expect(args, in, expected, &a);                                               \
    }

MODEL_EXPECT(expect_truncated, TOWARD_ZERO, SIGMOID_DEFINITION)
MODEL_EXPECT(expect_ties_away, TIES_AWAY, SIGMOID_DEFINITION)
MODEL_EXPECT(expect_through_f16, THROUGH_F16, SIGMOID_DEFINITION)
MODEL_EXPECT(expect_saturated, SATURATING, SIGMOID_DEFINITION)
MODEL_EXPECT(expect_flushed, FLUSHING, SIGMOID_DEFINITION)
MODEL_EXPECT(expect_through_tanh, TO_NEAREST, THROUGH_TANH)
MODEL_EXPECT(expect_fast_exp, TO_NEAREST, FAST_EXP)
MODEL_EXPECT(expect_in_storage_type, TO_NEAREST, IN_STORAGE_TYPE)

#define TRUNCATES(op) {op "-truncates", "rounds the f32 result toward zero (cuts its bits) to the 16-bit type", is_16_bit, expect_truncated}
#define TIES_AWAY_MODEL(op) {op "-rounds-ties-away", "rounds the f32 result to the 16-bit type with ties away from zero, not to even", is_16_bit, expect_ties_away}
#define THROUGH_F16_MODEL(op) {op "-rounds-through-f16", "rounds the f32 result to f16, then to bf16: two roundings", is_bf16, expect_through_f16}
#define SATURATES(op) {op "-saturates", "converts to the 16-bit type with overflow clamped to the largest finite value, not infinity", is_16_bit, expect_saturated}
#define FLUSHES(op) {op "-flushes-subnormals", "flushes subnormal results (and inputs, or not) to zero", NULL, expect_flushed}

static const kcs_model add_truncates = TRUNCATES("add"), add_ties_away = TIES_AWAY_MODEL("add"),
                       add_through_f16 = THROUGH_F16_MODEL("add"), add_saturates = SATURATES("add"),
                       add_flushes = FLUSHES("add");
static const kcs_model mul_truncates = TRUNCATES("mul"), mul_ties_away = TIES_AWAY_MODEL("mul"),
                       mul_through_f16 = THROUGH_F16_MODEL("mul"), mul_saturates = SATURATES("mul"),
                       mul_flushes = FLUSHES("mul");
static const kcs_model relu_flushes = FLUSHES("relu");
static const kcs_model sigmoid_through_tanh = {
    "sigmoid-through-tanh", "computes 0.5 + 0.5 tanh(x/2), whose error is absolute (about u) where the definition's is relative",
    NULL, expect_through_tanh};
static const kcs_model sigmoid_fast_exp = {
    "sigmoid-fast-exp", "computes 1 / (1 + exp(-x)) with CUDA's fast-math __expf (2 + floor(1.173|x|) ulp) and __fdividef",
    computed_in_f32, expect_fast_exp};
static const kcs_model sigmoid_in_storage = {
    "sigmoid-computes-in-storage-type", "rounds exp(-x), 1 + exp(-x) and the quotient each to the 16-bit type instead of computing in f32",
    is_16_bit, expect_in_storage_type};
static const kcs_model sigmoid_truncates = TRUNCATES("sigmoid"), sigmoid_ties_away = TIES_AWAY_MODEL("sigmoid"),
                       sigmoid_through_f16 = THROUGH_F16_MODEL("sigmoid"), sigmoid_flushes = FLUSHES("sigmoid");

static const kcs_model *const add_models[] = {&add_truncates, &add_ties_away, &add_through_f16, &add_saturates,
                                              &add_flushes, NULL};
static const kcs_model *const mul_models[] = {&mul_truncates, &mul_ties_away, &mul_through_f16, &mul_saturates,
                                              &mul_flushes, NULL};
static const kcs_model *const relu_models[] = {&relu_flushes, NULL};
static const kcs_model *const sigmoid_models[] = {&sigmoid_through_tanh, &sigmoid_fast_exp, &sigmoid_in_storage,
                                                  &sigmoid_truncates, &sigmoid_ties_away, &sigmoid_through_f16,
                                                  &sigmoid_flushes, NULL};

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
    .models = add_models,
};

const kcs_op kcs_op_mul = {
    .name = "mul",
    .summary = "out[i] = x[i] * y[i], correctly rounded",
    .inputs = binary_inputs,
    ELEMENTWISE_COMMON,
    .models = mul_models,
};

const kcs_op kcs_op_relu = {
    .name = "relu",
    .summary = "out[i] = x[i] < 0 ? 0 : x[i], exact (NaN stays NaN)",
    .inputs = unary_inputs,
    ELEMENTWISE_COMMON,
    .models = relu_models,
};

const kcs_op kcs_op_sigmoid = {
    .name = "sigmoid",
    .summary = "out[i] = 1 / (1 + exp(-x[i])), within about 12 ulp (f32), 8 (f64); f16, bf16 rounded from within the f32 bound",
    .inputs = unary_inputs,
    ELEMENTWISE_COMMON,
    .models = sigmoid_models,
};
