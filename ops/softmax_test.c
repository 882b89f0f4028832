/* softmax_test.c: the softmax oracle, closed form and bound
 * (docs/softmax.md), on rows whose answers are known. */
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

#include "bounds.h"
#include "op.h"
#include "suite.h"

extern const kcs_op kcs_op_softmax;

enum { most = 64 };

/* Oracle values and bounds of every element of a rows x cols matrix. */
static void expect_all(kcs_dtype dtype, const void *x, size_t rows, size_t cols, double *values,
                       double *bounds)
{
    kcs_op_args args = {.op = "softmax", .dtype = dtype, .softmax = {.rows = rows, .cols = cols}};
    kcs_expected e = {.count = rows * cols, .values = values, .bounds = bounds};
    void *inputs[1] = {(void *)x};
    assert_int_equal(kcs_op_softmax.oracle(&args, inputs, &e, NULL), KCS_OK);
    assert_int_equal(kcs_op_softmax.bounds(&args, inputs, &e, NULL), KCS_OK);
}

static void close_to(double actual, double expected, double relative)
{
    if (!(fabs(actual - expected) <= relative * fabs(expected)))
        fail_msg("%.17g is not within %g of %.17g", actual, relative, expected);
}

static void oracle_knows_simple_rows(void **state)
{
    (void)state;
    double values[most], bounds[most];
    double equal[2] = {5, 5};
    expect_all(KCS_F64, equal, 1, 2, values, bounds);
    assert_true(values[0] == 0.5 && values[1] == 0.5);
    /* exp(0) : exp(-ln 2) : exp(-ln 4) = 4 : 2 : 1, in any row's frame */
    double thirds[3] = {1e4, 1e4 - log(2.0), 1e4 - log(4.0)};
    expect_all(KCS_F64, thirds, 1, 3, values, bounds);
    close_to(values[0], 4.0 / 7.0, 1e-12); /* 1e4 - ln 2 is itself rounded: 1e-12 covers it */
    close_to(values[1], 2.0 / 7.0, 1e-12);
    close_to(values[2], 1.0 / 7.0, 1e-12);
    float single[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    expect_all(KCS_F32, single, 1, 4, values, bounds);
    assert_true(values[3] == 0.25);
    /* an independent computation of a random-looking row, in long double */
    double row[5] = {0.3, -1.7, 2.2, 0.0, -0.4};
    expect_all(KCS_F64, row, 1, 5, values, bounds);
    long double sum = 0;
    for (int k = 0; k < 5; k++)
        sum += expl((long double)row[k] - 2.2L);
    for (int k = 0; k < 5; k++)
        close_to(values[k], (double)(expl((long double)row[k] - 2.2L) / sum), 0x1.0p-52);
}

static void oracle_masks_and_propagates_specials(void **state)
{
    (void)state;
    double values[most], bounds[most];
    /* rows: masked; all -inf; a NaN; a +inf; a row beside them unaffected */
    double x[5][3] = {{0, -INFINITY, 0},
                      {-INFINITY, -INFINITY, -INFINITY},
                      {1, NAN, 2},
                      {1, INFINITY, 2},
                      {7, 7, 7}};
    expect_all(KCS_F64, x, 5, 3, values, bounds);
    assert_true(values[0] == 0.5 && values[1] == 0.0 && values[2] == 0.5);
    assert_true(bounds[1] == 0.0); /* a masked entry must be exactly 0 */
    for (int k = 3; k < 12; k++) {
        assert_true(isnan(values[k]));
        assert_true(bounds[k] == 0.0);
    }
    for (int k = 12; k < 15; k++)
        assert_true(values[k] == 1.0 / 3.0);
    /* x - M overflows f32 for +-FLT_MAX in one row: the small one's share is exactly 0 */
    float huge[2] = {FLT_MAX, -FLT_MAX};
    expect_all(KCS_F32, huge, 1, 2, values, bounds);
    assert_true(values[0] == 1.0 && values[1] == 0.0);
    assert_true(bounds[1] > 2 * 0x1.0p-126 &&
                bounds[1] < 2.01 * 0x1.0p-126); /* the absolute term alone */
}

static void a_sample_computes_the_same_values(void **state)
{
    (void)state;
    double x[4][6];
    for (int r = 0; r < 4; r++)
        for (int k = 0; k < 6; k++)
            x[r][k] = sin(7.0 * r + k) * 3.0;
    double all[24], all_bounds[24];
    expect_all(KCS_F64, x, 4, 6, all, all_bounds);
    size_t indices[5] = {1, 2, 9, 17, 23};
    double values[5], bounds[5];
    kcs_op_args args = {.op = "softmax", .dtype = KCS_F64, .softmax = {.rows = 4, .cols = 6}};
    kcs_expected e = {.count = 5, .indices = indices, .values = values, .bounds = bounds};
    void *inputs[1] = {x};
    assert_int_equal(kcs_op_softmax.oracle(&args, inputs, &e, NULL), KCS_OK);
    assert_int_equal(kcs_op_softmax.bounds(&args, inputs, &e, NULL), KCS_OK);
    for (int s = 0; s < 5; s++) {
        assert_true(values[s] == all[indices[s]]);
        assert_true(bounds[s] == all_bounds[indices[s]]);
    }
}

/* Prepares the one case of text (oracle, closed form or golden as it says). */
static void closed_form_of(const char *text, double *values, size_t count)
{
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, NULL), KCS_OK);
    assert_int_equal(list.count, 1);
    kcs_prepared_case p;
    kcs_error err;
    if (kcs_prepare_case(&list.cases[0], NULL, &p, &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(p.expected[0].count, count);
    memcpy(values, p.expected[0].values, count * sizeof *values);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

static void constant_rows_give_one_over_cols(void **state)
{
    (void)state;
    double values[21];
    closed_form_of("```kcs-case\ncase: c\nop: softmax\ndtype: f64\nsizes: rows=3 cols=7\n"
                   "input x: constant value=-2\nexpect: closed-form\n```\n",
                   values, 21);
    for (int k = 0; k < 21; k++)
        assert_true(values[k] == 1.0 / 7.0);
    closed_form_of("```kcs-case\ncase: c\nop: softmax\ndtype: f64\nsizes: rows=3 cols=7\n"
                   "input x: constant value=-2\nexpect: oracle\n```\n",
                   values, 21);
    for (int k = 0; k < 21; k++)
        assert_true(values[k] == 1.0 / 7.0); /* the oracle agrees */
    closed_form_of("```kcs-case\ncase: c\nop: softmax\ndtype: f32\nsizes: rows=1 cols=3\n"
                   "input x: constant value=-inf\nexpect: closed-form\n```\n",
                   values, 3);
    assert_true(isnan(values[0]) && isnan(values[2]));
    closed_form_of("```kcs-case\ncase: c\nop: softmax\ndtype: f32\nsizes: rows=1 cols=3\n"
                   "input x: constant value=1e39\nexpect: closed-form\n```\n",
                   values, 3); /* 1e39 is +inf in f32 */
    assert_true(isnan(values[1]));
}

/* The bound of docs/softmax.md by hand, for a row whose every x - M is 0
 * (in long double, where 1 + 2^-53 is still above 1). */
static double hand_bound_constant_row(long double u, long double smallest_normal, size_t cols,
                                      double y)
{
    long double exp_error = 6 * u;
    long double depth = cols - 1 < 2048 ? cols - 1.0L : 2048 + ceill(log2l((long double)cols));
    long double g = depth * u / (1 - depth * u);
    long double underflow = cols * smallest_normal * (1 + g);
    long double low = (1 - exp_error) * (1 - g) - underflow;
    long double relative = (1 + exp_error) * (1 + u) * (1 + u) / low - 1;
    long double omega = 0x1.0p-53L + 16 * 0x1.0p-64L;
    long double absolute = smallest_normal * ((1 + u) * (1 + u) / low + 1);
    return (double)(((relative + omega) * y / (1 - omega) + absolute) * (1 + 0x1.0p-40L));
}

static void bound_follows_the_derivation(void **state)
{
    (void)state;
    double values[most], bounds[most];
    float ones[33];
    for (int k = 0; k < 33; k++)
        ones[k] = 1.0f;
    expect_all(KCS_F32, ones, 1, 33, values, bounds);
    double hand = hand_bound_constant_row(0x1.0p-24, 0x1.0p-126, 33, values[0]);
    close_to(bounds[0], hand, 1e-9);
    /* about 2 * 6u for the two exps, gamma(32), 2u for the division: 46u relative */
    close_to(bounds[0] / values[0], 46 * 0x1.0p-24, 0.01);
    double ones64[7] = {3, 3, 3, 3, 3, 3, 3};
    expect_all(KCS_F64, ones64, 1, 7, values, bounds);
    close_to(bounds[0], hand_bound_constant_row(0x1.0p-53, 0x1.0p-1022, 7, values[0]), 1e-9);
    /* an element far below the max pays ((1 + u)^3 - 1) |x - M|, about 3u |x - M|, for the
     * rounding of the exp2 form's argument fl(fl(x - M) fl(log2 e)) */
    float spread[2] = {0.0f, -50.0f};
    expect_all(KCS_F32, spread, 1, 2, values, bounds);
    double relative_far = bounds[1] / values[1], relative_near = bounds[0] / values[0];
    assert_true(relative_far - relative_near > 149 * 0x1.0p-24 &&
                relative_far - relative_near < 152 * 0x1.0p-24);
}

static void bound_is_tight_enough(void **state)
{
    (void)state;
    static float row[1000];
    static double values[1000], bounds[1000];
    for (int k = 0; k < 1000; k++)
        row[k] = (float)(8.0 * ((k * 37) % 1000) / 1000.0 - 4.0); /* uniform-ish on [-4, 4) */
    expect_all(KCS_F32, row, 1, 1000, values, bounds);
    double worst = 0;
    for (int k = 0; k < 1000; k++)
        worst = fmax(worst, bounds[k] / values[k]);
    /* gamma(999) in f32 is 6e-5 relative. A sum that leaves out term k moves every element of
     * the row by y_k relative: caught for every term whose share is above the bound, here the
     * 60% of them above x = -0.8 */
    assert_true(worst < 6.5e-5);
    int caught = 0;
    for (int k = 0; k < 1000; k++)
        caught += values[k] > worst;
    assert_true(caught > 550);
    /* f64 for 33 columns, x - M down to -4: a few dozen u */
    double row64[33];
    for (int k = 0; k < 33; k++)
        row64[k] = k % 5;
    expect_all(KCS_F64, row64, 1, 33, values, bounds);
    double worst64 = 0;
    for (int k = 0; k < 33; k++)
        worst64 = fmax(worst64, bounds[k] / values[k]);
    assert_true(worst64 < 64 * 0x1.0p-53); /* 12u + gamma(32) + 2u + up to 3u * 4 of argument: 61u */
    /* without the max subtraction x near 1e4 overflows: exp(1e4) is inf even in f64 */
    assert_true(isinf(exp(1e4)) && isinf(expf(1e4f)));
}

static void layout_bytes_and_flops(void **state)
{
    (void)state;
    kcs_op_args args = {.op = "softmax", .dtype = KCS_F32, .softmax = {.rows = 3, .cols = 5}};
    kcs_layout layout;
    assert_int_equal(kcs_op_softmax.layout(&args, &layout, NULL), KCS_OK);
    assert_int_equal(layout.input_count, 1);
    assert_int_equal(layout.output_count, 1);
    assert_int_equal(kcs_array_bytes(&layout.outputs[0]), 60);
    assert_true(kcs_op_softmax.bytes(&args) == 120);
    assert_true(kcs_op_softmax.flops(&args) == 75);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(oracle_knows_simple_rows),
        cmocka_unit_test(oracle_masks_and_propagates_specials),
        cmocka_unit_test(a_sample_computes_the_same_values),
        cmocka_unit_test(constant_rows_give_one_over_cols),
        cmocka_unit_test(bound_follows_the_derivation),
        cmocka_unit_test(bound_is_tight_enough),
        cmocka_unit_test(layout_bytes_and_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
