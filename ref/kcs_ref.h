/* kcs_ref.h: the scalar C reference of every kcs operation, as a library.
 *
 * Plain loops in strict IEEE arithmetic (built with -ffp-contract=off and no
 * fast-math), written for clarity before speed; each follows the normative
 * definition in docs/<op>.md and stays within the bound derived there. The
 * runner reaches these through the "reference" backend (ref/backend.c);
 * programs may call them directly on host arrays.
 */
#ifndef KCS_REF_H
#define KCS_REF_H

#include <stddef.h>

/* Sum of squares of n doubles, accumulated in double (docs/sumsq.md). */
double kcs_ref_sumsq_f64(const double *x, size_t n);

/* Sum of squares of n floats, accumulated in double, rounded once to float. */
float kcs_ref_sumsq_f32(const float *x, size_t n);

#endif
