/* scale.c: the scale descriptor, y[i] = alpha * x[i] (docs/scale.md).
 *
 * A deliberately small op: the tests add it (cases in tests/cases/scale.md)
 * to prove that a new op takes new files only (docs/adding-an-op.md). The
 * result is one multiply, correctly rounded in the case dtype, so the oracle
 * computes that rounding itself (an f32 product of two f32 is exact in
 * double) and the bound admits only it: half the gap to its neighbours.
 */
#include <math.h>
#include <string.h>

#include "bounds.h"
#include "op.h"
#include "kcs_ref_scale.h"

static const char *const sizes[] = {"n", NULL};
static const char *const params[] = {"alpha", NULL};
static const char *const inputs[] = {"x", NULL};
static const kcs_dtype dtypes[] = {KCS_SCALE_TYPES(KCS_DTYPE_OF) KCS_DTYPE_NONE};

static kcs_status parse_args(const kcs_case *c, kcs_op_args *args, kcs_error *err)
{
    args->scale.n = (size_t)kcs_case_size(c, "n", 0);
    if (kcs_case_number(c, "alpha", NAN, c->dtype, &args->scale.alpha, err) != KCS_OK)
        return KCS_ERROR;
    if (c->dtype == KCS_F32) /* rounded to the type, as a call receives it */
        args->scale.alpha = (double)(float)args->scale.alpha;
    return KCS_OK;
}

static kcs_status layout(const kcs_op_args *args, kcs_layout *layout, kcs_error *err)
{
    (void)err;
    memset(layout, 0, sizeof *layout);
    layout->input_count = 1;
    kcs_vector_spec(&layout->inputs[0], "x", args->dtype, args->scale.n);
    layout->output_count = 1;
    kcs_vector_spec(&layout->outputs[0], "y", args->dtype, args->scale.n);
    return KCS_OK;
}

/* alpha * x rounded once to the case dtype: exact in double for f32. */
static kcs_status oracle(const kcs_op_args *args, void *const in[], kcs_expected expected[], kcs_error *err)
{
    (void)err;
    kcs_expected *e = &expected[0];
    for (size_t t = 0; t < e->count; t++) {
        size_t i = e->indices ? e->indices[t] : t;
        double product = args->scale.alpha * kcs_load_element(in[0], args->dtype, i);
        e->values[t] = args->dtype == KCS_F32 ? (double)(float)product : product;
    }
    return KCS_OK;
}

static kcs_status bounds(const kcs_op_args *args, void *const in[], kcs_expected expected[], kcs_error *err)
{
    (void)in, (void)err;
    kcs_expected *e = &expected[0];
    for (size_t t = 0; t < e->count; t++)
        e->bounds[t] = isfinite(e->values[t]) ? kcs_correctly_rounded_bound(e->values[t], args->dtype) : 0.0;
    return KCS_OK;
}

static double bytes(const kcs_op_args *args)
{
    return 2.0 * (double)args->scale.n * (double)kcs_dtype_size(args->dtype);
}

static double flops(const kcs_op_args *args)
{
    return (double)args->scale.n;
}

/* One correctly rounded multiply: its bound is measured from the value of the type. */
static int bound_from_rounded(const kcs_op_args *args, int output)
{
    (void)args, (void)output;
    return 1;
}

const kcs_op kcs_op_scale = {
    .name = "scale",
    .summary = "y[i] = alpha * x[i], correctly rounded (the tests' proof that an op takes new files only)",
    .sizes = sizes,
    .params = params,
    .inputs = inputs,
    .dtypes = dtypes,
    .parse_args = parse_args,
    .layout = layout,
    .oracle = oracle,
    .bounds = bounds,
    .bound_from_rounded = bound_from_rounded,
    .bytes = bytes,
    .flops = flops,
};
