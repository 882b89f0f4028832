/* reduce.c: the anneal reduce descriptor: for each of m anchors j, over
 * the points x_i (n x d, stored in the case dtype f16 or f32, computed in
 * f32) with idx[i] = j:
 *
 *     count[j]   the number of such points (i32)
 *     mean[j][k] their mean in dimension k (f32)
 *     var[j][k]  their population variance in dimension k (f32)
 *
 * and count 0, mean 0, var 0 for an anchor no point chose. docs/anneal.md
 * is the normative definition and derives the bounds. In short: counts are
 * exact; a mean is a sum of the allowed depth D(c) and a division, within
 * gamma(D + 2) times the mean of |x|; a variance must be computed stably
 * (two passes, or Welford's updates merged by Chan's formula): the bound
 * allows a two-pass algorithm's error (gamma(D + 4) var plus the square of
 * the mean's error) and twice the first-order error of the updating
 * algorithm (Chan, Golub and LeVeque: c kappa u var = c u sigma rms), and
 * nothing near the error of E[x^2] - E[x]^2, which is of order u rms^2.
 *
 * The oracle sums in double-double (TwoSum), then sums the squared
 * deviations from the double mean in double-double and corrects for that
 * mean's own error, rounded once. Its arithmetic models (explain.h), the
 * sample variance and E[x^2] - E[x]^2, share its oracle and bounds
 * (docs/anneal.md, "Arithmetic models").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "explain.h"
#include "op.h"
#include "kcs_ref_anneal.h"

static const char *const sizes[] = {"n", "d", "m", NULL};
static const char *const params[] = {NULL};
static const char *const inputs[] = {"x", "idx", NULL};
static const kcs_dtype dtypes[] = {KCS_ANNEAL_POINT_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    args->reduce.n = (size_t)kcs_case_size(c, "n", 0);
    args->reduce.d = (size_t)kcs_case_size(c, "d", 0);
    args->reduce.m = (size_t)kcs_case_size(c, "m", 0);
    if (args->reduce.n > INT32_MAX)
        return kcs_fail(err, KCS_ERROR, "reduce's counts are i32: n must be below 2^31");
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    const kcs_anneal_args *a = &args->reduce;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 2;
    kcs_matrix_spec(&layout->inputs[0], "x", args->dtype, a->n, a->d);
    kcs_vector_spec(&layout->inputs[1], "idx", KCS_I32, a->n);
    layout->output_count = 3;
    kcs_vector_spec(&layout->outputs[0], "count", KCS_I32, a->m);
    kcs_matrix_spec(&layout->outputs[1], "mean", KCS_F32, a->m, a->d);
    kcs_matrix_spec(&layout->outputs[2], "var", KCS_F32, a->m, a->d);
    return KCS_OK;
}

/* Checks that every idx[i] names an anchor, and counts the points of each. */
static kcs_status count_points(const kcs_op_args *args, const int32_t *idx, size_t *counts,
                               kcs_error *err)
{
    memset(counts, 0, args->reduce.m * sizeof *counts);
    for (size_t i = 0; i < args->reduce.n; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= args->reduce.m)
            return kcs_fail(err, KCS_ERROR,
                            "input idx[%zu] = %d is not an anchor index in [0, %zu)", i,
                            (int)idx[i], args->reduce.m);
        counts[idx[i]]++;
    }
    return KCS_OK;
}

/* Per anchor and dimension: the exact mean and variance, rounded once. */
typedef struct {
    size_t *counts;
    double *mean, *var;
} statistics;

static void free_statistics(statistics *s)
{
    free(s->counts);
    free(s->mean);
    free(s->var);
}

static kcs_status exact_statistics(const kcs_op_args *args, void *const in[], statistics *s,
                                   kcs_error *err)
{
    size_t n = args->reduce.n, d = args->reduce.d, m = args->reduce.m,
           cells = m * d > 0 ? m * d : 1;
    const int32_t *idx = in[1];
    kcs_double_double *sum = calloc(cells, sizeof *sum), *squares = calloc(cells, sizeof *squares);
    s->counts = calloc(m ? m : 1, sizeof *s->counts);
    s->mean = calloc(cells, sizeof *s->mean);
    s->var = calloc(cells, sizeof *s->var);
    kcs_status status = KCS_OK;
    if (!sum || !squares || !s->counts || !s->mean || !s->var)
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    if (status == KCS_OK)
        status = count_points(args, idx, s->counts, err);
    if (status == KCS_OK) {
        for (size_t i = 0; i < n; i++) /* sums in double-double (Sum2) */
            for (size_t k = 0; k < d; k++) {
                kcs_double_double *cell = &sum[(size_t)idx[i] * d + k];
                double error;
                cell->high = kcs_two_sum(cell->high,
                                         kcs_load_element(in[0], args->dtype, i * d + k), &error);
                cell->low += error;
            }
        for (size_t p = 0; p < m * d; p++) {
            double c = (double)s->counts[p / d];
            s->mean[p] = c > 0 ? (sum[p].high + sum[p].low) / c : 0.0;
        }
        for (size_t i = 0; i < n;
             i++) /* squared deviations from the double mean, in double-double */
            for (size_t k = 0; k < d; k++) {
                size_t p = (size_t)idx[i] * d + k;
                double low;
                double high =
                    kcs_two_sum(kcs_load_element(in[0], args->dtype, i * d + k), -s->mean[p], &low);
                kcs_dot2_add(&squares[p], high, high);
                kcs_dot2_add(&squares[p], 2.0 * high, low);
            }
        for (size_t p = 0; p < m * d; p++) {
            double c = (double)s->counts[p / d];
            if (c == 0) {
                s->var[p] = 0.0;
                continue;
            }
            /* sum (x - mean)^2 = S + c delta^2, delta = exact mean - double mean */
            double product_error;
            double product = kcs_two_product(c, s->mean[p], &product_error);
            double delta = (((sum[p].high - product) - product_error) + sum[p].low) / c;
            double total = squares[p].high + squares[p].low - c * delta * delta;
            s->var[p] = total > 0 ? total / c : 0.0;
        }
    }
    free(sum);
    free(squares);
    return status;
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    statistics s = {0};
    kcs_status status = exact_statistics(args, in, &s, err);
    for (int o = 0; o < 3 && status == KCS_OK; o++)
        for (size_t e = 0; e < expected[o].count; e++) {
            size_t p = expected[o].indices ? expected[o].indices[e] : e;
            expected[o].values[e] = o == 0 ? (double)s.counts[p] : o == 1 ? s.mean[p] : s.var[p];
        }
    free_statistics(&s);
    return status;
}

/* Bounds of one anchor and dimension with c points, mean |x| m1 and root
 * mean square rms (docs/anneal.md), for a mean or a variance whose exact
 * value is within 4u64 of the expected value g. */
static double mean_bound(size_t c, double m1, double g)
{
    if (c == 0)
        return 0.0; /* an empty anchor's mean is exactly 0 */
    double u = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    double depth = kcs_summation_depth(c);
    return kcs_bound_widen(kcs_gamma(depth + 2.0, u) * m1 + 2.0 * 0x1.0p-126 + 4.0 * u64 * fabs(g));
}

static double var_bound(size_t c, double m1, double rms, double g)
{
    if (c == 0)
        return 0.0;
    double u = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    double depth = kcs_summation_depth(c);
    double var = fabs(g) / (1.0 - 4.0 * u64), sigma = sqrt(var);
    double mean_error = kcs_gamma(depth + 2.0, u) * m1 + 2.0 * 0x1.0p-126;
    double g4 = kcs_gamma(depth + 4.0, u);
    double two_pass = g4 * var + (1.0 + g4) * mean_error * mean_error;
    double updating = 2.0 * g4 * sigma * rms;
    return kcs_bound_widen(two_pass + updating + 2.0 * 0x1.0p-126 + 4.0 * u64 * fabs(g));
}

/* Per anchor the count, and per anchor and dimension the mean |x| (m1) and
 * root mean square (rms) the bounds are made of, each at least its exact
 * value (the double sums of c non-negative terms are within gamma(c) of exact). */
typedef struct {
    size_t *counts;
    double *m1, *rms;
} magnitudes;

static void free_magnitudes(magnitudes *g)
{
    free(g->counts);
    free(g->m1);
    free(g->rms);
}

static kcs_status measure(const kcs_op_args *args, void *const in[], magnitudes *g, kcs_error *err)
{
    size_t n = args->reduce.n, d = args->reduce.d, m = args->reduce.m,
           cells = m * d > 0 ? m * d : 1;
    const int32_t *idx = in[1];
    g->counts = calloc(m ? m : 1, sizeof *g->counts);
    g->m1 = calloc(cells, sizeof *g->m1);
    g->rms = calloc(cells, sizeof *g->rms);
    if (!g->counts || !g->m1 || !g->rms)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = count_points(args, idx, g->counts, err);
    if (status != KCS_OK)
        return status;
    for (size_t i = 0; i < n; i++) /* sums of |x| in m1, of x^2 in rms */
        for (size_t k = 0; k < d; k++) {
            double v = kcs_load_element(in[0], args->dtype, i * d + k);
            g->m1[(size_t)idx[i] * d + k] += fabs(v);
            g->rms[(size_t)idx[i] * d + k] += v * v;
        }
    for (size_t p = 0; p < m * d; p++) {
        size_t c = g->counts[p / d];
        double widen = 1.0 + kcs_gamma((double)c + 2.0, kcs_unit_roundoff(KCS_F64));
        g->m1[p] = c ? g->m1[p] / (double)c * widen : 0.0;
        g->rms[p] = c ? sqrt(g->rms[p] / (double)c * widen) * widen : 0.0;
    }
    return KCS_OK;
}

/* The bound of one anchor and dimension's mean or variance with c points,
 * mean |x| m1 and root mean square rms, whose expected value is g. */
typedef double (*cell_bound)(size_t c, double m1, double rms, double g);

static double mean_cell_bound(size_t c, double m1, double rms, double g)
{
    (void)rms;
    return mean_bound(c, m1, g);
}

/* Fills expected's bounds: counts exact, means the op's, variances by var_of. */
static kcs_status fill_bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[], cell_bound var_of,
                              kcs_error *err)
{
    size_t d = args->reduce.d;
    magnitudes g = {0};
    kcs_status status = measure(args, in, &g, err);
    for (int o = 0; o < 3 && status == KCS_OK; o++)
        for (size_t e = 0; e < expected[o].count; e++) {
            size_t p = expected[o].indices ? expected[o].indices[e] : e;
            if (o == 0) {
                expected[0].bounds[e] = 0.0; /* counts are exact */
                continue;
            }
            size_t c = g.counts[p / d];
            cell_bound bound = o == 1 ? mean_cell_bound : var_of;
            expected[o].bounds[e] = bound(c, g.m1[p], g.rms[p], expected[o].values[e]);
        }
    free_magnitudes(&g);
    return status;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    return fill_bounds(args, in, expected, var_bound, err);
}

/* Closed forms (docs/anneal.md): every point on one anchor (idx constant
 * j0), with x constant v (mean v, var 0) or a whole ramp x[i][k] =
 * s + t (i d + k) (mean s + t k + t d (n - 1) / 2, var t^2 d^2 (n^2 - 1) / 12,
 * exact in 128-bit integers and rounded once); other anchors are empty.
 * A constant's value is first rounded to the dtype, as the generator stores it. */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_distribution *dx = &kcs_case_input(c, "x")->distribution;
    const kcs_distribution *di = &kcs_case_input(c, "idx")->distribution;
    size_t n = args->reduce.n, d = args->reduce.d, m = args->reduce.m;
    double limit = args->dtype == KCS_F16 ? 2048.0 : 0x1.0p24;
    double j0 = kcs_distribution_param(di, "value", -1.0);
    if (strcmp(di->name, "constant") != 0 || j0 != floor(j0) || j0 < 0 || j0 >= (double)m)
        return kcs_fail(err, KCS_ERROR,
                        "reduce's closed form needs idx constant, an anchor index in [0, %zu)", m);
    int ramp = strcmp(dx->name, "ramp") == 0;
    double start = kcs_distribution_param(dx, ramp ? "start" : "value", 0.0);
    double step = ramp ? kcs_distribution_param(dx, "step", 1.0) : 0.0;
    if (!ramp && strcmp(dx->name, "constant") == 0 && isfinite(start)) {
        unsigned char stored[8]; /* a constant is its value rounded once to the dtype */
        kcs_store_element(stored, args->dtype, 0, start);
        start = kcs_load_element(stored, args->dtype, 0);
    } else if (!ramp || start != floor(start) || step != floor(step) ||
               fabs(start) + fabs(step) * (double)(n * d) > limit) {
        return kcs_fail(err, KCS_ERROR,
                        "reduce's closed form needs x a finite constant or a whole ramp, every "
                        "value exact in %s",
                        kcs_dtype_name(args->dtype));
    }
    __int128 t = (__int128)step, nn = (__int128)n, dd = (__int128)d;
    for (int o = 0; o < 3; o++)
        for (size_t e = 0; e < expected[o].count; e++) {
            size_t p = expected[o].indices ? expected[o].indices[e] : e;
            size_t j = o == 0 ? p : p / (d ? d : 1), k = o == 0 ? 0 : p % (d ? d : 1);
            double value = 0.0;
            if (j == (size_t)j0 && n > 0) {
                if (o == 0)
                    value = (double)n;
                else if (o == 1 && !ramp)
                    value = start;
                else if (o == 1) /* twice the mean is whole: one rounding at most */
                    value =
                        (double)(2 * (__int128)start + 2 * t * (__int128)k + t * dd * (nn - 1)) /
                        2.0;
                else
                    value = (double)(t * t * dd * dd * (nn * nn - 1)) / 12.0;
            }
            expected[o].values[e] = value;
        }
    return KCS_OK;
}

/* Arithmetic models (explain.h; docs/anneal.md, "Arithmetic models"). */

/* The sample variance, sum (x - mean)^2 / (c - 1): the op's arithmetic
 * with another divisor, so every term of the op's bound scales by
 * c / (c - 1) (c - 1 is exact, the division rounds once either way), plus
 * the rounding of the expected value's own scaling. One point gives 0 / 0,
 * NaN, as numpy (ddof = 1) and torch.var do. */
static kcs_status sample_variance(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                  kcs_error *err)
{
    size_t d = args->reduce.d, m = args->reduce.m;
    size_t *counts = calloc(m ? m : 1, sizeof *counts);
    if (!counts)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = count_points(args, in[1], counts, err);
    if (status == KCS_OK)
        status = oracle(args, in, expected, err);
    if (status == KCS_OK)
        status = bounds(args, in, expected, err);
    double u64 = kcs_unit_roundoff(KCS_F64);
    for (size_t e = 0; e < expected[2].count && status == KCS_OK; e++) {
        size_t c = counts[(expected[2].indices ? expected[2].indices[e] : e) / d];
        if (c == 1) {
            expected[2].values[e] = NAN;
            expected[2].bounds[e] = 0.0;
        } else if (c > 1) {
            double scale = (double)c / (double)(c - 1);
            expected[2].values[e] *= scale;
            expected[2].bounds[e] = kcs_bound_widen(expected[2].bounds[e] * scale + 2.0 * u64 * expected[2].values[e]);
        }
    }
    free(counts);
    return status;
}

/* The textbook variance, E[x^2] - E[x]^2 in f32, with its sums in any tree
 * of the allowed depth: exactly the variance in exact arithmetic, within
 * (docs/anneal.md) gamma(D + 3) rms^2 for E[x^2] (a square, D additions, a
 * division or a reciprocal and a product), 2 m1 e_m + e_m^2 for the square
 * of a mean within e_m, u (m1 + e_m)^2 for that square's rounding, and one
 * rounding of the difference; 2^-126 for each result that may be flushed. */
static double textbook_var_bound(size_t c, double m1, double rms, double g)
{
    if (c == 0)
        return 0.0;
    double u = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64), tiny = 0x1.0p-126;
    double depth = kcs_summation_depth(c);
    double mean_error = kcs_gamma(depth + 2.0, u) * m1 + 2.0 * tiny;
    double squares = kcs_gamma(depth + 3.0, u) * rms * rms + 2.0 * tiny;
    double square_of_mean =
        2.0 * m1 * mean_error + mean_error * mean_error + u * (m1 + mean_error) * (m1 + mean_error) + tiny;
    double before = squares + square_of_mean;
    double var = fabs(g) / (1.0 - 4.0 * u64);
    return kcs_bound_widen(before + u * (var + before) + tiny + 4.0 * u64 * fabs(g));
}

static kcs_status textbook_variance(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                    kcs_error *err)
{
    kcs_status status = oracle(args, in, expected, err);
    return status == KCS_OK ? fill_bounds(args, in, expected, textbook_var_bound, err) : status;
}

static const kcs_model sample_variance_model = {
    "reduce-sample-variance", "divides the variance by count - 1 (the sample variance; NaN for one point)", NULL,
    sample_variance};
static const kcs_model textbook_variance_model = {"reduce-textbook-variance",
                                                  "computes the variance as E[x^2] - E[x]^2 in f32", NULL,
                                                  textbook_variance};

static const kcs_model *const models[] = {&sample_variance_model, &textbook_variance_model, NULL};

static double bytes(const kcs_op_args *args)
{
    const kcs_anneal_args *a = &args->reduce;
    return (double)a->n * (double)a->d * (double)kcs_dtype_size(args->dtype) + 4.0 * (double)a->n +
           4.0 * (double)a->m + 8.0 * (double)a->m * (double)a->d;
}

/* Per point and dimension: an addition for the mean; a subtraction, a
 * multiplication and an addition for the variance; per anchor and
 * dimension a division for each. */
static double flops(const kcs_op_args *args)
{
    const kcs_anneal_args *a = &args->reduce;
    return 4.0 * (double)a->n * (double)a->d + 2.0 * (double)a->m * (double)a->d;
}

const kcs_op kcs_op_reduce = {
    .name = "reduce",
    .summary = "per anchor: count, mean and population variance of its points (stably)",
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
