/* backend.c: walking a backend's kernel tables (see backend.h). */
#include "backend.h"

#include <string.h>

size_t kcs_backend_kernel_count(const kcs_backend *backend)
{
    size_t count = 0;
    for (const kcs_kernel_table *const *table = backend->kernel_tables; *table; table++)
        count += (*table)->count;
    return count;
}

const kcs_kernel *kcs_backend_kernel(const kcs_backend *backend, size_t index)
{
    for (const kcs_kernel_table *const *table = backend->kernel_tables; *table; table++) {
        if (index < (*table)->count)
            return &(*table)->rows[index];
        index -= (*table)->count;
    }
    return NULL;
}

const kcs_kernel *kcs_backend_find_kernel(const kcs_backend *backend, const char *op, kcs_dtype dtype,
                                          const char *variant)
{
    for (size_t k = 0; k < kcs_backend_kernel_count(backend); k++) {
        const kcs_kernel *kernel = kcs_backend_kernel(backend, k);
        if (strcmp(kernel->op, op) == 0 && kernel->dtype == dtype &&
            (!variant || strcmp(kernel->variant, variant) == 0))
            return kernel;
    }
    return NULL;
}
