/* ceilings.cu: the CUDA device's own limits, measured in the same run as
 * the cases, so that every kernel is reported as a fraction of them and
 * figures compare across GPUs and drivers (docs/results.md).
 *
 *   copy            cudaMemcpyAsync device to device of 1 GiB (less on small
 *                   cards), bytes read + bytes written over the event time
 *   host to device  cudaMemcpyAsync of 256 MiB from pinned host memory
 *   FMA             a kernel of 8 independent fmaf chains per thread, enough
 *                   blocks for every SM; 2 flops per FMA
 *   GEMM            cublasSgemm 8192^3 in plain f32 (the default math mode
 *                   uses no TF32 tensor cores for SGEMM), 2mnk flops
 *
 * Each is the median of repeated, event-timed runs after a warm-up.
 * Run only them: ./build/kcs devices --ceilings
 */
#include <algorithm>
#include <cstdio>
#include <vector>

#include "common.cuh"

namespace {

constexpr int fma_chains = 8;
constexpr int fma_iterations = 8192;

__global__ void fma_loop(float *sink, float seed)
{
    float chain[fma_chains];
    for (int c = 0; c < fma_chains; c++)
        chain[c] = seed + (float)(threadIdx.x + c);
    for (int i = 0; i < fma_iterations; i++)
        for (int c = 0; c < fma_chains; c++)
            chain[c] = fmaf(chain[c], 0.999999f, 1e-7f);
    float total = 0.0f;
    for (int c = 0; c < fma_chains; c++)
        total += chain[c];
    if (total == 12345.678f) /* never true; keeps the loop from being removed */
        sink[0] = total;
}

double median(std::vector<double> samples)
{
    std::sort(samples.begin(), samples.end());
    size_t middle = samples.size() / 2;
    return samples.size() % 2 ? samples[middle] : 0.5 * (samples[middle - 1] + samples[middle]);
}

/* Times `repeats` runs of work after one warm-up; returns the median in seconds. */
template <typename Work>
kcs_status time_median(kcs_device *device, int repeats, Work work, double *seconds, kcs_error *err)
{
    std::vector<double> samples;
    for (int r = -1; r < repeats; r++) {
        KCS_CUDA_CHECK(cudaEventRecord(device->start, device->stream));
        kcs_status status = work();
        if (status != KCS_OK)
            return status;
        KCS_CUDA_CHECK(cudaEventRecord(device->stop, device->stream));
        KCS_CUDA_CHECK(cudaEventSynchronize(device->stop));
        float milliseconds = 0;
        KCS_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, device->start, device->stop));
        if (r >= 0)
            samples.push_back(1e-3 * milliseconds);
    }
    *seconds = median(samples);
    return KCS_OK;
}

kcs_status measure(kcs_device *device, kcs_ceilings *ceilings, void **memory, void **pinned, kcs_error *err)
{
    size_t free_bytes = 0, total_bytes = 0;
    KCS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    size_t copy_bytes = std::min<size_t>(size_t(1) << 30, free_bytes / 8);
    const int gemm_size = 8192;
    size_t gemm_bytes = 3 * sizeof(float) * (size_t)gemm_size * gemm_size;
    KCS_CUDA_CHECK(cudaMalloc(memory, std::max(2 * copy_bytes, gemm_bytes)));
    char *base = (char *)*memory;
    KCS_CUDA_CHECK(cudaMemsetAsync(base, 0x3c, std::max(2 * copy_bytes, gemm_bytes), device->stream));

    double seconds = 0;
    kcs_status status = time_median(device, 20, [&] {
        KCS_CUDA_CHECK(cudaMemcpyAsync(base + copy_bytes, base, copy_bytes, cudaMemcpyDeviceToDevice,
                                       device->stream));
        return KCS_OK;
    }, &seconds, err);
    if (status != KCS_OK)
        return status;
    ceilings->copy_bytes_per_s = 2.0 * (double)copy_bytes / seconds;

    size_t upload_bytes = std::min<size_t>(size_t(256) << 20, copy_bytes);
    KCS_CUDA_CHECK(cudaMallocHost(pinned, upload_bytes));
    memset(*pinned, 0x3c, upload_bytes);
    status = time_median(device, 10, [&] {
        KCS_CUDA_CHECK(cudaMemcpyAsync(base, *pinned, upload_bytes, cudaMemcpyHostToDevice, device->stream));
        return KCS_OK;
    }, &seconds, err);
    if (status != KCS_OK)
        return status;
    ceilings->host_to_device_bytes_per_s = (double)upload_bytes / seconds;

    const int threads = 256, blocks = device->sm_count * 8;
    status = time_median(device, 10, [&] {
        fma_loop<<<blocks, threads, 0, device->stream>>>((float *)base, 1.0f);
        KCS_CUDA_CHECK_LAUNCH("fma_loop");
        return KCS_OK;
    }, &seconds, err);
    if (status != KCS_OK)
        return status;
    ceilings->fma_flops_per_s = 2.0 * fma_chains * fma_iterations * (double)threads * blocks / seconds;

    KCS_CUBLAS_CHECK(cublasSetMathMode(device->blas, CUBLAS_DEFAULT_MATH));
    const float one = 1.0f, zero = 0.0f;
    float *a = (float *)base, *b = a + (size_t)gemm_size * gemm_size, *c = b + (size_t)gemm_size * gemm_size;
    status = time_median(device, 5, [&] {
        KCS_CUBLAS_CHECK(cublasSgemm(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, gemm_size, gemm_size, gemm_size,
                                     &one, a, gemm_size, b, gemm_size, &zero, c, gemm_size));
        return KCS_OK;
    }, &seconds, err);
    if (status != KCS_OK)
        return status;
    ceilings->gemm_flops_per_s = 2.0 * gemm_size * (double)gemm_size * gemm_size / seconds;
    snprintf(ceilings->method, sizeof ceilings->method,
             "copy: cudaMemcpy device to device, %zu MiB, median of 20; host to device: pinned, %zu MiB, "
             "median of 10; FMA: %d chains x %d fmaf per thread, %d x %d threads, median of 10; "
             "GEMM: cublasSgemm %d^3 default math, median of 5",
             copy_bytes >> 20, upload_bytes >> 20, fma_chains, fma_iterations, blocks, threads, gemm_size);
    return KCS_OK;
}

} // namespace

kcs_status kcs_cuda_measure_ceilings(kcs_device *device, kcs_ceilings *ceilings, kcs_error *err)
{
    memset(ceilings, 0, sizeof *ceilings);
    if (kcs_cuda_select(device, err) != KCS_OK)
        return KCS_ERROR;
    void *memory = nullptr, *pinned = nullptr;
    kcs_status status = measure(device, ceilings, &memory, &pinned, err);
    cudaStreamSynchronize(device->stream);
    if (memory)
        cudaFree(memory);
    if (pinned)
        cudaFreeHost(pinned);
    return status;
}
