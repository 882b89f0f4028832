/* kcs_ref_fp8.h: the 8-bit storage types of OCP FP8 ("OCP 8-bit Floating
 * Point Specification (OFP8)", rev. 1.0, 2023), their conversions to and
 * from float, and the per-dtype helpers of kcs_ref_half.h for them; part of
 * kcs_ref.h. The one home of every FP8 conversion in kcs.
 *
 *   fp8_e4m3  E4M3 ("e4m3fn"): 1 sign, 4 exponent (bias 7), 3 fraction bits,
 *             so 4 significant bits; no infinities; NaN is S.1111.111 (0x7f,
 *             0xff); largest finite 448 (S.1111.110); smallest normal 2^-6,
 *             smallest subnormal 2^-9.
 *   fp8_e5m2  E5M2: 1 sign, 5 exponent (bias 15), 2 fraction bits (3
 *             significant), IEEE-like: infinities S.11111.00, NaNs
 *             S.11111.{01,10,11}; largest finite 57344; smallest normal
 *             2^-14, smallest subnormal 2^-16.
 *
 * Every FP8 value is exact in float, and so is the product of two (at most 8
 * significant bits, exponents far inside float's range): an FP8 GEMM's
 * products are exact in its f32 accumulator (docs/gemm.md, "FP8").
 *
 * From float: round to nearest, ties to even, not saturating: a value whose
 * rounding exceeds the largest finite becomes NaN in e4m3 (it has no
 * infinity) and infinity in e5m2, as IEEE rounding and CUDA's
 * __nv_cvt_float_to_fp8(x, __NV_NOSAT, ...) do; NaN stays NaN (sign kept).
 * Saturation (__NV_SATFINITE, to 448 or 57344) is what quantisers ask for
 * and what cuBLASLt applies when it writes an FP8 D; kcs never asks cuBLASLt
 * for an FP8 output (its FP8 cases write f32, bf16 or f16), so that choice
 * never meets a result, and the generator's inputs are rounded the IEEE way
 * (a case that wants the largest finite value asks for it).
 */
#ifndef KCS_REF_FP8_H
#define KCS_REF_FP8_H

#include <math.h>
#include <stdint.h>

/* An OCP FP8 E4M3 value, as its bit pattern. */
typedef struct {
    uint8_t bits;
} kcs_fp8_e4m3;

/* An OCP FP8 E5M2 value, as its bit pattern. */
typedef struct {
    uint8_t bits;
} kcs_fp8_e5m2;

/* The value of an FP8 pattern with exponent_bits and fraction_bits, bias
 * 2^(exponent_bits - 1) - 1; the all-ones exponent is decoded by the callers. */
static inline float kcs_fp8_decode(uint8_t bits, int exponent_bits, int fraction_bits)
{
    int bias = (1 << (exponent_bits - 1)) - 1;
    int exponent = (bits >> fraction_bits) & ((1 << exponent_bits) - 1);
    int fraction = bits & ((1 << fraction_bits) - 1);
    float magnitude = exponent == 0 ? ldexpf((float)fraction, 1 - bias - fraction_bits)
                                    : ldexpf((float)(fraction + (1 << fraction_bits)), exponent - bias - fraction_bits);
    return bits & 0x80 ? -magnitude : magnitude;
}

/* A finite float already representable in the FP8 format (or 0) encoded. */
static inline uint8_t kcs_fp8_encode(float value, int exponent_bits, int fraction_bits)
{
    int bias = (1 << (exponent_bits - 1)) - 1;
    uint8_t sign = signbit(value) ? 0x80 : 0;
    float magnitude = fabsf(value);
    if (magnitude == 0.0f)
        return sign;
    int exponent = ilogbf(magnitude);
    if (exponent < 1 - bias) /* subnormal: fraction in units of the smallest subnormal */
        return sign | (uint8_t)ldexpf(magnitude, bias - 1 + fraction_bits);
    int fraction = (int)ldexpf(magnitude, fraction_bits - exponent) - (1 << fraction_bits);
    return sign | (uint8_t)((exponent + bias) << fraction_bits) | (uint8_t)fraction;
}

/* value rounded to nearest even to precision significant bits, normal from
 * 2^min_exponent: a float the format holds exactly unless it overflows. */
static inline float kcs_fp8_round(float value, int precision, int min_exponent)
{
    float magnitude = fabsf(value);
    if (magnitude == 0.0f)
        return value;
    int exponent = ilogbf(magnitude);
    if (exponent < min_exponent)
        exponent = min_exponent; /* subnormal: the quantum stops shrinking */
    int quantum = exponent - precision + 1;
    return copysignf(ldexpf(nearbyintf(ldexpf(magnitude, -quantum)), quantum), value);
}

/* The exact float value of an e4m3 pattern (NaN for 0x7f and 0xff). */
static inline float kcs_fp8_e4m3_to_float(kcs_fp8_e4m3 value)
{
    if ((value.bits & 0x7f) == 0x7f)
        return value.bits & 0x80 ? -NAN : NAN;
    return kcs_fp8_decode(value.bits, 4, 3);
}

/* value rounded once, to nearest even, to e4m3; beyond 448 (from 464 on) and NaN: NaN. */
static inline kcs_fp8_e4m3 kcs_fp8_e4m3_from_float(float value)
{
    uint8_t sign = signbit(value) ? 0x80 : 0;
    if (isnan(value))
        return (kcs_fp8_e4m3){(uint8_t)(sign | 0x7f)};
    float rounded = kcs_fp8_round(value, 4, -6);
    if (!(fabsf(rounded) <= 448.0f)) /* no infinity in e4m3 */
        return (kcs_fp8_e4m3){(uint8_t)(sign | 0x7f)};
    return (kcs_fp8_e4m3){kcs_fp8_encode(rounded, 4, 3)};
}

/* The exact float value of an e5m2 pattern (infinities and NaNs as IEEE). */
static inline float kcs_fp8_e5m2_to_float(kcs_fp8_e5m2 value)
{
    if ((value.bits & 0x7c) == 0x7c) {
        float special = (value.bits & 0x03) ? NAN : INFINITY;
        return value.bits & 0x80 ? -special : special;
    }
    return kcs_fp8_decode(value.bits, 5, 2);
}

/* value rounded once, to nearest even, to e5m2; beyond 57344 (from 61440 on): infinity. */
static inline kcs_fp8_e5m2 kcs_fp8_e5m2_from_float(float value)
{
    uint8_t sign = signbit(value) ? 0x80 : 0;
    if (isnan(value))
        return (kcs_fp8_e5m2){(uint8_t)(sign | 0x7f)};
    float rounded = isinf(value) ? value : kcs_fp8_round(value, 3, -14);
    if (!(fabsf(rounded) <= 57344.0f))
        return (kcs_fp8_e5m2){(uint8_t)(sign | 0x7c)};
    return (kcs_fp8_e5m2){kcs_fp8_encode(rounded, 5, 2)};
}

/* The per-dtype helpers of kcs_ref_half.h: FP8 is computed in float. */
typedef float kcs_compute_fp8_e4m3;
typedef float kcs_compute_fp8_e5m2;
static inline float kcs_widen_fp8_e4m3(kcs_fp8_e4m3 value) { return kcs_fp8_e4m3_to_float(value); }
static inline float kcs_widen_fp8_e5m2(kcs_fp8_e5m2 value) { return kcs_fp8_e5m2_to_float(value); }

#endif
