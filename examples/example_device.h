/* example_device.h: how the examples open the device named on their command
 * line (--backend reference|opencl|cuda, --platform P, --device D), through
 * whichever kcs libraries the program is built with: the pkg-config file of
 * each device library defines KCS_HAS_<BACKEND> (docs/library.md). */
#ifndef KCS_EXAMPLE_DEVICE_H
#define KCS_EXAMPLE_DEVICE_H

#include <string.h>

#include <kcs/kcs_device.h>
#ifdef KCS_HAS_OPENCL
#include <kcs/kcs_device_opencl.h>
#endif
#ifdef KCS_HAS_CUDA
#include <kcs/kcs_device_cuda.h>
#endif

/* Opens backend's device (platform counts only for OpenCL). */
static inline kcs_status example_open(const char *backend, int platform, int device, kcs_context **context,
                                      kcs_error *err)
{
    if (strcmp(backend, "reference") == 0)
        return kcs_open_reference(context, err);
#ifdef KCS_HAS_OPENCL
    if (strcmp(backend, "opencl") == 0)
        return kcs_open_opencl(platform, device, context, err);
#endif
#ifdef KCS_HAS_CUDA
    if (strcmp(backend, "cuda") == 0)
        return kcs_open_cuda(device, context, err);
#endif
    (void)platform;
    (void)device;
    return kcs_fail(err, KCS_ERROR, "no backend '%s' in this program: it was built with reference%s%s "
                    "(its device libraries' pkg-config packages: kcs_opencl, kcs_cuda)", backend,
#ifdef KCS_HAS_OPENCL
                    ", opencl",
#else
                    "",
#endif
#ifdef KCS_HAS_CUDA
                    ", cuda"
#else
                    ""
#endif
    );
}

#endif
