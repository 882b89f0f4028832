/* anneal.cl: the vector compressor's anneal steps as OpenCL C 1.2 kernels (docs/anneal.md):
 * assign, reduce, update and energy.
 *
 * Points x (n x d) are stored as f16 or f32 and widened exactly to float
 * (vload_half, core OpenCL C: half is only ever a pointer type here, no
 * cl_khr_fp16 needed); anchors, means, variances and distances are float,
 * indices and counts int. Contraction into fma is allowed by the spec
 * everywhere here (OpenCL C contracts by default); divisions are correctly
 * rounded (the build passes -cl-fp32-correctly-rounded-divide-sqrt), the one
 * rounding the mean and variance bounds count for them.
 *
 * assign (kcs_assign_tiles_f32 / _f16): a GEMM-shaped tiling of the n x m
 *   distance matrix that never stores it. A work-group of KCS_ASSIGN_SIDE^2
 *   work-items owns KCS_ASSIGN_TILE points and walks all anchors in tiles of
 *   KCS_ASSIGN_TILE; each work-item accumulates a KCS_ASSIGN_MICRO x
 *   KCS_ASSIGN_MICRO block of distances in registers, KCS_ASSIGN_DEPTH
 *   dimensions at a time, from points and anchors staged in local memory
 *   (zero-padded past n, m and d: a padded dimension adds (0 - 0)^2 = 0
 *   exactly). A distance is the sum of squared differences, one dimension
 *   after another (d - 1 additions, never the expanded form). After each
 *   anchor tile a work-item keeps, per point, the first of its anchors with
 *   the strictly smallest distance; its anchors come in increasing order,
 *   so that is the smallest index among equals. The KCS_ASSIGN_SIDE
 *   work-items that share a point then merge their candidates in local
 *   memory by (distance, index), again ties to the smallest index.
 *
 * assign, shortlist (kcs_assign_shortlist_f32 / _f16, then kcs_assign_list_*):
 *   the CUDA shortlist algorithm (cuda/assign.cu) in OpenCL C 1.2. Where the
 *   tiled kernel issues two instructions a term (a subtraction and a
 *   multiply-add), the shortlist pass issues one: the same tiling
 *   accumulates x . a in float (it only ranks, within the margin below
 *   derived from that float error) and ranks anchors by
 *   ||a_j||^2 - 2 x . a_j (||x||^2 is
 *   the same for every anchor), keeping per point the smallest value, its
 *   index and the second smallest. Its work-items read their 8 points and 8
 *   anchors of a dimension as two float4s each from local memory (rows
 *   padded by 4; tiled-local reads 16 floats one by one), so the inner loop
 *   is 4 local reads a 64 multiply-adds. Staging as in opencl/gemm.cl's
 *   tiled kernel: each stage of KCS_SHORTLIST_DEPTH dimensions of 128 points
 *   and 128 anchors is read from global memory as float4s (a work-item a
 *   float4 of each operand per 8 dimensions, four neighbours a 64-byte run
 *   of a row where the depth is 16), stored transposed into local memory,
 *   double-buffered: the next stage, across anchor tiles too, is loaded into
 *   registers while the current one is computed and stored after it, one
 *   barrier a stage, with no 64-bit index arithmetic or bounds test per
 *   element (rows past n or m repeat the last one, dimensions past d read
 *   as 0). The host builds 16-deep stages where the device has the 43.5 KB
 *   of local memory they need, else 8-deep (27 KB, inside OpenCL 1.2's 32 KB). The expanded form only shortlists
 *   (docs/anneal.md): its error against the exact value is at most
 *   gamma(d + 1) (||a_j||^2 + 2 ||x|| ||a_j||), so with R >= max ||a_j|| and
 *   X >= ||x|| every anchor that could be nearest lies within 2 gamma(d + 1)
 *   (R^2 + 2 X R) of the smallest; the test uses 4 gamma(d + 2) (R^2 + 2 X R)
 *   (norms inflated for their own rounding), as cuda/assign.cu derives. A
 *   point whose second smallest is beyond the smallest plus that margin has
 *   its idx final, and its dist is the direct sum of (x - a)^2 to that
 *   anchor (16 work-items a point, every 16th dimension, then summed). Every
 *   other point (near and exact ties) is appended to a list (a global
 *   atomic counter: the list's order varies, each point's result does not),
 *   which kcs_assign_list_* (the tiled-local kernel reading its points
 *   through the list, its work-groups looping over the list's tiles)
 *   assigns in full. kcs_assign_anchor_norms computes ||a_j||^2 and the
 *   largest (atomic_max on the bits of non-negative floats: order-free).
 *   Unlike the CUDA kernel the list pass is not split over anchor slices
 *   (OpenCL 1.2 has no 64-bit atomic minimum): for the perf case's ~2000
 *   flagged points that is 16 work-groups walking 1024 anchors, about
 *   0.15 ms on one compute unit against ~7 ms for the shortlist pass.
 *   One FMA a term like CUDA's shortlist rather than two (CUDA direct, or
 *   tiled-local here); what it reached is in docs/anneal.md.
 *
 * reduce: a counting sort of the points by anchor, then per anchor two
 *   passes over its own points. No atomics at all, and deterministic: every
 *   anchor's points are visited in increasing point order whatever the
 *   launch sizes.
 *   kcs_reduce_walk (count): work-group g owns a contiguous chunk of points
 *     and a private row partial[g][0..m) of per-anchor counts in global
 *     memory that only it touches (m may be far larger than local memory).
 *     It takes its chunk in sub-blocks of local size: each work-item finds
 *     in local memory how many earlier points of the sub-block share its
 *     anchor (its rank) and whether it is the last of them; the last one
 *     adds the sub-block's number to the private count.
 *   kcs_reduce_anchor_totals: per anchor, the counts of all groups summed
 *     (count[j], an output) and each group's row replaced by the exclusive
 *     prefix over groups: where group g's points of anchor j begin.
 *   kcs_reduce_offsets: one work-group scans count into offsets[j], where
 *     anchor j's points begin in the sorted order.
 *   kcs_reduce_walk (scatter): the same walk again, writing each point's
 *     index to order[offsets[j] + partial[g][j] + rank].
 *   kcs_reduce_stats_f32 / _f16: one work-group per anchor, its work-items
 *     arranged as slots (points) x lanes (dimensions, a power of two: whole
 *     point rows are read by neighbouring work-items). Pass one sums the
 *     points for the mean, pass two the squared deviations from that mean
 *     (two passes: never E[x^2] - E[x]^2). A work-item sums its share of
 *     the points in blocks of KCS_REDUCE_BLOCK, block sums in a chain; the
 *     slots join in a tree. Depth for c points: at most
 *     KCS_REDUCE_BLOCK - 1 + ceil(c / KCS_REDUCE_BLOCK) + log2(slots),
 *     within D(c) for every c below 2^20 (and at most c - 1 for c <= 2049,
 *     a tree with zeros where a slot has no point adding nothing).
 *
 * reduce, sorted-welford (a second row; sorted-two-pass above stays for
 *   comparison and for devices without fp64): the algorithm of the CUDA
 *   sorted-welford reduce (cuda/reduce.cu), in OpenCL C 1.2 without
 *   subgroups. The points are read once, where sorted-two-pass reads them
 *   twice, one float per work-item per point.
 *   Sort (kcs_reduce_tile_sort), the tile counting sort of the CUDA reduce
 *     in one launch: each work-group sorts its own tile of
 *     KCS_REDUCE_SORT_TILE points by anchor into its own stretch of the
 *     order, stably, and writes where each anchor's run of the tile begins;
 *     no table or scan spans the tiles. A point's rank among its anchor's
 *     points of a step of 32 is found by 32 comparisons in local memory
 *     (what CUDA's __match_any_sync gives a warp). It replaces four launches
 *     (tile counts, their prefixes over tiles, the anchors' offsets, the
 *     scatter) and their global round trips (docs/anneal.md has what it
 *     measured on an H100). Where rows x m places do
 *     not fit in local memory, or the tiles are more than the statistics
 *     kernel gathers (KCS_REDUCE_RUNS), the walks above sort instead: one
 *     run an anchor, in the same order.
 *   Statistics (kcs_reduce_welford_f32 / _f16, needs fp64): a work-group per
 *     anchor; it gathers the anchor's runs (their lengths summed over the
 *     work-group: count[j]) and takes its list of points in batches of
 *     KCS_REDUCE_ITEMS point numbers, each found by a binary search over the
 *     runs and double-buffered in local memory. Rows of 32 work-items, a
 *     work-item 4 dimensions of a panel of 128 (one 16-byte load, a whole
 *     512-byte f32 row per row of work-items)
 *     and row r the anchor's points r, r + rows, ..., KCS_REDUCE_UNROLL of
 *     them in flight (32 KB of loads a work-group at 256 work-items). Welford's
 *     updates in f64 (1 / count by a float quotient and two Newton steps),
 *     the rows' states merged by Chan, Golub and LeVeque's formula in row
 *     order; mean and var rounded once to float. f64 makes the updating
 *     formulas' error (about c u64 sigma rms) negligible against the f32
 *     bound whatever the count, so the chains may be longer than D(c) (the
 *     depth rule protects f32 sums). Deterministic: the order depends only
 *     on the launch sizes.
 *   Bytes a point (f32, d = 128): 512 of x read once, 4 of idx read once,
 *   4 of order written once and read once, against 512 + 4 for the op: the
 *   kernel moves 1.02 times the op's bytes, where sorted-two-pass moves 2.0
 *   times (two reads of x) in scalar loads. Expected on a GPU: the
 *   statistics near the CUDA kernel's rate (0.85 of the copy rate on an
 *   H200), the sort a few percent of the whole: about 0.7 of copy.
 *
 * update (kcs_update): one work-item per element of the m x d anchors, the
 *   spec's formula in its order: mean - a first, then mu v plus it, then
 *   a + (lr T) v_next with lr T formed by the host.
 *
 * energy (kcs_energy_partials, kcs_energy_finish): as sumsq's GPU shape:
 *   strided work-items with four double sums each and a local tree give one
 *   partial per work-group; one work-group adds the partials, divides by n
 *   in double and rounds once to float. Needs cl_khr_fp64 (the kernels are
 *   left out without it; the host reports the skip). Deterministic: the
 *   order depends only on the launch sizes.
 *
 * The tunables below are #ifndef defaults, so the file compiles on its own;
 * the host passes the values it launches with by -D.
 *
 * Run only it: build/kcs run --backend opencl anneal
 */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef KCS_ASSIGN_SIDE
/* Work-items along each side of an assign work-group (KCS_ASSIGN_SIDE^2 in
 * all): 16 x 16 = 256, eight warps. */
#define KCS_ASSIGN_SIDE 16
#endif

#ifndef KCS_ASSIGN_MICRO
/* Points and anchors per work-item of assign: 8 x 8 distances in registers
 * against 16 operands loaded from local memory per dimension. */
#define KCS_ASSIGN_MICRO 8
#endif

#ifndef KCS_ASSIGN_DEPTH
/* Dimensions of points and anchors staged in local memory at a time. */
#define KCS_ASSIGN_DEPTH 16
#endif

#ifndef KCS_REDUCE_BLOCK
/* Points a reduce work-item adds in one chain before the block's sum joins
 * its running total. */
#define KCS_REDUCE_BLOCK 1024
#endif

#ifndef KCS_REDUCE_ITEMS
/* Work-items of a work-group of the sorted-welford reduce: rows of 32. */
#define KCS_REDUCE_ITEMS 256
#endif

#ifndef KCS_REDUCE_SORT_TILE
/* Points of a tile of the sorted-welford reduce's counting sort: a multiple
 * of KCS_REDUCE_ITEMS. */
#define KCS_REDUCE_SORT_TILE 2048
#endif

#ifndef KCS_REDUCE_UNROLL
/* Points a row of the sorted-welford statistics has in flight. */
#define KCS_REDUCE_UNROLL 8
#endif

#if KCS_REDUCE_ITEMS % 32 != 0 || KCS_REDUCE_SORT_TILE % KCS_REDUCE_ITEMS != 0
#error "the sorted-welford reduce needs rows of 32 and whole steps of the work-group per tile"
#endif

/* Points (and anchors) of one assign tile. */
#define KCS_ASSIGN_TILE (KCS_ASSIGN_SIDE * KCS_ASSIGN_MICRO)
/* A local row is one longer than the tile, so that the transposed stores of
 * a tile load fall on different banks. */
#define KCS_ASSIGN_PITCH (KCS_ASSIGN_TILE + 1)

#if KCS_ASSIGN_TILE * KCS_ASSIGN_SIDE > KCS_ASSIGN_DEPTH * KCS_ASSIGN_PITCH
#error "assign's final merge reuses the staging arrays: KCS_ASSIGN_DEPTH is too small"
#endif

#define KCS_ANNEAL_LOAD_F32(x, i) ((x)[i])
#define KCS_ANNEAL_LOAD_F16(x, i) vload_half((i), (x))

/* Dimensions k .. k + 3 of a point row: one 16-byte (f32) or 8-byte (f16) load
 * where vectors (d a multiple of 4, so every row is aligned for it) and all
 * four lie inside the row, else element by element, 0 beyond d. */
static float4 kcs_anneal_four_f32(global const float *row, ulong k, ulong d, int vectors)
{
    if (vectors && k + 4 <= d)
        return *(global const float4 *)(row + k);
    return (float4)(k < d ? row[k] : 0.0f, k + 1 < d ? row[k + 1] : 0.0f,
                    k + 2 < d ? row[k + 2] : 0.0f, k + 3 < d ? row[k + 3] : 0.0f);
}

static float4 kcs_anneal_four_f16(global const half *row, ulong k, ulong d, int vectors)
{
    if (vectors && k + 4 <= d)
        return vload_half4(0, row + k);
    return (float4)(k < d ? vload_half(k, row) : 0.0f, k + 1 < d ? vload_half(k + 1, row) : 0.0f,
                    k + 2 < d ? vload_half(k + 2, row) : 0.0f,
                    k + 3 < d ? vload_half(k + 3, row) : 0.0f);
}

/* ---- assign ------------------------------------------------------------------- */

/* LIST_PARAMETERS, COUNT and POINT_OF: the plain kernel assigns points 0 ..
 * n - 1 (empty, n, the slot itself); the listed one the points list[0 ..
 * state[1]) (shortlist's flagged points). */
#define KCS_ASSIGN_TILES(NAME, POINT_T, LOAD, LIST_PARAMETERS, COUNT, POINT_OF)                    \
    __attribute__((reqd_work_group_size(KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE, 1, 1)))                 \
    kernel void NAME(global const POINT_T *x, global const float *a, ulong n, ulong d,             \
                     ulong m LIST_PARAMETERS, global int *idx, global float *dist)                 \
    {                                                                                              \
        ulong count = COUNT;                                                                       \
        /* Dimension k of point (anchor) p of the tile is element k * KCS_ASSIGN_PITCH             \
         * + p. Flat, because the final merge reuses each array whole: indexing a                  \
         * [DEPTH][PITCH] array through a pointer to its first row past that row is                \
         * undefined (Oclgrind reported it). */                                                    \
        local float points[KCS_ASSIGN_DEPTH * KCS_ASSIGN_PITCH];                                   \
        local float anchors[KCS_ASSIGN_DEPTH * KCS_ASSIGN_PITCH];                                  \
        uint id = get_local_id(0);                                                                 \
        uint column = id % KCS_ASSIGN_SIDE; /* which anchors of a tile */                          \
        uint line = id / KCS_ASSIGN_SIDE;   /* which points of the tile */                         \
        /* Tiles of points grid-strided: the plain kernel has one work-group a tile,               \
         * the listed one fewer (its length is known only on the device). The                      \
         * bound is the same for the whole work-group, so every barrier inside is                  \
         * reached by all of it. */                                                                \
        for (ulong point0 = (ulong)get_group_id(0) * KCS_ASSIGN_TILE; point0 < count;              \
             point0 += (ulong)get_num_groups(0) * KCS_ASSIGN_TILE) {                               \
            float best[KCS_ASSIGN_MICRO];                                                          \
            int best_index[KCS_ASSIGN_MICRO];                                                      \
            _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++) {                         \
                best[i] = INFINITY;                                                                \
                best_index[i] = 0;                                                                 \
            }                                                                                      \
            for (ulong anchor0 = 0; anchor0 < m; anchor0 += KCS_ASSIGN_TILE) {                     \
                float sums[KCS_ASSIGN_MICRO][KCS_ASSIGN_MICRO];                                    \
                _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                       \
                    _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++)                   \
                        sums[i][j] = 0.0f;                                                         \
                for (ulong k0 = 0; k0 < d; k0 += KCS_ASSIGN_DEPTH) {                               \
                    for (uint e = id; e < KCS_ASSIGN_TILE * KCS_ASSIGN_DEPTH;                      \
                         e += KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE) {                                 \
                        uint p = e / KCS_ASSIGN_DEPTH, k = e % KCS_ASSIGN_DEPTH;                   \
                        ulong dimension = k0 + k, point = point0 + p, anchor = anchor0 + p;        \
                        points[k * KCS_ASSIGN_PITCH + p] =                                         \
                            point < count && dimension < d ? LOAD(x, POINT_OF(point) * d + dimension) \
                                                           : 0.0f;                                 \
                        anchors[k * KCS_ASSIGN_PITCH + p] =                                        \
                            anchor < m && dimension < d ? a[anchor * d + dimension] : 0.0f;        \
                    }                                                                              \
                    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
                    for (int k = 0; k < KCS_ASSIGN_DEPTH; k++) {                                   \
                        float xs[KCS_ASSIGN_MICRO], as[KCS_ASSIGN_MICRO];                          \
                        _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)               \
                            xs[i] = points[k * KCS_ASSIGN_PITCH + line + i * KCS_ASSIGN_SIDE];     \
                        _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++)               \
                            as[j] = anchors[k * KCS_ASSIGN_PITCH + column + j * KCS_ASSIGN_SIDE];  \
                        _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)               \
                            _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++) {         \
                                float difference = xs[i] - as[j];                                  \
                                sums[i][j] += difference * difference;                             \
                            }                                                                      \
                    }                                                                              \
                    barrier(CLK_LOCAL_MEM_FENCE);                                                  \
                }                                                                                  \
                _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++) {                     \
                    ulong anchor = anchor0 + column + (ulong)j * KCS_ASSIGN_SIDE;                  \
                    _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                   \
                        if (anchor < m && sums[i][j] < best[i]) {                                  \
                            best[i] = sums[i][j];                                                  \
                            best_index[i] = (int)anchor;                                           \
                        }                                                                          \
                }                                                                                  \
            }                                                                                      \
            /* The staging arrays are free (the last barrier above, or never used when */          \
            /* d = 0): they now hold every work-item's candidates, point by column.    */          \
            local float *candidate = points;                                                       \
            local int *candidate_index = (local int *)anchors;                                     \
            _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++) {                         \
                uint slot = (line + i * KCS_ASSIGN_SIDE) * KCS_ASSIGN_SIDE + column;               \
                candidate[slot] = best[i];                                                         \
                candidate_index[slot] = best_index[i];                                             \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            if (id < KCS_ASSIGN_TILE && point0 + id < count) {                                     \
                float nearest = candidate[id * KCS_ASSIGN_SIDE];                                   \
                int nearest_index = candidate_index[id * KCS_ASSIGN_SIDE];                         \
                for (int c = 1; c < KCS_ASSIGN_SIDE; c++) {                                        \
                    float other = candidate[id * KCS_ASSIGN_SIDE + c];                             \
                    int other_index = candidate_index[id * KCS_ASSIGN_SIDE + c];                   \
                    if (other < nearest || (other == nearest && other_index < nearest_index)) {    \
                        nearest = other;                                                           \
                        nearest_index = other_index;                                               \
                    }                                                                              \
                }                                                                                  \
                idx[POINT_OF(point0 + id)] = nearest_index;                                        \
                dist[POINT_OF(point0 + id)] = nearest;                                             \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE); /* the staging arrays are reused */                      \
        }                                                                                          \
    }

#define KCS_ANNEAL_PLAIN(slot) (slot)
#define KCS_ANNEAL_LISTED(slot) ((ulong)list[slot])
/* state: the shortlist's (kcs_assign_shortlist_*), whose second word is the list's length */
#define KCS_ANNEAL_LIST_PARAMETERS , global const uint *list, global const uint *state

KCS_ASSIGN_TILES(kcs_assign_tiles_f32, float, KCS_ANNEAL_LOAD_F32, , n, KCS_ANNEAL_PLAIN)
KCS_ASSIGN_TILES(kcs_assign_tiles_f16, half, KCS_ANNEAL_LOAD_F16, , n, KCS_ANNEAL_PLAIN)
KCS_ASSIGN_TILES(kcs_assign_list_f32, float, KCS_ANNEAL_LOAD_F32, KCS_ANNEAL_LIST_PARAMETERS,
                 state[1], KCS_ANNEAL_LISTED)
KCS_ASSIGN_TILES(kcs_assign_list_f16, half, KCS_ANNEAL_LOAD_F16, KCS_ANNEAL_LIST_PARAMETERS,
                 state[1], KCS_ANNEAL_LISTED)

/* ---- assign, shortlist -------------------------------------------------------------- */

/* Zeroes the shortlist's first two words of state: the largest anchor norm's bits and the flagged count. */
kernel void kcs_assign_clear(global uint *words)
{
    words[get_global_id(0)] = 0u;
}

/* In state (see the shortlist pass): norms[j] = ||a_j||^2 (a work-item an
 * anchor), and the largest of them in state[0] (atomic_max on the bits of a non-negative float: they
 * order as the values do; order-free, deterministic). */
kernel void kcs_assign_anchor_norms(global const float *a, ulong m, ulong d, global uint *state)
{
    global float *norms = (global float *)(state + 4);
    global uint *largest_norm_bits = state;
    ulong j = get_global_id(0);
    if (j >= m)
        return;
    float sum = 0.0f;
    for (ulong k = 0; k < d; k++)
        sum = fma(a[j * d + k], a[j * d + k], sum);
    norms[j] = sum;
    atomic_max(largest_norm_bits, as_uint(sum));
}

/* A shortlist tile's local rows: padded by 4 floats so that float4 reads stay aligned. */
#define KCS_SHORTLIST_PITCH (KCS_ASSIGN_TILE + 4)
/* The tile-local point (anchor) of a work-item's i-th row (column): two runs
 * of 4, 64 apart, so that a work-item reads its 8 as two float4s. */
#define KCS_SHORTLIST_POSITION(coordinate, i) (((i) < 4 ? 0 : 64) + (coordinate) * 4 + ((i) & 3))
#ifndef KCS_SHORTLIST_DEPTH
/* Dimensions of a shortlist stage, 8 or 16: a work-item moves DEPTH / 8
 * float4s of each operand a stage. With 8, two buffers of both operands
 * (17 KB) and the final merge's arrays (9.5 KB) fit in OpenCL 1.2's 32 KB of
 * local memory; 16 (43.5 KB in all) halves the barriers, and the host builds
 * it where the device has the local memory (opencl/anneal.c). */
#define KCS_SHORTLIST_DEPTH 8
#endif
#if KCS_SHORTLIST_DEPTH != 8 && KCS_SHORTLIST_DEPTH != 16
#error "KCS_SHORTLIST_DEPTH is 8 or 16"
#endif
/* float4s of each operand a work-item moves a stage, and the float4s of a stage's row */
#define KCS_SHORTLIST_LOADS (KCS_SHORTLIST_DEPTH / 8)
#define KCS_SHORTLIST_ROW_VECTORS (KCS_SHORTLIST_DEPTH / 4)
/* Floats of one operand's stage (KCS_SHORTLIST_DEPTH rows of KCS_SHORTLIST_PITCH). */
#define KCS_SHORTLIST_STAGE (KCS_SHORTLIST_DEPTH * KCS_SHORTLIST_PITCH)
#if KCS_ASSIGN_TILE * KCS_ASSIGN_SIDE > 2 * KCS_SHORTLIST_STAGE
#error "the shortlist's final merge reuses the staging buffers: they are too small"
#endif
/* Stores a work-item's staged float4s (see the kernel) into buffer b,
 * transposed: float4 l of the points goes to staged[l], of the anchors to
 * staged[KCS_SHORTLIST_LOADS + l]. */
#define KCS_SHORTLIST_STORE(b, staged)                                                             \
    do {                                                                                           \
        _Pragma("unroll") for (int l = 0; l < KCS_SHORTLIST_LOADS; l++) {                          \
            local float *points_to = points + (b) * KCS_SHORTLIST_STAGE + staged_at[l];            \
            local float *anchors_to = anchors + (b) * KCS_SHORTLIST_STAGE + staged_at[l];          \
            float4 point = (staged)[l], anchor = (staged)[KCS_SHORTLIST_LOADS + l];                \
            points_to[0] = point.x;                                                                \
            points_to[KCS_SHORTLIST_PITCH] = point.y;                                              \
            points_to[2 * KCS_SHORTLIST_PITCH] = point.z;                                          \
            points_to[3 * KCS_SHORTLIST_PITCH] = point.w;                                          \
            anchors_to[0] = anchor.x;                                                              \
            anchors_to[KCS_SHORTLIST_PITCH] = anchor.y;                                            \
            anchors_to[2 * KCS_SHORTLIST_PITCH] = anchor.z;                                        \
            anchors_to[3 * KCS_SHORTLIST_PITCH] = anchor.w;                                        \
        }                                                                                          \
    } while (0)

#if KCS_ASSIGN_SIDE == 16 && KCS_ASSIGN_MICRO == 8
/* The shortlist pass: see the banner. Only for 16 x 16 work-items of 8 x 8
 * (the float4 reads assume it). */
/* Where the host caps the registers instead (KCS_SHORTLIST_REGISTER_CAP, NVIDIA's
 * compiler: opencl/anneal.c says why), the kernel leaves the work-group size unstated. */
#ifdef KCS_SHORTLIST_REGISTER_CAP
#define KCS_SHORTLIST_ATTRIBUTES
#else
#define KCS_SHORTLIST_ATTRIBUTES __attribute__((reqd_work_group_size(KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE, 1, 1)))
#endif
#define KCS_ASSIGN_SHORTLIST(NAME, POINT_T, LOAD, FOUR)                                            \
    KCS_SHORTLIST_ATTRIBUTES                                                                       \
    kernel void NAME(global const POINT_T *x, global const float *a, ulong n, ulong d, ulong m,    \
                     global uint *state, float margin_factor, float norm_inflation,                \
                     global int *idx, global float *dist, global uint *flagged, int vectors)       \
    {                                                                                              \
        /* state: the largest norm's bits, the flagged count, 2 words unused, the norms */         \
        global const float *norms = (global const float *)(state + 4);                             \
        global uint *flagged_count = state + 1;                                                    \
        /* Dimension k of point (anchor) p of the tile is element k * KCS_SHORTLIST_PITCH + p. */  \
        local float4 points4[2 * KCS_SHORTLIST_STAGE / 4];                                         \
        local float4 anchors4[2 * KCS_SHORTLIST_STAGE / 4];                                        \
        local float candidate_second[KCS_ASSIGN_TILE * KCS_ASSIGN_SIDE];                           \
        local float final_best[KCS_ASSIGN_TILE], final_second[KCS_ASSIGN_TILE];                    \
        local int final_index[KCS_ASSIGN_TILE];                                                    \
        local float *points = (local float *)points4;                                              \
        local float *anchors = (local float *)anchors4;                                            \
        uint id = get_local_id(0);                                                                 \
        uint column = id % KCS_ASSIGN_SIDE; /* which anchors of a tile */                          \
        uint line = id / KCS_ASSIGN_SIDE;   /* which points of the tile */                         \
        ulong point0 = (ulong)get_group_id(0) * KCS_ASSIGN_TILE;                                   \
        float best[8], second[8];                                                                  \
        int best_index[8];                                                                         \
        _Pragma("unroll") for (int i = 0; i < 8; i++) {                                            \
            best[i] = INFINITY;                                                                    \
            second[i] = INFINITY;                                                                  \
            best_index[i] = 0;                                                                     \
        }                                                                                          \
        /* Stage s (anchor tile s / stages, dimensions DEPTH (s % stages) on)                      \
         * is staged in buffer s % 2; work-item id moves float4s q = id + 256 l                    \
         * (l < KCS_SHORTLIST_LOADS) of each operand's stage: row q / (DEPTH /                     \
         * 4), dimensions 4 (q % (DEPTH / 4)) on, to column row of local rows                      \
         * 4 (q % (DEPTH / 4)) .. + 3 (transposed). Rows past n (m) repeat the                     \
         * last one: finite values whose results are never kept (such an                           \
         * anchor's norm is +inf, its value +inf, never nearer). */                                \
        uint stages = (uint)((d + KCS_SHORTLIST_DEPTH - 1) / KCS_SHORTLIST_DEPTH);                 \
        uint anchor_tiles = (uint)((m + KCS_ASSIGN_TILE - 1) / KCS_ASSIGN_TILE);                   \
        uint total = stages * anchor_tiles;                                                        \
        uint row[KCS_SHORTLIST_LOADS], part4[KCS_SHORTLIST_LOADS], staged_at[KCS_SHORTLIST_LOADS]; \
        global const POINT_T *point_row[KCS_SHORTLIST_LOADS];                                      \
        float4 staged[2 * KCS_SHORTLIST_LOADS];                                                    \
        _Pragma("unroll") for (int l = 0; l < KCS_SHORTLIST_LOADS; l++) {                          \
            uint q = id + l * KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE;                                   \
            row[l] = q / KCS_SHORTLIST_ROW_VECTORS;                                                \
            part4[l] = 4 * (q % KCS_SHORTLIST_ROW_VECTORS);                                        \
            staged_at[l] = part4[l] * KCS_SHORTLIST_PITCH + row[l];                                \
            point_row[l] = x + min(point0 + row[l], n - 1) * d;                                    \
        }                                                                                          \
        if (total > 0) {                                                                           \
            _Pragma("unroll") for (int l = 0; l < KCS_SHORTLIST_LOADS; l++) {                      \
                staged[l] = FOUR(point_row[l], part4[l], d, vectors);                              \
                staged[KCS_SHORTLIST_LOADS + l] =                                                  \
                    kcs_anneal_four_f32(a + min((ulong)row[l], m - 1) * d, part4[l], d, vectors);  \
            }                                                                                      \
            KCS_SHORTLIST_STORE(0, staged);                                                        \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        uint stage = 0;                                                                            \
        for (uint anchor_tile = 0; anchor_tile < anchor_tiles; anchor_tile++) {                    \
            ulong anchor0 = (ulong)anchor_tile * KCS_ASSIGN_TILE;                                  \
            float sums[8][8];                                                                      \
            _Pragma("unroll") for (int i = 0; i < 8; i++)                                          \
                _Pragma("unroll") for (int j = 0; j < 8; j++)                                      \
                    sums[i][j] = 0.0f;                                                             \
            for (uint k_stage = 0; k_stage < stages; k_stage++, stage++) {                         \
                uint buffer = stage & 1;                                                           \
                int more = stage + 1 < total;                                                      \
                if (more) { /* the next stage into registers while this one is computed */         \
                    uint next_tile = k_stage + 1 < stages ? anchor_tile : anchor_tile + 1;         \
                    ulong k0 = (ulong)(k_stage + 1 < stages ? k_stage + 1 : 0) * KCS_SHORTLIST_DEPTH;\
                    ulong next_anchor0 = (ulong)next_tile * KCS_ASSIGN_TILE;                       \
                    _Pragma("unroll") for (int l = 0; l < KCS_SHORTLIST_LOADS; l++) {              \
                        staged[l] = FOUR(point_row[l], k0 + part4[l], d, vectors);                 \
                        staged[KCS_SHORTLIST_LOADS + l] = kcs_anneal_four_f32(                     \
                            a + min(next_anchor0 + row[l], m - 1) * d, k0 + part4[l], d, vectors); \
                    }                                                                              \
                }                                                                                  \
                local const float4 *points_now = points4 + buffer * (KCS_SHORTLIST_STAGE / 4);     \
                local const float4 *anchors_now = anchors4 + buffer * (KCS_SHORTLIST_STAGE / 4);   \
                _Pragma("unroll") for (int k = 0; k < KCS_SHORTLIST_DEPTH; k++) {                  \
                    float4 x0 = points_now[(k * KCS_SHORTLIST_PITCH + line * 4) / 4];              \
                    float4 x1 = points_now[(k * KCS_SHORTLIST_PITCH + 64 + line * 4) / 4];         \
                    float4 a0 = anchors_now[(k * KCS_SHORTLIST_PITCH + column * 4) / 4];           \
                    float4 a1 = anchors_now[(k * KCS_SHORTLIST_PITCH + 64 + column * 4) / 4];      \
                    float xs[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};                \
                    float as[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};                \
                    _Pragma("unroll") for (int i = 0; i < 8; i++)                                  \
                        _Pragma("unroll") for (int j = 0; j < 8; j++)                              \
                            sums[i][j] = fma(xs[i], as[j], sums[i][j]);                            \
                }                                                                                  \
                if (more)                                                                          \
                    KCS_SHORTLIST_STORE(buffer ^ 1, staged);                                       \
                barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            }                                                                                      \
            /* Fold the tile: value ||a||^2 - 2 x.a, the anchors in increasing order */            \
            _Pragma("unroll") for (int j = 0; j < 8; j++) {                                        \
                ulong anchor = anchor0 + KCS_SHORTLIST_POSITION(column, j);                        \
                float norm = anchor < m ? norms[anchor] : INFINITY;                                \
                _Pragma("unroll") for (int i = 0; i < 8; i++) {                                    \
                    float value = fma(-2.0f, sums[i][j], norm);                                    \
                    int nearer = value < best[i];                                                  \
                    second[i] = nearer ? best[i] : fmin(second[i], value);                         \
                    best_index[i] = nearer ? (int)anchor : best_index[i];                          \
                    best[i] = nearer ? value : best[i];                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        /* The staging arrays are free (the last barrier above, or never used when                 \
         * d = 0): with candidate_second they hold every work-item's candidates,                   \
         * point by column; one work-item a point merges them. */                                  \
        local float *candidate = points;                                                           \
        local int *candidate_index = (local int *)anchors;                                         \
        _Pragma("unroll") for (int i = 0; i < 8; i++) {                                            \
            uint slot = KCS_SHORTLIST_POSITION(line, i) * KCS_ASSIGN_SIDE + column;                \
            candidate[slot] = best[i];                                                             \
            candidate_index[slot] = best_index[i];                                                 \
            candidate_second[slot] = second[i];                                                    \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        if (id < KCS_ASSIGN_TILE) {                                                                \
            float nearest = candidate[id * KCS_ASSIGN_SIDE];                                       \
            int nearest_index = candidate_index[id * KCS_ASSIGN_SIDE];                             \
            float runner_up = candidate_second[id * KCS_ASSIGN_SIDE];                              \
            for (int c = 1; c < KCS_ASSIGN_SIDE; c++) {                                            \
                float other = candidate[id * KCS_ASSIGN_SIDE + c];                                 \
                int other_index = candidate_index[id * KCS_ASSIGN_SIDE + c];                       \
                float other_second = candidate_second[id * KCS_ASSIGN_SIDE + c];                   \
                if (other < nearest || (other == nearest && other_index < nearest_index)) {        \
                    runner_up = fmin(other_second, nearest);                                       \
                    nearest = other;                                                               \
                    nearest_index = other_index;                                                   \
                } else {                                                                           \
                    runner_up = fmin(runner_up, other);                                            \
                }                                                                                  \
            }                                                                                      \
            final_best[id] = nearest;                                                              \
            final_second[id] = runner_up;                                                          \
            final_index[id] = nearest_index;                                                       \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        /* The direct distance to the chosen anchor and ||x||^2: KCS_ASSIGN_SIDE                   \
         * work-items a point, each every KCS_ASSIGN_SIDE-th dimension (neighbours                 \
         * read neighbouring elements), partial sums into the staging arrays. */                   \
        uint part = id % KCS_ASSIGN_SIDE;                                                          \
        for (uint p = id / KCS_ASSIGN_SIDE; p < KCS_ASSIGN_TILE; p += KCS_ASSIGN_SIDE) {           \
            ulong point = point0 + p;                                                              \
            float distance = 0.0f, square_norm = 0.0f;                                             \
            if (point < n) {                                                                       \
                global const float *anchor_row = a + (ulong)final_index[p] * d;                    \
                for (ulong k = part; k < d; k += KCS_ASSIGN_SIDE) {                                \
                    float value = LOAD(x, point * d + k);                                          \
                    float difference = value - anchor_row[k];                                      \
                    distance = fma(difference, difference, distance);                              \
                    square_norm = fma(value, value, square_norm);                                  \
                }                                                                                  \
            }                                                                                      \
            points[p * KCS_ASSIGN_SIDE + part] = distance;                                         \
            anchors[p * KCS_ASSIGN_SIDE + part] = square_norm;                                     \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        if (id < KCS_ASSIGN_TILE && point0 + id < n) {                                             \
            float distance = 0.0f, square_norm = 0.0f;                                             \
            for (int c = 0; c < KCS_ASSIGN_SIDE; c++) {                                            \
                distance += points[id * KCS_ASSIGN_SIDE + c];                                      \
                square_norm += anchors[id * KCS_ASSIGN_SIDE + c];                                  \
            }                                                                                      \
            float largest_norm = sqrt(as_float(state[0])) * norm_inflation;              \
            float point_norm = sqrt(square_norm) * norm_inflation;                                 \
            float spread = largest_norm * largest_norm + 2.0f * point_norm * largest_norm;         \
            float margin = margin_factor * spread + 1e-30f;                                        \
            ulong point = point0 + id;                                                             \
            idx[point] = final_index[id];                                                          \
            dist[point] = distance;                                                                \
            /* NaN fails the test too: such a point is assigned in full */                         \
            if (!(final_second[id] > final_best[id] + margin))                                     \
                flagged[atomic_inc(flagged_count)] = (uint)point;                                  \
        }                                                                                          \
    }

KCS_ASSIGN_SHORTLIST(kcs_assign_shortlist_f32, float, KCS_ANNEAL_LOAD_F32, kcs_anneal_four_f32)
KCS_ASSIGN_SHORTLIST(kcs_assign_shortlist_f16, half, KCS_ANNEAL_LOAD_F16, kcs_anneal_four_f16)
#endif

/* ---- reduce ------------------------------------------------------------------- */

/* Counts (scatter 0) or places (scatter 1) the points of work-group g's chunk
 * [g chunk, (g + 1) chunk) clipped to n, in sub-blocks of the local size;
 * sorts (local) holds a sub-block's anchors. sorted holds offsets (m), then
 * order (n), one buffer for both. An index outside [0, m) breaks
 * the op's precondition; such a point is counted nowhere rather than writing
 * out of bounds. */
kernel void kcs_reduce_walk(global const int *idx, ulong n, uint m, ulong chunk,
                            global int *partial, global int *sorted, int scatter,
                            local int *sorts)
{
    global const int *offsets = sorted;
    global int *order = sorted + m;
    uint id = get_local_id(0), size = get_local_size(0);
    ulong group = get_group_id(0);
    global int *mine = partial + group * m;
    if (!scatter) {
        for (uint j = id; j < m; j += size)
            mine[j] = 0;
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
    ulong begin = min(n, group * chunk), end = min(n, begin + chunk);
    for (ulong base = begin; base < end; base += size) {
        ulong point = base + id;
        int anchor = -1;
        if (point < end) {
            int value = idx[point];
            anchor = value >= 0 && (uint)value < m ? value : -1;
        }
        sorts[id] = anchor;
        barrier(CLK_LOCAL_MEM_FENCE);
        int rank = 0, last = 1;
        for (uint s = 0; s < size; s++)
            if (sorts[s] == anchor) {
                rank += s < id;
                last &= s <= id;
            }
        /* Every work-item reads its anchor's place before the last one moves it. */
        int place = scatter && anchor >= 0 ? offsets[anchor] + mine[anchor] + rank : 0;
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (anchor >= 0) {
            if (scatter)
                order[place] = (int)point;
            if (last)
                mine[anchor] += rank + 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}

/* count[j] = the sum over groups of partial[g][j]; partial[g][j] becomes the
 * sum over the groups before g (where g's points of anchor j begin). */
kernel void kcs_reduce_anchor_totals(global int *partial, uint groups, uint m, global int *count)
{
    uint j = get_global_id(0);
    if (j >= m)
        return;
    int running = 0;
    for (uint g = 0; g < groups; g++) {
        int here = partial[(ulong)g * m + j];
        partial[(ulong)g * m + j] = running;
        running += here;
    }
    count[j] = running;
}

/* One work-group: offsets[j] = count[0] + ... + count[j - 1] (the first m
 * ints of sorted), a scan of the local size at a time (Hillis and Steele)
 * carried from one to the next. */
kernel void kcs_reduce_offsets(global const int *count, uint m, global int *offsets,
                               local int *scratch)
{
    uint id = get_local_id(0), size = get_local_size(0);
    int carry = 0;
    for (uint base = 0; base < m; base += size) {
        uint j = base + id;
        int value = j < m ? count[j] : 0;
        scratch[id] = value;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint width = 1; width < size; width *= 2) {
            int add = id >= width ? scratch[id - width] : 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            scratch[id] += add;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (j < m)
            offsets[j] = carry + scratch[id] - value;
        carry += scratch[size - 1];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

/* The sum of value over the slots of a lane (work-items lane, lane + lanes,
 * ...), returned to every work-item. Every work-item must call it. */
static float kcs_reduce_slot_sum(local float *scratch, float value, uint lanes)
{
    uint id = get_local_id(0), slot = id / lanes, slots = get_local_size(0) / lanes;
    scratch[id] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint width = slots / 2; width > 0; width /= 2) {
        if (slot < width)
            scratch[id] += scratch[id + width * lanes];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float result = scratch[id % lanes];
    barrier(CLK_LOCAL_MEM_FENCE);
    return result;
}

/* Work-group j: mean[j] and var[j] from the points order[offsets[j] ..
 * offsets[j] + count[j]) (sorted holds offsets, then order), lanes (a power
 * of two dividing the local size) work-items across the dimensions. */
#define KCS_REDUCE_STATS(NAME, POINT_T, LOAD)                                                      \
    kernel void NAME(global const POINT_T *x, ulong d, uint m, global const int *count,            \
                     global const int *sorted, uint lanes, global float *mean,                     \
                     global float *var, local float *scratch)                                      \
    {                                                                                              \
        uint id = get_local_id(0);                                                                 \
        uint lane = id % lanes;                                                                    \
        int slot = (int)(id / lanes), slots = (int)(get_local_size(0) / lanes);                    \
        int stride = slots * KCS_REDUCE_BLOCK;                                                     \
        ulong anchor = get_group_id(0);                                                            \
        int points = count[anchor];                                                                \
        global const int *members = sorted + m + sorted[anchor];                                   \
        for (ulong k0 = 0; k0 < d; k0 += lanes) {                                                  \
            ulong k = k0 + lane;                                                                   \
            float total = 0.0f;                                                                    \
            for (int b = slot; k < d && b < points; b += stride) {                                 \
                int b_end = min(points, b + stride);                                               \
                float block = 0.0f;                                                                \
                for (int q = b; q < b_end; q += slots)                                             \
                    block += LOAD(x, (ulong)members[q] * d + k);                                   \
                total += block;                                                                    \
            }                                                                                      \
            float sum = kcs_reduce_slot_sum(scratch, total, lanes);                                \
            float average = points > 0 ? sum / (float)points : 0.0f;                               \
            total = 0.0f;                                                                          \
            for (int b = slot; k < d && b < points; b += stride) {                                 \
                int b_end = min(points, b + stride);                                               \
                float block = 0.0f;                                                                \
                for (int q = b; q < b_end; q += slots) {                                           \
                    float deviation = LOAD(x, (ulong)members[q] * d + k) - average;                \
                    block += deviation * deviation;                                                \
                }                                                                                  \
                total += block;                                                                    \
            }                                                                                      \
            float squares = kcs_reduce_slot_sum(scratch, total, lanes);                            \
            if (slot == 0 && k < d) {                                                              \
                mean[anchor * d + k] = average;                                                    \
                var[anchor * d + k] = points > 0 ? squares / (float)points : 0.0f;                 \
            }                                                                                      \
        }                                                                                          \
    }

KCS_REDUCE_STATS(kcs_reduce_stats_f32, float, KCS_ANNEAL_LOAD_F32)
KCS_REDUCE_STATS(kcs_reduce_stats_f16, half, KCS_ANNEAL_LOAD_F16)

/* ---- reduce, sorted-welford: the counting sort by tiles --------------------------- */

/* The tile sort, one launch: work-group t sorts the points of tile t (points
 * t KCS_REDUCE_SORT_TILE .. + KCS_REDUCE_SORT_TILE, clipped to n) by anchor,
 * stably, into its own stretch order[t KCS_REDUCE_SORT_TILE ..], and writes
 * where each anchor's run of the tile begins in that stretch,
 * tile_starts[t (m + 1) + j] for j in [0, m] (entry m: the tile's points
 * with an index in [0, m)). No table or scan spans the tiles: an anchor's
 * points are its runs in the tiles, in tile order (index order), which the
 * statistics kernel gathers. The work-items form KCS_REDUCE_ITEMS / 32 rows
 * of 32; row r takes the r-th share of the tile, in steps of 32 consecutive
 * points. Each row first counts its share's anchors in place[r][j] (local
 * atomics: they only count, in any order); work-item i then owns the anchors
 * i per .. (i + 1) per - 1, sums their counts over the rows, and a
 * work-group-wide exclusive sum over the work-items gives each anchor's run
 * start, from which place[r][j] becomes where row r's first point of anchor
 * j goes. At each step a work-item's rank among the step's points of its
 * anchor is how many of the row's earlier 32 share it (32 comparisons in
 * local memory: what CUDA's __match_any_sync gives a warp, without
 * subgroups), and the first of them then advances the place by their number.
 * place is (rows x m) ints of local memory; an index outside [0, m) is
 * sorted nowhere. */
__attribute__((reqd_work_group_size(KCS_REDUCE_ITEMS, 1, 1)))
kernel void kcs_reduce_tile_sort(global const int *idx, ulong n, uint m, global int *tile_starts,
                                 global int *order, local int *place)
{
    local int step_keys[KCS_REDUCE_ITEMS];
    local int owned_sums[KCS_REDUCE_ITEMS];
    const uint rows = KCS_REDUCE_ITEMS / 32;
    const int steps = KCS_REDUCE_SORT_TILE / KCS_REDUCE_ITEMS;
    uint id = get_local_id(0), lane = id % 32, row = id / 32;
    ulong tile = get_group_id(0);
    local int *mine = place + row * m;
    for (uint j = id; j < m * rows; j += KCS_REDUCE_ITEMS)
        place[j] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong begin = tile * KCS_REDUCE_SORT_TILE + (ulong)row * (KCS_REDUCE_SORT_TILE / rows);
    int key[KCS_REDUCE_SORT_TILE / KCS_REDUCE_ITEMS];
    _Pragma("unroll") for (int s = 0; s < steps; s++) {
        ulong point = begin + (ulong)s * 32 + lane;
        int value = point < n ? idx[point] : -1;
        key[s] = value >= 0 && (uint)value < m ? value : -1;
    }
    _Pragma("unroll") for (int s = 0; s < steps; s++)
        if (key[s] >= 0)
            atomic_inc(&mine[key[s]]);
    barrier(CLK_LOCAL_MEM_FENCE);
    /* the rows' counts -> the anchors' runs in the tile -> the rows' first places */
    uint per = (m + KCS_REDUCE_ITEMS - 1) / KCS_REDUCE_ITEMS;
    uint first = min(m, id * per), last = min(m, first + per);
    int owned = 0;
    for (uint j = first; j < last; j++)
        for (uint r = 0; r < rows; r++)
            owned += place[r * m + j];
    owned_sums[id] = owned;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint width = 1; width < KCS_REDUCE_ITEMS; width *= 2) { /* inclusive (Hillis and Steele) */
        int add = id >= width ? owned_sums[id - width] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        owned_sums[id] += add;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int next = owned_sums[id] - owned;
    global int *starts = tile_starts + tile * (m + 1);
    for (uint j = first; j < last; j++) {
        starts[j] = next;
        for (uint r = 0; r < rows; r++) {
            int here = place[r * m + j];
            place[r * m + j] = next;
            next += here;
        }
    }
    if (id == KCS_REDUCE_ITEMS - 1)
        starts[m] = owned_sums[id];
    global int *stretch = order + tile * KCS_REDUCE_SORT_TILE;
    _Pragma("unroll") for (int s = 0; s < steps; s++) {
        step_keys[id] = key[s];
        barrier(CLK_LOCAL_MEM_FENCE);
        int rank = 0, peers = 0;
        for (uint l = 0; l < 32; l++) {
            int same = step_keys[row * 32 + l] == key[s];
            rank += same && l < lane;
            peers += same;
        }
        int at = key[s] >= 0 ? mine[key[s]] + rank : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (key[s] >= 0) {
            stretch[at] = (int)(begin + (ulong)s * 32 + lane);
            if (rank == 0)
                mine[key[s]] = at + peers;
        }
    }
}

/* ---- reduce, sorted-welford: the statistics ---------------------------------------- */

/* Runs of an anchor the statistics kernel gathers at most: its run in each
 * tile of the tile sort (the host uses the tile sort only up to this many
 * tiles, else the walk sort, a single run), KCS_REDUCE_RUNS_EACH a work-item. */
#define KCS_REDUCE_RUNS_EACH 4
#define KCS_REDUCE_RUNS (KCS_REDUCE_RUNS_EACH * KCS_REDUCE_ITEMS)

#ifdef cl_khr_fp64

/* 1 / value (a count, 1 <= value < 2^31) to within an ulp or two of double:
 * the correctly rounded float quotient (the build asks for it) and two Newton
 * steps, so that no double division is issued per point. */
static double kcs_reduce_reciprocal(double value)
{
    double r = (double)(1.0f / (float)value);
    r = r * fma(-value, r, 2.0);
    r = r * fma(-value, r, 2.0);
    return r;
}

/* One Welford update of (mean, m2) by value, inverse = 1 / (points so far). */
#define KCS_REDUCE_WELFORD_STEP(mean, m2, value, inverse)                                          \
    do {                                                                                           \
        double delta_ = (double)(value) - (mean);                                                  \
        (mean) = fma(delta_, (inverse), (mean));                                                   \
        (m2) = fma(delta_, (double)(value) - (mean), (m2));                                        \
    } while (0)

/* Where position p of the anchor's list lies in order: in the last run r
 * whose first position run_first[r] is at most p (empty runs share their
 * successor's first position, and runs past the tiles start at the total,
 * above every p asked for). */
static uint kcs_reduce_run_position(local const uint *run_first, local const uint *run_begin, uint p)
{
    uint low = 0, high = KCS_REDUCE_RUNS; /* run_first[low] <= p < run_first[high] */
    while (high - low > 1) {
        uint middle = (low + high) / 2;
        if (run_first[middle] <= p)
            low = middle;
        else
            high = middle;
    }
    return run_begin[low] + (p - run_first[low]);
}

/* Work-group j: count[j], mean[j] and var[j] from one read of each of the
 * anchor's points: see the banner. Its points are its runs in the tiles,
 * tile t's at order[t tile_points + tile_starts[t (m + 1) + j] ..
 * tile_starts[t (m + 1) + j + 1]), order_first 0; from the walk sort (counted:
 * count[j] already written) a single run, order[order_first + tile_starts[j]
 * .. + count[j]).
 * The work-group sums the runs' lengths into their first positions in the
 * anchor's list, then takes the list in batches of KCS_REDUCE_ITEMS
 * positions, double-buffered in local memory (a work-item finds one point
 * number by a binary search over the runs while the rows read the previous
 * batch's points). The work-items form KCS_REDUCE_ITEMS / 32 rows of 32; a
 * work-item takes 4 dimensions of a panel of 128, row r the list's points
 * r, r + rows, ..., KCS_REDUCE_UNROLL of them in flight. */
#define KCS_REDUCE_WELFORD(NAME, POINT_T, FOUR)                                                    \
    __attribute__((reqd_work_group_size(KCS_REDUCE_ITEMS, 1, 1)))                                  \
    kernel void NAME(global const POINT_T *x, ulong d, uint m, global const int *tile_starts,      \
                     uint tiles, ulong tile_points, int counted, global const int *order,          \
                     ulong order_first, global int *count, int vectors, global float *mean,       \
                     global float *var)                                                            \
    {                                                                                              \
        const int rows = KCS_REDUCE_ITEMS / 32;                                                    \
        local double row_mean[KCS_REDUCE_ITEMS / 32][128];                                         \
        local double row_m2[KCS_REDUCE_ITEMS / 32][128];                                           \
        local uint run_first[KCS_REDUCE_RUNS + 1], run_begin[KCS_REDUCE_RUNS];                     \
        local uint owned_sums[KCS_REDUCE_ITEMS];                                                   \
        local int ids[2][KCS_REDUCE_ITEMS];                                                        \
        uint id = get_local_id(0), lane = id % 32;                                                 \
        int row = (int)(id / 32);                                                                  \
        ulong anchor = get_group_id(0);                                                            \
        /* the runs: work-item id owns runs KCS_REDUCE_RUNS_EACH id .. + RUNS_EACH - 1 */          \
        uint length[KCS_REDUCE_RUNS_EACH], owned = 0;                                              \
        _Pragma("unroll") for (int e = 0; e < KCS_REDUCE_RUNS_EACH; e++) {                         \
            /* Each value is formed in a private variable and stored once: a store of the     \
             * default followed by a conditional store of the value is what LLVM 14/15       \
             * reorders under POCL 3's parallel work-item loops (docs/canaries.md). */         \
            uint tile = KCS_REDUCE_RUNS_EACH * id + e;                                             \
            uint run_length = 0, begin = 0;                                                        \
            if (tile < tiles) {                                                                    \
                global const int *starts = tile_starts + (ulong)tile * (m + 1);                    \
                uint start = (uint)starts[anchor];                                                 \
                run_length = counted ? (uint)count[anchor] : (uint)starts[anchor + 1] - start;     \
                begin = (uint)(order_first + tile * tile_points) + start;                          \
            }                                                                                      \
            length[e] = run_length;                                                                \
            run_begin[tile] = begin;                                                               \
            owned += run_length;                                                                   \
        }                                                                                          \
        owned_sums[id] = owned;                                                                    \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (uint width = 1; width < KCS_REDUCE_ITEMS; width *= 2) { /* inclusive sum */           \
            uint add = id >= width ? owned_sums[id - width] : 0;                                   \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            owned_sums[id] += add;                                                                 \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        uint first = owned_sums[id] - owned;                                                       \
        _Pragma("unroll") for (int e = 0; e < KCS_REDUCE_RUNS_EACH; e++) {                         \
            run_first[KCS_REDUCE_RUNS_EACH * id + e] = first;                                      \
            first += length[e];                                                                    \
        }                                                                                          \
        const uint points_total = owned_sums[KCS_REDUCE_ITEMS - 1];                                \
        const int points = (int)points_total;                                                      \
        if (id == 0) {                                                                             \
            run_first[KCS_REDUCE_RUNS] = points_total;                                             \
            if (!counted)                                                                          \
                count[anchor] = points;                                                            \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (ulong k0 = 0; k0 < d; k0 += 128) {                                                    \
            ulong k = k0 + 4 * lane;                                                               \
            double mu[4] = {0.0, 0.0, 0.0, 0.0}, m2[4] = {0.0, 0.0, 0.0, 0.0};                     \
            int seen = 0;                                                                          \
            int buffer = 0;                                                                        \
            if (id < points_total)                                                                 \
                ids[0][id] = order[kcs_reduce_run_position(run_first, run_begin, id)];             \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            for (int base = 0; base < points; base += KCS_REDUCE_ITEMS, buffer ^= 1) {             \
                /* the next batch: that buffer was last read before the previous barrier */        \
                uint next = (uint)base + KCS_REDUCE_ITEMS + id;                                    \
                if (next < points_total)                                                           \
                    ids[buffer ^ 1][id] = order[kcs_reduce_run_position(run_first, run_begin, next)];\
                int batch = min(points - base, KCS_REDUCE_ITEMS);                                  \
                local const int *members = ids[buffer];                                            \
                /* row r: positions r, r + rows, ... of the batch (base is a multiple of rows) */  \
                int q = row;                                                                       \
                for (; q + (KCS_REDUCE_UNROLL - 1) * rows < batch; q += KCS_REDUCE_UNROLL * rows) {\
                    float4 v[KCS_REDUCE_UNROLL];                                                   \
                    _Pragma("unroll") for (int u = 0; u < KCS_REDUCE_UNROLL; u++)                  \
                        v[u] = FOUR(x + (ulong)members[q + u * rows] * d, k, d, vectors);          \
                    _Pragma("unroll") for (int u = 0; u < KCS_REDUCE_UNROLL; u++) {                \
                        seen++;                                                                    \
                        double inverse = kcs_reduce_reciprocal((double)seen);                      \
                        KCS_REDUCE_WELFORD_STEP(mu[0], m2[0], v[u].x, inverse);                    \
                        KCS_REDUCE_WELFORD_STEP(mu[1], m2[1], v[u].y, inverse);                    \
                        KCS_REDUCE_WELFORD_STEP(mu[2], m2[2], v[u].z, inverse);                    \
                        KCS_REDUCE_WELFORD_STEP(mu[3], m2[3], v[u].w, inverse);                    \
                    }                                                                              \
                }                                                                                  \
                for (; q < batch; q += rows) {                                                     \
                    float4 v = FOUR(x + (ulong)members[q] * d, k, d, vectors);                     \
                    seen++;                                                                        \
                    double inverse = kcs_reduce_reciprocal((double)seen);                          \
                    KCS_REDUCE_WELFORD_STEP(mu[0], m2[0], v.x, inverse);                           \
                    KCS_REDUCE_WELFORD_STEP(mu[1], m2[1], v.y, inverse);                           \
                    KCS_REDUCE_WELFORD_STEP(mu[2], m2[2], v.z, inverse);                           \
                    KCS_REDUCE_WELFORD_STEP(mu[3], m2[3], v.w, inverse);                           \
                }                                                                                  \
                barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            }                                                                                      \
            _Pragma("unroll") for (int e = 0; e < 4; e++) {                                        \
                row_mean[row][4 * lane + e] = mu[e];                                               \
                row_m2[row][4 * lane + e] = m2[e];                                                 \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
            /* Chan, Golub and LeVeque's merge of the rows' states, in row order */                \
            if (id < 128 && k0 + id < d) {                                                         \
                double merged_mean = 0.0, merged_m2 = 0.0, merged_points = 0.0;                    \
                for (int r = 0; r < rows; r++) {                                                   \
                    double here = (double)(points > r ? (points - r + rows - 1) / rows : 0);       \
                    if (here == 0.0)                                                               \
                        continue;                                                                  \
                    double total = merged_points + here;                                           \
                    double delta = row_mean[r][id] - merged_mean;                                  \
                    double share = here / total;                                                   \
                    merged_mean = merged_points == 0.0 ? row_mean[r][id]                           \
                                                       : merged_mean + delta * share;              \
                    merged_m2 += row_m2[r][id] + delta * delta * (merged_points * share);          \
                    merged_points = total;                                                         \
                }                                                                                  \
                ulong at = anchor * d + k0 + id;                                                   \
                mean[at] = points > 0 ? (float)merged_mean : 0.0f;                                 \
                var[at] = points > 0 ? (float)(merged_m2 / (double)points) : 0.0f;                 \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE); /* the rows' states and ids are reused by the next panel */\
        }                                                                                          \
    }

KCS_REDUCE_WELFORD(kcs_reduce_welford_f32, float, kcs_anneal_four_f32)
KCS_REDUCE_WELFORD(kcs_reduce_welford_f16, half, kcs_anneal_four_f16)

#endif

/* ---- update ------------------------------------------------------------------- */

kernel void kcs_update(global const float *a, global const float *v, global const float *mean,
                       global const int *count, ulong m, ulong d, float momentum, float rate,
                       global float *a_next, global float *v_next)
{
    ulong p = get_global_id(0);
    if (p >= m * d)
        return;
    float anchor = a[p];
    float velocity = count[p / d] > 0 ? momentum * v[p] + (mean[p] - anchor) : momentum * v[p];
    v_next[p] = velocity;
    a_next[p] = anchor + rate * velocity;
}

/* ---- energy ------------------------------------------------------------------- */

#ifdef cl_khr_fp64

/* The sum of value over the work-group (a power of two in size), in every work-item. */
static double kcs_energy_group_sum(local double *scratch, double value)
{
    uint id = get_local_id(0);
    scratch[id] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint width = get_local_size(0) / 2; width > 0; width /= 2) {
        if (id < width)
            scratch[id] += scratch[id + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

/* Work-item g's share of sum values[i] (i = g, g + G, ...; G the global
 * size) in four running sums: at most ceil(count / 4G) additions each. */
#define KCS_ENERGY_STRIDED_SUM(NAME, T)                                                            \
    static double NAME(global const T *values, ulong count)                                        \
    {                                                                                              \
        ulong stride = get_global_size(0), i = get_global_id(0);                                   \
        double sum0 = 0.0, sum1 = 0.0, sum2 = 0.0, sum3 = 0.0;                                     \
        for (; i + 3 * stride < count; i += 4 * stride) {                                          \
            sum0 += (double)values[i];                                                             \
            sum1 += (double)values[i + stride];                                                    \
            sum2 += (double)values[i + 2 * stride];                                                \
            sum3 += (double)values[i + 3 * stride];                                                \
        }                                                                                          \
        for (; i < count; i += stride)                                                             \
            sum0 += (double)values[i];                                                             \
        return (sum0 + sum1) + (sum2 + sum3);                                                      \
    }

KCS_ENERGY_STRIDED_SUM(kcs_energy_strided_f32, float)
KCS_ENERGY_STRIDED_SUM(kcs_energy_strided_f64, double)

/* partials[group] = the group's share of sum dist[i]. */
kernel void kcs_energy_partials(global const float *dist, ulong n, global double *partials,
                                local double *scratch)
{
    double sum = kcs_energy_group_sum(scratch, kcs_energy_strided_f32(dist, n));
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = sum;
}

/* One work-group: e = (sum of partials) / n in double, rounded once to float
 * (n = 0 gives 0 / 0, NaN, still written). */
kernel void kcs_energy_finish(global const double *partials, ulong count, ulong n,
                              global float *e, local double *scratch)
{
    double sum = kcs_energy_group_sum(scratch, kcs_energy_strided_f64(partials, count));
    if (get_local_id(0) == 0)
        e[0] = (float)(sum / (double)n);
}

#endif
