/* anneal_test.c: the anneal descriptors (assign, reduce, update, energy;
 * docs/anneal.md): oracles and closed forms on known answers, the bounds
 * against hand computation, their tightness, and assign's near-tie rule. */
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
#include "check.h"
#include "explain.h"
#include "op.h"
#include "suite.h"

extern const kcs_op kcs_op_assign, kcs_op_reduce, kcs_op_update, kcs_op_energy;

static const double u32 = 0x1.0p-24, u64 = 0x1.0p-53;

/* Expected values and bounds of every element of every output. */
typedef struct {
    double values[4][256], bounds[4][256];
    kcs_expected e[4];
} expectation;

static void expect_all(const kcs_op *op, const kcs_op_args *args, void *inputs[], expectation *x)
{
    kcs_layout layout;
    assert_int_equal(op->layout(args, &layout, NULL), KCS_OK);
    for (int o = 0; o < layout.output_count; o++) {
        size_t count = kcs_array_element_count(&layout.outputs[o]);
        assert_true(count <= 256);
        x->e[o] = (kcs_expected){.count = count, .values = x->values[o], .bounds = x->bounds[o]};
    }
    kcs_error err;
    if (op->oracle(args, inputs, x->e, &err) != KCS_OK ||
        op->bounds(args, inputs, x->e, &err) != KCS_OK)
        fail_msg("%s", err.message);
}

static void close_to(double actual, double expected, double relative)
{
    if (!(fabs(actual - expected) <= relative * fabs(expected)))
        fail_msg("%.17g is not within %g of %.17g", actual, relative, expected);
}

/* The expected values of the one case in text, from its closed form and from the oracle. */
static void closed_form_matches_oracle(const char *text)
{
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, NULL), KCS_OK);
    assert_int_equal(list.count, 1);
    kcs_prepared_case p;
    kcs_error err;
    if (kcs_prepare_case(&list.cases[0], NULL, &p, &err) != KCS_OK)
        fail_msg("%s", err.message);
    kcs_expected oracle[KCS_MAX_OUTPUTS];
    for (int o = 0; o < p.layout.output_count; o++) {
        oracle[o] = p.expected[o];
        oracle[o].values = malloc(p.expected[o].count * sizeof(double) + 1);
    }
    assert_int_equal(p.op->oracle(&p.args, p.inputs, oracle, &err), KCS_OK);
    for (int o = 0; o < p.layout.output_count; o++) {
        for (size_t k = 0; k < p.expected[o].count; k++)
            if (oracle[o].values[k] != p.expected[o].values[k])
                fail_msg("%s output %d element %zu: closed form %.17g, oracle %.17g",
                         list.cases[0].name, o, k, p.expected[o].values[k], oracle[o].values[k]);
        free(oracle[o].values);
    }
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

/* ---- assign ---- */

static void assign_oracle_finds_the_nearest(void **state)
{
    (void)state;
    /* points: on anchor 0, on anchor 2, midway between anchors 0 and 1 (a tie) */
    float x[3][2] = {{0, 0}, {3, 4}, {1.5f, 0}};
    float a[3][2] = {{0, 0}, {3, 0}, {3, 4}};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 3, .d = 2, .m = 3}};
    void *inputs[2] = {x, a};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_assign, &args, inputs, e);
    assert_true(e->values[0][0] == 0 && e->values[0][1] == 2 && e->values[0][2] == 0);
    assert_true(e->values[1][0] == 0 && e->values[1][1] == 0 && e->values[1][2] == 2.25);
    /* small multiples of 2^-1: every distance is exact in f32, so bound 0 */
    assert_true(e->bounds[1][0] == 0 && e->bounds[1][2] == 0);
    /* the same points stored as f16 */
    uint16_t half[6];
    for (int k = 0; k < 6; k++)
        half[k] = kcs_f16_from_double(((float *)x)[k]);
    args.dtype = KCS_F16;
    inputs[0] = half;
    expect_all(&kcs_op_assign, &args, inputs, e);
    assert_true(e->values[0][1] == 2 && e->values[1][2] == 2.25);
    free(e);
}

static void assign_bound_follows_the_derivation(void **state)
{
    (void)state;
    float x[1][8] = {{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f}};
    float a[1][8] = {{0}};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 1, .d = 8, .m = 1}};
    void *inputs[2] = {x, a};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_assign, &args, inputs, e);
    double distance = e->values[1][0];
    close_to(distance, 2.04, 1e-7);
    double gamma10 = 10 * u32 / (1 - 10 * u32);
    double hand =
        ((gamma10 + 2 * u64) * distance / (1 - 2 * u64) + 16 * 0x1.0p-126) * (1 + 0x1.0p-40);
    assert_true(e->bounds[1][0] == hand);
    /* tight: gamma(130) for d = 128 is under 8e-6 relative */
    assert_true(kcs_gamma(130, u32) < 8e-6);
    free(e);
}

/* Runs assign's check on the given actual outputs of a one-point case. */
static void check_assign(const kcs_op_args *args, void *inputs[], int32_t idx, float dist,
                         kcs_check_result *r)
{
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_assign, args, inputs, e);
    int32_t actual_idx[1] = {idx};
    float actual_dist[1] = {dist};
    void *actual[2] = {actual_idx, actual_dist};
    kcs_op_assign.check(args, inputs, actual, e->e, r);
    free(e);
}

static void assign_accepts_a_true_near_tie(void **state)
{
    (void)state;
    /* x = 1/3 between anchors 0 and 2/3 (both rounded to f32): the two exact distances differ
     * by about 1e-8 of themselves, far inside gamma(3) u; either index, with its own distance */
    float x[1] = {1.0f / 3.0f};
    float a[2] = {0.0f, 2.0f / 3.0f};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 1, .d = 1, .m = 2}};
    void *inputs[2] = {x, a};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_assign, &args, inputs, e);
    int want = (int)e->values[0][0];
    int other = 1 - want;
    float other_distance = (x[0] - a[other]) * (x[0] - a[other]);
    free(e);
    kcs_check_result r;
    check_assign(&args, inputs, other, other_distance, &r);
    if (!r.passed)
        fail_msg("a near tie was refused: %s", r.diagnosis);
    check_assign(&args, inputs, want, x[0] * x[0], &r);
    assert_true(r.passed);
}

static void assign_rejects_a_wrong_index_that_is_no_tie(void **state)
{
    (void)state;
    float x[1] = {0.1f};
    float a[2] = {0.0f, 1.0f};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 1, .d = 1, .m = 2}};
    void *inputs[2] = {x, a};
    kcs_check_result r;
    check_assign(&args, inputs, 1, (x[0] - 1.0f) * (x[0] - 1.0f), &r);
    assert_false(r.passed);
    assert_non_null(strstr(r.diagnosis, "idx[0]: expected anchor 0"));
    assert_non_null(strstr(r.diagnosis, "not a near tie"));
    check_assign(&args, inputs, 2, x[0] * x[0], &r); /* not an anchor at all */
    assert_false(r.passed);
    assert_non_null(strstr(r.diagnosis, "not an anchor index"));
    /* the right index with the distance of the other anchor */
    check_assign(&args, inputs, 0, 0.81f, &r);
    assert_false(r.passed);
    assert_non_null(strstr(r.diagnosis, "dist[0]"));
    assert_non_null(strstr(r.diagnosis, "times the bound"));
}

static void assign_exact_ties_go_to_the_smallest_index(void **state)
{
    (void)state;
    /* integers: every distance exact, the bound 0, and 1 is as near to 0 as to 2 */
    float x[1] = {1.0f};
    float a[2] = {0.0f, 2.0f};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 1, .d = 1, .m = 2}};
    void *inputs[2] = {x, a};
    kcs_check_result r;
    check_assign(&args, inputs, 1, 1.0f, &r);
    assert_false(r.passed);
    assert_non_null(strstr(r.diagnosis, "goes to the smallest index"));
    check_assign(&args, inputs, 0, 1.0f, &r);
    assert_true(r.passed);
    assert_true(r.fraction == 0.0);
}

static void assign_finds_unwritten_outputs(void **state)
{
    (void)state;
    float x[2] = {1.0f, 5.0f};
    float a[2] = {0.0f, 4.0f};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 2, .d = 1, .m = 2}};
    void *inputs[2] = {x, a};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_assign, &args, inputs, e);
    int32_t idx[2] = {0, 1};
    float dist[2] = {1.0f, 1.0f};
    kcs_poison(&idx[1], KCS_I32, 1);
    void *actual[2] = {idx, dist};
    kcs_check_result r;
    kcs_op_assign.check(&args, inputs, actual, e->e, &r);
    assert_false(r.passed);
    assert_int_equal(r.unwritten, 1);
    assert_non_null(strstr(r.diagnosis, "idx[1]: never written"));
    /* assign's own check fills the histogram as kcs_check_outputs does: the
     * exact index and distances at 0, the unwritten index above the bound */
    assert_int_equal(r.checked, 4);
    assert_int_equal(r.histogram.counts[0], 3);
    assert_int_equal(r.histogram.above, 1);
    free(e);
}

static void assign_closed_forms_agree_with_the_oracle(void **state)
{
    (void)state;
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: assign\ndtype: f32\nsizes: n=40 d=6 m=25\n"
        "input x: ramp start=0 step=1\ninput a: ramp start=0 step=1\nexpect: closed-form\n```\n");
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: assign\ndtype: f16\nsizes: n=30 d=4 m=20\n"
        "input x: ramp start=4 step=2\ninput a: ramp start=0 step=2\nexpect: closed-form\n```\n");
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: assign\ndtype: f32\nsizes: n=9 d=3 m=5\n"
        "input x: ramp start=-50 step=3\ninput a: ramp start=7 step=3\nexpect: closed-form\n```\n");
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: assign\ndtype: f32\nsizes: n=20 d=5 m=8\n"
        "input x: constant value=2\ninput a: constant value=-1\nexpect: closed-form\n```\n");
}

/* ---- reduce ---- */

static void reduce_oracle_knows_small_groups(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4};
    int32_t idx[4] = {0, 0, 1, 1};
    kcs_op_args args = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 4, .d = 1, .m = 3}};
    void *inputs[2] = {x, idx};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_reduce, &args, inputs, e);
    assert_true(e->values[0][0] == 2 && e->values[0][1] == 2 && e->values[0][2] == 0);
    assert_true(e->values[1][0] == 1.5 && e->values[1][1] == 3.5 && e->values[1][2] == 0);
    assert_true(e->values[2][0] == 0.25 && e->values[2][1] == 0.25 && e->values[2][2] == 0);
    assert_true(e->bounds[0][0] == 0 && e->bounds[1][2] == 0 &&
                e->bounds[2][2] == 0); /* exact: count, empty */
    /* a large mean and a small spread: {0.25, 0.5, 0.75, 1} above 4096, variance 5/64 exactly */
    float shifted[4] = {4096.25f, 4096.5f, 4096.75f, 4097.0f};
    int32_t one[4] = {0, 0, 0, 0};
    args.reduce.m = 1;
    inputs[0] = shifted;
    inputs[1] = one;
    expect_all(&kcs_op_reduce, &args, inputs, e);
    assert_true(e->values[1][0] == 4096.625 && e->values[2][0] == 5.0 / 64.0);
    free(e);
}

static void reduce_refuses_an_index_beyond_the_anchors(void **state)
{
    (void)state;
    float x[2] = {1, 2};
    int32_t idx[2] = {0, 3};
    kcs_op_args args = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 2, .d = 1, .m = 3}};
    void *inputs[2] = {x, idx};
    double values[3][3];
    kcs_expected e[3] = {{.count = 3, .values = values[0]},
                         {.count = 3, .values = values[1]},
                         {.count = 3, .values = values[2]}};
    kcs_error err;
    assert_int_equal(kcs_op_reduce.oracle(&args, inputs, e, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "idx[1] = 3 is not an anchor index"));
}

static void reduce_bounds_follow_the_derivation(void **state)
{
    (void)state;
    /* one anchor, 4 points of d = 1: D(4) = 3 */
    float x[4] = {4096.25f, 4096.5f, 4096.75f, 4097.0f};
    int32_t idx[4] = {0, 0, 0, 0};
    kcs_op_args args = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 4, .d = 1, .m = 1}};
    void *inputs[2] = {x, idx};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_reduce, &args, inputs, e);
    double m1 = 4096.625,
           rms = sqrt((4096.25 * 4096.25 + 4096.5 * 4096.5 + 4096.75 * 4096.75 + 4097.0 * 4097.0) /
                      4);
    double var = 5.0 / 64.0;
    double mean_hand = kcs_gamma(5, u32) * m1 + 2 * 0x1.0p-126 + 4 * u64 * m1;
    close_to(e->bounds[1][0], mean_hand, 1e-12);
    double mean_error = kcs_gamma(5, u32) * m1 + 2 * 0x1.0p-126;
    double g7 = kcs_gamma(7, u32);
    double var_hand = g7 * var / (1 - 4 * u64) + (1 + g7) * mean_error * mean_error +
                      2 * g7 * sqrt(var / (1 - 4 * u64)) * rms + 2 * 0x1.0p-126 + 4 * u64 * var;
    close_to(e->bounds[2][0], var_hand, 1e-9);
    /* tight against the textbook formula: E[x^2] near 1.7e7 holds steps of 2 in f32, so
     * E[x^2] - E[x]^2 is a multiple of 2 and misses 5/64 by at least 5/64, over 50 bounds */
    assert_true(e->bounds[2][0] < var / 50);
    free(e);
}

static void reduce_closed_forms_agree_with_the_oracle(void **state)
{
    (void)state;
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: reduce\ndtype: f32\nsizes: n=4096 d=4 m=3\n"
        "input x: ramp start=0 step=1\ninput idx: constant value=0\nexpect: closed-form\n```\n");
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: reduce\ndtype: f16\nsizes: n=50 d=3 m=4\n"
        "input x: ramp start=-75 step=1\ninput idx: constant value=3\nexpect: closed-form\n```\n");
    closed_form_matches_oracle(
        "```kcs-case\ncase: c\nop: reduce\ndtype: f16\nsizes: n=1000 d=3 m=4\n"
        "input x: constant value=0.1\ninput idx: constant value=2\nexpect: closed-form\n```\n");
}

/* ---- update ---- */

static void update_oracle_and_bounds(void **state)
{
    (void)state;
    float a[2] = {1, 1}, v[2] = {2, 2}, mean[2] = {3, 3};
    int32_t count[2] = {1, 0};
    kcs_op_args args = {
        .op = "update",
        .dtype = KCS_F32,
        .update = {.m = 2, .d = 1, .temperature = 0.5, .learning_rate = 0.25, .momentum = 0.5}};
    void *inputs[4] = {a, v, mean, count};
    expectation *e = calloc(1, sizeof *e);
    expect_all(&kcs_op_update, &args, inputs, e);
    /* occupied: v' = 0.5 * 2 + (3 - 1) = 3, a' = 1 + 0.125 * 3; empty: v' = 1, a' = 1.125 */
    assert_true(e->values[1][0] == 3 && e->values[0][0] == 1.375);
    assert_true(e->values[1][1] == 1 && e->values[0][1] == 1.125);
    double g2 = kcs_gamma(2, u32), g4 = kcs_gamma(4, u32), tiny = 0x1.0p-126;
    double v_hand = g2 * (1 + 2) + 2 * tiny;
    close_to(e->bounds[1][0], v_hand + 2 * u64 * 3, 1e-12);
    double product_error = 0.125 * v_hand + g4 * 0.125 * (3 * (1 + 2 * u64) + v_hand) + 2 * tiny;
    double a_hand =
        product_error * (1 + u32) + u32 * 1.375 / (1 - 2 * u64) + tiny + 2 * u64 * 1.375;
    close_to(e->bounds[0][0], a_hand, 1e-12);
    /* T = 0: the anchors stay, within one rounding of a (there is none to make) */
    args.update.temperature = 0;
    expect_all(&kcs_op_update, &args, inputs, e);
    assert_true(e->values[0][0] == 1 && e->values[0][1] == 1);
    assert_true(e->bounds[0][0] < 1.01 * u32);
    /* forgetting T would move them by lr v' = 0.75: a million times the bound */
    assert_true(0.75 > 1e6 * e->bounds[0][0]);
    free(e);
}

static void update_needs_its_parameters(void **state)
{
    (void)state;
    const char *text =
        "```kcs-case\ncase: c\nop: update\ndtype: f32\nsizes: m=2 d=3\n"
        "params: temperature=1 learning_rate=abc momentum=0\ninput a: normal\ninput v: normal\n"
        "input mean: normal\ninput count: integers lo=0 hi=2\nexpect: oracle\n```\n";
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "t.md", &list, NULL), KCS_OK);
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    kcs_error err;
    assert_int_equal(kcs_op_prepare(&list.cases[0], &op, &args, &layout, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "learning_rate=abc"));
    kcs_case_list_free(&list);
}

/* ---- energy ---- */

static double energy_of(const float *dist, size_t n, double *bound)
{
    kcs_op_args args = {.op = "energy", .dtype = KCS_F32, .energy = {.n = n}};
    double value;
    kcs_expected e = {.count = 1, .values = &value, .bounds = bound};
    void *inputs[1] = {(void *)dist};
    assert_int_equal(kcs_op_energy.oracle(&args, inputs, &e, NULL), KCS_OK);
    assert_int_equal(kcs_op_energy.bounds(&args, inputs, &e, NULL), KCS_OK);
    return value;
}

static void energy_oracle_and_bound(void **state)
{
    (void)state;
    double bound;
    float dist[4] = {1, 2, 3, 6};
    assert_true(energy_of(dist, 4, &bound) == 3);
    double hand = kcs_gamma(5, u64) * 3 * (1 + kcs_gamma(5, u64)) * (1 + u32) +
                  u32 * 3 / (1 - 2 * u64) + 0x1.0p-126 + 2 * u64 * 3;
    close_to(bound, hand * (1 + 0x1.0p-40), 1e-12);
    assert_true(isnan(energy_of(dist, 0, &bound)) && bound == 0); /* 0/0 */
    float special[3] = {1, INFINITY, 2};
    assert_true(energy_of(special, 3, &bound) == INFINITY);
    special[0] = -INFINITY;
    assert_true(isnan(energy_of(special, 3, &bound)));
    special[0] = NAN;
    assert_true(isnan(energy_of(special, 3, &bound)));
    /* tight: at n = 10^6 dividing by n - 1 is 1e-6 relative, the bound about 6e-8 */
    static float many[1000000];
    for (size_t i = 0; i < 1000000; i++)
        many[i] = (float)(i % 7);
    double e = energy_of(many, 1000000, &bound);
    assert_true(bound / e < 6.1e-8);
    assert_true(e / 999999.0 > 10 * bound);
}

static void energy_closed_forms(void **state)
{
    (void)state;
    closed_form_matches_oracle("```kcs-case\ncase: c\nop: energy\ndtype: f32\nsizes: n=1000001\n"
                               "input dist: ramp start=0 step=1\nexpect: closed-form\n```\n");
    closed_form_matches_oracle("```kcs-case\ncase: c\nop: energy\ndtype: f32\nsizes: n=999\n"
                               "input dist: constant value=0.1\nexpect: closed-form\n```\n");
}

/* Like expect_all, with the model called name of op in place of the op's oracle and bounds. */
static void expect_model(const kcs_op *op, const char *name, const kcs_op_args *args, void *inputs[],
                         expectation *x)
{
    const kcs_model *model = kcs_find_model(op, name);
    assert_non_null(model);
    kcs_layout layout;
    assert_int_equal(op->layout(args, &layout, NULL), KCS_OK);
    for (int o = 0; o < layout.output_count; o++)
        x->e[o] = (kcs_expected){.count = kcs_array_element_count(&layout.outputs[o]), .values = x->values[o],
                                 .bounds = x->bounds[o]};
    kcs_error err;
    if (model->expect(args, inputs, x->e, &err) != KCS_OK)
        fail_msg("%s", err.message);
}

/* The models of docs/anneal.md ("Arithmetic models") on answers known by hand. */
static void anneal_models_compute_their_arithmetic(void **state)
{
    (void)state;
    expectation *e = calloc(1, sizeof *e);
    /* assign: two anchors at the same distance, 1, from the point */
    float point[1] = {0}, anchors[2] = {-1, 1};
    kcs_op_args assign = {.op = "assign", .dtype = KCS_F32, .assign = {.n = 1, .d = 1, .m = 2}};
    void *assign_inputs[2] = {point, anchors};
    expect_model(&kcs_op_assign, "assign-ties-to-largest", &assign, assign_inputs, e);
    assert_true(e->values[0][0] == 1 && e->values[1][0] == 1 && e->bounds[0][0] == 0);
    /* squared, 1.0004 and 1.0002 round to the same f16, 1: the tie goes to the first anchor, the farther */
    anchors[0] = -1.0002f;
    anchors[1] = 1.0001f;
    expect_all(&kcs_op_assign, &assign, assign_inputs, e);
    assert_true(e->values[0][0] == 1);
    expect_model(&kcs_op_assign, "assign-f16-distances", &assign, assign_inputs, e);
    assert_true(e->values[0][0] == 0 && e->bounds[0][0] == 0);
    close_to(e->values[1][0], (double)anchors[0] * anchors[0], 1e-15);
    assert_true(e->bounds[1][0] > 0x1p-11 && e->bounds[1][0] < 0x1p-10);
    /* reduce: {1, 3} on anchor 0, {5} alone on anchor 1 */
    float x[3] = {1, 3, 5};
    int32_t idx[3] = {0, 0, 1};
    kcs_op_args reduce = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 3, .d = 1, .m = 3}};
    void *reduce_inputs[2] = {x, idx};
    expect_model(&kcs_op_reduce, "reduce-sample-variance", &reduce, reduce_inputs, e);
    assert_true(e->values[2][0] == 2.0 && isnan(e->values[2][1]) && e->values[2][2] == 0.0);
    assert_true(e->values[1][0] == 2.0 && e->values[0][1] == 1.0);
    expect_model(&kcs_op_reduce, "reduce-textbook-variance", &reduce, reduce_inputs, e);
    assert_true(e->values[2][0] == 1.0 && e->values[2][1] == 0.0);
    /* the textbook formula's bound grows with the mean squared, not with the variance */
    float shifted[4] = {4096.25f, 4096.5f, 4096.75f, 4097.0f};
    int32_t one[4] = {0, 0, 0, 0};
    kcs_op_args large_mean = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 4, .d = 1, .m = 1}};
    void *large_mean_inputs[2] = {shifted, one};
    expect_all(&kcs_op_reduce, &large_mean, large_mean_inputs, e);
    double own = e->bounds[2][0];
    expect_model(&kcs_op_reduce, "reduce-textbook-variance", &large_mean, large_mean_inputs, e);
    assert_true(e->bounds[2][0] > 4096.0 * 4096.0 * 0x1p-24 && e->bounds[2][0] > 100 * own);
    /* update at T = 0 without the temperature: a' = a + lr v' */
    float a[1] = {1}, v[1] = {0.5f}, mean[1] = {2};
    int32_t count[1] = {3};
    kcs_op_args update = {.op = "update",
                          .dtype = KCS_F32,
                          .update = {.m = 1, .d = 1, .temperature = 0, .learning_rate = 0.25, .momentum = 0.5}};
    void *update_inputs[4] = {a, v, mean, count};
    expect_model(&kcs_op_update, "update-ignores-temperature", &update, update_inputs, e);
    assert_true(e->values[1][0] == 1.25 && e->values[0][0] == 1.0 + 0.25 * 1.25);
    /* energy: 1 + 2 + 3 over 2 */
    float dist[3] = {1, 2, 3};
    kcs_op_args energy = {.op = "energy", .dtype = KCS_F32, .energy = {.n = 3}};
    void *energy_inputs[1] = {dist};
    expect_model(&kcs_op_energy, "energy-divides-by-n-minus-1", &energy, energy_inputs, e);
    assert_true(e->values[0][0] == 3.0 && e->bounds[0][0] > 0 && e->bounds[0][0] < 3 * 0x1p-23);
    free(e);
}

static void bytes_and_flops(void **state)
{
    (void)state;
    kcs_op_args assign = {.op = "assign", .dtype = KCS_F16, .assign = {.n = 10, .d = 4, .m = 3}};
    assert_true(kcs_op_assign.bytes(&assign) == 10 * 4 * 2 + 3 * 4 * 4 + 10 * 8);
    assert_true(kcs_op_assign.flops(&assign) == 3 * 10 * 3 * 4);
    kcs_op_args reduce = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 10, .d = 4, .m = 3}};
    assert_true(kcs_op_reduce.bytes(&reduce) == 10 * 4 * 4 + 10 * 4 + 3 * 4 + 2 * 3 * 4 * 4);
    kcs_op_args energy = {.op = "energy", .dtype = KCS_F32, .energy = {.n = 10}};
    assert_true(kcs_op_energy.bytes(&energy) == 44);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assign_oracle_finds_the_nearest),
        cmocka_unit_test(assign_bound_follows_the_derivation),
        cmocka_unit_test(assign_accepts_a_true_near_tie),
        cmocka_unit_test(assign_rejects_a_wrong_index_that_is_no_tie),
        cmocka_unit_test(assign_exact_ties_go_to_the_smallest_index),
        cmocka_unit_test(assign_finds_unwritten_outputs),
        cmocka_unit_test(assign_closed_forms_agree_with_the_oracle),
        cmocka_unit_test(reduce_oracle_knows_small_groups),
        cmocka_unit_test(reduce_refuses_an_index_beyond_the_anchors),
        cmocka_unit_test(reduce_bounds_follow_the_derivation),
        cmocka_unit_test(reduce_closed_forms_agree_with_the_oracle),
        cmocka_unit_test(update_oracle_and_bounds),
        cmocka_unit_test(update_needs_its_parameters),
        cmocka_unit_test(energy_oracle_and_bound),
        cmocka_unit_test(energy_closed_forms),
        cmocka_unit_test(anneal_models_compute_their_arithmetic),
        cmocka_unit_test(bytes_and_flops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
