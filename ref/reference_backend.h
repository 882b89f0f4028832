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

/* The calling thread's CPU time in seconds, for kernel times and the copy
 * ceiling. The reference runs on the calling thread, so this is the
 * kernel's own time: on a shared host, wall time would also count the
 * time other processes held the core, and two runs of the same kernel
 * would differ by the machine's load (docs/backends.md). */
double kcs_reference_cpu_seconds(void);

#endif
