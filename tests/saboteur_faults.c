/* saboteur_faults.c: kernels that fail the way drivers do, not the way
 * arithmetic does: one never returns, one kills its process, one reports a
 * device error. The runner must record each as an error of that case and
 * go on with the rest (docs/runner.md, "Isolation"). They are sumsq f64
 * rows only because a kernel must belong to some op; run them with
 * --time-limit short, as `ninja check` does. */
#include <signal.h>
#include <time.h>

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

const kcs_kernel kcs_saboteur_fault_kernels[] = {
    {"sumsq", KCS_F64, "hangs", "never returns", hangs, NULL},
    {"sumsq", KCS_F64, "crashes", "raises SIGSEGV", crashes, NULL},
    {"sumsq", KCS_F64, "device-error", "fails as a device out of resources", reports_device_error, NULL},
};
const size_t kcs_saboteur_fault_kernel_count =
    sizeof kcs_saboteur_fault_kernels / sizeof kcs_saboteur_fault_kernels[0];
