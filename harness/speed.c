/* speed.c: which ceiling a kernel is judged against, and its rate against it (see speed.h). */
#include "speed.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define CEILING(kind, name, label, key, measure, bit)                                                        \
    {kind, name, label, #key, measure, offsetof(kcs_ceilings, key), bit}
const kcs_ceiling_info kcs_ceiling_infos[] = {
    CEILING(KCS_CEILING_COPY, "copy", "copy", copy_bytes_per_s, "bytes", KCS_CEILING_BIT_COPY),
    CEILING(KCS_CEILING_GEMM, "gemm", "SGEMM", gemm_flops_per_s, "flops", KCS_CEILING_BIT_GEMM),
    CEILING(KCS_CEILING_GEMM_TF32, "gemm-tf32", "TF32 GEMM", gemm_tf32_flops_per_s, "flops", KCS_CEILING_BIT_GEMM_TF32),
    CEILING(KCS_CEILING_GEMM_F16, "gemm-f16", "f16 GEMM", gemm_f16_flops_per_s, "flops", KCS_CEILING_BIT_GEMM_F16),
    CEILING(KCS_CEILING_GEMM_BF16, "gemm-bf16", "bf16 GEMM", gemm_bf16_flops_per_s, "flops", KCS_CEILING_BIT_GEMM_BF16),
    CEILING(KCS_CEILING_GEMM_F64, "gemm-f64", "DGEMM", gemm_f64_flops_per_s, "flops", KCS_CEILING_BIT_GEMM_F64),
    CEILING(KCS_CEILING_GEMM_FP8_E4M3, "gemm-fp8-e4m3", "FP8 e4m3 GEMM", gemm_fp8_e4m3_flops_per_s, "flops",
            KCS_CEILING_BIT_GEMM_FP8_E4M3),
    {KCS_CEILING_COPY, NULL, NULL, NULL, NULL, 0, 0},
};
#undef CEILING

#define RATE(bit, key, label) {bit, #key, label, offsetof(kcs_ceilings, key)}
const kcs_ceiling_rate kcs_ceiling_rates[] = {
    RATE(KCS_CEILING_BIT_COPY, copy_bytes_per_s, "copy"),
    RATE(KCS_CEILING_BIT_HOST_TO_DEVICE, host_to_device_bytes_per_s, "host to device"),
    RATE(KCS_CEILING_BIT_FMA, fma_flops_per_s, "FMA"),
    RATE(KCS_CEILING_BIT_GEMM, gemm_flops_per_s, "SGEMM"),
    RATE(KCS_CEILING_BIT_GEMM_TF32, gemm_tf32_flops_per_s, "TF32 GEMM"),
    RATE(KCS_CEILING_BIT_GEMM_F16, gemm_f16_flops_per_s, "f16 GEMM"),
    RATE(KCS_CEILING_BIT_GEMM_BF16, gemm_bf16_flops_per_s, "bf16 GEMM"),
    RATE(KCS_CEILING_BIT_GEMM_F64, gemm_f64_flops_per_s, "DGEMM"),
    RATE(KCS_CEILING_BIT_GEMM_FP8_E4M3, gemm_fp8_e4m3_flops_per_s, "FP8 e4m3 GEMM"),
    {0, NULL, NULL, 0},
};
#undef RATE

double kcs_ceiling_rate_value(const kcs_ceilings *ceilings, const kcs_ceiling_rate *rate)
{
    return *(const double *)((const char *)ceilings + rate->offset);
}

double *kcs_ceiling_rate_slot(kcs_ceilings *ceilings, const kcs_ceiling_rate *rate)
{
    return (double *)((char *)ceilings + rate->offset);
}

int kcs_ceiling_rate_not_measured_in_run(const kcs_ceilings *ceilings, const kcs_ceiling_rate *rate)
{
    return !(ceilings->asked & rate->bit) && !(kcs_ceiling_rate_value(ceilings, rate) > 0.0);
}

kcs_ceiling_mask kcs_ceilings_judging(const kcs_op *op, const kcs_op_args *args)
{
    const kcs_ceiling_info *info = kcs_ceiling_info_of(kcs_ceiling_of(op, args));
    return info ? info->bit : 0;
}

const kcs_ceiling_info *kcs_ceiling_info_of(kcs_ceiling_kind kind)
{
    for (const kcs_ceiling_info *info = kcs_ceiling_infos; info->name; info++)
        if (info->kind == kind)
            return info;
    return NULL;
}

kcs_ceiling_kind kcs_ceiling_of(const kcs_op *op, const kcs_op_args *args)
{
    if (op->ceiling != KCS_CEILING_GEMM_OF_MODE)
        return op->ceiling;
    /* A GEMM's mode is its case's dtype, and for f32 mode=tf32. A plain
     * (FMA-unit) f16 kernel is filed under the f16 tensor-core rate too: that
     * is the rate an f16 GEMM can reach on the card, and the fraction says how
     * far from it the kernel is. FP8 e5m2 inputs run at the e4m3 rate on every
     * card kcs knows (the tensor cores take either), so both are judged
     * against the e4m3 ceiling. */
    switch (args->dtype) {
    case KCS_F64: return KCS_CEILING_GEMM_F64;
    case KCS_F16: return KCS_CEILING_GEMM_F16;
    case KCS_BF16: return KCS_CEILING_GEMM_BF16;
    case KCS_FP8_E4M3:
    case KCS_FP8_E5M2: return KCS_CEILING_GEMM_FP8_E4M3;
    case KCS_F32: return args->gemm.tf32 ? KCS_CEILING_GEMM_TF32 : KCS_CEILING_GEMM;
    default: return KCS_CEILING_GEMM;
    }
}

double kcs_ceiling_value(const kcs_ceilings *ceilings, kcs_ceiling_kind kind)
{
    const kcs_ceiling_info *info = kcs_ceiling_info_of(kind);
    if (!ceilings || !info)
        return 0.0;
    return *(const double *)((const char *)ceilings + info->offset);
}

kcs_speed kcs_kernel_speed(const kcs_op *op, const kcs_op_args *args, const kcs_ceilings *ceilings,
                           double seconds)
{
    kcs_speed speed = {.kind = kcs_ceiling_of(op, args)};
    const kcs_ceiling_info *info = kcs_ceiling_info_of(speed.kind);
    speed.name = info->name;
    speed.ceiling_key = info->ceiling_key;
    speed.measure = info->measure;
    speed.achieved = (strcmp(info->measure, "flops") == 0 ? op->flops(args) : op->bytes(args)) / seconds;
    speed.ceiling = kcs_ceiling_value(ceilings, speed.kind);
    if (speed.ceiling > 0.0)
        speed.fraction = speed.achieved / speed.ceiling;
    return speed;
}

void kcs_format_rate(double per_second, const char *unit, char *text, size_t size)
{
    static const char prefixes[] = "kMGTPE";
    double value = per_second;
    int p = -1; /* prefixes[p], or none */
    while (isfinite(value) && fabs(value) >= 1000.0 && p + 1 < (int)sizeof prefixes - 1) {
        value /= 1000.0;
        p++;
    }
    char digits[32];
    snprintf(digits, sizeof digits, "%.3g", value);
    if (strchr(digits, 'e') && fabs(value) >= 1.0 && p + 1 < (int)sizeof prefixes - 1) {
        /* 999.5 and above round to 1000, which %.3g writes as 1e+03 */
        p++;
        snprintf(digits, sizeof digits, "%.3g", value / 1000.0);
    }
    if (p < 0)
        snprintf(text, size, "%s %s", digits, unit);
    else
        snprintf(text, size, "%s %c%s", digits, prefixes[p], unit);
}

void kcs_speed_format(const kcs_speed *speed, char *text, size_t size)
{
    char rate[64];
    kcs_format_rate(speed->achieved, strcmp(speed->measure, "flops") == 0 ? "FLOP/s" : "B/s", rate, sizeof rate);
    if (speed->ceiling > 0.0)
        snprintf(text, size, "%s = %.2f of %s", rate, speed->fraction, speed->name);
    else
        snprintf(text, size, "%s (no %s ceiling measured)", rate, speed->name);
}
