/* reference_backend.h: what the reference backend's kernel adapters share.
 *
 * Each ref/<op>.c holds the typed reference functions of one op (public,
 * in kcs_ref.h) and, at its end, the adapters that run them on the
 * reference backend's buffers and the table of their rows
 * (kcs_reference_<op>_kernels). Internal to ref/.
 */
#ifndef KCS_REFERENCE_BACKEND_H
#define KCS_REFERENCE_BACKEND_H

#include "backend.h"

/* The host memory behind a reference buffer. */
void *kcs_reference_buffer_data(kcs_buffer *buffer);

/* The monotonic clock in seconds, for kernel times. */
double kcs_reference_now(void);

#endif
