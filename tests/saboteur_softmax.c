/* saboteur_softmax.c: broken softmaxes, each a mistake real kernels make:
 * no max subtraction (exp overflows near 1e4), the last row computed from
 * the row before it (an index clamped one short), and a row sum that stops
 * one element short. Computed in double and rounded to the case dtype, so
 * each error is the mistake alone. */
#include <math.h>
#include <stdlib.h>

#include "saboteur_backend.h"

/* What one saboteur gets wrong; all zero is a correct softmax. */
typedef struct {
    int no_max;           /* exp(x) / sum exp(x), without subtracting the max */
    int last_row_shifted; /* the last row reads the row before it */
    int sum_drops_last;   /* the row sum leaves out the last element */
} softmax_mistake;

static kcs_status broken_softmax(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const in[], kcs_buffer *const out[],
                                 const softmax_mistake *mistake, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(args->dtype);
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    if (status == KCS_OK && !y)
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        size_t source = mistake->last_row_shifted && r == rows - 1 && r > 0 ? r - 1 : r;
        double max = -INFINITY, sum = 0.0;
        for (size_t k = 0; k < cols; k++)
            max = fmax(max, kcs_load_element(x, args->dtype, source * cols + k));
        double shift = mistake->no_max ? 0.0 : max;
        size_t summed = mistake->sum_drops_last && cols > 1 ? cols - 1 : cols;
        for (size_t k = 0; k < summed; k++)
            sum += exp(kcs_load_element(x, args->dtype, source * cols + k) - shift);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, args->dtype, r * cols + k,
                              exp(kcs_load_element(x, args->dtype, source * cols + k) - shift) /
                                  sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    return status;
}

#define SABOTEUR_FUNCTION(function, ...)                                                           \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const softmax_mistake mistake = {__VA_ARGS__};                                      \
        *seconds = 0;                                                                              \
        return broken_softmax(device, args, in, out, &mistake, err);                               \
    }

SABOTEUR_FUNCTION(softmax_no_max, .no_max = 1)
SABOTEUR_FUNCTION(softmax_last_row_shifted, .last_row_shifted = 1)
SABOTEUR_FUNCTION(softmax_sum_drops_last, .sum_drops_last = 1)

/* ---- the exp2 form (docs/softmax.md, "The argument") ----------------------
 *
 * Production softmaxes (PyTorch's, FlashAttention's) compute the exponential
 * as exp2((x - M) * log2 e). These kernels do that in the case type, each
 * operation correctly rounded: t = x - M, p = t * fl(log2 e), an exp2 that
 * errs by a chosen number of ulps in the direction that hurts most (the
 * row's largest terms down, every other term up), a pairwise row sum and one
 * division. With an exp2 of at most 1 ulp this is a correct kernel and must
 * pass every case (tests/saboteur_softmax_test.c); with one far beyond the
 * 3-ulp budget, or with M * log2 e rounded on its own (the fused form), it
 * must fail. */

/* value rounded to the case type (one correct rounding: an f32 operation
 * computed in double and rounded to float is correctly rounded, 53 >= 2*24 + 2). */
static double in_type(kcs_dtype dtype, double value)
{
    return dtype == KCS_F32 ? (double)(float)value : value;
}

/* The next number of the case type after value, towards direction. */
static double step(kcs_dtype dtype, double value, double direction)
{
    return dtype == KCS_F32 ? (double)nextafterf((float)value, (float)direction) : nextafter(value, direction);
}

/* 2^p in the case type, off by less than ulps ulps, upwards or downwards:
 * the neighbour of the exact value on that side (the value itself when it is
 * representable), then ulps - 1 steps further. */
static double exp2_off_by(kcs_dtype dtype, double p, int ulps, int upwards)
{
    long double exact = exp2l((long double)p);
    if (exact == 0.0L || isinf(p) || isnan(p))
        return (double)exact;
    double direction = upwards ? INFINITY : -INFINITY;
    double near = in_type(dtype, (double)exact);
    double result = near;
    if (upwards ? (long double)near < exact : (long double)near > exact)
        result = step(dtype, near, direction);
    for (int s = 1; s < ulps; s++)
        result = step(dtype, result, direction);
    return result;
}

/* Sum of terms[0..count) in the case type, pairwise: each term passes
 * through ceil(log2 count) additions, inside the allowed depth. */
static double pairwise_sum(kcs_dtype dtype, const double *terms, size_t count)
{
    if (count == 0)
        return 0.0;
    if (count == 1)
        return terms[0];
    size_t half = count / 2;
    return in_type(dtype, pairwise_sum(dtype, terms, half) + pairwise_sum(dtype, terms + half, count - half));
}

/* How an exp2-form kernel computes its exponentials. */
typedef struct {
    int exp2_ulps;    /* its exp2 errs by less than this many ulps */
    int fused_max;    /* exp2(fma(x, c, -fl(M c))), FlashAttention's form */
    double log2e;     /* the constant c as written (0: log2 e to full precision) */
} exp2_form;

static kcs_status exp2_softmax(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                               kcs_buffer *const out[], const exp2_form *form, kcs_error *err)
{
    kcs_dtype dtype = args->dtype;
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(dtype);
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    double *terms = malloc((cols ? cols : 1) * sizeof *terms);
    if (status == KCS_OK && (!y || !terms))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    double log2e = in_type(dtype, form->log2e != 0.0 ? form->log2e : 1.44269504088896340735992468100189214);
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        double max = -INFINITY;
        for (size_t k = 0; k < cols; k++) {
            double v = kcs_load_element(x, dtype, r * cols + k);
            max = isnan(v) || isnan(max) ? NAN : fmax(max, v);
        }
        double scaled_max = in_type(dtype, max * log2e);
        for (size_t k = 0; k < cols; k++) {
            double v = kcs_load_element(x, dtype, r * cols + k);
            double p = form->fused_max ? in_type(dtype, fma(v, log2e, -scaled_max)) /* the product unrounded */
                                       : in_type(dtype, in_type(dtype, v - max) * log2e);
            terms[k] = exp2_off_by(dtype, p, form->exp2_ulps, !(p == 0.0));
        }
        double sum = pairwise_sum(dtype, terms, cols);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, dtype, r * cols + k, in_type(dtype, terms[k] / sum));
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    free(terms);
    return status;
}

#define EXP2_FUNCTION(function, ...)                                                               \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const exp2_form form = {__VA_ARGS__};                                               \
        *seconds = 0;                                                                              \
        return exp2_softmax(device, args, in, out, &form, err);                                    \
    }

EXP2_FUNCTION(exp2_within_1_ulp, .exp2_ulps = 1)
EXP2_FUNCTION(exp2_within_3_ulps, .exp2_ulps = 3)
EXP2_FUNCTION(exp2_fused_within_3_ulps, .exp2_ulps = 3, .fused_max = 1)
EXP2_FUNCTION(exp2_off_by_10_ulps, .exp2_ulps = 10)
EXP2_FUNCTION(exp2_short_log2e, .exp2_ulps = 1, .log2e = 1.4427)

#define SABOTEUR(name, description, function)                                                      \
    {"softmax", KCS_F64, name, description, function, NULL},                                       \
    {"softmax", KCS_F32, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/softmax.txt says which saboteur must fail where):
 * kcs-saboteur-cases: softmax/f32-near-1e4 softmax/f64-near-1e4 */
static const kcs_kernel rows[] = {
    SABOTEUR("no-max-subtraction", "exp(x) / sum exp(x): overflows for x near 1e4", softmax_no_max),
    SABOTEUR("last-row-off-by-one", "the last row is computed from the row before it",
             softmax_last_row_shifted),
    SABOTEUR("sum-one-element-short", "the row sum leaves out the last element",
             softmax_sum_drops_last),

    /* the exp2 form (above): a production kernel's exponential, made wrong */
    SABOTEUR("exp2-short-log2e", "exp2((x - M) * 1.4427): log2 e to five digits, 2.4e-6 off",
             exp2_short_log2e),
};

const kcs_kernel_table kcs_saboteur_softmax_kernels = KCS_KERNEL_TABLE(rows);

#define EXP2_ROW(name, description, function)                                                      \
    {"softmax", KCS_F64, name, description, function, NULL},                                       \
    {"softmax", KCS_F32, name, description, function, NULL}

/* Not saboteurs, and not run by the saboteur runner (three are correct, and
 * the fourth fails only where the bound's slack does not hide it): the exp2
 * form with exp2s of 1 and 3 ulps, and FlashAttention's fused form, which
 * must pass every case, and one off by up to 10 ulps, which must fail on
 * rows of two columns (tests/saboteur_softmax_test.c says why 10). */
static const kcs_kernel exp2_form_rows[] = {
    EXP2_ROW("exp2-within-1-ulp", "exp2((x - M) log2 e), its exp2 off by up to 1 ulp the harmful way",
             exp2_within_1_ulp),
    EXP2_ROW("exp2-within-3-ulps", "exp2((x - M) log2 e), its exp2 off by up to 3 ulps the harmful way",
             exp2_within_3_ulps),
    EXP2_ROW("exp2-fused-within-3-ulps", "exp2(fma(x, log2 e, -fl(M log2 e))), exp2 off by up to 3 ulps",
             exp2_fused_within_3_ulps),
    EXP2_ROW("exp2-off-by-10-ulps", "exp2((x - M) log2 e), its exp2 off by 9 to 10 ulps the harmful way",
             exp2_off_by_10_ulps),
};

const kcs_kernel_table kcs_softmax_exp2_form_kernels = KCS_KERNEL_TABLE(exp2_form_rows);
