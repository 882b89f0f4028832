/* op.h: an operation as data, shared by the checker, the oracle and the
 * benchmarks (CLBlast's routine descriptors are the model).
 *
 * A descriptor knows, for one op: its sizes, parameters and inputs, how to
 * turn a case into kernel arguments, the shapes of inputs and outputs, an
 * oracle more precise than any backend, closed forms where they exist, the
 * derived per-element error bound (docs/<op>.md), and the bytes and flops
 * one call must move and do.
 */
#ifndef KCS_OP_H
#define KCS_OP_H

#include <stddef.h>

#include "case_file.h"
#include "dtype.h"
#include "op_args.h"
#include "status.h"

#define KCS_MAX_DIMS 4

struct kcs_check_result; /* check.h */
#define KCS_MAX_OUTPUTS 4

/* Name, element type and shape of one array. */
typedef struct {
    char name[32];
    kcs_dtype dtype;
    int ndim;
    size_t shape[KCS_MAX_DIMS];
} kcs_array_spec;

/* The arrays one call reads and writes, in the op's order. */
typedef struct {
    kcs_array_spec inputs[KCS_MAX_INPUTS];
    int input_count;
    kcs_array_spec outputs[KCS_MAX_OUTPUTS];
    int output_count;
} kcs_layout;

/* Expected values of one output and the allowed error of each. */
typedef struct {
    size_t count;    /* elements checked */
    size_t *indices; /* their flat indices; NULL when all are checked, in order */
    double *values;  /* expected values, rounded once to double */
    double *bounds;  /* allowed |actual - expected|, per element */
} kcs_expected;

/* Number of elements of an array. */
size_t kcs_array_element_count(const kcs_array_spec *spec);

/* Bytes of an array. */
size_t kcs_array_bytes(const kcs_array_spec *spec);

/* Which of a device's measured ceilings (kcs_ceilings, backend.h) a kernel
 * of an op is judged against: decided once here, per op, and written into
 * the results with each timing (harness/speed.h), so that the console and
 * the report show the same fraction. */
typedef enum {
    KCS_CEILING_COPY,           /* memory-bound: bytes moved against device-to-device copy bandwidth */
    KCS_CEILING_GEMM,           /* compute-bound: flops against the device's measured f32 GEMM rate */
    KCS_CEILING_GEMM_TF32,      /* flops against the TF32 tensor-core GEMM rate */
    KCS_CEILING_GEMM_F16,       /* flops against the f16 GEMM rate (f32 accumulation, tensor cores) */
    KCS_CEILING_GEMM_BF16,      /* flops against the bf16 GEMM rate (f32 accumulation, tensor cores) */
    KCS_CEILING_GEMM_F64,       /* flops against the f64 GEMM rate */
    KCS_CEILING_GEMM_FP8_E4M3,  /* flops against the FP8 e4m3 GEMM rate */
    KCS_CEILING_GEMM_OF_MODE,   /* the op is a GEMM: the rate of its case's mode, one of the five
                                   above or KCS_CEILING_GEMM, chosen by kcs_ceiling_of (speed.h) */
} kcs_ceiling_kind;

/* An operation. */
typedef struct {
    const char *name;          /* as written after "op:" */
    const char *summary;       /* one line */
    const char *const *sizes;  /* names of its sizes, NULL-terminated */
    const char *const *params; /* names of its parameters, NULL-terminated */
    const char *const *inputs; /* names of its inputs, NULL-terminated */
    const kcs_dtype *dtypes;   /* the case dtypes it has, KCS_DTYPE_NONE-terminated (checked
                                  before parse_args; from the op's type list) */
    /* Checks the case's dtype, sizes and parameters and fills args. */
    kcs_status (*parse_args)(const kcs_case *c, kcs_op_args *args, kcs_error *err);
    /* Shapes and dtypes of inputs and outputs. */
    kcs_status (*layout)(const kcs_op_args *args, kcs_layout *layout, kcs_error *err);
    /* Fills expected[o].values at expected[o].indices from the inputs, more
     * precisely than any backend computes them (rounded once). */
    kcs_status (*oracle)(const kcs_op_args *args, void *const inputs[], kcs_expected expected[],
                         kcs_error *err);
    /* Optional: the same from a closed form of the case's inputs. */
    kcs_status (*closed_form)(const kcs_case *c, const kcs_op_args *args, kcs_expected expected[],
                              kcs_error *err);
    /* Fills expected[o].bounds from the inputs and expected values. */
    kcs_status (*bounds)(const kcs_op_args *args, void *const inputs[], kcs_expected expected[],
                         kcs_error *err);
    /* Optional: the same for a device whose f32 arithmetic may flush subnormal
     * inputs and results to zero (kcs_device_info.flushes_f32_subnormals), for
     * an op whose definition allows that (docs/gemm.md, "Flush to zero"). NULL:
     * the op requires gradual underflow and such a device is held to bounds. */
    kcs_status (*flushing_bounds)(const kcs_op_args *args, void *const inputs[], kcs_expected expected[],
                                  kcs_error *err);
    /* Optional: whether output's bound is measured from its expected value
     * rounded to the output's dtype, as the oracle gives it (a correctly
     * rounded result: add, mul, scale; sigmoid in f16 and bf16), rather than
     * from a value more precise than the type (the bound then covers the
     * result's own rounding). Expected values given from elsewhere (`kcs
     * apply` and `kcs check --expected`) are rounded to the type first where
     * it answers 1. NULL: 0 for every output. */
    int (*bound_from_rounded)(const kcs_op_args *args, int output);
    /* Optional: an op-specific comparison (e.g. assign's near-tie rule), in
     * place of kcs_check_outputs (check.h); it fills result the same way. */
    void (*check)(const kcs_op_args *args, void *const inputs[], void *const actual[],
                  const kcs_expected expected[], struct kcs_check_result *result);
    /* Fewest bytes one call moves through memory: inputs read once, outputs written once. */
    double (*bytes)(const kcs_op_args *args);
    /* Floating-point operations of one call, by the op's definition. */
    double (*flops)(const kcs_op_args *args);
    /* The ceiling its kernels are judged against (KCS_CEILING_COPY, 0, unless set). */
    kcs_ceiling_kind ceiling;
    /* Optional: the op's catalogue of named arithmetic models, NULL-terminated
     * (explain.h, docs/explaining.md): what a failure is explained by. */
    const struct kcs_model *const *models;
} kcs_op;

/* The op called name, or NULL. */
const kcs_op *kcs_find_op(const char *name);

struct kcs_buffer; /* a backend's device memory (backend.h), which begins with its size in bytes */

/* The one check of a call's buffers, made by every backend's call path
 * (CUDA's kcs_cuda_timed, OpenCL's kcs_opencl_timed, the reference's
 * kcs_reference_timed) and by the library's kcs_call (lib/device.c): that
 * inputs[i] and outputs[o], in the op's order, as many as op's layout for
 * args has, are buffers (not NULL) of at least the bytes of their arrays.
 * The sizes needed come from op->layout, the sizes given from the buffers'
 * first member (backend.h). KCS_ERROR naming the first buffer that falls
 * short, as "input 0 (x) needs 8000 bytes, its buffer has 8" (or that
 * there is no op, where op is NULL: kcs_find_op found none). */
kcs_status kcs_check_buffers(const kcs_op *op, const kcs_op_args *args, struct kcs_buffer *const inputs[],
                             struct kcs_buffer *const outputs[], kcs_error *err);

/* All ops, NULL-terminated (build/ops.c, written by configure.py from the files of ops/). */
extern const kcs_op *const kcs_ops[];

/* An X-macro column for an op's type list (X(suffix, C type, kcs dtype)):
 * its kcs dtype and a comma, to build kcs_op.dtypes from the list. */
#define KCS_DTYPE_OF(suffix, T, dtype) dtype,

/* Sets spec to a one-dimensional array of n elements. */
void kcs_vector_spec(kcs_array_spec *spec, const char *name, kcs_dtype dtype, size_t n);

/* Sets spec to a rows x cols row-major matrix. */
void kcs_matrix_spec(kcs_array_spec *spec, const char *name, kcs_dtype dtype, size_t rows, size_t cols);

/* Parameter name of a case as a number, finite also in dtype (fallback when
 * the case does not give it; NAN as fallback makes it required); errors
 * name the op, the parameter and the text. */
kcs_status kcs_case_number(const kcs_case *c, const char *name, double fallback, kcs_dtype dtype,
                           double *value, kcs_error *err);

/* Fills args and layout for a case: finds the op, checks the case's inputs
 * against the op's, parses the arguments. Errors name the cause. */
kcs_status kcs_op_prepare(const kcs_case *c, const kcs_op **op, kcs_op_args *args,
                          kcs_layout *layout, kcs_error *err);

#endif
