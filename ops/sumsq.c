/* sumsq.c: the sum-of-squares descriptor: s = sum over i < n of x[i]^2.
 *
 * docs/sumsq.md is the normative definition and derives the bound computed
 * here. In short: the squares and the sum are carried in f64 for f32 and f64
 * inputs, in f32 (at least) for f16 and bf16 inputs; any summation tree is
 * allowed in which each term passes through at most D(n) = min(n - 1, 2048 +
 * ceil(log2 n)) additions; the result is rounded once to the input type,
 * f16 and bf16 included. The bound is relative to s because every term is
 * non-negative.
 *
 * After the op, its arithmetic models (explain.h): a running sum kept in the
 * storage type, f64 summed in f32, the last element or the ragged tail past
 * the last whole 16-byte vector dropped, each with its own bound
 * (docs/sumsq.md, "Arithmetic models").
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
#include "kcs_ref_sumsq.h"

static const char *const sizes[] = {"n", NULL};
static const char *const params[] = {NULL};
static const char *const inputs[] = {"x", NULL};
static const kcs_dtype dtypes[] = {KCS_SUMSQ_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    (void)err;
    args->sumsq.n = (size_t)kcs_case_size(c, "n", 0);
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 1;
    snprintf(layout->inputs[0].name, sizeof layout->inputs[0].name, "x");
    layout->inputs[0].dtype = args->dtype;
    layout->inputs[0].ndim = 1;
    layout->inputs[0].shape[0] = args->sumsq.n;
    layout->output_count = 1;
    snprintf(layout->outputs[0].name, sizeof layout->outputs[0].name, "s");
    layout->outputs[0].dtype = args->dtype;
    layout->outputs[0].ndim = 0;
    return KCS_OK;
}

/* The largest finite value of dtype plus half its ulp: from there a sum rounds to inf. */
static double overflow_threshold(kcs_dtype dtype)
{
    double largest = kcs_largest_finite(dtype);
    return largest + ldexp(kcs_unit_roundoff(dtype), ilogb(largest));
}

/* How far the wide sum (f64 for f32 input, f32 for f16 and bf16) of n
 * squares whose exact sum is s, each through at most depth additions, may be
 * from s before it is rounded to the output type (docs/sumsq.md, "Error
 * bound"): gamma(D) s in f64; in f32, g32 s and the f32 underflow of the
 * bf16 squares, n eta32/2 before the sum and carried through it. 0 for f64,
 * which is not narrowed. */
static double wide_sum_error(kcs_dtype dtype, size_t n, double depth, double s)
{
    if (dtype == KCS_F32)
        return kcs_gamma(depth, kcs_unit_roundoff(KCS_F64)) * s;
    if (dtype == KCS_F16 || dtype == KCS_BF16) {
        double sum_error = kcs_gamma(depth, kcs_unit_roundoff(KCS_F32));
        double underflow = (double)n * kcs_smallest_subnormal(KCS_F32) / 2;
        return sum_error * s + (1.0 + sum_error) * underflow;
    }
    return 0.0;
}

/* The bound of docs/sumsq.md on a sum of n squares, each through at most
 * depth additions, whose exact value rounded once to double is g >= 0. */
static double sum_bound(kcs_dtype dtype, size_t n, double depth, double g)
{
    if (!isfinite(g) || n == 0)
        return 0.0; /* NaN and inf must match exactly; the empty sum is exactly 0 */
    double u64 = kcs_unit_roundoff(KCS_F64);
    double s = g / (1.0 - u64); /* at least the exact sum: the oracle's 2u is added below */
    double bound;
    if (dtype == KCS_F64) {
        /* squares rounded once, each term through <= D additions, the oracle
         * rounded once (2u covers its double-double error too), and n
         * squares that may underflow by up to the smallest subnormal each. */
        bound = (kcs_gamma(depth + 1, u64) + 2 * u64) * s + (double)n * kcs_smallest_subnormal(KCS_F64);
    } else {
        /* The wide sum within E of s (f32 squares exact in f64; f16 squares
         * exact in f32, bf16 ones unless they underflow), then one rounding
         * to the output type, u_out |S| <= u_out (s + E), plus half its
         * smallest subnormal for a subnormal result (the whole smallest
         * subnormal for f32, as the page has it); the oracle's 2u. */
        double wide = wide_sum_error(dtype, n, depth, s);
        double underflow = dtype == KCS_F32 ? kcs_smallest_subnormal(KCS_F32) : kcs_smallest_subnormal(dtype) / 2;
        bound = wide + kcs_unit_roundoff(dtype) * (s + wide) + 2 * u64 * s + underflow;
    }
    return kcs_bound_widen(bound);
}

/* The expected value of a sum of n squares whose exact value rounded to
 * double is value, each term through at most depth additions: +inf where
 * every sum the depth rule allows rounds to inf in the output type (even the
 * lowest wide sum, s - E, reaches its overflow threshold: f32 0x1.ffffffp127,
 * bf16 0x1.ffp127, f16 65520), else the finite value, whose bound then
 * admits both the finite sums and, by the checker's rule, +inf
 * (docs/sumsq.md, "Overflow", as docs/gemm.md keeps a finite expected value). */
static double in_output_range(kcs_dtype dtype, size_t n, double depth, double value)
{
    if (dtype == KCS_F64 || !isfinite(value))
        return value;
    double s = value * (1.0 - 2.0 * kcs_unit_roundoff(KCS_F64)); /* at most the exact sum */
    double lowest = s - kcs_bound_widen(wide_sum_error(dtype, n, depth, s));
    return lowest >= overflow_threshold(dtype) ? INFINITY : value;
}

/* The exact sum of the squares of the first n elements of x, rounded once to
 * double (NaN if one is NaN, else +inf if one is infinite). */
static double exact_sum(kcs_dtype dtype, const void *x, size_t n)
{
    double largest = 0.0;
    int has_nan = 0, has_inf = 0;
    for (size_t i = 0; i < n; i++) {
        double v = kcs_load_element(x, dtype, i);
        if (isnan(v))
            has_nan = 1;
        else if (isinf(v))
            has_inf = 1;
        else if (fabs(v) > largest)
            largest = fabs(v);
    }
    if (has_nan)
        return NAN;
    if (has_inf)
        return INFINITY;
    if (largest == 0.0)
        return 0.0;
    /* Scale by 2^k so that the largest element is near 2^480: squares
     * neither overflow (n * 2^962 < 2^1024 for n < 2^53) nor, for the
     * terms that matter, underflow. Scaling by a power of two is exact. */
    int exponent;
    frexp(largest, &exponent);
    int k = 481 - exponent;
    kcs_double_double sum = {0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double v = ldexp(kcs_load_element(x, dtype, i), k);
        kcs_dot2_add(&sum, v, v);
    }
    return ldexp(sum.high + sum.low, -2 * k);
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    size_t n = args->sumsq.n;
    expected[0].values[0] =
        in_output_range(args->dtype, n, kcs_summation_depth(n), exact_sum(args->dtype, in[0], n));
    return KCS_OK;
}

/* Closed forms: a ramp of integers, sum (a + i b)^2 = n a^2 + 2 a b S1 + b^2 S2
 * with S1 = n(n-1)/2 and S2 = (n-1)n(2n-1)/6, in exact 128-bit integers; or
 * a constant (integer, inf or nan). */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_distribution *d = &kcs_case_input(c, "x")->distribution;
    __int128 n = (__int128)args->sumsq.n;
    double exact_limit = 1.0 / kcs_unit_roundoff(args->dtype); /* 2^p: every integer up to it is exact */
    double a, b;
    if (strcmp(d->name, "ramp") == 0) {
        a = kcs_distribution_param(d, "start", 0.0);
        b = kcs_distribution_param(d, "step", 1.0);
    } else if (strcmp(d->name, "constant") == 0) {
        a = kcs_distribution_param(d, "value", 0.0);
        b = 0.0;
        if (isnan(a) || isinf(a)) {
            expected[0].values[0] = n == 0 ? 0.0 : isnan(a) ? NAN : INFINITY;
            return KCS_OK;
        }
    } else {
        return kcs_fail(err, KCS_ERROR, "sumsq has closed forms for ramp and constant inputs, not %s",
                        d->name);
    }
    double last = fabs(a) + fabs(b) * (double)(n > 0 ? n - 1 : 0);
    if (a != floor(a) || b != floor(b) || last > exact_limit || args->sumsq.n > (1ull << 40))
        return kcs_fail(err, KCS_ERROR,
                        "sumsq's closed form needs whole start, step and values |x| <= %.0f (exact in %s) "
                        "and n <= 2^40",
                        exact_limit, kcs_dtype_name(args->dtype));
    __int128 ia = (__int128)a, ib = (__int128)b;
    __int128 s1 = n * (n - 1) / 2;
    __int128 s2 = n == 0 ? 0 : (n - 1) * n * (2 * n - 1) / 6;
    __int128 total = n * ia * ia + 2 * ia * ib * s1 + ib * ib * s2;
    /* libgcc converts __int128 to double with one correct rounding. */
    expected[0].values[0] =
        in_output_range(args->dtype, args->sumsq.n, kcs_summation_depth(args->sumsq.n), (double)total);
    return KCS_OK;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)in;
    (void)err;
    size_t n = args->sumsq.n;
    expected[0].bounds[0] = sum_bound(args->dtype, n, kcs_summation_depth(n), fabs(expected[0].values[0]));
    return KCS_OK;
}

/* Arithmetic models (explain.h; docs/sumsq.md, "Arithmetic models"): what
 * a failure is explained by. Each fills its value and bound into every
 * element the explanation asks for (the output has one). */

static void fill(kcs_expected *e, double value, double bound)
{
    for (size_t k = 0; k < e->count; k++) {
        e->values[k] = value;
        e->bounds[k] = bound;
    }
}

/* A sum of the first kept of the n elements, as a conforming kernel sums
 * them: the op's own expected value and bound for those elements, each
 * term through at most min(D(n), kept - 1) additions (the kernel's tree was
 * made for n elements, and kept elements pass through at most kept - 1). */
static void expect_first(const kcs_op_args *args, void *const in[], size_t kept, kcs_expected *e)
{
    double depth = fmin(kcs_summation_depth(args->sumsq.n), kept ? (double)(kept - 1) : 0.0);
    double value = in_output_range(args->dtype, kept, depth, exact_sum(args->dtype, in[0], kept));
    fill(e, value, sum_bound(args->dtype, kept, depth, fabs(value)));
}

static int drops_last_element_applies(const kcs_op_args *args)
{
    return args->sumsq.n >= 1;
}

static kcs_status drops_last_element(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                     kcs_error *err)
{
    (void)err;
    expect_first(args, in, args->sumsq.n - 1, &expected[0]);
    return KCS_OK;
}

/* The elements one 16-byte vector holds: 2 f64, 4 f32, 8 f16 or bf16. */
static size_t vector_width(kcs_dtype dtype)
{
    return 16 / kcs_dtype_size(dtype);
}

static int drops_ragged_tail_applies(const kcs_op_args *args)
{
    return args->sumsq.n % vector_width(args->dtype) != 0;
}

static kcs_status drops_ragged_tail(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                    kcs_error *err)
{
    (void)err;
    size_t n = args->sumsq.n;
    expect_first(args, in, n - n % vector_width(args->dtype), &expected[0]);
    return KCS_OK;
}

/* A running sum: every value a kernel following the model may hold lies in [low, high]. */
typedef struct {
    double low, high;
} running_sum;

/* The least and the most of the values ways[0..count) (NaN if one is NaN). */
static void extremes(const double *ways, int count, double *lowest, double *highest)
{
    *lowest = *highest = ways[0];
    for (int w = 1; w < count; w++) {
        if (isnan(ways[w]) || ways[w] < *lowest)
            *lowest = ways[w];
        if (isnan(ways[w]) || ways[w] > *highest)
            *highest = ways[w];
    }
}

/* One step of a running sum kept in the input's own type (f16, bf16, f32),
 * adding the square of x, every way a kernel may round it (docs/sumsq.md):
 * fused, fma(x, x, sum); the square rounded to the type first; or the step
 * computed in the next wider type (f32, f64) and stored back. The square is
 * exact in double (at most 48 significant bits). */
static void storage_type_step(kcs_dtype dtype, double sum, double x, double *lowest, double *highest)
{
    kcs_dtype wide = dtype == KCS_F32 ? KCS_F64 : KCS_F32;
    double square = x * x;
    double ways[3] = {
        kcs_rounded_sum(dtype, sum, square),
        kcs_rounded_sum(dtype, sum, kcs_rounded_to(dtype, square)),
        kcs_rounded_to(dtype, kcs_rounded_sum(wide, sum, square)),
    };
    extremes(ways, 3, lowest, highest);
}

/* One step of an f32 running sum of f64 input, every way the code for it
 * rounds: sum += (float)x * (float)x, with the product rounded or fused
 * (fmaf); sum += x * x evaluated in double, then stored; sum += (float)(x * x). */
static void f32_step(kcs_dtype dtype, double sum, double x, double *lowest, double *highest)
{
    (void)dtype;
    double narrow = kcs_rounded_to(KCS_F32, x), square = x * x;
    double ways[4] = {
        kcs_rounded_sum(KCS_F32, sum, kcs_rounded_to(KCS_F32, narrow * narrow)),
        kcs_rounded_sum(KCS_F32, sum, narrow * narrow),
        kcs_rounded_to(KCS_F32, sum + square),
        kcs_rounded_sum(KCS_F32, sum, kcs_rounded_to(KCS_F32, square)),
    };
    extremes(ways, 4, lowest, highest);
}

typedef void (*running_step)(kcs_dtype dtype, double sum, double x, double *lowest, double *highest);

/* The running sum of the squares of x[0..n) in index order. Every way of a
 * step is a rounding of a non-decreasing function of the sum, so it is
 * non-decreasing too: the least value after a step comes from the least
 * before it, the most from the most. */
static running_sum run(const kcs_op_args *args, const void *x, running_step step)
{
    running_sum r = {0.0, 0.0};
    double ignored;
    for (size_t i = 0; i < args->sumsq.n; i++) {
        double v = kcs_load_element(x, args->dtype, i);
        if (r.low == r.high) {
            step(args->dtype, r.low, v, &r.low, &r.high);
        } else {
            step(args->dtype, r.low, v, &r.low, &ignored);
            step(args->dtype, r.high, v, &ignored, &r.high);
        }
    }
    return r;
}

/* The expected value and bound of a running sum that ends in [low, high]
 * (values of the running sum's type, so the middle and half the width are
 * exact in double). Where only the most overflowed, every finite value from
 * low to the overflow threshold, and by the checker's rule inf, is admitted. */
static void expect_running_sum(running_sum r, kcs_dtype sum_dtype, kcs_expected *e)
{
    if (isnan(r.low) || isnan(r.high) || r.low == r.high) {
        fill(e, isnan(r.low) ? r.low : r.high, 0.0);
        return;
    }
    double high = isinf(r.high) && !isinf(r.low) ? overflow_threshold(sum_dtype) : r.high;
    double half = (high - r.low) / 2;
    fill(e, r.low + half, kcs_bound_widen(half));
}

static int accumulates_in_storage_type_applies(const kcs_op_args *args)
{
    return args->dtype != KCS_F64 && args->sumsq.n >= 2; /* one element: the op's own single rounding */
}

static kcs_status accumulates_in_storage_type(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                              kcs_error *err)
{
    (void)err;
    expect_running_sum(run(args, in[0], storage_type_step), args->dtype, &expected[0]);
    return KCS_OK;
}

static int accumulates_in_f32_applies(const kcs_op_args *args)
{
    return args->dtype == KCS_F64 && args->sumsq.n >= 1;
}

static kcs_status accumulates_in_f32(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                     kcs_error *err)
{
    (void)err;
    expect_running_sum(run(args, in[0], f32_step), KCS_F32, &expected[0]);
    return KCS_OK;
}

static const kcs_model accumulates_in_storage_type_model = {
    "sumsq-accumulates-in-storage-type",
    "keeps one running sum in the input's own type, in index order, rounded to it at every step",
    accumulates_in_storage_type_applies, accumulates_in_storage_type};
static const kcs_model accumulates_in_f32_model = {
    "sumsq-accumulates-in-f32", "squares and sums the f64 input in one f32 running sum, in index order",
    accumulates_in_f32_applies, accumulates_in_f32};
static const kcs_model drops_last_element_model = {"sumsq-drops-last-element", "leaves out the last element",
                                                   drops_last_element_applies, drops_last_element};
static const kcs_model drops_ragged_tail_model = {
    "sumsq-drops-ragged-tail",
    "sums only whole 16-byte vectors, leaving out the last n mod (16 / element size) elements",
    drops_ragged_tail_applies, drops_ragged_tail};

static const kcs_model *const models[] = {&accumulates_in_storage_type_model, &accumulates_in_f32_model,
                                          &drops_last_element_model, &drops_ragged_tail_model, NULL};

static double bytes(const kcs_op_args *args)
{
    return (double)(args->sumsq.n + 1) * (double)kcs_dtype_size(args->dtype);
}

static double flops(const kcs_op_args *args)
{
    return 2.0 * (double)args->sumsq.n;
}

const kcs_op kcs_op_sumsq = {
    .name = "sumsq",
    .summary = "s = sum of x[i]^2, carried in f64 (f32 for f16, bf16), rounded to the input type",
    .sizes = sizes,
    .params = params,
    .inputs = inputs,
    .dtypes = dtypes,
    .parse_args = parse_args,
    .layout = layout,
    .oracle = oracle,
    .closed_form = closed_form,
    .bounds = bounds,
    .bytes = bytes,
    .flops = flops,
    .models = models,
};
