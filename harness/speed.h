/* speed.h: how fast a kernel ran against the ceiling that applies to it.
 *
 * The one place that turns a kernel's median time into a rate and a fraction
 * of the device's measured ceiling, and the one place that decides which
 * ceiling applies: the op descriptor names a kind (kcs_op.ceiling); a GEMM
 * names KCS_CEILING_GEMM_OF_MODE, and kcs_ceiling_of picks its mode's rate
 * from the case's dtype and mode (f64 -> f64, f16 -> f16, bf16 -> bf16, FP8 ->
 * FP8 e4m3, f32 with mode=tf32 -> TF32, f32 -> f32). results.c writes the
 * outcome into the results file and the console prints it, so the two never
 * disagree; the table of ceilings (kcs_ceiling_infos) names each ceiling for
 * the results file, the console and the report alike.
 */
#ifndef KCS_SPEED_H
#define KCS_SPEED_H

#include "backend.h"
#include "op.h"

/* One ceiling a device may measure. */
typedef struct {
    kcs_ceiling_kind kind;
    const char *name;        /* "copy", "gemm", "gemm-tf32", ...: timing.ceiling.kind in the results */
    const char *label;       /* as the console's "ceilings" line names it: "SGEMM", "TF32 GEMM", ... */
    const char *ceiling_key; /* its member of kcs_ceilings in the results: "copy_bytes_per_s", ... */
    const char *measure;     /* "bytes" or "flops": what achieved counts */
    size_t offset;           /* of its double in kcs_ceilings */
    kcs_ceiling_mask bit;    /* the bit that asks a backend to measure it (backend.h) */
} kcs_ceiling_info;

/* Every ceiling a kernel can be judged against, in the order the console
 * prints them (the copy first, then the GEMM rates), ending with a NULL name. */
extern const kcs_ceiling_info kcs_ceiling_infos[];

/* The entry of kcs_ceiling_infos for a resolved kind (not
 * KCS_CEILING_GEMM_OF_MODE), or NULL. */
const kcs_ceiling_info *kcs_ceiling_info_of(kcs_ceiling_kind kind);

/* The ceiling a kernel of op running the case args is judged against:
 * op->ceiling, or for a GEMM (KCS_CEILING_GEMM_OF_MODE) its mode's. */
kcs_ceiling_kind kcs_ceiling_of(const kcs_op *op, const kcs_op_args *args);

/* The ceilings (a mask of one bit) a kernel of op running the case args is
 * judged against: the bit of kcs_ceiling_of's kind. The runner asks a
 * device's backend for the union of these over the cases it times. */
kcs_ceiling_mask kcs_ceilings_judging(const kcs_op *op, const kcs_op_args *args);

/* One rate of kcs_ceilings, judged against or not (the upload and FMA rates
 * only inform): the bit that asks for it, its key in the results file, its
 * name on the console. */
typedef struct {
    kcs_ceiling_mask bit; /* KCS_CEILING_BIT_* */
    const char *key;      /* "copy_bytes_per_s", ...: its member of devices[].ceilings */
    const char *label;    /* "copy", "host to device", "FMA", "SGEMM", ... */
    size_t offset;        /* of its double in kcs_ceilings */
} kcs_ceiling_rate;

/* Every rate of kcs_ceilings, the copy first (the console's order), ending
 * with a NULL key. */
extern const kcs_ceiling_rate kcs_ceiling_rates[];

/* The value ceilings holds for rate (0: not measured). */
double kcs_ceiling_rate_value(const kcs_ceilings *ceilings, const kcs_ceiling_rate *rate);

/* Where ceilings holds rate, to fill it. */
double *kcs_ceiling_rate_slot(kcs_ceilings *ceilings, const kcs_ceiling_rate *rate);

/* Whether rate is missing from ceilings because this run did not ask for it
 * (outside ceilings->asked and not measured anyway). */
int kcs_ceiling_rate_not_measured_in_run(const kcs_ceilings *ceilings, const kcs_ceiling_rate *rate);

/* The rate ceilings holds for kind, or 0 (not measured, or ceilings NULL). */
double kcs_ceiling_value(const kcs_ceilings *ceilings, kcs_ceiling_kind kind);

/* A kernel's speed against the ceiling that applies to it. */
typedef struct {
    kcs_ceiling_kind kind;   /* which ceiling */
    const char *name;        /* "copy", "gemm", "gemm-f16", ... (kcs_ceiling_info.name) */
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
