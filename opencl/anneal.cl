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

/* ---- assign ------------------------------------------------------------------- */

#define KCS_ASSIGN_TILES(NAME, POINT_T, LOAD)                                                      \
    __attribute__((reqd_work_group_size(KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE, 1, 1)))                 \
    kernel void NAME(global const POINT_T *x, global const float *a, ulong n, ulong d,             \
                     ulong m, global int *idx, global float *dist)                                 \
    {                                                                                              \
        /* Dimension k of point (anchor) p of the tile is element k * KCS_ASSIGN_PITCH             \
         * + p. Flat, because the final merge reuses each array whole: indexing a                  \
         * [DEPTH][PITCH] array through a pointer to its first row past that row is                \
         * undefined (Oclgrind reported it). */                                                    \
        local float points[KCS_ASSIGN_DEPTH * KCS_ASSIGN_PITCH];                                   \
        local float anchors[KCS_ASSIGN_DEPTH * KCS_ASSIGN_PITCH];                                  \
        uint id = get_local_id(0);                                                                 \
        uint column = id % KCS_ASSIGN_SIDE; /* which anchors of a tile */                          \
        uint line = id / KCS_ASSIGN_SIDE;   /* which points of the tile */                         \
        ulong point0 = (ulong)get_group_id(0) * KCS_ASSIGN_TILE;                                   \
        float best[KCS_ASSIGN_MICRO];                                                              \
        int best_index[KCS_ASSIGN_MICRO];                                                          \
        _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++) {                             \
            best[i] = INFINITY;                                                                    \
            best_index[i] = 0;                                                                     \
        }                                                                                          \
        for (ulong anchor0 = 0; anchor0 < m; anchor0 += KCS_ASSIGN_TILE) {                         \
            float sums[KCS_ASSIGN_MICRO][KCS_ASSIGN_MICRO];                                        \
            _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                           \
                _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++)                       \
                    sums[i][j] = 0.0f;                                                             \
            for (ulong k0 = 0; k0 < d; k0 += KCS_ASSIGN_DEPTH) {                                   \
                for (uint e = id; e < KCS_ASSIGN_TILE * KCS_ASSIGN_DEPTH;                          \
                     e += KCS_ASSIGN_SIDE * KCS_ASSIGN_SIDE) {                                     \
                    uint p = e / KCS_ASSIGN_DEPTH, k = e % KCS_ASSIGN_DEPTH;                       \
                    ulong dimension = k0 + k, point = point0 + p, anchor = anchor0 + p;            \
                    points[k * KCS_ASSIGN_PITCH + p] =                                             \
                        point < n && dimension < d ? LOAD(x, point * d + dimension) : 0.0f;        \
                    anchors[k * KCS_ASSIGN_PITCH + p] =                                            \
                        anchor < m && dimension < d ? a[anchor * d + dimension] : 0.0f;            \
                }                                                                                  \
                barrier(CLK_LOCAL_MEM_FENCE);                                                      \
                for (int k = 0; k < KCS_ASSIGN_DEPTH; k++) {                                       \
                    float xs[KCS_ASSIGN_MICRO], as[KCS_ASSIGN_MICRO];                              \
                    _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                   \
                        xs[i] = points[k * KCS_ASSIGN_PITCH + line + i * KCS_ASSIGN_SIDE];         \
                    _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++)                   \
                        as[j] = anchors[k * KCS_ASSIGN_PITCH + column + j * KCS_ASSIGN_SIDE];      \
                    _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                   \
                        _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++) {             \
                            float difference = xs[i] - as[j];                                      \
                            sums[i][j] += difference * difference;                                 \
                        }                                                                          \
                }                                                                                  \
                barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            }                                                                                      \
            _Pragma("unroll") for (int j = 0; j < KCS_ASSIGN_MICRO; j++) {                         \
                ulong anchor = anchor0 + column + (ulong)j * KCS_ASSIGN_SIDE;                      \
                _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++)                       \
                    if (anchor < m && sums[i][j] < best[i]) {                                      \
                        best[i] = sums[i][j];                                                      \
                        best_index[i] = (int)anchor;                                               \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
        /* The staging arrays are free (the last barrier above, or never used when */              \
        /* d = 0): they now hold every work-item's candidates, point by column.    */              \
        local float *candidate = points;                                                           \
        local int *candidate_index = (local int *)anchors;                                         \
        _Pragma("unroll") for (int i = 0; i < KCS_ASSIGN_MICRO; i++) {                             \
            uint slot = (line + i * KCS_ASSIGN_SIDE) * KCS_ASSIGN_SIDE + column;                   \
            candidate[slot] = best[i];                                                             \
            candidate_index[slot] = best_index[i];                                                 \
        }                                                                                          \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        if (id < KCS_ASSIGN_TILE && point0 + id < n) {                                             \
            float nearest = candidate[id * KCS_ASSIGN_SIDE];                                       \
            int nearest_index = candidate_index[id * KCS_ASSIGN_SIDE];                             \
            for (int c = 1; c < KCS_ASSIGN_SIDE; c++) {                                            \
                float other = candidate[id * KCS_ASSIGN_SIDE + c];                                 \
                int other_index = candidate_index[id * KCS_ASSIGN_SIDE + c];                       \
                if (other < nearest || (other == nearest && other_index < nearest_index)) {        \
                    nearest = other;                                                               \
                    nearest_index = other_index;                                                   \
                }                                                                                  \
            }                                                                                      \
            idx[point0 + id] = nearest_index;                                                      \
            dist[point0 + id] = nearest;                                                           \
        }                                                                                          \
    }

KCS_ASSIGN_TILES(kcs_assign_tiles_f32, float, KCS_ANNEAL_LOAD_F32)
KCS_ASSIGN_TILES(kcs_assign_tiles_f16, half, KCS_ANNEAL_LOAD_F16)

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
