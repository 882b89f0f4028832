/* speed.h: how fast a kernel ran against the ceiling its op names.
 *
 * The one place that turns a kernel's median time into a rate and a fraction
 * of the device's measured ceiling: the op descriptor says which ceiling
 * applies (kcs_op.ceiling), this computes it, results.c writes it into the
 * results file and the console prints it, so the two never disagree.
 */
#ifndef KCS_SPEED_H
#define KCS_SPEED_H

#include "backend.h"
#include "op.h"

/* A kernel's speed against the ceiling that applies to its op. */
typedef struct {
    kcs_ceiling_kind kind;   /* which ceiling */
    const char *name;        /* "copy" or "gemm" */
    const char *ceiling_key; /* its member of kcs_ceilings in the results: "copy_bytes_per_s", ... */
    const char *measure;     /* "bytes" or "flops": what achieved counts */
    double achieved;         /* bytes or flops per second of the kernel */
    double ceiling;          /* the device's rate; 0 when not measured */
    double fraction;         /* achieved / ceiling; 0 when not measured */
} kcs_speed;

/* The speed of one call of op with args taking seconds (> 0) on a device
 * with these ceilings (NULL: none measured). */
kcs_speed kcs_kernel_speed(const kcs_op *op, const kcs_op_args *args, const kcs_ceilings *ceilings,
                           double seconds);

/* Writes "12.3 GB/s = 0.95 of copy" (or "1.2 TFLOP/s ...", units scaled)
 * into text; without a ceiling only the rate. */
void kcs_speed_format(const kcs_speed *speed, char *text, size_t size);

/* Writes a rate with the decimal prefix (k, M, G, T, P, E) that puts it
 * below 1000, to 3 significant digits: "538 MFLOP/s", "16.2 GB/s", "1
 * TFLOP/s". unit is "B/s" or "FLOP/s". Every rate the runner prints goes
 * through it, so a slow device reads "2.55 GFLOP/s", never "0.0 TFLOP/s". */
void kcs_format_rate(double per_second, const char *unit, char *text, size_t size);

#endif
