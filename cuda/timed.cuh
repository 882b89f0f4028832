/* timed.cuh: the one path of every CUDA kernel row's run, as
 * kcs_opencl_timed is OpenCL's (opencl/backend.c).
 *
 * A run is two steps that the row writes, and the rest that the path does:
 *   1. kcs_cuda_begin: the buffers checked against the op's layout
 *      (kcs_check_buffers, harness/op.h) and the device made current;
 *   2. plan(): the row's host work, which must stay out of the timed region
 *      (limits, grid sizes, occupancy queries, scratch reservations, which
 *      may synchronize the device);
 *   3. launch(): the row's launches, between the timer's start and stop
 *      (kcs_cuda_timer_start and _stop, backend.cu, "Timing"); with
 *      kernel_seconds NULL (the library's asynchronous call) they are left
 *      on the stream. A launch that fails is drained (kcs_cuda_drain): its
 *      hold released and the stream waited for, so that the next run starts
 *      on an idle stream.
 * plan and launch are callables returning kcs_status, usually lambdas that
 * capture the run's variables (and its err, for KCS_CUDA_CHECK) by reference.
 *
 * Included at the end of common.cuh, and by the host emulation
 * (tests/cuda_kernels_emulation.h) after its own stand-ins for the
 * functions declared there.
 */
#ifndef KCS_CUDA_TIMED_CUH
#define KCS_CUDA_TIMED_CUH

/* launch() timed on the device's stream into *kernel_seconds (NULL: not
 * waited for); a launch that fails is drained. The timed part of
 * kcs_cuda_timed, and the whole of a measurement that has no buffers (the
 * ceilings, cuda/ceilings.cu). */
template <typename Launch>
kcs_status kcs_cuda_time_launches(kcs_device *device, double *kernel_seconds, kcs_error *err, Launch &&launch)
{
    kcs_status status = kcs_cuda_timer_start(device, kernel_seconds, err);
    if (status != KCS_OK)
        return status;
    status = launch();
    if (status != KCS_OK)
        return kcs_cuda_drain(device, status);
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}

/* One run of a kernel row: begin, plan, then launch timed (see above). */
template <typename Plan, typename Launch>
kcs_status kcs_cuda_timed(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                          kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err, Plan &&plan,
                          Launch &&launch)
{
    kcs_status status = kcs_cuda_begin(device, args, inputs, outputs, err);
    if (status == KCS_OK)
        status = plan();
    if (status != KCS_OK)
        return status;
    return kcs_cuda_time_launches(device, kernel_seconds, err, launch);
}

#endif
