/* dtype.c: names, sizes and exact conversions of element types (see dtype.h). */
#include "dtype.h"

#include "kcs_ref_fp8.h"
#include "kcs_ref_half.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
    kcs_dtype dtype;
    const char *name;
    size_t size;
} dtypes[] = {
    {KCS_F16, "f16", 2}, {KCS_BF16, "bf16", 2}, {KCS_F32, "f32", 4}, {KCS_F64, "f64", 8},
    {KCS_I32, "i32", 4}, {KCS_I64, "i64", 8}, {KCS_FP8_E4M3, "fp8_e4m3", 1}, {KCS_FP8_E5M2, "fp8_e5m2", 1},
};

const char *kcs_dtype_name(kcs_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].name;
    return "none";
}

kcs_dtype kcs_dtype_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, name) == 0)
            return dtypes[i].dtype;
    return KCS_DTYPE_NONE;
}

const char *kcs_dtype_names(void)
{
    static char names[128];
    if (!names[0])
        for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
            size_t length = strlen(names);
            snprintf(names + length, sizeof names - length, "%s%s", i ? ", " : "", dtypes[i].name);
        }
    return names;
}

size_t kcs_dtype_size(kcs_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].size;
    return 0;
}

int kcs_dtype_is_float(kcs_dtype dtype)
{
    return dtype == KCS_F16 || dtype == KCS_BF16 || dtype == KCS_F32 || dtype == KCS_F64 || dtype == KCS_FP8_E4M3 ||
           dtype == KCS_FP8_E5M2;
}

double kcs_unit_roundoff(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return ldexp(1.0, -11);
    case KCS_BF16: return ldexp(1.0, -8);
    case KCS_F32: return ldexp(1.0, -24);
    case KCS_F64: return ldexp(1.0, -53);
    case KCS_FP8_E4M3: return ldexp(1.0, -4);
    case KCS_FP8_E5M2: return ldexp(1.0, -3);
    default: return 0.0;
    }
}

double kcs_smallest_subnormal(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return ldexp(1.0, -24);
    case KCS_BF16: return ldexp(1.0, -133);
    case KCS_F32: return ldexp(1.0, -149);
    case KCS_F64: return ldexp(1.0, -1074);
    case KCS_FP8_E4M3: return ldexp(1.0, -9);
    case KCS_FP8_E5M2: return ldexp(1.0, -16);
    default: return 0.0;
    }
}

double kcs_smallest_normal(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return ldexp(1.0, -14);
    case KCS_BF16: return FLT_MIN; /* bf16 has float's exponent range */
    case KCS_F32: return FLT_MIN;
    case KCS_F64: return DBL_MIN;
    case KCS_FP8_E4M3: return ldexp(1.0, -6);
    case KCS_FP8_E5M2: return ldexp(1.0, -14);
    default: return 0.0;
    }
}

double kcs_largest_finite(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return 65504.0;
    case KCS_BF16: return 0x1.fep127;
    case KCS_F32: return FLT_MAX;
    case KCS_F64: return DBL_MAX;
    case KCS_FP8_E4M3: return 448.0;
    case KCS_FP8_E5M2: return 57344.0;
    default: return 0.0;
    }
}

/* value rounded once, to nearest even, to a binary format with precision
 * significant bits, normal numbers from 2^min_exponent and the given largest
 * finite value: the result is a double that the format holds exactly, or
 * +-inf. Scaling by powers of two is exact, and nearbyint rounds to nearest
 * even in the default rounding mode. */
static double round_to_format(double value, int precision, int min_exponent, double largest)
{
    if (isnan(value) || isinf(value))
        return value;
    double magnitude = fabs(value);
    if (magnitude == 0.0)
        return value;
    int exponent = ilogb(magnitude);
    if (exponent < min_exponent)
        exponent = min_exponent; /* subnormal: the quantum stops shrinking */
    int quantum = exponent - precision + 1;
    double rounded = ldexp(nearbyint(ldexp(magnitude, -quantum)), quantum);
    if (rounded > largest)
        rounded = INFINITY;
    return copysign(rounded, value);
}

uint16_t kcs_f16_from_double(double value)
{
    /* The rounded value is exact in float, so the float conversion only encodes it. */
    return kcs_f16_from_float((float)round_to_format(value, 11, -14, 65504.0)).bits;
}

uint16_t kcs_bf16_from_double(double value)
{
    return kcs_bf16_from_float((float)round_to_format(value, 8, -126, 0x1.fep127)).bits;
}

uint8_t kcs_fp8_e4m3_from_double(double value)
{
    /* Rounded once here; the float conversion only encodes (overflow, an
     * infinity, becomes e4m3's NaN there). */
    return kcs_fp8_e4m3_from_float((float)round_to_format(value, 4, -6, 448.0)).bits;
}

uint8_t kcs_fp8_e5m2_from_double(double value)
{
    return kcs_fp8_e5m2_from_float((float)round_to_format(value, 3, -14, 57344.0)).bits;
}

double kcs_bf16_to_double(uint16_t bits)
{
    return kcs_bf16_to_float((kcs_bf16){bits});
}

double kcs_f16_to_double(uint16_t half)
{
    return kcs_f16_to_float((kcs_f16){half});
}

void kcs_store_element(void *data, kcs_dtype dtype, size_t index, double value)
{
    switch (dtype) {
    case KCS_F16: ((uint16_t *)data)[index] = kcs_f16_from_double(value); break;
    case KCS_BF16: ((uint16_t *)data)[index] = kcs_bf16_from_double(value); break;
    case KCS_F32: ((float *)data)[index] = (float)value; break;
    case KCS_F64: ((double *)data)[index] = value; break;
    case KCS_I32: ((int32_t *)data)[index] = (int32_t)value; break;
    case KCS_I64: ((int64_t *)data)[index] = (int64_t)value; break;
    case KCS_FP8_E4M3: ((uint8_t *)data)[index] = kcs_fp8_e4m3_from_double(value); break;
    case KCS_FP8_E5M2: ((uint8_t *)data)[index] = kcs_fp8_e5m2_from_double(value); break;
    default: break;
    }
}

double kcs_load_element(const void *data, kcs_dtype dtype, size_t index)
{
    switch (dtype) {
    case KCS_F16: return kcs_f16_to_double(((const uint16_t *)data)[index]);
    case KCS_BF16: return kcs_bf16_to_double(((const uint16_t *)data)[index]);
    case KCS_F32: return ((const float *)data)[index];
    case KCS_F64: return ((const double *)data)[index];
    case KCS_I32: return ((const int32_t *)data)[index];
    case KCS_I64: return (double)((const int64_t *)data)[index];
    case KCS_FP8_E4M3: return kcs_fp8_e4m3_to_float((kcs_fp8_e4m3){((const uint8_t *)data)[index]});
    case KCS_FP8_E5M2: return kcs_fp8_e5m2_to_float((kcs_fp8_e5m2){((const uint8_t *)data)[index]});
    default: return NAN;
    }
}
