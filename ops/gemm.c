/* gemm.c: the GEMM descriptor: C_out = alpha * op(A) * op(B) + beta * C,
 * row-major, op = identity or transpose.
 *
 * docs/gemm.md is the normative definition and derives the bound computed
 * here. In short: each element is a dot product of length k, scaled and added
 * to beta * C in any order in which each of the k + 1 terms passes through
 * at most k + 2 roundings, so
 *
 *     |C_out - C_exact|_ij <= gamma_{k+2}(u) * (|alpha| (|op(A)| |op(B)|)_ij + |beta c_ij|)
 *
 * (Higham, Accuracy and Stability, 3.5), plus underflow and the oracle's own
 * error. TF32 mode adds the rounding of each input to TF32, and TF32 and
 * mode=tensor (f16 and bf16 on tensor cores) accumulate in block steps that
 * align and truncate: gamma(k + ceil(k/4) + 2, 2^-23) ("Tensor cores" in
 * docs/gemm.md). f16 and bf16
 * ("Half precision" in docs/gemm.md) are computed in f32 (exact products,
 * f32's gamma_{k+2}), plus one rounding of the result to a 16-bit C_out,
 * u16 |result|, unless the case says c_dtype=f32 (C and C_out in f32); where
 * the f32 result must lie beyond a 16-bit C_out's overflow threshold the bound
 * is 0, so that only infinity passes ("Overflow to infinity"). On a device that
 * flushes f32 subnormals (flushing_bounds) each f32 element may also lose
 * every term with a factor or partial product below 2^-126, and 2^-126 per
 * addition or scaling ("Flush to zero" in docs/gemm.md). beta = 0 means C
 * is not read and alpha = 0 means A and B are not read (as the reference
 * BLAS does), so NaN there must not reach the output.
 *
 * The oracle is a compensated dot product in double-double (accurate.h),
 * rounded once, computed only at the requested elements: a sampled 4096^3
 * case costs one dot product per sampled element.
 *
 * The op's catalogue of arithmetic models (explain.h; docs/gemm.md,
 * "Arithmetic models") is at the end: each is the op's arithmetic with one
 * deviation (TF32 inputs, 16-bit running sums, an epilogue that rounds
 * twice, flushed subnormals, dropped terms, a wrong transpose or scalar),
 * computed from the same operand reading, element routine and bound plan as
 * the oracle and the bound, at O(k) per element.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accurate.h"
#include "bounds.h"
#include "explain.h"
#include "op.h"
#include "kcs_ref_gemm.h"

static const char *const sizes[] = {"m", "n", "k", NULL};
static const char *const params[] = {"transa", "transb", "alpha", "beta", "mode", "c_dtype", "a_scale", "b_scale", NULL};
static const char *const inputs[] = {"a", "b", "c", NULL};
static const kcs_dtype dtypes[] = {KCS_GEMM_TYPES(KCS_DTYPE_OF) KCS_GEMM_FP8_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

/* TF32 keeps 10 of f32's 23 fraction bits. The conversion may truncate
 * (tensor cores do, Fasi et al. 2021), so its relative error is below
 * 2^-10, not the 2^-11 of rounding to nearest. */
static const double tf32_conversion_error = 0x1.0p-10;

static kcs_status parse_transpose(const kcs_case *c, const char *name, int *transpose, kcs_error *err)
{
    const char *text = kcs_case_param(c, name);
    if (!text || strcmp(text, "N") == 0 || strcmp(text, "n") == 0)
        *transpose = 0;
    else if (strcmp(text, "T") == 0 || strcmp(text, "t") == 0)
        *transpose = 1;
    else
        return kcs_fail(err, KCS_ERROR, "gemm parameter %s is N or T, not '%s'", name, text);
    return KCS_OK;
}

/* The dtype of C and C_out: the case dtype unless c_dtype says f32, which
 * an f16 or bf16 case may (KCS_GEMM_F32_OUTPUT_TYPES). */
static kcs_status parse_c_dtype(const kcs_case *c, kcs_gemm_args *g, kcs_error *err)
{
    static const kcs_dtype f32_output[] = {KCS_GEMM_F32_OUTPUT_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};
    const char *text = kcs_case_param(c, "c_dtype");
    g->c_dtype = text ? kcs_dtype_from_name(text) : c->dtype;
    if (g->c_dtype == c->dtype)
        return KCS_OK;
    for (const kcs_dtype *d = f32_output; *d != KCS_DTYPE_NONE && g->c_dtype == KCS_F32; d++)
        if (*d == c->dtype)
            return KCS_OK;
    return kcs_fail(err, KCS_ERROR,
                    "gemm parameter c_dtype is the case dtype (%s) or, for f16 and bf16 cases, f32; not '%s'",
                    kcs_dtype_name(c->dtype), text);
}

/* ---- FP8 (docs/gemm.md, "FP8") ---- */

static int is_fp8(kcs_dtype dtype)
{
    return dtype == KCS_FP8_E4M3 || dtype == KCS_FP8_E5M2;
}

/* An FP8 case's c_dtype (f32, bf16 or f16: required, as FP8 is never an
 * output here) and its per-tensor scales a_scale and b_scale (default 1,
 * rounded to f32 as cuBLASLt reads them); other dtypes take no scales. */
static kcs_status parse_fp8(const kcs_case *c, kcs_gemm_args *g, kcs_error *err)
{
    g->a_scale = g->b_scale = 1.0;
    if (!is_fp8(c->dtype)) {
        if (kcs_case_param(c, "a_scale") || kcs_case_param(c, "b_scale"))
            return kcs_fail(err, KCS_ERROR, "gemm parameters a_scale and b_scale are for FP8 cases only, not %s",
                            kcs_dtype_name(c->dtype));
        return KCS_OK;
    }
    const char *text = kcs_case_param(c, "c_dtype");
    g->c_dtype = text ? kcs_dtype_from_name(text) : KCS_DTYPE_NONE;
    if (g->c_dtype != KCS_F32 && g->c_dtype != KCS_BF16 && g->c_dtype != KCS_F16)
        return kcs_fail(err, KCS_ERROR,
                        "an FP8 gemm case needs c_dtype=f32, bf16 or f16 (the type of C and C_out; FP8 is "
                        "never an output), not '%s'",
                        text ? text : "(none)");
    if (g->tf32 || g->tensor_cores)
        return kcs_fail(err, KCS_ERROR, "an FP8 gemm case takes no mode: FP8 is its own mode");
    if (kcs_case_number(c, "a_scale", 1.0, KCS_F32, &g->a_scale, err) != KCS_OK ||
        kcs_case_number(c, "b_scale", 1.0, KCS_F32, &g->b_scale, err) != KCS_OK)
        return KCS_ERROR;
    g->a_scale = (double)(float)g->a_scale;
    g->b_scale = (double)(float)g->b_scale;
    return KCS_OK;
}

/* ---- end FP8 ---- */

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    kcs_gemm_args *g = &args->gemm;
    g->m = (size_t)kcs_case_size(c, "m", 0);
    g->n = (size_t)kcs_case_size(c, "n", 0);
    g->k = (size_t)kcs_case_size(c, "k", 0);
    if (parse_transpose(c, "transa", &g->transpose_a, err) != KCS_OK ||
        parse_transpose(c, "transb", &g->transpose_b, err) != KCS_OK ||
        kcs_case_number(c, "alpha", 1.0, KCS_F64, &g->alpha, err) != KCS_OK ||
        kcs_case_number(c, "beta", 0.0, KCS_F64, &g->beta, err) != KCS_OK)
        return KCS_ERROR;
    if (c->dtype != KCS_F64) { /* rounded to the compute type (f32 for f16, bf16 and f32), as a BLAS call receives them */
        g->alpha = (double)(float)g->alpha;
        g->beta = (double)(float)g->beta;
    }
    const char *mode = kcs_case_param(c, "mode");
    g->tf32 = 0;
    g->tensor_cores = 0;
    if (!mode || strcmp(mode, "default") == 0)
        ;
    else if (strcmp(mode, "tf32") == 0)
        g->tf32 = 1;
    else if (strcmp(mode, "tensor") == 0) /* the tensor-core mode (docs/gemm.md, "Tensor cores") */
        g->tensor_cores = 1;
    else
        return kcs_fail(err, KCS_ERROR, "gemm parameter mode is default, tf32 or tensor, not '%s'", mode);
    if (g->tf32 && c->dtype != KCS_F32)
        return kcs_fail(err, KCS_ERROR, "gemm mode=tf32 is for f32 cases only, not %s",
                        kcs_dtype_name(c->dtype));
    if (g->tensor_cores && c->dtype != KCS_F16 && c->dtype != KCS_BF16)
        return kcs_fail(err, KCS_ERROR,
                        "gemm mode=tensor is for f16 and bf16 cases only, not %s (f32 on tensor cores is "
                        "mode=tf32; f64 tensor cores round as FMAs do and need no mode)",
                        kcs_dtype_name(c->dtype));
    if (parse_fp8(c, g, err) != KCS_OK) /* the FP8 dtypes' scales and c_dtype (docs/gemm.md, "FP8") */
        return KCS_ERROR;
    if (is_fp8(c->dtype)) /* an FP8 case has set its own c_dtype */
        return KCS_OK;
    return parse_c_dtype(c, g, err);
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    const kcs_gemm_args *g = &args->gemm;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 3;
    if (g->transpose_a)
        kcs_matrix_spec(&layout->inputs[0], "a", args->dtype, g->k, g->m);
    else
        kcs_matrix_spec(&layout->inputs[0], "a", args->dtype, g->m, g->k);
    if (g->transpose_b)
        kcs_matrix_spec(&layout->inputs[1], "b", args->dtype, g->n, g->k);
    else
        kcs_matrix_spec(&layout->inputs[1], "b", args->dtype, g->k, g->n);
    kcs_matrix_spec(&layout->inputs[2], "c", kcs_gemm_c_dtype(args), g->m, g->n);
    layout->output_count = 1;
    kcs_matrix_spec(&layout->outputs[0], "c_out", kcs_gemm_c_dtype(args), g->m, g->n);
    return KCS_OK;
}

/* ---- One element's arithmetic: what the oracle, the bound and every model share ---- */

/* op(A) as m rows of k doubles and op(B) as n columns of k doubles, so that
 * element (i, j) is the dot product of two contiguous vectors. */
typedef struct {
    double *rows;    /* rows[i * k + p] = op(A)[i][p] */
    double *columns; /* columns[j * k + p] = op(B)[p][j] */
} operands;

/* How the operands are read: as the case says (case_reading), or as a
 * model's kernel reads them (the other transpose, inputs converted to TF32
 * or f32, FP8's scales left to the epilogue). */
typedef struct {
    int transpose_a, transpose_b;     /* the transposes the reading applies */
    double (*convert)(double value);  /* applied to every input value read; NULL: none */
    int unscaled;                     /* FP8: a_scale and b_scale left out of the operands */
} operand_reading;

static operand_reading case_reading(const kcs_op_args *args)
{
    return (operand_reading){args->gemm.transpose_a, args->gemm.transpose_b, NULL, 0};
}

/* Input value index of in, converted as reading says. */
static double read_input(const void *in, kcs_dtype dtype, size_t index, const operand_reading *reading)
{
    double value = kcs_load_element(in, dtype, index);
    return reading->convert ? reading->convert(value) : value;
}

static kcs_status gather_operands(const kcs_op_args *args, void *const in[], const operand_reading *reading,
                                  operands *o, kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    size_t m = g->m, n = g->n, k = g->k;
    o->rows = malloc((m * k + 1) * sizeof *o->rows);
    o->columns = malloc((n * k + 1) * sizeof *o->columns);
    if (!o->rows || !o->columns) {
        free(o->rows);
        free(o->columns);
        o->rows = o->columns = NULL;
        return kcs_fail(err, KCS_ERROR, "gemm oracle: cannot allocate %zu doubles for the operands",
                        (m + n) * k);
    }
    /* FP8's per-tensor scales (1 for every other dtype) go into the operands:
     * an FP8 value (4 significant bits) times an f32 scale (24) is exact in
     * double, so the oracle and the bound see the scaled product exactly. */
    double a_scale = g->a_scale != 0.0 ? g->a_scale : 1.0, b_scale = g->b_scale != 0.0 ? g->b_scale : 1.0;
    if (reading->unscaled)
        a_scale = b_scale = 1.0;
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++)
            o->rows[i * k + p] =
                a_scale * read_input(in[0], args->dtype, reading->transpose_a ? p * m + i : i * k + p, reading);
    if (reading->transpose_b) {
        for (size_t j = 0; j < n; j++)
            for (size_t p = 0; p < k; p++)
                o->columns[j * k + p] = b_scale * read_input(in[1], args->dtype, j * k + p, reading);
    } else {
        for (size_t p = 0; p < k; p++)
            for (size_t j = 0; j < n; j++)
                o->columns[j * k + p] = b_scale * read_input(in[1], args->dtype, p * n + j, reading);
    }
    return KCS_OK;
}

static void free_operands(operands *o)
{
    free(o->rows);
    free(o->columns);
}

/* alpha * (row . column) + beta * c in IEEE double, for the classes of
 * non-finite results: NaN from a NaN, inf * 0 or inf - inf, else the
 * infinity (docs/gemm.md, special values). The op passes c = 0 where beta
 * = 0 (C unread); a model that reads C anyway passes it. */
static double plain_element(double alpha, double beta, const double *row, const double *column, size_t k,
                            double c)
{
    double sum = 0.0;
    for (size_t p = 0; p < k; p++)
        sum += row[p] * column[p];
    return alpha * sum + beta * c;
}

/* Whether every term of an element is finite. */
static int finite_element(const double *row, const double *column, size_t k, double c)
{
    int finite = isfinite(c);
    for (size_t p = 0; p < k && finite && row; p++)
        finite = isfinite(row[p]) && isfinite(column[p]);
    return finite;
}

/* The exact alpha * (row . column) + beta * c rounded once (within the
 * double-double error of docs/gemm.md). alpha = 0 leaves the operands
 * unread and beta = 0 leaves c unread. */
static double exact_element(double alpha, double beta, const double *row, const double *column, size_t k,
                            double c)
{
    if (beta == 0.0)
        c = 0.0;
    if (alpha == 0.0 || k == 0)
        return beta * c; /* one correctly rounded product; +0 when beta = 0 */
    kcs_double_double dot = {0.0, 0.0};
    int finite = isfinite(c);
    for (size_t p = 0; p < k; p++) {
        finite &= isfinite(row[p]) && isfinite(column[p]);
        kcs_dot2_add(&dot, row[p], column[p]);
    }
    if (!finite || !isfinite(dot.high) || !isfinite(dot.low))
        return plain_element(alpha, beta, row, column, k, c);
    double low, high = kcs_two_sum(dot.high, dot.low, &low);
    double product_error, scaled = kcs_two_product(alpha, high, &product_error);
    double tail = alpha * low + product_error;
    if (beta == 0.0)
        return scaled + tail;
    double c_error, c_scaled = kcs_two_product(beta, c, &c_error);
    double sum_error, sum = kcs_two_sum(scaled, c_scaled, &sum_error);
    return sum + ((tail + c_error) + sum_error);
}

/* |alpha| (|row| . |column|): P_ij of docs/gemm.md, the size of the products' terms. */
static double products_magnitude(double alpha, const double *row, const double *column, size_t k)
{
    double magnitude = 0.0;
    for (size_t p = 0; p < k; p++)
        magnitude += fabs(row[p]) * fabs(column[p]);
    return magnitude * fabs(alpha);
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_expected *e = &expected[0];
    if (e->count == 0)
        return KCS_OK;
    operands o = {0};
    operand_reading reading = case_reading(args);
    if (g->alpha != 0.0 && gather_operands(args, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        double c = g->beta != 0.0 ? kcs_load_element(in[2], kcs_gemm_c_dtype(args), index) : 0.0;
        e->values[t] = exact_element(g->alpha, g->beta, o.rows ? o.rows + i * g->k : NULL,
                                     o.columns ? o.columns + j * g->k : NULL, g->k, c);
    }
    free_operands(&o);
    return KCS_OK;
}

/* A value of a case input as a whole number, if it is one of at most 2^24. */
static kcs_status whole_input(const kcs_case *c, const char *name, kcs_dtype dtype, size_t count,
                              double **values, kcs_error *err)
{
    const kcs_input_spec *input = kcs_case_input(c, name);
    void *data = malloc((count ? count : 1) * kcs_dtype_size(dtype));
    *values = malloc((count ? count : 1) * sizeof **values);
    kcs_status status = data && *values ? KCS_OK : kcs_fail(err, KCS_ERROR, "out of memory");
    if (status == KCS_OK)
        status = kcs_generate(&input->distribution, dtype, data, 0, count, err);
    for (size_t i = 0; i < count && status == KCS_OK; i++) {
        double v = kcs_load_element(data, dtype, i);
        if (!(v == floor(v) && fabs(v) <= 0x1.0p24))
            status = kcs_fail(err, KCS_ERROR,
                              "gemm's closed form needs whole inputs of at most 2^24 (e.g. 'integers "
                              "lo=-4 hi=4'); input %s is %.17g at element %zu",
                              name, v, i);
        (*values)[i] = v;
    }
    free(data);
    if (status != KCS_OK) {
        free(*values);
        *values = NULL;
    }
    return status;
}

/* Closed form for whole-number inputs (integers, whole constants and
 * ramps) and whole alpha and beta: every product and sum is an integer,
 * computed exactly in 128-bit integers and rounded once. The inputs are
 * regenerated from the case (the generator is a pure function of it). */
static kcs_status closed_form(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    size_t m = g->m, n = g->n, k = g->k;
    if (g->alpha != floor(g->alpha) || fabs(g->alpha) > 0x1.0p24 || g->beta != floor(g->beta) ||
        fabs(g->beta) > 0x1.0p24)
        return kcs_fail(err, KCS_ERROR, "gemm's closed form needs whole alpha and beta of at most 2^24");
    if (is_fp8(args->dtype) && (g->a_scale != 1.0 || g->b_scale != 1.0))
        return kcs_fail(err, KCS_ERROR, "gemm's closed form needs a_scale = b_scale = 1 (use the oracle)");
    double *a = NULL, *b = NULL, *cv = NULL;
    kcs_status status = KCS_OK;
    if (g->alpha != 0.0) {
        status = whole_input(c, "a", args->dtype, m * k, &a, err);
        if (status == KCS_OK)
            status = whole_input(c, "b", args->dtype, k * n, &b, err);
    }
    if (status == KCS_OK && g->beta != 0.0)
        status = whole_input(c, "c", kcs_gemm_c_dtype(args), m * n, &cv, err);
    kcs_expected *e = &expected[0];
    for (size_t t = 0; t < e->count && status == KCS_OK; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / n, j = index % n;
        __int128 dot = 0;
        for (size_t p = 0; p < k && a; p++) {
            double x = a[g->transpose_a ? p * m + i : i * k + p];
            double y = b[g->transpose_b ? j * k + p : p * n + j];
            dot += (__int128)(int64_t)x * (int64_t)y;
        }
        __int128 total = (__int128)(int64_t)g->alpha * dot;
        if (cv)
            total += (__int128)(int64_t)g->beta * (int64_t)cv[index];
        e->values[t] = (double)total; /* libgcc rounds __int128 to double correctly */
    }
    free(a);
    free(b);
    free(cv);
    return status;
}

/* The type a GEMM of dtype accumulates in: f32 for f16, bf16 and f32 (a
 * product of two 16-bit values is exact in f32), f64 for f64. */
static kcs_dtype compute_dtype(kcs_dtype dtype)
{
    return dtype == KCS_F64 ? KCS_F64 : KCS_F32;
}

/* The relative factors of the bound on the result in the compute type, before
 * any rounding to a 16-bit C_out: on |alpha| (|op(A)||op(B)|)_ij and on |beta c_ij|. */
/* Tensor cores (docs/gemm.md, "Tensor cores"): the
 * fewest products any NVIDIA tensor core adds in one block FMA (Fasi et al.
 * 2021: 4 on V100 and T4, 4 or 8 on A100; later generations more), so a
 * k-term dot product takes at most ceil(k / 4) block steps. */
static const double tensor_block_products = 4.0;

/* Tensor-core accumulation of k products: each block step aligns its addends
 * to the largest and truncates each of the others, and truncates its
 * normalised sum, every loss below 2^-23 of the sum of |terms|; k + ceil(k / 4)
 * such losses, plus 2 rounded epilogue operations (docs/gemm.md, "Tensor cores"). */
static double tensor_accumulation_gamma(double k)
{
    return kcs_gamma(k + ceil(k / tensor_block_products) + 2.0, 2.0 * kcs_unit_roundoff(KCS_F32));
}

/* FP8 (docs/gemm.md, "FP8"): products exact in f32; the
 * tensor cores add them in blocks of at least fp8_block_products, aligning
 * each addend to the block's largest and keeping fp8_accumulator_bits
 * fraction bits (about 14 significant bits on Hopper, DeepSeek-AI,
 * "DeepSeek-V3 Technical Report", 2024, section 3.3.2), and cuBLASLt
 * (FAST_ACCUM off) promotes the partial sum into f32 at least every
 * fp8_promotion_interval products. */
static const double fp8_accumulator_bits = 13.0;
static const double fp8_block_products = 32.0;
static const double fp8_promotion_interval = 128.0;

/* The relative error FP8 accumulation may add to |terms| (docs/gemm.md,
 * "FP8"): inside one promotion interval of i products, each of the i
 * products and ceil(i / block) carried partial sums loses less than
 * 2^-bits of the interval's sum of |terms| when aligned, and each of the
 * ceil(i / block) block sums as much when normalised. */
static double fp8_accumulation_factor(double k)
{
    double interval = fmin(k, fp8_promotion_interval);
    return (interval + 2.0 * ceil(interval / fp8_block_products)) * ldexp(1.0, -(int)fp8_accumulator_bits);
}

static void bound_factors(const kcs_op_args *args, double *product_factor, double *c_factor)
{
    const kcs_gemm_args *g = &args->gemm;
    double terms = (double)g->k + 2.0;
    if (is_fp8(args->dtype)) { /* docs/gemm.md, "FP8" */
        /* the tensor-core intervals, then at most k + 4 f32 roundings: the
         * sums of the intervals (or a plain f32 sum), the scaling by alpha,
         * a_scale and b_scale, and the addition of beta c */
        double f32 = kcs_gamma(terms + 2.0, kcs_unit_roundoff(KCS_F32));
        *product_factor = (1.0 + fp8_accumulation_factor((double)g->k)) * (1.0 + f32) - 1.0;
        *c_factor = f32;
        return;
    }
    if (g->tf32) {
        /* inputs converted to TF32, products exact in f32, accumulated in
         * tensor-core block steps that align and truncate */
        double accumulation = tensor_accumulation_gamma((double)g->k);
        double conversion = (1.0 + tf32_conversion_error) * (1.0 + tf32_conversion_error);
        *product_factor = conversion * (1.0 + accumulation) - 1.0;
        *c_factor = accumulation;
    } else if (g->tensor_cores) {
        /* f16 and bf16 products exact, accumulated as TF32's are */
        *product_factor = tensor_accumulation_gamma((double)g->k);
        *c_factor = *product_factor;
    } else {
        *product_factor = kcs_gamma(terms, kcs_unit_roundoff(compute_dtype(args->dtype)));
        *c_factor = *product_factor;
    }
}

/* The smallest normal f32, 2^-126: on a device that flushes, any f32 result
 * (or input) smaller than this in magnitude may become zero. */
static const double f32_smallest_normal = 0x1.0p-126;

/* Whether the term alpha * a * b may be lost whole on a device that flushes
 * f32 subnormals: one of its factors, or a product of two or three of them
 * (every grouping an evaluation may form), is below the smallest normal. The
 * threshold is raised by 2^-20 so that this test's own rounding in double
 * never calls a term safe that is not. */
static int term_may_flush(double alpha, double a, double b)
{
    double threshold = f32_smallest_normal * (1.0 + 0x1.0p-20);
    alpha = fabs(alpha), a = fabs(a), b = fabs(b);
    double smallest = fmin(fmin(alpha, a), b);
    smallest = fmin(smallest, fmin(fmin(a * b, alpha * a), alpha * b));
    smallest = fmin(smallest, alpha * a * b);
    return smallest < threshold;
}

/* The smallest magnitude that rounds to infinity in a narrow C_out (half an
 * ulp above its largest finite value; docs/gemm.md, "Overflow to infinity"). */
static double overflow_threshold(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return 65520.0;
    case KCS_BF16: return 0x1.ffp127;
    default: return INFINITY;
    }
}

/* What the bound of one case is made of, element by element: the parts of
 * docs/gemm.md's bound that depend on the case only. The op's bounds and
 * every model's (docs/gemm.md, "Arithmetic models") are computed from one. */
typedef struct {
    double product_factor, c_factor; /* relative error of the compute-type result on P_ij and on Q_ij */
    double underflow;                /* gradual underflow, in the compute type and in the oracle */
    double output_u;                 /* the one rounding to a narrower C_out: relative */
    double output_underflow;         /* and absolute, below its smallest normal */
    double overflow;                 /* a narrower C_out's overflow threshold (inf: none) */
    double oracle_gamma, u64;        /* the oracle's own error */
    int flushing;                    /* the device flushes f32 subnormals */
    double flush_factor, flushed_results;
    double widen;                    /* the bound's own rounding */
} bound_plan;

static void plan_bounds(const kcs_op_args *args, int flushing, bound_plan *plan)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_dtype compute = compute_dtype(args->dtype), c_dtype = kcs_gemm_c_dtype(args);
    memset(plan, 0, sizeof *plan);
    plan->flushing = flushing && compute == KCS_F32;
    /* the one rounding of the compute-type result to a narrower C_out (f16,
     * bf16): relative output_u, and half its smallest subnormal below its
     * smallest normal; none when C_out is in the compute type */
    plan->output_u = c_dtype != compute ? kcs_unit_roundoff(c_dtype) : 0.0;
    plan->output_underflow = c_dtype != compute ? kcs_smallest_subnormal(c_dtype) / 2.0 : 0.0;
    plan->overflow = c_dtype != compute ? overflow_threshold(c_dtype) : INFINITY;
    bound_factors(args, &plan->product_factor, &plan->c_factor);
    double k = (double)g->k;
    plan->u64 = kcs_unit_roundoff(KCS_F64);
    plan->oracle_gamma = kcs_gamma(k + 4.0, plan->u64);
    /* underflow: each of the k + 2 products may lose half the smallest
     * subnormal, in the backend's type and in the oracle's */
    plan->underflow = (k + 2.0) * kcs_smallest_subnormal(compute) + (k + 4.0) * kcs_smallest_subnormal(KCS_F64);
    /* flushing: each of at most k + 2 additions and scalings whose result
     * falls below the smallest normal may lose it, and a loss before the
     * scaling by alpha is scaled with it; every loss then passes through at
     * most k + 2 roundings */
    plan->flush_factor = 1.0 + kcs_gamma(k + 2.0, kcs_unit_roundoff(KCS_F32));
    plan->flushed_results = (k + 2.0) * fmax(1.0, fabs(g->alpha)) * f32_smallest_normal;
    /* The bound is itself computed in double, with sums of k terms: widen
     * it by more than their rounding error so it is never too small. */
    plan->widen = 1.0 + kcs_gamma(k + 16.0, plan->u64);
}

/* How far the compute-type result (before any rounding to a narrower
 * C_out) may be from the exact one, and (oracle_error) the expected value
 * from the exact one: magnitude is P_ij, c_magnitude Q_ij, lost the terms a
 * flushing device may lose whole. */
static double result_error(const bound_plan *plan, double expected, double magnitude, double c_magnitude,
                           double lost, double *oracle_error)
{
    *oracle_error = 2.0 * plan->u64 * fabs(expected) +
                    2.0 * plan->oracle_gamma * plan->oracle_gamma * (magnitude + c_magnitude);
    double backend = plan->product_factor * magnitude + plan->c_factor * c_magnitude;
    double flushed = plan->flushing ? (lost + plan->flushed_results) * plan->flush_factor : 0.0;
    return backend + plan->underflow + flushed;
}

/* The bound of docs/gemm.md for one element whose expected value is expected. */
static double element_bound(const bound_plan *plan, double expected, double magnitude, double c_magnitude,
                            double lost)
{
    if (!isfinite(expected))
        return 0.0; /* NaN and infinities must match exactly */
    double oracle_error, computed = result_error(plan, expected, magnitude, c_magnitude, lost, &oracle_error);
    /* a compute-type result that must lie beyond C_out's overflow threshold
     * rounds to infinity: only the infinity of its sign passes (a bound of 0
     * around a value no finite C_out holds; docs/gemm.md, "Overflow to infinity") */
    if (fabs(expected) - (computed + oracle_error) * plan->widen >= plan->overflow)
        return 0.0;
    double output = plan->output_u * (fabs(expected) + oracle_error + computed) + plan->output_underflow;
    return (computed + output + oracle_error) * plan->widen;
}

/* The bound of docs/gemm.md for each expected element; with flushing, plus
 * the flush-to-zero allowance of its section "Flush to zero" (f32 only:
 * f64 keeps its subnormals on every device kcs knows). */
static kcs_status gemm_bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[], int flushing,
                              kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_expected *e = &expected[0];
    if (e->count == 0)
        return KCS_OK;
    operands o = {0};
    operand_reading reading = case_reading(args);
    if (g->alpha != 0.0 && gather_operands(args, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    bound_plan plan;
    plan_bounds(args, flushing, &plan);
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        double magnitude = 0.0; /* |alpha| (|op(A)| |op(B)|)_ij */
        double lost = 0.0;      /* flushing: the terms that may be lost whole */
        if (o.rows) {
            const double *row = o.rows + i * g->k, *column = o.columns + j * g->k;
            magnitude = products_magnitude(g->alpha, row, column, g->k);
            for (size_t p = 0; p < g->k && plan.flushing; p++)
                if (term_may_flush(g->alpha, row[p], column[p]))
                    lost += fabs(row[p]) * fabs(column[p]);
            lost *= fabs(g->alpha);
        }
        double c_value = g->beta != 0.0 ? kcs_load_element(in[2], kcs_gemm_c_dtype(args), index) : 0.0;
        double c_magnitude = fabs(g->beta * c_value);
        if (plan.flushing && g->beta != 0.0 && term_may_flush(1.0, g->beta, c_value))
            lost += c_magnitude;
        e->bounds[t] = element_bound(&plan, e->values[t], magnitude, c_magnitude, lost);
    }
    free_operands(&o);
    return KCS_OK;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[], kcs_error *err)
{
    return gemm_bounds(args, in, expected, 0, err);
}

static kcs_status flushing_bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                  kcs_error *err)
{
    return gemm_bounds(args, in, expected, 1, err);
}

/* ---- Arithmetic models: what a failure is explained by (docs/gemm.md, "Arithmetic models") ----
 *
 * Each model is the op's arithmetic with one deviation that real kernels
 * and libraries make, computed by one of these routines from the pieces
 * above:
 *  - expect_deviation: the op's exact value and the op's own bound, of the
 *    problem the deviating kernel actually solves (the other transpose, a
 *    scalar replaced, terms never added, inputs converted to TF32, products
 *    rounded to 16 bits, NaN read from an operand that must not be read);
 *  - expect_running_sum: a running sum kept in a narrow type (f16, bf16,
 *    f32 for f64), rounded after every product or every k-block, in k order;
 *  - expect_epilogue_rounds_twice and expect_flushing: cuBLAS's 16-bit
 *    epilogue, and f32 with subnormals flushed.
 * All but the first follow one order of operations (each element's k
 * terms in k order, as every tiled kernel keeps its accumulator): their
 * value is that evaluation, and their bound is what another kernel doing
 * the same roundings may differ by, found by carrying the lowest and the
 * highest value any such kernel can hold through every rounding (docs). */

/* An f32 value's bits, and the f32 value of bits. */
static uint32_t f32_bits(double value)
{
    float f = (float)value;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static double f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* An f32 input converted to TF32 (10 fraction bits) to nearest, ties away
 * from zero, as CUDA's cvt.rna.tf32.f32 (and kcs's own TF32 kernels) do. */
static double tf32_nearest(double value)
{
    if (!isfinite(value))
        return value;
    return f32_from_bits((f32_bits(value) + 0x1000u) & ~0x1fffu);
}

/* An f32 input read as TF32 by ignoring its 13 low fraction bits (toward zero). */
static double tf32_truncated(double value)
{
    if (!isfinite(value))
        return value;
    return f32_from_bits(f32_bits(value) & ~0x1fffu);
}

static double to_f32(double value)
{
    return (float)value;
}

/* Where an interval [low, high] that holds every value a kernel following a
 * model may produce puts the bound around the model's value: the farther
 * end, widened for the rounding of the bound itself. A value, or an end,
 * that is not finite: 0 when all three are the same, else no bound. */
static double interval_bound(double value, double low, double high)
{
    if (!isfinite(value) || !isfinite(low) || !isfinite(high))
        return value == low && value == high ? 0.0 : INFINITY;
    return fmax(0.0, fmax(high - value, value - low)) * (1.0 + 0x1.0p-40);
}

/* The exponent of x's lowest set bit (x finite, not 0): x is a multiple of 2 to it. */
static int lowest_bit_exponent(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int biased = (int)((bits >> 52) & 0x7ff);
    uint64_t significand = bits & ((UINT64_C(1) << 52) - 1);
    if (biased == 0) /* subnormal: significand 2^-1074 */
        return -1074 + __builtin_ctzll(significand);
    return biased - 1075 + __builtin_ctzll(significand | UINT64_C(1) << 52);
}

/* Whether every sum of the count values, in any order and any grouping, is
 * exact in f32: all are multiples of one power of two q = 2^e (the smallest
 * lowest set bit, at least f32's smallest subnormal) and their magnitudes
 * add up to less than 2^24 q, so every partial sum is a multiple of q below
 * 2^24 q. Then f32 additions, and a tensor core's aligned ones, lose
 * nothing, and no interval needs widening for them. */
static int sums_exact_in_f32(const double *values, size_t count)
{
    int exponent = INT_MAX;
    double total = 0.0;
    for (size_t v = 0; v < count; v++) {
        if (values[v] == 0.0)
            continue;
        if (!isfinite(values[v]))
            return 0;
        int lowest = lowest_bit_exponent(values[v]);
        exponent = lowest < exponent ? lowest : exponent;
        total += fabs(values[v]);
    }
    return total == 0.0 || (exponent >= -149 && total < ldexp(1.0, 24 + exponent));
}

/* Whether x * y is exact in double (so that sums_exact_in_f32 may take it). */
static int product_exact(double x, double y)
{
    return fma(x, y, -(x * y)) == 0.0;
}

/* Whether a model that changes what is done with A and B applies: alpha
 * != 0 and k > 0, so that the case reads them. */
static int reads_operands(const kcs_op_args *args)
{
    return args->gemm.alpha != 0.0 && args->gemm.k > 0;
}

/* -- The op's arithmetic on another problem -- */

typedef enum { KEEP_SCALARS, ALPHA_AS_ONE, BETA_AS_ONE, BETA_AS_ZERO, SCALARS_SWAPPED } scalar_change;
typedef enum { DROP_NOTHING, DROP_LAST_TERM, DROP_MIDDLE_SLICE } dropped_terms;

/* The terms drops-k-slice never adds: one k-tile of 16 (docs/gemm.md). */
static const size_t dropped_slice_terms = 16;

typedef struct {
    int flip_a, flip_b;              /* op(A), op(B) read with the other transpose */
    double (*convert)(double value); /* applied to every input read: TF32 */
    scalar_change scalars;
    dropped_terms dropped;
    kcs_dtype product_dtype;         /* each product rounded to it; KCS_DTYPE_NONE: exact */
    int reads_unread;                /* alpha * AB + beta * C whatever alpha and beta: 0 * NaN = NaN */
    int tensor_accumulation;         /* bounded as tensor cores accumulate ("Tensor cores") */
    int ignore_a_scale, ignore_b_scale; /* FP8: that scale taken as 1 */
} gemm_deviation;

/* The k indices [begin, end) a deviation never adds. */
static void dropped_range(dropped_terms dropped, size_t k, size_t *begin, size_t *end)
{
    *begin = *end = 0;
    if (dropped == DROP_LAST_TERM && k > 0) {
        *begin = k - 1;
        *end = k;
    } else if (dropped == DROP_MIDDLE_SLICE) {
        *begin = k / 2;
        *end = k - k / 2 > dropped_slice_terms ? k / 2 + dropped_slice_terms : k;
    }
}

/* The problem a kernel that deviates as d does solves: the case's
 * arguments with its scalars, scales and accumulation changed. */
static kcs_op_args deviated_args(const kcs_op_args *args, const gemm_deviation *d)
{
    kcs_op_args deviated = *args;
    kcs_gemm_args *g = &deviated.gemm;
    if (d->scalars == ALPHA_AS_ONE)
        g->alpha = 1.0;
    else if (d->scalars == BETA_AS_ONE)
        g->beta = 1.0;
    else if (d->scalars == BETA_AS_ZERO)
        g->beta = 0.0;
    else if (d->scalars == SCALARS_SWAPPED) {
        g->alpha = args->gemm.beta;
        g->beta = args->gemm.alpha;
    }
    if (d->ignore_a_scale)
        g->a_scale = 1.0;
    if (d->ignore_b_scale)
        g->b_scale = 1.0;
    if (d->tensor_accumulation) {
        g->tf32 = 0;
        g->tensor_cores = 1;
    }
    return deviated;
}

/* The exact value of the deviated problem and the op's own bound on it,
 * from the same element routines as the op's oracle and bound. */
static kcs_status expect_deviation(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                   const gemm_deviation *d, kcs_error *err)
{
    kcs_op_args deviated = deviated_args(args, d);
    const kcs_gemm_args *g = &deviated.gemm;
    kcs_expected *e = &expected[0];
    size_t k = g->k;
    if (e->count == 0)
        return KCS_OK;
    operands o = {0};
    operand_reading reading = {args->gemm.transpose_a ^ d->flip_a, args->gemm.transpose_b ^ d->flip_b,
                               d->convert, 0};
    if ((g->alpha != 0.0 || d->reads_unread) && gather_operands(&deviated, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    size_t begin, end;
    dropped_range(d->dropped, k, &begin, &end);
    for (size_t p = begin; p < end && o.rows; p++) { /* a term never added is a zero term */
        for (size_t i = 0; i < g->m; i++)
            o.rows[i * k + p] = 0.0;
        for (size_t j = 0; j < g->n; j++)
            o.columns[j * k + p] = 0.0;
    }
    double *terms = NULL, *ones = NULL;
    if (d->product_dtype != KCS_DTYPE_NONE && o.rows) {
        terms = malloc((k + 1) * sizeof *terms);
        ones = malloc((k + 1) * sizeof *ones);
        if (!terms || !ones) {
            free(terms);
            free(ones);
            free_operands(&o);
            return kcs_fail(err, KCS_ERROR, "gemm model: cannot allocate %zu doubles", 2 * k);
        }
        for (size_t p = 0; p < k; p++)
            ones[p] = 1.0;
    }
    bound_plan plan;
    plan_bounds(&deviated, 0, &plan);
    int reads_c = g->beta != 0.0 || d->reads_unread;
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        double c = reads_c ? kcs_load_element(in[2], kcs_gemm_c_dtype(args), index) : 0.0;
        const double *row = o.rows ? o.rows + i * k : NULL, *column = o.columns ? o.columns + j * k : NULL;
        if (terms && row) { /* each product rounded: a dot product of the rounded products with ones */
            for (size_t p = 0; p < k; p++)
                terms[p] = kcs_rounded_to(d->product_dtype, row[p] * column[p]);
            row = terms;
            column = ones;
        }
        double value;
        if (d->reads_unread && !finite_element(row, column, k, c))
            value = plain_element(g->alpha, g->beta, row, column, k, c);
        else
            value = exact_element(g->alpha, g->beta, row, column, k, c);
        double magnitude = row ? products_magnitude(g->alpha, row, column, k) : 0.0;
        e->values[t] = value;
        e->bounds[t] = element_bound(&plan, value, magnitude, fabs(g->beta * c), 0.0);
    }
    free(terms);
    free(ones);
    free_operands(&o);
    return KCS_OK;
}

#define DEVIATION_MODEL(function, ...)                                                                       \
    static kcs_status function(const kcs_op_args *args, void *const in[], kcs_expected expected[],          \
                               kcs_error *err)                                                             \
    {                                                                                                      \
        static const gemm_deviation deviation = {__VA_ARGS__};                                             \
        return expect_deviation(args, in, expected, &deviation, err);                                      \
    }

DEVIATION_MODEL(expect_tf32_inputs, .convert = tf32_nearest, .tensor_accumulation = 1)
DEVIATION_MODEL(expect_tf32_truncated_inputs, .convert = tf32_truncated, .tensor_accumulation = 1)
DEVIATION_MODEL(expect_drops_last_term, .dropped = DROP_LAST_TERM)
DEVIATION_MODEL(expect_drops_k_slice, .dropped = DROP_MIDDLE_SLICE)
DEVIATION_MODEL(expect_transposes_a, .flip_a = 1)
DEVIATION_MODEL(expect_transposes_b, .flip_b = 1)
DEVIATION_MODEL(expect_ignores_alpha, .scalars = ALPHA_AS_ONE)
DEVIATION_MODEL(expect_ignores_beta, .scalars = BETA_AS_ONE)
DEVIATION_MODEL(expect_ignores_c, .scalars = BETA_AS_ZERO)
DEVIATION_MODEL(expect_swaps_alpha_beta, .scalars = SCALARS_SWAPPED)
DEVIATION_MODEL(expect_reads_unread, .reads_unread = 1)
DEVIATION_MODEL(expect_ignores_a_scale, .ignore_a_scale = 1)
DEVIATION_MODEL(expect_ignores_b_scale, .ignore_b_scale = 1)

/* Products rounded to the case's 16-bit type (f16 or bf16). */
static kcs_status expect_rounds_products(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                         kcs_error *err)
{
    gemm_deviation deviation = {.product_dtype = args->dtype};
    return expect_deviation(args, in, expected, &deviation, err);
}

/* -- A running sum in a narrow type -- */

/* The most products one block of a running sum adds (mma_k's largest). */
#define KCS_MOST_BLOCK_PRODUCTS 32

typedef struct {
    kcs_dtype sum_dtype;             /* the type each element's running sum is kept in */
    size_t block;                    /* products added to it between two roundings */
    double (*convert)(double value); /* inputs read as: f32 for f64 cases; NULL: as stored */
    int products_in_f32;             /* each product may be rounded to f32 before it is added */
} running_sum;

/* One element of a running sum: the value of the evaluation in k order with
 * exact block sums, and the bound that holds every kernel doing the same
 * roundings in that order (docs/gemm.md, "A running sum in a narrow type"). */
static void running_sum_element(const running_sum *r, const double *row, const double *column, size_t k,
                                double scale, double beta, double c, kcs_dtype out_dtype, double *value,
                                double *bound)
{
    if (!finite_element(row, column, k, c)) {
        *value = plain_element(scale, beta, row, column, k, c);
        *bound = 0.0;
        return;
    }
    const double u32 = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    const double eta32 = kcs_smallest_subnormal(KCS_F32);
    double low = 0.0, high = 0.0, middle = 0.0;
    for (size_t first = 0; first < k; first += r->block) {
        size_t last = first + r->block < k ? first + r->block : k;
        double sum = 0.0, magnitude = 0.0, spread = 0.0, addends[2 + KCS_MOST_BLOCK_PRODUCTS];
        size_t count = 0;
        addends[count++] = low;
        addends[count++] = high;
        for (size_t p = first; p < last; p++) {
            double product = row[p] * column[p]; /* exact: at most 48 significant bits */
            double added = r->products_in_f32 ? (double)(float)product : product;
            spread += fabs(added - product); /* a kernel may add either */
            sum += added;
            magnitude += fabs(product);
            addends[count++] = added;
        }
        double reach = fmax(fabs(low), fabs(high)) + magnitude;
        /* what may move the value before it is rounded to sum_dtype: an f32
         * sum of the block in any order, or a tensor core's aligned and
         * truncated one, then the f32 addition to the running sum (none when
         * the running sum is itself f32), subnormal products, and this
         * routine's own roundings in double */
        double step = spread;
        if (spread != 0.0 || !sums_exact_in_f32(addends, count)) {
            step += (double)(last - first) * eta32 + 4.0 * u64 * reach;
            if (r->block > 1)
                step += kcs_gamma((double)r->block + 1.0, 2.0 * u32) * reach;
            else if (r->sum_dtype != KCS_F32)
                step += u32 * reach;
        }
        low = kcs_rounded_to(r->sum_dtype, low + sum - step);
        high = kcs_rounded_to(r->sum_dtype, high + sum + step);
        /* middle + sum lies between the two: rounding is monotone, so where
         * both ends round alike it rounds so too */
        middle = low == high ? low : kcs_rounded_to(r->sum_dtype, middle + sum);
    }
    /* the epilogue, scale * sum + beta * c: at most three roundings in f32
     * (or in a wider type), then one to a 16-bit C_out */
    double bc = beta * c;
    double reach = fabs(scale) * fmax(fabs(low), fabs(high)) + fabs(bc);
    double epilogue = 3.0 * (u32 * reach + eta32) + 4.0 * u64 * reach;
    double terms[4] = {scale * low, scale * high, scale * middle, bc};
    if (product_exact(scale, low) && product_exact(scale, high) && product_exact(scale, middle) &&
        product_exact(beta, c) && sums_exact_in_f32(terms, 4))
        epilogue = 0.0; /* every f32 step of the epilogue is exact */
    double at_low = scale * low + bc, at_high = scale * high + bc;
    double y_low = fmin(at_low, at_high) - epilogue, y_high = fmax(at_low, at_high) + epilogue;
    if (out_dtype == KCS_F16 || out_dtype == KCS_BF16) {
        y_low = kcs_rounded_to(out_dtype, y_low);
        y_high = kcs_rounded_to(out_dtype, y_high);
        *value = kcs_rounded_to(out_dtype, scale * middle + bc);
    } else {
        *value = scale * middle + bc;
    }
    *bound = interval_bound(*value, y_low, y_high);
}

static kcs_status expect_running_sum(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                     const running_sum *r, kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_expected *e = &expected[0];
    if (e->count == 0)
        return KCS_OK;
    operands o = {0};
    /* unscaled: FP8's scales are applied in the epilogue, as cuBLASLt does */
    operand_reading reading = {g->transpose_a, g->transpose_b, r->convert, 1};
    if (gather_operands(args, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    double scale = g->alpha * (g->a_scale != 0.0 ? g->a_scale : 1.0) * (g->b_scale != 0.0 ? g->b_scale : 1.0);
    kcs_dtype c_dtype = kcs_gemm_c_dtype(args);
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        double c = g->beta != 0.0 ? kcs_load_element(in[2], c_dtype, index) : 0.0;
        running_sum_element(r, o.rows + i * g->k, o.columns + j * g->k, g->k, scale, g->beta, c, c_dtype,
                            &e->values[t], &e->bounds[t]);
    }
    free_operands(&o);
    return KCS_OK;
}

/* The 16-bit type a 16-bit accumulation keeps its sum in: the case's, or
 * f16 for FP8 (an FP8 MMA's narrow accumulator). */
static kcs_dtype sum_dtype_16(kcs_dtype dtype)
{
    return is_fp8(dtype) ? KCS_F16 : dtype;
}

/* The k of one MMA instruction with a 16-bit accumulator: 16 for f16 and
 * bf16 inputs (mma.m16n8k16, wgmma ...k16), 32 for FP8 (m16n8k32, k32). */
static size_t mma_k(kcs_dtype dtype)
{
    return is_fp8(dtype) ? 32 : 16;
}

static kcs_status expect_accumulates_in_16_bits(const kcs_op_args *args, void *const in[],
                                                kcs_expected expected[], kcs_error *err)
{
    running_sum r = {sum_dtype_16(args->dtype), 1, NULL, 0};
    return expect_running_sum(args, in, expected, &r, err);
}

static kcs_status expect_accumulates_in_16_bits_per_mma(const kcs_op_args *args, void *const in[],
                                                        kcs_expected expected[], kcs_error *err)
{
    running_sum r = {sum_dtype_16(args->dtype), mma_k(args->dtype), NULL, 0};
    return expect_running_sum(args, in, expected, &r, err);
}

static kcs_status expect_f64_accumulates_in_f32(const kcs_op_args *args, void *const in[],
                                                kcs_expected expected[], kcs_error *err)
{
    running_sum r = {KCS_F32, 1, to_f32, 1};
    return expect_running_sum(args, in, expected, &r, err);
}

/* -- The epilogue that rounds twice -- */

/* alpha * AB rounded to C_out's 16-bit type, then beta * C added and the sum
 * rounded again. The accumulation before it is bounded as tensor cores
 * accumulate (what cuBLAS and PyTorch run), FP8's as FP8's. */
static kcs_status expect_epilogue_rounds_twice(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                               kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_expected *e = &expected[0];
    if (e->count == 0)
        return KCS_OK;
    kcs_op_args accumulated = *args;
    if (!is_fp8(args->dtype)) {
        accumulated.gemm.tf32 = 0;
        accumulated.gemm.tensor_cores = 1;
    }
    bound_plan plan;
    plan_bounds(&accumulated, 0, &plan);
    operands o = {0};
    operand_reading reading = case_reading(args);
    if (gather_operands(args, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    kcs_dtype c_dtype = kcs_gemm_c_dtype(args);
    const double u32 = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64);
    const double eta32 = kcs_smallest_subnormal(KCS_F32);
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        const double *row = o.rows + i * g->k, *column = o.columns + j * g->k;
        double c = kcs_load_element(in[2], c_dtype, index);
        double product = exact_element(g->alpha, 0.0, row, column, g->k, 0.0); /* alpha AB, rounded once */
        if (!isfinite(product) || !isfinite(c)) {
            e->values[t] = exact_element(g->alpha, g->beta, row, column, g->k, c);
            e->bounds[t] = 0.0;
            continue;
        }
        double magnitude = products_magnitude(g->alpha, row, column, g->k), oracle_error;
        double error = result_error(&plan, product, magnitude, 0.0, 0.0, &oracle_error);
        error = (error + oracle_error) * plan.widen;
        double first = kcs_rounded_to(c_dtype, product);
        double first_low = kcs_rounded_to(c_dtype, product - error), first_high = kcs_rounded_to(c_dtype, product + error);
        double bc = g->beta * c;
        /* beta * c rounded in f32 and the sum rounded in f32 before the
         * rounding to 16 bits (or not), and this routine's own roundings */
        double reach = fmax(fabs(first_low), fabs(first_high)) + fabs(bc);
        double second = 2.0 * (u32 * reach + eta32) + 4.0 * u64 * reach;
        double terms[3] = {first_low, first_high, bc};
        if (product_exact(g->beta, c) && sums_exact_in_f32(terms, 3))
            second = 0.0; /* beta * c and the sum are exact in f32 */
        e->values[t] = kcs_rounded_to(c_dtype, first + bc);
        e->bounds[t] = interval_bound(e->values[t], kcs_rounded_to(c_dtype, first_low + bc - second),
                                      kcs_rounded_to(c_dtype, first_high + bc + second));
    }
    free_operands(&o);
    return KCS_OK;
}

/* -- f32 with subnormals flushed -- */

/* value flushed as f32 arithmetic built to flush does: zero of its sign below the smallest normal. */
static double flushed(double value)
{
    return fabs(value) < f32_smallest_normal ? copysign(0.0, value) : value;
}

/* What a flush the f32 roundings before it may decide otherwise can cost:
 * value is the exact partial result, slack the error of the f32 result a
 * kernel holds there. Where |value| is farther than slack from 2^-126, every
 * kernel flushes (or keeps) it as the model does: 0. Else a kernel may keep
 * what the model flushes or flush what it keeps, a difference of less than
 * 2^-126 + 2 slack. */
static double undecided_flush(double value, double slack)
{
    if (fabs(fabs(value) - f32_smallest_normal) > slack)
        return 0.0;
    return f32_smallest_normal + 2.0 * slack;
}

/* f32 with subnormal inputs read as zero, and each product, partial sum
 * (in k order), scaling and sum of the epilogue flushed when below 2^-126;
 * the value is that evaluation with exact partial sums, the bound the op's
 * own on the surviving terms, plus what each flush the f32 roundings may
 * decide otherwise can cost (docs/gemm.md, "Subnormals flushed"). */
static kcs_status expect_flushing(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                  kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    kcs_expected *e = &expected[0];
    if (e->count == 0)
        return KCS_OK;
    bound_plan plan;
    plan_bounds(args, 0, &plan);
    operands o = {0};
    operand_reading reading = {g->transpose_a, g->transpose_b, flushed, 0};
    if (gather_operands(args, in, &reading, &o, err) != KCS_OK)
        return KCS_ERROR;
    const double u32 = kcs_unit_roundoff(KCS_F32);
    double k = (double)g->k, alpha = flushed(g->alpha), beta = flushed(g->beta);
    /* a difference in a partial sum is scaled by alpha and passes through the roundings after it */
    double carried = fmax(1.0, fabs(alpha)) * (1.0 + kcs_gamma(k + 2.0, u32));
    for (size_t t = 0; t < e->count; t++) {
        size_t index = e->indices ? e->indices[t] : t;
        size_t i = index / g->n, j = index % g->n;
        const double *row = o.rows + i * g->k, *column = o.columns + j * g->k;
        double c = g->beta != 0.0 ? flushed(kcs_load_element(in[2], KCS_F32, index)) : 0.0;
        if (!finite_element(row, column, g->k, c)) {
            e->values[t] = exact_element(alpha, beta, row, column, g->k, c);
            e->bounds[t] = 0.0;
            continue;
        }
        double sum = 0.0, magnitude = 0.0, undecided = 0.0;
        for (size_t p = 0; p < g->k; p++) {
            double product = flushed((float)(row[p] * column[p]));
            sum += product;
            magnitude += fabs(product);
            undecided += undecided_flush(sum, kcs_gamma((double)p + 2.0, u32) * magnitude);
            sum = flushed(sum);
        }
        undecided *= carried;
        double scaled = alpha * sum, slack = kcs_gamma(k + 2.0, u32) * fabs(alpha) * magnitude;
        undecided += undecided_flush(scaled, slack);
        scaled = flushed(scaled);
        double c_term = g->beta != 0.0 ? flushed((float)(beta * c)) : 0.0;
        double total = scaled + c_term;
        undecided += undecided_flush(total, slack + 2.0 * u32 * fabs(c_term));
        e->values[t] = flushed(total);
        e->bounds[t] = element_bound(&plan, e->values[t], fabs(alpha) * magnitude, fabs(c_term), 0.0) +
                       undecided * plan.widen;
    }
    free_operands(&o);
    return KCS_OK;
}

/* -- Where each model applies -- */

static int applies_tf32(const kcs_op_args *args)
{
    return args->dtype == KCS_F32 && !args->gemm.tf32 && reads_operands(args);
}

static int applies_16_bit_accumulation(const kcs_op_args *args)
{
    return (args->dtype == KCS_F16 || args->dtype == KCS_BF16 || is_fp8(args->dtype)) && reads_operands(args) &&
           args->gemm.k > 1;
}

static int applies_epilogue_rounds_twice(const kcs_op_args *args)
{
    kcs_dtype c_dtype = kcs_gemm_c_dtype(args);
    return (c_dtype == KCS_F16 || c_dtype == KCS_BF16) && reads_operands(args) && args->gemm.beta != 0.0;
}

static int applies_flushing(const kcs_op_args *args)
{
    return args->dtype == KCS_F32 && reads_operands(args);
}

static int applies_transposes_a(const kcs_op_args *args)
{
    return reads_operands(args) && args->gemm.k > 1 && args->gemm.m > 1;
}

static int applies_transposes_b(const kcs_op_args *args)
{
    return reads_operands(args) && args->gemm.k > 1 && args->gemm.n > 1;
}

static int applies_ignores_alpha(const kcs_op_args *args)
{
    return reads_operands(args) && args->gemm.alpha != 1.0;
}

static int applies_ignores_beta(const kcs_op_args *args)
{
    return args->gemm.beta != 0.0 && args->gemm.beta != 1.0;
}

static int applies_ignores_c(const kcs_op_args *args)
{
    return args->gemm.beta != 0.0;
}

static int applies_swaps_alpha_beta(const kcs_op_args *args)
{
    return args->gemm.alpha != args->gemm.beta;
}

static int applies_f64_in_f32(const kcs_op_args *args)
{
    return args->dtype == KCS_F64 && reads_operands(args);
}

static int applies_rounds_products(const kcs_op_args *args)
{
    return (args->dtype == KCS_F16 || args->dtype == KCS_BF16) && reads_operands(args);
}

static int applies_reads_unread(const kcs_op_args *args)
{
    return args->gemm.alpha == 0.0 || args->gemm.beta == 0.0;
}

static int applies_ignores_a_scale(const kcs_op_args *args)
{
    return is_fp8(args->dtype) && reads_operands(args) && args->gemm.a_scale != 1.0;
}

static int applies_ignores_b_scale(const kcs_op_args *args)
{
    return is_fp8(args->dtype) && reads_operands(args) && args->gemm.b_scale != 1.0;
}

static const kcs_model tf32_inputs = {
    "gemm-tf32-inputs", "rounds each f32 input to TF32 (to nearest) and accumulates as tensor cores do",
    applies_tf32, expect_tf32_inputs};
static const kcs_model tf32_truncated_inputs = {
    "gemm-tf32-truncated-inputs",
    "reads each f32 input as TF32 by ignoring its 13 low bits (as tensor cores given f32 do) and accumulates as "
    "tensor cores do",
    applies_tf32, expect_tf32_truncated_inputs};
static const kcs_model accumulates_in_16_bits = {
    "gemm-accumulates-in-16-bits",
    "keeps each element's running sum in 16 bits (the input type; f16 for FP8), rounded after every product",
    applies_16_bit_accumulation, expect_accumulates_in_16_bits};
static const kcs_model accumulates_in_16_bits_per_mma = {
    "gemm-accumulates-in-16-bits-per-mma",
    "keeps each element's running sum in 16 bits, rounded after every k-block of 16 products (32 for FP8), as an "
    "MMA with a 16-bit accumulator does",
    applies_16_bit_accumulation, expect_accumulates_in_16_bits_per_mma};
static const kcs_model epilogue_rounds_twice = {
    "gemm-epilogue-rounds-twice", "rounds alpha*AB to the output type before adding beta*C and rounding again",
    applies_epilogue_rounds_twice, expect_epilogue_rounds_twice};
static const kcs_model flushes_subnormals = {
    "gemm-flushes-subnormals",
    "flushes subnormal f32 inputs, products and partial sums to zero (as built with -ftz, products not fused)",
    applies_flushing, expect_flushing};
static const kcs_model drops_last_term = {
    "gemm-drops-last-term", "never adds the last of the k terms (a k loop one short)", reads_operands,
    expect_drops_last_term};
static const kcs_model drops_k_slice = {
    "gemm-drops-k-slice",
    "never adds the 16 terms from k/2 on (one k-tile lost where k is split in halves)", reads_operands,
    expect_drops_k_slice};
static const kcs_model transposes_a = {
    "gemm-transposes-a", "reads A with the other transpose (transa ignored or inverted)", applies_transposes_a,
    expect_transposes_a};
static const kcs_model transposes_b = {
    "gemm-transposes-b", "reads B with the other transpose (transb ignored or inverted)", applies_transposes_b,
    expect_transposes_b};
static const kcs_model ignores_alpha = {
    "gemm-ignores-alpha", "takes alpha as 1", applies_ignores_alpha, expect_ignores_alpha};
static const kcs_model ignores_beta = {
    "gemm-ignores-beta", "takes beta as 1 (adds C unscaled)", applies_ignores_beta, expect_ignores_beta};
static const kcs_model ignores_c = {
    "gemm-ignores-c", "never adds beta*C (takes beta as 0)", applies_ignores_c, expect_ignores_c};
static const kcs_model swaps_alpha_beta = {
    "gemm-swaps-alpha-beta", "computes beta*AB + alpha*C", applies_swaps_alpha_beta, expect_swaps_alpha_beta};
static const kcs_model f64_accumulates_in_f32 = {
    "gemm-f64-accumulates-in-f32",
    "reads f64 inputs as f32 and keeps each element's running sum in f32, in k order", applies_f64_in_f32,
    expect_f64_accumulates_in_f32};
static const kcs_model rounds_products = {
    "gemm-rounds-products", "rounds each product to the 16-bit input type before adding it in f32",
    applies_rounds_products, expect_rounds_products};
static const kcs_model reads_unread = {
    "gemm-reads-unread-operands",
    "computes alpha*AB + beta*C even where alpha or beta is 0, so that 0 * NaN reaches C_out",
    applies_reads_unread, expect_reads_unread};
static const kcs_model ignores_a_scale = {
    "gemm-fp8-ignores-a-scale", "never applies a_scale (takes it as 1)", applies_ignores_a_scale,
    expect_ignores_a_scale};
static const kcs_model ignores_b_scale = {
    "gemm-fp8-ignores-b-scale", "never applies b_scale (takes it as 1)", applies_ignores_b_scale,
    expect_ignores_b_scale};

/* The catalogue, NULL-terminated. At most 13 apply to one case (an FP8 case
 * with a 16-bit C_out, beta != 0, alpha != 1 and both scales given), within
 * KCS_MAX_MODELS. */
static const kcs_model *const models[] = {
    &tf32_inputs, &tf32_truncated_inputs, &accumulates_in_16_bits, &accumulates_in_16_bits_per_mma,
    &epilogue_rounds_twice, &flushes_subnormals, &drops_last_term, &drops_k_slice, &transposes_a, &transposes_b,
    &ignores_alpha, &ignores_beta, &ignores_c, &swaps_alpha_beta, &f64_accumulates_in_f32, &rounds_products,
    &reads_unread, &ignores_a_scale, &ignores_b_scale, NULL};

static double bytes(const kcs_op_args *args)
{
    const kcs_gemm_args *g = &args->gemm;
    double m = (double)g->m, n = (double)g->n, k = (double)g->k;
    double c_elements = m * n; /* C_out written */
    if (g->beta != 0.0)
        c_elements += m * n;
    double operand_elements = g->alpha != 0.0 ? m * k + k * n : 0.0;
    return operand_elements * (double)kcs_dtype_size(args->dtype) +
           c_elements * (double)kcs_dtype_size(kcs_gemm_c_dtype(args));
}

static double flops(const kcs_op_args *args)
{
    const kcs_gemm_args *g = &args->gemm;
    return 2.0 * (double)g->m * (double)g->n * (double)g->k;
}

const kcs_op kcs_op_gemm = {
    .name = "gemm",
    .summary = "C_out = alpha * op(A) * op(B) + beta * C, row-major, op = N or T",
    .sizes = sizes,
    .params = params,
    .inputs = inputs,
    .dtypes = dtypes,
    .parse_args = parse_args,
    .layout = layout,
    .oracle = oracle,
    .closed_form = closed_form,
    .bounds = bounds,
    .flushing_bounds = flushing_bounds,
    .bytes = bytes,
    .flops = flops,
    .ceiling = KCS_CEILING_GEMM_OF_MODE, /* compute-bound: 2mnk flops, against its mode's GEMM rate */
    .models = models,
};
