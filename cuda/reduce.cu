/* reduce.cu: anneal's reduce step on CUDA (docs/anneal.md). Points x (n x d)
 * are stored f16 or f32 (the case dtype) and widened exactly to f32
 * (cuda/anneal.cuh); idx and count are i32, mean and var (m x d) f32.
 *
 * reduce: count, mean and population variance per anchor, without float
 * atomics and in a fixed order (the same bits every run):
 *   1. the point numbers are sorted stably by key (the anchor; a value
 *      outside [0, m) becomes m and counts nowhere), so that each anchor's
 *      points come in index order. Where the m + 1 keys' per-warp counters
 *      fit in shared memory (m < 1536), by one launch of a tile counting
 *      sort: each block sorts its own tile of sort_tile points into its
 *      own stretch of the output, with no table or scan across tiles (an
 *      anchor's points are then its runs in the tiles, in tile order).
 *      In a block each warp counts the keys of its share of the tile
 *      (shared-memory integer atomics: order-free), the threads turn the
 *      counts into places (per key the warps in order, then a block-wide
 *      exclusive sum over the keys, whose result is also the tile's table
 *      of run starts), and each warp walks its share in order, the lanes of
 *      one key (found by ballots) taking consecutive places. Otherwise by
 *      cub::DeviceRadixSort::SortPairs on the bits of [0, m], the whole
 *      output one tile whose run starts a binary search per key finds.
 *      The tile is sorted in shared memory and written out in 16-byte
 *      stores. It replaces three launches (per-tile counts stored
 *      key-major, a cub::DeviceScan over every (key, tile) pair, then a
 *      scatter straight to global memory), 0.051 ms against 0.021 ms on an
 *      H100 for the perf case (docs/anneal.md);
 *   2. a block per anchor: it gathers its runs (a thread a tile, a
 *      block-wide sum of their lengths giving each run's first position
 *      in the anchor's list, 256 tiles at a time; a point of the list is
 *      found by a binary search over those positions in shared memory),
 *      and its 8 warps read the rows (a warp a row,
 *      16 bytes a lane, 8 rows in flight; 80 registers, so 3 blocks an SM:
 *      with 2, at 124 registers, the pass took 0.152 ms rather than 0.142)
 *      updating Welford's mean and sum of
 *      squared deviations in f64, lane by dimension (1 / count from a
 *      block's table of reciprocals), the 8 warps' states are
 *      merged by Chan, Golub and LeVeque's pairwise formula, in warp order.
 *      f64 makes the updating formulas' error (about c u sigma rms, u the
 *      unit roundoff) negligible next to the f32 bound, whatever the count;
 *      the mean and var are rounded once to f32. Dimensions beyond 128 are
 *      done in panels of 128. An empty anchor gets count 0, mean 0, var 0.
 *
 * Precision and summation depth: the statistics are carried in f64 (see
 * above). The Welford chains (a warp's share of an anchor's points) may be
 * longer than D(c), but in f64 their error, of order c u64 (below 2.4e-7
 * for any c < 2^31), stays far inside the f32 bound gamma(D(c) + 2) the
 * depth rule exists to protect.
 *
 * Performance (n = 1e6, d = 128, m = 1024): reduce reads the points once,
 * after the sort: on an H100 the statistics pass takes 0.186 ms, gathering
 * rows with streaming 256-byte L2 fetches (0.1915 ms with plain loads), the
 * sort 0.018 ms, 0.86 of the copy rate in all (docs/anneal.md).
 *
 * Tunables (-D on the nvcc line): KCS_REDUCE_MIN_BLOCKS (resident blocks an
 * SM the statistics kernel is compiled for), KCS_REDUCE_UNROLL (rows a
 * warp has in flight), KCS_REDUCE_SORT_TILE (points a block of the sort
 * takes, a multiple of 32 times its warps; tests/cuda_kernels_emulation.sh
 * with a small one reaches the statistics kernel's groups of 256 tiles) and
 * KCS_REDUCE_SORT_THREADS (a sort block's threads).
 *
 * Run only it: ./build/kcs run --backend cuda 'anneal/reduce-*' (add
 * --benchmark to time the perf cases).
 */
#include <climits>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_fp16.h>

#include "common.cuh"
#include "anneal.cuh"
#include "load_streaming.cuh" /* loads of input read once */

namespace {

/* load_four for rows read once (the reduce's statistics pass): the vector
 * loads streaming (cuda/load_streaming.cuh), which fetch the 256 bytes
 * around them into L2 and allocate nothing in L1. */
__device__ __forceinline__ float4 load_four_once(const float *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return load_streaming(reinterpret_cast<const float4 *>(row + k));
    return load_four(row, k, d, false);
}

__device__ __forceinline__ float4 load_four_once(const __half *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return widen_four(load_streaming(reinterpret_cast<const uint2 *>(row + k)));
    return load_four(row, k, d, false);
}

#ifndef KCS_REDUCE_MIN_BLOCKS
#define KCS_REDUCE_MIN_BLOCKS 3
#endif
#ifndef KCS_REDUCE_UNROLL
#define KCS_REDUCE_UNROLL 8
#endif
constexpr int reduce_panel = 128;    /* dimensions a pass over an anchor's points covers (4 a lane) */
constexpr int reduce_unroll = KCS_REDUCE_UNROLL; /* rows a warp has in flight */
constexpr int reduce_inverse_table = 1024; /* counts whose reciprocal a statistics block keeps (8 KB) */

/* The sort key of a point: its anchor, or m for a value outside [0, m). */
__device__ __forceinline__ unsigned int reduce_key(const int *idx, size_t i, int m)
{
    const int j = idx[i];
    return j >= 0 && j < m ? (unsigned int)j : (unsigned int)m;
}

/* Sort keys (reduce_key) and values (point numbers) for the radix sort. */
__global__ void __launch_bounds__(256)
kcs_reduce_keys(const int *__restrict__ idx, size_t n, int m, unsigned int *__restrict__ keys,
                unsigned int *__restrict__ points)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        keys[i] = reduce_key(idx, i, m);
        points[i] = (unsigned int)i;
    }
}

/* After the radix sort: where each key's run begins in the sorted keys,
 * starts[j] = the number of keys below j (a binary search), for j in
 * [0, m]; the run of key j < m ends where key j + 1's begins, so an absent
 * key has an empty run. This is the one-tile form of the counting sort's
 * table. */
__global__ void __launch_bounds__(256)
kcs_reduce_run_starts(const unsigned int *__restrict__ sorted_keys, size_t n, int m,
                      unsigned int *__restrict__ starts)
{
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > m)
        return;
    size_t low = 0, high = n; /* keys before low are below j, from high on they are not */
    while (low < high) {
        const size_t middle = low + (high - low) / 2;
        if (sorted_keys[middle] < (unsigned int)j)
            low = middle + 1;
        else
            high = middle;
    }
    starts[j] = (unsigned int)low;
}

/* The sum of value over the block's threads before this one (blockDim.x ==
 * THREADS); total gets the sum over all of them. warp_sums: shared, one
 * word a warp. Ends with a barrier, so warp_sums may be reused. */
constexpr int reduce_threads = 256; /* 8 warps, the statistics' blocks */
template <int THREADS>
__device__ __forceinline__ unsigned int block_exclusive_sum(unsigned int value, unsigned int *warp_sums,
                                                            unsigned int *total)
{
    constexpr int warps = THREADS / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    unsigned int inclusive = value;
#pragma unroll
    for (int step = 1; step < 32; step *= 2) {
        const unsigned int below = __shfl_up_sync(0xffffffffu, inclusive, step);
        if (lane >= step)
            inclusive += below;
    }
    if (lane == 31)
        warp_sums[warp] = inclusive;
    __syncthreads();
    unsigned int before = 0, all = 0;
#pragma unroll
    for (int w = 0; w < warps; w++) {
        before += w < warp ? warp_sums[w] : 0u;
        all += warp_sums[w];
    }
    *total = all;
    __syncthreads();
    return before + inclusive - value;
}

/* The counting sort, for at most sort_most_keys keys (m + 1): points are cut
 * into tiles of sort_tile, in order, and each tile is sorted by one block on
 * its own, into its own place in sorted_points; no table spans the tiles.
 * The statistics kernel finds an anchor's points as the concatenation of
 * its runs in the tiles, in tile order: index order. */
#ifndef KCS_REDUCE_SORT_TILE
#define KCS_REDUCE_SORT_TILE 4096
#endif
#ifndef KCS_REDUCE_SORT_THREADS
#define KCS_REDUCE_SORT_THREADS 512
#endif
constexpr int sort_tile = KCS_REDUCE_SORT_TILE; /* points a tile */
/* Threads of a sort block, a tile's: 16 warps, each walking a sixteenth of
 * the tile (8 steps of 32 points), and two blocks an SM (82 KB of shared
 * memory each at m = 1024). */
constexpr int sort_threads = KCS_REDUCE_SORT_THREADS;
constexpr int sort_warps = sort_threads / 32;
constexpr int sort_most_keys = 1536; /* keys [0, m] the per-warp counters hold (96 KB, and 16 KB the tile) */
static_assert(sort_tile % (32 * sort_warps) == 0, "a warp's share of a tile is whole steps of 32");
constexpr int sort_keys_a_thread = (sort_most_keys + sort_threads - 1) / sort_threads;
constexpr unsigned int no_key = 0xffffffffu; /* a point past n */

/* The lanes of the warp whose key equals this lane's, keys being at most
 * sort_most_keys (and no_key, whose low bits are above every key): one
 * ballot a bit of the key, each lane keeping the lanes that agree with it
 * on that bit. __match_any_sync gives the same mask but is microcoded on
 * Hopper: waiting for it was 59% of the sort's stall samples on an H100
 * (ncu, the perf case), where 11 ballots are a few cycles each. */
constexpr int sort_key_bits = 11;
static_assert(sort_most_keys < (1 << sort_key_bits) && (no_key & ((1u << sort_key_bits) - 1)) >= (unsigned)sort_most_keys,
              "every key, and no_key, differs from the others in the low sort_key_bits bits");
__device__ __forceinline__ unsigned int lanes_with_key(unsigned int key)
{
    unsigned int peers = 0xffffffffu;
#pragma unroll
    for (int bit = 0; bit < sort_key_bits; bit++) {
        const bool set = (key >> bit) & 1u;
        const unsigned int lanes_set = __ballot_sync(0xffffffffu, set);
        peers &= set ? lanes_set : ~lanes_set;
    }
    return peers;
}

/* One tile, one block, stably: warp w counts the keys of its share
 * (shared-memory integer atomics: they only count, in any order); the
 * threads then turn the counts into places (thread t owns a run of keys:
 * for each, the warps' shares in warp order; then an exclusive sum over the
 * keys gives each key's run in the tile, written to
 * tile_starts[tile * (m + 1) + key]). Each warp then walks its share in
 * order, 32 points a step: the lanes holding the same key
 * (lanes_with_key) take consecutive places in lane order, and the lowest
 * of them advances that key's place. */
__global__ void __launch_bounds__(sort_threads)
kcs_reduce_sort_tiles(const int *__restrict__ idx, size_t n, int m, unsigned int *__restrict__ tile_starts,
                      unsigned int *__restrict__ sorted_points)
{
    constexpr int share = sort_tile / sort_warps;
    constexpr int steps = share / 32;
    /* sort_shared_bytes(m): the warps' places (place[w * keys + key]), then the tile's sorted point numbers */
    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    __shared__ unsigned int warp_sums[sort_warps];
    const int keys = m + 1;
    unsigned int *const place = reinterpret_cast<unsigned int *>(dynamic_shared);
    unsigned int *const tile_sorted = place + (size_t)sort_warps * keys;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const size_t tile_first = (size_t)blockIdx.x * sort_tile;
    for (int j = threadIdx.x; j < keys; j += blockDim.x)
#pragma unroll
        for (int w = 0; w < sort_warps; w++)
            place[w * keys + j] = 0;
    __syncthreads();
    /* the lane's keys of the share, step by step, loaded first (no_key past n) */
    const size_t begin = tile_first + (size_t)warp * share;
    unsigned int key[steps];
#pragma unroll
    for (int step = 0; step < steps; step++) {
        const size_t i = begin + (size_t)step * 32 + lane;
        key[step] = i < n ? reduce_key(idx, i, m) : no_key;
    }
#pragma unroll
    for (int step = 0; step < steps; step++)
        if (key[step] != no_key)
            atomicAdd(&place[warp * keys + key[step]], 1u);
    __syncthreads();
    /* counts of the shares -> places within each key's run of the tile */
    const int first_key = threadIdx.x * sort_keys_a_thread;
    unsigned int key_count[sort_keys_a_thread], owned = 0;
#pragma unroll
    for (int e = 0; e < sort_keys_a_thread; e++) {
        const int j = first_key + e;
        unsigned int next = 0;
        if (j < keys)
#pragma unroll
            for (int w = 0; w < sort_warps; w++) {
                const unsigned int share_count = place[w * keys + j];
                place[w * keys + j] = next;
                next += share_count;
            }
        key_count[e] = next;
        owned += next;
    }
    unsigned int tile_points;
    unsigned int at_key = block_exclusive_sum<sort_threads>(owned, warp_sums, &tile_points);
#pragma unroll
    for (int e = 0; e < sort_keys_a_thread; e++) {
        const int j = first_key + e;
        if (j < keys) {
            tile_starts[(size_t)blockIdx.x * keys + j] = at_key;
#pragma unroll
            for (int w = 0; w < sort_warps; w++)
                place[w * keys + j] += at_key;
        }
        at_key += key_count[e];
    }
    __syncthreads();
    const unsigned int below = (1u << lane) - 1u; /* the lanes before this one */
#pragma unroll
    for (int step = 0; step < steps; step++) {
        /* lanes past n hold no_key, which no present lane has */
        const bool present = key[step] != no_key;
        const unsigned int peers = lanes_with_key(key[step]);
        unsigned int at = 0;
        if (present)
            at = place[warp * keys + key[step]] + (unsigned int)__popc(peers & below);
        __syncwarp();
        if (present) {
            tile_sorted[at] = (unsigned int)(begin + (size_t)step * 32 + lane);
            if ((peers & below) == 0) /* the lowest lane of its key */
                place[warp * keys + key[step]] += (unsigned int)__popc(peers);
        }
        __syncwarp();
    }
    __syncthreads();
    /* the sorted tile out in whole 16-byte stores (scattered 4-byte stores to
     * global memory were most of the sort's time); the output's tiles start
     * at multiples of sort_tile words of a 256-byte aligned array */
    for (unsigned int i = 4 * threadIdx.x; i < tile_points; i += 4 * sort_threads) {
        if (i + 4 <= tile_points)
            *reinterpret_cast<uint4 *>(sorted_points + tile_first + i) =
                *reinterpret_cast<const uint4 *>(tile_sorted + i);
        else
            for (unsigned int e = i; e < tile_points; e++)
                sorted_points[tile_first + e] = tile_sorted[e];
    }
}

/* The sort's dynamic shared memory for m anchors: the warps' places and a tile. */
size_t sort_shared_bytes(size_t m)
{
    return ((size_t)sort_warps * (m + 1) + sort_tile) * sizeof(unsigned int);
}

/* 1 / value for a count (1 <= value < 2^31) to within an ulp or two of f64:
 * an f32 seed and two Newton steps, no division (whose rare slow path is a
 * call that costs registers in the loop). */
__device__ __forceinline__ double reciprocal(double value)
{
    double r = (double)__fdividef(1.0f, (float)value);
    r = r * fma(-value, r, 2.0);
    r = r * fma(-value, r, 2.0);
    return r;
}

/* One Welford update of (mean, m2) by value, inverse = 1 / (points so far). */
__device__ __forceinline__ void welford(double &mean, double &m2, float value, double inverse)
{
    const double delta = (double)value - mean;
    mean = fma(delta, inverse, mean);
    m2 = fma(delta, (double)value - mean, m2);
}

/* Where batch position p of the current group of runs lies in
 * sorted_points: in the last run r whose first position run_first[r] is at
 * most p (empty runs share their successor's first position, so the last
 * of equals is the one that holds p); run_first[reduce_threads] is the
 * group's total, above every p asked for. */
__device__ __forceinline__ unsigned int run_position(const unsigned int *run_first, const unsigned int *run_begin,
                                                     unsigned int p)
{
    int low = 0, high = reduce_threads; /* run_first[low] <= p < run_first[high] */
#pragma unroll
    for (int step = 0; step < 8; step++) {
        const int middle = (low + high) / 2;
        if (run_first[middle] <= p)
            low = middle;
        else
            high = middle;
    }
    static_assert(reduce_threads == 256, "eight halvings find one of 256 runs");
    return run_begin[low] + (p - run_first[low]);
}

/* Anchor j's runs in the tiles group .. group + reduce_threads - 1 (a thread
 * a tile): run_first[r] gets the sum of the lengths of the runs before r,
 * run_first[reduce_threads] the group's total (returned), run_begin[r] where
 * run r starts in sorted_points. Ends with a barrier; the caller's previous
 * reads of run_first and run_begin must have ended with one. */
__device__ __forceinline__ unsigned int gather_runs(const unsigned int *__restrict__ tile_starts, size_t keys,
                                                    int j, size_t tiles, size_t tile_points, size_t group,
                                                    unsigned int *run_first, unsigned int *run_begin,
                                                    unsigned int *warp_sums)
{
    const int t = threadIdx.x;
    const size_t tile = group + t;
    unsigned int length = 0, first_place = 0;
    if (tile < tiles) {
        const unsigned int start = tile_starts[tile * keys + j];
        length = tile_starts[tile * keys + j + 1] - start;
        first_place = (unsigned int)(tile * tile_points) + start;
    }
    unsigned int total;
    const unsigned int first = block_exclusive_sum<reduce_threads>(length, warp_sums, &total);
    run_first[t] = first;
    run_begin[t] = first_place;
    if (t == 0)
        run_first[reduce_threads] = total;
    __syncthreads();
    return total;
}

/* A block per anchor (grid-strided): see the header comment. Anchor j's
 * points are its runs in the sort's tiles, tile by tile: in tile c they are
 * sorted_points[c * tile_points + tile_starts[c * (m + 1) + j] ...
 * tile_starts[c * (m + 1) + j + 1]). The runs are taken in groups of one a
 * thread, their lengths summed by the block into first positions, and the
 * group's points then read in batches of reduce_threads. */
template <typename P>
__global__ void __launch_bounds__(reduce_threads, KCS_REDUCE_MIN_BLOCKS)
kcs_reduce_statistics(const P *__restrict__ x, const unsigned int *__restrict__ tile_starts, size_t tiles,
                      size_t tile_points, const unsigned int *__restrict__ sorted_points, int d, int m,
                      int *__restrict__ count, float *__restrict__ mean, float *__restrict__ var,
                      bool vectors)
{
    constexpr int warps = reduce_threads / 32;
    __shared__ unsigned int ids[2][reduce_threads];
    __shared__ unsigned int run_first[reduce_threads + 1];
    __shared__ unsigned int run_begin[reduce_threads];
    __shared__ unsigned int warp_sums[warps];
    __shared__ double warp_mean[warps][reduce_panel];
    __shared__ double warp_m2[warps][reduce_panel];
    __shared__ int warp_points[warps];
    /* inverse_of[i] = reciprocal(i + 1), computed once a block by the same
     * function, so that each row's 1 / (points so far) is one shared-memory
     * load with the same bits (the updates of an H100's statistics pass are
     * FP64-heavy: 0.1932 became 0.1915 ms on the perf case) */
    __shared__ double inverse_of[reduce_inverse_table];
    for (int i = threadIdx.x; i < reduce_inverse_table; i += reduce_threads)
        inverse_of[i] = reciprocal((double)(i + 1));
    __syncthreads();
    auto inverse_of_count = [&](int points) {
        return points <= reduce_inverse_table ? inverse_of[points - 1] : reciprocal((double)points);
    };

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const size_t keys = (size_t)m + 1;
    /* one group of runs (the usual case): gathered once per anchor, kept for every panel */
    const bool one_group = tiles <= (size_t)reduce_threads;
    for (int j = blockIdx.x; j < m; j += gridDim.x) {
        unsigned int c = 0;
        if (one_group) {
            c = gather_runs(tile_starts, keys, j, tiles, tile_points, 0, run_first, run_begin, warp_sums);
        } else { /* the count: the lengths of the anchor's runs in every tile */
            unsigned int owned = 0;
            for (size_t tile = t; tile < tiles; tile += reduce_threads)
                owned += tile_starts[tile * keys + j + 1] - tile_starts[tile * keys + j];
            block_exclusive_sum<reduce_threads>(owned, warp_sums, &c);
        }
        if (t == 0)
            count[j] = (int)c;

        for (int k0 = 0; k0 < d; k0 += reduce_panel) {
            const int k = k0 + 4 * lane;
            double mu[4] = {0.0, 0.0, 0.0, 0.0}, m2[4] = {0.0, 0.0, 0.0, 0.0};
            int seen = 0;
            for (size_t group = 0; group < tiles; group += reduce_threads) {
                /* (the previous group's batches ended with a barrier) */
                const unsigned int group_points =
                    one_group ? c
                              : gather_runs(tile_starts, keys, j, tiles, tile_points, group, run_first, run_begin,
                                            warp_sums);
                int buffer = 0;
                if ((unsigned int)t < group_points)
                    ids[0][t] = sorted_points[run_position(run_first, run_begin, (unsigned int)t)];
                __syncthreads();
                for (unsigned int base = 0; base < group_points; base += reduce_threads, buffer ^= 1) {
                    /* the next batch's point numbers: that buffer was last read before the previous barrier */
                    const unsigned int next = base + reduce_threads + (unsigned int)t;
                    if (next < group_points)
                        ids[buffer ^ 1][t] = sorted_points[run_position(run_first, run_begin, next)];
                    const unsigned int left = group_points - base;
                    const int batch = left < (unsigned int)reduce_threads ? (int)left : reduce_threads;
                    const int first_row = warp * 32;
                    const int last = first_row + 32 < batch ? first_row + 32 : batch;
                    int r = first_row;
                    for (; r + reduce_unroll <= last; r += reduce_unroll) {
                        float4 v[reduce_unroll];
#pragma unroll
                        for (int u = 0; u < reduce_unroll; u++)
                            v[u] = load_four_once(x + (size_t)ids[buffer][r + u] * d, k, d, vectors);
#pragma unroll
                        for (int u = 0; u < reduce_unroll; u++) {
                            seen++;
                            const double inverse = inverse_of_count(seen);
                            welford(mu[0], m2[0], v[u].x, inverse);
                            welford(mu[1], m2[1], v[u].y, inverse);
                            welford(mu[2], m2[2], v[u].z, inverse);
                            welford(mu[3], m2[3], v[u].w, inverse);
                        }
                    }
                    for (; r < last; r++) {
                        const float4 v = load_four_once(x + (size_t)ids[buffer][r] * d, k, d, vectors);
                        seen++;
                        const double inverse = inverse_of_count(seen);
                        welford(mu[0], m2[0], v.x, inverse);
                        welford(mu[1], m2[1], v.y, inverse);
                        welford(mu[2], m2[2], v.z, inverse);
                        welford(mu[3], m2[3], v.w, inverse);
                    }
                    __syncthreads();
                }
            }

            /* Chan, Golub and LeVeque's merge of the warps' states, in warp order. */
#pragma unroll
            for (int e = 0; e < 4; e++) {
                warp_mean[warp][4 * lane + e] = mu[e];
                warp_m2[warp][4 * lane + e] = m2[e];
            }
            if (lane == 0)
                warp_points[warp] = seen;
            __syncthreads();
            if (t < reduce_panel && k0 + t < d) {
                double merged_mean = 0.0, merged_m2 = 0.0, merged_points = 0.0;
                for (int w = 0; w < warps; w++) {
                    const double points = (double)warp_points[w];
                    if (points == 0.0)
                        continue;
                    const double other_mean = warp_mean[w][t], other_m2 = warp_m2[w][t];
                    if (merged_points == 0.0) {
                        merged_mean = other_mean;
                        merged_m2 = other_m2;
                        merged_points = points;
                        continue;
                    }
                    const double total = merged_points + points;
                    const double inverse_total = reciprocal(total);
                    const double delta = other_mean - merged_mean;
                    merged_mean += delta * (points * inverse_total);
                    merged_m2 += other_m2 + delta * delta * (merged_points * points * inverse_total);
                    merged_points = total;
                }
                const size_t at = (size_t)j * d + k0 + t;
                mean[at] = c > 0 ? (float)merged_mean : 0.0f;
                var[at] = c > 0 ? (float)(merged_m2 * reciprocal((double)c)) : 0.0f;
            }
            __syncthreads(); /* the shared states and ids are reused */
        }
    }
}

template <typename P> KCS_KERNEL_RUN(run_reduce)
{
    const kcs_anneal_args *a = &args->reduce;
    const size_t n = a->n, d = a->d, m = a->m;
    const P *x = nullptr;
    const int *idx = nullptr;
    int *count = nullptr;
    float *mean = nullptr, *var = nullptr;

    /* Two ways to put each anchor's points together, in index order: the
     * tile counting sort where its per-key counters fit in shared memory
     * (m + 1 keys at most sort_most_keys), else CUB's radix sort on the bits
     * of [0, m] as a single tile. Both give the statistics kernel the sorted
     * point numbers and, per tile, where each key's run starts. */
    const bool counting = n > 0 && m + 1 <= (size_t)sort_most_keys;
    const size_t tiles = counting ? (n + sort_tile - 1) / sort_tile : 1;
    int end_bit = 0; /* the bits for m */
    while (end_bit < 32 && ((unsigned long long)1 << end_bit) <= (unsigned long long)m)
        end_bit++;
    /* Scratch, counting: the tiles' run starts ((m + 1) * tiles), the sorted
     * point numbers (n). Radix sort: keys, point numbers, both sorted (n
     * each), then the runs' starts (m + 1). */
    const size_t array_bytes = align_up(n * sizeof(unsigned int));
    const size_t table_bytes = align_up((m + 1) * tiles * sizeof(unsigned int));
    const size_t scratch_bytes = counting ? table_bytes + array_bytes : 4 * array_bytes + table_bytes;
    const size_t sort_bytes = sort_shared_bytes(m);
    size_t stream_blocks = 0, anchor_blocks = 0;
    auto plan = [&]() -> kcs_status {
        if (n > (size_t)INT_MAX || m >= (size_t)UINT_MAX / 2 || m > (size_t)INT_MAX || d > (size_t)INT_MAX / 2)
            return kcs_fail(err, KCS_ERROR, "reduce: n = %zu, d = %zu, m = %zu is too large", n, d, m);
        x = (const P *)inputs[0]->data;
        idx = (const int *)inputs[1]->data;
        count = (int *)outputs[0]->data;
        mean = (float *)outputs[1]->data;
        var = (float *)outputs[2]->data;
        if (counting && (m + 1) * tiles > (size_t)INT_MAX)
            return kcs_fail(err, KCS_ERROR, "reduce: n = %zu, m = %zu is too large", n, m);
        kcs_status status = KCS_OK;
        size_t cub_bytes = 0;
        if (m > 0) {
            if (!counting && n > 0) {
                const unsigned int *no_input = nullptr;
                unsigned int *no_output = nullptr;
                KCS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, cub_bytes, no_input, no_output, no_input,
                                                               no_output, (int)n, 0, end_bit, device->stream));
            }
            status = kcs_cuda_reserve(&device->partials, scratch_bytes, err);
            if (status == KCS_OK && cub_bytes > 0)
                status = kcs_cuda_reserve(&device->cub_storage, cub_bytes, err);
            if (status != KCS_OK)
                return status;
        }
        int per_sm = 0;
        KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_reduce_keys, 256, 0));
        const size_t resident = wave_blocks(device, per_sm);
        stream_blocks = (n + 255) / 256 < resident ? (n + 255) / 256 : resident;
        /* a block per anchor: the hardware balances anchors of different counts */
        anchor_blocks = m < (size_t)INT_MAX ? m : (size_t)INT_MAX;

        /* above 48 KB a block's dynamic shared memory must be allowed; a host
         * call, kept out of the timed region like the reservations */
        if (counting)
            KCS_CUDA_CHECK(cudaFuncSetAttribute(kcs_reduce_sort_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                (int)sort_bytes));

        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (m > 0) {
            char *scratch = (char *)device->partials.data;
            unsigned int *tile_starts, *sorted;
            if (counting) {
                tile_starts = (unsigned int *)scratch;
                sorted = (unsigned int *)(scratch + table_bytes);
                kcs_reduce_sort_tiles<<<(unsigned int)tiles, sort_threads, sort_bytes, device->stream>>>(
                    idx, n, (int)m, tile_starts, sorted);
                KCS_CUDA_CHECK_LAUNCH("kcs_reduce_sort_tiles");
            } else {
                unsigned int *keys = (unsigned int *)scratch, *points = (unsigned int *)(scratch + array_bytes);
                unsigned int *sorted_keys = (unsigned int *)(scratch + 2 * array_bytes);
                sorted = (unsigned int *)(scratch + 3 * array_bytes);
                tile_starts = (unsigned int *)(scratch + 4 * array_bytes);
                if (n > 0) {
                    kcs_reduce_keys<<<(unsigned int)stream_blocks, 256, 0, device->stream>>>(idx, n, (int)m, keys,
                                                                                              points);
                    KCS_CUDA_CHECK_LAUNCH("kcs_reduce_keys");
                    size_t storage_bytes = device->cub_storage.bytes;
                    const unsigned int *keys_in = keys, *points_in = points;
                    KCS_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(device->cub_storage.data, storage_bytes, keys_in,
                                                                   sorted_keys, points_in, sorted, (int)n, 0,
                                                                   end_bit, device->stream));
                }
                kcs_reduce_run_starts<<<(unsigned int)((m + 1 + 255) / 256), 256, 0, device->stream>>>(
                    sorted_keys, n, (int)m, tile_starts);
                KCS_CUDA_CHECK_LAUNCH("kcs_reduce_run_starts");
            }
            kcs_reduce_statistics<P><<<(unsigned int)anchor_blocks, reduce_threads, 0, device->stream>>>(
                x, tile_starts, tiles, (size_t)sort_tile, sorted, (int)d, (int)m, count, mean, var,
                rows_are_vectors<P>(x, d));
            KCS_CUDA_CHECK_LAUNCH("kcs_reduce_statistics");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

} // namespace

static const kcs_kernel rows[] = {
    {"reduce", KCS_F32, "sorted-welford",
     "tile counting sort by anchor, one launch (CUB radix sort for m >= 1536), a block per anchor: f64 Welford per warp, Chan merge; no float atomics",
     run_reduce<float>, NULL},
    {"reduce", KCS_F16, "sorted-welford", "as f32, points widened from f16", run_reduce<__half>, NULL},
};

extern "C" const kcs_kernel_table kcs_cuda_reduce_kernels = KCS_KERNEL_TABLE(rows);
