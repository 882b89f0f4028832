/* saboteur_backend.c: a backend of deliberately broken kernels, built for
 * the tests only. Each saboteur makes one mistake that real kernels make;
 * the harness must catch every one with the right diagnosis, so a checker
 * that has grown too lenient fails the tests (tests/saboteur_test.c).
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

/* Each op's saboteurs, in tests/saboteur_<op>.c. */
static const struct {
    const kcs_kernel *kernels;
    const size_t *count;
} tables[] = {
    {kcs_saboteur_sumsq_kernels, &kcs_saboteur_sumsq_kernel_count},
    {kcs_saboteur_gemm_kernels, &kcs_saboteur_gemm_kernel_count},
    {kcs_saboteur_elementwise_kernels, &kcs_saboteur_elementwise_kernel_count},
    {kcs_saboteur_softmax_kernels, &kcs_saboteur_softmax_kernel_count},
    {kcs_saboteur_anneal_kernels, &kcs_saboteur_anneal_kernel_count},
};

kcs_backend kcs_saboteur_backend(void)
{
    static kcs_kernel all[256];
    static size_t count;
    if (count == 0)
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
            for (size_t k = 0; k < *tables[t].count && count < 256; k++)
                all[count++] = tables[t].kernels[k];
    kcs_backend backend = kcs_reference_backend;
    backend.name = "saboteur";
    backend.kernels = all;
    backend.kernel_count = count;
    return backend;
}

kcs_backend kcs_saboteur_runner_backend;

/* Fills kcs_saboteur_runner_backend before main(): the tables of each op
 * live in their own files, so the combined table can only be made at run time. */
__attribute__((constructor)) static void fill_runner_backend(void)
{
    static kcs_kernel with_faults[288];
    kcs_backend backend = kcs_saboteur_backend();
    size_t count = 0;
    for (size_t k = 0; k < backend.kernel_count && count < 288; k++)
        with_faults[count++] = backend.kernels[k];
    for (size_t k = 0; k < kcs_saboteur_fault_kernel_count && count < 288; k++)
        with_faults[count++] = kcs_saboteur_fault_kernels[k];
    backend.kernels = with_faults;
    backend.kernel_count = count;
    kcs_saboteur_runner_backend = backend;
}
