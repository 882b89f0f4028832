/* assign.cu: anneal's assign step on CUDA (docs/anneal.md). Points x (n x d)
 * are stored f16 or f32 (the case dtype) and widened exactly to f32
 * (cuda/anneal.cuh); anchors a (m x d) and distances are f32, indices i32.
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
 * Precision: it accumulates in f32, as the spec allows: each direct
 * distance is d terms of one rounded subtraction and an FMA, within
 * gamma(d + 2) of itself in any order, and the shortlist's f32 dot products
 * only rank anchors, with a margin derived from their own error bound.
 * Summation depth: d terms per distance (any order is allowed).
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
 * norms.
 *
 * The tile shape constants below are fixed: the kernels' thread mappings
 * assume them (128 x 128 tiles, 8 deep, 256 threads).
 *
 * Run only it: ./build/kcs run --backend cuda 'anneal/assign-*' (add
 * --benchmark to time the perf cases).
 */
#include <climits>
#include <cmath>
#include <cstdint>

#include <cuda_fp16.h>

#include "common.cuh"
#include "anneal.cuh"

namespace {

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
     * (dimensions 4 apart) then hit different banks (as gemm/simt.cu does). */
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

/* The assign inputs and outputs. */
template <typename P> struct assign_buffers {
    const P *x;
    const float *a;
    int *idx;
    float *dist;
};

/* The sizes the kernels' int indices take and the op's precondition (an
 * anchor to assign to), then the buffers (checked against the layout by
 * kcs_cuda_timed before this). */
template <typename P>
kcs_status assign_buffers_of(const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                             assign_buffers<P> *b, kcs_error *err)
{
    const kcs_anneal_args *a = &args->assign;
    if (a->d > (size_t)INT_MAX / 2 || a->m > (size_t)INT_MAX || a->n > (size_t)INT_MAX)
        return kcs_fail(err, KCS_ERROR, "assign: n = %zu, d = %zu, m = %zu is too large", a->n, a->d, a->m);
    if (a->m == 0 && a->n > 0)
        return kcs_fail(err, KCS_ERROR, "assign needs at least one anchor (m >= 1)");
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
    assign_buffers<P> b = {};

    /* Scratch for the shortlist: norms (m), the largest norm's bits and the
     * flagged count (adjacent, cleared by one memset), the flagged list (n),
     * the sliced direct pass's packed results (n). */
    const size_t norms_offset = 0;
    const size_t words_offset = align_up(a->m * sizeof(float));
    const size_t list_offset = words_offset + 256;
    const size_t packed_offset = list_offset + align_up(a->n * sizeof(unsigned int));
    const size_t scratch_bytes = packed_offset + align_up(a->n * sizeof(unsigned long long));
    unsigned int direct_blocks = 0, shortlist_blocks = 0;
    auto plan = [&]() -> kcs_status {
        kcs_status status = assign_buffers_of<P>(args, inputs, outputs, &b, err);
        if (status == KCS_OK && SHORTLIST && a->n > 0 && a->d > 0)
            status = kcs_cuda_reserve(&device->partials, scratch_bytes, err);
        if (status == KCS_OK)
            status = tile_blocks<P, false>(device, a->n, &direct_blocks, err);
        if (status == KCS_OK && SHORTLIST)
            status = tile_blocks<P, true>(device, a->n, &shortlist_blocks, err);
        return status;
    };
    /* gamma(k) = k u / (1 - k u) in f32, u = 2^-24, rounded up by the factor 1.0001 */
    const double u = 0x1.0p-24;
    const double gamma_d2 = (double)(a->d + 2) * u / (1.0 - (double)(a->d + 2) * u);
    const float margin_factor = (float)(4.0 * gamma_d2 * 1.0001);
    /* covers the f32 sums of squares (gamma(d)) and the square roots behind ||x|| and R */
    const float norm_inflation = (float)(1.0 + gamma_d2 + 4.0 * u + 0x1.0p-20);

    auto launch = [&]() -> kcs_status {
        kcs_status status = KCS_OK;
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
        return status;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
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
};

extern "C" const kcs_kernel_table kcs_cuda_assign_kernels = KCS_KERNEL_TABLE(rows);
