/* dtype.c: names, sizes and exact conversions of element types (see dtype.h). */
#include "dtype.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const struct {
    kcs_dtype dtype;
    const char *name;
    size_t size;
} dtypes[] = {
    {KCS_F16, "f16", 2}, {KCS_F32, "f32", 4}, {KCS_F64, "f64", 8},
    {KCS_I32, "i32", 4}, {KCS_I64, "i64", 8},
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

size_t kcs_dtype_size(kcs_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (dtypes[i].dtype == dtype)
            return dtypes[i].size;
    return 0;
}

int kcs_dtype_is_float(kcs_dtype dtype)
{
    return dtype == KCS_F16 || dtype == KCS_F32 || dtype == KCS_F64;
}

double kcs_unit_roundoff(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return ldexp(1.0, -11);
    case KCS_F32: return ldexp(1.0, -24);
    case KCS_F64: return ldexp(1.0, -53);
    default: return 0.0;
    }
}

double kcs_smallest_subnormal(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return ldexp(1.0, -24);
    case KCS_F32: return ldexp(1.0, -149);
    case KCS_F64: return ldexp(1.0, -1074);
    default: return 0.0;
    }
}

double kcs_largest_finite(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return 65504.0;
    case KCS_F32: return FLT_MAX;
    case KCS_F64: return DBL_MAX;
    default: return 0.0;
    }
}

uint16_t kcs_f16_from_double(double value)
{
    uint16_t sign = signbit(value) ? 0x8000u : 0u;
    if (isnan(value))
        return 0x7e00u;
    double magnitude = fabs(value);
    if (magnitude >= 65520.0) /* halfway between 65504 and 2^16 rounds up to inf */
        return sign | 0x7c00u;
    if (magnitude < ldexp(1.0, -14)) {
        /* Subnormal range: a multiple of 2^-24, rounded to nearest even by
         * nearbyint in the default rounding mode. */
        double units = nearbyint(magnitude * ldexp(1.0, 24));
        return sign | (uint16_t)units; /* 1024 units becomes the smallest normal */
    }
    int exponent;
    double fraction = frexp(magnitude, &exponent); /* magnitude = fraction * 2^exponent, fraction in [0.5,1) */
    double significand = nearbyint(ldexp(fraction, 11)); /* 11 significant bits */
    if (significand == 2048.0) {
        significand = 1024.0;
        exponent += 1;
    }
    unsigned biased = (unsigned)(exponent - 1 + 15);
    if (biased >= 31)
        return sign | 0x7c00u;
    return sign | (uint16_t)(biased << 10) | (uint16_t)((unsigned)significand - 1024u);
}

double kcs_f16_to_double(uint16_t half)
{
    double sign = (half & 0x8000u) ? -1.0 : 1.0;
    unsigned biased = (half >> 10) & 0x1fu;
    unsigned mantissa = half & 0x3ffu;
    if (biased == 31)
        return mantissa ? NAN : sign * INFINITY;
    if (biased == 0)
        return sign * ldexp((double)mantissa, -24);
    return sign * ldexp((double)(mantissa | 0x400u), (int)biased - 25);
}

void kcs_store_element(void *data, kcs_dtype dtype, size_t index, double value)
{
    switch (dtype) {
    case KCS_F16: ((uint16_t *)data)[index] = kcs_f16_from_double(value); break;
    case KCS_F32: ((float *)data)[index] = (float)value; break;
    case KCS_F64: ((double *)data)[index] = value; break;
    case KCS_I32: ((int32_t *)data)[index] = (int32_t)value; break;
    case KCS_I64: ((int64_t *)data)[index] = (int64_t)value; break;
    default: break;
    }
}

double kcs_load_element(const void *data, kcs_dtype dtype, size_t index)
{
    switch (dtype) {
    case KCS_F16: return kcs_f16_to_double(((const uint16_t *)data)[index]);
    case KCS_F32: return ((const float *)data)[index];
    case KCS_F64: return ((const double *)data)[index];
    case KCS_I32: return ((const int32_t *)data)[index];
    case KCS_I64: return (double)((const int64_t *)data)[index];
    default: return NAN;
    }
}
