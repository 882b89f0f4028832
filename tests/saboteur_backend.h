/* saboteur_backend.h: deliberately broken kernels for the harness's own tests. */
#ifndef KCS_SABOTEUR_BACKEND_H
#define KCS_SABOTEUR_BACKEND_H

#include "backend.h"

#include <stddef.h>

extern const kcs_backend kcs_reference_backend;

/* The reference backend's device and buffers with every op's broken kernels. */
kcs_backend kcs_saboteur_backend(void);

/* Copies a buffer to new host memory (*host, freed by the caller). */
kcs_status kcs_saboteur_fetch(kcs_device *device, kcs_buffer *buffer, size_t bytes, void **host,
                              kcs_error *err);

/* Copies host memory into a buffer. */
kcs_status kcs_saboteur_store(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                              kcs_error *err);

/* Each op's saboteurs (tests/saboteur_<op>.c), listed in saboteur_backend.c. */
extern const kcs_kernel kcs_saboteur_sumsq_kernels[];
extern const size_t kcs_saboteur_sumsq_kernel_count;
extern const kcs_kernel kcs_saboteur_gemm_kernels[];
extern const size_t kcs_saboteur_gemm_kernel_count;
extern const kcs_kernel kcs_saboteur_elementwise_kernels[];
extern const size_t kcs_saboteur_elementwise_kernel_count;
extern const kcs_kernel kcs_saboteur_softmax_kernels[];
extern const size_t kcs_saboteur_softmax_kernel_count;
extern const kcs_kernel kcs_saboteur_anneal_kernels[];
extern const size_t kcs_saboteur_anneal_kernel_count;

/* Kernels that hang, crash or fail like a device (tests/saboteur_faults.c);
 * not in kcs_saboteur_backend(), only in the runner's saboteur backend. */
extern const kcs_kernel kcs_saboteur_fault_kernels[];
extern const size_t kcs_saboteur_fault_kernel_count;

/* The saboteur backend as the runner's kcs-saboteur build lists it: every
 * op's saboteurs and the faults, filled in before main() runs. */
extern kcs_backend kcs_saboteur_runner_backend;

#endif
