/* update.c: the anneal update descriptor: for m anchors a_j of d
 * dimensions with velocities v_j, the means mean_j and counts count_j that
 * reduce produced, temperature T, learning rate lr and momentum mu (all f32):
 *
 *     v_next = mu * v + (mean - a)   where count_j > 0
 *     v_next = mu * v                where count_j = 0
 *     a_next = a + lr * T * v_next
 *
 * docs/anneal.md is the normative definition and derives the bounds: the
 * parameters are used as their f32 roundings; (mean - a) is formed first (so
 * that a point near convergence does not cancel against mu * v); each output
 * element is allowed the few roundings of its formula (gamma(2) for v_next,
 * gamma(4) for the product lr * T * v_next, one for the final addition),
 * relative to the magnitudes of its terms.
 *
 * The oracle carries each element in double-double and rounds it once. Its
 * arithmetic model (explain.h), a step without the temperature, is the op
 * at T = 1 (docs/anneal.md, "Arithmetic models").
 */
#include <errno.h>
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

static const char *const sizes[] = {"m", "d", NULL};
static const char *const params[] = {"temperature", "learning_rate", "momentum", NULL};
static const char *const inputs[] = {"a", "v", "mean", "count", NULL};
static const kcs_dtype dtypes[] = {KCS_F32, KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    args->update.m = (size_t)kcs_case_size(c, "m", 0);
    args->update.d = (size_t)kcs_case_size(c, "d", 0);
    if (kcs_case_number(c, "temperature", NAN, KCS_F32, &args->update.temperature, err) != KCS_OK ||
        kcs_case_number(c, "learning_rate", NAN, KCS_F32, &args->update.learning_rate, err) != KCS_OK ||
        kcs_case_number(c, "momentum", NAN, KCS_F32, &args->update.momentum, err) != KCS_OK)
        return KCS_ERROR;
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    size_t m = args->update.m, d = args->update.d;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 4;
    kcs_matrix_spec(&layout->inputs[0], "a", KCS_F32, m, d);
    kcs_matrix_spec(&layout->inputs[1], "v", KCS_F32, m, d);
    kcs_matrix_spec(&layout->inputs[2], "mean", KCS_F32, m, d);
    kcs_vector_spec(&layout->inputs[3], "count", KCS_I32, m);
    layout->output_count = 2;
    kcs_matrix_spec(&layout->outputs[0], "a_next", KCS_F32, m, d);
    kcs_matrix_spec(&layout->outputs[1], "v_next", KCS_F32, m, d);
    return KCS_OK;
}

/* One element's inputs, and its exact results in double-double. */
typedef struct {
    double a, v, mean;
    int occupied;             /* count > 0 */
    kcs_double_double v_next; /* mu v + (mean - a), or mu v */
    kcs_double_double a_next; /* a + (lr T) v_next */
} element;

static void exact_element(const kcs_op_args *args, void *const in[], size_t p, element *e)
{
    double mu = (float)args->update.momentum;
    double rate =
        (double)(float)args->update.learning_rate * (double)(float)args->update.temperature;
    size_t d = args->update.d;
    e->a = ((const float *)in[0])[p];
    e->v = ((const float *)in[1])[p];
    e->mean = ((const float *)in[2])[p];
    e->occupied = ((const int32_t *)in[3])[p / d] > 0;
    /* products of two f32 values are exact in double; the rest by TwoSum */
    double momentum_term = mu * e->v, difference_low = 0.0, difference = 0.0, sum_error;
    if (e->occupied)
        difference = kcs_two_sum(e->mean, -e->a, &difference_low);
    e->v_next.high = kcs_two_sum(momentum_term, difference, &sum_error);
    e->v_next.low = sum_error + difference_low;
    double product_error;
    double product = kcs_two_product(rate, e->v_next.high, &product_error);
    product_error += rate * e->v_next.low;
    e->a_next.high = kcs_two_sum(e->a, product, &sum_error);
    e->a_next.low = sum_error + product_error;
}

static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    for (int o = 0; o < 2; o++)
        for (size_t s = 0; s < expected[o].count; s++) {
            element e;
            exact_element(args, in, expected[o].indices ? expected[o].indices[s] : s, &e);
            kcs_double_double r = o == 0 ? e.a_next : e.v_next;
            expected[o].values[s] = r.high + r.low;
        }
    return KCS_OK;
}

/* docs/anneal.md: v_next within gamma(2) (|mu v| + |mean - a|); the product
 * lr T v_next within gamma(4) of its exact value on the computed v_next; a
 * final addition. 2^-126 terms for products and sums flushed below the
 * smallest normal; 2u64 |g| for the expected value's own rounding. */
static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                         kcs_error *err)
{
    (void)err;
    double u = kcs_unit_roundoff(KCS_F32), u64 = kcs_unit_roundoff(KCS_F64), tiny = 0x1.0p-126;
    double mu = fabs((double)(float)args->update.momentum);
    double rate =
        fabs((double)(float)args->update.learning_rate * (double)(float)args->update.temperature);
    for (int o = 0; o < 2; o++)
        for (size_t s = 0; s < expected[o].count; s++) {
            element e;
            exact_element(args, in, expected[o].indices ? expected[o].indices[s] : s, &e);
            double g = expected[o].values[s];
            double v_bound =
                kcs_gamma(2.0, u) * (mu * fabs(e.v) + (e.occupied ? fabs(e.mean - e.a) : 0.0)) +
                2.0 * tiny;
            double bound;
            if (o == 1) {
                bound = v_bound;
            } else {
                double v_next = fabs(e.v_next.high) * (1.0 + 2.0 * u64);
                double product_error =
                    rate * v_bound + kcs_gamma(4.0, u) * rate * (v_next + v_bound) + 2.0 * tiny;
                double a_next = fabs(g) / (1.0 - 2.0 * u64);
                bound = product_error * (1.0 + u) + u * a_next + tiny;
            }
            expected[o].bounds[s] =
                isfinite(g) ? kcs_bound_widen(bound + 2.0 * u64 * fabs(g)) : 0.0;
        }
    return KCS_OK;
}

/* Arithmetic models (explain.h; docs/anneal.md, "Arithmetic models"). */

/* A momentum step with no temperature, a_next = a + lr v_next, as an
 * optimizer's (torch.optim.SGD with momentum) computes it: the op with
 * T = 1, so its oracle and bound with T = 1. */
static int ignores_temperature_applies(const kcs_op_args *args)
{
    return (float)args->update.temperature != 1.0f;
}

static kcs_status ignores_temperature(const kcs_op_args *args, void *const in[], kcs_expected expected[],
                                      kcs_error *err)
{
    kcs_op_args without = *args;
    without.update.temperature = 1.0;
    kcs_status status = oracle(&without, in, expected, err);
    return status == KCS_OK ? bounds(&without, in, expected, err) : status;
}

static const kcs_model ignores_temperature_model = {
    "update-ignores-temperature", "moves the anchors by lr v_next, without the temperature (a momentum step)",
    ignores_temperature_applies, ignores_temperature};

static const kcs_model *const models[] = {&ignores_temperature_model, NULL};

static double bytes(const kcs_op_args *args)
{
    double cells = (double)args->update.m * (double)args->update.d;
    return 5.0 * 4.0 * cells + 4.0 * (double)args->update.m;
}

/* Per element: mu v, mean - a, their sum, the product with lr T, the addition to a. */
static double flops(const kcs_op_args *args)
{
    return 5.0 * (double)args->update.m * (double)args->update.d;
}

const kcs_op kcs_op_update = {
    .name = "update",
    .summary = "v' = mu v + (mean - a) for occupied anchors (mu v otherwise), a' = a + lr T v'",
    .sizes = sizes,
    .params = params,
    .inputs = inputs,
    .dtypes = dtypes,
    .parse_args = parse_args,
    .layout = layout,
    .oracle = oracle,
    .bounds = bounds,
    .bytes = bytes,
    .flops = flops,
    .models = models,
};
