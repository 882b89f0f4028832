/* dtype.h: the element types kcs knows, their names and sizes, and the exact
 * conversions between them that the generator and checker need.
 *
 * f16 (IEEE binary16) and bf16 (bfloat16) are stored as 16-bit patterns
 * (kcs_f16, kcs_bf16 in ref/kcs_ref_half.h, which also converts them to and
 * from float); the functions here round from double, once, as the generator
 * and the oracles need. The FP8 types (GEMM inputs only: no op writes them)
 * are bytes, converted in ref/kcs_ref_fp8.h.
 */
#ifndef KCS_DTYPE_H
#define KCS_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "kcs_export.h"

KCS_API_BEGIN /* public: installed with the libraries (docs/library.md) */

/* An element type of an array. */
typedef enum {
    KCS_DTYPE_NONE = 0,
    KCS_F16,
    KCS_BF16,
    KCS_F32,
    KCS_F64,
    KCS_I32,
    KCS_I64,
    KCS_FP8_E4M3, /* OCP FP8 E4M3 ("e4m3fn"): 4 significant bits, no infinities, largest 448 */
    KCS_FP8_E5M2, /* OCP FP8 E5M2: 3 significant bits, IEEE-like, largest 57344 */
} kcs_dtype;

/* The name used in case files and results ("f32"), or "none". */
const char *kcs_dtype_name(kcs_dtype dtype);

/* The dtype called name, or KCS_DTYPE_NONE if there is none. */
kcs_dtype kcs_dtype_from_name(const char *name);

/* Every dtype's name, comma-separated ("f16, bf16, f32, ..."), for messages. */
const char *kcs_dtype_names(void);

/* Bytes per element (0 for KCS_DTYPE_NONE). */
size_t kcs_dtype_size(kcs_dtype dtype);

/* Whether dtype is a floating-point type. */
int kcs_dtype_is_float(kcs_dtype dtype);

/* Unit roundoff u = 2^-p of a floating-point dtype (f16 2^-11, bf16 2^-8,
 * f32 2^-24, f64 2^-53). */
double kcs_unit_roundoff(kcs_dtype dtype);

/* Smallest positive subnormal of a floating-point dtype. */
double kcs_smallest_subnormal(kcs_dtype dtype);

/* Smallest positive normal value of a floating-point dtype. */
double kcs_smallest_normal(kcs_dtype dtype);

/* Largest finite value of a floating-point dtype. */
double kcs_largest_finite(kcs_dtype dtype);

/* value rounded once, to nearest even, to binary16 (overflow to inf, NaN
 * kept NaN), as its bit pattern. */
uint16_t kcs_f16_from_double(double value);

/* The exact double value of a binary16 bit pattern. */
double kcs_f16_to_double(uint16_t half);

/* value rounded once, to nearest even, to bfloat16 (overflow to inf, NaN
 * kept NaN), as its bit pattern. Not (bf16)(float)value: that rounds twice. */
uint16_t kcs_bf16_from_double(double value);

/* The exact double value of a bfloat16 bit pattern. */
double kcs_bf16_to_double(uint16_t bits);

/* value rounded once, to nearest even, to OCP FP8 E4M3 (beyond 448 and NaN:
 * NaN, e4m3 having no infinity), as its bit pattern (ref/kcs_ref_fp8.h). */
uint8_t kcs_fp8_e4m3_from_double(double value);

/* value rounded once, to nearest even, to OCP FP8 E5M2 (overflow to inf), as its bit pattern. */
uint8_t kcs_fp8_e5m2_from_double(double value);

/* value rounded once to dtype and stored at element index of data. */
void kcs_store_element(void *data, kcs_dtype dtype, size_t index, double value);

/* Element index of data as a double (exact for every dtype kcs has, i64 aside). */
double kcs_load_element(const void *data, kcs_dtype dtype, size_t index);

KCS_API_END

#endif
