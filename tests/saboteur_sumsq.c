/* saboteur_sumsq.c: broken sums of squares, each a mistake real kernels make. */
#include <stdlib.h>
#include <string.h>

#include "kcs_ref.h"
#include "saboteur_backend.h"

/* Writes one scalar of the case's dtype to the output. */
static kcs_status store_result(kcs_device *device, const kcs_op_args *args, kcs_buffer *out,
                               double value, kcs_error *err)
{
    float single = (float)value;
    if (args->dtype == KCS_F32)
        return kcs_saboteur_store(device, out, &single, sizeof single, err);
    return kcs_saboteur_store(device, out, &value, sizeof value, err);
}

/* The correct answer through the reference, on host data. */
static double correct_sum(const kcs_op_args *args, const void *x, size_t n)
{
    return args->dtype == KCS_F32 ? (double)kcs_ref_sumsq_f32(x, n) : kcs_ref_sumsq_f64(x, n);
}

static kcs_status sumsq_drops_last_element(kcs_device *device, const kcs_op_args *args,
                                           kcs_buffer *const in[], kcs_buffer *const out[],
                                           double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * kcs_dtype_size(args->dtype), &x, err);
    if (status == KCS_OK)
        status = store_result(device, args, out[0], correct_sum(args, x, n ? n - 1 : 0), err);
    free(x);
    *seconds = 0;
    return status;
}

static kcs_status sumsq_accumulates_in_float(kcs_device *device, const kcs_op_args *args,
                                             kcs_buffer *const in[], kcs_buffer *const out[],
                                             double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * kcs_dtype_size(args->dtype), &x, err);
    float sum = 0.0f;
    for (size_t i = 0; i < n && status == KCS_OK; i++) {
        float value = (float)kcs_load_element(x, args->dtype, i);
        sum += value * value;
    }
    if (status == KCS_OK)
        status = store_result(device, args, out[0], sum, err);
    free(x);
    *seconds = 0;
    return status;
}

static kcs_status sumsq_writes_nothing(kcs_device *device, const kcs_op_args *args,
                                       kcs_buffer *const in[], kcs_buffer *const out[],
                                       double *seconds, kcs_error *err)
{
    (void)device, (void)args, (void)in, (void)out, (void)err;
    *seconds = 0;
    return KCS_OK;
}

static kcs_status sumsq_returns_zero(kcs_device *device, const kcs_op_args *args,
                                     kcs_buffer *const in[], kcs_buffer *const out[],
                                     double *seconds, kcs_error *err)
{
    (void)in;
    *seconds = 0;
    return store_result(device, args, out[0], 0.0, err);
}

static kcs_status sumsq_overwrites_input(kcs_device *device, const kcs_op_args *args,
                                         kcs_buffer *const in[], kcs_buffer *const out[],
                                         double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n, bytes = n * kcs_dtype_size(args->dtype);
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    if (status == KCS_OK)
        status = store_result(device, args, out[0], correct_sum(args, x, n), err);
    if (status == KCS_OK && n > 0) { /* uses x as scratch space and leaves it changed */
        memset(x, 0, kcs_dtype_size(args->dtype));
        status = kcs_saboteur_store(device, in[0], x, bytes, err);
    }
    free(x);
    *seconds = 0;
    return status;
}

#define SABOTEUR(name, description, function)                                                      \
    {"sumsq", KCS_F64, name, description, function, NULL},                                         \
    {"sumsq", KCS_F32, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/sumsq.txt says which saboteur must fail where):
 * kcs-saboteur-cases: sumsq/f64-n93 sumsq/f64-n1000003 sumsq/f32-n1000003 */
static const kcs_kernel rows[] = {
    SABOTEUR("drops-last-element", "sums x[0..n-2]", sumsq_drops_last_element),
    SABOTEUR("accumulates-in-float", "squares and sums in f32", sumsq_accumulates_in_float),
    SABOTEUR("writes-nothing", "returns without writing the output", sumsq_writes_nothing),
    SABOTEUR("returns-zero", "writes 0", sumsq_returns_zero),
    SABOTEUR("overwrites-input", "right answer, but x[0] is left zeroed", sumsq_overwrites_input),
};

const kcs_kernel_table kcs_saboteur_sumsq_kernels = KCS_KERNEL_TABLE(rows);
