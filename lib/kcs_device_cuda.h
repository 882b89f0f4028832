/* kcs_device_cuda.h: opening a CUDA device for kcs_device.h's calls (libkcs_cuda).
 *
 * The context makes its own non-blocking stream (and a cuBLAS handle bound
 * to it); every copy and kernel of kcs goes to that stream, which
 * kcs_context_queue returns as a cudaStream_t.
 */
#ifndef KCS_DEVICE_CUDA_H
#define KCS_DEVICE_CUDA_H

#include "kcs_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens CUDA device ordinal (as cudaSetDevice counts them). */
KCS_API kcs_status kcs_open_cuda(int ordinal, kcs_context **context, kcs_error *err);

#ifdef __cplusplus
}
#endif

#endif
