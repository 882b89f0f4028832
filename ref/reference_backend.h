/* reference_backend.h: what the reference backend's kernel adapters share.
 *
 * Each ref/<op>.c holds the typed reference functions of one op (public,
 * in kcs_ref.h) and, at its end, the adapters that run them on the
 * reference backend's buffers; ref/backend.c lists the adapters in its
 * kernel table. Internal to ref/.
 */
#ifndef KCS_REFERENCE_BACKEND_H
#define KCS_REFERENCE_BACKEND_H

#include "backend.h"

/* The host memory behind a reference buffer. */
void *kcs_reference_buffer_data(kcs_buffer *buffer);

/* The monotonic clock in seconds, for kernel times. */
double kcs_reference_now(void);

/* Kernel adapters, one block per op (the signature of kcs_kernel.run). */
#define KCS_REFERENCE_KERNEL(name)                                                                 \
    kcs_status name(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],      \
                    kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err)

/* sumsq (ref/sumsq.c) */
KCS_REFERENCE_KERNEL(kcs_reference_sumsq_f32);
KCS_REFERENCE_KERNEL(kcs_reference_sumsq_f64);

/* gemm (ref/gemm.c) */
KCS_REFERENCE_KERNEL(kcs_reference_gemm_f32);
KCS_REFERENCE_KERNEL(kcs_reference_gemm_f64);

/* add, mul, relu, sigmoid (ref/elementwise.c) */
KCS_REFERENCE_KERNEL(kcs_reference_add_f32);
KCS_REFERENCE_KERNEL(kcs_reference_add_f64);
KCS_REFERENCE_KERNEL(kcs_reference_mul_f32);
KCS_REFERENCE_KERNEL(kcs_reference_mul_f64);
KCS_REFERENCE_KERNEL(kcs_reference_relu_f32);
KCS_REFERENCE_KERNEL(kcs_reference_relu_f64);
KCS_REFERENCE_KERNEL(kcs_reference_sigmoid_f32);
KCS_REFERENCE_KERNEL(kcs_reference_sigmoid_f64);

/* softmax (ref/softmax.c) */
KCS_REFERENCE_KERNEL(kcs_reference_softmax_f32);
KCS_REFERENCE_KERNEL(kcs_reference_softmax_f64);

/* assign, reduce, update, energy (ref/anneal.c) */
KCS_REFERENCE_KERNEL(kcs_reference_assign_f32);
KCS_REFERENCE_KERNEL(kcs_reference_assign_f16);
KCS_REFERENCE_KERNEL(kcs_reference_reduce_f32);
KCS_REFERENCE_KERNEL(kcs_reference_reduce_f16);
KCS_REFERENCE_KERNEL(kcs_reference_update_f32);
KCS_REFERENCE_KERNEL(kcs_reference_energy_f32);

#endif
