/* kernel_rows.h: a backend's kernel rows checked against the op table.
 *
 * A row (backend.h, kcs_kernel) names its op as text and its dtype as an
 * enum; a misspelt op or a dtype its op does not have gives a row that never
 * runs, and a repeated variant name a row that runs in another's place, and
 * nothing in a run says so, since a run reports what ran. The runner checks
 * every row of its build with this at start-up and in `kcs rows`
 * (runner/rows.c, docs/runner.md "Kernel rows"). Not part of the libraries:
 * a backend's library has no op table.
 */
#ifndef KCS_KERNEL_ROWS_H
#define KCS_KERNEL_ROWS_H

#include <stddef.h>

#include "backend.h"

/* What is wrong with kernel row index of backend, measured against the op
 * table (ops/, build/ops.c): 0 when nothing, else 1 with message set to one
 * line that names the backend, the row and the cause ("opencl: kernel row
 * sumsqq f32 loop: no op 'sumsqq' in the op table (known: ...)"): an op the
 * table does not have, a dtype its op does not accept, no variant name, a
 * variant name that an earlier row of the same op and dtype has, or no run
 * function. */
int kcs_kernel_row_problem(const kcs_backend *backend, size_t index, char *message, size_t size);

#endif
