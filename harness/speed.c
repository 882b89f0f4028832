/* speed.c: a kernel's rate against its op's ceiling (see speed.h). */
#include "speed.h"

#include <stdio.h>

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

/* value scaled to k, M, G, T, P so that it reads with a few digits. */
static void scaled(double value, const char *unit, char *text, size_t size)
{
    static const char prefixes[] = " kMGTP";
    int p = 0;
    while (value >= 1000.0 && p < 5) {
        value /= 1000.0;
        p++;
    }
    if (p == 0)
        snprintf(text, size, "%.3g %s", value, unit);
    else
        snprintf(text, size, "%.3g %c%s", value, prefixes[p], unit);
}

void kcs_speed_format(const kcs_speed *speed, char *text, size_t size)
{
    char rate[64];
    scaled(speed->achieved, speed->kind == KCS_CEILING_GEMM ? "FLOP/s" : "B/s", rate, sizeof rate);
    if (speed->ceiling > 0.0)
        snprintf(text, size, "%s = %.2f of %s", rate, speed->fraction, speed->name);
    else
        snprintf(text, size, "%s (no %s ceiling measured)", rate, speed->name);
}
