/* cuda_half_emulation.h: CUDA's 16-bit types and conversions, and
 * cuda/half.cuh's kcs_compute, kcs_widen and kcs_narrow over them, on the
 * host, on top of the reference's conversions (ref/kcs_ref_half.h, included
 * before this), for the emulations of the CUDA kernels
 * (tests/cuda_kernels_emulation.h, tests/cuda_gemm_emulation.cpp). */
#ifndef KCS_CUDA_HALF_EMULATION_H
#define KCS_CUDA_HALF_EMULATION_H

/* binary16 and bfloat16: CUDA's types and conversions, on top of the
 * reference's (ref/kcs_ref_half.h), and cuda/half.cuh's helpers over them. */
struct __half { unsigned short bits; };
struct __nv_bfloat16 { unsigned short bits; };
static inline __half __ushort_as_half(unsigned short bits) { return __half{bits}; }
static inline float __half2float(__half h) { return kcs_f16_to_float(kcs_f16{h.bits}); }
static inline __half __float2half_rn(float f) { return __half{kcs_f16_from_float(f).bits}; }
static inline float __bfloat162float(__nv_bfloat16 b) { return kcs_bf16_to_float(kcs_bf16{b.bits}); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16{kcs_bf16_from_float(f).bits}; }
static inline unsigned short emu_float_to_half_bits(float f) { return kcs_f16_from_float(f).bits; }

template <typename T> struct kcs_compute_type { using type = T; };
template <> struct kcs_compute_type<__half> { using type = float; };
template <> struct kcs_compute_type<__nv_bfloat16> { using type = float; };
template <typename T> using kcs_compute = typename kcs_compute_type<T>::type;
static inline float kcs_widen(float value) { return value; }
static inline double kcs_widen(double value) { return value; }
static inline float kcs_widen(__half value) { return __half2float(value); }
static inline float kcs_widen(__nv_bfloat16 value) { return __bfloat162float(value); }
template <typename T> static inline T kcs_narrow(kcs_compute<T> value) { return value; }
template <> inline __half kcs_narrow<__half>(float value) { return __float2half_rn(value); }
template <> inline __nv_bfloat16 kcs_narrow<__nv_bfloat16>(float value) { return __float2bfloat16_rn(value); }
template <typename T> static inline unsigned int kcs_narrow_pair(float first, float second)
{
    return (unsigned int)kcs_narrow<T>(first).bits | (unsigned int)kcs_narrow<T>(second).bits << 16;
}
/* half.cuh's kcs_widen_pair: the two halves, low first, each widened as kcs_widen widens it. */
template <typename T> static inline void kcs_widen_pair(unsigned int bits, float &first, float &second)
{
    first = kcs_widen(T{(unsigned short)bits});
    second = kcs_widen(T{(unsigned short)(bits >> 16)});
}
/* half.cuh's kcs_max_pair: per half, the larger (fmaxf's choice: a NaN loses to a number, +0 beats -0), as bits. */
template <typename T> static inline unsigned short emu_max_half(unsigned short a, unsigned short b)
{
    const float x = kcs_widen(T{a}), y = kcs_widen(T{b});
    if (std::isnan(y))
        return a;
    if (std::isnan(x) || y > x || (y == x && std::signbit(x) && !std::signbit(y)))
        return b;
    return a;
}
template <typename T> static inline unsigned int kcs_max_pair(unsigned int a, unsigned int b)
{
    return (unsigned int)emu_max_half<T>((unsigned short)a, (unsigned short)b) |
           (unsigned int)emu_max_half<T>((unsigned short)(a >> 16), (unsigned short)(b >> 16)) << 16;
}
template <typename T> static inline T kcs_narrow_double(double value) { return static_cast<T>(value); }
template <> inline __half kcs_narrow_double<__half>(double value) { return __half{kcs_narrow_double_f16(value).bits}; }
template <> inline __nv_bfloat16 kcs_narrow_double<__nv_bfloat16>(double value)
{
    return __nv_bfloat16{kcs_narrow_double_bf16(value).bits};
}

#endif
