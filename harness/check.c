/* check.c: element-wise comparison within derived bounds (see check.h). */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Signalling NaNs with a payload no arithmetic produces: computed NaNs are
 * quiet, so a NaN that was computed is never mistaken for an unwritten one. */
static const uint16_t poison_f16 = 0x7d5a;
static const uint16_t poison_bf16 = 0x7fad;
static const uint32_t poison_f32 = 0x7fa0dead;
static const uint64_t poison_f64 = 0x7ff4deadbeef0badull;
static const uint32_t poison_i32 = 0x5eadbeefu;
static const uint64_t poison_i64 = 0x5eadbeef5eadbeefull;
/* FP8 has no NaN payloads to spare (e4m3 has one NaN per sign): a NaN of
 * both formats (0xff). FP8 is never an output, so this only marks the guard
 * past the end of an FP8 input, where any write is caught. */
static const uint8_t poison_fp8 = 0xff;

void kcs_poison(void *data, kcs_dtype dtype, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        switch (dtype) {
        case KCS_F16: memcpy((uint16_t *)data + i, &poison_f16, 2); break;
        case KCS_BF16: memcpy((uint16_t *)data + i, &poison_bf16, 2); break;
        case KCS_F32: memcpy((uint32_t *)data + i, &poison_f32, 4); break;
        case KCS_F64: memcpy((uint64_t *)data + i, &poison_f64, 8); break;
        case KCS_I32: memcpy((uint32_t *)data + i, &poison_i32, 4); break;
        case KCS_I64: memcpy((uint64_t *)data + i, &poison_i64, 8); break;
        case KCS_FP8_E4M3:
        case KCS_FP8_E5M2: memcpy((uint8_t *)data + i, &poison_fp8, 1); break;
        default: break;
        }
    }
}

int kcs_is_poison(const void *data, kcs_dtype dtype, size_t index)
{
    switch (dtype) {
    case KCS_F16: return memcmp((const uint16_t *)data + index, &poison_f16, 2) == 0;
    case KCS_BF16: return memcmp((const uint16_t *)data + index, &poison_bf16, 2) == 0;
    case KCS_F32: return memcmp((const uint32_t *)data + index, &poison_f32, 4) == 0;
    case KCS_F64: return memcmp((const uint64_t *)data + index, &poison_f64, 8) == 0;
    case KCS_I32: return memcmp((const uint32_t *)data + index, &poison_i32, 4) == 0;
    case KCS_I64: return memcmp((const uint64_t *)data + index, &poison_i64, 8) == 0;
    case KCS_FP8_E4M3:
    case KCS_FP8_E5M2: return ((const uint8_t *)data)[index] == poison_fp8;
    default: return 0;
    }
}

/* Whether element index is a NaN whose payload is the poison's, quieted:
 * arithmetic on a signalling NaN (on x86 and most CPUs) returns it with the
 * quiet bit set, so such a NaN came from reading a guard or an unwritten output. */
static int carries_poison_payload(const void *data, kcs_dtype dtype, size_t index)
{
    if (dtype == KCS_F64) {
        uint64_t bits;
        memcpy(&bits, (const uint64_t *)data + index, 8);
        return (bits | 0x0008000000000000ull) == (poison_f64 | 0x0008000000000000ull);
    }
    if (dtype == KCS_F32) {
        uint32_t bits;
        memcpy(&bits, (const uint32_t *)data + index, 4);
        return (bits | 0x00400000u) == (poison_f32 | 0x00400000u);
    }
    if (dtype == KCS_F16 || dtype == KCS_BF16) {
        uint16_t bits, poison = dtype == KCS_F16 ? poison_f16 : poison_bf16;
        uint16_t quiet = dtype == KCS_F16 ? 0x0200u : 0x0040u;
        memcpy(&bits, (const uint16_t *)data + index, 2);
        return (bits | quiet) == (poison | quiet);
    }
    return 0;
}

void kcs_fraction_histogram_add(kcs_fraction_histogram *histogram, double fraction)
{
    if (!(fraction <= 1.0)) {
        histogram->above++; /* outside the bound, or NaN */
        return;
    }
    if (!(fraction > 0.0)) {
        histogram->counts[0]++; /* exact */
        return;
    }
    /* fraction = m 2^e with m in [0.5, 1): it is at most 2^e, and at most
     * 2^(e-1) only when m = 0.5; frexp is exact, so the edges are too. */
    int exponent;
    double mantissa = frexp(fraction, &exponent);
    int upper = mantissa == 0.5 ? exponent - 1 : exponent;
    int bin = upper - KCS_FRACTION_LOWEST_LOG2;
    histogram->counts[bin < 0 ? 0 : bin]++;
}

/* The smallest magnitude that rounds to infinity in dtype. */
static double overflow_threshold(kcs_dtype dtype)
{
    switch (dtype) {
    case KCS_F16: return 65520.0;
    case KCS_BF16: return 0x1.ffp127;
    case KCS_F32: return 0x1.ffffffp127;
    default: return INFINITY;
    }
}

/* Checks one element; returns its error as a fraction of its bound (inf
 * when outside) and writes what is wrong into why when it fails. */
static double check_element(kcs_dtype dtype, double expected, double bound, double actual,
                            double *error, char *why, size_t why_size)
{
    *error = 0.0;
    if (isnan(expected)) {
        if (isnan(actual))
            return 0.0;
        *error = INFINITY;
        snprintf(why, why_size, "expected NaN, got %.17g", actual);
        return INFINITY;
    }
    if (isinf(expected)) {
        if (actual == expected)
            return 0.0;
        *error = INFINITY;
        snprintf(why, why_size, "expected %s, got %.17g", expected > 0 ? "+inf" : "-inf", actual);
        return INFINITY;
    }
    if (isnan(actual)) {
        *error = INFINITY;
        snprintf(why, why_size, "expected %.17g, got NaN", expected);
        return INFINITY;
    }
    if (isinf(actual)) {
        if (signbit(actual) == signbit(expected) && fabs(expected) + bound >= overflow_threshold(dtype))
            return 1.0; /* rounding within the bound may reach the overflow threshold */
        *error = INFINITY;
        snprintf(why, why_size, "expected %.17g, got %s", expected, actual > 0 ? "+inf" : "-inf");
        return INFINITY;
    }
    *error = fabs(actual - expected);
    if (*error == 0.0)
        return 0.0;
    double fraction = bound > 0.0 ? *error / bound : INFINITY;
    if (*error > bound)
        snprintf(why, why_size, "expected %.17g, got %.17g: error %.3g is %.3g times the bound %.3g",
                 expected, actual, *error, bound > 0 ? *error / bound : INFINITY, bound);
    return fraction;
}

double kcs_check_element(kcs_dtype dtype, double expected, double bound, double actual)
{
    double error;
    char why[512] = "";
    double fraction = check_element(dtype, expected, bound, actual, &error, why, sizeof why);
    return why[0] && !(fraction > 1.0) ? INFINITY : fraction;
}

void kcs_element_coordinates(const kcs_array_spec *spec, size_t index, size_t coordinates[])
{
    for (int d = spec->ndim - 1; d >= 0; d--) {
        coordinates[d] = spec->shape[d] ? index % spec->shape[d] : 0;
        index = spec->shape[d] ? index / spec->shape[d] : 0;
    }
}

void kcs_element_name(const kcs_array_spec *spec, size_t index, char *text, size_t size)
{
    if (spec->ndim < 2) {
        snprintf(text, size, "%s[%zu]", spec->name, index);
        return;
    }
    size_t coordinates[KCS_MAX_DIMS];
    kcs_element_coordinates(spec, index, coordinates);
    snprintf(text, size, "%s[", spec->name);
    for (int d = 0; d < spec->ndim; d++) {
        size_t length = strlen(text);
        snprintf(text + length, size - length, "%s%zu", d ? ", " : "", coordinates[d]);
    }
    size_t length = strlen(text);
    snprintf(text + length, size - length, "]");
}

void kcs_check_outputs(const kcs_layout *layout, void *const actual[], const kcs_expected expected[],
                       kcs_check_result *result)
{
    memset(result, 0, sizeof *result);
    result->worst_output = -1;
    double worst = -1.0;
    for (int o = 0; o < layout->output_count; o++) {
        const kcs_array_spec *spec = &layout->outputs[o];
        const kcs_expected *e = &expected[o];
        for (size_t k = 0; k < e->count; k++) {
            size_t index = e->indices ? e->indices[k] : k;
            result->checked++;
            char why[512] = "";
            double value, error, fraction;
            if (kcs_is_poison(actual[o], spec->dtype, index)) {
                result->unwritten++;
                value = NAN;
                error = INFINITY;
                fraction = INFINITY;
                snprintf(why, sizeof why, "never written: still holds the poison written before the run");
            } else {
                value = kcs_load_element(actual[o], spec->dtype, index);
                fraction = check_element(spec->dtype, e->values[k], e->bounds[k], value, &error, why,
                                         sizeof why);
                if (why[0] && carries_poison_payload(actual[o], spec->dtype, index)) {
                    size_t length = strlen(why);
                    snprintf(why + length, sizeof why - length,
                             " carrying the poison's payload: the kernel read past the end of an input "
                             "(its guard) or an output it had not written");
                }
            }
            kcs_fraction_histogram_add(&result->histogram, fraction);
            int failed = why[0] != '\0';
            if (failed && result->failures++ == 0) {
                char element[128];
                kcs_element_name(spec, index, element, sizeof element);
                snprintf(result->diagnosis, sizeof result->diagnosis, "%s: %s", element, why);
            }
            if (fraction > worst) {
                worst = fraction;
                result->worst_output = o;
                result->worst_index = index;
                result->worst_expected = e->values[k];
                result->worst_actual = value;
                result->worst_error = error;
                result->worst_bound = e->bounds[k];
            }
        }
    }
    result->fraction = worst < 0 ? 0.0 : worst;
    result->passed = result->failures == 0;
    if (result->failures > 1) {
        size_t length = strlen(result->diagnosis);
        snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                 " (and %zu more of %zu checked elements outside their bound)", result->failures - 1,
                 result->checked);
    }
    if (result->unwritten) {
        size_t length = strlen(result->diagnosis);
        snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                 "; %zu elements never written", result->unwritten);
    }
}

void kcs_diagnose_trivial(const kcs_layout *layout, void *const inputs[], void *const actual[],
                          kcs_check_result *result)
{
    if (result->passed)
        return;
    for (int o = 0; o < layout->output_count; o++) {
        const kcs_array_spec *out = &layout->outputs[o];
        size_t bytes = kcs_array_bytes(out);
        if (bytes == 0)
            continue;
        const unsigned char *data = actual[o];
        int zeros = 1;
        for (size_t i = 0; i < bytes && zeros; i++)
            zeros = data[i] == 0;
        size_t length = strlen(result->diagnosis);
        if (zeros) {
            snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                     "; output %s is all zeros", out->name);
            continue;
        }
        for (int i = 0; i < layout->input_count; i++)
            if (layout->inputs[i].dtype == out->dtype && kcs_array_bytes(&layout->inputs[i]) == bytes &&
                memcmp(inputs[i], actual[o], bytes) == 0)
                snprintf(result->diagnosis + length, sizeof result->diagnosis - length,
                         "; output %s is a copy of input %s", out->name, layout->inputs[i].name);
    }
}
