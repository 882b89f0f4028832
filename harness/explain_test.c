/* explain_test.c: naming the model that explains a failure (explain.h).
 *
 * A made-up op, y = x, with four models: y = 2x, y = 2x within a wider
 * bound (the same arithmetic, so indistinguishable from the first), y = x + 1
 * and one that never applies. Each test builds the prepared case by hand
 * and asks kcs_explain about an output built to fit some models and not
 * others; the cost cap on the elements tried is pinned too.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "explain.h"
#include "suite.h"

/* Fills values with f(x) and bounds with width, at the expected indices. */
static kcs_status fill(void *const inputs[], kcs_expected expected[], double scale, double shift, double width)
{
    const double *x = inputs[0];
    for (size_t k = 0; k < expected[0].count; k++) {
        size_t i = expected[0].indices ? expected[0].indices[k] : k;
        expected[0].values[k] = scale * x[i] + shift;
        expected[0].bounds[k] = width;
    }
    return KCS_OK;
}

static kcs_status doubles(const kcs_op_args *args, void *const inputs[], kcs_expected expected[], kcs_error *err)
{
    (void)args, (void)err;
    return fill(inputs, expected, 2.0, 0.0, 1e-12);
}

static kcs_status doubles_loosely(const kcs_op_args *args, void *const inputs[], kcs_expected expected[],
                                  kcs_error *err)
{
    (void)args, (void)err;
    return fill(inputs, expected, 2.0, 0.0, 1e-9);
}

static kcs_status adds_one(const kcs_op_args *args, void *const inputs[], kcs_expected expected[], kcs_error *err)
{
    (void)args, (void)err;
    return fill(inputs, expected, 1.0, 1.0, 1e-12);
}

static int never(const kcs_op_args *args)
{
    (void)args;
    return 0;
}

/* y = x, except that an element may be NaN, which only the output shows:
 * where the output is NaN, NaN (a choice the model takes from it). */
static kcs_status copies_or_nan(const kcs_op_args *args, void *const inputs[], void *const actual[],
                                kcs_expected expected[], kcs_error *err)
{
    (void)args, (void)err;
    const double *x = inputs[0], *y = actual[0];
    for (size_t k = 0; k < expected[0].count; k++) {
        size_t i = expected[0].indices ? expected[0].indices[k] : k;
        expected[0].values[k] = isnan(y[i]) ? NAN : x[i];
        expected[0].bounds[k] = 1e-12;
    }
    return KCS_OK;
}

static const kcs_model doubling = {"copy-doubles", "doubles x", NULL, doubles};
static const kcs_model doubling_loosely = {"copy-doubles-loosely", "doubles x, loosely", NULL, doubles_loosely};
static const kcs_model adding_one = {"copy-adds-one", "adds 1 to x", NULL, adds_one};
static const kcs_model absent = {"copy-never", "never applies", never, adds_one};

static const kcs_model seeing_nan = {"copy-nan-where-seen", "copies x or gives NaN", NULL, NULL, copies_or_nan};

static const kcs_model *const only_distinct[] = {&doubling, &adding_one, &absent, NULL};
static const kcs_model *const seeing[] = {&doubling, &seeing_nan, NULL};
static const kcs_model *const with_twin[] = {&doubling, &doubling_loosely, &adding_one, NULL};
static const kcs_model *const one_applying[] = {&adding_one, &absent, NULL};

/* A prepared case of n elements: x[i] = i + 1, and the op's own expected y = x within 1e-12. */
typedef struct {
    kcs_op op;
    kcs_prepared_case p;
    double *x, *y;
} made_case;

static void make(made_case *m, size_t n, const kcs_model *const *models)
{
    memset(m, 0, sizeof *m);
    m->op.name = "copy";
    m->op.models = models;
    m->p.op = &m->op;
    m->p.args.dtype = KCS_F64;
    m->p.layout.output_count = 1;
    kcs_vector_spec(&m->p.layout.outputs[0], "y", KCS_F64, n);
    m->x = malloc(n * sizeof *m->x);
    m->y = malloc(n * sizeof *m->y);
    m->p.inputs[0] = m->x;
    m->p.expected[0].count = n;
    m->p.expected[0].values = malloc(n * sizeof(double));
    m->p.expected[0].bounds = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        m->x[i] = (double)i + 1.0;
        m->p.expected[0].values[i] = m->x[i];
        m->p.expected[0].bounds[i] = 1e-12;
    }
}

static void explain(made_case *m, kcs_explanation *x)
{
    void *actual[KCS_MAX_OUTPUTS] = {m->y};
    kcs_error err = {{0}};
    assert_int_equal(kcs_explain(&m->p, actual, m->p.expected, x, &err), KCS_OK);
}

static void unmake(made_case *m)
{
    free(m->x);
    free(m->y);
    free(m->p.expected[0].values);
    free(m->p.expected[0].bounds);
}

static void one_fitting_model_is_named_alone(void **state)
{
    (void)state;
    made_case m;
    make(&m, 100, only_distinct);
    for (size_t i = 0; i < 100; i++)
        m.y[i] = 2.0 * m.x[i];
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.tried, 2); /* copy-never does not apply */
    assert_int_equal(x.fitting, 1);
    assert_string_equal(x.fits[0].model->name, "copy-doubles");
    assert_true(x.fits[0].fraction == 0.0);
    assert_false(x.fits[1].fits);
    assert_non_null(strstr(x.text, "consistent with: copy-doubles, doubles x (0 of its bound)"));
    assert_non_null(strstr(x.text, "no other of the 2 models tried fits"));
    unmake(&m);
}

static void an_output_no_model_fits_is_unexplained_with_the_closest(void **state)
{
    (void)state;
    made_case m;
    make(&m, 100, only_distinct);
    for (size_t i = 0; i < 100; i++)
        m.y[i] = 3.0 * m.x[i];
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.fitting, 0);
    assert_non_null(strstr(x.text, "unexplained: none of the 2 models of copy for f64 fits (closest: "));
    unmake(&m);
}

static void the_one_model_that_applies_is_named_when_it_does_not_fit(void **state)
{
    (void)state;
    made_case m;
    make(&m, 10, one_applying);
    for (size_t i = 0; i < 10; i++)
        m.y[i] = 3.0 * m.x[i];
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.tried, 1);
    assert_non_null(strstr(x.text, "unexplained: the one model of copy for f64, copy-adds-one, does not fit ("));
    unmake(&m);
}

static void models_with_the_same_arithmetic_are_indistinguishable(void **state)
{
    (void)state;
    made_case m;
    make(&m, 100, with_twin);
    for (size_t i = 0; i < 100; i++)
        m.y[i] = 2.0 * m.x[i];
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.fitting, 2);
    assert_true(x.indistinguishable);
    assert_non_null(strstr(x.text, "indistinguishable on this case"));
    unmake(&m);
}

static void an_op_without_models_says_so(void **state)
{
    (void)state;
    made_case m;
    make(&m, 10, NULL);
    for (size_t i = 0; i < 10; i++)
        m.y[i] = 0.0;
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.tried, 0);
    assert_string_equal(x.text, "unexplained: no model of copy applies to f64 (docs/explaining.md)");
    unmake(&m);
}

/* The failing elements come first and the rest are sampled: a model is judged
 * on at most KCS_EXPLAIN_MOST_FAILING + KCS_EXPLAIN_MOST_OTHERS elements, and a
 * model that fits only the elements that passed does not fit. */
static void the_elements_tried_are_capped_and_include_every_kind(void **state)
{
    (void)state;
    size_t n = 1000000;
    made_case m;
    make(&m, n, only_distinct);
    for (size_t i = 0; i < n; i++)
        m.y[i] = i % 2 ? 2.0 * m.x[i] : m.x[i]; /* odd elements doubled: they fail the op's bound */
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.elements, KCS_EXPLAIN_MOST_FAILING + KCS_EXPLAIN_MOST_OTHERS);
    assert_int_equal(x.fitting, 0); /* copy-doubles fails on the even elements it was also judged on */
    unmake(&m);
}

/* A model that takes a choice from the output (expect_seeing) is given the
 * whole output: here it fits an output of NaNs and copies, and not one whose
 * copies are wrong. */
static void a_model_may_take_a_choice_from_the_output(void **state)
{
    (void)state;
    made_case m;
    make(&m, 100, seeing);
    for (size_t i = 0; i < 100; i++)
        m.y[i] = i % 10 == 3 ? NAN : m.x[i];
    kcs_explanation x;
    explain(&m, &x);
    assert_int_equal(x.fitting, 1);
    assert_string_equal(x.fits[0].model->name, "copy-nan-where-seen");
    m.y[5] = 2.0 * m.x[5];
    explain(&m, &x);
    assert_int_equal(x.fitting, 0);
    /* and what --model judges against is the same */
    kcs_expected expected[KCS_MAX_OUTPUTS];
    kcs_error err = {{0}};
    void *actual[KCS_MAX_OUTPUTS] = {m.y};
    assert_int_equal(kcs_model_expected(&m.p, &seeing_nan, actual, m.p.expected, expected, &err), KCS_OK);
    assert_true(isnan(expected[0].values[3]) && expected[0].values[5] == m.x[5]);
    kcs_free_model_expected(expected);
    unmake(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_fitting_model_is_named_alone),
        cmocka_unit_test(an_output_no_model_fits_is_unexplained_with_the_closest),
        cmocka_unit_test(models_with_the_same_arithmetic_are_indistinguishable),
        cmocka_unit_test(the_one_model_that_applies_is_named_when_it_does_not_fit),
        cmocka_unit_test(an_op_without_models_says_so),
        cmocka_unit_test(the_elements_tried_are_capped_and_include_every_kind),
        cmocka_unit_test(a_model_may_take_a_choice_from_the_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
