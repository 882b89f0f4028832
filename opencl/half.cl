/* half.cl: the 16-bit storage types, prepended to every kcs OpenCL program
 * (opencl/backend.c), so that each kernel file converts them the same way.
 *
 * kcs computes f16 and bf16 in float (../shared/SPEC.md, "Half precision"),
 * so no kernel needs half arithmetic:
 *   f16   one element at a time, vload_half / vstore_half_rte, core OpenCL
 *         1.2 functions that convert between binary16 storage and float on
 *         every device, with or without cl_khr_fp16 (which adds half
 *         arithmetic, not the conversions). Eight at a time (16-byte
 *         accesses), one ushort8 load or store and integer code with exact
 *         float steps, giving the results of kcs_f16_to_float and
 *         kcs_f16_from_float in ref/kcs_ref_half.h, rather than vloada_half8
 *         / vstorea_half8_rte: NVIDIA's OpenCL compiles those badly (f16
 *         elementwise add 0.60 of copy with them, 0.96 without, on an H100;
 *         docs/elementwise.md), while its scalar vload_half is as fast as
 *         integer code or faster (sumsq f16 0.77 of copy with it, 0.72
 *         with the integer steps).
 *   bf16  stored as ushort, the top half of a float's bits: widening is a
 *         shift, and narrowing rounds to nearest even, NaN kept quiet, as
 *         kcs_bf16_from_float in ref/kcs_ref_half.h does on the host (the
 *         same integer steps, so the reference and these kernels agree);
 *         kcs_bf16x4_to_float and kcs_bf16x4_from_float do the same lane by
 *         lane, for kernels that move four elements at a time.
 *
 * On NVIDIA's OpenCL (the host defines KCS_OPENCL_NVIDIA_SM, the device's
 * compute capability, in opencl/backend.c, the one place that decides it)
 * the eight-wide conversions are PTX instructions in inline assembly:
 * cvt.f32.f16 widens exactly (subnormals included: no .ftz), and from
 * compute capability 8.0 cvt.rn.f16x2.f32 and cvt.rn.bf16x2.f32 round two
 * floats at once to nearest even, overflowing to inf and keeping subnormals,
 * as the portable code does; a NaN comes out as a NaN (the canonical one,
 * which the checker accepts: it asks a NaN for a NaN, not its payload);
 * the f16 and bf16 elementwise cases (ties, overflow, subnormal results)
 * pass with them on an H100. Measured there (docs/elementwise.md): the
 * integer code costs about a dozen operations an element each way, these
 * one or a half, and f16 add went from 0.96 to 0.98 of copy. Every other
 * device, and the one-at-a-time forms everywhere, keep the portable code.
 */

#if defined(KCS_OPENCL_NVIDIA_SM)
/* Two f16 bit patterns (element 2k in the low half of pair) as floats. */
inline float2 kcs_f16x2_to_float_ptx(uint pair)
{
    float low, high;
    asm("{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }"
        : "=f"(low), "=f"(high)
        : "r"(pair));
    return (float2)(low, high);
}
#endif

#if defined(KCS_OPENCL_NVIDIA_SM) && KCS_OPENCL_NVIDIA_SM >= 80
/* Two floats rounded to f16 (value.x to the low half) and packed. */
inline uint kcs_f16x2_from_float_ptx(float2 value)
{
    uint pair;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(value.y), "f"(value.x));
    return pair;
}

/* Two floats rounded to bf16 (value.x to the low half) and packed. */
inline uint kcs_bf16x2_from_float_ptx(float2 value)
{
    uint pair;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(pair) : "f"(value.y), "f"(value.x));
    return pair;
}
#define KCS_OPENCL_PTX_NARROWING 1
#endif

/* The float value of the bf16 bit pattern bits, exactly. */
inline float kcs_bf16_to_float(ushort bits)
{
    return as_float((uint)bits << 16);
}

/* value rounded to the nearest bf16, ties to even; overflow to inf, NaN quiet. */
inline ushort kcs_bf16_from_float(float value)
{
    uint bits = as_uint(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((bits >> 16) | 0x0040u);
    return (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

/* Element i of bf16 data as a float. */
inline float kcs_load_bf16(__global const ushort *data, size_t i)
{
    return kcs_bf16_to_float(data[i]);
}

/* value rounded to bf16 and stored as element i of data. */
inline void kcs_store_bf16(__global ushort *data, size_t i, float value)
{
    data[i] = kcs_bf16_from_float(value);
}

/* Element i of f16 data as a float (exact). */
inline float kcs_load_f16(__global const half *data, size_t i)
{
    return vload_half(i, data);
}

/* value rounded to nearest even f16 and stored as element i of data. */
inline void kcs_store_f16(__global half *data, size_t i, float value)
{
    vstore_half_rte(value, i, data);
}

/* Eight elements at a time, for kernels that move 16 bytes per access: the
 * same conversions on vectors. data must be 16-byte aligned (the element
 * index of the first is 8 i), which lets the device use one 128-bit access. */

/* The float values of eight bf16 bit patterns, exactly. */
inline float8 kcs_bf16x8_to_float(ushort8 bits)
{
    return as_float8(convert_uint8(bits) << 16);
}

/* Eight floats rounded to the nearest bf16, ties to even; overflow to inf,
 * NaN quiet: kcs_bf16_from_float on each element. */
inline ushort8 kcs_bf16x8_from_float(float8 value)
{
#if defined(KCS_OPENCL_PTX_NARROWING)
    return as_ushort8((uint4)(kcs_bf16x2_from_float_ptx(value.s01), kcs_bf16x2_from_float_ptx(value.s23),
                              kcs_bf16x2_from_float_ptx(value.s45), kcs_bf16x2_from_float_ptx(value.s67)));
#else
    uint8 bits = as_uint8(value);
    uint8 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint8 quiet_nan = (bits >> 16) | 0x0040u;
    return convert_ushort8(select(rounded, quiet_nan, (bits & 0x7fffffffu) > 0x7f800000u));
#endif
}

/* Elements 8 i .. 8 i + 7 of bf16 data as floats. */
inline float8 kcs_load_bf16x8(__global const ushort *data, size_t i)
{
    return kcs_bf16x8_to_float(((__global const ushort8 *)data)[i]);
}

/* value rounded to bf16 and stored as elements 8 i .. 8 i + 7 of data. */
inline void kcs_store_bf16x8(__global ushort *data, size_t i, float8 value)
{
    ((__global ushort8 *)data)[i] = kcs_bf16x8_from_float(value);
}

/* The float values of eight f16 bit patterns, exactly. Exponent and
 * mantissa shifted into float's places and rebiased (15 to 127) give every
 * normal number; inf and NaN (exponent all ones) are rebiased once more to
 * float's all ones, the payload kept; zero and subnormals, m 2^-24, are
 * formed as the normal float 2^-14 (1 + m 2^-10) minus 2^-14, exactly (no
 * float subnormal is involved, so a device that flushes them still gets
 * them). No int-to-float conversion: NVIDIA runs those at a quarter of the
 * rate, and a vector select computes every choice. */
inline float8 kcs_f16x8_to_float(ushort8 bits)
{
#if defined(KCS_OPENCL_NVIDIA_SM)
    uint4 pairs = as_uint4(bits);
    return (float8)(kcs_f16x2_to_float_ptx(pairs.x), kcs_f16x2_to_float_ptx(pairs.y),
                    kcs_f16x2_to_float_ptx(pairs.z), kcs_f16x2_to_float_ptx(pairs.w));
#else
    uint8 h = convert_uint8(bits);
    uint8 shifted = (h & 0x7fffu) << 13;
    uint8 exponent = shifted & 0x0f800000u;
    uint8 magnitude = shifted + (112u << 23);
    magnitude = select(magnitude, magnitude + (112u << 23), exponent == 0x0f800000u);
    magnitude = select(magnitude, as_uint8(as_float8(magnitude + (1u << 23)) - 0x1p-14f), exponent == 0u);
    return as_float8(magnitude | ((h & 0x8000u) << 16));
#endif
}

/* Eight floats rounded to the nearest f16, ties to even; overflow to inf,
 * NaN quiet with its top payload bits (kcs_f16_from_float's results).
 * Normal results drop 13 mantissa bits, rounding to nearest even (a carry
 * moves into the exponent, and from 65520 on into inf); results below
 * 2^-14 are multiples of 2^-24, the ulp of 1/2, so the float sum
 * 1/2 + |value| rounds |value| to one, nearest even, and its bits above
 * 1/2's count them (1024 is the smallest normal). */
inline ushort8 kcs_f16x8_from_float(float8 value)
{
#if defined(KCS_OPENCL_PTX_NARROWING)
    return as_ushort8((uint4)(kcs_f16x2_from_float_ptx(value.s01), kcs_f16x2_from_float_ptx(value.s23),
                              kcs_f16x2_from_float_ptx(value.s45), kcs_f16x2_from_float_ptx(value.s67)));
#else
    uint8 bits = as_uint8(value);
    uint8 sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
    uint8 rebiased = magnitude - (112u << 23);
    uint8 result = (rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13;
    uint8 small = as_uint8(as_float8(magnitude) + 0.5f) - 0x3f000000u;
    result = select(result, small, magnitude < 0x38800000u);
    result = select(result, (uint8)0x7c00u, magnitude >= 0x477ff000u);
    result = select(result, 0x7e00u | ((magnitude >> 13) & 0x3ffu), magnitude > 0x7f800000u);
    return convert_ushort8(sign | result);
#endif
}

/* Elements 8 i .. 8 i + 7 of f16 data as floats (exact). data must be
 * 16-byte aligned, as for the bf16 form: one 128-bit load. */
inline float8 kcs_load_f16x8(__global const half *data, size_t i)
{
    return kcs_f16x8_to_float(((__global const ushort8 *)data)[i]);
}

/* value rounded to nearest even f16 and stored as elements 8 i .. 8 i + 7 of data. */
inline void kcs_store_f16x8(__global half *data, size_t i, float8 value)
{
    ((__global ushort8 *)data)[i] = kcs_f16x8_from_float(value);
}

/* The float values of four bf16 bit patterns, exactly (as
 * kcs_bf16_to_float, lane by lane). */
inline float4 kcs_bf16x4_to_float(ushort4 bits)
{
    return as_float4(convert_uint4(bits) << 16);
}

/* values rounded to bf16, lane by lane as kcs_bf16_from_float. */
inline ushort4 kcs_bf16x4_from_float(float4 value)
{
    return (ushort4)(kcs_bf16_from_float(value.x), kcs_bf16_from_float(value.y),
                     kcs_bf16_from_float(value.z), kcs_bf16_from_float(value.w));
}
