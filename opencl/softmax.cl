/* softmax.cl: row-wise softmax over the last axis, as OpenCL C 1.2 kernels (docs/softmax.md).
 *
 *     y[r][k] = exp(x[r][k] - M_r) / sum_l exp(x[r][l] - M_r),   M_r = max_l x[r][l]
 *
 * Precision. f32 in float, f64 in double (cl_khr_fp64; the f64 kernels exist
 * only where the device offers it). f16 and bf16 are storage only: each
 * element is widened exactly to float as it is loaded (vload_half, or the
 * bf16 shift of half.cl), everything below runs in float exactly as for f32
 * (the 16-bit terms, sums and held vectors are floats), and each output is
 * rounded once as it is stored (vstore_half_rte, kcs_bf16_from_float): the
 * one rounding docs/softmax.md allows. No kernel keeps a term exp(x - M) in
 * the 16-bit type, which would round it before the division. exp is the built-in exp, 3 ulp in the
 * full profile, the allowance the bound is built on: never native_exp, and
 * the program is built without -cl-fast-relaxed-math. The division is one
 * correctly rounded reciprocal per row (the build passes
 * -cl-fp32-correctly-rounded-divide-sqrt; double division is always
 * correctly rounded) and one product per element: the two roundings the
 * bound counts.
 *
 * Special values need no special path. M is taken with fmax, which ignores
 * NaN; -inf entries contribute exactly 0 (masked by a select, so that an
 * entry of -inf is 0 also before a finite maximum has been seen); a NaN, or
 * a +inf (through +inf - +inf), makes the row sum NaN and so every element
 * of the row; a row of nothing but -inf has M = -inf and sum 0, and each
 * element is 0 * (1/0) = NaN. All three as docs/softmax.md asks.
 *
 * Three shapes, each a row of the backend's kernel table (opencl/softmax.c
 * chooses their sizes):
 *   group-registers: kcs_softmax_registers_<type>_v<V>. A row belongs to
 *     row_items work-items (a power of two; a work-group holds one row or
 *     several short ones), and each work-item keeps V vectors of four of the
 *     row's elements in registers: vector c of item t holds elements
 *     4 (c row_items + t) .. + 3, so neighbouring work-items read
 *     neighbouring 16-byte pieces. The row is read once: its max by a tree
 *     in local memory, then exp(x - M) in place and their sum by a second
 *     tree, then y. All V loads are issued before the first is used (a max
 *     taken after each load made them go one at a time). V is a
 *     compile-time constant (4, 8 or 16, one kernel each) so that the array
 *     stays in registers. Without sub-group operations every step of a tree
 *     is a barrier of the whole work-group, so a row takes few work-items
 *     with many values each. kcs_softmax_registers_local_<type>, for longer
 *     rows, is the same with KCS_SOFTMAX_LOCAL_ROW_ITEMS work-items a row
 *     and a work-group, V = KCS_SOFTMAX_LOCAL_REGISTER_VECTORS (f64 half),
 *     and held_vectors more vectors a work-item in local memory (vectors
 *     V .. V + held_vectors - 1 of its share), loaded first; only the
 *     work-item that stored a held vector reads it, so they need no
 *     barrier. Registers and local memory together hold a 128 KB row, and
 *     two such work-groups fit a compute unit of an H100 or H200.
 *   group-online: kcs_softmax_online_<type>, for rows too long to keep
 *     (opencl/softmax.c falls back to it from group-registers). Each
 *     work-item walks its strided share of the row four vectors a trip (the
 *     four loads in flight together: on an H200 that took 32768 x 1024 from
 *     0.75 to 0.80 of the copy rate and 10^6 x 128 from 0.82 to 0.86),
 *     keeping a running max and a running sum rescaled by exp(old max - new
 *     max) when the max grows, once per trip at most; the rest of its share
 *     one vector at a time. The work-group then merges the (max, sum) pairs
 *     in a tree, and a second read of the row writes y. The row is read
 *     twice.
 *   cpu-rows: kcs_softmax_cpu_rows_<type>, for CPU devices such as POCL,
 *     which run a work-group's items one after another: a few work-groups of
 *     one work-item each, every item a contiguous block of rows, each row in
 *     three sweeps with 8-wide vectors (max; the sum of exp(x - M); y =
 *     exp(x - M) times the reciprocal, the exp computed again rather than
 *     stored in y, where a 16-bit type would round it).
 *
 * Summation depth (the bound allows a term D(cols) = min(cols - 1, 2048 +
 * ceil(log2 cols)) additions, and an online rescaling counts as eight):
 *   group-registers: V - 1 in a vector lane, 2 joining the four lanes,
 *     log2(row_items) in the tree: at most 15 + 2 + 10; with held vectors,
 *     V + held_vectors - 1 in a lane, which opencl/softmax.c keeps at most
 *     127 (35 on a GPU's 48 KB of local memory): 127 + 2 + 8.
 *   group-online: an item visits ceil(cols / (4 row_items)) vectors of four
 *     (at most 128 as opencl/softmax.c sizes it, for rows up to 2^19
 *     columns). A term passes through 2 additions joining its trip's four
 *     vectors, 2 joining lanes and 1 into the running sum, then one addition
 *     and at most one rescaling (9) per later trip or single vector (at most
 *     128 / 4 + 3 of them), then log2(row_items) merges, each one addition
 *     and one rescaling: 5 + 9 * 35 + 9 * 10 = 410 at most, and for
 *     4096 x 32768 with 256 items 5 + 9 * 7 + 9 * 8 = 140, inside D = 2063.
 *   cpu-rows: KCS_SOFTMAX_CPU_BLOCK / 8 - 1 in a lane, 3 joining lanes, 1
 *     the block's tail, then one addition per block: 255 + 4 + cols / 2048.
 *
 * The tunables below are #ifndef defaults, so the file compiles on its own.
 *
 * Run only it: build/kcs run --backend opencl softmax
 */
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

#ifndef KCS_SOFTMAX_CPU_BLOCK
/* Elements of a row that cpu-rows sums in its eight vector lanes before the
 * block's sum joins the row's total; a multiple of 8. 2048 gives each lane
 * a chain of 256 additions. */
#define KCS_SOFTMAX_CPU_BLOCK 2048
#endif

#ifndef KCS_SOFTMAX_LOCAL_REGISTER_VECTORS
/* Vectors of four f32 elements a work-item of kcs_softmax_registers_local_f32
 * keeps in registers (f64: half, the same bytes); the build passes the
 * host's KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS. A multiple of 2. */
#define KCS_SOFTMAX_LOCAL_REGISTER_VECTORS 24
#endif

#ifndef KCS_SOFTMAX_LOCAL_ROW_ITEMS
/* Work-items of a row, and of a work-group, of the kernels with local memory;
 * the build passes the host's KCS_OPENCL_SOFTMAX_LOCAL_ROW_ITEMS. */
#define KCS_SOFTMAX_LOCAL_ROW_ITEMS 256
#endif

#ifndef KCS_SOFTMAX_HELD_BATCH
/* Held vectors whose loads the local kernels keep in flight together. */
#define KCS_SOFTMAX_HELD_BATCH 8
#endif

/* ---- storage: the element type in global memory, per suffix ------------------ */

/* The type of an element in global memory for suffix S, kcs_softmax_storage_S,
 * and its loads (widened to the compute type T) and stores (rounded once):
 * one element at index i, a vector of four at vector index i (the row starts
 * on a vector boundary), eight at p. For f32 and f64 these are plain
 * accesses; f16 and bf16 go through half.cl. */
#define kcs_softmax_storage_f32 float
#define kcs_softmax_storage_f64 double
#define kcs_softmax_storage_f16 half
#define kcs_softmax_storage_bf16 ushort

#define KCS_SOFTMAX_PLAIN_STORAGE(T, S)                                                            \
    static T kcs_softmax_get_##S(global const T *p, ulong i) { return p[i]; }                      \
    static void kcs_softmax_put_##S(global T *p, ulong i, T v) { p[i] = v; }                       \
    static T##4 kcs_softmax_get4_##S(global const T *p, ulong i)                                   \
    {                                                                                              \
        return ((global const T##4 *)p)[i];                                                        \
    }                                                                                              \
    static void kcs_softmax_put4_##S(global T *p, ulong i, T##4 v) { ((global T##4 *)p)[i] = v; }  \
    static T##8 kcs_softmax_get8_##S(global const T *p) { return vload8(0, p); }                   \
    static void kcs_softmax_put8_##S(global T *p, T##8 v) { vstore8(v, 0, p); }

static float kcs_softmax_get_f16(global const half *p, ulong i) { return vload_half(i, p); }
static void kcs_softmax_put_f16(global half *p, ulong i, float v) { vstore_half_rte(v, i, p); }
static float4 kcs_softmax_get4_f16(global const half *p, ulong i) { return vload_half4(i, p); }
static void kcs_softmax_put4_f16(global half *p, ulong i, float4 v) { vstore_half4_rte(v, i, p); }
/* cpu-rows' eight elements of f16 and bf16 one at a time: with vload_half8 and
 * vstore_half8_rte it crashed (signal 11) under POCL 3.1 on rows that do not
 * start 16-byte aligned (33 columns), and with two vload_half4, or bf16
 * converted eight lanes at once, it crashed Oclgrind's uninitialised-value
 * check (tests/opencl_sanitize.sh). */
static float8 kcs_softmax_get8_f16(global const half *p)
{
    return (float8)(vload_half(0, p), vload_half(1, p), vload_half(2, p), vload_half(3, p), vload_half(4, p),
                    vload_half(5, p), vload_half(6, p), vload_half(7, p));
}
static void kcs_softmax_put8_f16(global half *p, float8 v)
{
    float values[8];
    vstore8(v, 0, values);
    for (int i = 0; i < 8; i++)
        vstore_half_rte(values[i], i, p);
}

static float kcs_softmax_get_bf16(global const ushort *p, ulong i) { return kcs_load_bf16(p, i); }
static void kcs_softmax_put_bf16(global ushort *p, ulong i, float v) { kcs_store_bf16(p, i, v); }
static float4 kcs_softmax_get4_bf16(global const ushort *p, ulong i)
{
    return kcs_bf16x4_to_float(((global const ushort4 *)p)[i]);
}
static void kcs_softmax_put4_bf16(global ushort *p, ulong i, float4 v)
{
    ((global ushort4 *)p)[i] = kcs_bf16x4_from_float(v);
}
static float8 kcs_softmax_get8_bf16(global const ushort *p)
{
    return (float8)(kcs_load_bf16(p, 0), kcs_load_bf16(p, 1), kcs_load_bf16(p, 2), kcs_load_bf16(p, 3),
                    kcs_load_bf16(p, 4), kcs_load_bf16(p, 5), kcs_load_bf16(p, 6), kcs_load_bf16(p, 7));
}
static void kcs_softmax_put8_bf16(global ushort *p, float8 v)
{
    float values[8];
    vstore8(v, 0, values);
    for (int i = 0; i < 8; i++)
        kcs_store_bf16(p, i, values[i]);
}

/* ---- pieces shared by every kernel of one type ------------------------------- */

/* T is the compute type (float, or double for f64), S the suffix (f16, bf16,
 * f32, f64) of the names defined; rows are kcs_softmax_storage_S. */
#define KCS_SOFTMAX_PIECES(T, S)                                                                   \
    /* exp(v - m), with -inf entries exactly 0. */                                                 \
    static T kcs_softmax_term_##S(T v, T m)                                                        \
    {                                                                                              \
        return v == (T)(-INFINITY) ? (T)0 : exp(v - m);                                            \
    }                                                                                              \
                                                                                                   \
    static T##4 kcs_softmax_terms4_##S(T##4 v, T m)                                                \
    {                                                                                              \
        return select(exp(v - m), (T##4)(0), v == (T##4)(-INFINITY));                              \
    }                                                                                              \
                                                                                                   \
    static T##8 kcs_softmax_terms8_##S(T##8 v, T m)                                                \
    {                                                                                              \
        return select(exp(v - m), (T##8)(0), v == (T##8)(-INFINITY));                              \
    }                                                                                              \
                                                                                                   \
    static T kcs_softmax_max4_##S(T##4 v)                                                          \
    {                                                                                              \
        return fmax(fmax(v.x, v.y), fmax(v.z, v.w));                                               \
    }                                                                                              \
                                                                                                   \
    static T kcs_softmax_total4_##S(T##4 v)                                                        \
    {                                                                                              \
        return (v.x + v.y) + (v.z + v.w);                                                          \
    }                                                                                              \
                                                                                                   \
    /* Elements first .. first + 3 of a row, -inf beyond its end. aligned:             */          \
    /* cols is a multiple of 4, so the row starts on a vector boundary (buffers are    */          \
    /* aligned far beyond 32 bytes) and first, a multiple of 4, is a whole vector.     */          \
    static T##4 kcs_softmax_load4_##S(global const kcs_softmax_storage_##S *row, ulong first,       \
                                      ulong cols, int aligned)                                     \
    {                                                                                              \
        if (aligned)                                                                               \
            return first < cols ? kcs_softmax_get4_##S(row, first / 4) : (T##4)(-INFINITY);        \
        T##4 v;                                                                                    \
        v.x = first < cols ? kcs_softmax_get_##S(row, first) : (T)(-INFINITY);                     \
        v.y = first + 1 < cols ? kcs_softmax_get_##S(row, first + 1) : (T)(-INFINITY);             \
        v.z = first + 2 < cols ? kcs_softmax_get_##S(row, first + 2) : (T)(-INFINITY);             \
        v.w = first + 3 < cols ? kcs_softmax_get_##S(row, first + 3) : (T)(-INFINITY);             \
        return v;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* Stores the elements of y that lie inside the row. */                                        \
    static void kcs_softmax_store4_##S(global kcs_softmax_storage_##S *row, ulong first,            \
                                       ulong cols, int aligned, T##4 y)                            \
    {                                                                                              \
        if (aligned) {                                                                             \
            if (first < cols)                                                                      \
                kcs_softmax_put4_##S(row, first / 4, y);                                           \
            return;                                                                                \
        }                                                                                          \
        if (first < cols)                                                                          \
            kcs_softmax_put_##S(row, first, y.x);                                                  \
        if (first + 1 < cols)                                                                      \
            kcs_softmax_put_##S(row, first + 1, y.y);                                              \
        if (first + 2 < cols)                                                                      \
            kcs_softmax_put_##S(row, first + 2, y.z);                                              \
        if (first + 3 < cols)                                                                      \
            kcs_softmax_put_##S(row, first + 3, y.w);                                              \
    }                                                                                              \
                                                                                                   \
    /* The max (take_max 1) or sum (0) of value over the row_items work-items      */              \
    /* sharing a row (aligned runs of row_items, a power of two), in every one.   */               \
    /* Every work-item of the group must call it: it holds barriers.              */               \
    static T kcs_softmax_row_reduce_##S(local T *scratch, T value, uint row_items, int take_max)   \
    {                                                                                              \
        uint id = get_local_id(0), lane = id & (row_items - 1);                                    \
        scratch[id] = value;                                                                       \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (uint width = row_items / 2; width > 0; width /= 2) {                                  \
            if (lane < width)                                                                      \
                scratch[id] = take_max ? fmax(scratch[id], scratch[id + width])                    \
                                       : scratch[id] + scratch[id + width];                        \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        T result = scratch[id - lane];                                                             \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        return result;                                                                             \
    }                                                                                              \
                                                                                                   \
    /* Joins the running pair (m2, s2) into (m, s): the larger max, both sums    */                \
    /* rescaled to it. An empty sum (0) stays out, so that a max of -inf never   */                \
    /* meets -inf - -inf; a NaN sum stays NaN.                                    */               \
    static void kcs_softmax_merge_##S(T *m, T *s, T m2, T s2)                                      \
    {                                                                                              \
        T top = fmax(*m, m2);                                                                      \
        T a = *s == (T)0 ? (T)0 : *s * exp(*m - top);                                              \
        T b = s2 == (T)0 ? (T)0 : s2 * exp(m2 - top);                                              \
        *m = top;                                                                                  \
        *s = a + b;                                                                                \
    }                                                                                              \
                                                                                                   \
    /* Merges the (max, sum) pairs of the row_items work-items of a row into     */                \
    /* (*m, *s) of every one. Every work-item of the group must call it.         */                \
    static void kcs_softmax_row_merge_##S(local T *maxes, local T *sums, T *m, T *s,               \
                                          uint row_items)                                          \
    {                                                                                              \
        uint id = get_local_id(0), lane = id & (row_items - 1);                                    \
        maxes[id] = *m;                                                                            \
        sums[id] = *s;                                                                             \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
        for (uint width = row_items / 2; width > 0; width /= 2) {                                  \
            if (lane < width) {                                                                    \
                T mine = maxes[id], sum = sums[id];                                                \
                kcs_softmax_merge_##S(&mine, &sum, maxes[id + width], sums[id + width]);           \
                maxes[id] = mine;                                                                  \
                sums[id] = sum;                                                                    \
            }                                                                                      \
            barrier(CLK_LOCAL_MEM_FENCE);                                                          \
        }                                                                                          \
        *m = maxes[id - lane];                                                                     \
        *s = sums[id - lane];                                                                      \
        barrier(CLK_LOCAL_MEM_FENCE);                                                              \
    }

/* ---- group-registers --------------------------------------------------------- */

/* Loads a work-item's V register slots of its row into v (-inf beyond the row),
 * and stores them times inverse, with ALIGNED a constant. */
#define KCS_SOFTMAX_LOAD_SLOTS(T, S, V, ALIGNED)                                                   \
    {                                                                                              \
        _Pragma("unroll") for (int c = 0; c < V; c++)                                              \
            v[c] = in_range ? kcs_softmax_load4_##S(in, 4 * ((ulong)c * row_items + lane), cols,   \
                                                    ALIGNED)                                       \
                            : (T##4)(-INFINITY);                                                   \
    }
#define KCS_SOFTMAX_STORE_SLOTS(T, S, V, ALIGNED)                                                  \
    {                                                                                              \
        _Pragma("unroll") for (int c = 0; c < V; c++)                                              \
            kcs_softmax_store4_##S(out, 4 * ((ulong)c * row_items + lane), cols, ALIGNED,          \
                                   v[c] * inverse);                                                \
    }

/* One kernel per V, the vectors of four each work-item keeps in registers;
 * the kernel named _local keeps held_vectors more in local memory (its slots
 * V .. V + held_vectors - 1), for rows longer than the registers hold. Only
 * the work-item that stores a held vector reads it again, so the held part
 * needs no barriers. The launch has get_local_size(0) / row_items rows per
 * work-group. */
#define KCS_SOFTMAX_REGISTERS(T, S, V, NAME, HELD, ATTRIBUTES)                                     \
    kernel ATTRIBUTES void NAME(global const kcs_softmax_storage_##S *x,                          \
                                global kcs_softmax_storage_##S *y, ulong rows, ulong cols,         \
                                uint launch_row_items, local T *scratch, local T##4 *held,         \
                                uint launch_held_vectors)                                          \
    {                                                                                              \
        /* With held vectors a work-group is one row of a fixed size, so that */                   \
        /* the offsets of the row's vectors are constants.                     */                  \
        uint row_items = HELD ? KCS_SOFTMAX_LOCAL_ROW_ITEMS : launch_row_items;                    \
        uint held_vectors = HELD ? launch_held_vectors : 0;                                        \
        uint items = HELD ? KCS_SOFTMAX_LOCAL_ROW_ITEMS : get_local_size(0);                       \
        uint id = get_local_id(0), lane = id & (row_items - 1);                                    \
        ulong row = (ulong)get_group_id(0) * (items / row_items) + id / row_items;                 \
        int in_range = row < rows, aligned = cols % 4 == 0;                                        \
        global const kcs_softmax_storage_##S *in = x + (in_range ? row : 0) * cols;                \
        T row_max = (T)(-INFINITY);                                                                \
        /* The held vectors first, KCS_SOFTMAX_HELD_BATCH loads in flight at a     */              \
        /* time, so that their staging registers are free before the V loads.      */              \
        for (uint j = 0; j < held_vectors; j += KCS_SOFTMAX_HELD_BATCH) {                          \
            T##4 batch[KCS_SOFTMAX_HELD_BATCH];                                                    \
            _Pragma("unroll") for (int b = 0; b < KCS_SOFTMAX_HELD_BATCH; b++)                     \
            {                                                                                      \
                ulong first = 4 * ((ulong)(V + j + b) * row_items + lane);                         \
                batch[b] = in_range && j + b < held_vectors                                        \
                               ? kcs_softmax_load4_##S(in, first, cols, aligned)                   \
                               : (T##4)(-INFINITY);                                                \
            }                                                                                      \
            _Pragma("unroll") for (int b = 0; b < KCS_SOFTMAX_HELD_BATCH; b++)                     \
            {                                                                                      \
                row_max = fmax(row_max, kcs_softmax_max4_##S(batch[b]));                           \
                if (j + b < held_vectors)                                                          \
                    held[(j + b) * items + id] = batch[b];                                         \
            }                                                                                      \
        }                                                                                          \
        /* Every load issued before any is used (the max waits for them all), */                   \
        /* and the alignment test taken once, not once a vector.               */                  \
        T##4 v[V];                                                                                 \
        if (aligned)                                                                               \
            KCS_SOFTMAX_LOAD_SLOTS(T, S, V, 1)                                                     \
        else                                                                                       \
            KCS_SOFTMAX_LOAD_SLOTS(T, S, V, 0)                                                     \
        _Pragma("unroll") for (int c = 0; c < V; c++)                                              \
            row_max = fmax(row_max, kcs_softmax_max4_##S(v[c]));                                   \
        row_max = kcs_softmax_row_reduce_##S(scratch, row_max, row_items, 1);                      \
        T##4 lanes = (T##4)(0);                                                                    \
        _Pragma("unroll") for (int c = 0; c < V; c++)                                              \
        {                                                                                          \
            v[c] = kcs_softmax_terms4_##S(v[c], row_max);                                          \
            lanes += v[c];                                                                         \
        }                                                                                          \
        for (uint j = 0; j < held_vectors; j++) {                                                  \
            T##4 e = kcs_softmax_terms4_##S(held[j * items + id], row_max);                        \
            held[j * items + id] = e;                                                              \
            lanes += e;                                                                            \
        }                                                                                          \
        T sum = kcs_softmax_row_reduce_##S(scratch, kcs_softmax_total4_##S(lanes), row_items, 0);  \
        T inverse = (T)1 / sum;                                                                    \
        if (in_range) {                                                                            \
            global kcs_softmax_storage_##S *out = y + row * cols;                                  \
            if (aligned)                                                                           \
                KCS_SOFTMAX_STORE_SLOTS(T, S, V, 1)                                                \
            else                                                                                   \
                KCS_SOFTMAX_STORE_SLOTS(T, S, V, 0)                                                \
            for (uint j = 0; j < held_vectors; j++) {                                              \
                ulong first = 4 * ((ulong)(V + j) * row_items + lane);                             \
                kcs_softmax_store4_##S(out, first, cols, aligned, held[j * items + id] * inverse); \
            }                                                                                      \
        }                                                                                          \
    }

/* ---- group-online ------------------------------------------------------------ */

#define KCS_SOFTMAX_ONLINE(T, S)                                                                   \
    kernel void kcs_softmax_online_##S(global const kcs_softmax_storage_##S *x,                    \
                                       global kcs_softmax_storage_##S *y, ulong rows, ulong cols,  \
                                       uint row_items, local T *maxes, local T *sums)              \
    {                                                                                              \
        uint id = get_local_id(0), lane = id & (row_items - 1);                                    \
        ulong row = (ulong)get_group_id(0) * (get_local_size(0) / row_items) + id / row_items;     \
        int in_range = row < rows, aligned = cols % 4 == 0;                                        \
        global const kcs_softmax_storage_##S *in = x + (in_range ? row : 0) * cols;                \
        ulong stride = 4 * (ulong)row_items;                                                       \
        T running_max = (T)(-INFINITY), running_sum = (T)0;                                        \
        ulong first = 4 * (ulong)lane;                                                             \
        /* Four vectors a trip: their loads in flight together, one rescaling. */                  \
        for (; in_range && first + 3 * stride < cols; first += 4 * stride) {                       \
            T##4 v0 = kcs_softmax_load4_##S(in, first, cols, aligned);                             \
            T##4 v1 = kcs_softmax_load4_##S(in, first + stride, cols, aligned);                    \
            T##4 v2 = kcs_softmax_load4_##S(in, first + 2 * stride, cols, aligned);                \
            T##4 v3 = kcs_softmax_load4_##S(in, first + 3 * stride, cols, aligned);                \
            T piece_max = fmax(fmax(kcs_softmax_max4_##S(v0), kcs_softmax_max4_##S(v1)),           \
                               fmax(kcs_softmax_max4_##S(v2), kcs_softmax_max4_##S(v3)));          \
            if (piece_max > running_max) {                                                         \
                running_sum *= exp(running_max - piece_max);                                       \
                running_max = piece_max;                                                           \
            }                                                                                      \
            T##4 terms = (kcs_softmax_terms4_##S(v0, running_max) +                                \
                          kcs_softmax_terms4_##S(v1, running_max)) +                               \
                         (kcs_softmax_terms4_##S(v2, running_max) +                                \
                          kcs_softmax_terms4_##S(v3, running_max));                                \
            running_sum += kcs_softmax_total4_##S(terms);                                          \
        }                                                                                          \
        for (; in_range && first < cols; first += stride) {                                        \
            T##4 v = kcs_softmax_load4_##S(in, first, cols, aligned);                              \
            T piece_max = kcs_softmax_max4_##S(v);                                                 \
            if (piece_max > running_max) {                                                         \
                running_sum *= exp(running_max - piece_max);                                       \
                running_max = piece_max;                                                           \
            }                                                                                      \
            running_sum += kcs_softmax_total4_##S(kcs_softmax_terms4_##S(v, running_max));         \
        }                                                                                          \
        kcs_softmax_row_merge_##S(maxes, sums, &running_max, &running_sum, row_items);             \
        T inverse = (T)1 / running_sum;                                                            \
        global kcs_softmax_storage_##S *out = y + (in_range ? row : 0) * cols;                     \
        for (first = 4 * (ulong)lane; in_range && first < cols; first += stride) {                 \
            T##4 v = kcs_softmax_load4_##S(in, first, cols, aligned);                              \
            kcs_softmax_store4_##S(out, first, cols, aligned,                                      \
                                   kcs_softmax_terms4_##S(v, running_max) * inverse);              \
        }                                                                                          \
    }

/* ---- cpu-rows ---------------------------------------------------------------- */

#define KCS_SOFTMAX_CPU_ROWS(T, S)                                                                 \
    static T kcs_softmax_total8_##S(T##8 v)                                                        \
    {                                                                                              \
        T##4 four = v.lo + v.hi;                                                                   \
        T##2 two = four.lo + four.hi;                                                              \
        return two.lo + two.hi;                                                                    \
    }                                                                                              \
                                                                                                   \
    static T kcs_softmax_max8_##S(T##8 v)                                                          \
    {                                                                                              \
        T##4 four = fmax(v.lo, v.hi);                                                              \
        T##2 two = fmax(four.lo, four.hi);                                                         \
        return fmax(two.lo, two.hi);                                                               \
    }                                                                                              \
                                                                                                   \
    /* Rows [item * rows_per_item, (item + 1) * rows_per_item) clipped to rows. */                 \
    kernel void kcs_softmax_cpu_rows_##S(global const kcs_softmax_storage_##S *x,                  \
                                         global kcs_softmax_storage_##S *y, ulong rows,            \
                                         ulong cols, ulong rows_per_item)                          \
    {                                                                                              \
        ulong begin = min(rows, get_global_id(0) * rows_per_item);                                 \
        ulong end = min(rows, begin + rows_per_item);                                              \
        for (ulong r = begin; r < end; r++) {                                                      \
            global const kcs_softmax_storage_##S *in = x + r * cols;                               \
            global kcs_softmax_storage_##S *out = y + r * cols;                                    \
            T##8 maxes = (T##8)(-INFINITY);                                                        \
            ulong k = 0;                                                                           \
            for (; k + 8 <= cols; k += 8)                                                          \
                maxes = fmax(maxes, kcs_softmax_get8_##S(in + k));                                 \
            T row_max = kcs_softmax_max8_##S(maxes);                                               \
            for (; k < cols; k++)                                                                  \
                row_max = fmax(row_max, kcs_softmax_get_##S(in, k));                               \
            T sum = (T)0;                                                                          \
            for (ulong block = 0; block < cols; block += KCS_SOFTMAX_CPU_BLOCK) {                  \
                ulong block_end = min(cols, block + KCS_SOFTMAX_CPU_BLOCK);                        \
                T##8 lanes = (T##8)(0);                                                            \
                T tail = (T)0;                                                                     \
                for (k = block; k + 8 <= block_end; k += 8)                                        \
                    lanes += kcs_softmax_terms8_##S(kcs_softmax_get8_##S(in + k), row_max);        \
                for (; k < block_end; k++)                                                         \
                    tail += kcs_softmax_term_##S(kcs_softmax_get_##S(in, k), row_max);             \
                sum += kcs_softmax_total8_##S(lanes) + tail;                                       \
            }                                                                                      \
            /* The terms again, bit for bit those summed, each rounded once into y. */             \
            T inverse = (T)1 / sum;                                                                \
            for (k = 0; k + 8 <= cols; k += 8)                                                     \
                kcs_softmax_put8_##S(                                                              \
                    out + k, kcs_softmax_terms8_##S(kcs_softmax_get8_##S(in + k), row_max) * inverse); \
            for (; k < cols; k++)                                                                  \
                kcs_softmax_put_##S(                                                               \
                    out, k, kcs_softmax_term_##S(kcs_softmax_get_##S(in, k), row_max) * inverse);  \
        }                                                                                          \
    }

#define KCS_SOFTMAX_ALL(T, S, LOCAL_V)                                                             \
    KCS_SOFTMAX_PIECES(T, S)                                                                       \
    KCS_SOFTMAX_REGISTERS(T, S, 4, kcs_softmax_registers_##S##_v4, 0, )                            \
    KCS_SOFTMAX_REGISTERS(T, S, 8, kcs_softmax_registers_##S##_v8, 0, )                            \
    KCS_SOFTMAX_REGISTERS(T, S, 16, kcs_softmax_registers_##S##_v16, 0, )                          \
    KCS_SOFTMAX_REGISTERS(                                                                         \
        T, S, LOCAL_V, kcs_softmax_registers_local_##S, 1,                                         \
        __attribute__((reqd_work_group_size(KCS_SOFTMAX_LOCAL_ROW_ITEMS, 1, 1))))                  \
    KCS_SOFTMAX_ONLINE(T, S)                                                                       \
    KCS_SOFTMAX_CPU_ROWS(T, S)

KCS_SOFTMAX_PLAIN_STORAGE(float, f32)
KCS_SOFTMAX_ALL(float, f32, KCS_SOFTMAX_LOCAL_REGISTER_VECTORS)

/* f16 and bf16: computed in float, so held in registers as f32 is. */
KCS_SOFTMAX_ALL(float, f16, KCS_SOFTMAX_LOCAL_REGISTER_VECTORS)
KCS_SOFTMAX_ALL(float, bf16, KCS_SOFTMAX_LOCAL_REGISTER_VECTORS)

#ifdef cl_khr_fp64
KCS_SOFTMAX_PLAIN_STORAGE(double, f64)
KCS_SOFTMAX_ALL(double, f64, KCS_SOFTMAX_LOCAL_REGISTER_VECTORS / 2)
#endif
