/* softmax.c: the softmax descriptor, row-wise over the last axis of a
 * rows x cols matrix:
 *
 *     y[r][k] = exp(x[r][k] - M_r) / sum_l exp(x[r][l] - M_r),   M_r = max_l x[r][l]
 *
 * docs/softmax.md is the normative definition and derives the bound
 * computed here. In short: -inf entries are masked out (y = 0 exactly); a
 * row holding a NaN or a +inf, or nothing but -inf, is NaN throughout; every
 * other element is allowed a relative error built from the device exp's
 * 3-ulp allowance, the rounding of its argument, a row sum of positive terms
 * in any tree of the allowed depth, and a division (or a reciprocal and a
 * product), plus an absolute term for results at the edge of underflow
 * (flush to zero allowed). The argument's rounding is budgeted for the
 * exp2 form production kernels use, exp2(fl(fl(x - M) * fl(log2 e))): three
 * roundings, so the exponential is off by a factor exp(theta |x - M|) with
 * theta = (1 + u)^3 - 1; exp(x - M) itself, with one rounding, is within it.
 *
 * f16 and bf16 are storage types computed in f32: the bound is f32's, for
 * the f32 value z the kernel computes, plus the one rounding of z to the
 * storage type (u_s |z|, and half the type's smallest subnormal where z is
 * below its smallest normal: f16's subnormal outputs must be the correctly
 * rounded subnormals, not flushed).
 *
 * The oracle works in long double (64-bit significand): expl of x - M, a
 * compensated row sum, one division, rounded once to double. A sampled case
 * computes each sampled element's row once (the samples are sorted).
 *
 * The op's arithmetic models (explain.h) follow the bound: no max
 * subtraction, three ways a 16-bit softmax rounds its steps to the storage
 * type (PyTorch's eager composition among them), the wrong axis, -inf turned
 * into NaN, and an empty piece of a masked row merged as NaN or as 1; each
 * reuses the oracle and bound above, over a row or a column.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "explain.h"
#include "op.h"
#include "kcs_ref_softmax.h"

static const char *const sizes[] = {"rows", "cols", NULL};
static const char *const params[] = {NULL};
static const char *const inputs[] = {"x", NULL};
static const kcs_dtype dtypes[] = {KCS_SOFTMAX_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

/* The device exp's (or exp2's) allowance in ulps, the same for every backend
 * (docs/softmax.md: OpenCL's exp and exp2, 3 ulp, are the loosest of the
 * standard ones). */
enum { exp_ulps = 3 };

/* The relative error of the exponent's argument, as a multiple of |x - M|:
 * the exp2 form rounds x - M, the constant log2 e and their product, each
 * at most u relative (docs/softmax.md, "The argument"). */
static double argument_error(double u)
{
    return 3.0 * u + 3.0 * u * u + u * u * u; /* (1 + u)^3 - 1 */
}

/* The type a dtype is computed in: f32 for the 16-bit storage types. */
static kcs_dtype compute_dtype(kcs_dtype dtype)
{
    return dtype == KCS_F16 || dtype == KCS_BF16 ? KCS_F32 : dtype;
}

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    (void)err;
    args->softmax.rows = (size_t)kcs_case_size(c, "rows", 0);
    args->softmax.cols = (size_t)kcs_case_size(c, "cols", 0);
    return KCS_OK;
}

static void matrix(kcs_array_spec *spec, const char *name, kcs_dtype dtype, size_t rows,
                   size_t cols)
{
    snprintf(spec->name, sizeof spec->name, "%s", name);
    spec->dtype = dtype;
    spec->ndim = 2;
    spec->shape[0] = rows;
    spec->shape[1] = cols;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 1;
    matrix(&layout->inputs[0], "x", args->dtype, args->softmax.rows, args->softmax.cols);
    layout->output_count = 1;
    matrix(&layout->outputs[0], "y", args->dtype, args->softmax.rows, args->softmax.cols);
    return KCS_OK;
}

/* The line of x one softmax reduces over: a row, by the definition, or a
 * column, in the wrong-axis model (docs/softmax.md, "Arithmetic models"). */
typedef enum { ALONG_ROWS, ALONG_COLUMNS } axis;

typedef struct {
    size_t number;         /* which row or column */
    size_t start, stride;  /* its first element's flat index, and the step to the next */
    size_t length;         /* its elements */
} line;

/* The line through flat index along an axis, and the index's position in it. */
static line line_of(const kcs_op_args *args, axis along, size_t index, size_t *position)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, row = index / cols, col = index % cols;
    if (along == ALONG_COLUMNS) {
        *position = row;
        return (line){col, col, cols, rows};
    }
    *position = col;
    return (line){row, row * cols, 1, cols};
}

static double element(const kcs_op_args *args, const void *x, const line *l, size_t k)
{
    return kcs_load_element(x, args->dtype, l->start + k * l->stride);
}

/* What the oracle and the bound need to know of one line. */
typedef struct {
    int known;           /* scanned: nan, masked and max filled */
    int summed, weighed; /* sum, weighted_rho filled */
    int nan;             /* a NaN or +inf, or nothing but -inf: the whole line is NaN */
    int masked;          /* holds a -inf (an attention mask) */
    double max;          /* M, the largest element (exact) */
    long double sum;     /* oracle: sum of expl(x - M), compensated */
    double weighted_rho; /* bound: rho = sum_l y_l (exp(theta |x_l - M|) - 1) */
} line_summary;

/* Finds M, whether the line is NaN throughout and whether it is masked. */
static void scan_line(const kcs_op_args *args, const void *x, const line *l, line_summary *s)
{
    int special = 0, masked = 0;
    double max = -INFINITY;
    for (size_t k = 0; k < l->length; k++) {
        double v = element(args, x, l, k);
        if (isnan(v) || v == INFINITY)
            special = 1;
        else if (v > max)
            max = v;
        masked |= v == -INFINITY;
    }
    s->max = max;
    s->nan = special || max == -INFINITY;
    s->masked = masked;
}

/* Sum of expl(x - M) over the line in long double, compensated (TwoSum). */
static long double oracle_line_sum(const kcs_op_args *args, const void *x, const line *l, double max)
{
    long double sum = 0.0L, compensation = 0.0L;
    for (size_t k = 0; k < l->length; k++) {
        double v = element(args, x, l, k);
        if (v == -INFINITY)
            continue;
        long double term = expl((long double)v - (long double)max);
        long double next = sum + term;
        long double term_virtual = next - sum;
        long double sum_virtual = next - term_virtual;
        compensation += (sum - sum_virtual) + (term - term_virtual);
        sum = next;
    }
    return sum + compensation;
}

/* rho = sum_l y_l (exp(theta |t_l|) - 1), t_l = x_l - M, theta the
 * argument's relative error: how much the rounding of each exponent's
 * argument can move the line sum, weighted by each term's share. Terms whose
 * exponential underflows double add nothing (their share is below 2^-1074
 * and S >= 1). Widened for the double arithmetic of its own sums. */
static double line_rho(const kcs_op_args *args, const void *x, const line *l, double max, double theta)
{
    double sum = 0.0, weighted = 0.0;
    for (size_t k = 0; k < l->length; k++) {
        double v = element(args, x, l, k);
        if (v == -INFINITY)
            continue;
        double t = v - max;
        double w = exp(t);
        if (w == 0.0)
            continue;
        sum += w;
        weighted += w * expm1(-theta * t);
    }
    return sum > 0.0 ? weighted / sum * (1.0 + 0x1.0p-20) : 0.0;
}

/* The summaries of the lines a pass over sorted indices meets: rows come in
 * order and are kept one at a time; columns recur, and each is kept once
 * computed (at most cols of them). */
typedef struct {
    const kcs_op_args *args;
    const void *x;
    axis along;
    line_summary row;        /* the last row summarised */
    size_t row_number;       /* its number; SIZE_MAX before the first */
    line_summary *columns;   /* ALONG_COLUMNS: every column's, filled when first met */
} line_summaries;

static kcs_status summaries_open(line_summaries *all, const kcs_op_args *args, const void *x, axis along,
                                 kcs_error *err)
{
    *all = (line_summaries){.args = args, .x = x, .along = along, .row_number = SIZE_MAX};
    if (along == ALONG_COLUMNS) {
        all->columns = calloc(args->softmax.cols ? args->softmax.cols : 1, sizeof *all->columns);
        if (!all->columns)
            return kcs_fail(err, KCS_ERROR, "cannot allocate the summaries of %zu columns", args->softmax.cols);
    }
    return KCS_OK;
}

static void summaries_close(line_summaries *all)
{
    free(all->columns);
}

/* What of a line's summary a pass needs. */
enum { NEED_SCAN = 0, NEED_SUM = 1, NEED_RHO = 2 };

/* The summary of line l: M, NaN and masked, and the oracle's sum or the
 * bound's rho where need asks for them. */
static const line_summary *summary_of(line_summaries *all, const line *l, int need)
{
    line_summary *s = all->along == ALONG_COLUMNS ? &all->columns[l->number] : &all->row;
    if (all->along == ALONG_ROWS && all->row_number != l->number) {
        memset(s, 0, sizeof *s);
        all->row_number = l->number;
    }
    if (!s->known) {
        scan_line(all->args, all->x, l, s);
        s->known = 1;
    }
    if ((need & NEED_SUM) && !s->summed) {
        s->sum = s->nan ? 0.0L : oracle_line_sum(all->args, all->x, l, s->max);
        s->summed = 1;
    }
    if ((need & NEED_RHO) && !s->weighed) {
        /* the argument's rounding in the arithmetic's unit roundoff, not the storage's */
        double u = kcs_unit_roundoff(compute_dtype(all->args->dtype));
        s->weighted_rho = s->nan ? 0.0 : line_rho(all->args, all->x, l, s->max, argument_error(u));
        s->weighed = 1;
    }
    return s;
}

/* The oracle's value of an element v of a line: y = expl(v - M) / S,
 * rounded once to double; NaN for a NaN line, 0 for a masked entry. */
static double oracle_value(const line_summary *s, double v)
{
    if (s->nan)
        return NAN;
    if (v == -INFINITY)
        return 0.0;
    return (double)(expl((long double)v - (long double)s->max) / s->sum);
}

/* Fills e's values with the softmax along an axis: the op's oracle along
 * rows, the wrong-axis model's along columns. */
static kcs_status softmax_values(const kcs_op_args *args, const void *x, kcs_expected *e, axis along,
                                 kcs_error *err)
{
    line_summaries all;
    if (summaries_open(&all, args, x, along, err) != KCS_OK)
        return KCS_ERROR;
    for (size_t n = 0; n < e->count; n++) {
        size_t k, index = e->indices ? e->indices[n] : n;
        line l = line_of(args, along, index, &k);
        e->values[n] = oracle_value(summary_of(&all, &l, NEED_SUM), element(args, x, &l, k));
    }
    summaries_close(&all);
    return KCS_OK;
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    return softmax_values(args, in[0], &expected[0], ALONG_ROWS, err);
}

/* A constant row c gives 1/cols in every element, correctly rounded by one
 * IEEE division; a constant NaN, +inf or -inf gives NaN. */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_distribution *d = &kcs_case_input(c, "x")->distribution;
    if (strcmp(d->name, "constant") != 0)
        return kcs_fail(err, KCS_ERROR,
                        "softmax has a closed form for constant inputs only, not %s", d->name);
    double value = kcs_distribution_param(d, "value", 0.0);
    uint64_t storage; /* the constant as the generator stores it: rounded once to the dtype */
    kcs_store_element(&storage, args->dtype, 0, value);
    double stored = kcs_load_element(&storage, args->dtype, 0);
    double y = isfinite(stored) ? 1.0 / (double)args->softmax.cols : NAN;
    for (size_t n = 0; n < expected[0].count; n++)
        expected[0].values[n] = y;
    return KCS_OK;
}

/* How the exponentials are formed, for the bound: the definition's
 * exp(x - M) with its argument's rounding, or a model's. */
typedef struct {
    double theta;  /* the argument's relative error per unit of |x - M|: (1 + u)^3 - 1, or 0 */
    int unshifted; /* exp(x) without subtracting M: a subnormal or flushed term's absolute error
                      lambda is e^-M in the frame where the largest term is 1 */
} exp_form;

/* The per-element bound of docs/softmax.md: |y_computed - g| for the
 * expected value g of an element x of a line of length elements with the
 * line's M and rho, for a result computed in the working precision of
 * compute (f32 or f64). */
static double computed_bound(kcs_dtype compute, size_t length, double g, double v, double max,
                             double rho, const exp_form *form)
{
    double u = kcs_unit_roundoff(compute);
    double smallest_normal = kcs_smallest_normal(compute);
    double exp_error = 2.0 * exp_ulps * u; /* an ulp is at most 2u relative */
    double g_depth = kcs_gamma(kcs_summation_depth(length), u);
    /* an exponential's absolute error where it is subnormal or flushed, in the
     * frame where the line's largest term is 1 */
    double term_lambda = form->unshifted ? smallest_normal * exp(-max) : smallest_normal;
    double underflow = (double)length * term_lambda * (1.0 + g_depth);
    /* S_computed / S lies in [1 + low_minus_1, 1 + high_minus_1]. */
    double low_minus_1 = expm1(log1p(-exp_error) + log1p(-g_depth) + log1p(-rho)) - underflow;
    double high_minus_1 = expm1(log1p(exp_error) + log1p(g_depth) + log1p(rho)) + underflow;
    if (!(low_minus_1 > -1.0))
        return INFINITY;
    double absolute = term_lambda * (1.0 + u) * (1.0 + u) / (1.0 + low_minus_1) + smallest_normal;
    if (g == 0.0)
        return absolute; /* the exact value is below 2^-1074 */
    double t = fabs(v - max);
    double a = form->theta * t;
    double up = expm1(a + log1p(exp_error) + 2.0 * log1p(u) - log1p(low_minus_1));
    double down = -expm1(-a + log1p(-exp_error) + 2.0 * log1p(-u) - log1p(high_minus_1));
    double relative = fmax(up, down);
    /* The oracle: expl within a few long double ulps of exp(t) (|t| 2^-64 from
     * the rounding of x - M), a compensated sum, a division, one rounding to double. */
    double omega = 0x1.0p-53 + (16.0 + t) * 0x1.0p-64;
    double exact_max = g / (1.0 - omega);
    return (relative + omega) * exact_max + absolute;
}

/* The bound of an element of dtype: the computed value's (above), and for
 * f16 and bf16 the one rounding of that f32 value z to the storage type:
 * at most u_s |z| in the normal range and half the smallest subnormal below
 * it, with |z| <= |y| + the computed bound (docs/softmax.md, "Storage in
 * f16 and bf16"). */
static double element_bound(kcs_dtype dtype, size_t length, double g, double v, double max,
                            double rho, const exp_form *form)
{
    if (isnan(g) || v == -INFINITY)
        return 0.0; /* NaN must be NaN; a masked entry is exactly 0 */
    kcs_dtype compute = compute_dtype(dtype);
    double bound = computed_bound(compute, length, g, v, max, rho, form);
    if (compute != dtype) {
        double omega = 0x1.0p-53 + (16.0 + fabs(v - max)) * 0x1.0p-64;
        double largest_z = g / (1.0 - omega) + bound; /* |y| <= g / (1 - omega) */
        bound += kcs_unit_roundoff(dtype) * largest_z + kcs_smallest_subnormal(dtype) / 2.0;
    }
    return kcs_bound_widen(bound);
}

/* The definition's exponentials: exp2 of the argument rounded three times. */
static exp_form definition_exp(const kcs_op_args *args)
{
    return (exp_form){argument_error(kcs_unit_roundoff(compute_dtype(args->dtype))), 0};
}

/* Fills e's bounds for the softmax along an axis, at e's values. */
static kcs_status softmax_bounds(const kcs_op_args *args, const void *x, kcs_expected *e, axis along,
                                 kcs_error *err)
{
    line_summaries all;
    if (summaries_open(&all, args, x, along, err) != KCS_OK)
        return KCS_ERROR;
    exp_form form = definition_exp(args);
    for (size_t n = 0; n < e->count; n++) {
        size_t k, index = e->indices ? e->indices[n] : n;
        line l = line_of(args, along, index, &k);
        const line_summary *s = summary_of(&all, &l, NEED_RHO);
        double g = s->nan ? NAN : e->values[n];
        e->bounds[n] = element_bound(args->dtype, l.length, g, element(args, x, &l, k), s->max, s->weighted_rho,
                                     &form);
    }
    summaries_close(&all);
    return KCS_OK;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    return softmax_bounds(args, in[0], &expected[0], ALONG_ROWS, err);
}

/* ---- Arithmetic models: what a failure is explained by ----------------------
 *
 * docs/softmax.md, "Arithmetic models", derives each model's values and
 * bound. They reuse the op's line summaries, oracle and bound: the
 * definition's values along the other axis (wrong axis), the same values with
 * the bound of exponentials that were never shifted (no max subtraction),
 * or the definition's where a row was not touched by the mistake. The 16-bit
 * models compute which values of the type each step may give and admit the
 * outputs from the smallest to the largest those lead to, as their centre and
 * half their spread (every other model does so where its values are not the
 * definition's). */

/* The values a model admits from low to high: their centre and half their spread. */
static void admit(double low, double high, double *value, double *bound)
{
    *value = low + (high - low) / 2.0;
    *bound = low == high ? 0.0 : kcs_bound_widen(fmax(*value - low, high - *value));
}

static int is_16_bit(const kcs_op_args *args)
{
    return compute_dtype(args->dtype) != args->dtype;
}

/* -- no max subtraction -------------------------------------------------- */

/* exp(x) of the working type overflows beyond log_overflow(compute) and
 * rounds to 0 below log_vanishing(compute) (with the exp's 3 ulps). */
static long double log_overflow(kcs_dtype compute)
{
    return compute == KCS_F32 ? logl(0x1.ffffffp127L) : logl((long double)DBL_MAX) + 0x1p-54L;
}

static long double log_vanishing(kcs_dtype compute)
{
    double u = kcs_unit_roundoff(compute);
    return logl((long double)kcs_smallest_subnormal(compute) / 2.0L) - log1pl(2.0L * exp_ulps * u);
}

/* exp(x) / sum exp(x): the definition's values where nothing overflows or
 * vanishes, with the bound of unshifted exponentials (no argument rounding,
 * but each subnormal term's lambda is e^-M of the row's largest term); a row
 * whose exp overflows for some x gives NaN there (inf / inf) and 0 elsewhere;
 * a row whose sum overflows gives 0; a row whose every exp rounds to 0 gives
 * NaN (0 / 0). A NaN anywhere still makes the row NaN. */
static kcs_status expect_no_max(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                kcs_error *err)
{
    kcs_expected *e = &expected[0];
    kcs_dtype compute = compute_dtype(args->dtype);
    long double overflow = log_overflow(compute), vanishing = log_vanishing(compute);
    const exp_form unshifted = {0.0, 1};
    line_summaries all;
    if (summaries_open(&all, args, in[0], ALONG_ROWS, err) != KCS_OK)
        return KCS_ERROR;
    size_t row = SIZE_MAX;
    int nan = 0, terms_overflow = 0, sum_overflows = 0, vanishes = 0;
    for (size_t n = 0; n < e->count; n++) {
        size_t k, index = e->indices ? e->indices[n] : n;
        line l = line_of(args, ALONG_ROWS, index, &k);
        const line_summary *s = summary_of(&all, &l, NEED_SUM);
        if (l.number != row) {
            row = l.number;
            double largest = -INFINITY; /* +inf included */
            nan = 0;
            for (size_t j = 0; j < l.length; j++) {
                double v = element(args, in[0], &l, j);
                nan |= isnan(v);
                largest = v > largest ? v : largest;
            }
            terms_overflow = largest > overflow;
            vanishes = !terms_overflow && (long double)largest < vanishing; /* all -inf too */
            sum_overflows = !terms_overflow && !vanishes && !s->nan && (long double)s->max + logl(s->sum) > overflow;
        }
        double v = element(args, in[0], &l, k);
        if (nan || vanishes) {
            e->values[n] = NAN;
            e->bounds[n] = 0.0;
        } else if (terms_overflow || sum_overflows) {
            e->values[n] = terms_overflow && v > overflow ? NAN : 0.0;
            e->bounds[n] = 0.0;
        } else {
            e->values[n] = oracle_value(s, v); /* the definition's: the same softmax, shifted or not */
            e->bounds[n] = element_bound(args->dtype, l.length, e->values[n], v, s->max, 0.0, &unshifted);
        }
    }
    summaries_close(&all);
    return KCS_OK;
}

/* -- steps in the 16-bit storage type -------------------------------------- */

/* Which steps of a 16-bit softmax a model rounds to the storage type. */
typedef struct {
    int argument;       /* x - M, before the exp (PyTorch's eager torch.exp(x - max)) */
    int sum;            /* the f32 row sum, once (PyTorch's .sum() of a 16-bit tensor) */
    int every_addition; /* each addition of the row sum, in a tree of ceil(log2 cols) levels */
} storage_steps;

/* The values of the type the term exp(x - M) of an element v may take: the
 * f32 exponential within the exp's 3 ulps and its argument's rounding (or
 * exactly of the rounded argument), plus a subnormal's lambda, rounded. */
static void storage_term(const storage_steps *steps, kcs_dtype dtype, double v, double max, double *low,
                         double *high)
{
    if (v == -INFINITY) {
        *low = *high = 0.0;
        return;
    }
    double u = kcs_unit_roundoff(KCS_F32), lambda = kcs_smallest_normal(KCS_F32);
    double t = steps->argument ? kcs_rounded_to(dtype, v - max) : v - max; /* exact in double, or innocuously rounded */
    /* double's exp (within an ulp of double) is far more precise than the rounding to the type
     * needs; 2^-50 more covers it */
    double a = argument_error(u) * fabs(t), exp_error = 2.0 * exp_ulps * u;
    *low = kcs_rounded_to(dtype, exp(t - a) * (1.0 - exp_error) * (1.0 - 0x1p-50) - lambda);
    *high = kcs_rounded_to(dtype, exp(t + a) * (1.0 + exp_error) * (1.0 + 0x1p-50) + lambda);
}

/* The largest power of two that divides a (a positive double), or +inf for 0. */
static double quantum(double a)
{
    if (a == 0.0)
        return INFINITY;
    int exponent;
    double fraction = frexp(a, &exponent); /* a = fraction 2^exponent, fraction in [1/2, 1) */
    uint64_t significand = (uint64_t)ldexp(fraction, 53);
    return ldexp(1.0, exponent - 53 + __builtin_ctzll(significand));
}

/* The smallest and largest row sum a kernel following the steps may divide
 * by, from the sums of the smallest and largest terms; finest is the finest
 * quantum of any term (all are multiples of it). */
static void storage_row_sum(const storage_steps *steps, kcs_dtype dtype, size_t cols, long double low_terms,
                            long double high_terms, double finest, double *low, double *high)
{
    long double down, up;
    int digits = dtype == KCS_F16 ? 11 : 8; /* the type's significand */
    if (steps->every_addition && high_terms < ldexpl(finest, digits)) {
        /* every partial sum is a multiple of the finest quantum below 2^digits of it: exact */
        down = low_terms;
        up = high_terms;
    } else if (steps->every_addition) {
        long double us = kcs_unit_roundoff(dtype), levels = cols > 1 ? ceil(log2((double)cols)) : 0.0;
        down = low_terms * powl(1.0L - us, levels);
        up = high_terms * powl(1.0L + us, levels);
    } else {
        long double g = kcs_gamma(kcs_summation_depth(cols), kcs_unit_roundoff(KCS_F32));
        down = low_terms * (1.0L - g);
        up = high_terms * (1.0L + g);
    }
    *low = (double)(down * (1.0L - 0x1p-50L));
    *high = (double)(up * (1.0L + 0x1p-50L));
    if (steps->sum || steps->every_addition) { /* a value of the type, infinite past its largest */
        *low = kcs_rounded_to(dtype, *low);
        *high = kcs_rounded_to(dtype, *high);
    }
}

/* The value of the 16-bit dtype next to a (one of its values, >= 0), up or down. */
static double half_next(kcs_dtype dtype, double a, int up)
{
    uint64_t storage;
    kcs_store_element(&storage, dtype, 0, a);
    storage = up ? storage + 1 : storage - 1;
    return kcs_load_element(&storage, dtype, 0);
}

/* The outputs an element may have for the row sum S: the rounding of its
 * term's smallest and largest value over S, by an f32 quotient (or a
 * reciprocal and a product: two roundings, and a subnormal's lambda). */
static void storage_output(kcs_dtype dtype, double low, double high, double sum, double *y_low, double *y_high)
{
    double u = kcs_unit_roundoff(KCS_F32), lambda = kcs_smallest_normal(KCS_F32);
    *y_low = fmax(0.0, kcs_rounded_to(dtype, low / sum * (1.0 - u) * (1.0 - u) - lambda));
    *y_high = fmax(0.0, kcs_rounded_to(dtype, high / sum * (1.0 + u) * (1.0 + u) + lambda));
}

/* The row sum, one number between low and high (a value of the type, or its
 * infinity, where the steps round it: on_type), that the output row y shows:
 * each output a of the type rounds from quotients between the midpoints
 * around it, which holds the sum between two limits; their intersection with
 * [low, high], at its middle. Where the output fits no one sum, the middle
 * of what is left, or an end: the model then does not fit. */
static double row_sum_seen(const kcs_op_args *args, const void *y, const line *l, const double *term_low,
                           const double *term_high, double low, double high, int on_type)
{
    kcs_dtype dtype = args->dtype;
    double u = kcs_unit_roundoff(KCS_F32), lambda = kcs_smallest_normal(KCS_F32);
    double from = low, to = high, largest = kcs_largest_finite(dtype);
    for (size_t k = 0; k < l->length; k++) {
        double a = kcs_load_element(y, dtype, l->start + k);
        if (term_high[k] == 0.0 || !isfinite(a) || a < 0.0)
            continue; /* a masked entry says nothing of the sum; a NaN output fits nothing anyway */
        double above = a == largest ? 65520.0 : (a + half_next(dtype, a, 1)) / 2.0;
        double below = a == 0.0 ? 0.0 : (half_next(dtype, a, 0) + a) / 2.0;
        from = fmax(from, term_low[k] * (1.0 - u) * (1.0 - u) / (above + lambda));
        if (below - lambda > 0.0)
            to = fmin(to, term_high[k] * (1.0 + u) * (1.0 + u) / (below - lambda));
    }
    if (!(from <= to))
        return from > high ? high : to < low ? low : from; /* no one sum: the nearer end */
    if (!on_type)
        return isinf(to) ? from : from + (to - from) / 2.0;
    if (from > largest)
        return INFINITY; /* only an overflowed sum gives these zeros */
    double middle = kcs_rounded_to(dtype, isinf(to) ? from : from + (to - from) / 2.0);
    for (int step = 0; step < 2 && middle < from; step++)
        middle = half_next(dtype, middle, 1);
    return middle;
}

/* A 16-bit softmax whose steps round to the storage type: the terms each
 * element's exp may round to, one row sum within what the steps allow, taken
 * from the output row (which sum a kernel reached depends on its order of
 * additions), and the outputs those give. */
static kcs_status expect_in_storage(const kcs_op_args *args, const void *x, const void *y, kcs_expected *e,
                                    const storage_steps *steps, kcs_error *err)
{
    kcs_dtype dtype = args->dtype;
    size_t cols = args->softmax.cols;
    line_summaries all;
    if (summaries_open(&all, args, x, ALONG_ROWS, err) != KCS_OK)
        return KCS_ERROR;
    double *term_low = malloc((cols ? cols : 1) * sizeof *term_low); /* the current row's terms */
    double *term_high = malloc((cols ? cols : 1) * sizeof *term_high);
    if (!term_low || !term_high) {
        free(term_low);
        free(term_high);
        summaries_close(&all);
        return kcs_fail(err, KCS_ERROR, "cannot allocate the terms of a row of %zu", cols);
    }
    size_t row = SIZE_MAX;
    double sum = 1.0;
    for (size_t n = 0; n < e->count; n++) {
        size_t k, index = e->indices ? e->indices[n] : n;
        line l = line_of(args, ALONG_ROWS, index, &k);
        const line_summary *s = summary_of(&all, &l, NEED_SCAN);
        if (!s->nan && l.number != row) {
            row = l.number;
            long double low_terms = 0.0L, high_terms = 0.0L;
            double finest = INFINITY;
            for (size_t j = 0; j < l.length; j++) {
                storage_term(steps, dtype, element(args, x, &l, j), s->max, &term_low[j], &term_high[j]);
                low_terms += term_low[j];
                high_terms += term_high[j];
                finest = fmin(finest, fmin(quantum(term_low[j]), quantum(term_high[j])));
            }
            double low, high;
            storage_row_sum(steps, dtype, l.length, low_terms, high_terms, finest, &low, &high);
            sum = row_sum_seen(args, y, &l, term_low, term_high, low, high, steps->sum || steps->every_addition);
        }
        e->bounds[n] = 0.0;
        if (s->nan) {
            e->values[n] = NAN;
        } else if (term_high[k] == 0.0 || isinf(sum)) {
            e->values[n] = 0.0; /* a masked entry (its term exactly 0), or an overflowed sum */
        } else {
            double y_low, y_high;
            storage_output(dtype, term_low[k], term_high[k], sum, &y_low, &y_high);
            admit(y_low, y_high, &e->values[n], &e->bounds[n]);
        }
    }
    free(term_low);
    free(term_high);
    summaries_close(&all);
    return KCS_OK;
}

static kcs_status expect_terms_in_storage(const kcs_op_args *args, void *const in[], void *const actual[],
                                          kcs_expected expected[], kcs_error *err)
{
    static const storage_steps steps = {0, 0, 0};
    return expect_in_storage(args, in[0], actual[0], &expected[0], &steps, err);
}

static kcs_status expect_exp_and_sum_in_storage(const kcs_op_args *args, void *const in[], void *const actual[],
                                                kcs_expected expected[], kcs_error *err)
{
    static const storage_steps steps = {1, 1, 0};
    return expect_in_storage(args, in[0], actual[0], &expected[0], &steps, err);
}

static kcs_status expect_sum_in_storage(const kcs_op_args *args, void *const in[], void *const actual[],
                                        kcs_expected expected[], kcs_error *err)
{
    static const storage_steps steps = {0, 0, 1};
    return expect_in_storage(args, in[0], actual[0], &expected[0], &steps, err);
}

/* -- the wrong axis -------------------------------------------------------- */

/* The definition's softmax and bound along columns. */
static kcs_status expect_wrong_axis(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                    kcs_error *err)
{
    if (softmax_values(args, in[0], &expected[0], ALONG_COLUMNS, err) != KCS_OK)
        return KCS_ERROR;
    return softmax_bounds(args, in[0], &expected[0], ALONG_COLUMNS, err);
}

/* -- masked rows ----------------------------------------------------------- */

/* What happens to a masked row (one holding -inf, and finite otherwise). */
typedef enum {
    ALL_NAN,        /* NaN throughout */
    NAN_IF_SEEN,    /* NaN throughout where the output's row is, else the definition's */
    ONES_IF_SEEN,   /* the definition's with the row sum larger by the whole number the output shows */
} masked_row;

/* Whether every element of row r of the output is NaN. */
static int row_all_nan(const kcs_op_args *args, const void *y, size_t r)
{
    size_t cols = args->softmax.cols;
    for (size_t k = 0; k < cols; k++)
        if (!isnan(kcs_load_element(y, args->dtype, r * cols + k)))
            return 0;
    return 1;
}

/* The number of 1s added to the row sum S that brings the definition's row
 * closest to the output's: from the output's row total, S / (S + n), then
 * the nearer whole numbers tried. */
static double extra_ones(const kcs_op_args *args, const void *x, const void *y, const line *l, const line_summary *s)
{
    double total = 0.0;
    for (size_t k = 0; k < l->length; k++)
        total += kcs_load_element(y, args->dtype, l->start + k);
    if (!(total > 0.0) || isinf(total))
        return 0.0;
    double guess = fmax(0.0, (double)s->sum / total - (double)s->sum), best = 0.0, best_distance = INFINITY;
    for (double n = fmax(0.0, floor(guess) - 1.0); n <= floor(guess) + 2.0; n++) {
        double distance = 0.0;
        for (size_t k = 0; k < l->length; k++) {
            double v = element(args, x, l, k);
            double predicted = v == -INFINITY ? 0.0 : (double)(expl((long double)v - s->max) / (s->sum + n));
            distance += fabs(kcs_load_element(y, args->dtype, l->start + k) - predicted);
        }
        if (distance < best_distance) {
            best = n;
            best_distance = distance;
        }
    }
    return best;
}

/* The definition's values and bounds, with masked rows as the model says. */
static kcs_status expect_masked(const kcs_op_args *args, void *const in[], void *const actual[], kcs_expected expected[],
                                masked_row what, kcs_error *err)
{
    kcs_expected *e = &expected[0];
    line_summaries all;
    if (summaries_open(&all, args, in[0], ALONG_ROWS, err) != KCS_OK)
        return KCS_ERROR;
    exp_form form = definition_exp(args);
    size_t row = SIZE_MAX;
    double ones = 0.0;
    int nan = 0;
    for (size_t n = 0; n < e->count; n++) {
        size_t k, index = e->indices ? e->indices[n] : n;
        line l = line_of(args, ALONG_ROWS, index, &k);
        const line_summary *s = summary_of(&all, &l, NEED_SUM | NEED_RHO);
        double v = element(args, in[0], &l, k);
        e->values[n] = oracle_value(s, v); /* the definition's, unless the row is masked */
        e->bounds[n] = element_bound(args->dtype, l.length, s->nan ? NAN : e->values[n], v, s->max, s->weighted_rho,
                                     &form);
        if (s->nan || !s->masked)
            continue;
        if (l.number != row) {
            row = l.number;
            nan = what == ALL_NAN || (what == NAN_IF_SEEN && row_all_nan(args, actual[0], row));
            ones = what == ONES_IF_SEEN ? extra_ones(args, in[0], actual[0], &l, s) : 0.0;
        }
        if (nan) {
            e->values[n] = NAN;
            e->bounds[n] = 0.0;
        } else if (ones > 0.0 && v != -INFINITY) {
            e->values[n] = (double)(expl((long double)v - s->max) / (s->sum + ones));
            e->bounds[n] = element_bound(args->dtype, l.length, e->values[n], v, s->max, s->weighted_rho, &form);
        }
    }
    summaries_close(&all);
    return KCS_OK;
}

static kcs_status expect_minus_inf_nan(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                       kcs_error *err)
{
    return expect_masked(args, in, NULL, expected, ALL_NAN, err);
}

static kcs_status expect_empty_piece_nan(const kcs_op_args *args, void *const in[], void *const actual[],
                                         kcs_expected expected[], kcs_error *err)
{
    return expect_masked(args, in, actual, expected, NAN_IF_SEEN, err);
}

static kcs_status expect_empty_piece_one(const kcs_op_args *args, void *const in[], void *const actual[],
                                         kcs_expected expected[], kcs_error *err)
{
    return expect_masked(args, in, actual, expected, ONES_IF_SEEN, err);
}

static const kcs_model no_max_subtraction = {
    "softmax-no-max-subtraction",
    "computes exp(x) / sum exp(x) without subtracting the row's max: inf / inf where exp overflows, 0 / 0 where "
    "every exp vanishes",
    NULL, expect_no_max, NULL};
static const kcs_model terms_in_storage = {
    "softmax-terms-in-storage-type",
    "rounds each exp(x - M) to the 16-bit type before the f32 row sum and the division: two roundings of each output",
    is_16_bit, NULL, expect_terms_in_storage};
static const kcs_model exp_and_sum_in_storage = {
    "softmax-exp-and-sum-in-storage-type",
    "rounds x - M, its exp and the f32 row sum each to the 16-bit type, as torch.exp(x - max) / sum composes it in "
    "f16 or bf16",
    is_16_bit, NULL, expect_exp_and_sum_in_storage};
static const kcs_model sum_in_storage = {
    "softmax-sum-in-storage-type",
    "adds the row sum in the 16-bit type: its terms and every addition of a tree rounded to it",
    is_16_bit, NULL, expect_sum_in_storage};
static const kcs_model wrong_axis = {
    "softmax-wrong-axis", "reduces over the columns instead of the rows (the softmax of axis 0)", NULL,
    expect_wrong_axis, NULL};
static const kcs_model minus_inf_nan = {
    "softmax-minus-inf-to-nan",
    "turns a -inf entry into NaN instead of exp(-inf) = 0: every row holding one is NaN throughout", NULL,
    expect_minus_inf_nan, NULL};
static const kcs_model empty_piece_nan = {
    "softmax-empty-piece-nan",
    "merges a piece of a row that holds nothing but -inf as NaN (exp(-inf - (-inf))): the rows where its cut "
    "left one are NaN throughout",
    NULL, NULL, expect_empty_piece_nan};
static const kcs_model empty_piece_one = {
    "softmax-empty-piece-one",
    "merges a piece of a row that holds nothing but -inf as 1: each such piece adds 1 to the row sum", NULL, NULL,
    expect_empty_piece_one};

static const kcs_model *const models[] = {&no_max_subtraction, &terms_in_storage, &exp_and_sum_in_storage,
                                          &sum_in_storage, &wrong_axis, &minus_inf_nan, &empty_piece_nan,
                                          &empty_piece_one, NULL};

static double bytes(const kcs_op_args *args)
{
    return 2.0 * (double)args->softmax.rows * (double)args->softmax.cols *
           (double)kcs_dtype_size(args->dtype);
}

/* Per element: a comparison for the max, a subtraction, an exp, an
 * addition and a division (the exp counted as one). */
static double flops(const kcs_op_args *args)
{
    return 5.0 * (double)args->softmax.rows * (double)args->softmax.cols;
}

const kcs_op kcs_op_softmax = {
    .name = "softmax",
    .summary = "row-wise softmax over the last axis, max-subtracted; -inf masked",
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
