/* opencl_device.c: kcs_open_opencl (kcs_device_opencl.h), the OpenCL backend
 * (opencl/backend.c) opened as a library context.
 *
 * The backend numbers its devices platform by platform (every device of
 * platform 0, then of platform 1, ...); this turns a (platform, device) pair
 * into that number, counting devices the same way (CL_DEVICE_TYPE_ALL).
 */
#include <stdlib.h>

#include <CL/cl.h>

#include "context.h"
#include "kcs_device_opencl.h"

extern const kcs_backend kcs_opencl_backend; /* opencl/backend.c */

/* Devices of a platform; 0 where it has none. */
static cl_uint device_count(cl_platform_id platform)
{
    cl_uint count = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &count) != CL_SUCCESS)
        return 0;
    return count;
}

kcs_status kcs_open_opencl(int platform, int device, kcs_context **context, kcs_error *err)
{
    *context = NULL;
    cl_uint platform_count = 0;
    cl_int code = clGetPlatformIDs(0, NULL, &platform_count);
    if (code != CL_SUCCESS || platform_count == 0)
        return kcs_fail(err, KCS_UNSUPPORTED, "kcs_open_opencl: the OpenCL ICD loader found no platform (%d)",
                        (int)code);
    cl_platform_id *platforms = malloc(platform_count * sizeof *platforms);
    if (!platforms)
        return kcs_fail(err, KCS_ERROR, "kcs_open_opencl: out of memory");
    code = clGetPlatformIDs(platform_count, platforms, NULL);
    kcs_status status = KCS_OK;
    int index = 0;
    if (code != CL_SUCCESS) {
        status = kcs_fail(err, KCS_ERROR, "kcs_open_opencl: clGetPlatformIDs failed (%d)", (int)code);
    } else if (platform < 0 || (cl_uint)platform >= platform_count) {
        status = kcs_fail(err, KCS_ERROR, "kcs_open_opencl: there is no platform %d (the loader offers %u)",
                          platform, platform_count);
    } else {
        for (int p = 0; p < platform; p++)
            index += (int)device_count(platforms[p]);
        cl_uint here = device_count(platforms[platform]);
        if (device < 0 || (cl_uint)device >= here)
            status = kcs_fail(err, KCS_ERROR, "kcs_open_opencl: platform %d has no device %d (it has %u)",
                              platform, device, here);
    }
    free(platforms);
    if (status != KCS_OK)
        return status;
    return kcs_context_open(&kcs_opencl_backend, index + device, context, err);
}
