/* kcs_device_opencl.h: opening an OpenCL device for kcs_device.h's calls (libkcs_opencl).
 *
 * Devices are named as OpenCL names them: a platform index (clGetPlatformIDs'
 * order) and a device index within it (clGetDeviceIDs, CL_DEVICE_TYPE_ALL).
 * The context makes its own cl_context and one in-order command queue with
 * profiling; kcs_context_queue returns that cl_command_queue.
 */
#ifndef KCS_DEVICE_OPENCL_H
#define KCS_DEVICE_OPENCL_H

#include "kcs_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens device of platform (both counted from 0); the error names the
 * platforms and devices there are when an index is out of range. */
KCS_API kcs_status kcs_open_opencl(int platform, int device, kcs_context **context, kcs_error *err);

#ifdef __cplusplus
}
#endif

#endif
