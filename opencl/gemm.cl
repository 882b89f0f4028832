/* gemm.cl: C_out = alpha * op(A) * op(B) + beta * C, row-major, op = N or T,
 * as OpenCL C 1.2 kernels (docs/gemm.md).
 *
 * Precision. The program is built once per pair of storage types (opencl/gemm.c):
 * KCS_GEMM_INPUT for A and B (f32, f64, f16, bf16) and KCS_GEMM_OUTPUT for C
 * and C_out (the same, or f32 for 16-bit inputs), so a device without fp64
 * still builds the f32 kernels. Products are accumulated in the compute
 * type `real`: double for f64, float for the others. f16 and bf16 are only
 * storage here: every load widens exactly to float (kcs_load_f16,
 * kcs_load_bf16 of opencl/half.cl, which need no cl_khr_fp16), so a product
 * of two of them is exact in float and the whole kernel is the f32 kernel;
 * the result is rounded once to C_out's type by kcs_store_f16 or
 * kcs_store_bf16 (docs/gemm.md, "Half precision"). The packed path widens
 * while it packs, so the tiled kernel reads float and only its epilogue
 * knows the storage types.
 * Contraction of a * b + c into one fma is on (and fma is called outright
 * where the device says it is fast): docs/gemm.md counts a fused
 * multiply-add as one rounding, so the bound gamma(k + 2) covers it. No
 * -cl-mad-enable (mad may be less accurate than fma) and no fast math.
 *
 * What is read. alpha = 0 or k = 0: A and B are not read (kcs_gemm_scale
 * writes beta * C). beta = 0: C is not read, by every kernel here, so NaN in
 * C does not reach C_out. Zero padding never meets a real infinity: a padded
 * row of op(A) or column of op(B) only makes outputs that are never stored,
 * and padding along k is zero in both operands (0 * 0 = 0, added exactly).
 *
 * The fast path, "packed" (three launches, after CLBlast's indirect xgemm,
 * whose packing kernels let the main kernel skip every bounds check):
 *   kcs_gemm_pack copies op(A) into Ap, k-major (Ap[p][i] = op(A)[i][p]),
 *     and op(B) into Bp (Bp[p][j] = op(B)[p][j]), padded with zeros to
 *     multiples of the tiles. Whether the stored operand is read along its
 *     rows or across them is the pack's only transpose: it goes through a
 *     32 x 33 tile of local memory so that reads and writes both coalesce.
 *     Packing moves (m + n) k elements twice, against 2 m n k flops.
 *   kcs_gemm_tiled gives each work-group a TILE_M x TILE_N tile of C
 *     (ITEMS_M x ITEMS_N work-items, 8 x 8 outputs each in registers). For
 *     each TILE_K slice of k the group stages Ap's TILE_K x TILE_M slice and
 *     Bp's TILE_K x TILE_N slice in local memory (vectors of 4, one aligned
 *     128-bit load each from global memory), and each work-item, for each p
 *     of the slice, reads 2 + 2 vectors of 4 from local memory and does 64
 *     fused multiply-adds. Work-item (tx, ty) owns rows 4 ty .. 4 ty + 3 and
 *     the same 64 (TILE_M / 2) further down, and likewise columns: its four
 *     local reads per p are whole vectors, a warp's reads of B are one
 *     contiguous run and its reads of A are two broadcast addresses, so no
 *     bank conflicts, and its stores of C cover whole 64-byte runs. Local
 *     memory is double-buffered: the next slice is loaded from global memory
 *     into registers before the current one is computed, and stored to the
 *     other buffer after it, so there is one barrier per slice. Because the
 *     packed operands are both k-major, no transposed store to local memory
 *     is needed, so the local arrays need no padding.
 *     Work-groups walk the tiles of C in bands of GROUP_ROWS tile rows,
 *     column by column within a band, so the groups running at one time
 *     share slices of Ap and Bp in the L2 cache.
 *     The epilogue scales by alpha, adds beta * C only where beta != 0, and
 *     stores only inside m x n (vector stores where a whole vector fits and
 *     rows are aligned).
 * The simple path, "direct": kcs_gemm_direct, one work-item per element of
 * C, its dot product read straight from A and B as stored (any transposes).
 *
 * The tunables below are #ifndef defaults, so the file compiles on its own;
 * the host passes its values with -D when it builds the program.
 *
 * Run only it: build/kcs run --backend opencl gemm
 */
#pragma OPENCL FP_CONTRACT ON

/* The storage types KCS_GEMM_INPUT and KCS_GEMM_OUTPUT may name. */
#define KCS_GEMM_F16 1
#define KCS_GEMM_BF16 2
#define KCS_GEMM_F32 3
#define KCS_GEMM_F64 4

#ifndef KCS_GEMM_INPUT
/* The storage type of A and B. */
#define KCS_GEMM_INPUT KCS_GEMM_F32
#endif

#ifndef KCS_GEMM_OUTPUT
/* The storage type of C and C_out. */
#define KCS_GEMM_OUTPUT KCS_GEMM_INPUT
#endif

/* 32: float kernels; 64: double kernels (needs cl_khr_fp64). */
#if KCS_GEMM_INPUT == KCS_GEMM_F64
#define KCS_GEMM_PRECISION 64
#else
#define KCS_GEMM_PRECISION 32
#endif

#ifndef KCS_GEMM_ITEMS_M
/* Work-items along the rows of a tile (each owns 8 rows): TILE_M = 8 ITEMS_M. */
#define KCS_GEMM_ITEMS_M 16
#endif

#ifndef KCS_GEMM_ITEMS_N
/* Work-items along the columns of a tile (each owns 8): TILE_N = 8 ITEMS_N. */
#define KCS_GEMM_ITEMS_N 16
#endif

#ifndef KCS_GEMM_TILE_K
/* Depth of one slice of k in local memory. Two buffers of (TILE_M + TILE_N)
 * x TILE_K elements must fit the 48 KiB a work-group may have: 16 for
 * float (32 KiB with 128 x 128 tiles), 8 for double (32 KiB). */
#if KCS_GEMM_PRECISION == 64
#define KCS_GEMM_TILE_K 8
#else
#define KCS_GEMM_TILE_K 16
#endif
#endif

#ifndef KCS_GEMM_GROUP_ROWS
/* Tile rows in one band of the walk over C's tiles (L2 reuse). */
#define KCS_GEMM_GROUP_ROWS 8
#endif

#if KCS_GEMM_PRECISION == 64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double real;
typedef double4 real4;
#ifdef FP_FAST_FMA
#define KCS_GEMM_MAD(a, b, c) fma((a), (b), (c))
#endif
#else
typedef float real;
typedef float4 real4;
#ifdef FP_FAST_FMAF
#define KCS_GEMM_MAD(a, b, c) fma((a), (b), (c))
#endif
#endif
#ifndef KCS_GEMM_MAD
/* contracted to an fma by the compiler where the device has one */
#define KCS_GEMM_MAD(a, b, c) ((a) * (b) + (c))
#endif

/* input_t, output_t: the storage of A and B, and of C and C_out; loads widen
 * exactly to real, stores round once to the storage type. */
#if KCS_GEMM_INPUT == KCS_GEMM_F16
typedef half input_t;
#define KCS_GEMM_LOAD_INPUT(data, i) kcs_load_f16((data), (i))
#elif KCS_GEMM_INPUT == KCS_GEMM_BF16
typedef ushort input_t;
#define KCS_GEMM_LOAD_INPUT(data, i) kcs_load_bf16((data), (i))
#else
typedef real input_t;
#define KCS_GEMM_LOAD_INPUT(data, i) ((data)[i])
#endif
#if KCS_GEMM_OUTPUT == KCS_GEMM_F16
typedef half output_t;
#define KCS_GEMM_LOAD_C(data, i) kcs_load_f16((data), (i))
#define KCS_GEMM_STORE_C(data, i, value) kcs_store_f16((data), (i), (value))
#elif KCS_GEMM_OUTPUT == KCS_GEMM_BF16
typedef ushort output_t;
#define KCS_GEMM_LOAD_C(data, i) kcs_load_bf16((data), (i))
#define KCS_GEMM_STORE_C(data, i, value) kcs_store_bf16((data), (i), (value))
#else
typedef real output_t;
#define KCS_GEMM_OUTPUT_IS_REAL 1 /* the epilogue may use vector loads and stores of real */
#define KCS_GEMM_LOAD_C(data, i) ((data)[i])
#define KCS_GEMM_STORE_C(data, i, value) ((data)[i] = (value))
#endif

#define KCS_ITEMS (KCS_GEMM_ITEMS_M * KCS_GEMM_ITEMS_N)
#define KCS_TILE_M (8 * KCS_GEMM_ITEMS_M)
#define KCS_TILE_N (8 * KCS_GEMM_ITEMS_N)
#define KCS_TILE_K KCS_GEMM_TILE_K
#define KCS_VECTORS_M (KCS_TILE_M / 4) /* vectors of 4 in a row of a slice of Ap */
#define KCS_VECTORS_N (KCS_TILE_N / 4)
#define KCS_LOADS_A (KCS_TILE_K * KCS_VECTORS_M / KCS_ITEMS) /* per work-item per slice */
#define KCS_LOADS_B (KCS_TILE_K * KCS_VECTORS_N / KCS_ITEMS)

#if KCS_LOADS_A * KCS_ITEMS != KCS_TILE_K * KCS_VECTORS_M || KCS_LOADS_A == 0
#error "a slice of Ap (KCS_GEMM_TILE_K x 8 KCS_GEMM_ITEMS_M) must be a whole number of vector loads per work-item"
#endif
#if KCS_LOADS_B * KCS_ITEMS != KCS_TILE_K * KCS_VECTORS_N || KCS_LOADS_B == 0
#error "a slice of Bp (KCS_GEMM_TILE_K x 8 KCS_GEMM_ITEMS_N) must be a whole number of vector loads per work-item"
#endif

/* ---- packing ---------------------------------------------------------------- */

#define KCS_PACK_TILE 32 /* a pack work-group moves a 32 x 32 tile, 8 rows at a time */

/* packed[p][x] for p < padded_k, x < padded_x (row length padded_x), from
 * source element (x, p): source[p * count_x + x] when across = 0 (the
 * source is stored k x count_x), source[x * count_k + p] when across = 1
 * (stored count_x x k); zero outside count_x x count_k. Work-group g packs
 * the 32 x 32 tile (g % (padded_x / 32), g / (padded_x / 32)) of
 * packed's x and p; padded_x is a multiple of 32. */
__attribute__((reqd_work_group_size(256, 1, 1)))
kernel void kcs_gemm_pack(global const input_t *source, ulong count_x, ulong count_k, int across,
                          global real *packed, ulong padded_x, ulong padded_k)
{
    local real tile[KCS_PACK_TILE][KCS_PACK_TILE + 1];
    const ulong tiles_x = padded_x / KCS_PACK_TILE;
    const ulong x0 = (get_group_id(0) % tiles_x) * KCS_PACK_TILE;
    const ulong p0 = (get_group_id(0) / tiles_x) * KCS_PACK_TILE;
    const uint lane = get_local_id(0) % KCS_PACK_TILE, row = get_local_id(0) / KCS_PACK_TILE;
    if (across) {
        /* read along p (the source's rows), write along x (packed's rows) */
        for (uint r = row; r < KCS_PACK_TILE; r += 8) {
            const ulong x = x0 + r, p = p0 + lane;
            tile[r][lane] = x < count_x && p < count_k ? KCS_GEMM_LOAD_INPUT(source, x * count_k + p) : (real)0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint r = row; r < KCS_PACK_TILE; r += 8) {
            const ulong p = p0 + r, x = x0 + lane;
            if (p < padded_k)
                packed[p * padded_x + x] = tile[lane][r];
        }
    } else {
        for (uint r = row; r < KCS_PACK_TILE; r += 8) {
            const ulong p = p0 + r, x = x0 + lane;
            if (p < padded_k)
                packed[p * padded_x + x] =
                    x < count_x && p < count_k ? KCS_GEMM_LOAD_INPUT(source, p * count_x + x) : (real)0;
        }
    }
}

/* ---- the tiled kernel ------------------------------------------------------ */

/* C_out (m x n, row-major) = alpha * Ap^T Bp + beta * C over the tile of C
 * this work-group owns; Ap is tiles_k TILE_K slices of padded_m columns,
 * Bp of padded_n columns (padded_m, padded_n multiples of the tiles). */
__attribute__((reqd_work_group_size(KCS_ITEMS, 1, 1)))
kernel void kcs_gemm_tiled(global const real4 *restrict packed_a, global const real4 *restrict packed_b,
                           uint tiles_k, uint padded_m, uint padded_n, global const output_t *restrict c,
                           global output_t *restrict c_out, uint m, uint n, real alpha, real beta)
{
    local real4 slice_a[2 * KCS_TILE_K * KCS_VECTORS_M];
    local real4 slice_b[2 * KCS_TILE_K * KCS_VECTORS_N];

    /* which tile of C: bands of GROUP_ROWS tile rows, column-major inside a band */
    const uint tiles_m = padded_m / KCS_TILE_M, tiles_n = padded_n / KCS_TILE_N;
    const uint group = get_group_id(0);
    const uint band_size = KCS_GEMM_GROUP_ROWS * tiles_n;
    const uint band_first = group / band_size * KCS_GEMM_GROUP_ROWS;
    const uint band_rows = min((uint)KCS_GEMM_GROUP_ROWS, tiles_m - band_first);
    const uint tile_m = band_first + group % band_size % band_rows;
    const uint tile_n = group % band_size / band_rows;

    const uint item = get_local_id(0);
    const uint tx = item % KCS_GEMM_ITEMS_N, ty = item / KCS_GEMM_ITEMS_N;

    /* Where this work-item's vector loads of a slice come from (offsets from
     * the slice's first vector in global memory) and go to (in local memory). */
    const uint row_vectors_a = padded_m / 4, row_vectors_b = padded_n / 4;
    uint from_a[KCS_LOADS_A], to_a[KCS_LOADS_A], from_b[KCS_LOADS_B], to_b[KCS_LOADS_B];
#pragma unroll
    for (int l = 0; l < KCS_LOADS_A; l++) {
        const uint q = item + l * KCS_ITEMS;
        from_a[l] = q / KCS_VECTORS_M * row_vectors_a + q % KCS_VECTORS_M;
        to_a[l] = q;
    }
#pragma unroll
    for (int l = 0; l < KCS_LOADS_B; l++) {
        const uint q = item + l * KCS_ITEMS;
        from_b[l] = q / KCS_VECTORS_N * row_vectors_b + q % KCS_VECTORS_N;
        to_b[l] = q;
    }
    global const real4 *next_a = packed_a + tile_m * KCS_VECTORS_M;
    global const real4 *next_b = packed_b + tile_n * KCS_VECTORS_N;
    const ulong slice_step_a = (ulong)KCS_TILE_K * row_vectors_a;
    const ulong slice_step_b = (ulong)KCS_TILE_K * row_vectors_b;

    real4 staged_a[KCS_LOADS_A], staged_b[KCS_LOADS_B];
#pragma unroll
    for (int l = 0; l < KCS_LOADS_A; l++)
        staged_a[l] = next_a[from_a[l]];
#pragma unroll
    for (int l = 0; l < KCS_LOADS_B; l++)
        staged_b[l] = next_b[from_b[l]];
#pragma unroll
    for (int l = 0; l < KCS_LOADS_A; l++)
        slice_a[to_a[l]] = staged_a[l];
#pragma unroll
    for (int l = 0; l < KCS_LOADS_B; l++)
        slice_b[to_b[l]] = staged_b[l];
    barrier(CLK_LOCAL_MEM_FENCE);

    real sum[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            sum[i][j] = (real)0;

    for (uint t = 0; t < tiles_k; t++) {
        const uint current = t & 1;
        const int more = t + 1 < tiles_k;
        if (more) {
            next_a += slice_step_a;
            next_b += slice_step_b;
#pragma unroll
            for (int l = 0; l < KCS_LOADS_A; l++)
                staged_a[l] = next_a[from_a[l]];
#pragma unroll
            for (int l = 0; l < KCS_LOADS_B; l++)
                staged_b[l] = next_b[from_b[l]];
        }
        local const real4 *a = slice_a + current * (KCS_TILE_K * KCS_VECTORS_M) + ty;
        local const real4 *b = slice_b + current * (KCS_TILE_K * KCS_VECTORS_N) + tx;
#pragma unroll
        for (int p = 0; p < KCS_TILE_K; p++) {
            const real4 a_low = a[p * KCS_VECTORS_M], a_high = a[p * KCS_VECTORS_M + KCS_GEMM_ITEMS_M];
            const real4 b_low = b[p * KCS_VECTORS_N], b_high = b[p * KCS_VECTORS_N + KCS_GEMM_ITEMS_N];
            const real av[8] = {a_low.s0, a_low.s1, a_low.s2, a_low.s3,
                                a_high.s0, a_high.s1, a_high.s2, a_high.s3};
            const real bv[8] = {b_low.s0, b_low.s1, b_low.s2, b_low.s3,
                                b_high.s0, b_high.s1, b_high.s2, b_high.s3};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    sum[i][j] = KCS_GEMM_MAD(av[i], bv[j], sum[i][j]);
        }
        if (more) {
            const uint other = current ^ 1;
#pragma unroll
            for (int l = 0; l < KCS_LOADS_A; l++)
                slice_a[other * (KCS_TILE_K * KCS_VECTORS_M) + to_a[l]] = staged_a[l];
#pragma unroll
            for (int l = 0; l < KCS_LOADS_B; l++)
                slice_b[other * (KCS_TILE_K * KCS_VECTORS_N) + to_b[l]] = staged_b[l];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* The epilogue: rows 4 ty + r (+ TILE_M / 2), columns 4 tx + s (+ TILE_N / 2). */
    const int whole_vectors = n % 4 == 0;
#ifndef KCS_GEMM_OUTPUT_IS_REAL
    (void)whole_vectors; /* 16-bit C_out: element by element */
#endif
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const uint row = tile_m * KCS_TILE_M + (i / 4) * (KCS_TILE_M / 2) + 4 * ty + i % 4;
        if (row >= m)
            continue;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint column = tile_n * KCS_TILE_N + h * (KCS_TILE_N / 2) + 4 * tx;
            const ulong at = (ulong)row * n + column;
            real4 value = (real4)(sum[i][4 * h], sum[i][4 * h + 1], sum[i][4 * h + 2], sum[i][4 * h + 3]);
            value = alpha * value;
#ifdef KCS_GEMM_OUTPUT_IS_REAL
            if (whole_vectors && column + 4 <= n) {
                if (beta != (real)0)
                    value += beta * vload4(0, c + at);
                vstore4(value, 0, c_out + at);
            } else
#endif
            {
                const real values[4] = {value.s0, value.s1, value.s2, value.s3};
#pragma unroll
                for (int s = 0; s < 4; s++) {
                    if (column + s < n)
                        KCS_GEMM_STORE_C(c_out, at + s,
                                         beta != (real)0 ? values[s] + beta * KCS_GEMM_LOAD_C(c, at + s) : values[s]);
                }
            }
        }
    }
}

/* ---- alpha = 0 or k = 0 ---------------------------------------------------- */

/* c_out[i] = beta * c[i] for i < count, and 0 without reading c when beta = 0. */
kernel void kcs_gemm_scale(global const output_t *c, global output_t *c_out, ulong count, real beta)
{
    const ulong i = get_global_id(0);
    if (i < count)
        KCS_GEMM_STORE_C(c_out, i, beta != (real)0 ? beta * KCS_GEMM_LOAD_C(c, i) : (real)0);
}

/* ---- direct ---------------------------------------------------------------- */

/* One work-item per element e = i n + j of C_out: the dot product of row i
 * of op(A) and column j of op(B), read as stored, in k order. */
kernel void kcs_gemm_direct(global const input_t *a, global const input_t *b, global const output_t *c,
                            global output_t *c_out, ulong m, ulong n, ulong k, int transpose_a,
                            int transpose_b, real alpha, real beta)
{
    const ulong e = get_global_id(0);
    if (e >= m * n)
        return;
    const ulong i = e / n, j = e % n;
    real result = (real)0;
    if (alpha != (real)0) {
        const ulong a_step = transpose_a ? m : 1, b_step = transpose_b ? 1 : n;
        ulong a_at = transpose_a ? i : i * k, b_at = transpose_b ? j * k : j;
        real dot = (real)0;
        for (ulong p = 0; p < k; p++, a_at += a_step, b_at += b_step)
            dot = KCS_GEMM_MAD(KCS_GEMM_LOAD_INPUT(a, a_at), KCS_GEMM_LOAD_INPUT(b, b_at), dot);
        result = alpha * dot;
    }
    if (beta != (real)0)
        result = alpha != (real)0 ? result + beta * KCS_GEMM_LOAD_C(c, e) : beta * KCS_GEMM_LOAD_C(c, e);
    KCS_GEMM_STORE_C(c_out, e, result);
}
