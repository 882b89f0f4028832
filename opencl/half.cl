/* half.cl: the 16-bit storage types, prepended to every kcs OpenCL program
 * (opencl/backend.c), so that each kernel file converts them the same way.
 *
 * kcs computes f16 and bf16 in float (../shared/SPEC.md, "Half precision"),
 * so no kernel needs half arithmetic:
 *   f16   vload_half / vstore_half_rte, core OpenCL 1.2 functions that convert
 *         between binary16 storage and float on every device, with or without
 *         cl_khr_fp16 (which adds half arithmetic, not the conversions).
 *   bf16  stored as ushort, the top half of a float's bits: widening is a
 *         shift, and narrowing rounds to nearest even, NaN kept quiet, as
 *         kcs_bf16_from_float in ref/kcs_ref_half.h does on the host (the
 *         same integer steps, so the reference and these kernels agree);
 *         kcs_bf16x4_to_float and kcs_bf16x4_from_float do the same lane by
 *         lane, for kernels that move four elements at a time.
 */

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
    uint8 bits = as_uint8(value);
    uint8 rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    uint8 quiet_nan = (bits >> 16) | 0x0040u;
    return convert_ushort8(select(rounded, quiet_nan, (bits & 0x7fffffffu) > 0x7f800000u));
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

/* Elements 8 i .. 8 i + 7 of f16 data as floats (exact; vloada_half8: the
 * aligned form). */
inline float8 kcs_load_f16x8(__global const half *data, size_t i)
{
    return vloada_half8(i, data);
}

/* value rounded to nearest even f16 and stored as elements 8 i .. 8 i + 7 of data. */
inline void kcs_store_f16x8(__global half *data, size_t i, float8 value)
{
    vstorea_half8_rte(value, i, data);
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
