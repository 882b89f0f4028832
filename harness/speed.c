/* speed.c: a kernel's rate against its op's ceiling (see speed.h). */
#include "speed.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

kcs_speed kcs_kernel_speed(const kcs_op *op, const kcs_op_args *args, const kcs_ceilings *ceilings,
                           double seconds)
{
    kcs_speed speed = {.kind = op->ceiling};
    if (op->ceiling == KCS_CEILING_GEMM) {
        speed.name = "gemm";
        speed.ceiling_key = "gemm_flops_per_s";
        speed.measure = "flops";
        speed.achieved = op->flops(args) / seconds;
        speed.ceiling = ceilings ? ceilings->gemm_flops_per_s : 0.0;
    } else {
        speed.name = "copy";
        speed.ceiling_key = "copy_bytes_per_s";
        speed.measure = "bytes";
        speed.achieved = op->bytes(args) / seconds;
        speed.ceiling = ceilings ? ceilings->copy_bytes_per_s : 0.0;
    }
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
