/* saboteur_backend.c: a backend of deliberately broken kernels, built for
 * the tests only. Each saboteur makes one mistake that real kernels make;
 * the harness must catch every one with the right diagnosis, so a checker
 * that has grown too lenient fails the tests (tests/saboteur_<op>_test.c and the saboteur run of ninja check).
 *
 * It borrows the reference backend's device and buffers (host memory) and
 * reaches the data only through upload and download, like any harness code.
 */
#include "saboteur_backend.h"

#include <stdlib.h>
#include <string.h>


kcs_status kcs_saboteur_fetch(kcs_device *device, kcs_buffer *buffer, size_t bytes, void **host,
                              kcs_error *err)
{
    *host = malloc(bytes ? bytes : 1);
    if (!*host)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    return kcs_reference_backend.download(device, buffer, *host, bytes, err);
}

kcs_status kcs_saboteur_store(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                              kcs_error *err)
{
    return kcs_reference_backend.upload(device, buffer, host, bytes, err);
}

kcs_backend kcs_saboteur_backend(void)
{
    kcs_backend backend = kcs_reference_backend;
    backend.name = "saboteur";
    backend.kernel_tables = kcs_saboteur_kernel_tables;
    return backend;
}

kcs_backend kcs_saboteur_runner_backend;

/* Fills kcs_saboteur_runner_backend before main(): it borrows the reference
 * backend's functions, which another file defines, so it can only be
 * assembled at run time. Its tables are the saboteurs' and the faults'. */
__attribute__((constructor)) static void fill_runner_backend(void)
{
    enum { most = 32 };
    static const kcs_kernel_table *tables[most + 1];
    size_t count = 0;
    for (const kcs_kernel_table *const *t = kcs_saboteur_kernel_tables; *t && count < most; t++)
        tables[count++] = *t;
    for (const kcs_kernel_table *const *t = kcs_fault_kernel_tables; *t && count < most; t++)
        tables[count++] = *t;
    tables[count] = NULL;
    kcs_saboteur_runner_backend = kcs_saboteur_backend();
    kcs_saboteur_runner_backend.kernel_tables = tables;
}
