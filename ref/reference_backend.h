/* reference_backend.h: what the reference backend's kernel adapters share.
 *
 * Each ref/<op>.c holds the typed reference functions of one op (public,
 * in kcs_ref.h) and, at its end, the adapters that run them on the
 * reference backend's buffers and the table of their rows
 * (kcs_reference_<op>_kernels). Internal to ref/.
 */
#ifndef KCS_REFERENCE_BACKEND_H
#define KCS_REFERENCE_BACKEND_H

#include "backend.h"

/* The host memory behind a reference buffer. */
void *kcs_reference_buffer_data(kcs_buffer *buffer);

/* One step of a reference row, on the host memory of its buffers
 * (kcs_reference_buffer_data), inputs and outputs in the op's order. */
typedef kcs_status kcs_reference_step(const kcs_op_args *args, kcs_buffer *const inputs[],
                                      kcs_buffer *const outputs[], kcs_error *err);

/* The one path of every reference row's run, as kcs_opencl_timed is
 * OpenCL's: checks the buffers against the op's layout (kcs_check_buffers),
 * runs check (NULL: none; the preconditions of the inputs, reduce's indices,
 * left out of the time), then compute, timed on the calling thread's CPU
 * clock into *kernel_seconds. */
kcs_status kcs_reference_timed(kcs_reference_step *check, kcs_reference_step *compute, kcs_device *device,
                               const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                               double *kernel_seconds, kcs_error *err);

/* The head of a step's definition, parameters named as in kcs_reference_step. */
#define KCS_REFERENCE_STEP(name)                                                                   \
    kcs_status name(const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[], \
                    kcs_error *err)

/* Defines a row's run function, name: check (or NULL) and compute through kcs_reference_timed. */
#define KCS_REFERENCE_RUN(name, check, compute)                                                    \
    static KCS_KERNEL_RUN(name)                                                                    \
    {                                                                                              \
        return kcs_reference_timed(check, compute, device, args, inputs, outputs, kernel_seconds, err); \
    }

/* The calling thread's CPU time in seconds, for kernel times and the copy
 * ceiling. The reference runs on the calling thread, so this is the
 * kernel's own time: on a shared host, wall time would also count the
 * time other processes held the core, and two runs of the same kernel
 * would differ by the machine's load (docs/backends.md). */
double kcs_reference_cpu_seconds(void);

#endif
