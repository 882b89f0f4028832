/* gemm_test.c: the GEMM oracle, closed form and bound (docs/gemm.md), on
 * values whose answers are known exactly, and the bound's tightness on the
 * awkward-size case of cases/gemm.md. */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"
#include "explain.h"
#include "op.h"
#include "suite.h"

extern const kcs_op kcs_op_gemm;

/* Oracle values and bounds of every element, for inputs given as doubles
 * in their stored layout (a is k x m when transposed, b is n x k). */
static void gemm_expected(kcs_dtype dtype, kcs_gemm_args g, const double *a, const double *b,
                          const double *c, double *values, double *bounds)
{
    kcs_op_args args = {.op = "gemm", .dtype = dtype, .gemm = g};
    size_t size = kcs_dtype_size(dtype);
    void *data[3] = {malloc(g.m * g.k * size + 1), malloc(g.k * g.n * size + 1), malloc(g.m * g.n * size + 1)};
    for (size_t i = 0; i < g.m * g.k; i++)
        kcs_store_element(data[0], dtype, i, a[i]);
    for (size_t i = 0; i < g.k * g.n; i++)
        kcs_store_element(data[1], dtype, i, b[i]);
    for (size_t i = 0; i < g.m * g.n; i++)
        kcs_store_element(data[2], dtype, i, c[i]);
    kcs_expected e = {.count = g.m * g.n, .values = values, .bounds = bounds};
    assert_int_equal(kcs_op_gemm.oracle(&args, data, &e, NULL), KCS_OK);
    assert_int_equal(kcs_op_gemm.bounds(&args, data, &e, NULL), KCS_OK);
    for (int i = 0; i < 3; i++)
        free(data[i]);
}

static void oracle_is_exact_on_a_small_product_in_every_transpose(void **state)
{
    (void)state;
    /* A = [1 2; 3 4], B = [5 6; 7 8]: A B = [19 22; 43 50]; 2 A B - 1 = [37 43; 85 99] */
    const double a[4] = {1, 2, 3, 4}, a_t[4] = {1, 3, 2, 4}, b[4] = {5, 6, 7, 8}, b_t[4] = {5, 7, 6, 8};
    const double c[4] = {1, 1, 1, 1}, want[4] = {37, 43, 85, 99};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            kcs_gemm_args g = {.m = 2, .n = 2, .k = 2, .transpose_a = ta, .transpose_b = tb, .alpha = 2, .beta = -1};
            double values[4], bounds[4];
            gemm_expected(KCS_F32, g, ta ? a_t : a, tb ? b_t : b, c, values, bounds);
            for (int i = 0; i < 4; i++)
                assert_true(values[i] == want[i]);
        }
}

static void oracle_survives_cancellation(void **state)
{
    (void)state;
    /* 1e16 + 1 - 1e16 is 0 in a plain double sum and 1 exactly; 3 * 1 - 2 = 1 */
    const double a[3] = {1e16, 1, -1e16}, b[3] = {1, 1, 1}, c[1] = {2};
    kcs_gemm_args g = {.m = 1, .n = 1, .k = 3, .alpha = 3, .beta = -1};
    double value, bound;
    gemm_expected(KCS_F64, g, a, b, c, &value, &bound);
    assert_true(value == 1.0);
    /* the bound is relative to the terms (2e16 per unit of alpha), not to the result */
    assert_true(bound > 3 * 2e16 * 5 * 0x1p-53 && bound < 3 * 2e16 * 6 * 0x1p-53);
}

static void beta_zero_leaves_c_unread_and_alpha_zero_leaves_a_and_b_unread(void **state)
{
    (void)state;
    const double a[2] = {1.5, -2}, b[2] = {4, 0.25}, nan_c[1] = {NAN}, c[1] = {3};
    const double nan_a[2] = {NAN, NAN}, inf_b[2] = {INFINITY, 1};
    double value, bound;
    kcs_gemm_args beta_zero = {.m = 1, .n = 1, .k = 2, .alpha = 2, .beta = 0};
    gemm_expected(KCS_F32, beta_zero, a, b, nan_c, &value, &bound);
    assert_true(value == 2 * (6 - 0.5));
    kcs_gemm_args alpha_zero = {.m = 1, .n = 1, .k = 2, .alpha = 0, .beta = -1.5};
    gemm_expected(KCS_F64, alpha_zero, nan_a, inf_b, c, &value, &bound);
    assert_true(value == -4.5);
    kcs_gemm_args k_zero = {.m = 1, .n = 1, .k = 0, .alpha = 1, .beta = 0.5};
    gemm_expected(KCS_F64, k_zero, a, b, c, &value, &bound);
    assert_true(value == 1.5);
    kcs_gemm_args both_zero = {.m = 1, .n = 1, .k = 2, .alpha = 0, .beta = 0};
    gemm_expected(KCS_F32, both_zero, nan_a, inf_b, nan_c, &value, &bound);
    assert_true(value == 0.0);
}

static void special_values_reach_their_row(void **state)
{
    (void)state;
    /* rows: [inf 1], [inf -inf], [NaN 1], [1 2]; B = [1 1]^T; C = 0 */
    const double a[8] = {INFINITY, 1, INFINITY, -INFINITY, NAN, 1, 1, 2}, b[2] = {1, 1}, c[4] = {0};
    kcs_gemm_args g = {.m = 4, .n = 1, .k = 2, .alpha = -1, .beta = 1};
    double values[4], bounds[4];
    gemm_expected(KCS_F64, g, a, b, c, values, bounds);
    assert_true(values[0] == -INFINITY);
    assert_true(isnan(values[1]));
    assert_true(isnan(values[2]));
    assert_true(values[3] == -3);
    assert_true(bounds[0] == 0 && bounds[1] == 0 && bounds[2] == 0 && bounds[3] > 0);
}

static double gamma_of(double k, double u)
{
    return k * u / (1 - k * u);
}

static void bound_follows_the_derivation(void **state)
{
    (void)state;
    /* a = [1 -2 3], b = [4 5 -6]^T, alpha = 2, beta = 0.5, c = 8: the exact
     * result is 2 (4 - 10 - 18) + 4 = -44, |alpha| |a||b| = 64, |beta c| = 4 */
    const double a[3] = {1, -2, 3}, b[3] = {4, 5, -6}, c[1] = {8};
    double u64 = 0x1p-53, u32 = 0x1p-24, value, bound;
    double oracle = 2 * u64 * 44 + 2 * gamma_of(7, u64) * gamma_of(7, u64) * 68;
    double widen = 1 + gamma_of(19, u64);
    kcs_gemm_args g = {.m = 1, .n = 1, .k = 3, .alpha = 2, .beta = 0.5};

    gemm_expected(KCS_F64, g, a, b, c, &value, &bound);
    assert_true(value == -44);
    double want = (gamma_of(5, u64) * 68 + oracle + 5 * 0x1p-1074 + 7 * 0x1p-1074) * widen;
    assert_true(fabs(bound / want - 1) < 1e-14);

    gemm_expected(KCS_F32, g, a, b, c, &value, &bound);
    want = (gamma_of(5, u32) * 68 + oracle + 5 * 0x1p-149 + 7 * 0x1p-1074) * widen;
    assert_true(fabs(bound / want - 1) < 1e-14);

    /* TF32: each input may lose 2^-10 of itself; the tensor-core accumulation
     * 2^-23 of the terms per product and per block step of at most 4 products
     * (k + ceil(k / 4) + 2 = 6 for k = 3; docs/gemm.md, "Tensor cores") */
    g.tf32 = 1;
    gemm_expected(KCS_F32, g, a, b, c, &value, &bound);
    double product_factor = (1 + 0x1p-10) * (1 + 0x1p-10) * (1 + gamma_of(6, 0x1p-23)) - 1;
    want = (product_factor * 64 + gamma_of(6, 0x1p-23) * 4 + oracle + 5 * 0x1p-149 + 7 * 0x1p-1074) * widen;
    assert_true(fabs(bound / want - 1) < 1e-14);
    assert_true(bound > 64 * 0x1p-9 && bound < 64 * 0x1p-9 * 1.01);
}

/* The case called name of cases/gemm.md, prepared (inputs, expected, bounds). */
static void prepare(const char *name, kcs_case_list *list, kcs_prepared_case *p)
{
    kcs_error err;
    assert_int_equal(kcs_parse_case_file(KCS_SOURCE_DIR "/cases/gemm.md", list, &err), KCS_OK);
    kcs_golden *golden;
    assert_int_equal(kcs_golden_open(KCS_SOURCE_DIR "/golden", &golden, &err), KCS_OK);
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->cases[i].name, name) == 0) {
            if (kcs_prepare_case(&list->cases[i], golden, p, &err) != KCS_OK)
                fail_msg("%s: %s", name, err.message);
            kcs_golden_close(golden);
            return;
        }
    fail_msg("no case %s", name);
}

/* How many elements' bounds are below their last term |a_i,k-1 b_k-1,j|
 * (a dropped last term fails there), and the largest bound. */
static size_t caught_by_dropped_term(const kcs_prepared_case *p, double *largest_bound)
{
    const kcs_gemm_args *g = &p->args.gemm;
    size_t caught = 0;
    *largest_bound = 0;
    for (size_t i = 0; i < g->m; i++)
        for (size_t j = 0; j < g->n; j++) {
            double a = kcs_load_element(p->inputs[0], p->args.dtype, i * g->k + g->k - 1);
            double b = kcs_load_element(p->inputs[1], p->args.dtype, (g->k - 1) * g->n + j);
            double bound = p->expected[0].bounds[i * g->n + j];
            caught += fabs(g->alpha * a * b) > bound;
            *largest_bound = fmax(*largest_bound, bound);
        }
    return caught;
}

static void bound_is_tight_enough_to_catch_a_dropped_term(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    kcs_prepared_case p;
    double largest;
    /* 7 x 93 x 144 in f32: each bound is about 3e-4 and an average term 1/4 */
    prepare("gemm/f32-7x93x144", &list, &p);
    size_t caught = caught_by_dropped_term(&p, &largest);
    assert_true(largest < 1e-3);
    assert_true(caught > 0.98 * 7 * 93);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
    /* in f64 every element whose last term is above 1e-11 is caught */
    list = (kcs_case_list){0};
    prepare("gemm/f64-7x93x144", &list, &p);
    caught = caught_by_dropped_term(&p, &largest);
    assert_true(largest < 1e-12);
    assert_true(caught == 7 * 93);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
    /* whole numbers: the f32 bound is below 1/2, so only the exact integer passes */
    list = (kcs_case_list){0};
    prepare("gemm/f32-integers", &list, &p);
    caught_by_dropped_term(&p, &largest);
    assert_true(largest < 0.5);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

static void closed_form_agrees_with_the_oracle(void **state)
{
    (void)state;
    const char *text = "```kcs-case\ncase: r\nop: gemm\ndtype: f64\nsizes: m=13 n=11 k=29\n"
                       "params: transa=T alpha=-3 beta=2\ninput a: integers lo=-50 hi=50\n"
                       "input b: integers lo=-50 hi=50\ninput c: ramp start=-70 step=1\n"
                       "expect: closed-form\n```\n";
    kcs_case_list list = {0};
    kcs_error err;
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, &err), KCS_OK);
    kcs_prepared_case p;
    if (kcs_prepare_case(&list.cases[0], NULL, &p, &err) != KCS_OK)
        fail_msg("%s", err.message);
    double oracle[13 * 11];
    kcs_expected e = {.count = 13 * 11, .values = oracle};
    assert_int_equal(kcs_op_gemm.oracle(&p.args, p.inputs, &e, &err), KCS_OK);
    for (size_t i = 0; i < 13 * 11; i++)
        assert_true(oracle[i] == p.expected[0].values[i]);
    /* element (0, 0) by hand: a is stored k x m, so op(A)[0][p] = a[p * 13] */
    double sum = 0;
    for (size_t q = 0; q < 29; q++)
        sum += kcs_load_element(p.inputs[0], KCS_F64, q * 13) * kcs_load_element(p.inputs[1], KCS_F64, q * 11);
    assert_true(p.expected[0].values[0] == -3 * sum + 2 * -70);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

static void closed_form_refuses_what_is_not_whole(void **state)
{
    (void)state;
    const char *text = "```kcs-case\ncase: r\nop: gemm\ndtype: f32\nsizes: m=3 n=3 k=3\n"
                       "input a: normal\ninput b: integers lo=0 hi=2\ninput c: normal\nexpect: closed-form\n```\n"
                       "```kcs-case\ncase: s\nop: gemm\ndtype: f32\nsizes: m=3 n=3 k=3\nparams: alpha=0.5\n"
                       "input a: integers lo=0 hi=2\ninput b: integers lo=0 hi=2\ninput c: normal\n"
                       "expect: closed-form\n```\n";
    kcs_case_list list = {0};
    kcs_error err;
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, &err), KCS_OK);
    kcs_prepared_case p;
    assert_int_equal(kcs_prepare_case(&list.cases[0], NULL, &p, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "input a is"));
    kcs_prepared_case_free(&p);
    assert_int_equal(kcs_prepare_case(&list.cases[1], NULL, &p, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "whole alpha and beta"));
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

static void parameters_are_checked_and_scalars_rounded_to_the_type(void **state)
{
    (void)state;
    const char *text = "```kcs-case\ncase: tf64\nop: gemm\ndtype: f64\nsizes: m=1 n=1 k=1\nparams: mode=tf32\n"
                       "input a: normal\ninput b: normal\ninput c: normal\nexpect: oracle\n```\n"
                       "```kcs-case\ncase: tensor32\nop: gemm\ndtype: f32\nsizes: m=1 n=1 k=1\nparams: mode=tensor\n"
                       "input a: normal\ninput b: normal\ninput c: normal\nexpect: oracle\n```\n"
                       "```kcs-case\ncase: badt\nop: gemm\ndtype: f32\nsizes: m=1 n=1 k=1\nparams: transa=X\n"
                       "input a: normal\ninput b: normal\ninput c: normal\nexpect: oracle\n```\n"
                       "```kcs-case\ncase: tenth\nop: gemm\ndtype: f32\nsizes: m=2 n=3 k=5\n"
                       "params: alpha=0.1 transa=T transb=T\n"
                       "input a: normal\ninput b: normal\ninput c: normal\nexpect: oracle\n```\n";
    kcs_case_list list = {0};
    kcs_error err;
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, &err), KCS_OK);
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    assert_int_equal(kcs_op_prepare(&list.cases[0], &op, &args, &layout, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "tf32 is for f32"));
    assert_int_equal(kcs_op_prepare(&list.cases[1], &op, &args, &layout, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "tensor is for f16 and bf16"));
    assert_int_equal(kcs_op_prepare(&list.cases[2], &op, &args, &layout, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "N or T"));
    assert_int_equal(kcs_op_prepare(&list.cases[3], &op, &args, &layout, &err), KCS_OK);
    assert_true(args.gemm.alpha == (double)0.1f && args.gemm.beta == 0);
    /* a is stored k x m and b n x k when transposed */
    assert_int_equal(layout.inputs[0].shape[0], 5);
    assert_int_equal(layout.inputs[0].shape[1], 2);
    assert_int_equal(layout.inputs[1].shape[0], 3);
    assert_int_equal(layout.inputs[1].shape[1], 5);
    assert_string_equal(layout.outputs[0].name, "c_out");
    assert_int_equal(kcs_array_element_count(&layout.outputs[0]), 6);
    /* beta = 0: C is not read, so not counted */
    assert_true(op->bytes(&args) == (2 * 5 + 5 * 3 + 2 * 3) * 4.0);
    assert_true(op->flops(&args) == 2 * 2 * 3 * 5);
    kcs_case_list_free(&list);
}

/* f16 overflow (docs/gemm.md, "Overflow to infinity"): where the f32 result
 * must lie at or beyond 65520 every correctly rounding kernel gives
 * infinity, so a kernel that saturates at 65504 fails; where the f32 result
 * may fall either side of 65520, 65504 and infinity both pass. */
static void a_saturating_f16_result_fails_where_it_must_overflow(void **state)
{
    (void)state;
    kcs_gemm_args g = {.m = 1, .n = 1, .k = 2, .alpha = 1, .beta = 0};
    const double c[1] = {0};
    double value, bound;
    /* 256 * 256 + 0 * 1 = 65536: beyond 65520 by far more than the f32 sum's error */
    const double a_over[2] = {256, 0}, b_over[2] = {256, 1};
    gemm_expected(KCS_F16, g, a_over, b_over, c, &value, &bound);
    assert_true(value == 65536.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, 65504.0) > 1.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, INFINITY) <= 1.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, -INFINITY) > 1.0);
    /* 256 * 255 + 240 = 65520 exactly: an f32 sum within its error below it rounds to 65504 */
    const double a_edge[2] = {256, 240}, b_edge[2] = {255, 1};
    gemm_expected(KCS_F16, g, a_edge, b_edge, c, &value, &bound);
    assert_true(value == 65520.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, 65504.0) <= 1.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, INFINITY) <= 1.0);
    /* 65519: rounds to 65504, and infinity is still within its bound */
    const double a_below[2] = {256, 239};
    gemm_expected(KCS_F16, g, a_below, b_edge, c, &value, &bound);
    assert_true(value == 65519.0);
    assert_true(kcs_check_element(KCS_F16, value, bound, 65504.0) <= 1.0);
}

/* The values and bounds the model called name predicts for every element,
 * for inputs given as doubles in their stored layout (as gemm_expected). */
static void model_expected(const char *name, kcs_dtype dtype, kcs_gemm_args g, const double *a, const double *b,
                           const double *c, double *values, double *bounds)
{
    const kcs_model *model = kcs_find_model(&kcs_op_gemm, name);
    assert_non_null(model);
    kcs_op_args args = {.op = "gemm", .dtype = dtype, .gemm = g};
    assert_true(!model->applies || model->applies(&args));
    size_t size = kcs_dtype_size(dtype);
    void *data[3] = {malloc(g.m * g.k * size + 1), malloc(g.k * g.n * size + 1), malloc(g.m * g.n * size + 1)};
    for (size_t i = 0; i < g.m * g.k; i++)
        kcs_store_element(data[0], dtype, i, a[i]);
    for (size_t i = 0; i < g.k * g.n; i++)
        kcs_store_element(data[1], dtype, i, b[i]);
    for (size_t i = 0; i < g.m * g.n; i++)
        kcs_store_element(data[2], dtype, i, c[i]);
    kcs_expected e[KCS_MAX_OUTPUTS] = {{.count = g.m * g.n, .values = values, .bounds = bounds}};
    assert_int_equal(model->expect(&args, data, e, NULL), KCS_OK);
    for (int i = 0; i < 3; i++)
        free(data[i]);
}

/* docs/gemm.md, "Arithmetic models", on values whose answers are known exactly. */
static void models_compute_their_arithmetic_exactly(void **state)
{
    (void)state;
    double value, bound, expected, expected_bound;
    kcs_gemm_args one = {.m = 1, .n = 1, .k = 1, .alpha = 1, .beta = 1};
    /* bf16: AB = (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14 rounds to 1 + 2^-6; plus C = 2^-8 is a tie, to even:
     * 1 + 2^-6, where the one rounding of 1 + 2^-6 + 2^-8 + 2^-14 gives 1 + 3 2^-7 */
    const double a[1] = {1 + 0x1p-7}, c[1] = {0x1p-8};
    model_expected("gemm-epilogue-rounds-twice", KCS_BF16, one, a, a, c, &value, &bound);
    assert_true(value == 1 + 0x1p-6 && bound == 0);
    assert_true(kcs_check_element(KCS_BF16, value, bound, 1 + 3 * 0x1p-7) > 1.0); /* the one rounding does not fit */
    gemm_expected(KCS_BF16, one, a, a, c, &expected, &expected_bound);
    assert_true(kcs_check_element(KCS_BF16, expected, expected_bound, 1 + 3 * 0x1p-7) <= 1.0);
    /* TF32 keeps 10 fraction bits: 1 + 3 2^-12 is 1 + 2^-10 to nearest and 1 truncated */
    kcs_gemm_args dot = {.m = 1, .n = 1, .k = 1, .alpha = 1, .beta = 0};
    const double x[1] = {1 + 3 * 0x1p-12}, unit[1] = {1}, zero[1] = {0};
    model_expected("gemm-tf32-inputs", KCS_F32, dot, x, unit, zero, &value, &bound);
    assert_true(value == 1 + 0x1p-10);
    model_expected("gemm-tf32-truncated-inputs", KCS_F32, dot, x, unit, zero, &value, &bound);
    assert_true(value == 1);
    /* f16 running sums: 2048 + 1 + 1 is 2048 in f16 a product at a time (ties to even),
     * and 2050 with the three products summed in f32 within one block */
    kcs_gemm_args three = {.m = 1, .n = 1, .k = 3, .alpha = 1, .beta = 0};
    const double terms[3] = {2048, 1, 1}, ones[3] = {1, 1, 1};
    model_expected("gemm-accumulates-in-16-bits", KCS_F16, three, terms, ones, zero, &value, &bound);
    assert_true(value == 2048 && bound == 0);
    model_expected("gemm-accumulates-in-16-bits-per-mma", KCS_F16, three, terms, ones, zero, &value, &bound);
    assert_true(value == 2050 && bound == 0);
    /* f64 through f32: 1 + 2^-30 is read as 1 */
    kcs_gemm_args two = {.m = 1, .n = 1, .k = 2, .alpha = 1, .beta = 0};
    const double pair[2] = {1 + 0x1p-30, 1}, pair_b[2] = {1, 1};
    model_expected("gemm-f64-accumulates-in-f32", KCS_F64, two, pair, pair_b, zero, &value, &bound);
    assert_true(value == 2 && bound == 0);
    /* products rounded to f16: (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 is 1 + 2^-9 */
    const double near_one[1] = {1 + 0x1p-10};
    model_expected("gemm-rounds-products", KCS_F16, dot, near_one, near_one, zero, &value, &bound);
    assert_true(value == 1 + 0x1p-9);
    /* scalars and terms: [1 2 3] . [4 5 6] = 32, alpha = 2, beta = 3, c = 1 */
    kcs_gemm_args row = {.m = 1, .n = 1, .k = 3, .alpha = 2, .beta = 3};
    const double r[3] = {1, 2, 3}, col[3] = {4, 5, 6}, c1[1] = {1};
    model_expected("gemm-ignores-alpha", KCS_F64, row, r, col, c1, &value, &bound);
    assert_true(value == 35);
    model_expected("gemm-ignores-beta", KCS_F64, row, r, col, c1, &value, &bound);
    assert_true(value == 65);
    model_expected("gemm-ignores-c", KCS_F64, row, r, col, c1, &value, &bound);
    assert_true(value == 64);
    model_expected("gemm-swaps-alpha-beta", KCS_F64, row, r, col, c1, &value, &bound);
    assert_true(value == 98);
    model_expected("gemm-drops-last-term", KCS_F64, row, r, col, c1, &value, &bound);
    assert_true(value == 2 * 14 + 3);
    model_expected("gemm-drops-k-slice", KCS_F64, row, r, col, c1, &value, &bound); /* terms 1 and 2 of 0..2 */
    assert_true(value == 2 * 4 + 3);
    /* flushed: 2^-70 * 2^-70 is below 2^-126, so the product is 0, and C = 2^-127 is read as 0 */
    kcs_gemm_args tiny = {.m = 1, .n = 1, .k = 2, .alpha = 1, .beta = 1};
    const double small[2] = {0x1p-70, 1}, small_b[2] = {0x1p-70, 0.5}, c_small[1] = {0x1p-127};
    model_expected("gemm-flushes-subnormals", KCS_F32, tiny, small, small_b, c_small, &value, &bound);
    assert_true(value == 0.5);
    /* beta = 0 and C = NaN: read anyway, NaN */
    kcs_gemm_args unread = {.m = 1, .n = 1, .k = 3, .alpha = 2, .beta = 0};
    const double nan_c[1] = {NAN};
    model_expected("gemm-reads-unread-operands", KCS_F64, unread, r, col, nan_c, &value, &bound);
    assert_true(isnan(value));
}

/* Every case of cases/gemm.md has at most KCS_MAX_MODELS models that apply,
 * so that kcs_explain can try them all; and the names say the op. */
static void no_case_has_more_models_than_explain_tries(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    kcs_error err;
    assert_int_equal(kcs_parse_case_file(KCS_SOURCE_DIR "/cases/gemm.md", &list, &err), KCS_OK);
    int most = 0;
    for (size_t i = 0; i < list.count; i++) {
        const kcs_op *op;
        kcs_op_args args;
        kcs_layout layout;
        assert_int_equal(kcs_op_prepare(&list.cases[i], &op, &args, &layout, &err), KCS_OK);
        int applying = 0;
        for (int m = 0; kcs_op_gemm.models[m]; m++)
            applying += !kcs_op_gemm.models[m]->applies || kcs_op_gemm.models[m]->applies(&args);
        most = applying > most ? applying : most;
    }
    assert_true(most > 0 && most <= KCS_MAX_MODELS);
    for (int m = 0; kcs_op_gemm.models[m]; m++)
        assert_true(strncmp(kcs_op_gemm.models[m]->name, "gemm-", 5) == 0 && kcs_op_gemm.models[m]->description[0]);
    kcs_case_list_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(oracle_is_exact_on_a_small_product_in_every_transpose),
        cmocka_unit_test(oracle_survives_cancellation),
        cmocka_unit_test(beta_zero_leaves_c_unread_and_alpha_zero_leaves_a_and_b_unread),
        cmocka_unit_test(special_values_reach_their_row),
        cmocka_unit_test(a_saturating_f16_result_fails_where_it_must_overflow),
        cmocka_unit_test(models_compute_their_arithmetic_exactly),
        cmocka_unit_test(no_case_has_more_models_than_explain_tries),
        cmocka_unit_test(bound_follows_the_derivation),
        cmocka_unit_test(bound_is_tight_enough_to_catch_a_dropped_term),
        cmocka_unit_test(closed_form_agrees_with_the_oracle),
        cmocka_unit_test(closed_form_refuses_what_is_not_whole),
        cmocka_unit_test(parameters_are_checked_and_scalars_rounded_to_the_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
