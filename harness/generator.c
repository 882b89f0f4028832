/* generator.c: the counter-based input generator (see generator.h and
 * docs/inputs.md). Built with -ffp-contract=off like all numerical code here:
 * a fused multiply-add would change the last bit of generated values between
 * compilers and break bit-for-bit regeneration. */
#include "generator.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

uint64_t kcs_random_bits(uint64_t seed, uint64_t counter)
{
    /* SplitMix64 (Steele, Lea and Flood 2014) is a Weyl sequence passed
     * through a mixing function; indexing the sequence directly makes it
     * counter-based. The seed is mixed first so that nearby seeds give
     * unrelated streams. */
    uint64_t key = seed ^ 0x6a09e667f3bcc909ull;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
    key ^= key >> 31;
    uint64_t z = key + (counter + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double kcs_unit_interval(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1.0p-53;
}

double kcs_portable_log(double x)
{
    /* x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln m = 2 atanh(t) with
     * t = (m-1)/(m+1), |t| <= 0.1716, summed as a series to below 1e-17
     * relative; ln 2 is split so that e * ln2_high is exact. */
    const double ln2_high = 0x1.62e42fefa3800p-1;
    const double ln2_low = 0x1.ef35793c76730p-45;
    int e;
    double m = frexp(x, &e); /* m in [0.5, 1) */
    if (m < 0.70710678118654752) {
        m *= 2.0;
        e -= 1;
    }
    double t = (m - 1.0) / (m + 1.0);
    double t2 = t * t;
    double series = 0.0;
    for (int k = 12; k >= 1; k--)
        series = (series + 1.0 / (2 * k + 1)) * t2;
    double ln_m = 2.0 * t + 2.0 * t * series;
    return (double)e * ln2_high + ((double)e * ln2_low + ln_m);
}

uint64_t kcs_string_hash(const char *text)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        hash ^= *p;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

double kcs_distribution_param(const kcs_distribution *distribution, const char *name,
                              double fallback)
{
    for (int i = 0; i < distribution->param_count; i++)
        if (strcmp(distribution->params[i].name, name) == 0)
            return distribution->params[i].value;
    return fallback;
}

/* One distribution: its parameters (required ones have no default) and
 * the function making element i. */
typedef struct {
    const char *name;
    const char *params[7];
    const char *required[3];
    double (*element)(const kcs_distribution *d, kcs_dtype dtype, uint64_t i);
} distribution_kind;

static double uniform_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    (void)dtype;
    double lo = kcs_distribution_param(d, "lo", 0.0), hi = kcs_distribution_param(d, "hi", 1.0);
    return lo + (hi - lo) * kcs_unit_interval(kcs_random_bits(d->seed, i));
}

static double normal_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    (void)dtype;
    /* Marsaglia's polar method; attempt j of element i uses counters
     * 128 i + 2 j and 128 i + 2 j + 1, so elements stay independent of
     * each other's rejections. 64 rejections in a row has probability
     * (1 - pi/4)^64 < 1e-42. */
    double mean = kcs_distribution_param(d, "mean", 0.0);
    double stddev = kcs_distribution_param(d, "stddev", 1.0);
    for (uint64_t attempt = 0; attempt < 64; attempt++) {
        uint64_t counter = i * 128 + 2 * attempt;
        double u = 2.0 * kcs_unit_interval(kcs_random_bits(d->seed, counter)) - 1.0;
        double v = 2.0 * kcs_unit_interval(kcs_random_bits(d->seed, counter + 1)) - 1.0;
        double s = u * u + v * v;
        if (s > 0.0 && s < 1.0)
            return mean + stddev * (u * sqrt(-2.0 * kcs_portable_log(s) / s));
    }
    return mean;
}

static double ramp_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    (void)dtype;
    return kcs_distribution_param(d, "start", 0.0) + (double)i * kcs_distribution_param(d, "step", 1.0);
}

static double constant_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    (void)dtype;
    (void)i;
    return kcs_distribution_param(d, "value", 0.0);
}

static double integers_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    (void)dtype;
    double lo = kcs_distribution_param(d, "lo", 0.0), hi = kcs_distribution_param(d, "hi", 0.0);
    uint64_t range = (uint64_t)(hi - lo) + 1;
    uint64_t pick = (uint64_t)(((unsigned __int128)kcs_random_bits(d->seed, i) * range) >> 64);
    return lo + (double)pick;
}

static double special_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    /* With probability fraction a special value of the dtype from the
     * enabled groups, otherwise uniform on [-1, 1). */
    double choices[12];
    int count = 0;
    double tiny = kcs_smallest_subnormal(dtype), huge = kcs_largest_finite(dtype);
    double smallest_normal = kcs_smallest_normal(dtype);
    if (kcs_distribution_param(d, "zero", 1.0) != 0.0) {
        choices[count++] = 0.0;
        choices[count++] = -0.0;
    }
    if (kcs_distribution_param(d, "subnormal", 1.0) != 0.0) {
        choices[count++] = tiny;
        choices[count++] = -tiny;
        choices[count++] = smallest_normal - tiny;
        choices[count++] = -(smallest_normal - tiny);
    }
    if (kcs_distribution_param(d, "huge", 1.0) != 0.0) {
        choices[count++] = huge;
        choices[count++] = -huge;
    }
    if (kcs_distribution_param(d, "inf", 1.0) != 0.0) {
        choices[count++] = INFINITY;
        choices[count++] = -INFINITY;
    }
    if (kcs_distribution_param(d, "nan", 1.0) != 0.0)
        choices[count++] = NAN;
    double fraction = kcs_distribution_param(d, "fraction", 0.5);
    uint64_t which = kcs_random_bits(d->seed, 2 * i + 1);
    if (count > 0 && kcs_unit_interval(kcs_random_bits(d->seed, 2 * i)) < fraction)
        return choices[(which >> 32) % (uint64_t)count];
    return 2.0 * kcs_unit_interval(which) - 1.0;
}

/* The largest value a whole-number parameter may have: every integer up to
 * 2^52 is exact in a double, and products of two such fit 128 bits. */
#define KCS_LARGEST_WHOLE 0x1.0p52

static double attention_element(const kcs_distribution *d, kcs_dtype dtype, uint64_t i)
{
    /* Row r (of cols elements) attends to a window of positions that starts
     * at start + r * shift and holds visible + r * step of them (at most the
     * row), wrapping round the row's end: uniform on [lo, hi) inside the
     * window, exactly as `uniform` with the same seed, -inf outside. */
    (void)dtype;
    uint64_t cols = (uint64_t)kcs_distribution_param(d, "cols", 1.0);
    uint64_t start = (uint64_t)kcs_distribution_param(d, "start", 0.0);
    uint64_t visible = (uint64_t)kcs_distribution_param(d, "visible", (double)cols);
    uint64_t shift = (uint64_t)kcs_distribution_param(d, "shift", 0.0);
    uint64_t step = (uint64_t)kcs_distribution_param(d, "step", 0.0);
    uint64_t row = i / cols, position = i % cols;
    unsigned __int128 window = (unsigned __int128)visible + (unsigned __int128)row * step;
    uint64_t size = window < cols ? (uint64_t)window : cols;
    unsigned __int128 moved = (unsigned __int128)start + (unsigned __int128)(row % cols) * (shift % cols);
    uint64_t first = (uint64_t)(moved % cols);
    if ((position + cols - first) % cols >= size)
        return -INFINITY;
    double lo = kcs_distribution_param(d, "lo", 0.0), hi = kcs_distribution_param(d, "hi", 1.0);
    return lo + (hi - lo) * kcs_unit_interval(kcs_random_bits(d->seed, i));
}

static const distribution_kind kinds[] = {
    {"uniform", {"lo", "hi"}, {0}, uniform_element},
    {"normal", {"mean", "stddev"}, {0}, normal_element},
    {"ramp", {"start", "step"}, {0}, ramp_element},
    {"constant", {"value"}, {"value"}, constant_element},
    {"integers", {"lo", "hi"}, {"lo", "hi"}, integers_element},
    {"special", {"fraction", "zero", "subnormal", "huge", "inf", "nan"}, {0}, special_element},
    {"attention", {"cols", "start", "visible", "shift", "step", "lo", "hi"}, {"cols"}, attention_element},
};

const char *const kcs_distribution_help =
    "uniform lo=0 hi=1        uniform on [lo, hi)\n"
    "normal mean=0 stddev=1   normal (Marsaglia's polar method)\n"
    "ramp start=0 step=1      x[i] = start + i * step\n"
    "constant value=V         every element V (inf, -inf and nan allowed)\n"
    "integers lo=A hi=B       integers uniform on [A, B]\n"
    "special fraction=0.5 zero=1 subnormal=1 huge=1 inf=1 nan=1\n"
    "                         special values of the dtype from the groups set to 1,\n"
    "                         with probability fraction; otherwise uniform on [-1, 1)\n"
    "attention cols=C start=0 visible=C shift=0 step=0 lo=0 hi=1\n"
    "                         rows of C elements (the matrix's last axis), each -inf\n"
    "                         outside a window of visible + row * step positions\n"
    "                         from start + row * shift (wrapping round the row's end),\n"
    "                         uniform on [lo, hi) inside: attention masks\n";

static const distribution_kind *find_kind(const char *name)
{
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return &kinds[k];
    return NULL;
}

kcs_status kcs_distribution_check(const kcs_distribution *d, kcs_error *err)
{
    const distribution_kind *kind = find_kind(d->name);
    if (!kind)
        return kcs_fail(err, KCS_ERROR,
                        "unknown distribution '%s' (known: uniform, normal, ramp, constant, "
                        "integers, special, attention)", d->name);
    for (int i = 0; i < d->param_count; i++) {
        int known = 0;
        for (int p = 0; p < 7 && kind->params[p]; p++)
            known |= strcmp(kind->params[p], d->params[i].name) == 0;
        if (!known)
            return kcs_fail(err, KCS_ERROR, "distribution '%s' has no parameter '%s'", d->name,
                            d->params[i].name);
        for (int j = 0; j < i; j++)
            if (strcmp(d->params[j].name, d->params[i].name) == 0)
                return kcs_fail(err, KCS_ERROR, "parameter '%s' given twice", d->params[i].name);
    }
    for (int r = 0; r < 3 && kind->required[r]; r++) {
        int given = 0; /* by name: "value=nan" is given, and NaN */
        for (int i = 0; i < d->param_count; i++)
            given |= strcmp(d->params[i].name, kind->required[r]) == 0;
        if (!given)
            return kcs_fail(err, KCS_ERROR, "distribution '%s' needs parameter '%s'", d->name,
                            kind->required[r]);
    }
    if (strcmp(d->name, "uniform") == 0 || strcmp(d->name, "integers") == 0 ||
        strcmp(d->name, "attention") == 0) {
        double lo = kcs_distribution_param(d, "lo", 0.0), hi = kcs_distribution_param(d, "hi", 1.0);
        if (!(isfinite(lo) && isfinite(hi) && lo <= hi))
            return kcs_fail(err, KCS_ERROR, "'%s' needs finite lo <= hi (lo=%g hi=%g)", d->name, lo, hi);
        if (strcmp(d->name, "integers") == 0 &&
            (lo != floor(lo) || hi != floor(hi) || hi - lo > 0x1.0p52))
            return kcs_fail(err, KCS_ERROR, "'integers' needs whole lo and hi less than 2^52 apart");
    }
    if (strcmp(d->name, "normal") == 0 && !(kcs_distribution_param(d, "stddev", 1.0) >= 0.0))
        return kcs_fail(err, KCS_ERROR, "'normal' needs stddev >= 0");
    if (strcmp(d->name, "attention") == 0) {
        double cols = kcs_distribution_param(d, "cols", 0.0);
        if (!(cols >= 1 && cols <= KCS_LARGEST_WHOLE && cols == floor(cols)))
            return kcs_fail(err, KCS_ERROR, "'attention' needs a whole cols from 1 to 2^52 (cols=%g)", cols);
        const char *const whole[] = {"start", "visible", "shift", "step"};
        for (int w = 0; w < 4; w++) {
            double value = kcs_distribution_param(d, whole[w], 0.0);
            if (!(value >= 0 && value <= KCS_LARGEST_WHOLE && value == floor(value)))
                return kcs_fail(err, KCS_ERROR, "'attention' needs a whole %s from 0 to 2^52 (%s=%g)",
                                whole[w], whole[w], value);
        }
        double visible = kcs_distribution_param(d, "visible", cols);
        if (visible > cols)
            return kcs_fail(err, KCS_ERROR, "'attention' needs visible <= cols (visible=%g cols=%g)",
                            visible, cols);
    }
    if (strcmp(d->name, "special") == 0) {
        double fraction = kcs_distribution_param(d, "fraction", 0.5);
        if (!(fraction >= 0.0 && fraction <= 1.0))
            return kcs_fail(err, KCS_ERROR, "'special' needs 0 <= fraction <= 1");
    }
    return KCS_OK;
}

kcs_status kcs_distribution_check_rows(const kcs_distribution *d, size_t row_length, kcs_error *err)
{
    if (strcmp(d->name, "attention") != 0)
        return KCS_OK;
    double cols = kcs_distribution_param(d, "cols", 0.0);
    if (cols != (double)row_length)
        return kcs_fail(err, KCS_ERROR,
                        "'attention' has cols=%g, but the array's rows (its last axis) have %zu elements",
                        cols, row_length);
    return KCS_OK;
}

kcs_status kcs_generate(const kcs_distribution *d, kcs_dtype dtype, void *data, size_t first,
                        size_t count, kcs_error *err)
{
    if (kcs_distribution_check(d, err) != KCS_OK)
        return KCS_ERROR;
    if (!kcs_dtype_is_float(dtype) && dtype != KCS_I32 && dtype != KCS_I64)
        return kcs_fail(err, KCS_ERROR, "cannot generate dtype %s", kcs_dtype_name(dtype));
    const distribution_kind *kind = find_kind(d->name);
    for (size_t i = 0; i < count; i++)
        kcs_store_element(data, dtype, i, kind->element(d, dtype, (uint64_t)(first + i)));
    return KCS_OK;
}
