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
#include <stdint.h>

/* One header per op, each with the op's type list (KCS_<OP>_TYPES) from
 * which its functions are declared; a new op adds its header here. Every
 * function they declare is exported from libkcs_ref (kcs_export.h). A
 * test-only op (scale, cases in tests/cases/) is not listed: its own files
 * include its header, and the libraries leave it out (docs/adding-an-op.md). */
#include "kcs_export.h"
#ifdef __cplusplus
extern "C" {
#endif
KCS_API_BEGIN
#include "kcs_ref_half.h" /* the 16-bit types and the conversions every op uses */
#include "kcs_ref_fp8.h"  /* the 8-bit types (gemm) and their conversions */
#include "kcs_ref_anneal.h"
#include "kcs_ref_elementwise.h"
#include "kcs_ref_gemm.h"
#include "kcs_ref_softmax.h"
#include "kcs_ref_sumsq.h"
KCS_API_END
#ifdef __cplusplus
}
#endif

#endif
