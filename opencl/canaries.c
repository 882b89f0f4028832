/* canaries.c: launches the canaries of opencl/canaries.cl, compiler and driver
 * bugs kcs has found, each a kernel row of an existing op named
 * "canary-<pattern>" (docs/canaries.md). A canary runs on the op's cases of at
 * most KCS_OPENCL_CANARY_MOST elements and skips larger ones, with that
 * reason: it is a test of the compiler, not a kernel to time. Where a device
 * is known to have the bug, expectations/known-bugs.txt expects the failure,
 * with the reason.
 *
 * Run only them: build/kcs run --backend opencl --kernel 'canary-*'
 */
#include "kcs_opencl.h"

/* The largest case a canary runs: enough for many work-groups, small enough to cost nothing. */
#define KCS_OPENCL_CANARY_MOST 65536

/* Work-group of opencl/canaries.cl (its KCS_CANARY_GROUP), and elements a work-item stages. */
#define KCS_OPENCL_CANARY_GROUP 64
#define KCS_OPENCL_CANARY_EACH 4

KCS_OPENCL_EMBEDDED_SOURCE(canaries);

static const kcs_opencl_program program = KCS_OPENCL_PROGRAM(canaries, "");

static KCS_KERNEL_SUPPORTS(canary_supports)
{
    (void)device;
    if (args->elementwise.n > KCS_OPENCL_CANARY_MOST)
        return kcs_fail(err, KCS_UNSUPPORTED, "a canary runs on cases of at most %d elements (docs/canaries.md)",
                        KCS_OPENCL_CANARY_MOST);
    return KCS_OK;
}

static kcs_status enqueue_zero_then_store(kcs_device *device, const kcs_op_args *args,
                                          kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                          kcs_opencl_events *events, kcs_error *err)
{
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &program, "kcs_canary_zero_then_store_relu", &kernel, err);
    if (status != KCS_OK)
        return status;
    size_t n = args->elementwise.n, per_group = KCS_OPENCL_CANARY_GROUP * KCS_OPENCL_CANARY_EACH;
    size_t groups = n ? (n + per_group - 1) / per_group : 1;
    cl_ulong n_argument = n;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof inputs[0]->memory, &inputs[0]->memory), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof outputs[0]->memory, &outputs[0]->memory), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof n_argument, &n_argument), err);
    return kcs_opencl_launch(device, kernel, groups * KCS_OPENCL_CANARY_GROUP, KCS_OPENCL_CANARY_GROUP, events,
                             err);
}

static KCS_KERNEL_RUN(canary_zero_then_store)
{
    return kcs_opencl_timed(enqueue_zero_then_store, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"relu", KCS_F32, "canary-zero-then-store",
     "compiler canary: positions staged as a store of 0, then a conditional store of the value",
     canary_zero_then_store, canary_supports},
};

const kcs_kernel_table kcs_opencl_canaries_kernels = KCS_KERNEL_TABLE(rows);
