/* dtype.h: the element types kcs knows, their names and sizes, and the exact
 * conversions between them that the generator and checker need.
 *
 * Float16 is IEEE binary16, stored as uint16_t: C11 has no portable half type,
 * and the anneal points are stored (not computed) in it.
 */
#ifndef KCS_DTYPE_H
#define KCS_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* An element type of an array. */
typedef enum {
    KCS_DTYPE_NONE = 0,
    KCS_F16,
    KCS_F32,
    KCS_F64,
    KCS_I32,
    KCS_I64,
} kcs_dtype;

/* The name used in case files and results ("f32"), or "none". */
const char *kcs_dtype_name(kcs_dtype dtype);

/* The dtype called name, or KCS_DTYPE_NONE if there is none. */
kcs_dtype kcs_dtype_from_name(const char *name);

/* Bytes per element (0 for KCS_DTYPE_NONE). */
size_t kcs_dtype_size(kcs_dtype dtype);

/* Whether dtype is a floating-point type. */
int kcs_dtype_is_float(kcs_dtype dtype);

/* Unit roundoff u = 2^-p of a floating-point dtype (2^-11, 2^-24, 2^-53). */
double kcs_unit_roundoff(kcs_dtype dtype);

/* Smallest positive subnormal of a floating-point dtype. */
double kcs_smallest_subnormal(kcs_dtype dtype);

/* Largest finite value of a floating-point dtype. */
double kcs_largest_finite(kcs_dtype dtype);

/* value rounded to nearest-even binary16 (overflow to inf, NaN kept NaN). */
uint16_t kcs_f16_from_double(double value);

/* The exact double value of a binary16. */
double kcs_f16_to_double(uint16_t half);

/* value rounded once to dtype and stored at element index of data. */
void kcs_store_element(void *data, kcs_dtype dtype, size_t index, double value);

/* Element index of data as a double (exact for every dtype kcs has, i64 aside). */
double kcs_load_element(const void *data, kcs_dtype dtype, size_t index);

#endif
