/* energy.cu: anneal's energy on CUDA (docs/anneal.md): the mean of the n f32
 * distances of assign, as one f32.
 *
 * energy: E = (1/n) sum dist, summed in f64 as sumsq.cu does (16-byte
 * loads, f64 running sums, block partials summed in index order by the last
 * block, cuda/grid_sum.cuh: one launch, the same bits every run), divided in
 * f64, rounded once to f32. n = 0 gives 0/0 = NaN, written.
 *
 * Precision: the sum is carried in f64 as the spec requires (an f32 sum
 * over 1e6 distances would err by up to 1.2e-4, hiding a division by n - 1).
 * Summation depth: every running sum stays under 1024 vectors (the grid
 * grows in whole waves beyond that), as sumsq.cu's. A few microseconds at
 * the perf case's sizes (launch-bound).
 *
 * Run only it: ./build/kcs run --backend cuda 'anneal/energy-*'
 */
#include <climits>
#include <cstdint>

#include "common.cuh"
#include "anneal.cuh"
#include "grid_sum.cuh"

namespace {

constexpr int energy_threads = 256;
constexpr int energy_loads_in_flight = 4;
constexpr size_t energy_max_vectors_per_thread = 1024;

/* One launch: see the header comment. blocks_done is 0 on entry and left 0. */
__global__ void __launch_bounds__(energy_threads)
kcs_energy_vector_grid(const float *__restrict__ dist, size_t n, double *__restrict__ partials,
                       unsigned int *blocks_done, float *__restrict__ result)
{
    const size_t misalignment = (reinterpret_cast<uintptr_t>(dist) / sizeof(float)) % 4;
    const size_t head = misalignment == 0 ? 0 : (n < 4 - misalignment ? n : 4 - misalignment);
    const size_t vector_count = (n - head) / 4;
    const size_t tail_start = head + vector_count * 4;
    const size_t scalar_count = head + (n - tail_start);
    const float4 *vectors = reinterpret_cast<const float4 *>(dist + head);
    const size_t thread = (size_t)blockIdx.x * energy_threads + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * energy_threads;

    double sums[2 * energy_loads_in_flight];
#pragma unroll
    for (int k = 0; k < 2 * energy_loads_in_flight; k++)
        sums[k] = 0.0;
    if (thread < scalar_count)
        sums[0] = (double)dist[thread < head ? thread : tail_start + (thread - head)];

    size_t i = thread;
    for (; i + (energy_loads_in_flight - 1) * stride < vector_count; i += energy_loads_in_flight * stride) {
        float4 v[energy_loads_in_flight];
#pragma unroll
        for (int k = 0; k < energy_loads_in_flight; k++)
            v[k] = __ldg(vectors + i + k * stride);
#pragma unroll
        for (int k = 0; k < energy_loads_in_flight; k++) {
            sums[2 * k] += (double)v[k].x + (double)v[k].z;
            sums[2 * k + 1] += (double)v[k].y + (double)v[k].w;
        }
    }
    for (; i < vector_count; i += stride) {
        const float4 v = __ldg(vectors + i);
        sums[0] += (double)v.x + (double)v.z;
        sums[1] += (double)v.y + (double)v.w;
    }
#pragma unroll
    for (int span = energy_loads_in_flight; span > 0; span /= 2)
#pragma unroll
        for (int k = 0; k < span; k++)
            sums[k] += sums[k + span];
    if (!kcs_grid_last_block(kcs_block_sum<energy_threads>(sums[0]), partials, blocks_done))
        return;
    const double total = kcs_grid_total<energy_threads>(partials);
    if (threadIdx.x == 0)
        *result = (float)(total / (double)n); /* n = 0: 0/0 = NaN */
}

KCS_KERNEL_RUN(run_energy)
{
    const size_t n = args->energy.n;
    size_t blocks = 0;
    auto plan = [&]() -> kcs_status {
        int per_sm = 0;
        KCS_CUDA_CHECK(
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_energy_vector_grid, energy_threads, 0));
        /* One wave of resident blocks (fewer for small n), more in whole waves
         * when a thread would read more than energy_max_vectors_per_thread. */
        const size_t resident = wave_blocks(device, per_sm);
        const size_t vectors = n / 4;
        const size_t per_block = (size_t)energy_threads * energy_max_vectors_per_thread;
        const size_t needed = (vectors + per_block - 1) / per_block;
        if (needed > resident) {
            blocks = (needed + resident - 1) / resident * resident;
        } else {
            const size_t useful = vectors == 0 ? 1 : (vectors + energy_threads - 1) / energy_threads;
            blocks = useful < resident ? useful : resident;
        }
        if (blocks > INT_MAX)
            return kcs_fail(err, KCS_ERROR, "energy: n = %zu needs %zu blocks, more than a grid has", n, blocks);
        return kcs_cuda_reserve(&device->partials, blocks * sizeof(double), err);
    };
    auto launch = [&]() -> kcs_status {
        kcs_energy_vector_grid<<<(unsigned int)blocks, energy_threads, 0, device->stream>>>(
            (const float *)inputs[0]->data, n, (double *)device->partials.data, device->blocks_done,
            (float *)outputs[0]->data);
        KCS_CUDA_CHECK_LAUNCH("kcs_energy_vector_grid");
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

} // namespace

static const kcs_kernel rows[] = {
    {"energy", KCS_F32, "vector-grid", "float4 loads, f64 sums, block partials summed in order by the last block",
     run_energy, NULL},
};

extern "C" const kcs_kernel_table kcs_cuda_energy_kernels = KCS_KERNEL_TABLE(rows);
