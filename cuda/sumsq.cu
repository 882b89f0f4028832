/* sumsq.cu: sum of squares on CUDA, s = sum over i < n of x[i]^2 (docs/sumsq.md).
 *
 * Input x: n elements of __half, __nv_bfloat16, float or double in device
 * memory; output s: one element of the same type. Two variants, the rows at
 * the end of this file:
 *
 *   vector-grid  our kernel. One launch. Each thread walks the input with a
 *                grid-wide stride in 16-byte vectors (float4, double2, or
 *                uint4 holding eight 16-bit values), four loads in flight
 *                before the first use, and adds the squares into 8 running
 *                sums, one pair per load. A thread's ragged vectors (its
 *                count mod 4) are loaded before its loop and added after
 *                it, so the grid's last round is a whole one rather than a
 *                few loads waiting a full memory latency. The first
 *                elements before a 16-byte boundary (none for cudaMalloc
 *                memory, which is 256-byte aligned) and the last n mod width
 *                elements are read one by one by the lowest threads, so no
 *                access is misaligned or out of bounds. A thread's sums are
 *                added in a fixed tree, then the block's by warp shuffles and
 *                shared memory, giving one partial per block. The last block
 *                to finish (a device-wide acquire-release atomic count) sums
 *                the partials in index order, not arrival order, and writes s
 *                rounded once to the input type (cuda/grid_sum.cuh, and
 *                kcs_narrow_double of cuda/half.cuh). No floating-point atomics:
 *                the same input gives the same bits on every run.
 *   cub          the peer: cub::DeviceReduce::TransformReduce with a
 *                transform that squares in double, plus in double, and an
 *                output iterator that rounds to the input type (once, for
 *                the 16-bit types too).
 *
 * Precision: squares and sums are carried in double for float and double
 * input, as docs/sumsq.md requires. Float squares are exact in double; a
 * float running sum would lose a whole element over a million. For __half
 * and __nv_bfloat16 input the threads' running sums are float, which is
 * what the spec asks of the 16-bit types: their squares are exact in float
 * (bf16 ones unless they underflow, which the bound counts), the float sums'
 * error stays below the final rounding's 2^-11 or 2^-8, and float FMAs keep
 * the loop as cheap as the loads; a thread's float sum then joins the
 * double grid sum exactly, and the double total is rounded once to the
 * 16-bit type (kcs_narrow_double). Squares and additions are fused
 * (fma(x, x, sum)), one rounding where the spec's model allows two, so the
 * bound holds with room.
 *
 * Summation depth (docs/sumsq.md allows D(n) = min(n-1, 2048 + ceil(log2 n))
 * additions per term). vector-grid: no thread reads more than 1024 vectors
 * (KCS_SUMSQ_MAX_VECTORS_PER_THREAD): when n would give it more, the grid
 * grows, in whole waves of resident blocks. A thread's longest running sum
 * takes one element (double2), two (float4) or four (eight 16-bit values)
 * of at most 257 vectors (256 from the loop, one ragged), and maybe one
 * scalar: 258, 515 or 1029 additions. Then 3 in the thread's tree, 5 + 5
 * in the block's, ceil(blocks / 256) in the last block's loop over the
 * partials and 5 + 5 more: 541 at most for float at n = 1e8 (528 blocks),
 * 615 for the largest float input an 80 GB card holds; for the 16-bit
 * types 1029 + 23 + ceil(blocks / 256), about 1056 (the float part of it
 * 1032). On an H100 (132 SMs,
 * 4 blocks of 256 threads each) one wave of 528 blocks serves up to 5.5e8
 * float or 2.8e8 double elements; at n = 1e8 a thread reads 185 float4 or
 * 370 double2 vectors.
 * cub: CUB 3.0 gives each thread one sequential running sum over its share,
 * and its grid has at least SMs * 5 (its subscription factor) blocks of 256
 * threads once there are that many tiles; so inputs are reduced in chunks
 * of KCS_SUMSQ_CUB_CHAIN * 256 * 5 * SMs elements (1.7e8 on an H100; one
 * call below that), each thread's sum then stays under 1024 + 16 terms, and
 * a last CUB call adds the chunks' f64 sums: about 1100 additions at worst.
 *
 * Tunables (-D on the nvcc line): KCS_SUMSQ_THREADS,
 * KCS_SUMSQ_LOADS_IN_FLIGHT, KCS_SUMSQ_MAX_VECTORS_PER_THREAD,
 * KCS_SUMSQ_MIN_BLOCKS_PER_SM, KCS_SUMSQ_CUB_CHAIN.
 *
 * Run only it: ./build/kcs run --backend cuda sumsq
 */
#include <climits>
#include <cstdint>

#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/transform_output_iterator.h>

#include "common.cuh"
#include "vector_of.cuh" /* the 16-byte vector of each element type */
#include "grid_sum.cuh"

/* Threads per block: a multiple of 32, at most 1024. */
#ifndef KCS_SUMSQ_THREADS
#define KCS_SUMSQ_THREADS 256
#endif
/* 16-byte loads each thread issues before using the first: enough bytes in
 * flight per SM to cover memory latency at full bandwidth. A power of two. */
#ifndef KCS_SUMSQ_LOADS_IN_FLIGHT
#define KCS_SUMSQ_LOADS_IN_FLIGHT 4
#endif
/* Vectors one thread may read; bounds the length of its running sums. */
#ifndef KCS_SUMSQ_MAX_VECTORS_PER_THREAD
#define KCS_SUMSQ_MAX_VECTORS_PER_THREAD 1024
#endif
/* Resident blocks per SM the compiler must allow (caps registers at 64). */
#ifndef KCS_SUMSQ_MIN_BLOCKS_PER_SM
#define KCS_SUMSQ_MIN_BLOCKS_PER_SM 4
#endif
/* The longest running sum a CUB thread may carry, which sets its chunk size. */
#ifndef KCS_SUMSQ_CUB_CHAIN
#define KCS_SUMSQ_CUB_CHAIN 1024
#endif

namespace {

constexpr int threads_per_block = KCS_SUMSQ_THREADS;
constexpr int loads_in_flight = KCS_SUMSQ_LOADS_IN_FLIGHT;
constexpr int running_sums = 2 * KCS_SUMSQ_LOADS_IN_FLIGHT;
constexpr size_t max_vectors_per_thread = KCS_SUMSQ_MAX_VECTORS_PER_THREAD;

static_assert(threads_per_block % 32 == 0 && threads_per_block <= 1024,
              "KCS_SUMSQ_THREADS must be a multiple of 32, at most 1024");
static_assert(loads_in_flight > 0 && (loads_in_flight & (loads_in_flight - 1)) == 0,
              "KCS_SUMSQ_LOADS_IN_FLIGHT must be a power of two (the thread's sums add as a tree)");


/* The type a thread's running sums are carried in: double for float and
 * double input (docs/sumsq.md), float for the 16-bit types. */
template <typename T> struct accumulator_of { using type = double; };
template <> struct accumulator_of<__half> { using type = float; };
template <> struct accumulator_of<__nv_bfloat16> { using type = float; };
template <typename T> using accumulator = typename accumulator_of<T>::type;

/* Adds the squares of v's elements, alternately, into two running sums. */
template <typename T>
__device__ __forceinline__ void add_squares(const typename vector_of<T>::type &v, accumulator<T> &even,
                                            accumulator<T> &odd)
{
    const T *elements = reinterpret_cast<const T *>(&v);
#pragma unroll
    for (int k = 0; k < vector_of<T>::width; k += 2) {
        const accumulator<T> a = kcs_widen(elements[k]), b = kcs_widen(elements[k + 1]);
        even = fma(a, a, even);
        odd = fma(b, b, odd);
    }
}

/* One launch computes s: see the header comment. blocks_done must be 0 on
 * entry; the last block's increment wraps it back to 0 for the next launch. */
template <typename T>
__global__ void __launch_bounds__(KCS_SUMSQ_THREADS, KCS_SUMSQ_MIN_BLOCKS_PER_SM)
kcs_sumsq_vector_grid(const T *__restrict__ x, size_t n, double *__restrict__ partials,
                      unsigned int *blocks_done, T *__restrict__ result)
{
    using vector = typename vector_of<T>::type;
    constexpr int width = vector_of<T>::width;

    /* Elements before the first 16-byte boundary, whole vectors, the rest. */
    const size_t misalignment = (reinterpret_cast<uintptr_t>(x) / sizeof(T)) % width;
    const size_t head = misalignment == 0 ? 0 : min(n, (size_t)(width - misalignment));
    const size_t vector_count = (n - head) / width;
    const size_t tail_start = head + vector_count * width;
    const size_t scalar_count = head + (n - tail_start);
    const vector *vectors = reinterpret_cast<const vector *>(x + head);

    const size_t thread = (size_t)blockIdx.x * threads_per_block + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * threads_per_block;

    accumulator<T> sums[running_sums];
#pragma unroll
    for (int k = 0; k < running_sums; k++)
        sums[k] = 0;

    if (thread < scalar_count) {
        const accumulator<T> value = kcs_widen(x[thread < head ? thread : tail_start + (thread - head)]);
        sums[0] = fma(value, value, sums[0]);
    }

    /* This thread's vectors are thread, thread + stride, ... below
     * vector_count: mine of them. The ragged ones (mine mod loads_in_flight)
     * are loaded first, beside the first whole round, and added after the
     * loop: a ragged round at the end would wait a whole memory latency
     * with few bytes in flight, while every thread waits at the start
     * anyway. The unused ones stay zero and add nothing. */
    size_t i = thread;
    const size_t mine = thread < vector_count ? (vector_count - thread - 1) / stride + 1 : 0;
    const int ragged = (int)(mine % loads_in_flight);
    vector extra[loads_in_flight > 1 ? loads_in_flight - 1 : 1] = {};
#pragma unroll
    for (int k = 0; k < loads_in_flight - 1; k++)
        if (k < ragged)
            extra[k] = __ldg(vectors + i + k * stride);
    i += (size_t)ragged * stride;
    /* Whole rounds only from here: mine - ragged is a multiple of loads_in_flight. */
    for (; i < vector_count; i += loads_in_flight * stride) {
        vector v[loads_in_flight];
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++)
            v[k] = __ldg(vectors + i + k * stride);
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++)
            add_squares<T>(v[k], sums[2 * k], sums[2 * k + 1]);
    }
#pragma unroll
    for (int k = 0; k < loads_in_flight - 1; k++)
        add_squares<T>(extra[k], sums[2 * k], sums[2 * k + 1]);

#pragma unroll
    for (int span = running_sums / 2; span > 0; span /= 2)
#pragma unroll
        for (int k = 0; k < span; k++)
            sums[k] += sums[k + span];
    /* A float sum is exact in double: the grid sum adds no rounding of its own. */
    if (!kcs_grid_last_block(kcs_block_sum<threads_per_block>((double)sums[0]), partials, blocks_done))
        return;
    const double total = kcs_grid_total<threads_per_block>(partials);
    if (threadIdx.x == 0)
        *result = kcs_narrow_double<T>(total);
}

/* Blocks for n elements: one full wave of resident blocks (fewer for small
 * n), more in whole waves when a thread would read more than
 * max_vectors_per_thread vectors. */
size_t vector_grid_blocks(size_t n, int width, int sm_count, int blocks_per_sm)
{
    const size_t resident = (size_t)(sm_count > 0 ? sm_count : 1) * (size_t)(blocks_per_sm > 0 ? blocks_per_sm : 1);
    const size_t vectors = n / (size_t)width;
    const size_t vectors_per_block = (size_t)threads_per_block * max_vectors_per_thread;
    const size_t needed = (vectors + vectors_per_block - 1) / vectors_per_block;
    if (needed > resident)
        return (needed + resident - 1) / resident * resident;
    /* At least one block: it reads the few scalars, and writes s when n = 0. */
    const size_t useful = vectors == 0 ? 1 : (vectors + threads_per_block - 1) / threads_per_block;
    return useful < resident ? useful : resident;
}

template <typename T> KCS_KERNEL_RUN(run_vector_grid)
{
    const size_t n = args->sumsq.n;
    size_t blocks = 0;
    auto plan = [&]() -> kcs_status {
        int blocks_per_sm = 0;
        KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &blocks_per_sm, kcs_sumsq_vector_grid<T>, threads_per_block, 0));
        blocks = vector_grid_blocks(n, vector_of<T>::width, device->sm_count, blocks_per_sm);
        if (blocks > INT_MAX)
            return kcs_fail(err, KCS_ERROR, "sumsq: n = %zu needs %zu blocks, more than a grid has", n, blocks);
        return kcs_cuda_reserve(&device->partials, blocks * sizeof(double), err);
    };
    auto launch = [&]() -> kcs_status {
        kcs_sumsq_vector_grid<T><<<(unsigned int)blocks, threads_per_block, 0, device->stream>>>(
            (const T *)inputs[0]->data, n, (double *)device->partials.data, device->blocks_done,
            (T *)outputs[0]->data);
        KCS_CUDA_CHECK_LAUNCH("kcs_sumsq_vector_grid");
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

/* The CUB peer's transform: the square, carried in double. */
struct square_in_double {
    template <typename T> __device__ double operator()(T value) const
    {
        const double wide = kcs_widen(value);
        return wide * wide;
    }
};

/* Rounds the double sum once to the output type, as CUB writes it. */
template <typename T> struct round_to {
    __device__ T operator()(double value) const { return kcs_narrow_double<T>(value); }
};

/* Elements per CUB call: see the header comment. A multiple of 8, so every
 * chunk starts 16-byte aligned and CUB keeps its vector loads. */
size_t cub_chunk_elements(int sm_count)
{
    const size_t cub_block_threads = 256, cub_subscription = 5;
    size_t chunk = (size_t)KCS_SUMSQ_CUB_CHAIN * cub_block_threads * cub_subscription *
                   (size_t)(sm_count > 0 ? sm_count : 1);
    if (chunk > (size_t)1 << 30)
        chunk = (size_t)1 << 30; /* CUB's int item count */
    return chunk / 8 * 8; /* eight 16-bit elements, four float, two double: 16 bytes */
}

template <typename T> KCS_KERNEL_RUN(run_cub)
{
    const size_t n = args->sumsq.n;
    const T *x = nullptr;
    T *result = nullptr;
    const cuda::std::plus<double> plus{};
    const size_t chunk = cub_chunk_elements(device->sm_count);
    const size_t chunk_count = (n + chunk - 1) / chunk;
    size_t storage_bytes = 0;
    void *storage = nullptr;
    double *chunk_sums = nullptr;

    /* Sizes first, then storage, all before the timer starts. */
    auto plan = [&]() -> kcs_status {
        x = (const T *)inputs[0]->data;
        result = (T *)outputs[0]->data;
        auto rounded = thrust::make_transform_output_iterator(result, round_to<T>());
        kcs_status status = KCS_OK;
        if (chunk_count == 1) {
            KCS_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, storage_bytes, x, rounded, (int)n,
                                                              plus, square_in_double(), 0.0,
                                                              device->stream));
        } else if (chunk_count > 1) {
            size_t chunk_bytes = 0, final_bytes = 0;
            KCS_CUDA_CHECK(cub::DeviceReduce::TransformReduce(nullptr, chunk_bytes, x, (double *)nullptr,
                                                              (int)chunk, plus, square_in_double(), 0.0,
                                                              device->stream));
            KCS_CUDA_CHECK(cub::DeviceReduce::Reduce(nullptr, final_bytes, (const double *)nullptr,
                                                     rounded, (int)chunk_count, plus, 0.0,
                                                     device->stream));
            storage_bytes = chunk_bytes > final_bytes ? chunk_bytes : final_bytes;
            status = kcs_cuda_reserve(&device->partials, chunk_count * sizeof(double), err);
        }
        if (status == KCS_OK)
            status = kcs_cuda_reserve(&device->cub_storage, storage_bytes, err);
        storage = device->cub_storage.data;
        storage_bytes = device->cub_storage.bytes;
        chunk_sums = (double *)device->partials.data;
        return status;
    };
    auto launch = [&]() -> kcs_status {
        auto rounded = thrust::make_transform_output_iterator(result, round_to<T>());
        if (n == 0) {
            /* +0.0 is all zero bits in every type; CUB is not asked to reduce nothing. */
            KCS_CUDA_CHECK(cudaMemsetAsync(result, 0, sizeof(T), device->stream));
        } else if (chunk_count == 1) {
            KCS_CUDA_CHECK(cub::DeviceReduce::TransformReduce(storage, storage_bytes, x, rounded, (int)n,
                                                              plus, square_in_double(), 0.0,
                                                              device->stream));
        } else {
            for (size_t c = 0; c < chunk_count; c++) {
                const size_t start = c * chunk;
                const size_t count = n - start < chunk ? n - start : chunk;
                KCS_CUDA_CHECK(cub::DeviceReduce::TransformReduce(storage, storage_bytes, x + start,
                                                                  chunk_sums + c, (int)count, plus,
                                                                  square_in_double(), 0.0,
                                                                  device->stream));
            }
            KCS_CUDA_CHECK(cub::DeviceReduce::Reduce(storage, storage_bytes, (const double *)chunk_sums,
                                                     rounded, (int)chunk_count, plus, 0.0,
                                                     device->stream));
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

} // namespace

static const kcs_kernel rows[] = {
    {"sumsq", KCS_F64, "vector-grid",
     "16-byte loads, 8 f64 accumulators per thread, block partials summed in order by the last block",
     run_vector_grid<double>, NULL},
    {"sumsq", KCS_F32, "vector-grid", "as f64: squares and sums in double, rounded once to float",
     run_vector_grid<float>, NULL},
    {"sumsq", KCS_F64, "cub", "peer: cub::DeviceReduce::TransformReduce squaring into double", run_cub<double>,
     NULL, "CUB"},
    {"sumsq", KCS_F32, "cub", "peer: cub::DeviceReduce::TransformReduce, float squared in double", run_cub<float>,
     NULL, "CUB"},
    {"sumsq", KCS_F16, "vector-grid", "8 halves per 16-byte load, f32 running sums, f64 grid sum, rounded once",
     run_vector_grid<__half>, NULL},
    {"sumsq", KCS_BF16, "vector-grid", "8 bf16 per 16-byte load, f32 running sums, f64 grid sum, rounded once",
     run_vector_grid<__nv_bfloat16>, NULL},
    {"sumsq", KCS_F16, "cub", "peer: cub::DeviceReduce::TransformReduce, half squared in double", run_cub<__half>,
     NULL, "CUB"},
    {"sumsq", KCS_BF16, "cub", "peer: cub::DeviceReduce::TransformReduce, bf16 squared in double",
     run_cub<__nv_bfloat16>, NULL, "CUB"},
};

extern "C" const kcs_kernel_table kcs_cuda_sumsq_kernels = KCS_KERNEL_TABLE(rows);
