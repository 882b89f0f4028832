/* anneal.cuh: what the CUDA files of the anneal steps share (cuda/assign.cu,
 * cuda/reduce.cu, cuda/update.cu, cuda/energy.cu; docs/anneal.md).
 *
 * Points x (n x d) are stored f16 or f32 (the case dtype) and widened
 * exactly to f32; anchors, means, variances, distances and velocities are
 * f32; indices and counts i32. Here: the loading of points (one element, or
 * four dimensions of a row as a float4, 0 beyond d, by vector loads where
 * the row allows them) for assign's and reduce's kernels, and the host's
 * sizing helpers (the blocks of one wave, scratch offsets).
 *
 * Included by those files after common.cuh (and inlined into them by
 * tests/cuda_kernels_emulation.sh); its definitions are local to each.
 */
#ifndef KCS_CUDA_ANNEAL_CUH
#define KCS_CUDA_ANNEAL_CUH

#include <cstdint>

#include <cuda_fp16.h>

#include "common.cuh"

namespace {

/* ---------------------------------------------------------------- loading points */

/* The value of one stored f16 point element, widened exactly to f32 (f32
 * points are read as they are). */
__device__ __forceinline__ float widen(const __half *p)
{
    return __half2float(__ldg(p));
}

__device__ __forceinline__ float half_bits_to_float(unsigned int bits)
{
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}

/* Elements 0 .. 3 at p, with no bounds check: p is aligned for one 16-byte
 * (f32) or 8-byte (f16) load, and all four lie inside the row. */
__device__ __forceinline__ float4 load_four_inside(const float *p)
{
    return __ldg(reinterpret_cast<const float4 *>(p));
}

/* Four f16 elements, as stored in raw, widened exactly. */
__device__ __forceinline__ float4 widen_four(uint2 raw)
{
    return make_float4(half_bits_to_float(raw.x), half_bits_to_float(raw.x >> 16), half_bits_to_float(raw.y),
                       half_bits_to_float(raw.y >> 16));
}

__device__ __forceinline__ float4 load_four_inside(const __half *p)
{
    return widen_four(__ldg(reinterpret_cast<const uint2 *>(p)));
}

/* Dimensions k .. k+3 of a row as a float4, 0 beyond d. vectors: the row is
 * aligned for one 16-byte (f32) or 8-byte (f16) load wherever k + 4 <= d. */
__device__ __forceinline__ float4 load_four(const float *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return load_four_inside(row + k);
    float4 r;
    r.x = k < d ? __ldg(row + k) : 0.0f;
    r.y = k + 1 < d ? __ldg(row + k + 1) : 0.0f;
    r.z = k + 2 < d ? __ldg(row + k + 2) : 0.0f;
    r.w = k + 3 < d ? __ldg(row + k + 3) : 0.0f;
    return r;
}

__device__ __forceinline__ float4 load_four(const __half *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return load_four_inside(row + k);
    float4 r;
    r.x = k < d ? widen(row + k) : 0.0f;
    r.y = k + 1 < d ? widen(row + k + 1) : 0.0f;
    r.z = k + 2 < d ? widen(row + k + 2) : 0.0f;
    r.w = k + 3 < d ? widen(row + k + 3) : 0.0f;
    return r;
}

/* Whether rows of d elements of type P starting at data allow load_four's vector loads. */
template <typename P> bool rows_are_vectors(const void *data, size_t d)
{
    const uintptr_t alignment = sizeof(P) == 4 ? 16 : 8;
    return d % 4 == 0 && reinterpret_cast<uintptr_t>(data) % alignment == 0;
}

/* The blocks of one wave on this device, for a kernel with per_sm resident blocks an SM. */
inline size_t wave_blocks(const kcs_device *device, int per_sm)
{
    return (size_t)(device->sm_count > 0 ? device->sm_count : 1) * (size_t)(per_sm > 0 ? per_sm : 1);
}

/* Byte offset of a scratch region, rounded up to 256 bytes. */
inline size_t align_up(size_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

} // namespace

#endif
