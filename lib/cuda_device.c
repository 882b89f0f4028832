/* cuda_device.c: kcs_open_cuda (kcs_device_cuda.h), the CUDA backend
 * (cuda/backend.cu) opened as a library context. Plain C: the backend is
 * reached through its kcs_backend struct, like the runner reaches it. */
#include "context.h"
#include "kcs_device_cuda.h"

extern const kcs_backend kcs_cuda_backend; /* cuda/backend.cu */

kcs_status kcs_open_cuda(int ordinal, kcs_context **context, kcs_error *err)
{
    *context = NULL;
    int count = 0;
    kcs_status status = kcs_cuda_backend.device_count(&count, err);
    if (status != KCS_OK) {
        kcs_error_prefix(err, "kcs_open_cuda: no CUDA device");
        return status;
    }
    if (ordinal < 0 || ordinal >= count)
        return kcs_fail(err, KCS_ERROR, "kcs_open_cuda: there is no CUDA device %d (this machine has %d)",
                        ordinal, count);
    return kcs_context_open(&kcs_cuda_backend, ordinal, context, err);
}
