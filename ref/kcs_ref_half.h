/* kcs_ref_half.h: the 16-bit storage types f16 and bf16, their conversions to
 * and from float, and the per-dtype helpers that let one reference body serve
 * every dtype of an op's type list; part of kcs_ref.h.
 *
 * C11 has no portable half type, so each 16-bit type is a struct around its
 * bit pattern: an f16 cannot be passed where a bf16 is meant, nor either
 * where an integer is. Both are computed in float (../shared/SPEC.md, "Half
 * precision"): every f16 and every bf16 is exact in float, and so is the
 * product of two of them (22 and 16 significant bits, inside float's 24).
 *
 *   f16   IEEE binary16: 11 significant bits, largest 65504, subnormals down
 *         to 2^-24.
 *   bf16  bfloat16: the top 16 bits of a float (8 significant bits, float's
 *         exponent range), rounded to nearest even.
 *
 * The conversions from float round to nearest, ties to even, in the default
 * rounding mode, as the hardware's cvt.rn does: overflow goes to infinity and
 * NaN stays NaN (made quiet, sign kept). They are bit operations rather than
 * library calls so that the reference runs the same on every compiler.
 *
 * For a type-list suffix S (f16, bf16, f32, f64):
 *   kcs_compute_S   the type the reference computes S in (float, or double for f64)
 *   kcs_widen_S     S to kcs_compute_S, exactly
 *   kcs_narrow_S    kcs_compute_S rounded once to S
 *   kcs_narrow_double_S  a double rounded once to S, for references that
 *                   carry a sum in double whatever S is: (S)(float)value
 *                   would round twice for f16 and bf16 (a double just past
 *                   a tie, rounded to float, lands on the tie and then goes
 *                   to even, the wrong way)
 */
#ifndef KCS_REF_HALF_H
#define KCS_REF_HALF_H

#include <stdint.h>
#include <string.h>

/* An IEEE binary16 value, as its bit pattern. */
typedef struct {
    uint16_t bits;
} kcs_f16;

/* A bfloat16 value, as its bit pattern (the top half of a float's). */
typedef struct {
    uint16_t bits;
} kcs_bf16;

static inline uint32_t kcs_float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

static inline float kcs_float_from_bits(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* The exact float value of an f16. */
static inline float kcs_f16_to_float(kcs_f16 half)
{
    uint32_t sign = (uint32_t)(half.bits & 0x8000u) << 16;
    uint32_t biased = (half.bits >> 10) & 0x1fu, mantissa = half.bits & 0x3ffu;
    if (biased == 0x1fu) /* inf, or NaN with its payload in the top mantissa bits */
        return kcs_float_from_bits(sign | 0x7f800000u | (mantissa << 13));
    if (biased == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
        float magnitude = (float)mantissa * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    return kcs_float_from_bits(sign | ((biased + 112u) << 23) | (mantissa << 13));
}

/* value rounded to the nearest f16, ties to even; overflow to inf, NaN quiet. */
static inline kcs_f16 kcs_f16_from_float(float value)
{
    uint32_t bits = kcs_float_bits(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7fffffffu;
    kcs_f16 half;
    if (magnitude > 0x7f800000u) { /* NaN: keep the top payload bits, set the quiet bit */
        half.bits = (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
        return half;
    }
    if (magnitude >= 0x477ff000u) { /* >= 65520, halfway between 65504 and 2^16, or inf */
        half.bits = (uint16_t)(sign | 0x7c00u);
        return half;
    }
    if (magnitude < 0x38800000u) { /* below 2^-14: a multiple of 2^-24 */
        /* magnitude * 2^24 (below 2^10) is exact: the product only moves the
         * exponent. Adding 2^23 rounds it to an integer, ties to even, since
         * floats in [2^23, 2^24) are the integers; subtracting is exact. */
        float scaled = kcs_float_from_bits(magnitude) * 0x1p24f;
        float rounded = (scaled + 0x1p23f) - 0x1p23f;
        half.bits = (uint16_t)(sign | (uint16_t)rounded); /* 1024 is the smallest normal */
        return half;
    }
    /* Normal: drop 13 mantissa bits, rounding to nearest even; a carry moves
     * into the exponent, and past the largest f16 into inf, as it should. */
    uint32_t rebiased = magnitude - (112u << 23);
    uint32_t rounded = (rebiased + 0xfffu + ((rebiased >> 13) & 1u)) >> 13;
    half.bits = (uint16_t)(sign | rounded);
    return half;
}

/* The exact float value of a bf16. */
static inline float kcs_bf16_to_float(kcs_bf16 value)
{
    return kcs_float_from_bits((uint32_t)value.bits << 16);
}

/* value rounded to the nearest bf16, ties to even; overflow to inf, NaN quiet. */
static inline kcs_bf16 kcs_bf16_from_float(float value)
{
    uint32_t bits = kcs_float_bits(value);
    kcs_bf16 result;
    if ((bits & 0x7fffffffu) > 0x7f800000u) /* NaN: truncate, set the quiet bit */
        result.bits = (uint16_t)((bits >> 16) | 0x0040u);
    else /* a carry out of the mantissa moves into the exponent, up to inf */
        result.bits = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    return result;
}

/* value rounded to float with rounding to odd: exact values stay; an inexact
 * one is truncated toward zero and its last bit set, so that it keeps the
 * information "strictly between two floats". A double rounded to odd in
 * float (24 bits) and then to nearest in a format of at most 22 bits is
 * rounded once, to nearest (Boldo and Melquiond, "Emulation of FMA and
 * correctly rounded sums: proved algorithms using rounding to odd", IEEE
 * Trans. Computers 57(4), 2008): f16 has 11 bits, bf16 8, and float's
 * subnormals are finer than theirs. A double beyond FLT_MAX becomes
 * FLT_MAX, odd, which both 16-bit types round to inf, as they should. */
static inline float kcs_float_round_to_odd(double value)
{
    float nearest = (float)value;
    if ((double)nearest == value || value != value)
        return nearest;
    uint32_t bits = kcs_float_bits(nearest);
    double past = (double)nearest - value;
    if ((past > 0.0 && value > 0.0) || (past < 0.0 && value < 0.0))
        bits -= 1; /* rounded away from zero: one float back toward it (inf - 1 is FLT_MAX) */
    return kcs_float_from_bits(bits | 1u);
}

typedef float kcs_compute_f16;
typedef float kcs_compute_bf16;
typedef float kcs_compute_f32;
typedef double kcs_compute_f64;

static inline float kcs_widen_f16(kcs_f16 value) { return kcs_f16_to_float(value); }
static inline float kcs_widen_bf16(kcs_bf16 value) { return kcs_bf16_to_float(value); }
static inline float kcs_widen_f32(float value) { return value; }
static inline double kcs_widen_f64(double value) { return value; }

static inline kcs_f16 kcs_narrow_f16(float value) { return kcs_f16_from_float(value); }
static inline kcs_bf16 kcs_narrow_bf16(float value) { return kcs_bf16_from_float(value); }
static inline float kcs_narrow_f32(float value) { return value; }
static inline double kcs_narrow_f64(double value) { return value; }

static inline kcs_f16 kcs_narrow_double_f16(double value) { return kcs_f16_from_float(kcs_float_round_to_odd(value)); }
static inline kcs_bf16 kcs_narrow_double_bf16(double value)
{
    return kcs_bf16_from_float(kcs_float_round_to_odd(value));
}
static inline float kcs_narrow_double_f32(double value) { return (float)value; }
static inline double kcs_narrow_double_f64(double value) { return value; }

#endif
