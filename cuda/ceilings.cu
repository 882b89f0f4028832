/* ceilings.cu: the CUDA device's own limits, measured in the same run as
 * the cases, so that every kernel is reported as a fraction of them and
 * figures compare across GPUs and drivers (docs/results.md).
 *
 *   copy            cudaMemcpyAsync device to device of 1 GiB (less on small
 *                   cards), bytes read + bytes written over the event time
 *   host to device  cudaMemcpyAsync of 256 MiB from pinned host memory
 *   FMA             a kernel of 8 independent fmaf chains per thread, enough
 *                   blocks for every SM; 2 flops per FMA
 *   GEMM rates      one per mode, each the library's GEMM at 8192^3 (4096^3
 *                   on a card with less than 6 GiB free), 2mnk flops:
 *                     f32    cublasSgemm, default math (no TF32 for SGEMM)
 *                     TF32   cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32
 *                     f16    cublasGemmEx, f16 in and out, CUBLAS_COMPUTE_32F
 *                     bf16   the same in bf16 (tensor cores allowed: the
 *                            rate kcs's tensor-core kernels are held to)
 *                     f64    cublasDgemm (FP64 tensor cores where there are)
 *                     FP8    cublasLtMatmul, e4m3 x e4m3 -> bf16, TN, f32
 *                            accumulation (cuda/gemm/fp8_cublaslt.cu), on compute
 *                            capability 8.9 and up; left 0 elsewhere
 *                   8192^3 keeps every mode's tensor cores busy for
 *                   milliseconds (1.1 Tflop: 1.5 ms in FP8, 20 ms in f32 on
 *                   an H100), long enough that launch costs vanish and the
 *                   card reaches its sustained clock; square, NN (TN for
 *                   FP8), as vendors' peak figures are quoted. The operands
 *                   are random bits with each element's top exponent bit
 *                   cleared (finite values of every sign and size below 2),
 *                   not a constant: tensor cores draw less power on
 *                   repeated bits and would clock higher than on real data.
 *                   About half a second for all six on an H100.
 *
 * Each is the median of repeated runs after a warm-up, timed as the kernels
 * are (backend.cu, "Timing"). Only the rates the run asks for are measured
 * (harness/backend.h, kcs_ceiling_mask); none needs another, and each GEMM
 * mode is skipped, allocation included, when its bit is clear.
 * Run only them: ./build/kcs devices --ceilings
 */
#include <algorithm>
#include <cstdio>
#include <vector>

#include "common.cuh"
#include "gemm/fp8_cublaslt.cuh"

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
        double sample = 0;
        const kcs_status status = kcs_cuda_time_launches(device, &sample, err, work);
        if (status != KCS_OK)
            return status;
        if (r >= 0)
            samples.push_back(sample);
    }
    *seconds = median(samples);
    return KCS_OK;
}

/* Random bits in words, each word ANDed with even_mask or odd_mask by its
 * parity: the masks clear each element's top exponent bit (0xBFFFFFFF for
 * f32, the odd words of f64, 0xBFFFBFFF for two 16-bit, 0xBFBFBFBF for four
 * FP8 elements), so every value is finite and below 2 in magnitude. */
__global__ void fill_random_bits(uint32_t *words, size_t count, uint32_t even_mask, uint32_t odd_mask)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull; /* splitmix64's finaliser */
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
        words[i] = (uint32_t)x & (i % 2 ? odd_mask : even_mask);
    }
}

/* The GEMM modes' rates that wanted asks for (see the header), into ceilings; method says how. */
kcs_status measure_gemm_modes(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings, char *method,
                              size_t method_size, kcs_error *err)
{
    size_t free_bytes = 0, total_bytes = 0;
    KCS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    const int size = free_bytes >= (size_t(6) << 30) ? 8192 : 4096;
    const size_t elements = (size_t)size * size;
    const double flops = 2.0 * (double)size * size * size;
    /* A, B and C of the widest type (f64), and cuBLASLt's workspace after them */
    const size_t matrix_bytes = elements * sizeof(double);
    void *memory = nullptr;
    KCS_CUDA_CHECK(cudaMalloc(&memory, 3 * matrix_bytes + kcs_lt_workspace_bytes));
    char *a = (char *)memory, *b = a + matrix_bytes, *c = b + matrix_bytes, *workspace = c + matrix_bytes;
    const int repeats = 5;
    double seconds = 0;
    auto fill = [&](uint32_t even_mask, uint32_t odd_mask) -> kcs_status {
        fill_random_bits<<<device->sm_count * 8, 256, 0, device->stream>>>((uint32_t *)memory,
                                                                           3 * matrix_bytes / 4, even_mask, odd_mask);
        KCS_CUDA_CHECK_LAUNCH("fill_random_bits");
        return KCS_OK;
    };
    auto rate = [&](double *into) { *into = flops / seconds; };
    kcs_status status = KCS_OK;
    const float one = 1.0f, zero = 0.0f;
    const double one_f64 = 1.0, zero_f64 = 0.0;
    KCS_CUBLAS_CHECK(cublasSetPointerMode(device->blas, CUBLAS_POINTER_MODE_HOST));
    KCS_CUBLAS_CHECK(cublasSetMathMode(device->blas, CUBLAS_DEFAULT_MATH));

#define KCS_TIME_GEMM(bit, into, call)                                                                             \
    do {                                                                                                           \
        if (status == KCS_OK && (wanted & (bit))) { /* a mode not asked for keeps its 0: not measured */        \
            status = time_median(device, repeats, [&] { KCS_CUBLAS_CHECK(call); return KCS_OK; }, &seconds, err);  \
            if (status == KCS_OK)                                                                                  \
                rate(into);                                                                                        \
        }                                                                                                          \
    } while (0)

    status = fill(0xBFFFFFFFu, 0xBFFFFFFFu);
    KCS_TIME_GEMM(KCS_CEILING_BIT_GEMM, &ceilings->gemm_flops_per_s,
                  cublasSgemm(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, (float *)a, size,
                              (float *)b, size, &zero, (float *)c, size));
    KCS_TIME_GEMM(KCS_CEILING_BIT_GEMM_TF32, &ceilings->gemm_tf32_flops_per_s,
                  cublasGemmEx(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, a, CUDA_R_32F, size, b,
                               CUDA_R_32F, size, &zero, c, CUDA_R_32F, size, CUBLAS_COMPUTE_32F_FAST_TF32,
                               CUBLAS_GEMM_DEFAULT));
    if (status == KCS_OK)
        status = fill(0xBFFFBFFFu, 0xBFFFBFFFu);
    KCS_TIME_GEMM(KCS_CEILING_BIT_GEMM_F16, &ceilings->gemm_f16_flops_per_s,
                  cublasGemmEx(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, a, CUDA_R_16F, size, b,
                               CUDA_R_16F, size, &zero, c, CUDA_R_16F, size, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    KCS_TIME_GEMM(KCS_CEILING_BIT_GEMM_BF16, &ceilings->gemm_bf16_flops_per_s,
                  cublasGemmEx(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one, a, CUDA_R_16BF, size,
                               b, CUDA_R_16BF, size, &zero, c, CUDA_R_16BF, size, CUBLAS_COMPUTE_32F,
                               CUBLAS_GEMM_DEFAULT));
    if (status == KCS_OK)
        status = fill(0xFFFFFFFFu, 0xBFFFFFFFu);
    KCS_TIME_GEMM(KCS_CEILING_BIT_GEMM_F64, &ceilings->gemm_f64_flops_per_s,
                  cublasDgemm(device->blas, CUBLAS_OP_N, CUBLAS_OP_N, size, size, size, &one_f64, (double *)a, size,
                              (double *)b, size, &zero_f64, (double *)c, size));
#undef KCS_TIME_GEMM

    const char *fp8 = !(wanted & KCS_CEILING_BIT_GEMM_FP8_E4M3) ? "FP8: not asked for"
                                                               : "FP8: not measured (compute capability below 8.9)";
    char fp8_reason[160];
    if (status == KCS_OK && (wanted & KCS_CEILING_BIT_GEMM_FP8_E4M3) && device->compute_capability >= 89) {
        status = fill(0xBFBFBFBFu, 0xBFBFBFBFu);
        kcs_lt_fp8_gemm gemm = {};
        gemm.a_type = gemm.b_type = CUDA_R_8F_E4M3;
        gemm.d_type = CUDA_R_16BF;
        gemm.rows = gemm.columns = gemm.depth = size;
        if (status == KCS_OK)
            status = kcs_lt_fp8_prepare(device, &gemm, kcs_lt_workspace_bytes, err);
        if (status == KCS_OK)
            status = time_median(device, repeats, [&] {
                return kcs_lt_fp8_run(device, &gemm, 1.0f, a, b, 0.0f, c, c, workspace, kcs_lt_workspace_bytes, err);
            }, &seconds, err);
        kcs_lt_fp8_release(&gemm);
        if (status == KCS_OK) {
            rate(&ceilings->gemm_fp8_e4m3_flops_per_s);
            fp8 = "FP8: cublasLtMatmul e4m3 x e4m3 -> bf16, TN";
        } else if (status == KCS_UNSUPPORTED) { /* the other modes stand; the reason is kept */
            snprintf(fp8_reason, sizeof fp8_reason, "FP8: not measured (%.120s)", err->message);
            fp8 = fp8_reason;
            status = KCS_OK;
        }
    }
    cudaStreamSynchronize(device->stream);
    cudaFree(memory);
    snprintf(method, method_size,
             "GEMM rates: %d^3, random operands, median of %d after a warm-up: f32 cublasSgemm default math; "
             "TF32, f16, bf16 cublasGemmEx (CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F); f64 cublasDgemm; %s "
             "(only the modes asked for)",
             size, repeats, fp8);
    return status;
}

/* Appends to ceilings' method text (cut short where it is full). */
void append_method(kcs_ceilings *ceilings, const char *text)
{
    size_t at = strlen(ceilings->method);
    snprintf(ceilings->method + at, sizeof ceilings->method - at, "%s", text);
}

constexpr kcs_ceiling_mask gemm_bits = KCS_CEILING_BIT_GEMM | KCS_CEILING_BIT_GEMM_TF32 | KCS_CEILING_BIT_GEMM_F16 |
                                       KCS_CEILING_BIT_GEMM_BF16 | KCS_CEILING_BIT_GEMM_F64 |
                                       KCS_CEILING_BIT_GEMM_FP8_E4M3;
constexpr kcs_ceiling_mask memory_bits = KCS_CEILING_BIT_COPY | KCS_CEILING_BIT_HOST_TO_DEVICE | KCS_CEILING_BIT_FMA;

kcs_status measure(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings, void **memory, void **pinned,
                   kcs_error *err)
{
    char part[512];
    kcs_status status = KCS_OK;
    if (wanted & memory_bits) { /* the copy's buffer: the upload's destination and the FMA's sink too */
        size_t free_bytes = 0, total_bytes = 0;
        KCS_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
        size_t copy_bytes = std::min<size_t>(size_t(1) << 30, free_bytes / 8);
        KCS_CUDA_CHECK(cudaMalloc(memory, 2 * copy_bytes));
        char *base = (char *)*memory;
        KCS_CUDA_CHECK(cudaMemsetAsync(base, 0x3c, 2 * copy_bytes, device->stream));

        double seconds = 0;
        if (wanted & KCS_CEILING_BIT_COPY) {
            status = time_median(device, 20, [&] {
                KCS_CUDA_CHECK(cudaMemcpyAsync(base + copy_bytes, base, copy_bytes, cudaMemcpyDeviceToDevice,
                                               device->stream));
                return KCS_OK;
            }, &seconds, err);
            if (status != KCS_OK)
                return status;
            ceilings->copy_bytes_per_s = 2.0 * (double)copy_bytes / seconds;
            snprintf(part, sizeof part, "copy: cudaMemcpy device to device, %zu MiB, median of 20; ", copy_bytes >> 20);
            append_method(ceilings, part);
        }

        if (wanted & KCS_CEILING_BIT_HOST_TO_DEVICE) {
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
            snprintf(part, sizeof part, "host to device: pinned, %zu MiB, median of 10; ", upload_bytes >> 20);
            append_method(ceilings, part);
        }

        if (wanted & KCS_CEILING_BIT_FMA) {
            const int threads = 256, blocks = device->sm_count * 8;
            status = time_median(device, 10, [&] {
                fma_loop<<<blocks, threads, 0, device->stream>>>((float *)base, 1.0f);
                KCS_CUDA_CHECK_LAUNCH("fma_loop");
                return KCS_OK;
            }, &seconds, err);
            if (status != KCS_OK)
                return status;
            ceilings->fma_flops_per_s = 2.0 * fma_chains * fma_iterations * (double)threads * blocks / seconds;
            snprintf(part, sizeof part, "FMA: %d chains x %d fmaf per thread, %d x %d threads, median of 10; ",
                     fma_chains, fma_iterations, blocks, threads);
            append_method(ceilings, part);
        }
    }

    if (wanted & gemm_bits) {
        char gemm_method[512];
        status = measure_gemm_modes(device, wanted, ceilings, gemm_method, sizeof gemm_method, err);
        if (status != KCS_OK)
            return status;
        append_method(ceilings, gemm_method);
    }
    return KCS_OK;
}

} // namespace

kcs_status kcs_cuda_measure_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                     kcs_error *err)
{
    memset(ceilings, 0, sizeof *ceilings);
    if (kcs_cuda_select(device, err) != KCS_OK)
        return KCS_ERROR;
    void *memory = nullptr, *pinned = nullptr;
    kcs_status status = measure(device, wanted, ceilings, &memory, &pinned, err);
    cudaStreamSynchronize(device->stream);
    if (memory)
        cudaFree(memory);
    if (pinned)
        cudaFreeHost(pinned);
    return status;
}
