/* backend.c: walking a backend's kernel tables, and the order of its
 * back-to-back repeats (see backend.h). */
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

/* Queues one chunk: repeats first .. first + count - 1 into the slot. */
static kcs_status queue_chunk(const kcs_back_to_back *walk, int slot, int first, int count,
                              kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                              kcs_error *err)
{
    kcs_status status = walk->open(walk->backend, slot, first, count, err);
    for (int r = 0; r < count && status == KCS_OK; r++) {
        status = run(context, first + r, err);
        const int recorded = walk->recorded(walk->backend, slot);
        if (status == KCS_OK && recorded != r + 1)
            status = kcs_fail(err, KCS_ERROR, "repeat %d recorded %d timed runs where one was due", first + r,
                              recorded - r);
    }
    return walk->close(walk->backend, slot, status, err);
}

kcs_status kcs_back_to_back_walk(const kcs_back_to_back *walk, int count,
                                 kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                 double *seconds, kcs_error *err)
{
    if (walk->repeats_a_chunk < 1 || walk->slots < 2)
        return kcs_fail(err, KCS_ERROR, "back to back: chunks of %d repeats in %d slots cannot overlap",
                        walk->repeats_a_chunk, walk->slots);
    if (count < 1) /* nothing would be timed, and a caller counting its repeats would not advance */
        return kcs_fail(err, KCS_ERROR, "back to back: %d repeats asked for; at least one is due", count);
    kcs_status status = KCS_OK;
    int waiting = -1; /* the slot queued and closed, not yet read */
    for (int first = 0, slot = 0; first < count && status == KCS_OK; slot = (slot + 1) % walk->slots) {
        const int chunk = count - first < walk->repeats_a_chunk ? count - first : walk->repeats_a_chunk;
        status = queue_chunk(walk, slot, first, chunk, run, context, err);
        first += chunk;
        if (status == KCS_OK && waiting >= 0)
            status = walk->read(walk->backend, waiting, seconds, err);
        waiting = slot;
    }
    if (status == KCS_OK && waiting >= 0)
        status = walk->read(walk->backend, waiting, seconds, err);
    return status;
}
