/* saboteur_sumsq.c: broken sums of squares, each a mistake real kernels make.
 * The 16-bit rows run on the tenths cases (cases/sumsq.md), where both a
 * sum kept in the 16-bit type and a dropped element are outside the bound;
 * over a million 16-bit elements a dropped one is not (docs/sumsq.md). */
#include <stdlib.h>
#include <string.h>

#include "kcs_ref.h"
#include "saboteur_backend.h"

/* Writes one scalar of the case's dtype, value rounded once to it, to the output. */
static kcs_status store_result(kcs_device *device, const kcs_op_args *args, kcs_buffer *out,
                               double value, kcs_error *err)
{
    unsigned char element[sizeof(double)];
    kcs_store_element(element, args->dtype, 0, value);
    return kcs_saboteur_store(device, out, element, kcs_dtype_size(args->dtype), err);
}

/* The correct answer through the reference, on host data. */
static double correct_sum(const kcs_op_args *args, const void *x, size_t n)
{
    switch (args->dtype) {
    case KCS_F16: return kcs_widen_f16(kcs_ref_sumsq_f16(x, n));
    case KCS_BF16: return kcs_widen_bf16(kcs_ref_sumsq_bf16(x, n));
    case KCS_F32: return kcs_ref_sumsq_f32(x, n);
    default: return kcs_ref_sumsq_f64(x, n);
    }
}

/* value rounded once to the case's dtype, as a double. */
static double round_to_dtype(const kcs_op_args *args, double value)
{
    unsigned char element[sizeof(double)];
    kcs_store_element(element, args->dtype, 0, value);
    return kcs_load_element(element, args->dtype, 0);
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

/* What a vectorised loop without its remainder does: only whole 16-byte
 * vectors (2 f64, 4 f32, 8 f16 or bf16) are summed, the last n mod that
 * many elements left out. */
static kcs_status sumsq_drops_ragged_tail(kcs_device *device, const kcs_op_args *args,
                                          kcs_buffer *const in[], kcs_buffer *const out[],
                                          double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n, width = 16 / kcs_dtype_size(args->dtype);
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * kcs_dtype_size(args->dtype), &x, err);
    if (status == KCS_OK)
        status = store_result(device, args, out[0], correct_sum(args, x, n - n % width), err);
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

/* What a kernel written with half arithmetic does (__hfma(x, x, sum) in
 * __half or __nv_bfloat16): the running sum is rounded to the 16-bit type
 * after every element. The product and sum are exact in double here, so each
 * step rounds once, as the fused instruction does. */
static kcs_status sumsq_accumulates_in_storage_type(kcs_device *device, const kcs_op_args *args,
                                                    kcs_buffer *const in[], kcs_buffer *const out[],
                                                    double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * kcs_dtype_size(args->dtype), &x, err);
    double sum = 0.0;
    for (size_t i = 0; i < n && status == KCS_OK; i++) {
        double value = kcs_load_element(x, args->dtype, i);
        sum = round_to_dtype(args, value * value + sum);
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

#define WIDE_SABOTEUR(name, description, function)                                                 \
    {"sumsq", KCS_F64, name, description, function, NULL},                                         \
    {"sumsq", KCS_F32, name, description, function, NULL}

#define HALF_SABOTEUR(name, description, function)                                                 \
    {"sumsq", KCS_F16, name, description, function, NULL},                                         \
    {"sumsq", KCS_BF16, name, description, function, NULL}

#define SABOTEUR(name, description, function)                                                      \
    WIDE_SABOTEUR(name, description, function), HALF_SABOTEUR(name, description, function)

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/sumsq.txt says which saboteur must fail where):
 * kcs-saboteur-cases: sumsq/f64-n93 sumsq/f64-n1000003 sumsq/f32-n1000003 sumsq/f16-tenths sumsq/bf16-tenths */
static const kcs_kernel rows[] = {
    SABOTEUR("drops-last-element", "sums x[0..n-2]", sumsq_drops_last_element),
    SABOTEUR("drops-ragged-tail", "sums whole 16-byte vectors only, not the last n mod (16 / size) elements",
             sumsq_drops_ragged_tail),
    /* f32 is what the spec asks of the 16-bit types, a mistake only for the wider ones */
    WIDE_SABOTEUR("accumulates-in-float", "squares and sums in f32", sumsq_accumulates_in_float),
    HALF_SABOTEUR("accumulates-in-storage-type", "running sum rounded to the 16-bit type at every step",
                  sumsq_accumulates_in_storage_type),
    SABOTEUR("writes-nothing", "returns without writing the output", sumsq_writes_nothing),
    SABOTEUR("returns-zero", "writes 0", sumsq_returns_zero),
    SABOTEUR("overwrites-input", "right answer, but x[0] is left zeroed", sumsq_overwrites_input),
};

const kcs_kernel_table kcs_saboteur_sumsq_kernels = KCS_KERNEL_TABLE(rows);
