/* scale.c: launches opencl/scale.cl, y[i] = alpha * x[i] (docs/scale.md), for
 * every dtype of KCS_SCALE_TYPES (ref/kcs_ref_scale.h): one program per
 * precision, one work-item per element in work-groups of 256 (fewer where
 * the device allows fewer). f64 is skipped, with the reason, on a device
 * without cl_khr_fp64.
 *
 * Run only it: build/kcs run --backend opencl --cases tests/cases scale
 */
#include "kcs_opencl.h"
#include "kcs_ref_scale.h"

KCS_OPENCL_EMBEDDED_SOURCE(scale);

/* opencl/scale.cl for one dtype of the type list, built with its C type (float, double). */
#define PROGRAM(suffix, T, dtype) [dtype] = KCS_OPENCL_PROGRAM(scale, "-DKCS_SCALE_TYPE=" #T),
static const kcs_opencl_program programs[] = {KCS_SCALE_TYPES(PROGRAM)};

static KCS_KERNEL_SUPPORTS(scale_supports)
{
    if (args->dtype == KCS_F64 && !device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64");
    return KCS_OK;
}

static kcs_status enqueue(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                          kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &programs[args->dtype], "kcs_scale", &kernel, err);
    if (status != KCS_OK)
        return status;
    size_t group;
    if ((status = kcs_opencl_group_size(device, kernel, 256, &group, err)) != KCS_OK)
        return status;
    size_t n = args->scale.n, groups = n ? (n + group - 1) / group : 1;
    cl_float alpha_f32 = (cl_float)args->scale.alpha;
    cl_double alpha_f64 = args->scale.alpha;
    cl_ulong n_argument = n;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof inputs[0]->memory, &inputs[0]->memory), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof outputs[0]->memory, &outputs[0]->memory), err);
    if (args->dtype == KCS_F64)
        KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof alpha_f64, &alpha_f64), err);
    else
        KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof alpha_f32, &alpha_f32), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof n_argument, &n_argument), err);
    return kcs_opencl_launch(device, kernel, groups * group, group, events, err);
}

static KCS_KERNEL_RUN(scale_direct)
{
    return kcs_opencl_timed(enqueue, device, args, inputs, outputs, kernel_seconds, err);
}

#define ROW(suffix, T, dtype) {"scale", dtype, "direct", "one work-item per element", scale_direct, scale_supports},

static const kcs_kernel rows[] = {KCS_SCALE_TYPES(ROW)};

const kcs_kernel_table kcs_opencl_scale_kernels = KCS_KERNEL_TABLE(rows);
