/* half.cuh: the 16-bit storage types in CUDA kernels, for every op file.
 *
 * f16 is __half and bf16 is __nv_bfloat16 (CUDA's own headers and
 * conversions); both are computed in float (../shared/SPEC.md, "Half
 * precision"), so a kernel templated over its storage type T loads with
 * kcs_widen, computes in kcs_compute<T> and stores with kcs_narrow<T>, one
 * rounding to nearest even (cvt.rn, which is what __float2half_rn and
 * __float2bfloat16_rn compile to). For float and double both are the
 * identity, so one template body serves f32, f64, f16 and bf16.
 *
 * A kernel that carries a sum in double (cuda/grid_sum.cuh) rounds it to T
 * with kcs_narrow_double<T>, once: through float it would round twice.
 * __double2half is cvt.rn.f16.f64; __double2bfloat16 is cvt.rn.bf16.f64 on
 * sm_90 and, before it, CUDA's rounding to odd in float and then to nearest,
 * which is also one rounding (ref/kcs_ref_half.h says why).
 *
 * tests/cuda_kernels_emulation.h defines the same names on the host, on top
 * of ref/kcs_ref_half.h, when the kernels are emulated.
 */
#ifndef KCS_CUDA_HALF_CUH
#define KCS_CUDA_HALF_CUH

#include <cstring>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

/* The type kcs computes a storage type in: float for the 16-bit types. */
template <typename T> struct kcs_compute_type { using type = T; };
template <> struct kcs_compute_type<__half> { using type = float; };
template <> struct kcs_compute_type<__nv_bfloat16> { using type = float; };
template <typename T> using kcs_compute = typename kcs_compute_type<T>::type;

/* A stored value as its compute type, exactly. */
__host__ __device__ __forceinline__ float kcs_widen(float value) { return value; }
__host__ __device__ __forceinline__ double kcs_widen(double value) { return value; }
__device__ __forceinline__ float kcs_widen(__half value) { return __half2float(value); }
__device__ __forceinline__ float kcs_widen(__nv_bfloat16 value) { return __bfloat162float(value); }

/* A compute-type value rounded once, to nearest even, to storage type T. */
template <typename T> __device__ __forceinline__ T kcs_narrow(kcs_compute<T> value) { return value; }
template <> __device__ __forceinline__ __half kcs_narrow<__half>(float value) { return __float2half_rn(value); }
template <> __device__ __forceinline__ __nv_bfloat16 kcs_narrow<__nv_bfloat16>(float value)
{
    return __float2bfloat16_rn(value);
}

/* Two compute-type values, each rounded once to nearest even to the 16-bit type T, packed as two consecutive
 * elements lie in memory (first in the low half): the same bits as two kcs_narrow, in one instruction
 * (cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32, sm_80 and later) where two single conversions take two. */
template <typename T> __device__ __forceinline__ unsigned int kcs_narrow_pair(float first, float second);
template <> __device__ __forceinline__ unsigned int kcs_narrow_pair<__half>(float first, float second)
{
    const __half2 pair = __floats2half2_rn(first, second);
    unsigned int bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
}
template <> __device__ __forceinline__ unsigned int kcs_narrow_pair<__nv_bfloat16>(float first, float second)
{
    const __nv_bfloat162 pair = __floats2bfloat162_rn(first, second);
    unsigned int bits;
    memcpy(&bits, &pair, sizeof bits);
    return bits;
}

/* Two 16-bit values packed as kcs_narrow_pair packs them (first in the low half), each widened exactly to float:
 * the same values as two kcs_widen, without first moving each half into a register of its own. bf16 is the high
 * half of the float with the same bits, so the low value is the pair shifted left by 16 and the high one the pair
 * with its low half cleared: one integer instruction each, every bf16 value (NaN payloads included) kept as it is.
 * f16 takes __half22float2 (one conversion of a half-register each, HADD2.F32 on sm_90). */
template <typename T> __device__ __forceinline__ void kcs_widen_pair(unsigned int bits, float &first, float &second);
template <> __device__ __forceinline__ void kcs_widen_pair<__half>(unsigned int bits, float &first, float &second)
{
    __half2 pair;
    memcpy(&pair, &bits, sizeof bits);
    const float2 widened = __half22float2(pair);
    first = widened.x;
    second = widened.y;
}
template <>
__device__ __forceinline__ void kcs_widen_pair<__nv_bfloat16>(unsigned int bits, float &first, float &second)
{
    first = __uint_as_float(bits << 16);
    second = __uint_as_float(bits & 0xffff0000u);
}

/* Two pairs of 16-bit values packed as kcs_narrow_pair packs them: the larger of each half, ignoring a NaN where
 * the other half is a number (both NaN: a NaN), +0 above -0: what fmaxf gives for each half, widened, and exactly
 * one of the inputs, so a max taken in pairs has the bits of one taken element by element. One instruction
 * (max.f16x2 / max.bf16x2, sm_80 and later) for two, where each element widened and compared takes two. */
template <typename T> struct kcs_pair_of;
template <> struct kcs_pair_of<__half> { using type = __half2; };
template <> struct kcs_pair_of<__nv_bfloat16> { using type = __nv_bfloat162; };
template <typename T> __device__ __forceinline__ unsigned int kcs_max_pair(unsigned int a, unsigned int b)
{
    typename kcs_pair_of<T>::type x, y;
    memcpy(&x, &a, sizeof a);
    memcpy(&y, &b, sizeof b);
    const typename kcs_pair_of<T>::type larger = __hmax2(x, y);
    unsigned int bits;
    memcpy(&bits, &larger, sizeof bits);
    return bits;
}

/* A double rounded once, to nearest even, to storage type T. */
template <typename T> __device__ __forceinline__ T kcs_narrow_double(double value) { return static_cast<T>(value); }
template <> __device__ __forceinline__ __half kcs_narrow_double<__half>(double value) { return __double2half(value); }
template <> __device__ __forceinline__ __nv_bfloat16 kcs_narrow_double<__nv_bfloat16>(double value)
{
    return __double2bfloat16(value);
}

#endif
