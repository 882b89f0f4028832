/* anneal.cu: the anneal steps on CUDA (docs/anneal.md): assign, reduce,
 * update and energy. Points x (n x d) are stored f16 or f32 (the case
 * dtype) and widened exactly to f32; anchors, means, variances, distances
 * and velocities are f32; indices and counts i32.
 *
 * assign: idx[i] = argmin_j ||x_i - a_j||^2 (ties to the smallest j), dist[i]
 * the minimum. Two variants, rows at the end of this file; both are one
 * fused tile kernel that never writes the n x m distances:
 *
 *   direct     a GEMM-shaped tile kernel. A block of 256 threads takes 128
 *              points and walks all anchors 128 at a time, the dimensions 8
 *              at a time through double-buffered shared memory (points and
 *              anchors transposed there, rows padded by 4 floats; two
 *              neighbouring threads stage a row's 8 dimensions of a stage,
 *              whole 32-byte sectors; so that a thread reads its 8 points
 *              and its 8 anchors of one dimension as two float4 each); each
 *              thread keeps an 8 x 8 register tile of sums of (x - a)^2 (a
 *              subtraction and an FMA a term: the direct form the spec
 *              requires), and after each anchor tile folds it into a running
 *              (min, index) per point, taking a later anchor only when
 *              strictly nearer. The 16 threads that share points then merge
 *              (distance, index) pairs lexicographically: ties go to the
 *              smallest index whatever the order. The grid is persistent
 *              (point tiles grid-strided). dist is the direct sum, in the
 *              order of the dimensions.
 *   shortlist  the same tile kernel accumulating x . a instead (one FMA a
 *              term, like SGEMM) and ranking anchors by A_j = ||a_j||^2 -
 *              2 x . a_j (||x||^2 is the same for every anchor), keeping per
 *              point the smallest A, its index and the second smallest. The
 *              expanded form is used only to shortlist (docs/anneal.md): its
 *              error against the exact A_j is at most gamma(d + 1)
 *              (||a_j||^2 + 2 ||x|| ||a_j||), so with R >= max ||a_j|| and
 *              X >= ||x|| every anchor that could be nearest has A within
 *              margin = 2 gamma(d + 1) (R^2 + 2 X R) of the smallest; the
 *              kernel uses 4 gamma(d + 2) (R^2 + 2 X R) for the rounding of
 *              the test itself. A point whose second smallest A is above the
 *              smallest plus the margin has one candidate: its idx is final
 *              and its dist is recomputed as the direct sum of (x - a)^2 (a
 *              warp per point, 16-byte loads, 4 points' loads in flight).
 *              Every other point (near ties, exact ties) is appended to a
 *              list that the direct kernel then assigns in full. The list is
 *              short (2014 of the perf case's 10^6 points), too few tiles to
 *              fill the device, so that pass splits each tile's anchors over
 *              up to 8 rows of blocks, each merging its (distance, index)
 *              into the point's slot by a 64-bit atomicMin on (distance bits,
 *              index): the lexicographic minimum whatever the order, then
 *              unpacked (0.19 ms became 0.05 ms on an H200).
 *              The result is the direct kernel's for every point, up to near
 *              ties within the bound. Before it, a warp per anchor computes
 *              ||a_j||^2 and the largest of them (atomicMax on the bits of a
 *              non-negative float: order-independent, deterministic).
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
 * update: one thread an element of m x d: v' = fma(mu, v, mean - a) where
 * count > 0 (mean - a first, exact near convergence), mu * v otherwise;
 * a' = fma(lr * T, v', a), lr * T one f32 product of the f32 parameters.
 *
 * energy: E = (1/n) sum dist, summed in f64 as sumsq.cu does (16-byte
 * loads, f64 running sums, block partials summed in index order by the last
 * block, cuda/grid_sum.cuh: one launch, the same bits every run), divided in
 * f64, rounded once to f32. n = 0 gives 0/0 = NaN, written.
 *
 * Precision: assign accumulates in f32, as the spec allows: each direct
 * distance is d terms of one rounded subtraction and an FMA, within
 * gamma(d + 2) of itself in any order, and the shortlist's f32 dot products
 * only rank anchors, with a margin derived from their own error bound.
 * reduce carries f64 (see above); update is a handful of f32 roundings, as
 * its bound counts them; energy sums in f64 as the spec requires (an f32 sum
 * over 1e6 distances would err by up to 1.2e-4, hiding a division by n - 1).
 *
 * Summation depth: assign sums d terms per distance (any order is allowed);
 * energy keeps every running sum under 1024 vectors (the grid grows in
 * whole waves beyond that), as sumsq.cu; reduce's Welford chains (a warp's
 * share of an anchor's points) may be longer than D(c), but in f64 their
 * error, of order c u64 (below 2.4e-7 for any c < 2^31), stays far inside
 * the f32 bound gamma(D(c) + 2) the depth rule exists to protect.
 *
 * Performance (n = 1e6, d = 128, m = 1024, 2 n m d = 2.6e11 flops; cuBLAS
 * SGEMM's 51 TFLOP/s on an H200 would take 5.1 ms, and 0.70 of its rate is
 * 7.3 ms): direct issues two FP32 instructions a term (FADD, FFMA) and takes
 * 10.2 ms; shortlist issues one and takes 7.09 ms in all (0.72 of cuBLAS's
 * rate): its tile pass is issue-bound (ncu: issue slots 86% busy), the
 * inner loop about 80% FFMA once the anchor tiles' folds are counted (a
 * fold cost 1123 instructions a tile before it became selects, 511 after:
 * the pass went from 7.6 to 7.2 ms; loading the next stage through row
 * pointers without bounds checks where d is a multiple of 8 and rows are
 * aligned, to 7.03), then 0.05 ms for the near ties and 0.01 ms for the
 * norms. reduce reads the points once, after the sort: on an H100 the
 * statistics pass takes 0.186 ms, gathering rows with streaming 256-byte
 * L2 fetches (0.1915 ms with plain loads), the sort 0.018 ms, 0.86 of the
 * copy rate in all (docs/anneal.md). update and energy are a few
 * microseconds (launch-bound at these sizes).
 *
 * Tunables (-D on the nvcc line): KCS_REDUCE_MIN_BLOCKS (resident blocks an
 * SM the statistics kernel is compiled for), KCS_REDUCE_UNROLL (rows a
 * warp has in flight), KCS_REDUCE_SORT_TILE (points a block of the sort
 * takes, a multiple of 32 times its warps; tests/cuda_kernels_emulation.sh
 * with a small one reaches the statistics kernel's groups of 256 tiles) and
 * KCS_REDUCE_SORT_THREADS (a sort block's threads). The tile shape constants below are fixed: the
 * kernels' thread mappings assume them (128 x 128 tiles, 8 deep, 256
 * threads).
 *
 * Run only them: ./build/kcs run --backend cuda anneal (one step:
 * 'anneal/assign-*'; add --benchmark to time the perf cases).
 */
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include <cub/device/device_radix_sort.cuh>
#include <cuda_fp16.h>

#include "common.cuh"
#include "grid_sum.cuh"
#include "load_streaming.cuh" /* loads of input read once */

namespace {

/* ---------------------------------------------------------------- loading points */

/* The value of one stored f16 point element, widened exactly to f32 (f32
 * points are read as they are). */
__device__ __forceinline__ float widen(const __half *p)
{
    return __half2float(__ldg(p));
}

__device__ __forceinline__ float half_bits_to_float(unsigned int bits)
{
    return __half2float(__ushort_as_half((unsigned short)(bits & 0xffffu)));
}

/* Elements 0 .. 3 at p, with no bounds check: p is aligned for one 16-byte
 * (f32) or 8-byte (f16) load, and all four lie inside the row. */
__device__ __forceinline__ float4 load_four_inside(const float *p)
{
    return __ldg(reinterpret_cast<const float4 *>(p));
}

/* Four f16 elements, as stored in raw, widened exactly. */
__device__ __forceinline__ float4 widen_four(uint2 raw)
{
    return make_float4(half_bits_to_float(raw.x), half_bits_to_float(raw.x >> 16), half_bits_to_float(raw.y),
                       half_bits_to_float(raw.y >> 16));
}

__device__ __forceinline__ float4 load_four_inside(const __half *p)
{
    return widen_four(__ldg(reinterpret_cast<const uint2 *>(p)));
}

/* Dimensions k .. k+3 of a row as a float4, 0 beyond d. vectors: the row is
 * aligned for one 16-byte (f32) or 8-byte (f16) load wherever k + 4 <= d. */
__device__ __forceinline__ float4 load_four(const float *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return load_four_inside(row + k);
    float4 r;
    r.x = k < d ? __ldg(row + k) : 0.0f;
    r.y = k + 1 < d ? __ldg(row + k + 1) : 0.0f;
    r.z = k + 2 < d ? __ldg(row + k + 2) : 0.0f;
    r.w = k + 3 < d ? __ldg(row + k + 3) : 0.0f;
    return r;
}

__device__ __forceinline__ float4 load_four(const __half *row, int k, int d, bool vectors)
{
    if (vectors && k + 4 <= d)
        return load_four_inside(row + k);
    float4 r;
    r.x = k < d ? widen(row + k) : 0.0f;
    r.y = k + 1 < d ? widen(row + k + 1) : 0.0f;
    r.z = k + 2 < d ? widen(row + k + 2) : 0.0f;
    r.w = k + 3 < d ? widen(row + k + 3) : 0.0f;
    return r;
}

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

/* Whether rows of d elements of type P starting at data allow load_four's vector loads. */
template <typename P> bool rows_are_vectors(const void *data, size_t d)
{
    const uintptr_t alignment = sizeof(P) == 4 ? 16 : 8;
    return d % 4 == 0 && reinterpret_cast<uintptr_t>(data) % alignment == 0;
}

/* ---------------------------------------------------------------- assign */

constexpr int tile_points = 128;  /* points a block takes at a time */
constexpr int tile_anchors = 128; /* anchors per step of its walk */
constexpr int tile_depth = 8;     /* dimensions per shared-memory stage */
constexpr int tile_threads = 256; /* 16 x 16 threads, each 8 points x 8 anchors */
constexpr unsigned int list_slices = 8; /* most rows of blocks the flagged points' anchors are split over */
static_assert(tile_threads == 2 * tile_points && tile_points == tile_anchors && tile_points % 32 == 0,
              "the staging and rescoring mappings assume these shapes");

/* The tile-local point (or anchor) of a thread's i-th row (or column):
 * two runs of 4, 64 apart, so that shared-memory reads are float4s without
 * bank conflicts. */
__device__ __forceinline__ int tile_position(int thread_coordinate, int i)
{
    return (i < 4 ? 0 : 64) + thread_coordinate * 4 + (i & 3);
}

/* Folds a finished anchor tile (acc, columns column_base + tile_position(tx,
 * j)) into each of the thread's 8 points' running minimum: in increasing
 * anchor order, a later anchor only when strictly nearer, so that equal
 * values keep the first. EXPANDED: the value is ||a||^2 - 2 x . a, and the
 * second smallest is kept too; columns beyond m have norm +inf, so their
 * value is +inf and never taken. Direct: CHECK_COLUMNS makes columns beyond
 * m +inf (only the last tile can have them). Clears acc for the next tile. */
template <bool EXPANDED, bool CHECK_COLUMNS>
__device__ __forceinline__ void fold_tile(float (&acc)[8][8], const float (&norm)[8], int column_base, int tx,
                                          int m, float (*best)[tile_threads], int (*best_index)[tile_threads],
                                          float (*second)[tile_threads], int t)
{
#pragma unroll
    for (int i = 0; i < 8; i++) {
        float b = best[i][t];
        int b_index = best_index[i][t];
        float b_second = EXPANDED ? second[i][t] : 0.0f;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            const int column = column_base + tile_position(tx, j);
            float value;
            if constexpr (EXPANDED)
                value = fmaf(-2.0f, acc[i][j], norm[j]);
            else
                value = CHECK_COLUMNS && column >= m ? INFINITY : acc[i][j];
            const bool nearer = value < b;
            if constexpr (EXPANDED)
                b_second = nearer ? b : fminf(b_second, value); /* fminf skips NaN, as < does */
            b_index = nearer ? column : b_index;
            b = nearer ? value : b;
            acc[i][j] = 0.0f;
        }
        best[i][t] = b;
        best_index[i][t] = b_index;
        if constexpr (EXPANDED)
            second[i][t] = b_second;
    }
}

/* The tile kernel: see the header comment. EXPANDED: shortlist mode.
 * list (may be null): the points to assign are list[0 .. *list_count);
 * otherwise 0 .. n. Anchor slices (direct mode, list only): block row
 * blockIdx.y walks anchor tiles [blockIdx.y * slice_tiles, + slice_tiles)
 * and, when there are several rows, merges its (distance, index) into
 * packed[list slot] by atomicMin on (distance bits << 32 | index): the
 * lexicographic minimum, the same whatever the order (distances are
 * non-negative, so their bits order as they do). */
template <typename P, bool EXPANDED>
__global__ void __launch_bounds__(tile_threads, 2)
kcs_assign_tiles(const P *__restrict__ x, const float *__restrict__ anchors, size_t n, int d, int m,
                 const unsigned int *__restrict__ list, const unsigned int *__restrict__ list_count,
                 const float *__restrict__ norms, const unsigned int *__restrict__ largest_norm_bits,
                 float margin_factor, float norm_inflation, int *__restrict__ idx,
                 float *__restrict__ dist, unsigned int *__restrict__ flagged,
                 unsigned int *__restrict__ flagged_count, unsigned long long *__restrict__ packed,
                 int slice_tiles, bool point_vectors, bool anchor_vectors)
{
    /* Rows padded by 4: the transposing stores of the two halves of a row
     * (dimensions 4 apart) then hit different banks (as gemm.cu does). */
    __shared__ __align__(16) float xs[2][tile_depth][tile_points + 4];
    __shared__ __align__(16) float as[2][tile_depth][tile_anchors + 4];
    __shared__ float best[8][tile_threads];      /* per thread and point: smallest value */
    __shared__ int best_index[8][tile_threads];  /* its anchor */
    __shared__ float second[EXPANDED ? 8 : 1][tile_threads]; /* the second smallest */
    __shared__ float final_best[EXPANDED ? tile_points : 1];
    __shared__ int final_index[EXPANDED ? tile_points : 1];
    __shared__ float final_second[EXPANDED ? tile_points : 1];

    const int t = threadIdx.x, tx = t % 16, ty = t / 16;
    /* Two neighbouring threads stage one row's 8 dimensions of a stage (one
     * 32-byte sector of f32 points): the point and anchor this thread stages,
     * and which 4 dimensions of the stage (4 * stage_half .. + 3). */
    const int stage_row = t / 2;
    const int stage_half = t % 2;
    /* n < 2^31 (checked by the run function): point numbers and tiles in 32 bits */
    const unsigned int count = list ? *list_count : (unsigned int)n;
    const unsigned int tile_count = (count + tile_points - 1) / tile_points;
    const int depth_stages = (d + tile_depth - 1) / tile_depth;
    const int all_anchor_tiles = (m + tile_anchors - 1) / tile_anchors;
    const int first_anchor_tile = (int)blockIdx.y * slice_tiles;
    const int slice_end = first_anchor_tile + slice_tiles;
    const int anchor_tiles = slice_end < all_anchor_tiles ? slice_end : all_anchor_tiles;
    const bool sliced = gridDim.y > 1;

    for (unsigned int tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        const unsigned int slot = tile * tile_points + stage_row;
        const bool point_present = slot < count;
        const unsigned int point = point_present ? (list ? list[slot] : slot) : 0u;

#pragma unroll
        for (int i = 0; i < 8; i++) {
            best[i][t] = INFINITY;
            best_index[i][t] = 0;
            if constexpr (EXPANDED)
                second[i][t] = INFINITY;
        }

        /* Stage 0. */
        {
            const int k = 4 * stage_half;
            const float4 px = point_present ? load_four(x + (size_t)point * d, k, d, point_vectors)
                                            : make_float4(0, 0, 0, 0);
            const int anchor = first_anchor_tile * tile_anchors + stage_row;
            const float4 pa = anchor < m ? load_four(anchors + (size_t)anchor * d, k, d, anchor_vectors)
                                         : make_float4(0, 0, 0, 0);
            xs[0][k][stage_row] = px.x;
            xs[0][k + 1][stage_row] = px.y;
            xs[0][k + 2][stage_row] = px.z;
            xs[0][k + 3][stage_row] = px.w;
            as[0][k][stage_row] = pa.x;
            as[0][k + 1][stage_row] = pa.y;
            as[0][k + 2][stage_row] = pa.z;
            as[0][k + 3][stage_row] = pa.w;
        }
        __syncthreads();

        float acc[8][8];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                acc[i][j] = 0.0f;

        /* Stages run over (anchor tile, depth stage), the depth stage fastest.
         * Where whole stages are vectors (d a multiple of 8, rows aligned),
         * the next stage's loads go through row pointers with no bounds
         * checks: this thread's point row and its anchor row of the tile
         * being loaded (advanced a tile at a time). */
        const bool whole_stages = point_vectors && anchor_vectors && d % tile_depth == 0;
        const P *point_row = x + (size_t)point * d + 4 * stage_half;
        const float *anchor_row = anchors + (size_t)(first_anchor_tile * tile_anchors + stage_row) * d + 4 * stage_half;
        int anchor_row_number = first_anchor_tile * tile_anchors + stage_row;
        int buffer = 0;
        for (int anchor_tile = first_anchor_tile, depth_stage = 0; anchor_tile < anchor_tiles;) {
            int next_depth_stage = depth_stage + 1, next_tile = anchor_tile;
            if (next_depth_stage == depth_stages) {
                next_depth_stage = 0;
                next_tile++;
            }
            const bool more = next_tile < anchor_tiles;
            float4 next_x = make_float4(0, 0, 0, 0), next_a = make_float4(0, 0, 0, 0);
            if (next_tile != anchor_tile) {
                anchor_row += (size_t)tile_anchors * d;
                anchor_row_number += tile_anchors;
            }
            if (more && whole_stages) {
                const int k = next_depth_stage * tile_depth;
                if (point_present)
                    next_x = load_four_inside(point_row + k);
                if (anchor_row_number < m)
                    next_a = load_four_inside(anchor_row + k);
            } else if (more) {
                const int k = next_depth_stage * tile_depth + 4 * stage_half;
                const int anchor = next_tile * tile_anchors + stage_row;
                if (point_present)
                    next_x = load_four(x + (size_t)point * d, k, d, point_vectors);
                if (anchor < m)
                    next_a = load_four(anchors + (size_t)anchor * d, k, d, anchor_vectors);
            }

#pragma unroll
            for (int k = 0; k < tile_depth; k++) {
                const float4 x0 = *reinterpret_cast<const float4 *>(&xs[buffer][k][ty * 4]);
                const float4 x1 = *reinterpret_cast<const float4 *>(&xs[buffer][k][64 + ty * 4]);
                const float4 a0 = *reinterpret_cast<const float4 *>(&as[buffer][k][tx * 4]);
                const float4 a1 = *reinterpret_cast<const float4 *>(&as[buffer][k][64 + tx * 4]);
                const float xr[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
                const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
#pragma unroll
                for (int i = 0; i < 8; i++)
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        if constexpr (EXPANDED) {
                            acc[i][j] = fmaf(xr[i], ar[j], acc[i][j]);
                        } else {
                            const float difference = xr[i] - ar[j];
                            acc[i][j] = fmaf(difference, difference, acc[i][j]);
                        }
                    }
            }

            if (more) {
                const int k = 4 * stage_half;
                xs[buffer ^ 1][k][stage_row] = next_x.x;
                xs[buffer ^ 1][k + 1][stage_row] = next_x.y;
                xs[buffer ^ 1][k + 2][stage_row] = next_x.z;
                xs[buffer ^ 1][k + 3][stage_row] = next_x.w;
                as[buffer ^ 1][k][stage_row] = next_a.x;
                as[buffer ^ 1][k + 1][stage_row] = next_a.y;
                as[buffer ^ 1][k + 2][stage_row] = next_a.z;
                as[buffer ^ 1][k + 3][stage_row] = next_a.w;
            }

            if (depth_stage == depth_stages - 1) {
                /* An anchor tile is done: fold it into the running minima. */
                const int column_base = anchor_tile * tile_anchors;
                float norm[8];
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const int column = column_base + tile_position(tx, j);
                    norm[j] = 0.0f;
                    if constexpr (EXPANDED)
                        norm[j] = column < m ? __ldg(norms + column) : INFINITY;
                }
                if (EXPANDED || column_base + tile_anchors <= m)
                    fold_tile<EXPANDED, false>(acc, norm, column_base, tx, m, best, best_index, second, t);
                else
                    fold_tile<EXPANDED, true>(acc, norm, column_base, tx, m, best, best_index, second, t);
            }
            __syncthreads();
            buffer ^= 1;
            anchor_tile = next_tile;
            depth_stage = next_depth_stage;
        }

        /* Merge the 16 threads that share each point (lanes of one half-warp):
         * (value, index) lexicographically, so that equal values keep the
         * smallest index; the butterfly leaves the same result in all 16. */
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float b = best[i][t];
            int b_index = best_index[i][t];
            float b_second = EXPANDED ? second[i][t] : 0.0f;
#pragma unroll
            for (int offset = 1; offset < 16; offset *= 2) {
                const float other = __shfl_xor_sync(0xffffffffu, b, offset);
                const int other_index = __shfl_xor_sync(0xffffffffu, b_index, offset);
                const bool other_wins = other < b || (other == b && other_index < b_index);
                if constexpr (EXPANDED) {
                    const float other_second = __shfl_xor_sync(0xffffffffu, b_second, offset);
                    b_second = other_wins ? fminf(other_second, b) : fminf(b_second, other);
                }
                if (other_wins) {
                    b = other;
                    b_index = other_index;
                }
            }
            const int p = tile_position(ty, i);
            const unsigned int p_slot = tile * tile_points + p;
            if (tx == 0) {
                if constexpr (EXPANDED) {
                    final_best[p] = b;
                    final_index[p] = b_index;
                    final_second[p] = b_second;
                } else if (p_slot < count && sliced) {
                    atomicMin(&packed[p_slot], (unsigned long long)__float_as_uint(b) << 32 | (unsigned int)b_index);
                } else if (p_slot < count) {
                    const unsigned int p_point = list ? list[p_slot] : p_slot;
                    idx[p_point] = b_index;
                    dist[p_point] = b;
                }
            }
        }

        if constexpr (EXPANDED) {
            __syncthreads();
            /* A warp per point, 4 points at a time (their loads in flight
             * together): the direct distance to the chosen anchor (d terms
             * (x - a)^2, lane by 4 dimensions) and ||x||, then the shortlist
             * test. */
            constexpr int group = 4;
            const int warp = t / 32, lane = t % 32;
            const float largest_norm = sqrtf(__uint_as_float(*largest_norm_bits)) * norm_inflation;
            for (int p0 = warp * group; p0 < tile_points; p0 += group * (tile_threads / 32)) {
                const unsigned int p_slot0 = tile * tile_points + p0;
                if (p_slot0 >= count)
                    break;
                const P *row[group];
                const float *anchor_row[group];
                unsigned int p_point[group];
                bool present[group];
                float distance[group], square_norm[group];
#pragma unroll
                for (int g = 0; g < group; g++) {
                    const unsigned int p_slot = p_slot0 + g;
                    present[g] = p_slot < count;
                    p_point[g] = present[g] ? (list ? list[p_slot] : p_slot) : 0u;
                    row[g] = x + (size_t)p_point[g] * d;
                    anchor_row[g] = anchors + (size_t)(present[g] ? final_index[p0 + g] : 0) * d;
                    distance[g] = 0.0f;
                    square_norm[g] = 0.0f;
                }
                for (int k = 4 * lane; k < d; k += 128) {
                    float4 xv[group], av[group];
#pragma unroll
                    for (int g = 0; g < group; g++) {
                        xv[g] = load_four(row[g], k, d, point_vectors);
                        av[g] = load_four(anchor_row[g], k, d, anchor_vectors);
                    }
#pragma unroll
                    for (int g = 0; g < group; g++) {
                        const float e[4] = {xv[g].x, xv[g].y, xv[g].z, xv[g].w};
                        const float f[4] = {av[g].x, av[g].y, av[g].z, av[g].w};
#pragma unroll
                        for (int q = 0; q < 4; q++) {
                            const float difference = e[q] - f[q];
                            distance[g] = fmaf(difference, difference, distance[g]);
                            square_norm[g] = fmaf(e[q], e[q], square_norm[g]);
                        }
                    }
                }
#pragma unroll
                for (int offset = 16; offset > 0; offset /= 2)
#pragma unroll
                    for (int g = 0; g < group; g++) {
                        distance[g] += __shfl_xor_sync(0xffffffffu, distance[g], offset);
                        square_norm[g] += __shfl_xor_sync(0xffffffffu, square_norm[g], offset);
                    }
                if (lane < group && p_slot0 + lane < count) {
                    /* lane g writes point g (registers indexed by constants only) */
                    float my_distance = distance[0], my_square_norm = square_norm[0];
                    unsigned int my_point = p_point[0];
#pragma unroll
                    for (int g = 1; g < group; g++)
                        if (lane == g) {
                            my_distance = distance[g];
                            my_square_norm = square_norm[g];
                            my_point = p_point[g];
                        }
                    const int p = p0 + lane;
                    const float point_norm = sqrtf(my_square_norm) * norm_inflation;
                    const float spread = largest_norm * largest_norm + 2.0f * point_norm * largest_norm;
                    const float margin = margin_factor * spread + 1e-30f;
                    idx[my_point] = final_index[p];
                    dist[my_point] = my_distance;
                    /* NaN fails the test too: such a point is assigned in full */
                    if (!(final_second[p] > final_best[p] + margin)) {
                        const unsigned int slot = atomicAdd(flagged_count, 1u);
                        flagged[slot] = my_point;
                        packed[slot] = (unsigned long long)__float_as_uint(INFINITY) << 32; /* (inf, anchor 0) */
                    }
                }
            }
        }
    }
}

/* The sliced direct pass's results: packed[q] (distance bits << 32 | index)
 * into idx and dist of point list[q], for q < *list_count. */
__global__ void __launch_bounds__(256)
kcs_assign_unpack(const unsigned long long *__restrict__ packed, const unsigned int *__restrict__ list,
                  const unsigned int *__restrict__ list_count, int *__restrict__ idx, float *__restrict__ dist)
{
    const unsigned int count = *list_count;
    for (unsigned int q = blockIdx.x * blockDim.x + threadIdx.x; q < count; q += gridDim.x * blockDim.x) {
        const unsigned long long value = packed[q];
        idx[list[q]] = (int)(unsigned int)(value & 0xffffffffu);
        dist[list[q]] = __uint_as_float((unsigned int)(value >> 32));
    }
}

/* ||a_j||^2 for every anchor (a warp each), and the largest of them. */
__global__ void __launch_bounds__(256)
kcs_assign_anchor_norms(const float *__restrict__ anchors, int m, int d, float *__restrict__ norms,
                        unsigned int *__restrict__ largest_norm_bits)
{
    const size_t warp = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (warp >= (size_t)m)
        return; /* whole warps leave together */
    const float *row = anchors + warp * (size_t)d;
    float sum = 0.0f;
    for (int k = lane; k < d; k += 32) {
        const float value = __ldg(row + k);
        sum = fmaf(value, value, sum);
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
        sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) {
        norms[warp] = sum;
        atomicMax(largest_norm_bits, __float_as_uint(sum)); /* non-negative: bits order as values */
    }
}

/* The blocks of one wave on this device, for a kernel with per_sm resident blocks an SM. */
size_t wave_blocks(const kcs_device *device, int per_sm)
{
    return (size_t)(device->sm_count > 0 ? device->sm_count : 1) * (size_t)(per_sm > 0 ? per_sm : 1);
}

/* Byte offset of a scratch region, rounded up to 256 bytes. */
size_t align_up(size_t bytes)
{
    return (bytes + 255) / 256 * 256;
}

/* The assign inputs and outputs, checked. */
template <typename P> struct assign_buffers {
    const P *x;
    const float *a;
    int *idx;
    float *dist;
};

template <typename P>
kcs_status check_assign(const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                        assign_buffers<P> *b, kcs_error *err)
{
    const kcs_anneal_args *a = &args->assign;
    if (a->d > (size_t)INT_MAX / 2 || a->m > (size_t)INT_MAX || a->n > (size_t)INT_MAX ||
        (a->d != 0 && a->n > SIZE_MAX / 4 / a->d) || (a->d != 0 && a->m > SIZE_MAX / 4 / a->d))
        return kcs_fail(err, KCS_ERROR, "assign: n = %zu, d = %zu, m = %zu is too large", a->n, a->d, a->m);
    if (a->m == 0 && a->n > 0)
        return kcs_fail(err, KCS_ERROR, "assign needs at least one anchor (m >= 1)");
    if (inputs[0]->bytes < a->n * a->d * sizeof(P) || inputs[1]->bytes < a->m * a->d * sizeof(float) ||
        outputs[0]->bytes < a->n * sizeof(int) || outputs[1]->bytes < a->n * sizeof(float))
        return kcs_fail(err, KCS_ERROR, "assign: buffers smaller than n = %zu, d = %zu, m = %zu", a->n, a->d,
                        a->m);
    b->x = (const P *)inputs[0]->data;
    b->a = (const float *)inputs[1]->data;
    b->idx = (int *)outputs[0]->data;
    b->dist = (float *)outputs[1]->data;
    return KCS_OK;
}

/* The persistent grid of the tile kernel for up to `points` points (called before the timer starts). */
template <typename P, bool EXPANDED>
kcs_status tile_blocks(kcs_device *device, size_t points, unsigned int *blocks, kcs_error *err)
{
    int per_sm = 0;
    KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_assign_tiles<P, EXPANDED>,
                                                                 tile_threads, 0));
    const size_t resident = wave_blocks(device, per_sm);
    size_t needed = (points + tile_points - 1) / tile_points;
    needed = needed < resident ? needed : resident;
    *blocks = (unsigned int)(needed > 0 ? needed : 1);
    return KCS_OK;
}

/* Launches the tile kernel (list null: points 0 .. n; else list[0 ..
 * *list_count)), in `slices` rows of blocks over the anchor tiles (1, or
 * several for the list, merged into packed). */
template <typename P, bool EXPANDED>
kcs_status launch_tiles(kcs_device *device, const assign_buffers<P> &b, const kcs_anneal_args *a,
                        unsigned int blocks, unsigned int slices, const unsigned int *list,
                        const unsigned int *list_count, const float *norms,
                        const unsigned int *largest_norm_bits, float margin_factor, float norm_inflation,
                        unsigned int *flagged, unsigned int *flagged_count, unsigned long long *packed,
                        kcs_error *err)
{
    const int anchor_tiles = (int)((a->m + tile_anchors - 1) / tile_anchors);
    const int slice_tiles = (anchor_tiles + (int)slices - 1) / (int)slices;
    kcs_assign_tiles<P, EXPANDED><<<dim3(blocks, slices), tile_threads, 0, device->stream>>>(
        b.x, b.a, a->n, (int)a->d, (int)a->m, list, list_count, norms, largest_norm_bits, margin_factor,
        norm_inflation, b.idx, b.dist, flagged, flagged_count, packed, slice_tiles,
        rows_are_vectors<P>(b.x, a->d), rows_are_vectors<float>(b.a, a->d));
    if constexpr (EXPANDED)
        KCS_CUDA_CHECK_LAUNCH("kcs_assign_tiles (shortlist)");
    else
        KCS_CUDA_CHECK_LAUNCH("kcs_assign_tiles (direct)");
    return KCS_OK;
}

/* The assign rows: the direct kernel alone, or (SHORTLIST) the shortlist pass and the direct one on near ties. */
template <typename P, bool SHORTLIST> KCS_KERNEL_RUN(run_assign)
{
    const kcs_anneal_args *a = &args->assign;
    assign_buffers<P> b;
    kcs_status status = check_assign<P>(args, inputs, outputs, &b, err);
    if (status == KCS_OK)
        status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;

    /* Scratch for the shortlist: norms (m), the largest norm's bits and the
     * flagged count (adjacent, cleared by one memset), the flagged list (n),
     * the sliced direct pass's packed results (n). */
    const size_t norms_offset = 0;
    const size_t words_offset = align_up(a->m * sizeof(float));
    const size_t list_offset = words_offset + 256;
    const size_t packed_offset = list_offset + align_up(a->n * sizeof(unsigned int));
    const size_t scratch_bytes = packed_offset + align_up(a->n * sizeof(unsigned long long));
    if (SHORTLIST && a->n > 0 && a->d > 0) {
        status = kcs_cuda_reserve(&device->partials, scratch_bytes, err);
        if (status != KCS_OK)
            return status;
    }
    unsigned int direct_blocks = 0, shortlist_blocks = 0;
    status = tile_blocks<P, false>(device, a->n, &direct_blocks, err);
    if (status == KCS_OK && SHORTLIST)
        status = tile_blocks<P, true>(device, a->n, &shortlist_blocks, err);
    if (status != KCS_OK)
        return status;
    /* gamma(k) = k u / (1 - k u) in f32, u = 2^-24, rounded up by the factor 1.0001 */
    const double u = 0x1.0p-24;
    const double gamma_d2 = (double)(a->d + 2) * u / (1.0 - (double)(a->d + 2) * u);
    const float margin_factor = (float)(4.0 * gamma_d2 * 1.0001);
    /* covers the f32 sums of squares (gamma(d)) and the square roots behind ||x|| and R */
    const float norm_inflation = (float)(1.0 + gamma_d2 + 4.0 * u + 0x1.0p-20);

    status = kcs_cuda_timer_start(device, kernel_seconds, err);
    if (status != KCS_OK)
        return status;
    if (a->n > 0 && a->d == 0) {
        /* Every distance is 0: every point ties at anchor 0. (0 and 0.0f are all-zero bits.) */
        KCS_CUDA_CHECK(cudaMemsetAsync(b.idx, 0, a->n * sizeof(int), device->stream));
        KCS_CUDA_CHECK(cudaMemsetAsync(b.dist, 0, a->n * sizeof(float), device->stream));
    } else if (a->n > 0 && !SHORTLIST) {
        status = launch_tiles<P, false>(device, b, a, direct_blocks, 1, nullptr, nullptr, nullptr, nullptr, 0.0f,
                                        1.0f, nullptr, nullptr, nullptr, err);
    } else if (a->n > 0) {
        char *scratch = (char *)device->partials.data;
        float *norms = (float *)(scratch + norms_offset);
        unsigned int *largest_norm_bits = (unsigned int *)(scratch + words_offset);
        unsigned int *flagged_count = largest_norm_bits + 1;
        unsigned int *flagged = (unsigned int *)(scratch + list_offset);
        unsigned long long *packed = (unsigned long long *)(scratch + packed_offset);
        KCS_CUDA_CHECK(cudaMemsetAsync(largest_norm_bits, 0, 2 * sizeof(unsigned int), device->stream));
        const size_t norm_blocks = (a->m * 32 + 255) / 256;
        kcs_assign_anchor_norms<<<(unsigned int)norm_blocks, 256, 0, device->stream>>>(
            b.a, (int)a->m, (int)a->d, norms, largest_norm_bits);
        KCS_CUDA_CHECK_LAUNCH("kcs_assign_anchor_norms");
        status = launch_tiles<P, true>(device, b, a, shortlist_blocks, 1, nullptr, nullptr, norms,
                                       largest_norm_bits, margin_factor, norm_inflation, flagged,
                                       flagged_count, packed, err);
        /* The flagged points, in full: usually a few thousand, too few tiles
         * to fill the device, so each tile's anchors are split over up to
         * list_slices rows of blocks, merged in packed, then unpacked. The
         * grid allows for all n. */
        const unsigned int anchor_tiles = (unsigned int)((a->m + tile_anchors - 1) / tile_anchors);
        const unsigned int slices = anchor_tiles < list_slices ? anchor_tiles : list_slices;
        const unsigned int slice_blocks = (direct_blocks + slices - 1) / slices;
        if (status == KCS_OK)
            status = launch_tiles<P, false>(device, b, a, slice_blocks, slices, flagged, flagged_count, nullptr,
                                            nullptr, 0.0f, 1.0f, nullptr, nullptr, packed, err);
        if (status == KCS_OK && slices > 1) {
            kcs_assign_unpack<<<direct_blocks, 256, 0, device->stream>>>(packed, flagged, flagged_count, b.idx,
                                                                        b.dist);
            KCS_CUDA_CHECK_LAUNCH("kcs_assign_unpack");
        }
    }
    if (status != KCS_OK)
        return status;
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}


/* ---------------------------------------------------------------- reduce */

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
    if (n > (size_t)INT_MAX || m >= (size_t)UINT_MAX / 2 || m > (size_t)INT_MAX || d > (size_t)INT_MAX / 2 ||
        (d != 0 && n > SIZE_MAX / 4 / d) || (d != 0 && m > SIZE_MAX / 4 / d))
        return kcs_fail(err, KCS_ERROR, "reduce: n = %zu, d = %zu, m = %zu is too large", n, d, m);
    if (inputs[0]->bytes < n * d * sizeof(P) || inputs[1]->bytes < n * sizeof(int) ||
        outputs[0]->bytes < m * sizeof(int) || outputs[1]->bytes < m * d * sizeof(float) ||
        outputs[2]->bytes < m * d * sizeof(float))
        return kcs_fail(err, KCS_ERROR, "reduce: buffers smaller than n = %zu, d = %zu, m = %zu", n, d, m);
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;
    const P *x = (const P *)inputs[0]->data;
    const int *idx = (const int *)inputs[1]->data;
    int *count = (int *)outputs[0]->data;
    float *mean = (float *)outputs[1]->data, *var = (float *)outputs[2]->data;

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
    if (counting && (m + 1) * tiles > (size_t)INT_MAX)
        return kcs_fail(err, KCS_ERROR, "reduce: n = %zu, m = %zu is too large", n, m);
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
    const size_t stream_blocks = (n + 255) / 256 < resident ? (n + 255) / 256 : resident;
    /* a block per anchor: the hardware balances anchors of different counts */
    const size_t anchor_blocks = m < (size_t)INT_MAX ? m : (size_t)INT_MAX;

    /* above 48 KB a block's dynamic shared memory must be allowed; a host
     * call, kept out of the timed region like the reservations */
    const size_t sort_bytes = sort_shared_bytes(m);
    if (counting)
        KCS_CUDA_CHECK(cudaFuncSetAttribute(kcs_reduce_sort_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)sort_bytes));

    status = kcs_cuda_timer_start(device, kernel_seconds, err);
    if (status != KCS_OK)
        return status;
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
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}

/* ---------------------------------------------------------------- update */

__global__ void __launch_bounds__(256)
kcs_update_elements(const float *__restrict__ a, const float *__restrict__ v, const float *__restrict__ mean,
                    const int *__restrict__ count, size_t cells, size_t d, float momentum, float rate,
                    float *__restrict__ a_next, float *__restrict__ v_next)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += stride) {
        const float anchor = a[i], velocity = v[i];
        /* (mean - a) first: exact near convergence (Sterbenz) */
        const float next =
            count[i / d] > 0 ? fmaf(momentum, velocity, mean[i] - anchor) : momentum * velocity;
        v_next[i] = next;
        a_next[i] = fmaf(rate, next, anchor);
    }
}

KCS_KERNEL_RUN(run_update)
{
    const kcs_anneal_update_args *a = &args->update;
    const size_t m = a->m, d = a->d;
    if (d != 0 && m > SIZE_MAX / 4 / d)
        return kcs_fail(err, KCS_ERROR, "update: m = %zu, d = %zu is too large", m, d);
    const size_t cells = m * d;
    if (inputs[0]->bytes < cells * 4 || inputs[1]->bytes < cells * 4 || inputs[2]->bytes < cells * 4 ||
        inputs[3]->bytes < m * 4 || outputs[0]->bytes < cells * 4 || outputs[1]->bytes < cells * 4)
        return kcs_fail(err, KCS_ERROR, "update: buffers smaller than m = %zu, d = %zu", m, d);
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;
    /* The parameters rounded once to f32, and lr * T as one f32 product of those. */
    const float momentum = (float)a->momentum;
    const float learning_rate = (float)a->learning_rate, temperature = (float)a->temperature;
    const float rate = learning_rate * temperature;
    int per_sm = 0;
    KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_update_elements, 256, 0));
    const size_t resident = wave_blocks(device, per_sm);
    size_t blocks = (cells + 255) / 256;
    blocks = blocks < resident ? blocks : resident;

    status = kcs_cuda_timer_start(device, kernel_seconds, err);
    if (status != KCS_OK)
        return status;
    if (cells > 0) {
        kcs_update_elements<<<(unsigned int)blocks, 256, 0, device->stream>>>(
            (const float *)inputs[0]->data, (const float *)inputs[1]->data, (const float *)inputs[2]->data,
            (const int *)inputs[3]->data, cells, d, momentum, rate, (float *)outputs[0]->data,
            (float *)outputs[1]->data);
        KCS_CUDA_CHECK_LAUNCH("kcs_update_elements");
    }
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}

/* ---------------------------------------------------------------- energy */

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
    if (n > SIZE_MAX / sizeof(float) || inputs[0]->bytes < n * sizeof(float) ||
        outputs[0]->bytes < sizeof(float))
        return kcs_fail(err, KCS_ERROR, "energy: buffers smaller than n = %zu distances and one result", n);
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;
    int per_sm = 0;
    KCS_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_energy_vector_grid, energy_threads, 0));
    /* One wave of resident blocks (fewer for small n), more in whole waves
     * when a thread would read more than energy_max_vectors_per_thread. */
    const size_t resident = wave_blocks(device, per_sm);
    const size_t vectors = n / 4;
    const size_t per_block = (size_t)energy_threads * energy_max_vectors_per_thread;
    const size_t needed = (vectors + per_block - 1) / per_block;
    size_t blocks;
    if (needed > resident) {
        blocks = (needed + resident - 1) / resident * resident;
    } else {
        const size_t useful = vectors == 0 ? 1 : (vectors + energy_threads - 1) / energy_threads;
        blocks = useful < resident ? useful : resident;
    }
    if (blocks > INT_MAX)
        return kcs_fail(err, KCS_ERROR, "energy: n = %zu needs %zu blocks, more than a grid has", n, blocks);
    status = kcs_cuda_reserve(&device->partials, blocks * sizeof(double), err);
    if (status != KCS_OK)
        return status;

    status = kcs_cuda_timer_start(device, kernel_seconds, err);
    if (status != KCS_OK)
        return status;
    kcs_energy_vector_grid<<<(unsigned int)blocks, energy_threads, 0, device->stream>>>(
        (const float *)inputs[0]->data, n, (double *)device->partials.data, device->blocks_done,
        (float *)outputs[0]->data);
    KCS_CUDA_CHECK_LAUNCH("kcs_energy_vector_grid");
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}

} // namespace

static const kcs_kernel rows[] = {
    {"assign", KCS_F32, "direct",
     "fused 128x128x8 tiles, 8x8 sums of (x - a)^2 per thread, running (min, index) per point, no n x m matrix",
     run_assign<float, false>, NULL},
    {"assign", KCS_F16, "direct", "as f32, points widened from f16 when staged", run_assign<__half, false>, NULL},
    {"assign", KCS_F32, "shortlist",
     "as direct with x.a FMAs ranking ||a||^2 - 2x.a; near ties within a derived margin redone by direct",
     run_assign<float, true>, NULL},
    {"assign", KCS_F16, "shortlist", "as f32, points widened from f16 when staged", run_assign<__half, true>, NULL},
    {"reduce", KCS_F32, "sorted-welford",
     "tile counting sort by anchor, one launch (CUB radix sort for m >= 1536), a block per anchor: f64 Welford per warp, Chan merge; no float atomics",
     run_reduce<float>, NULL},
    {"reduce", KCS_F16, "sorted-welford", "as f32, points widened from f16", run_reduce<__half>, NULL},
    {"update", KCS_F32, "elementwise", "v' = fma(mu, v, mean - a) or mu v; a' = fma(lr T, v', a)", run_update, NULL},
    {"energy", KCS_F32, "vector-grid", "float4 loads, f64 sums, block partials summed in order by the last block",
     run_energy, NULL},
};

extern "C" const kcs_kernel_table kcs_cuda_anneal_kernels = KCS_KERNEL_TABLE(rows);
