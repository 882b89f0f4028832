/* op_args.h: the arguments of each operation, as kernels receive them.
 *
 * A case file names sizes and parameters as text ("n=1000"); the op's
 * descriptor (ops/<op>.c, harness/op.h) turns them into one of these typed
 * structs, so a kernel reads args->sumsq.n rather than looking a name up.
 * Library users fill the same structs when they call a backend directly.
 */
#ifndef KCS_OP_ARGS_H
#define KCS_OP_ARGS_H

#include <stddef.h>

#include "dtype.h"

/* sumsq: s = sum over i < n of x[i]^2 (docs/sumsq.md). */
typedef struct {
    size_t n; /* number of elements of x */
} kcs_sumsq_args;

/* gemm: C = alpha * op(A) * op(B) + beta * C, row-major (docs/gemm.md).
 * op(A) is m x k (A is stored k x m when transposed), op(B) is k x n. */
typedef struct {
    size_t m, n, k;
    int transpose_a, transpose_b; /* 0: as stored, 1: transposed */
    double alpha, beta;
    int tf32; /* 1: f32 products on tensor cores with TF32 inputs (its own, wider bound) */
    int tensor_cores; /* 1 (mode=tensor, f16 and bf16): products on tensor cores, whose block sums may
                         align and truncate (its own, wider bound; docs/gemm.md, "Tensor cores") */
    kcs_dtype c_dtype; /* dtype of C and C_out: f32 for an f16 or bf16 case that says c_dtype=f32;
                          KCS_DTYPE_NONE (0) or the case dtype: the case dtype */
    /* FP8 cases (docs/gemm.md, "FP8"): per-tensor scales, C_out = alpha * a_scale * b_scale *
     * op(A) op(B) + beta * C as cuBLASLt computes it; 1 (or 0, unset) for every other dtype */
    double a_scale, b_scale;
} kcs_gemm_args;

/* add, mul (two inputs) and relu, sigmoid (one input): y[i] = f(x[i] [, y[i]]) (docs/elementwise.md). */
typedef struct {
    size_t n;
} kcs_elementwise_args;

/* softmax over the last axis of a rows x cols matrix (docs/softmax.md). */
typedef struct {
    size_t rows, cols;
} kcs_softmax_args;

/* anneal assign and reduce: n points of d dimensions (stored in the case
 * dtype, f16 or f32, computed in f32), m anchors (f32) (docs/anneal.md). */
typedef struct {
    size_t n, d, m;
} kcs_anneal_args;

/* anneal update: m anchors of d dimensions, temperature T, learning rate lr,
 * momentum mu (docs/anneal.md). */
typedef struct {
    size_t m, d;
    double temperature, learning_rate, momentum;
} kcs_anneal_update_args;

/* anneal energy: E = (1/n) * sum of n distances (docs/anneal.md). */
typedef struct {
    size_t n;
} kcs_anneal_energy_args;

/* The arguments of one call of one operation. */
typedef struct {
    const char *op;  /* the operation's name, as in the op table ("sumsq") */
    kcs_dtype dtype; /* the case's element type */
    union {
        kcs_sumsq_args sumsq;
        kcs_gemm_args gemm;
        kcs_elementwise_args elementwise; /* add, mul, relu, sigmoid */
        kcs_softmax_args softmax;
        kcs_anneal_args assign;
        kcs_anneal_args reduce;
        kcs_anneal_update_args update;
        kcs_anneal_energy_args energy;
        struct { size_t n; double alpha; } scale; /* y = alpha * x: the tests' op (tests/cases/scale.md), in the
                                                     runner only, not in the libraries */
    };
} kcs_op_args;

/* The dtype of a GEMM's C and C_out (kcs_gemm_args.c_dtype, 0 meaning the case dtype). */
static inline kcs_dtype kcs_gemm_c_dtype(const kcs_op_args *args)
{
    return args->gemm.c_dtype != KCS_DTYPE_NONE ? args->gemm.c_dtype : args->dtype;
}

#endif
