/* assign.c: the anneal assign descriptor: for each of n points x_i (d
 * dimensions, stored in the case dtype f16 or f32, computed in f32) the
 * nearest of m anchors a_j (f32):
 *
 *     idx[i]  = argmin_j ||x_i - a_j||^2   (ties to the smallest j), i32
 *     dist[i] = min_j ||x_i - a_j||^2, f32
 *
 * docs/anneal.md is the normative definition and derives the bound. In
 * short: distances are computed as sums of squared differences (the
 * expanded form ||x||^2 - 2 x.a + ||a||^2 is not allowed: it cancels when a
 * point is near its anchor), so a computed distance is within
 * gamma(d + 2) * D of the exact D in any summation order; a case whose
 * values are all multiples of 2^q small enough that every distance is exact
 * in f32 gets bound 0, and there ties must go to the smallest index. An idx
 * that differs from the oracle's is accepted only for a near tie: the two
 * exact distances within the sum of their bounds (this file's check hook).
 *
 * The oracle computes each distance in double-double (TwoSum differences,
 * Dot2 squares), rounded once; a sampled case costs one m x d pass per
 * sampled point of each output. Its arithmetic models (explain.h), ties to
 * the largest index and distances rounded to f16, share its search
 * (docs/anneal.md, "Arithmetic models").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "check.h"
#include "explain.h"
#include "op.h"
#include "kcs_ref_anneal.h"

static const char *const sizes[] = {"n", "d", "m", NULL};
static const char *const params[] = {NULL};
static const char *const inputs[] = {"x", "a", NULL};
static const kcs_dtype dtypes[] = {KCS_ANNEAL_POINT_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    args->assign.n = (size_t)kcs_case_size(c, "n", 0);
    args->assign.d = (size_t)kcs_case_size(c, "d", 0);
    args->assign.m = (size_t)kcs_case_size(c, "m", 0);
    if (args->assign.m == 0 && args->assign.n > 0)
        return kcs_fail(err, KCS_ERROR, "assign needs at least one anchor (m >= 1)");
    if (args->assign.m > INT32_MAX)
        return kcs_fail(err, KCS_ERROR, "assign's indices are i32: m must be below 2^31");
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    const kcs_anneal_args *a = &args->assign;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 2;
    kcs_matrix_spec(&layout->inputs[0], "x", args->dtype, a->n, a->d);
    kcs_matrix_spec(&layout->inputs[1], "a", KCS_F32, a->m, a->d);
    /* d = 0 still gives 2-d inputs of shape (n, 0) */
    layout->inputs[0].ndim = layout->inputs[1].ndim = 2;
    layout->output_count = 2;
    kcs_vector_spec(&layout->outputs[0], "idx", KCS_I32, a->n);
    kcs_vector_spec(&layout->outputs[1], "dist", KCS_F32, a->n);
    return KCS_OK;
}

/* Point i as doubles (exact for f16 and f32). */
static void load_point(const kcs_op_args *args, const void *x, size_t i, double *point)
{
    size_t d = args->assign.d;
    for (size_t k = 0; k < d; k++)
        point[k] = kcs_load_element(x, args->dtype, i * d + k);
}

/* The squared distance from point to anchor, in double-double, rounded once:
 * each difference exactly as high + low (TwoSum), then high^2 + 2 high low
 * by Dot2 (low^2 < 2^-106 high^2 is left out). Within 2u of the exact value. */
static double exact_distance(const double *point, const float *anchor, size_t d)
{
    kcs_double_double sum = {0.0, 0.0};
    for (size_t k = 0; k < d; k++) {
        double low;
        double high = kcs_two_sum(point[k], -(double)anchor[k], &low);
        kcs_dot2_add(&sum, high, high);
        if (low != 0.0)
            kcs_dot2_add(&sum, 2.0 * high, low);
    }
    return sum.high + sum.low;
}

/* How a model of docs/anneal.md ("Arithmetic models") compares distances:
 * the op's own way, or sending ties to the largest index, or comparing the
 * distances rounded to f16. */
typedef enum { COMPARE_EXACT, COMPARE_TIES_TO_LARGEST, COMPARE_IN_F16 } comparison;

/* The distance as comparison ranks it. */
static double ranked(comparison how, double distance)
{
    return how == COMPARE_IN_F16 ? kcs_rounded_to(KCS_F16, distance) : distance;
}

/* The nearest anchor to point as comparison has it (ties to the smallest
 * index, unless they go to the largest) and its exact distance. */
static size_t nearest_by(comparison how, const double *point, const float *anchors, size_t m, size_t d,
                         double *distance)
{
    size_t best = 0;
    double best_distance = m ? exact_distance(point, anchors, d) : NAN;
    double best_rank = ranked(how, best_distance);
    for (size_t j = 1; j < m; j++) {
        double candidate = exact_distance(point, anchors + j * d, d);
        double rank = ranked(how, candidate);
        if (rank < best_rank || (how == COMPARE_TIES_TO_LARGEST && rank == best_rank)) {
            best_distance = candidate;
            best_rank = rank;
            best = j;
        }
    }
    *distance = best_distance;
    return best;
}

/* The exact distance as the f32 output holds it: beyond f32's range it is +inf. */
static double to_f32_range(double distance)
{
    return distance >= 0x1.ffffffp127 ? INFINITY : distance;
}

/* The nearest anchors and their distances as comparison has them, at the
 * elements expected asks for: the op's oracle, and its models'. */
static kcs_status nearest_anchors(comparison how, const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                  kcs_error *err)
{
    size_t d = args->assign.d, m = args->assign.m;
    const float *anchors = in[1];
    double *point = malloc((d ? d : 1) * sizeof *point);
    if (!point)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    /* every point: one pass serves both outputs */
    if (!expected[0].indices && !expected[1].indices) {
        for (size_t i = 0; i < expected[0].count; i++) {
            load_point(args, in[0], i, point);
            double distance;
            expected[0].values[i] = (double)nearest_by(how, point, anchors, m, d, &distance);
            expected[1].values[i] = to_f32_range(distance);
        }
    } else {
        for (int o = 0; o < 2; o++)
            for (size_t s = 0; s < expected[o].count; s++) {
                size_t i = expected[o].indices ? expected[o].indices[s] : s;
                load_point(args, in[0], i, point);
                double distance;
                double j = (double)nearest_by(how, point, anchors, m, d, &distance);
                expected[o].values[s] = o == 0 ? j : to_f32_range(distance);
            }
    }
    free(point);
    return KCS_OK;
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    return nearest_anchors(COMPARE_EXACT, args, in, expected, err);
}

/* The exponent of the lowest set bit of a nonzero finite v. */
static int lowest_bit_exponent(double v)
{
    int exponent;
    double fraction = frexp(fabs(v), &exponent);
    uint64_t significand = (uint64_t)ldexp(fraction, 53);
    return exponent - 53 + __builtin_ctzll(significand);
}

/* Whether every distance a conforming kernel may compute is exact in f32
 * (docs/anneal.md): all values of x and a are multiples of 2^q, with
 * 2q >= -126 (squares stay normal, so flushing subnormals changes
 * nothing) and d (max|x| + max|a|)^2 < 2^(24 + 2q) (every difference,
 * square, partial sum, and the terms of the expanded form are whole
 * multiples of 2^2q below 2^24 of them). */
static int exact_case(const kcs_op_args *args, void *const in[])
{
    size_t n = args->assign.n, d = args->assign.d, m = args->assign.m;
    double largest[2] = {0.0, 0.0};
    int q = INT32_MAX;
    for (int which = 0; which < 2; which++) {
        size_t count = (which == 0 ? n : m) * d;
        kcs_dtype dtype = which == 0 ? args->dtype : KCS_F32;
        for (size_t p = 0; p < count; p++) {
            double v = kcs_load_element(in[which], dtype, p);
            if (!isfinite(v))
                return 0;
            if (v == 0.0)
                continue;
            int bit = lowest_bit_exponent(v);
            q = bit < q ? bit : q;
            largest[which] = fmax(largest[which], fabs(v));
            double units = ldexp(largest[0] + largest[1], -q);
            if (2 * q < -126 || (double)d * units * units >= 0x1.0p24)
                return 0; /* stops early on data that is not exact */
        }
    }
    return 1;
}

/* The bound of docs/anneal.md on a computed f32 distance whose exact value
 * is within 2u64 of distance: each term passes through one subtraction
 * (squared: two roundings), a square and at most d - 1 additions, so
 * gamma(d + 2) relative, all terms being non-negative; plus 2d * 2^-126
 * for squares and sums flushed or rounded below the smallest normal. */
static double distance_bound(double distance, size_t d, int exact)
{
    if (exact || !isfinite(distance))
        return 0.0;
    double u = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    double relative = kcs_gamma((double)d + 2.0, u) + 2.0 * u64;
    return kcs_bound_widen(relative * distance / (1.0 - 2.0 * u64) + 2.0 * (double)d * 0x1.0p-126);
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    int exact = exact_case(args, in);
    for (size_t s = 0; s < expected[0].count; s++)
        expected[0].bounds[s] = 0.0; /* an index is right, or a near tie (check below) */
    for (size_t s = 0; s < expected[1].count; s++)
        expected[1].bounds[s] = distance_bound(expected[1].values[s], args->assign.d, exact);
    return KCS_OK;
}

/* The comparison, filled in element by element as kcs_check_outputs does. */
typedef struct {
    kcs_check_result *result;
    double worst;
} tally;

static void record(tally *t, int output, const char *name, size_t index, double expected,
                   double actual, double error, double bound, double fraction, const char *why)
{
    kcs_check_result *r = t->result;
    r->checked++;
    kcs_fraction_histogram_add(&r->histogram, fraction);
    if (why[0] && r->failures++ == 0)
        snprintf(r->diagnosis, sizeof r->diagnosis, "%s[%zu]: %s", name, index, why);
    if (fraction > t->worst) {
        t->worst = fraction;
        r->worst_output = output;
        r->worst_index = index;
        r->worst_expected = expected;
        r->worst_actual = actual;
        r->worst_error = error;
        r->worst_bound = bound;
    }
}

/* What the near-tie rule needs: the inputs, a scratch point, and whether
 * the case is exact (found once, when first needed). */
typedef struct {
    const kcs_op_args *args;
    void *const *in;
    double *point;
    size_t loaded; /* the point in scratch, or SIZE_MAX */
    int exact;     /* -1 until known */
} tie_context;

static double distance_to(tie_context *t, size_t i, size_t j)
{
    if (t->loaded != i) {
        load_point(t->args, t->in[0], i, t->point);
        t->loaded = i;
    }
    return exact_distance(t->point, (const float *)t->in[1] + j * t->args->assign.d,
                          t->args->assign.d);
}

static double bound_of(tie_context *t, double distance)
{
    if (t->exact < 0)
        t->exact = exact_case(t->args, t->in);
    return distance_bound(distance, t->args->assign.d, t->exact);
}

/* idx[i] = got where the oracle says want: right, a near tie, or wrong. */
static void check_index(tie_context *t, tally *tl, size_t i, int32_t want, int32_t got)
{
    char why[512] = "";
    double fraction = 0.0, gap = 0.0, tolerance = 0.0;
    if (got != want) {
        if (got < 0 || (size_t)got >= t->args->assign.m) {
            snprintf(why, sizeof why, "expected anchor %d, got %d: not an anchor index (m = %zu)",
                     (int)want, (int)got, t->args->assign.m);
            fraction = INFINITY;
        } else {
            double want_distance = distance_to(t, i, (size_t)want);
            double got_distance = distance_to(t, i, (size_t)got);
            gap = got_distance - want_distance;
            tolerance = bound_of(t, want_distance) + bound_of(t, got_distance);
            if (tolerance > 0.0 && gap <= tolerance) {
                fraction = gap > 0.0 ? gap / tolerance : 0.0; /* a near tie: either index */
            } else if (gap == 0.0) {
                fraction = INFINITY;
                snprintf(why, sizeof why,
                         "expected anchor %d, got %d: an exact tie at distance %.9g, computed "
                         "exactly in f32 for this case, goes to the smallest index",
                         (int)want, (int)got, want_distance);
            } else {
                fraction = INFINITY;
                snprintf(why, sizeof why,
                         "expected anchor %d (distance %.9g), got %d (distance %.9g): not a near "
                         "tie, the gap %.3g is %.3g times the tie tolerance %.3g",
                         (int)want, want_distance, (int)got, got_distance, gap,
                         tolerance > 0 ? gap / tolerance : INFINITY, tolerance);
            }
        }
    }
    record(tl, 0, "idx", i, want, got, why[0] ? INFINITY : gap, tolerance, fraction, why);
}

/* dist[i] = got where the nearest distance is want (bound b), or a near
 * tie's distance when idx[i] names another anchor. */
static void check_distance(tie_context *t, tally *tl, const int32_t *idx, size_t i, double want,
                           double bound, double got)
{
    char why[512] = "";
    double error = fabs(got - want), fraction;
    if (isnan(want) || isinf(want)) {
        int same = isnan(want) ? isnan(got) : got == want;
        fraction = same ? 0.0 : INFINITY;
        if (!same)
            snprintf(why, sizeof why, "expected %.17g, got %.17g", want, got);
        record(tl, 1, "dist", i, want, got, same ? 0.0 : INFINITY, 0.0, fraction, why);
        return;
    }
    if (!(error <= bound)) {
        int32_t j = idx[i];
        if (!kcs_is_poison(idx, KCS_I32, i) && j >= 0 && (size_t)j < t->args->assign.m) {
            double other = distance_to(t, i, (size_t)j);
            double other_bound = bound_of(t, other);
            if (other != want && other - want <= bound + other_bound &&
                fabs(got - other) <= other_bound) {
                fraction = other_bound > 0 ? fabs(got - other) / other_bound : 0.0;
                record(tl, 1, "dist", i, other, got, fabs(got - other), other_bound, fraction, "");
                return;
            }
        }
    }
    if (isnan(got) || isinf(got)) {
        error = INFINITY;
        snprintf(why, sizeof why, "expected %.17g, got %.17g", want, got);
    } else if (error > bound) {
        snprintf(why, sizeof why,
                 "expected %.17g, got %.17g: error %.3g is %.3g times the bound %.3g", want, got,
                 error, bound > 0 ? error / bound : INFINITY, bound);
    }
    fraction = error == 0.0 ? 0.0 : bound > 0.0 ? error / bound : INFINITY;
    record(tl, 1, "dist", i, want, got, error, bound, fraction, why);
}

static void check(const kcs_op_args *args, void *const in[], void *const actual[],
                  const kcs_expected expected[], kcs_check_result *result)
{
    memset(result, 0, sizeof *result);
    result->worst_output = -1;
    tally tl = {result, -1.0};
    size_t d = args->assign.d;
    tie_context t = {args, in, malloc((d ? d : 1) * sizeof(double)), SIZE_MAX, -1};
    if (!t.point) {
        result->failures = 1;
        snprintf(result->diagnosis, sizeof result->diagnosis, "out of memory checking assign");
        return;
    }
    const int32_t *idx = actual[0];
    const float *dist = actual[1];
    for (int o = 0; o < 2; o++)
        for (size_t s = 0; s < expected[o].count; s++) {
            size_t i = expected[o].indices ? expected[o].indices[s] : s;
            if (kcs_is_poison(actual[o], o == 0 ? KCS_I32 : KCS_F32, i)) {
                result->unwritten++;
                record(&tl, o, o == 0 ? "idx" : "dist", i, expected[o].values[s], NAN, INFINITY,
                       expected[o].bounds[s], INFINITY,
                       "never written: still holds the poison written before the run");
            } else if (o == 0) {
                check_index(&t, &tl, i, (int32_t)expected[0].values[s], idx[i]);
            } else {
                check_distance(&t, &tl, idx, i, expected[1].values[s], expected[1].bounds[s],
                               dist[i]);
            }
        }
    free(t.point);
    result->fraction = tl.worst < 0 ? 0.0 : tl.worst;
    result->passed = result->failures == 0;
    size_t length = strlen(result->diagnosis);
    if (result->failures > 1)
        snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                 " (and %zu more of %zu checked elements outside their bound)",
                 result->failures - 1, result->checked);
    length = strlen(result->diagnosis);
    if (result->unwritten)
        snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                 "; %zu elements never written", result->unwritten);
}

/* The integer parameter name of d, required whole and with |value| <= limit. */
static int whole(const kcs_distribution *d, const char *name, double fallback, double limit,
                 int64_t *value)
{
    double v = kcs_distribution_param(d, name, fallback);
    if (v != floor(v) || fabs(v) > limit)
        return 0;
    *value = (int64_t)v;
    return 1;
}

/* Closed forms (docs/anneal.md): x and a both constant (every anchor ties:
 * idx 0, dist = d (x - a)^2), or both ramps with the same whole step s,
 * x[i][k] = x0 + s (i d + k), a[j][k] = a0 + s (j d + k): every difference
 * x_i - a_j is c + s d (i - j) with c = x0 - a0 in each of the d
 * dimensions, so the nearest anchor is the j in [0, m) nearest to
 * i + c / (s d), and points with c = 0 and i < m lie exactly on anchor i. */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_distribution *dx = &kcs_case_input(c, "x")->distribution;
    const kcs_distribution *da = &kcs_case_input(c, "a")->distribution;
    int64_t n = (int64_t)args->assign.n, d = (int64_t)args->assign.d, m = (int64_t)args->assign.m;
    double x_limit = args->dtype == KCS_F16 ? 2048.0 : 0x1.0p24, a_limit = 0x1.0p24;
    int64_t x0, a0, step, a_step;
    int constant = strcmp(dx->name, "constant") == 0 && strcmp(da->name, "constant") == 0;
    int ramps = strcmp(dx->name, "ramp") == 0 && strcmp(da->name, "ramp") == 0;
    if (constant) {
        if (!whole(dx, "value", 0.0, x_limit, &x0) || !whole(da, "value", 0.0, a_limit, &a0))
            return kcs_fail(err, KCS_ERROR,
                            "assign's closed form needs whole constants, exact in their types");
        step = 0;
    } else if (ramps) {
        if (!whole(dx, "start", 0.0, x_limit, &x0) || !whole(da, "start", 0.0, a_limit, &a0) ||
            !whole(dx, "step", 1.0, x_limit, &step) || !whole(da, "step", 1.0, a_limit, &a_step) ||
            step != a_step || step == 0)
            return kcs_fail(err, KCS_ERROR,
                            "assign's closed form needs ramps with whole starts and the same "
                            "nonzero whole step");
        if (fabs((double)x0) + fabs((double)step) * (double)(n * d) > x_limit ||
            fabs((double)a0) + fabs((double)step) * (double)(m * d) > a_limit)
            return kcs_fail(
                err, KCS_ERROR,
                "assign's closed form needs every ramp value exact in its type (|x| <= %.0f)",
                x_limit);
    } else {
        return kcs_fail(err, KCS_ERROR,
                        "assign has closed forms for two constants or two ramps, not %s and %s",
                        dx->name, da->name);
    }
    int64_t offset = x0 - a0;
    for (int o = 0; o < 2; o++)
        for (size_t s = 0; s < expected[o].count; s++) {
            int64_t i = (int64_t)(expected[o].indices ? expected[o].indices[s] : s);
            int64_t best = 0;
            __int128 best_difference = offset;
            if (ramps) { /* the distance is convex in j: the best is next to the real optimum */
                int64_t spacing = step * d;
                int64_t guess = i + offset / spacing; /* C division truncates: check around it */
                for (int64_t j = guess - 2; j <= guess + 2; j++) {
                    int64_t clamped = j < 0 ? 0 : j >= m ? m - 1 : j;
                    __int128 difference = offset + (__int128)spacing * (i - clamped);
                    __int128 a = difference < 0 ? -difference : difference;
                    __int128 b = best_difference < 0 ? -best_difference : best_difference;
                    if (j == guess - 2 || a < b || (a == b && clamped < best)) {
                        best = clamped;
                        best_difference = difference;
                    }
                }
            }
            __int128 distance = (__int128)d * best_difference * best_difference;
            expected[o].values[s] = o == 0 ? (double)best : (double)distance;
        }
    return KCS_OK;
}

/* Arithmetic models (explain.h; docs/anneal.md, "Arithmetic models"). They
 * are judged element by element (kcs_check_outputs), not by this op's
 * near-tie rule: an index's bound is 0, so a model names one anchor per
 * point. For ties to the largest index that is exact: it fails only where
 * a tie is exact (elsewhere the near-tie rule accepts either anchor), and
 * there every distance is exact in f32, so the anchor it keeps is
 * determined. For f16 distances the model's anchor is the one the exact
 * distances, rounded to f16, rank first; a kernel's f32 distances round the
 * same way except within their bound of an f16 rounding boundary, where its
 * anchor may differ and the model then does not fit: a failure left
 * unexplained, never one explained wrongly. */

static kcs_status ties_to_largest(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                  kcs_error *err)
{
    kcs_status status = nearest_anchors(COMPARE_TIES_TO_LARGEST, args, in, expected, err);
    return status == KCS_OK ? bounds(args, in, expected, err) : status;
}

/* The kernel computes each distance as the op allows, within b of the exact
 * D, then rounds it to f16 to compare and store it: |fl16(D~) - D| <= b +
 * u16 (D + b) + 2^-25 (half f16's smallest subnormal). Where even D - b
 * reaches f16's overflow threshold, 65520, the distance is +inf. */
static kcs_status f16_distances(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                kcs_error *err)
{
    kcs_status status = nearest_anchors(COMPARE_IN_F16, args, in, expected, err);
    if (status == KCS_OK)
        status = bounds(args, in, expected, err);
    double u16 = kcs_unit_roundoff(KCS_F16), overflow = 65520.0;
    for (size_t s = 0; s < expected[1].count && status == KCS_OK; s++) {
        double distance = expected[1].values[s], bound = expected[1].bounds[s];
        if (!isfinite(distance))
            continue;
        if (distance - bound >= overflow) {
            expected[1].values[s] = INFINITY;
            expected[1].bounds[s] = 0.0;
        } else {
            expected[1].bounds[s] = kcs_bound_widen(bound + u16 * (distance + bound) +
                                                    kcs_smallest_subnormal(KCS_F16) / 2);
        }
    }
    return status;
}

static const kcs_model ties_to_largest_model = {
    "assign-ties-to-largest", "sends a tie to the largest index (keeps a candidate unless it is farther: <= for <)",
    NULL, ties_to_largest};
static const kcs_model f16_distances_model = {
    "assign-f16-distances", "rounds each distance to f16 before comparing and storing it", NULL, f16_distances};

static const kcs_model *const models[] = {&ties_to_largest_model, &f16_distances_model, NULL};

static double bytes(const kcs_op_args *args)
{
    const kcs_anneal_args *a = &args->assign;
    return (double)a->n * (double)a->d * (double)kcs_dtype_size(args->dtype) +
           4.0 * (double)a->m * (double)a->d + 8.0 * (double)a->n;
}

/* A subtraction, a multiplication and an addition per point, anchor and dimension. */
static double flops(const kcs_op_args *args)
{
    return 3.0 * (double)args->assign.n * (double)args->assign.m * (double)args->assign.d;
}

const kcs_op kcs_op_assign = {
    .name = "assign",
    .summary = "nearest anchor of each point (ties to the smallest index) and its squared distance",
    .sizes = sizes,
    .params = params,
    .inputs = inputs,
    .dtypes = dtypes,
    .parse_args = parse_args,
    .layout = layout,
    .oracle = oracle,
    .closed_form = closed_form,
    .bounds = bounds,
    .check = check,
    .bytes = bytes,
    .flops = flops,
    .ceiling = KCS_CEILING_GEMM, /* compute-bound: n m distances of d terms, like a GEMM */
    .models = models,
};
