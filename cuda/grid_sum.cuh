/* grid_sum.cuh: a sum in double over a whole grid in one launch, for the
 * kernels that reduce a vector to one number (cuda/sumsq.cu's vector-grid,
 * cuda/energy.cu).
 *
 * Each block adds its threads' values by warp shuffles and shared memory
 * (kcs_block_sum), stores its total in partials[blockIdx.x] and counts
 * itself done on a device-wide counter (kcs_grid_last_block); the last block
 * to finish adds the partials in index order, not arrival order
 * (kcs_grid_total). No floating-point atomics: the same input gives the same
 * bits on every run. Depth: 5 + 5 additions in a block's sum, then
 * ceil(blocks / THREADS) in the last block's loop and 5 + 5 more.
 *
 * Device code only, included by .cu files after common.cuh (and inlined
 * into them by tests/cuda_kernels_emulation.sh).
 */
#ifndef KCS_CUDA_GRID_SUM_CUH
#define KCS_CUDA_GRID_SUM_CUH

/* The sum of value over a warp, valid in lane 0. */
__device__ __forceinline__ double kcs_warp_sum(double value)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        value += __shfl_down_sync(0xffffffffu, value, offset);
    return value;
}

/* The sum of value over a block of THREADS threads, valid in thread 0. Every
 * thread must call it. */
template <int THREADS> __device__ __forceinline__ double kcs_block_sum(double value)
{
    static_assert(THREADS % 32 == 0 && THREADS / 32 <= 32,
                  "whole warps, and one warp must be able to add the warp sums");
    __shared__ double warp_sums[THREADS / 32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    value = kcs_warp_sum(value);
    __syncthreads(); /* the readers of an earlier call are done with warp_sums */
    if (lane == 0)
        warp_sums[warp] = value;
    __syncthreads();
    if (warp == 0)
        value = kcs_warp_sum(lane < THREADS / 32 ? warp_sums[lane] : 0.0);
    return value;
}

/* atomicInc(counter, limit) (the old value; counter becomes 0 after limit)
 * with acquire-release semantics at device scope: this thread's earlier
 * writes are visible to whoever reads the value it leaves, and it sees the
 * writes that the earlier incrementers made before theirs. One
 * atom.acq_rel.gpu instruction, where __threadfence(); atomicInc();
 * __threadfence() orders the same with two sequentially consistent fences:
 * 0.3 to 0.6 us less at the end of a launch (16-bit sum of squares of 10^8
 * elements on an H100, 2026-11-27, docs/sumsq.md). The host emulation has no
 * memory model to order, and runs the plain atomicInc. */
__device__ __forceinline__ unsigned int kcs_atomic_inc_acq_rel(unsigned int *counter, unsigned int limit)
{
#if defined(__CUDA_ARCH__)
    unsigned int old;
    asm volatile("atom.acq_rel.gpu.global.inc.u32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(limit) : "memory");
    return old;
#else
    return atomicInc(counter, limit);
#endif
}

/* Thread 0 stores the block's total (block_total, valid there) in
 * partials[blockIdx.x] and counts the block done; returns, in every thread,
 * whether this block finished last. blocks_done is 0 on entry to the launch,
 * and the last block's increment wraps it back to 0 for the next. Every
 * thread must call it. */
__device__ __forceinline__ bool kcs_grid_last_block(double block_total, double *partials,
                                                    unsigned int *blocks_done)
{
    __shared__ bool last_block;
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = block_total;
        /* The count's release publishes the partial before this block counts
         * as done; its acquire, in the block that counts last, orders that
         * block's reads of every other partial after their stores (and the
         * barrier below carries the order to its other threads). */
        const unsigned int finished_before = kcs_atomic_inc_acq_rel(blocks_done, gridDim.x - 1);
        last_block = finished_before == gridDim.x - 1;
    }
    __syncthreads();
    return last_block;
}

/* In the last block: the sum of every block's partial, in index order, valid
 * in thread 0. Every thread of that block must call it. A thread loads four
 * partials (b, b + THREADS, ...) before it adds the first, so the last
 * block waits one L2 latency per four rather than per partial; one past
 * gridDim.x adds +0, which leaves every sum as it was (partials are >= 0,
 * inf or NaN), so the result and the depth of its rounding additions are
 * those of a plain loop. */
template <int THREADS> __device__ __forceinline__ double kcs_grid_total(const double *partials)
{
    double total = 0.0;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += 4 * THREADS) {
        double loaded[4];
#pragma unroll
        for (int k = 0; k < 4; k++) /* from L2: this SM's L1 may hold stale lines */
            loaded[k] = b + k * THREADS < gridDim.x ? __ldcg(partials + b + k * THREADS) : 0.0;
#pragma unroll
        for (int k = 0; k < 4; k++)
            total += loaded[k];
    }
    return kcs_block_sum<THREADS>(total);
}

#endif
