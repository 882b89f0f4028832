/* probe.cu: the probe's set on CUDA (harness/probe.h; docs/fleet.md, "The
 * probe"): four small deterministic kernels, each block recording the SM
 * that ran it (%smid) and a hash of its own output slice, and comparing the
 * hash with the expected one on the device.
 *
 * What is shared with kcs's rows and what is not. These are probe-specific
 * kernels: kcs's rows cannot record an SM per block or hash a block's slice,
 * and their grids follow the problem, not the SM count. They are built on the
 * same pieces (half.cuh's bf16, common.cuh's checks and device) and keep the
 * corresponding row's arithmetic: the order of the sums and where it rounds,
 * not its tiling or speed.
 *
 *   gemm-tensor  as cuda/gemm/tensor_mma.cu's `tensor` row: mma.sync.m16n8k16 bf16 x
 *                bf16 into f32 accumulators, k ascending 16 at a time, c_out
 *                = the accumulator (alpha = 1, beta = 0). A block of 4 warps
 *                owns a 64 x 64 tile, each warp 32 x 32 (2 x 4 instructions);
 *                fragments are read straight from global memory (the tiles
 *                are L1- and L2-resident), with no shared-memory pipeline.
 *   gemm-fma     as cuda/gemm/simt.cu's `tiled` row in f32: one fmaf per term, k
 *                ascending, into an f32 accumulator; 256 threads, 4 x 4
 *                outputs each, 32-deep k tiles through shared memory.
 *   softmax      as softmax.cu's warp-groups row for 1024 f32 columns: a warp
 *                a row, 8 float4 slots a lane; max by fmaxf in one chain and
 *                a butterfly, e = expf(x - M), the sum in one chain over the
 *                lane's values and a butterfly, one IEEE reciprocal, y = e * r.
 *   sumsq        as sumsq.cu's f64 arithmetic: fma(x, x, sum) in double,
 *                then warp butterflies and the warps' sums in index order.
 *
 * A block's threads each add the hash terms of the words they wrote; the
 * block's sum (warp shuffles, then the warps' sums in order, modulo 2^64:
 * the order does not matter) is its hash. Thread 0 then writes the record,
 * compares with the expected hash, and on a mismatch or an injected flip
 * (testing: the host chose the block, word and bit, and the thread that owns
 * the word flips it before storing and hashing it) appends an entry to the
 * step's summary with atomics.
 *
 * Streams (lib/kcs_probe.h): the probe's own non-blocking stream of the
 * lowest priority, made at open; a step is the summary zeroed, the launches
 * with a timing event after each, the summary copied into pinned memory and
 * an event; collect polls that event (cudaEventQuery) or waits for it alone.
 * Nothing here synchronizes the device or another stream. Every entry point
 * selects the probe's device and restores the caller's current device.
 *
 * Not emulated on the host (mma.sync and %smid are inline PTX): the
 * reference backend runs the same set (ref/probe.c); the GPU run checks
 * this file, with compute-sanitizer's memcheck and racecheck.
 *
 * Run only it: build/kcs probe --backend cuda --device all
 */
#include <cstdint>
#include <cstring>
#include <new>

#include "common.cuh"

extern "C" {
#include "probe.h"
}

namespace {

constexpr int tensor_threads = 128;  /* 4 warps, 32 x 32 of the tile each */
constexpr int fma_threads = 256;     /* 16 x 16 threads, 4 x 4 outputs each */
constexpr int fma_k_tile = 32;
constexpr int softmax_threads = 32 * KCS_PROBE_SOFTMAX_ROWS; /* a warp a row */
constexpr int sumsq_threads = 256;
constexpr int tile = KCS_PROBE_TILE, depth = KCS_PROBE_GEMM_K;

static_assert(KCS_PROBE_SOFTMAX_COLS == 32 * 8 * 4, "a softmax row is 32 lanes of 8 float4 slots");
static_assert(KCS_PROBE_SUMSQ_N % sumsq_threads == 0, "whole rounds of the sum of squares");
static_assert(depth % fma_k_tile == 0 && depth % 16 == 0, "whole k tiles");

/* What every probe kernel gets: where its block's record, expected hash and the summary are. */
struct block_params {
    int kernel, chunk, blocks;
    int flip_block;        /* -1: none */
    uint32_t flip_word, flip_bit;
    size_t slices;         /* per kernel */
    kcs_probe_record *records;
    const kcs_probe_expected *expected;
    kcs_probe_summary *summary;
};

__device__ __forceinline__ uint32_t sm_id()
{
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

__device__ __forceinline__ size_t slice_of(const block_params &p)
{
    return (size_t)p.chunk * p.blocks + blockIdx.x;
}

/* A word this thread stores, flipped where the injection says, and its hash term added to partial. */
__device__ __forceinline__ uint32_t hashed_word(const block_params &p, uint32_t index, uint32_t bits, uint64_t &partial)
{
    if ((int)blockIdx.x == p.flip_block && index == p.flip_word)
        bits ^= 1u << p.flip_bit;
    partial += kcs_probe_word_term(index, bits);
    return bits;
}

/* The block's hash from every thread's partial sum; thread 0 records and compares it. All threads call it. */
template <int THREADS> __device__ void finish_block(const block_params &p, uint64_t partial)
{
    __shared__ uint64_t warp_sums[THREADS / 32];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        partial += __shfl_xor_sync(0xffffffffu, partial, offset);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = partial;
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    uint64_t hash = 0;
    for (int w = 0; w < THREADS / 32; w++)
        hash += warp_sums[w];
    const size_t slice = slice_of(p), index = p.kernel * p.slices + slice;
    const kcs_probe_expected expected = p.expected[index];
    uint32_t flags = (int)blockIdx.x == p.flip_block ? KCS_PROBE_FLAG_INJECTED : 0u;
    if (expected.valid && expected.hash != hash)
        flags |= KCS_PROBE_FLAG_MISMATCH;
    const uint32_t sm = sm_id();
    kcs_probe_record record;
    record.hash = hash;
    record.sm = sm;
    record.flags = flags;
    p.records[index] = record;
    kcs_probe_summary *summary = p.summary;
    if (sm < KCS_PROBE_MAX_SMS)
        atomicOr(&summary->sms_seen[sm / 32], 1u << (sm % 32));
    if (flags & KCS_PROBE_FLAG_MISMATCH) {
        atomicAdd(&summary->mismatches, 1u);
        atomicAdd(&summary->kernel_mismatches[p.kernel], 1u);
    }
    if (flags & KCS_PROBE_FLAG_INJECTED)
        atomicAdd(&summary->injected, 1u);
    if (flags) {
        const uint32_t slot = atomicAdd(&summary->entries, 1u);
        if (slot < KCS_PROBE_SUMMARY_ENTRIES) {
            kcs_probe_entry entry;
            entry.kernel = (uint32_t)p.kernel;
            entry.slice = (uint32_t)slice;
            entry.sm = sm;
            entry.flags = flags;
            entry.hash = hash;
            entry.expected = expected.hash;
            summary->entry[slot] = entry;
        }
    }
}

/* ---- gemm-tensor: mma.sync.m16n8k16 bf16, f32 accumulators -------------------
 * Fragments (PTX ISA, "Matrix fragments for mma.m16n8k16"), lane = 4 g + t:
 * A (16 x 16, row): registers (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8),
 * each two consecutive k (lower k in the low half); B (16 x 8, col): (k 2t,
 * column g), (k 2t + 8, column g), each two consecutive k; C (16 x 8, f32):
 * (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). */
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2])
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two bf16 of B at (k, column) and (k + 1, column) as one register, k in the low half. */
__device__ __forceinline__ uint32_t b_pair(const uint16_t *b, int k, int column)
{
    return (uint32_t)__ldg(b + k * tile + column) | ((uint32_t)__ldg(b + (k + 1) * tile + column) << 16);
}

__global__ void __launch_bounds__(tensor_threads)
probe_gemm_tensor(const uint16_t *__restrict__ a_pool, const uint16_t *__restrict__ b_pool,
                  float *__restrict__ out, block_params p)
{
    const size_t slice = slice_of(p);
    const uint16_t *a = a_pool + (slice % KCS_PROBE_A_TILES) * (size_t)tile * depth;
    const uint16_t *b = b_pool + (slice % KCS_PROBE_B_TILES) * (size_t)depth * tile;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int row0 = (warp / 2) * 32, column0 = (warp % 2) * 32;
    float acc[2][4][4] = {};
    for (int k0 = 0; k0 < depth; k0 += 16) {
        uint32_t af[2][4], bf[4][2];
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint16_t *r = a + (size_t)(row0 + 16 * i + g) * depth + k0 + 2 * t;
            af[i][0] = __ldg(reinterpret_cast<const uint32_t *>(r));
            af[i][1] = __ldg(reinterpret_cast<const uint32_t *>(r + 8 * depth));
            af[i][2] = __ldg(reinterpret_cast<const uint32_t *>(r + 8));
            af[i][3] = __ldg(reinterpret_cast<const uint32_t *>(r + 8 * depth + 8));
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            bf[j][0] = b_pair(b, k0 + 2 * t, column0 + 8 * j + g);
            bf[j][1] = b_pair(b, k0 + 2 * t + 8, column0 + 8 * j + g);
        }
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                mma_bf16(acc[i][j], af[i], bf[j]);
    }
    float *slice_out = out + (size_t)blockIdx.x * KCS_PROBE_GEMM_WORDS;
    uint64_t partial = 0;
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int row = row0 + 16 * i + g + (e >> 1) * 8, column = column0 + 8 * j + 2 * t + (e & 1);
                const uint32_t index = (uint32_t)(row * tile + column);
                slice_out[index] = __uint_as_float(hashed_word(p, index, __float_as_uint(acc[i][j][e]), partial));
            }
    finish_block<tensor_threads>(p, partial);
}

/* ---- gemm-fma: f32 FMAs on the SIMT units --------------------------------------- */

__global__ void __launch_bounds__(fma_threads)
probe_gemm_fma(const float *__restrict__ a_pool, const float *__restrict__ b_pool, float *__restrict__ out,
               block_params p)
{
    __shared__ float a_tile[tile][fma_k_tile + 1]; /* [row][k], padded */
    __shared__ float b_tile[fma_k_tile][tile];     /* [k][column] */
    const size_t slice = slice_of(p);
    const float *a = a_pool + (slice % KCS_PROBE_A_TILES) * (size_t)tile * depth;
    const float *b = b_pool + (slice % KCS_PROBE_B_TILES) * (size_t)depth * tile;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < depth; k0 += fma_k_tile) {
        for (int e = threadIdx.x; e < tile * fma_k_tile; e += fma_threads) {
            a_tile[e / fma_k_tile][e % fma_k_tile] = __ldg(a + (size_t)(e / fma_k_tile) * depth + k0 + e % fma_k_tile);
            b_tile[e / tile][e % tile] = __ldg(b + (size_t)(k0 + e / tile) * tile + e % tile);
        }
        __syncthreads();
#pragma unroll 4
        for (int q = 0; q < fma_k_tile; q++)
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a_tile[ty + 16 * i][q], b_tile[q][tx + 16 * j], acc[i][j]);
        __syncthreads();
    }
    float *slice_out = out + (size_t)blockIdx.x * KCS_PROBE_GEMM_WORDS;
    uint64_t partial = 0;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t index = (uint32_t)((ty + 16 * i) * tile + tx + 16 * j);
            slice_out[index] = __uint_as_float(hashed_word(p, index, __float_as_uint(acc[i][j]), partial));
        }
    finish_block<fma_threads>(p, partial);
}

/* ---- softmax: a warp a row of 1024 f32 ------------------------------------------- */

__global__ void __launch_bounds__(softmax_threads)
probe_softmax(const float *__restrict__ pool, float *__restrict__ out, block_params p)
{
    const size_t slice = slice_of(p);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t pool_row = (slice * KCS_PROBE_SOFTMAX_ROWS + warp) % KCS_PROBE_SOFTMAX_POOL_ROWS;
    const float4 *x = reinterpret_cast<const float4 *>(pool + pool_row * KCS_PROBE_SOFTMAX_COLS);
    float value[8][4];
#pragma unroll
    for (int s = 0; s < 8; s++) {
        const float4 v = __ldg(x + s * 32 + lane);
        value[s][0] = v.x, value[s][1] = v.y, value[s][2] = v.z, value[s][3] = v.w;
    }
    float m = -INFINITY;
#pragma unroll
    for (int s = 0; s < 8; s++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            m = fmaxf(m, value[s][e]);
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
    float sum = 0.0f;
#pragma unroll
    for (int s = 0; s < 8; s++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            value[s][e] = expf(value[s][e] - m); /* 2 ulp; not __expf */
            sum += value[s][e];
        }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    const float reciprocal = 1.0f / sum;
    float *row_out = out + (size_t)blockIdx.x * KCS_PROBE_SOFTMAX_WORDS + (size_t)warp * KCS_PROBE_SOFTMAX_COLS;
    uint64_t partial = 0;
#pragma unroll
    for (int s = 0; s < 8; s++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t column = (uint32_t)((s * 32 + lane) * 4 + e);
            const uint32_t index = (uint32_t)warp * KCS_PROBE_SOFTMAX_COLS + column;
            row_out[column] = __uint_as_float(hashed_word(p, index, __float_as_uint(value[s][e] * reciprocal), partial));
        }
    finish_block<softmax_threads>(p, partial);
}

/* ---- sumsq: 4096 f64 a block ------------------------------------------------------- */

__global__ void __launch_bounds__(sumsq_threads)
probe_sumsq(const double *__restrict__ pool, double *__restrict__ out, block_params p)
{
    __shared__ double warp_sums[sumsq_threads / 32];
    const double *x = pool + (slice_of(p) % KCS_PROBE_SUMSQ_SEGMENTS) * (size_t)KCS_PROBE_SUMSQ_N;
    double sum = 0.0;
    for (int i = threadIdx.x; i < KCS_PROBE_SUMSQ_N; i += sumsq_threads) {
        const double v = __ldg(x + i);
        sum = fma(v, v, sum);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (threadIdx.x % 32 == 0)
        warp_sums[threadIdx.x / 32] = sum;
    __syncthreads();
    uint64_t partial = 0;
    if (threadIdx.x == 0) {
        double s = warp_sums[0];
        for (int w = 1; w < sumsq_threads / 32; w++)
            s += warp_sums[w];
        const unsigned long long bits = (unsigned long long)__double_as_longlong(s);
        const uint32_t low = hashed_word(p, 0, (uint32_t)bits, partial);
        const uint32_t high = hashed_word(p, 1, (uint32_t)(bits >> 32), partial);
        out[blockIdx.x] = __longlong_as_double((long long)(((unsigned long long)high << 32) | low));
    }
    finish_block<sumsq_threads>(p, partial);
}

} // namespace

/* ---- Host side ------------------------------------------------------------------ */

struct kcs_probe_state {
    kcs_device *device;
    int blocks;
    size_t slices;
    cudaStream_t stream;              /* the probe's own: non-blocking, lowest priority */
    cudaEvent_t marks[KCS_PROBE_KERNELS + 1]; /* around each launch of a step */
    cudaEvent_t done;                 /* after the summary's copy: what collect polls */
    void *inputs[6];                  /* tensor a, b; fma a, b; softmax x; sumsq x */
    void *outputs[KCS_PROBE_KERNELS]; /* one launch each: [blocks][words] */
    kcs_probe_record *records;        /* [KERNELS][slices] */
    kcs_probe_expected *expected;     /* likewise */
    kcs_probe_summary *summary;       /* on the device */
    kcs_probe_summary *summary_host;  /* pinned: where a step's summary lands */
    int launched;                     /* launches of the step in flight; 0: none */
};

namespace {

/* Makes the probe's device current for one entry point and restores the caller's on return. */
struct device_scope {
    int previous = -1;
    cudaError_t result;
    explicit device_scope(const kcs_device *device)
    {
        result = cudaGetDevice(&previous);
        if (result == cudaSuccess && previous != device->ordinal)
            result = cudaSetDevice(device->ordinal);
    }
    ~device_scope()
    {
        int current = -1;
        if (previous >= 0 && cudaGetDevice(&current) == cudaSuccess && current != previous)
            (void)cudaSetDevice(previous);
    }
};

#define KCS_PROBE_SELECT(device)                                                                      \
    device_scope scope_(device);                                                                      \
    if (scope_.result != cudaSuccess)                                                                 \
    return kcs_cuda_failure(err, scope_.result, "cudaSetDevice for the probe", __FILE__, __LINE__)

const size_t tensor_a_bytes = (size_t)KCS_PROBE_A_TILES * tile * depth * sizeof(uint16_t);
const size_t tensor_b_bytes = (size_t)KCS_PROBE_B_TILES * depth * tile * sizeof(uint16_t);
const size_t softmax_bytes = (size_t)KCS_PROBE_SOFTMAX_POOL_ROWS * KCS_PROBE_SOFTMAX_COLS * sizeof(float);
const size_t sumsq_bytes = (size_t)KCS_PROBE_SUMSQ_SEGMENTS * KCS_PROBE_SUMSQ_N * sizeof(double);

size_t words_of(int kernel)
{
    return kernel == KCS_PROBE_SOFTMAX ? KCS_PROBE_SOFTMAX_WORDS
           : kernel == KCS_PROBE_SUMSQ ? KCS_PROBE_SUMSQ_WORDS
                                       : KCS_PROBE_GEMM_WORDS;
}

kcs_status geometry(kcs_device *device, int *sms, int *blocks, kcs_error *err)
{
    (void)err;
    *sms = device->sm_count;
    *blocks = 2 * device->sm_count; /* two waves' worth of blocks an SM: every SM takes some */
    return KCS_OK;
}

void close_state(kcs_probe_state *state)
{
    if (!state)
        return;
    device_scope scope(state->device);
    if (state->stream)
        (void)cudaStreamSynchronize(state->stream);
    for (void *input : state->inputs)
        if (input)
            (void)cudaFree(input);
    for (void *output : state->outputs)
        if (output)
            (void)cudaFree(output);
    if (state->records)
        (void)cudaFree(state->records);
    if (state->expected)
        (void)cudaFree(state->expected);
    if (state->summary)
        (void)cudaFree(state->summary);
    if (state->summary_host)
        (void)cudaFreeHost(state->summary_host);
    for (cudaEvent_t mark : state->marks)
        if (mark)
            (void)cudaEventDestroy(mark);
    if (state->done)
        (void)cudaEventDestroy(state->done);
    if (state->stream)
        (void)cudaStreamDestroy(state->stream);
    (void)cudaGetLastError();
    delete state;
}

kcs_status open_resources(kcs_probe_state *state, const kcs_probe_inputs *inputs, kcs_error *err)
{
    int least = 0, greatest = 0;
    KCS_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    KCS_CUDA_CHECK(cudaStreamCreateWithPriority(&state->stream, cudaStreamNonBlocking, least));
    for (cudaEvent_t &mark : state->marks)
        KCS_CUDA_CHECK(cudaEventCreate(&mark));
    KCS_CUDA_CHECK(cudaEventCreateWithFlags(&state->done, cudaEventDisableTiming));
    const void *from[6] = {inputs->tensor_a, inputs->tensor_b, inputs->fma_a, inputs->fma_b, inputs->softmax_x,
                           inputs->sumsq_x};
    const size_t f32_per_bf16 = sizeof(float) / sizeof(uint16_t); /* the FMA GEMM's pools: same shapes, in f32 */
    const size_t bytes[6] = {tensor_a_bytes, tensor_b_bytes, f32_per_bf16 * tensor_a_bytes,
                             f32_per_bf16 * tensor_b_bytes, softmax_bytes, sumsq_bytes};
    for (int i = 0; i < 6; i++) {
        KCS_CUDA_CHECK(cudaMalloc(&state->inputs[i], bytes[i]));
        KCS_CUDA_CHECK(cudaMemcpyAsync(state->inputs[i], from[i], bytes[i], cudaMemcpyHostToDevice, state->stream));
    }
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        KCS_CUDA_CHECK(cudaMalloc(&state->outputs[k], (size_t)state->blocks * words_of(k) * sizeof(uint32_t)));
    const size_t records = KCS_PROBE_KERNELS * state->slices;
    KCS_CUDA_CHECK(cudaMalloc(&state->records, records * sizeof *state->records));
    KCS_CUDA_CHECK(cudaMalloc(&state->expected, records * sizeof *state->expected));
    KCS_CUDA_CHECK(cudaMemsetAsync(state->records, 0, records * sizeof *state->records, state->stream));
    KCS_CUDA_CHECK(cudaMemsetAsync(state->expected, 0, records * sizeof *state->expected, state->stream));
    KCS_CUDA_CHECK(cudaMalloc(&state->summary, sizeof *state->summary));
    KCS_CUDA_CHECK(cudaMallocHost(&state->summary_host, sizeof *state->summary_host));
    KCS_CUDA_CHECK(cudaStreamSynchronize(state->stream)); /* the host's inputs may be freed now */
    return KCS_OK;
}

kcs_status open_state(kcs_device *device, int blocks, const kcs_probe_inputs *inputs, kcs_probe_state **opened,
                      kcs_error *err)
{
    *opened = nullptr;
    KCS_PROBE_SELECT(device);
    kcs_probe_state *state = new (std::nothrow) kcs_probe_state();
    if (!state)
        return kcs_fail(err, KCS_ERROR, "the CUDA probe: out of memory");
    state->device = device;
    state->blocks = blocks;
    state->slices = (size_t)KCS_PROBE_CHUNKS * (size_t)blocks;
    kcs_status status = open_resources(state, inputs, err);
    if (status != KCS_OK) {
        close_state(state);
        return status;
    }
    *opened = state;
    return KCS_OK;
}

kcs_status set_expected(kcs_probe_state *state, const kcs_probe_expected *expected, size_t count, kcs_error *err)
{
    if (count != KCS_PROBE_KERNELS * state->slices)
        return kcs_fail(err, KCS_ERROR, "%zu expected hashes for %zu blocks", count, KCS_PROBE_KERNELS * state->slices);
    KCS_PROBE_SELECT(state->device);
    KCS_CUDA_CHECK(cudaMemcpyAsync(state->expected, expected, count * sizeof *expected, cudaMemcpyHostToDevice,
                                   state->stream));
    KCS_CUDA_CHECK(cudaStreamSynchronize(state->stream)); /* the probe's own stream: expected may be reused */
    return KCS_OK;
}

kcs_status launch(kcs_probe_state *state, const kcs_probe_launch launches[], int count, kcs_error *err)
{
    KCS_PROBE_SELECT(state->device);
    KCS_CUDA_CHECK(cudaMemsetAsync(state->summary, 0, sizeof *state->summary, state->stream));
    KCS_CUDA_CHECK(cudaEventRecord(state->marks[0], state->stream));
    for (int i = 0; i < count; i++) {
        const kcs_probe_launch &l = launches[i];
        block_params p{l.kernel, l.chunk, state->blocks, l.flip_block, l.flip_word, l.flip_bit, state->slices,
                       state->records, state->expected, state->summary};
        const unsigned blocks = (unsigned)state->blocks;
        switch (l.kernel) {
        case KCS_PROBE_GEMM_TENSOR:
            probe_gemm_tensor<<<blocks, tensor_threads, 0, state->stream>>>(
                (const uint16_t *)state->inputs[0], (const uint16_t *)state->inputs[1], (float *)state->outputs[0], p);
            KCS_CUDA_CHECK_LAUNCH("probe_gemm_tensor");
            break;
        case KCS_PROBE_GEMM_FMA:
            probe_gemm_fma<<<blocks, fma_threads, 0, state->stream>>>(
                (const float *)state->inputs[2], (const float *)state->inputs[3], (float *)state->outputs[1], p);
            KCS_CUDA_CHECK_LAUNCH("probe_gemm_fma");
            break;
        case KCS_PROBE_SOFTMAX:
            probe_softmax<<<blocks, softmax_threads, 0, state->stream>>>((const float *)state->inputs[4],
                                                                         (float *)state->outputs[2], p);
            KCS_CUDA_CHECK_LAUNCH("probe_softmax");
            break;
        case KCS_PROBE_SUMSQ:
            probe_sumsq<<<blocks, sumsq_threads, 0, state->stream>>>((const double *)state->inputs[5],
                                                                     (double *)state->outputs[3], p);
            KCS_CUDA_CHECK_LAUNCH("probe_sumsq");
            break;
        default:
            return kcs_fail(err, KCS_ERROR, "no probe kernel %d", l.kernel);
        }
        KCS_CUDA_CHECK(cudaEventRecord(state->marks[i + 1], state->stream));
    }
    KCS_CUDA_CHECK(cudaMemcpyAsync(state->summary_host, state->summary, sizeof *state->summary,
                                   cudaMemcpyDeviceToHost, state->stream));
    KCS_CUDA_CHECK(cudaEventRecord(state->done, state->stream));
    state->launched = count;
    return KCS_OK;
}

kcs_status collect(kcs_probe_state *state, int wait, int *finished, kcs_probe_summary *summary, double seconds[],
                   kcs_error *err)
{
    *finished = 0;
    KCS_PROBE_SELECT(state->device);
    if (wait) {
        KCS_CUDA_CHECK(cudaEventSynchronize(state->done));
    } else {
        cudaError_t ready = cudaEventQuery(state->done);
        if (ready == cudaErrorNotReady)
            return KCS_OK;
        KCS_CUDA_CHECK(ready);
    }
    *finished = 1;
    std::memcpy(summary, state->summary_host, sizeof *summary);
    for (int i = 0; i < state->launched; i++) {
        float milliseconds = 0.0f;
        KCS_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, state->marks[i], state->marks[i + 1]));
        seconds[i] = 1e-3 * (double)milliseconds;
    }
    state->launched = 0;
    return KCS_OK;
}

kcs_status download_records(kcs_probe_state *state, kcs_probe_record *records, kcs_error *err)
{
    KCS_PROBE_SELECT(state->device);
    KCS_CUDA_CHECK(cudaMemcpyAsync(records, state->records, KCS_PROBE_KERNELS * state->slices * sizeof *records,
                                   cudaMemcpyDeviceToHost, state->stream));
    KCS_CUDA_CHECK(cudaStreamSynchronize(state->stream));
    return KCS_OK;
}

kcs_status download_slice(kcs_probe_state *state, int kernel, int block, uint32_t *host, kcs_error *err)
{
    if (kernel < 0 || kernel >= KCS_PROBE_KERNELS || block < 0 || block >= state->blocks)
        return kcs_fail(err, KCS_ERROR, "no block %d of probe kernel %d", block, kernel);
    KCS_PROBE_SELECT(state->device);
    const size_t words = words_of(kernel);
    KCS_CUDA_CHECK(cudaMemcpyAsync(host, (const uint32_t *)state->outputs[kernel] + (size_t)block * words,
                                   words * sizeof(uint32_t), cudaMemcpyDeviceToHost, state->stream));
    KCS_CUDA_CHECK(cudaStreamSynchronize(state->stream));
    return KCS_OK;
}

} // namespace

/* Positional: C++17 has no designated initializers; the order is probe.h's. */
extern "C" const kcs_probe_methods kcs_cuda_probe_methods = {
    geometry, open_state, set_expected, launch, collect, download_records, download_slice, close_state,
};
