/* scale.cl: y[i] = alpha * x[i] as an OpenCL C 1.2 kernel (docs/scale.md), the
 * test-only op that proves a new op takes new files only.
 *
 * One IEEE multiply per element, correctly rounded: built without fast-math
 * options and with contraction off, subnormals kept. Built once per element
 * type with KCS_SCALE_TYPE float or double (opencl/scale.c, from the op's type
 * list), so a device without fp64 still builds the f32 kernel. One work-item per element: the op exists to
 * be checked, not to be fast.
 *
 * Run only it: build/kcs run --backend opencl --cases tests/cases scale
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef KCS_SCALE_TYPE
/* The element type, float or double (double needs cl_khr_fp64). */
#define KCS_SCALE_TYPE float
#endif

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

typedef KCS_SCALE_TYPE real;

__kernel void kcs_scale(__global const real *x, __global real *y, const real alpha, const ulong n)
{
    size_t i = get_global_id(0);
    if (i < n)
        y[i] = alpha * x[i];
}
