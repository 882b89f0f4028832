/* saboteur_faults.c: kernels that fail the way drivers do, not the way
 * arithmetic does: one never returns, one kills its process, one reports a
 * device error; and one whose result changes between runs, which only
 * --determinism catches; and one that is right but can be made slower on
 * demand, for the comparison's tests; and one that is right but can be made
 * slower, or made to flip one bit of its result, on demand, for the fleet's
 * test (a straggler and a silently corrupting device among identical ones). The runner must record each as an error (or
 * failure) of that case and go on with the rest (docs/runner.md,
 * "Isolation"). They are sumsq f64
 * rows only because a kernel must belong to some op; run them with
 * --time-limit short, as `ninja check` does. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "kcs_ref.h"
#include "reference_backend.h"
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

/* Computes on until the thread's CPU clock (the reference's own) reaches
 * target: a slower kernel, made so in time rather than in elements, because
 * extra elements still in the cache cost less than their share. */
static void work_until(double target)
{
    volatile double wasted = 0.0;
    for (double x = 1.0; kcs_reference_cpu_seconds() < target;)
        for (int i = 0; i < 1000; i++)
            wasted += (x = x * 1.0000001 + 1e-9);
}

/* The reference's kernel for op and dtype, run as it is (the saboteur
 * borrows the reference's device and buffers), and timed as it times itself
 * (CPU time); with KCS_SABOTEUR_SLOWDOWN=factor set, it then works on until
 * it has taken factor times as long: the planted slowdown that a comparison
 * of two runs must report (and, unset, the same kernel that two runs must not
 * call changed). The extra work is measured in time (work_until).
 * With flip_asked and KCS_SABOTEUR_FLIP_BIT set, the lowest bit of the first
 * output's first byte (the last mantissa bit of its first element) is then
 * flipped: within any bound, so that only a comparison of the output's bits
 * with an identical device's tells it apart (docs/fleet.md). */
static kcs_status fault_on_demand(const char *op, kcs_dtype dtype, int flip_asked, kcs_device *device,
                                  const kcs_op_args *args, kcs_buffer *const in[], kcs_buffer *const out[],
                                  double *seconds, kcs_error *err)
{
    const kcs_kernel *reference = kcs_backend_find_kernel(&kcs_reference_backend, op, dtype, NULL);
    if (!reference)
        return kcs_fail(err, KCS_ERROR, "the reference has no kernel for %s %s", op, kcs_dtype_name(dtype));
    const char *factor_text = getenv("KCS_SABOTEUR_SLOWDOWN");
    double factor = factor_text ? atof(factor_text) : 1.0;
    double start = kcs_reference_cpu_seconds();
    kcs_status status = reference->run(device, args, in, out, seconds, err);
    if (status == KCS_OK && factor > 1.0)
        work_until(start + factor * (kcs_reference_cpu_seconds() - start));
    *seconds = kcs_reference_cpu_seconds() - start;
    if (status == KCS_OK && flip_asked && getenv("KCS_SABOTEUR_FLIP_BIT")) {
        unsigned char *first;
        status = kcs_saboteur_fetch(device, out[0], 1, (void **)&first, err);
        if (status == KCS_OK) {
            first[0] ^= 1u;
            status = kcs_saboteur_store(device, out[0], first, 1, err);
        }
        free(first);
    }
    return status;
}

static kcs_status slow_down(const char *op, kcs_dtype dtype, kcs_device *device, const kcs_op_args *args,
                            kcs_buffer *const in[], kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    return fault_on_demand(op, dtype, 0, device, args, in, out, seconds, err);
}

static KCS_KERNEL_RUN(sumsq_slows_down)
{
    return slow_down("sumsq", KCS_F64, device, args, inputs, outputs, kernel_seconds, err);
}

static KCS_KERNEL_RUN(gemm_slows_down)
{
    return slow_down("gemm", KCS_F64, device, args, inputs, outputs, kernel_seconds, err);
}

/* The reference's GEMM, reported as taking THROTTLED_SECONDS from the
 * THROTTLE_AFTER-th run of the process on and FAST_SECONDS before: a GPU
 * whose clocks drop under sustained load. The times are the model's, not
 * measured, so that however busy the host the runner's warm-up is seen to
 * take the fast runs (tests/warm_up_test.sh). */
enum { THROTTLE_AFTER = 20 };
static const double FAST_SECONDS = 1e-3, THROTTLED_SECONDS = 4e-3;
static KCS_KERNEL_RUN(gemm_throttles)
{
    static int runs;
    const kcs_kernel *reference = kcs_backend_find_kernel(&kcs_reference_backend, "gemm", KCS_F64, NULL);
    if (!reference)
        return kcs_fail(err, KCS_ERROR, "the reference has no kernel for gemm f64");
    kcs_status status = reference->run(device, args, inputs, outputs, kernel_seconds, err);
    *kernel_seconds = ++runs > THROTTLE_AFTER ? THROTTLED_SECONDS : FAST_SECONDS;
    return status;
}

static KCS_KERNEL_RUN(gemm_faults_on_demand)
{
    return fault_on_demand("gemm", KCS_F64, 1, device, args, inputs, outputs, kernel_seconds, err);
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
    {"sumsq", KCS_F64, "slows-down", "the reference, slower by KCS_SABOTEUR_SLOWDOWN (a factor) when set",
     sumsq_slows_down, NULL},
};
const kcs_kernel_table kcs_fault_sumsq_kernels = KCS_KERNEL_TABLE(rows);

/* GEMM's, for a timed kernel whose data stays in the cache: its time varies
 * less with a shared machine's memory traffic than a sum over 16 MB does.
 * faults-on-demand is the fleet test's (tests/fleet_slurm_test.sh): one array
 * task sets its flip, another its slowdown, the third neither. */
static const kcs_kernel gemm_rows[] = {
    {"gemm", KCS_F64, "slows-down", "the reference, slower by KCS_SABOTEUR_SLOWDOWN (a factor) when set",
     gemm_slows_down, NULL},
    {"gemm", KCS_F64, "faults-on-demand",
     "the reference; slower by KCS_SABOTEUR_SLOWDOWN, last bit of C[0] flipped with KCS_SABOTEUR_FLIP_BIT",
     gemm_faults_on_demand, NULL},
    {"gemm", KCS_F64, "throttles", "the reference, reported 4 times as slow from the process's 20th run on (a "
     "GPU's clocks dropping under load)", gemm_throttles, NULL},
};
const kcs_kernel_table kcs_fault_gemm_kernels = KCS_KERNEL_TABLE(gemm_rows);
