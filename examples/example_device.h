/* example_device.h: how the examples open the device named on their command
 * line (--backend reference|opencl|cuda, --platform P, --device D), through
 * whichever kcs libraries this build has (KCS_EXAMPLE_HAS_<BACKEND>). */
#ifndef KCS_EXAMPLE_DEVICE_H
#define KCS_EXAMPLE_DEVICE_H

#include <string.h>

#include "kcs_device.h"
#ifdef KCS_EXAMPLE_HAS_OPENCL
#include "kcs_device_opencl.h"
#endif
#ifdef KCS_EXAMPLE_HAS_CUDA
#include "kcs_device_cuda.h"
#endif

/* Opens backend's device (platform counts only for OpenCL). */
static inline kcs_status example_open(const char *backend, int platform, int device, kcs_context **context,
                                      kcs_error *err)
{
    if (strcmp(backend, "reference") == 0)
        return kcs_open_reference(context, err);
#ifdef KCS_EXAMPLE_HAS_OPENCL
    if (strcmp(backend, "opencl") == 0)
        return kcs_open_opencl(platform, device, context, err);
#endif
#ifdef KCS_EXAMPLE_HAS_CUDA
    if (strcmp(backend, "cuda") == 0)
        return kcs_open_cuda(device, context, err);
#endif
    (void)platform;
    (void)device;
    return kcs_fail(err, KCS_ERROR, "no backend '%s' in this build (reference%s%s)", backend,
#ifdef KCS_EXAMPLE_HAS_OPENCL
                    ", opencl",
#else
                    "",
#endif
#ifdef KCS_EXAMPLE_HAS_CUDA
                    ", cuda"
#else
                    ""
#endif
    );
}

#endif
