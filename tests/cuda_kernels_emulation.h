/* cuda_kernels_emulation.h: just enough of CUDA, host-side, to run
 * cuda/elementwise.cu, cuda/softmax.cu and the anneal steps' files
 * (their kernels and their run functions) on a machine without a GPU; see
 * tests/cuda_kernels_emulation.sh, which rewrites those sources to include
 * this instead of common.cuh.
 *
 * Every thread of a block is a fiber (tests/cuda_threads_emulation.h; one
 * team per launch runs its blocks one after another); __syncthreads is a
 * block barrier; a warp
 * shuffle writes to an exchange buffer between two barriers of its warp (so
 * a lane that skips a shuffle its warp makes stops the run, deadlocked,
 * instead of passing); __shared__ becomes static (one block at a time); dynamic shared
 * memory and scratch start as garbage; cp.async is a memcpy; CUB's radix
 * sort is a stable sort on the same key bits; the runtime calls the run
 * functions make succeed, with the occupancy the test sets. A launch with a
 * cluster dimension (cudaLaunchKernelEx) runs each cluster's blocks side by
 * side, one team of fibers, one block running ahead of the others in each
 * phase of the cluster barrier (tests/cuda_threads_emulation.h), each block
 * with its own barriers and dynamic
 * shared memory (a cluster kernel may have no __shared__ variable: there is
 * one copy of each); cooperative_groups' cluster barrier is a barrier of the
 * whole team that a thread arrives at and later waits on, and
 * map_shared_rank points into another block's dynamic shared memory, only
 * once every block has arrived at the barrier once (all have started) and
 * never into a block whose threads have all returned (its memory is
 * poisoned as they do). It checks index
 * arithmetic, bounds (with AddressSanitizer), alignment of vector accesses
 * (UBSan, the vector types being aligned as on the device), barrier and
 * shuffle discipline and the arithmetic's semantics, not the GPU's memory
 * model, its exp or its speed. */
#ifndef KCS_CUDA_KERNELS_EMULATION_H
#define KCS_CUDA_KERNELS_EMULATION_H
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

extern "C" {
#include "backend.h"
#include "kcs_ref_half.h"
}
#include "cuda_threads_emulation.h"

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3() = default;
    dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline double2 make_double2(double a, double b) { return {a, b}; }

namespace cuda {
namespace std {
using ::std::numeric_limits;
}
} // namespace cuda

inline dim3 threadIdx, blockIdx; /* set as each fiber resumes (emu_launcher) */
inline dim3 gridDim, blockDim;
/* The running fiber's block: its rank in the team (its cluster; 0 without clusters), barrier and dynamic shared
 * memory, set as each fiber resumes. */
inline unsigned emu_block_in_team;
inline emu_barrier *emu_block_barrier;
inline std::vector<std::unique_ptr<emu_barrier>> emu_warp_barriers; /* the team's warps, block after block */
inline unsigned char *emu_dynamic_shared;
inline std::mutex emu_atomic_mutex;
struct alignas(8) emu_word { unsigned char bytes[8]; };
constexpr unsigned emu_most_team_threads = 16 * 1024; /* a cluster of 16 blocks of 1024 */
inline emu_word emu_exchange[emu_most_team_threads];

/* The running thread's index in its team: warps of different blocks of a cluster never share a shuffle. */
static inline unsigned emu_team_thread() { return emu_block_in_team * blockDim.x + threadIdx.x; }

static inline void __syncthreads() { emu_block_barrier->arrive_and_wait(); }
static inline int __syncthreads_or(int predicate)
{
    static std::atomic<int> flag{0};
    __syncthreads();
    if (predicate)
        flag = 1;
    __syncthreads();
    const int result = flag.load();
    __syncthreads();
    if (threadIdx.x == 0)
        flag = 0;
    __syncthreads();
    return result;
}
static inline void __threadfence() {}

template <typename T> static inline T emu_shuffle_from(T value, int source)
{
    static_assert(sizeof(T) <= 8, "emulated shuffles move at most 8 bytes");
    const int warp = emu_team_thread() / 32;
    std::memcpy(emu_exchange[emu_team_thread()].bytes, &value, sizeof(T));
    emu_warp_barriers[warp]->arrive_and_wait();
    T result;
    std::memcpy(&result, emu_exchange[warp * 32 + source].bytes, sizeof(T));
    emu_warp_barriers[warp]->arrive_and_wait();
    return result;
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32)
{
    if (mask != 0xffffffffu) {
        std::fprintf(stderr, "emulation: partial shuffle masks are not emulated\n");
        std::abort();
    }
    const int lane = threadIdx.x % 32;
    int source = lane ^ lane_mask;
    if ((source / width) != (lane / width))
        source = lane; /* CUDA: a source outside the segment gives the caller's own value */
    return emu_shuffle_from(value, source);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32)
{
    (void)mask;
    const int lane = threadIdx.x % 32;
    int source = lane + (int)delta;
    if (source / width != lane / width)
        source = lane;
    return emu_shuffle_from(value, source);
}

template <typename T> static inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32)
{
    (void)mask;
    const int lane = threadIdx.x % 32;
    int source = lane - (int)delta;
    if (source < 0 || source / width != lane / width)
        source = lane; /* CUDA: a source outside the segment gives the caller's own value */
    return emu_shuffle_from(value, source);
}

static inline void __syncwarp() { emu_warp_barriers[emu_team_thread() / 32]->arrive_and_wait(); }
/* The lanes of the warp whose predicate is true. */
static inline unsigned __ballot_sync(unsigned mask, int predicate)
{
    if (mask != 0xffffffffu) {
        std::fprintf(stderr, "emulation: partial ballot masks are not emulated\n");
        std::abort();
    }
    const int warp = emu_team_thread() / 32;
    const unsigned value = predicate != 0;
    std::memcpy(emu_exchange[emu_team_thread()].bytes, &value, sizeof value);
    emu_warp_barriers[warp]->arrive_and_wait();
    unsigned lanes = 0;
    for (int lane = 0; lane < 32; lane++) {
        unsigned other;
        std::memcpy(&other, emu_exchange[warp * 32 + lane].bytes, sizeof other);
        lanes |= other << lane;
    }
    emu_warp_barriers[warp]->arrive_and_wait();
    return lanes;
}
static inline int __popc(unsigned value) { return __builtin_popcount(value); }

template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline void __stcs(T *p, T v) { *p = v; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
template <typename T> static inline T __ldcs(const T *p) { return *p; }

static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    std::lock_guard<std::mutex> lock(emu_atomic_mutex);
    unsigned old = *p;
    *p = old + v;
    return old;
}
static inline int atomicAdd(int *p, int v)
{
    std::lock_guard<std::mutex> lock(emu_atomic_mutex);
    int old = *p;
    *p = old + v;
    return old;
}
static inline unsigned atomicMax(unsigned *p, unsigned v)
{
    std::lock_guard<std::mutex> lock(emu_atomic_mutex);
    unsigned old = *p;
    *p = old > v ? old : v;
    return old;
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    std::lock_guard<std::mutex> lock(emu_atomic_mutex);
    unsigned long long old = *p;
    *p = old < v ? old : v;
    return old;
}
static inline unsigned atomicInc(unsigned *p, unsigned limit)
{
    std::lock_guard<std::mutex> lock(emu_atomic_mutex);
    unsigned old = *p;
    *p = old >= limit ? 0 : old + 1;
    return old;
}

static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline float __fdividef(float a, float b) { return a / b; }

#include "cuda_half_emulation.h" /* __half, __nv_bfloat16 and cuda/half.cuh's helpers */

/* The runtime, as far as the run functions use it. */
typedef int cudaError_t;
enum { cudaSuccess = 0 };
typedef void *cudaStream_t;
enum cudaDeviceAttr { cudaDevAttrMaxSharedMemoryPerBlockOptin = 97 };
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
    cudaFuncAttributeNonPortableClusterSizeAllowed = 11
};
enum cudaSharedCarveout { cudaSharedmemCarveoutMaxShared = 100 };
inline int emu_blocks_per_sm = 2;
inline int emu_shared_optin = 232448;
inline int emu_active_clusters = 1;  /* what cudaOccupancyMaxActiveClusters answers */
inline int emu_ptx_version = 90;     /* the virtual architecture cudaFuncGetAttributes reports */
static inline const char *cudaGetErrorName(cudaError_t) { return "cudaErrorEmulated"; }
static inline const char *cudaGetErrorString(cudaError_t) { return "emulated failure"; }
static inline cudaError_t cudaGetLastError() { return cudaSuccess; }
template <typename K> static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, K, int, size_t)
{
    *n = emu_blocks_per_sm;
    return cudaSuccess;
}
template <typename K> static inline cudaError_t cudaFuncSetAttribute(K, cudaFuncAttribute, int) { return cudaSuccess; }
static inline cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr, int)
{
    *value = emu_shared_optin;
    return cudaSuccess;
}
struct cudaFuncAttributes {
    int ptxVersion, binaryVersion;
};
template <typename K> static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attributes, K)
{
    attributes->ptxVersion = emu_ptx_version;
    attributes->binaryVersion = emu_ptx_version;
    return cudaSuccess;
}
/* cudaLaunchKernelEx's configuration, as far as a cluster launch uses it: its cluster dimension, and a cluster
 * scheduling policy, which places blocks on SMs and so changes nothing here (recorded for the tests:
 * emu_last_cluster_policy). */
enum cudaLaunchAttributeID {
    cudaLaunchAttributeClusterDimension = 4,
    cudaLaunchAttributeClusterSchedulingPolicyPreference = 5
};
enum cudaClusterSchedulingPolicy {
    cudaClusterSchedulingPolicyDefault = 0,
    cudaClusterSchedulingPolicySpread = 1,
    cudaClusterSchedulingPolicyLoadBalancing = 2
};
struct cudaLaunchAttributeValue {
    struct {
        unsigned x, y, z;
    } clusterDim;
    cudaClusterSchedulingPolicy clusterSchedulingPolicyPreference;
};
struct cudaLaunchAttribute {
    cudaLaunchAttributeID id;
    cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
    dim3 gridDim, blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned numAttrs;
};
template <typename K> static inline cudaError_t cudaOccupancyMaxActiveClusters(int *n, K, const cudaLaunchConfig_t *)
{
    *n = emu_active_clusters;
    return cudaSuccess;
}
static inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t)
{
    std::memset(p, value, bytes);
    return cudaSuccess;
}

/* A cluster barrier (barrier.cluster.arrive and .wait): every thread of the team arrives once in each phase and
 * may wait, later, for the phase it arrived in to complete. */
class emu_cluster_barrier {
public:
    explicit emu_cluster_barrier(unsigned expected) : expected_(expected), arrived_in_(expected, none) {}
    unsigned long completed() const { return phase_; }
    void arrive(unsigned thread)
    {
        if (arrived_in_[thread] != none) {
            std::fprintf(stderr, "emulation: a thread arrives at the cluster barrier twice without waiting\n");
            std::abort();
        }
        arrived_in_[thread] = phase_;
        if (++arrived_ == expected_) {
            phase_++;
            arrived_ = 0;
            emu_threads::lead(); /* another block runs ahead in the next phase */
            emu_threads::make_ready(waiting_);
            waiting_.clear();
        }
    }
    void wait(unsigned thread)
    {
        if (arrived_in_[thread] == none) {
            std::fprintf(stderr, "emulation: a thread waits at the cluster barrier without arriving\n");
            std::abort();
        }
        if (arrived_in_[thread] == phase_) { /* its phase is not complete: wait for the last to arrive */
            waiting_.push_back(emu_threads::running);
            emu_threads::yield();
        }
        arrived_in_[thread] = none;
    }
    /* Every thread that arrived has waited: a thread that returns with its arrival pending breaks the next phase. */
    bool settled() const { return std::all_of(arrived_in_.begin(), arrived_in_.end(), [](unsigned long a) { return a == none; }); }

private:
    static constexpr unsigned long none = ~0ul;
    unsigned expected_, arrived_ = 0;
    unsigned long phase_ = 0;
    std::vector<unsigned long> arrived_in_; /* per team thread: the phase it arrived in, or none */
    std::vector<unsigned> waiting_;
};

/* The running launch's team: the blocks of one cluster (one block without clusters), run side by side. */
struct emu_team_state {
    unsigned block_threads, cluster;
    dim3 first_block;        /* blockIdx of the running cluster's rank 0 */
    size_t shared_bytes;     /* dynamic shared memory a block */
    std::vector<std::unique_ptr<emu_barrier>> block_barriers;
    std::vector<unsigned char *> shared;  /* each block's dynamic shared memory */
    std::vector<unsigned> returned;       /* threads of each block that returned from the kernel */
    std::unique_ptr<emu_cluster_barrier> cluster_barrier;
};
inline emu_team_state *emu_team;

/* Garbage, as on a GPU: a block's dynamic shared memory before it starts, and after it has exited. */
static inline void emu_poison_shared(unsigned char *shared, size_t bytes, unsigned char seed)
{
    for (size_t i = 0; i < bytes; i++)
        shared[i] = (unsigned char)(seed ^ i);
}

/* A launch: clusters (or blocks) one after another (x fastest, then y), each
 * run by one team of fibers, one per thread of its blocks, made once per
 * launch. The team waits at a barrier of its own between clusters, so a
 * thread that returns while others of its block wait in __syncthreads still
 * deadlocks the run, as it would with a team per block. */
inline long emu_launches = 0;
inline dim3 emu_last_grid, emu_last_block; /* the newest launch's sizes, for tests of how a launcher sizes it */
inline unsigned emu_last_cluster;          /* and its blocks a cluster */
inline int emu_last_cluster_policy;        /* and the cluster scheduling policy it asked for (-1: none) */
template <typename... P> struct emu_launcher {
    void (*kernel)(P...);
    dim3 grid, block;
    size_t shared_bytes;
    unsigned cluster = 1;
    int cluster_policy = -1; /* cudaClusterSchedulingPolicy asked for, -1: none */
    template <typename... A> void operator()(A &&...args) const
    {
        emu_launches++;
        if (block.x == 0 || block.x > 1024 || block.x % 32 != 0 || grid.x == 0 || grid.y == 0 || grid.z != 1 ||
            cluster == 0 || cluster > 16 || grid.x % cluster != 0) {
            std::fprintf(stderr, "emulation: bad launch %u x %u, clusters of %u\n", grid.x, block.x, cluster);
            std::abort();
        }
        if (shared_bytes > (size_t)emu_shared_optin) {
            std::fprintf(stderr, "emulation: %zu bytes of dynamic shared memory\n", shared_bytes);
            std::abort();
        }
        std::tuple<P...> converted((P)args...);
        emu_last_grid = grid;
        emu_last_block = block;
        emu_last_cluster = cluster;
        emu_last_cluster_policy = cluster_policy;
        gridDim = grid;
        blockDim = block;
        const unsigned team_threads = cluster * block.x;
        const size_t stride = (shared_bytes + 15) / 16 * 16;
        std::vector<unsigned char> shared(stride * cluster + 16);
        unsigned char *base = (unsigned char *)(((uintptr_t)shared.data() + 15) / 16 * 16);
        emu_team_state team;
        team.block_threads = block.x;
        team.cluster = cluster;
        team.shared_bytes = shared_bytes;
        for (unsigned r = 0; r < cluster; r++) {
            team.block_barriers.emplace_back(new emu_barrier(block.x));
            team.shared.push_back(base + r * stride);
        }
        team.returned.assign(cluster, 0);
        team.cluster_barrier.reset(new emu_cluster_barrier(team_threads));
        emu_team = &team;
        emu_barrier between_clusters(team_threads);
        emu_warp_barriers.clear();
        for (unsigned w = 0; w < team_threads / 32; w++)
            emu_warp_barriers.emplace_back(new emu_barrier(32));
        auto thread = [&](unsigned t) {
            for (unsigned by = 0; by < grid.y; by++)
                for (unsigned b = 0; b < grid.x; b += cluster) {
                    if (t == 0) {
                        team.first_block = dim3(b, by);
                        std::fill(team.returned.begin(), team.returned.end(), 0u);
                        for (unsigned r = 0; r < cluster; r++) /* once the previous cluster is done with it */
                            emu_poison_shared(team.shared[r], shared_bytes, 0xa5);
                    }
                    between_clusters.arrive_and_wait(); /* resumed: blockIdx is this cluster's */
                    std::apply(kernel, converted);
                    const unsigned rank = t / block.x;
                    if (++team.returned[rank] == block.x) /* its block has exited: nothing may read it now */
                        emu_poison_shared(team.shared[rank], shared_bytes, 0x5a);
                    between_clusters.arrive_and_wait();
                    if (t == 0 && !team.cluster_barrier->settled()) {
                        std::fprintf(stderr, "emulation: a thread returned with its cluster barrier arrival "
                                             "not waited on\n");
                        std::abort();
                    }
                }
        };
        emu_team_run(
            team_threads, [](unsigned t, void *argument) { (*static_cast<decltype(thread) *>(argument))(t); },
            &thread, [](unsigned t) {
                const unsigned rank = t / emu_team->block_threads;
                emu_block_in_team = rank;
                threadIdx = dim3(t % emu_team->block_threads);
                blockIdx = dim3(emu_team->first_block.x + rank, emu_team->first_block.y);
                emu_block_barrier = emu_team->block_barriers[rank].get();
                emu_dynamic_shared = emu_team->shared[rank];
            },
            block.x);
        emu_team = nullptr;
    }
};
template <typename... P>
static inline emu_launcher<P...> emu_launch(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes = 0,
                                           cudaStream_t = nullptr)
{
    return emu_launcher<P...>{kernel, grid, block, shared_bytes};
}
/* cudaLaunchKernelEx: a launch in clusters of the configuration's cluster dimension (1 without one). */
template <typename... P, typename... A>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(P...), A &&...args)
{
    unsigned cluster = 1;
    int policy = -1;
    for (unsigned i = 0; i < config->numAttrs; i++)
        if (config->attrs[i].id == cudaLaunchAttributeClusterSchedulingPolicyPreference)
            policy = (int)config->attrs[i].val.clusterSchedulingPolicyPreference;
        else if (config->attrs[i].id == cudaLaunchAttributeClusterDimension) {
            const auto &dim = config->attrs[i].val.clusterDim;
            if (dim.y != 1 || dim.z != 1) {
                std::fprintf(stderr, "emulation: clusters of %u x %u x %u: only x is emulated\n", dim.x, dim.y, dim.z);
                std::abort();
            }
            cluster = dim.x;
        } else {
            std::fprintf(stderr, "emulation: launch attribute %d is not emulated\n", (int)config->attrs[i].id);
            std::abort();
        }
    emu_launcher<P...>{kernel, config->gridDim, config->blockDim, config->dynamicSmemBytes, cluster, policy}(
        std::forward<A>(args)...);
    return cudaSuccess;
}

/* cooperative_groups' cluster, as the cluster kernels use it. */
namespace cooperative_groups {
struct cluster_group {
    struct arrival_token {};
    static unsigned num_blocks() { return emu_team->cluster; }
    static unsigned block_rank() { return emu_block_in_team; }
    static arrival_token barrier_arrive()
    {
        emu_team->cluster_barrier->arrive(emu_team_thread());
        return {};
    }
    static void barrier_wait() { emu_team->cluster_barrier->wait(emu_team_thread()); }
    static void barrier_wait(arrival_token &&) { barrier_wait(); }
    static void sync()
    {
        barrier_arrive();
        barrier_wait();
    }
    /* The same place in block rank's dynamic shared memory as address in this block's. */
    template <typename T> static T *map_shared_rank(T *address, int rank)
    {
        const unsigned char *at = reinterpret_cast<const unsigned char *>(address);
        if (rank < 0 || (unsigned)rank >= emu_team->cluster || at < emu_dynamic_shared ||
            at + sizeof(T) > emu_dynamic_shared + emu_team->shared_bytes) {
            std::fprintf(stderr, "emulation: map_shared_rank of a place outside this block's dynamic shared memory "
                                 "or to rank %d of %u\n", rank, emu_team->cluster);
            std::abort();
        }
        if (emu_team->cluster_barrier->completed() == 0) {
            std::fprintf(stderr, "emulation: distributed shared memory used before the cluster barrier showed "
                                 "every block running\n");
            std::abort();
        }
        if (emu_team->returned[rank] == emu_team->block_threads) {
            std::fprintf(stderr, "emulation: distributed shared memory of block %d used after it exited\n", rank);
            std::abort();
        }
        return reinterpret_cast<T *>(emu_team->shared[rank] + (at - emu_dynamic_shared));
    }
};
static inline cluster_group this_cluster() { return {}; }
} // namespace cooperative_groups

/* cuda/async_copy.cuh, for the emulation (the .sh leaves that file out): the functions cuda/softmax.cu uses.
 *
 * cp.async: a copy lands at once, so committing and waiting do nothing.
 *
 * The cluster's barrier is cooperative_groups' above. An mbarrier is two counts in its own 8 bytes of the block's
 * shared memory: arrivals still to come in its first phase, and bytes. barrier_init sets the arrivals; an
 * arrival takes one off and adds the bytes it announces; a store by store_async_remote takes its bytes off the
 * receiving block's count, and may not take more than are left (the GPU lets a store's bytes arrive before they
 * are announced, but kcs's one use announces them before the cluster's barrier, and stores after it).
 * barrier_wait_cluster is emulated for that use only: the first phase (parity 0), where every block stores before
 * it waits. It is one more phase of the cluster's barrier, after which every store a thread made before it has
 * landed; counts other than zero then stop the run (on the GPU, bytes announced that no store makes up, an
 * arrival that never comes, or a store made after its block waited would leave a block waiting for ever). */
template <int bytes> inline void copy_async(void *shared, const void *global)
{
    std::memcpy(shared, global, bytes);
}
inline void copy_async_commit() {}
inline void copy_async_wait_all() {}

struct emu_mbarrier {
    uint32_t arrivals_left, bytes_left;
};
static_assert(sizeof(emu_mbarrier) == sizeof(uint64_t), "an mbarrier is 8 bytes");

inline emu_mbarrier emu_mbarrier_of(const uint64_t *barrier)
{
    emu_mbarrier state;
    std::memcpy(&state, barrier, sizeof state);
    return state;
}

inline void emu_mbarrier_set(uint64_t *barrier, emu_mbarrier state)
{
    std::memcpy(barrier, &state, sizeof state);
}

inline void barrier_init(uint64_t *barrier, int count)
{
    if (count < 1) {
        std::fprintf(stderr, "emulation: an mbarrier initialised for %d arrivals\n", count);
        std::abort();
    }
    emu_mbarrier_set(barrier, {(uint32_t)count, 0});
}

inline void barrier_init_fence() {}

inline void barrier_expect_bytes(uint64_t *barrier, int bytes)
{
    emu_mbarrier state = emu_mbarrier_of(barrier);
    if (state.arrivals_left == 0 || bytes < 0) {
        std::fprintf(stderr, "emulation: block %u arrives at an mbarrier that expects no more arrivals, or "
                             "announces %d bytes\n", emu_block_in_team, bytes);
        std::abort();
    }
    state.arrivals_left -= 1;
    state.bytes_left += (uint32_t)bytes;
    emu_mbarrier_set(barrier, state);
}

inline void cluster_arrive_relaxed()
{
    cooperative_groups::cluster_group::barrier_arrive();
}

inline void cluster_wait()
{
    cooperative_groups::cluster_group::barrier_wait();
}

template <typename C> inline void store_async_remote(C *place, unsigned int rank, C value, uint64_t *barrier)
{
    static_assert(sizeof(C) == 4 || sizeof(C) == 8, "st.async stores f32 or f64 here");
    uint64_t *const remote = cooperative_groups::cluster_group::map_shared_rank(barrier, (int)rank);
    emu_mbarrier state = emu_mbarrier_of(remote);
    if (state.bytes_left < sizeof(C)) {
        std::fprintf(stderr, "emulation: %zu bytes stored into block %u, whose mbarrier expects %u more\n", sizeof(C),
                     rank, state.bytes_left);
        std::abort();
    }
    *cooperative_groups::cluster_group::map_shared_rank(place, (int)rank) = value;
    state.bytes_left -= (uint32_t)sizeof(C);
    emu_mbarrier_set(remote, state);
}

inline void barrier_wait_cluster(uint64_t *barrier, int parity)
{
    if (parity != 0) {
        std::fprintf(stderr, "emulation: barrier_wait_cluster is emulated for the first phase only (parity 0)\n");
        std::abort();
    }
    cooperative_groups::cluster_group::sync();
    const emu_mbarrier state = emu_mbarrier_of(barrier);
    if (state.arrivals_left != 0 || state.bytes_left != 0) {
        std::fprintf(stderr, "emulation: block %u waits on an mbarrier for %u arrivals and %u bytes that no "
                             "thread makes\n", emu_block_in_team, state.arrivals_left, state.bytes_left);
        std::abort();
    }
}

/* common.cuh, for the emulation */
struct kcs_cuda_scratch {
    void *data;
    size_t bytes;
};
struct kcs_device {
    int ordinal;
    int sm_count;
    int compute_capability;
    cudaStream_t stream;
    unsigned int *blocks_done;
    kcs_cuda_scratch partials;
    kcs_cuda_scratch cub_storage;
};
struct kcs_buffer {
    size_t bytes;
    void *data;
};
#define KCS_CUDA_CHECK(expression)                                                                  \
    do {                                                                                            \
        cudaError_t kcs_cuda_result_ = (expression);                                                \
        if (kcs_cuda_result_ != cudaSuccess)                                                        \
            return kcs_fail(err, KCS_ERROR, "%s failed", #expression);                              \
    } while (0)
#define KCS_CUDA_CHECK_LAUNCH(kernel_name) do { } while (0)
/* The buffers' check against the op's layout is the harness's (kcs_check_buffers, tested with the
 * op descriptors in ops/): the emulation calls run functions with buffers of exactly the arrays' size. */
static inline kcs_status kcs_cuda_begin(kcs_device *, const kcs_op_args *, kcs_buffer *const[], kcs_buffer *const[],
                                        kcs_error *)
{
    return KCS_OK;
}
static inline kcs_status kcs_cuda_drain(kcs_device *, kcs_status status) { return status; }
static inline kcs_status kcs_cuda_reserve(kcs_cuda_scratch *scratch, size_t bytes, kcs_error *)
{
    if (bytes <= scratch->bytes && scratch->data)
        return KCS_OK;
    std::free(scratch->data);
    scratch->data = std::malloc(bytes ? bytes : 1);
    scratch->bytes = bytes;
    std::memset(scratch->data, 0x5a, bytes); /* garbage */
    return KCS_OK;
}
static inline kcs_status kcs_cuda_timer_start(kcs_device *, const double *, kcs_error *) { return KCS_OK; }
static inline kcs_status kcs_cuda_timer_stop(kcs_device *, double *seconds, kcs_error *)
{
    *seconds = 0.0;
    return KCS_OK;
}
#include "../cuda/timed.cuh" /* the one path of every run, as on the device */

/* CUB's radix sort, as a stable sort on the key bits [begin, end). */
namespace cub {
struct DeviceRadixSort {
    template <typename K, typename V>
    static cudaError_t SortPairs(void *storage, size_t &bytes, const K *keys_in, K *keys_out, const V *values_in,
                                 V *values_out, int n, int begin_bit, int end_bit, cudaStream_t = nullptr)
    {
        if (!storage) {
            bytes = 64;
            return cudaSuccess;
        }
        std::vector<std::pair<K, V>> pairs(n);
        const unsigned long long mask = ((end_bit >= 64 ? 0ull : (1ull << end_bit)) - 1) & ~((1ull << begin_bit) - 1);
        for (int i = 0; i < n; i++)
            pairs[i] = {keys_in[i], values_in[i]};
        std::stable_sort(pairs.begin(), pairs.end(), [&](const auto &a, const auto &b) {
            return ((unsigned long long)a.first & mask) < ((unsigned long long)b.first & mask);
        });
        for (int i = 0; i < n; i++) {
            keys_out[i] = pairs[i].first;
            values_out[i] = pairs[i].second;
        }
        return cudaSuccess;
    }
};
/* CUB's exclusive prefix sum. */
struct DeviceScan {
    template <typename T>
    static cudaError_t ExclusiveSum(void *storage, size_t &bytes, const T *in, T *out, int n, cudaStream_t = nullptr)
    {
        if (!storage) {
            bytes = 64;
            return cudaSuccess;
        }
        T running = T(0);
        for (int i = 0; i < n; i++) {
            const T value = in[i];
            out[i] = running;
            running += value;
        }
        return cudaSuccess;
    }
};
} // namespace cub

#endif
