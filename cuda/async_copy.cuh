/* async_copy.cuh: copies into shared memory that run on while the thread
 * goes on, and what a kernel waits on for them, as inline PTX (PTX ISA,
 * sections "cp.async", "mbarrier", "barrier.cluster", "st.async"). One home
 * for each form, so that every kernel that fills shared memory this way
 * emits the same instructions with the same scope and semantics:
 *
 *   cp.async     a thread's own 16-, 8- or 4-byte copies from global memory
 *                (cuda/softmax.cu's slices and stash, cuda/gemm/tensor_f64.cu's
 *                tiles), committed in groups and waited for by the same
 *                thread;
 *   mbarrier     a barrier in shared memory that counts arrivals and bytes:
 *                TMA copies (cuda/gemm/hopper.cuh) and st.async stores from
 *                other blocks of a cluster (the softmax cluster kernel's
 *                pairs) complete on it;
 *   cluster      the arrive and wait of a cluster's barrier, relaxed: no
 *                GPU-wide fence (docs/softmax.md, "The cluster's meetings
 *                without a GPU-wide fence"), and a store into another
 *                block's shared memory that completes on that block's
 *                mbarrier.
 *
 * Device code only, for sm_80 (cp.async) and sm_90 (the rest). The host
 * emulation of cuda/softmax.cu (tests/cuda_kernels_emulation.sh) leaves this
 * file out and tests/cuda_kernels_emulation.h has a host version of each
 * function that file uses.
 */
#ifndef KCS_CUDA_ASYNC_COPY_CUH
#define KCS_CUDA_ASYNC_COPY_CUH

#include <cstdint>

/* The shared-memory address (the .shared window's 32 bits) of a generic pointer into shared memory. */
__device__ __forceinline__ uint32_t shared_address(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* ---- cp.async: a thread's own copies -------------------------------------------------------------- */

/* bytes (16, 8 or 4) from global to shared memory. 16-byte copies bypass L1 (.cg: what is read into shared
 * memory is not read again through L1); smaller ones may only go through it (.ca, the one form the ISA
 * allows for them). A 2-byte slot (an f16 or bf16 row that is not 16-byte aligned), which cp.async cannot
 * move, is copied by a load and a store, waiting for the load. */
template <int bytes> __device__ __forceinline__ void copy_async(void *shared, const void *global)
{
    if constexpr (bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)), "l"(global)
                     : "memory");
    else if constexpr (bytes == 8 || bytes == 4)
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address(shared)), "l"(global),
                     "n"(bytes)
                     : "memory");
    else {
        static_assert(bytes == 2, "slots are 16, 8, 4 or 2 bytes");
        *static_cast<unsigned short *>(shared) = __ldg(static_cast<const unsigned short *>(global));
    }
}

/* As copy_async, but reading only the first read_bytes (0 or bytes) of global and writing zeros for the
 * rest: with read_bytes = 0 nothing is read, so global may be any valid address (a tile's edge beyond the
 * matrix). */
template <int bytes>
__device__ __forceinline__ void copy_async_or_zeros(void *shared, const void *global, int read_bytes)
{
    static_assert(bytes == 16 || bytes == 8 || bytes == 4, "cp.async copies 16, 8 or 4 bytes");
    if constexpr (bytes == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(shared)), "l"(global),
                     "r"(read_bytes)
                     : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_address(shared)), "l"(global),
                     "n"(bytes), "r"(read_bytes)
                     : "memory");
}

/* Closes the group of this thread's copies issued since the last commit. */
__device__ __forceinline__ void copy_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Until at most PENDING of this thread's committed groups are in flight. */
template <int PENDING> __device__ __forceinline__ void copy_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

/* Until every copy this thread has issued, committed or not, has landed. */
__device__ __forceinline__ void copy_async_wait_all()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* ---- mbarriers: arrivals and bytes -------------------------------------------------------------------- */

/* A barrier whose phases complete after count arrivals (and the bytes announced in them). One thread. */
__device__ __forceinline__ void barrier_init(uint64_t *barrier, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(count) : "memory");
}

/* Makes the barriers' initialisation visible to the other threads of the cluster and to the async proxy
 * (TMA, st.async) before any of them uses a barrier. */
__device__ __forceinline__ void barrier_init_fence()
{
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* One arrival, announcing bytes that copies or stores completing on the barrier will bring in this phase. */
__device__ __forceinline__ void barrier_expect_bytes(uint64_t *barrier, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)),
                 "r"(bytes)
                 : "memory");
}

/* One arrival. */
__device__ __forceinline__ void barrier_arrive(uint64_t *barrier)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

/* Until the barrier's phase of this parity has completed, acquiring at the scope of the block (the
 * default): what TMA copied, and what this block's threads released, is visible after it. */
__device__ __forceinline__ void barrier_wait(uint64_t *barrier, int parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait;\n"
                 "}\n" ::"r"(shared_address(barrier)),
                 "r"(parity)
                 : "memory");
}

/* As barrier_wait, acquiring at the scope of the cluster: what other blocks stored into this block's shared
 * memory by st.async, completing on the barrier, is visible after it. */
__device__ __forceinline__ void barrier_wait_cluster(uint64_t *barrier, int parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait_cluster:\n"
                 "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_cluster;\n"
                 "}\n" ::"r"(shared_address(barrier)),
                 "r"(parity)
                 : "memory");
}

/* ---- clusters: the cluster's barrier, and stores into another block ---------------------------------- */

/* This thread's arrival at the cluster's barrier, releasing nothing. cooperative_groups' barrier_arrive
 * releases, which ptxas makes a MEMBAR.ALL.GPU; an arrival with nothing to release (or whose stores complete
 * on an mbarrier) does not need it. Every thread of every block of the cluster arrives (.aligned: the whole
 * warp together). */
__device__ __forceinline__ void cluster_arrive_relaxed()
{
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}

/* Until every thread of the cluster has arrived at the cluster's barrier (acquiring: the default). */
__device__ __forceinline__ void cluster_wait()
{
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

/* value (4 or 8 bytes) into block rank's copy of *place (the same shared variable in that block), completing
 * its sizeof(C) bytes on block rank's copy of *barrier. The receiving block reads it after barrier_wait_cluster
 * on its barrier; the store needs that block to have started (a cluster_wait after every block's first
 * arrival) and not yet exited. */
template <typename C>
__device__ __forceinline__ void store_async_remote(C *place, unsigned int rank, C value, uint64_t *barrier)
{
    static_assert(sizeof(C) == 4 || sizeof(C) == 8, "st.async stores f32 or f64 here");
    uint32_t remote_place, remote_barrier;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote_place) : "r"(shared_address(place)), "r"(rank));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
                 : "=r"(remote_barrier)
                 : "r"(shared_address(barrier)), "r"(rank));
    if constexpr (sizeof(C) == 4)
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n" ::"r"(remote_place),
                     "f"(value), "r"(remote_barrier)
                     : "memory");
    else
        asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f64 [%0], %1, [%2];\n" ::"r"(remote_place),
                     "d"(value), "r"(remote_barrier)
                     : "memory");
}

#endif
