/* op_sumsq.c: the sum-of-squares descriptor: s = sum over i < n of x[i]^2.
 *
 * docs/sumsq.md is the normative definition and derives the bound computed
 * here. In short: the squares and the sum are carried in f64 for f32 and f64
 * inputs, in f32 (at least) for f16 and bf16 inputs; any summation tree is
 * allowed in which each term passes through at most D(n) = min(n - 1, 2048 +
 * ceil(log2 n)) additions; the result is rounded once to the input type,
 * f16 and bf16 included. The bound is relative to s because every term is
 * non-negative.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
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
};
