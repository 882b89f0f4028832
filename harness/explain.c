/* explain.c: trying an op's arithmetic models on a failed output (see explain.h). */
#include "explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "suite.h"

const kcs_model *kcs_find_model(const kcs_op *op, const char *name)
{
    for (int m = 0; op->models && op->models[m]; m++)
        if (strcmp(op->models[m]->name, name) == 0)
            return op->models[m];
    return NULL;
}

void kcs_model_names(const kcs_op *op, char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    for (int m = 0; op->models && op->models[m] && used < size; m++)
        used += (size_t)snprintf(text + used, size - used, "%s%s", m ? ", " : "", op->models[m]->name);
    if (!text[0])
        snprintf(text, size, "none");
}

/* Allocates expected[o] for count elements at indices (copied; NULL: every element in order). */
static kcs_status allocate_expected(kcs_expected *expected, size_t count, const size_t *indices, kcs_error *err)
{
    size_t room = count ? count : 1;
    expected->count = count;
    expected->values = malloc(room * sizeof *expected->values);
    expected->bounds = malloc(room * sizeof *expected->bounds);
    expected->indices = NULL;
    if (indices) {
        expected->indices = malloc(room * sizeof *expected->indices);
        if (expected->indices)
            memcpy(expected->indices, indices, count * sizeof *indices);
    }
    if (!expected->values || !expected->bounds || (indices && !expected->indices))
        return kcs_fail(err, KCS_ERROR, "cannot allocate the expected values of a model");
    return KCS_OK;
}

void kcs_free_model_expected(kcs_expected expected[])
{
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        free(expected[o].indices);
        expected[o].indices = NULL;
    }
    kcs_free_expected(expected);
}

kcs_status kcs_model_expected(const kcs_prepared_case *p, const kcs_model *model, void *const actual[],
                              const kcs_expected op_expected[], kcs_expected expected[], kcs_error *err)
{
    memset(expected, 0, KCS_MAX_OUTPUTS * sizeof *expected);
    kcs_status status = KCS_OK;
    for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++)
        status = allocate_expected(&expected[o], op_expected[o].count, op_expected[o].indices, err);
    if (status == KCS_OK)
        status = model->expect_seeing ? model->expect_seeing(&p->args, p->inputs, actual, expected, err)
                                      : model->expect(&p->args, p->inputs, expected, err);
    if (status != KCS_OK)
        kcs_free_model_expected(expected);
    return status;
}

/* The elements of output o that models are judged on: the first
 * KCS_EXPLAIN_MOST_FAILING outside the op's bound (or never written), then
 * up to KCS_EXPLAIN_MOST_OTHERS of the rest, evenly spread; indices into
 * the output, in increasing order. */
static kcs_status choose_elements(const kcs_prepared_case *p, int o, void *const actual[], const kcs_expected *e,
                                  size_t **chosen, size_t *count, kcs_error *err)
{
    const kcs_array_spec *spec = &p->layout.outputs[o];
    size_t room = KCS_EXPLAIN_MOST_FAILING + KCS_EXPLAIN_MOST_OTHERS;
    *chosen = malloc(room * sizeof **chosen);
    unsigned char *taken = calloc(e->count ? e->count : 1, 1);
    if (!*chosen || !taken) {
        free(taken);
        return kcs_fail(err, KCS_ERROR, "cannot allocate the elements to explain");
    }
    size_t failing = 0, others = 0;
    for (size_t k = 0; k < e->count && failing < KCS_EXPLAIN_MOST_FAILING; k++) {
        size_t index = e->indices ? e->indices[k] : k;
        if (kcs_is_poison(actual[o], spec->dtype, index) ||
            !(kcs_check_element(spec->dtype, e->values[k], e->bounds[k],
                                kcs_load_element(actual[o], spec->dtype, index)) <= 1.0)) {
            taken[k] = 1;
            failing++;
        }
    }
    size_t rest = e->count - failing;
    size_t step = rest > KCS_EXPLAIN_MOST_OTHERS ? rest / KCS_EXPLAIN_MOST_OTHERS : 1;
    for (size_t k = 0, seen = 0; k < e->count && others < KCS_EXPLAIN_MOST_OTHERS; k++) {
        if (taken[k])
            continue;
        if (seen++ % step == 0) {
            taken[k] = 2;
            others++;
        }
    }
    *count = 0;
    for (size_t k = 0; k < e->count; k++)
        if (taken[k])
            (*chosen)[(*count)++] = e->indices ? e->indices[k] : k;
    free(taken);
    return KCS_OK;
}

/* Whether every value one model predicts lies within the other's bound, both ways round. */
static int within_each_other(const kcs_prepared_case *p, const kcs_expected a[], const kcs_expected b[])
{
    for (int o = 0; o < p->layout.output_count; o++)
        for (size_t k = 0; k < a[o].count; k++) {
            double x = a[o].values[k], y = b[o].values[k];
            if (isnan(x) || isnan(y)) {
                if (isnan(x) != isnan(y))
                    return 0;
                continue;
            }
            if (isinf(x) || isinf(y)) {
                if (x != y)
                    return 0;
                continue;
            }
            double difference = fabs(x - y);
            if (difference > a[o].bounds[k] || difference > b[o].bounds[k])
                return 0;
        }
    return 1;
}

/* Orders fits: those that fit first, then by fraction, then by name. */
static int by_fit(const void *left, const void *right)
{
    const kcs_model_fit *a = left, *b = right;
    if (a->fits != b->fits)
        return b->fits - a->fits;
    if (a->fraction != b->fraction)
        return a->fraction < b->fraction ? -1 : 1;
    return strcmp(a->model->name, b->model->name);
}

/* A fraction as the text says it: "0.62 of its bound"; an infinite one is an
 * error against a bound of 0, a wrong class of value or an unwritten element. */
static void say_fraction(double fraction, char *text, size_t size)
{
    if (isinf(fraction) || isnan(fraction))
        snprintf(text, size, "outside a bound of 0, or a wrong class of value or an unwritten element");
    else
        snprintf(text, size, "%.2g of its bound", fraction);
}

static void write_text(const kcs_prepared_case *p, kcs_explanation *x)
{
    size_t used = 0, size = sizeof x->text;
    char fraction[96];
    if (x->tried == 0) {
        snprintf(x->text, size, "unexplained: no model of %s applies to %s (docs/explaining.md)", p->op->name,
                 kcs_dtype_name(p->args.dtype));
        return;
    }
    if (x->fitting == 0) {
        say_fraction(x->fits[0].fraction, fraction, sizeof fraction);
        if (x->tried == 1)
            snprintf(x->text, size, "unexplained: the one model of %s for %s, %s, does not fit (%s)", p->op->name,
                     kcs_dtype_name(p->args.dtype), x->fits[0].model->name, fraction);
        else
            snprintf(x->text, size, "unexplained: none of the %d models of %s for %s fits (closest: %s, %s)",
                     x->tried, p->op->name, kcs_dtype_name(p->args.dtype), x->fits[0].model->name, fraction);
        return;
    }
    used += (size_t)snprintf(x->text + used, size - used, "consistent with: ");
    for (int f = 0; f < x->fitting && used < size; f++) {
        say_fraction(x->fits[f].fraction, fraction, sizeof fraction);
        used += (size_t)snprintf(x->text + used, size - used, "%s%s, %s (%s)", f ? "; " : "", x->fits[f].model->name,
                                 x->fits[f].model->description, fraction);
    }
    if (used >= size)
        return;
    if (x->fitting == 1)
        snprintf(x->text + used, size - used, "; no other of the %d models tried fits", x->tried);
    else if (x->indistinguishable)
        snprintf(x->text + used, size - used,
                 "; indistinguishable on this case: each model's outputs lie within the other's bound on "
                 "every element tried");
    else
        snprintf(x->text + used, size - used, "; this case does not tell them apart");
}

kcs_status kcs_explain(const kcs_prepared_case *p, void *const actual[], const kcs_expected expected[],
                       kcs_explanation *explanation, kcs_error *err)
{
    memset(explanation, 0, sizeof *explanation);
    kcs_expected chosen[KCS_MAX_OUTPUTS];
    memset(chosen, 0, sizeof chosen);
    kcs_status status = KCS_OK;
    for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++) {
        status = choose_elements(p, o, actual, &expected[o], &chosen[o].indices, &chosen[o].count, err);
        explanation->elements += chosen[o].count;
    }
    /* the predictions of the models that fit, kept to compare them with each other */
    kcs_expected kept[KCS_MAX_MODELS][KCS_MAX_OUTPUTS];
    int kept_count = 0;
    for (int m = 0; status == KCS_OK && p->op->models && p->op->models[m]; m++) {
        const kcs_model *model = p->op->models[m];
        if (model->applies && !model->applies(&p->args))
            continue;
        if (explanation->tried == KCS_MAX_MODELS) {
            status = kcs_fail(err, KCS_ERROR, "op %s has more than %d models", p->op->name, KCS_MAX_MODELS);
            break;
        }
        kcs_expected predicted[KCS_MAX_OUTPUTS];
        status = kcs_model_expected(p, model, actual, chosen, predicted, err);
        if (status != KCS_OK)
            break;
        kcs_check_result check;
        kcs_check_outputs(&p->layout, actual, predicted, &check);
        kcs_model_fit *fit = &explanation->fits[explanation->tried++];
        fit->model = model;
        fit->fits = check.passed;
        fit->fraction = check.fraction;
        fit->outside = check.failures;
        if (check.passed) {
            explanation->fitting++;
            memcpy(kept[kept_count++], predicted, sizeof predicted);
        } else {
            kcs_free_model_expected(predicted);
        }
    }
    if (status == KCS_OK && kept_count > 1) {
        explanation->indistinguishable = 1;
        for (int a = 0; a < kept_count; a++)
            for (int b = a + 1; b < kept_count; b++)
                explanation->indistinguishable &= within_each_other(p, kept[a], kept[b]);
    }
    for (int k = 0; k < kept_count; k++)
        kcs_free_model_expected(kept[k]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++)
        free(chosen[o].indices);
    if (status != KCS_OK)
        return status;
    qsort(explanation->fits, (size_t)explanation->tried, sizeof explanation->fits[0], by_fit);
    write_text(p, explanation);
    return KCS_OK;
}

void kcs_explain_failure(const struct kcs_prepared_case *p, void *const actual[], const kcs_expected expected[],
                         kcs_explanation *explanation)
{
    kcs_error err = {{0}};
    if (kcs_explain(p, actual, expected, explanation, &err) != KCS_OK) {
        memset(explanation, 0, sizeof *explanation);
        snprintf(explanation->text, sizeof explanation->text, "not explained: %s", err.message);
    }
}
