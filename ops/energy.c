/* energy.c: the anneal energy descriptor, the convergence signal of the
 * compressor's loop: the mean of n distances (f32 in, f32 out),
 *
 *     E = (1/n) * sum_i dist[i]
 *
 * docs/anneal.md is the normative definition and derives the bound. In
 * short: as for sumsq, the sum is carried in f64 in any tree of the allowed
 * depth D(n), divided in f64 and rounded once to f32, so E is within about
 * u32 |E| + gamma(D + 2) mean|dist| (f64's gamma): dividing by n - 1 instead
 * of n, or dropping a distance, is far outside it for n up to 10^7. A NaN
 * gives NaN, +inf gives +inf (+inf and -inf together NaN), and n = 0 gives
 * NaN (0/0) which must still be written.
 *
 * The oracle sums in double-double (TwoSum) and divides once. Its
 * arithmetic model (explain.h), the sum divided by n - 1, is the op with
 * that divisor (docs/anneal.md, "Arithmetic models").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "explain.h"
#include "op.h"
#include "kcs_ref_anneal.h"

static const char *const sizes[] = {"n", NULL};
static const char *const params[] = {NULL};
static const char *const inputs[] = {"dist", NULL};
static const kcs_dtype dtypes[] = {KCS_F32, KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    (void)err;
    args->energy.n = (size_t)kcs_case_size(c, "n", 0);
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 1;
    snprintf(layout->inputs[0].name, sizeof layout->inputs[0].name, "dist");
    layout->inputs[0].dtype = KCS_F32;
    layout->inputs[0].ndim = 1;
    layout->inputs[0].shape[0] = args->energy.n;
    layout->output_count = 1;
    snprintf(layout->outputs[0].name, sizeof layout->outputs[0].name, "e");
    layout->outputs[0].dtype = KCS_F32;
    layout->outputs[0].ndim = 0;
    return KCS_OK;
}

/* An exact mean rounded to double, then to f32's range (beyond FLT_MAX by
 * half an ulp or more it is an infinity). */
static double to_f32_range(double value)
{
    return fabs(value) >= 0x1.ffffffp127 ? copysign(INFINITY, value) : value;
}

/* The exact sum of the n distances divided by divisor, rounded to double
 * and to f32's range (NaN for a NaN, for +inf with -inf, and for 0 / 0). */
static double mean_of(const float *dist, size_t n, double divisor)
{
    int nan = divisor == 0, positive_inf = 0, negative_inf = 0;
    kcs_double_double sum = {0.0, 0.0};
    for (size_t i = 0; i < n; i++) {
        double v = dist[i];
        if (isnan(v)) {
            nan = 1;
        } else if (isinf(v)) {
            positive_inf |= v > 0;
            negative_inf |= v < 0;
        } else {
            double error;
            sum.high = kcs_two_sum(sum.high, v, &error);
            sum.low += error;
        }
    }
    if (nan || (positive_inf && negative_inf))
        return NAN;
    if (positive_inf || negative_inf)
        return positive_inf ? INFINITY : -INFINITY;
    return to_f32_range((sum.high + sum.low) / divisor);
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    expected[0].values[0] = mean_of(in[0], args->energy.n, (double)args->energy.n);
    return KCS_OK;
}

/* Closed forms: a constant c gives c (rounded to f32); a whole ramp
 * s, s + t, ..., exact in f32, gives s + t (n - 1) / 2 exactly. */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_distribution *d = &kcs_case_input(c, "dist")->distribution;
    double n = (double)args->energy.n;
    if (strcmp(d->name, "constant") == 0) {
        double value = (float)kcs_distribution_param(d, "value", 0.0);
        expected[0].values[0] = n == 0 ? NAN : value;
        return KCS_OK;
    }
    if (strcmp(d->name, "ramp") == 0) {
        double start = kcs_distribution_param(d, "start", 0.0),
               step = kcs_distribution_param(d, "step", 1.0);
        if (start != floor(start) || step != floor(step) || fabs(start) + fabs(step) * n > 0x1.0p24)
            return kcs_fail(
                err, KCS_ERROR,
                "energy's closed form needs a whole ramp with every value exact in f32");
        expected[0].values[0] = n == 0 ? NAN : start + step * (n - 1.0) / 2.0;
        return KCS_OK;
    }
    return kcs_fail(err, KCS_ERROR, "energy has closed forms for constant and ramp inputs, not %s",
                    d->name);
}

/* docs/anneal.md: the f64 sum within gamma(D) sum|dist|, the division by
 * divisor (or a reciprocal and a product) two more f64 roundings, then one
 * rounding to f32, plus the smallest f32 normal for a result flushed or
 * rounded below it, plus 2u64 |g| for the expected value's own rounding. */
static double mean_bound(const float *dist, size_t n, double divisor, double g)
{
    if (!isfinite(g) || n == 0)
        return 0.0;
    double absolute = 0.0;
    for (size_t i = 0; i < n; i++)
        absolute += fabs((double)dist[i]);
    double u32 = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    double mean_absolute = absolute / divisor * (1.0 + kcs_gamma((double)n + 1.0, u64));
    double in_f64 = kcs_gamma(kcs_summation_depth(n) + 2.0, u64) * mean_absolute;
    double exact = fabs(g) / (1.0 - 2.0 * u64);
    double bound = in_f64 * (1.0 + u32) + u32 * exact + 0x1.0p-126 + 2.0 * u64 * fabs(g);
    return kcs_bound_widen(bound);
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    size_t n = args->energy.n;
    expected[0].bounds[0] = mean_bound(in[0], n, (double)n, expected[0].values[0]);
    return KCS_OK;
}

/* Arithmetic models (explain.h; docs/anneal.md, "Arithmetic models"). */

/* The sum divided by n - 1, the sample-variance habit: the op's arithmetic
 * and bound with that divisor. */
static int divides_by_n_minus_1_applies(const kcs_op_args *args)
{
    return args->energy.n >= 2;
}

static kcs_status divides_by_n_minus_1(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                       kcs_error *err)
{
    (void)err;
    size_t n = args->energy.n;
    double value = mean_of(in[0], n, (double)(n - 1));
    for (size_t k = 0; k < expected[0].count; k++) {
        expected[0].values[k] = value;
        expected[0].bounds[k] = mean_bound(in[0], n, (double)(n - 1), value);
    }
    return KCS_OK;
}

static const kcs_model divides_by_n_minus_1_model = {"energy-divides-by-n-minus-1",
                                                     "divides the sum by n - 1, not n", divides_by_n_minus_1_applies,
                                                     divides_by_n_minus_1};

static const kcs_model *const models[] = {&divides_by_n_minus_1_model, NULL};

static double bytes(const kcs_op_args *args)
{
    return 4.0 * ((double)args->energy.n + 1.0);
}

static double flops(const kcs_op_args *args)
{
    return (double)args->energy.n + 1.0;
}

const kcs_op kcs_op_energy = {
    .name = "energy",
    .summary = "E = mean of the n distances, summed in f64, rounded to f32",
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
