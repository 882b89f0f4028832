/* saboteur_faults.c: kernels that fail the way drivers do, not the way
 * arithmetic does: one never returns, one kills its process, one reports a
 * device error; and one whose result changes between runs, which only
 * --determinism catches; and one that is right but can be made slower on
 * demand, for the comparison's tests. The runner must record each as an error (or
 * failure) of that case and go on with the rest (docs/runner.md,
 * "Isolation"). They are sumsq f64
 * rows only because a kernel must belong to some op; run them with
 * --time-limit short, as `ninja check` does. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "kcs_ref.h"
#include "saboteur_backend.h"

static kcs_status hangs(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                        kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    (void)device, (void)args, (void)in, (void)out, (void)seconds, (void)err;
    for (volatile int forever = 1; forever;) { /* a kernel that never finishes, as a hung GPU does */
        struct timespec hour = {3600, 0};
        nanosleep(&hour, NULL);
    }
    return KCS_OK;
}

static kcs_status crashes(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                          kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    (void)device, (void)args, (void)in, (void)out, (void)seconds, (void)err;
    raise(SIGSEGV); /* as a driver that dereferences a bad pointer */
    return KCS_OK;
}

static kcs_status reports_device_error(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                       kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    (void)device, (void)args, (void)in, (void)out, (void)seconds;
    return kcs_fail(err, KCS_ERROR, "clEnqueueNDRangeKernel failed: CL_OUT_OF_RESOURCES (-5) (simulated)");
}

static kcs_status varies_between_runs(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                      kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    /* Within the bound every time, but never the same bits twice: what an
     * unordered atomic reduction does. Only --determinism can catch it. */
    static unsigned calls;
    void *x;
    size_t n = args->sumsq.n;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * sizeof(double), &x, err);
    double sum = 0.0;
    for (size_t i = 0; status == KCS_OK && i < n; i++)
        sum += ((double *)x)[i] * ((double *)x)[i];
    sum = (calls++ % 2) ? nextafter(sum, INFINITY) : sum;
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], &sum, sizeof sum, err);
    free(x);
    *seconds = 0;
    return status;
}

static kcs_status reads_past_the_end(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                     kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    /* Sums x[0..n] inclusive: one element too many, as a loop bound of <= or
     * an unchecked vector tail does. The harness's guard after x is a
     * signalling NaN, so the result is a NaN with its payload. */
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], (n + 1) * sizeof(double), &x, err);
    double sum = 0.0;
    for (size_t i = 0; status == KCS_OK && i <= n; i++)
        sum += ((double *)x)[i] * ((double *)x)[i];
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], &sum, sizeof sum, err);
    free(x);
    *seconds = 0;
    return status;
}

static kcs_status writes_past_the_end(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                      kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    /* The right sum, but stored twice: into s and into the element after it. */
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * sizeof(double), &x, err);
    double sum[2] = {0.0, 0.0};
    for (size_t i = 0; status == KCS_OK && i < n; i++)
        sum[0] += ((double *)x)[i] * ((double *)x)[i];
    sum[1] = sum[0];
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], sum, sizeof sum, err);
    free(x);
    *seconds = 0;
    return status;
}

/* The right sum of squares, timed on the host's clock, with (factor - 1) x n
 * more elements' work added when KCS_SABOTEUR_SLOWDOWN=factor is set: the
 * planted slowdown that a comparison of two runs must report (and, unset,
 * the same kernel that two runs must not call changed). */
static kcs_status slows_down(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                             kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    size_t n = args->sumsq.n;
    void *x;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * sizeof(double), &x, err);
    if (status != KCS_OK)
        return status;
    const char *factor_text = getenv("KCS_SABOTEUR_SLOWDOWN");
    double factor = factor_text ? atof(factor_text) : 1.0;
    size_t extra = factor > 1.0 ? (size_t)((factor - 1.0) * (double)n) : 0;
    struct timespec start, stop;
    clock_gettime(CLOCK_MONOTONIC, &start);
    double sum = kcs_ref_sumsq_f64(x, n);
    volatile double wasted = extra ? kcs_ref_sumsq_f64(x, extra < n ? extra : n) : 0.0;
    (void)wasted;
    clock_gettime(CLOCK_MONOTONIC, &stop);
    *seconds = (double)(stop.tv_sec - start.tv_sec) + 1e-9 * (double)(stop.tv_nsec - start.tv_nsec);
    status = kcs_saboteur_store(device, out[0], &sum, sizeof sum, err);
    free(x);
    return status;
}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/faults.txt says which saboteur must fail where):
 * kcs-saboteur-cases: sumsq/f64-n93 */
static const kcs_kernel rows[] = {
    {"sumsq", KCS_F64, "reads-past-the-end", "sums x[0..n], one element too many", reads_past_the_end, NULL},
    {"sumsq", KCS_F64, "writes-past-the-end", "stores s twice, the second past the end", writes_past_the_end,
     NULL},
    {"sumsq", KCS_F64, "varies-between-runs", "last bit differs from call to call", varies_between_runs, NULL},
    {"sumsq", KCS_F64, "hangs", "never returns", hangs, NULL},
    {"sumsq", KCS_F64, "crashes", "raises SIGSEGV", crashes, NULL},
    {"sumsq", KCS_F64, "device-error", "fails as a device out of resources", reports_device_error, NULL},
    {"sumsq", KCS_F64, "slows-down", "right, and slower by KCS_SABOTEUR_SLOWDOWN (a factor) when set", slows_down,
     NULL},
};
const kcs_kernel_table kcs_fault_sumsq_kernels = KCS_KERNEL_TABLE(rows);
