/* op_args.h: the arguments of each operation, as kernels receive them.
 *
 * A case file names sizes and parameters as text ("n=1000"); the op's
 * descriptor (harness/op.h) turns them into one of these typed structs, so a
 * kernel reads args->sumsq.n rather than looking a name up. Library users
 * fill the same structs when they call a backend directly.
 */
#ifndef KCS_OP_ARGS_H
#define KCS_OP_ARGS_H

#include <stddef.h>

#include "dtype.h"

/* sumsq: s = sum over i < n of x[i]^2 (docs/sumsq.md). */
typedef struct {
    size_t n; /* number of elements of x */
} kcs_sumsq_args;

/* The arguments of one call of one operation. */
typedef struct {
    const char *op;  /* the operation's name, as in the op table ("sumsq") */
    kcs_dtype dtype; /* the case's element type */
    union {
        kcs_sumsq_args sumsq;
    };
} kcs_op_args;

#endif
