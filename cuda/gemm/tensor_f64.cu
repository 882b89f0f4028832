/* tensor_f64.cu: kcs's own f64 GEMM on the FP64 tensor cores (DMMA),
 * C_out = alpha * op(A) * op(B) + beta * C, row-major, op = N or T
 * (docs/gemm.md is the normative definition; its section "Tensor cores"
 * says why f64's own bound holds here). Same inputs and layout as
 * cuda/gemm/simt.cu: a is m x k (k x m when transposed), b is k x n (n x k when
 * transposed), c and c_out m x n.
 *
 * Row (the table at the end): `tensor`, f64, every f64 case.
 *
 * Instruction and why: mma.sync.aligned.m16n8k8.row.col.f64 (PTX ISA 7.8,
 * sm_90 and later). The PTX ISA says of every f64 mma shape: "Precision of
 * the element-wise multiplication and addition operation is identical to
 * that of .f64 precision fused multiply-add", rounding to nearest even (.rn,
 * the default). So each product enters the sum through one IEEE fma: f64's
 * own bound holds, whatever order the hardware adds the 8 products of one
 * instruction in. The m8n8k4 shape that Ampere introduced (this row's kernel
 * until it moved here) still runs on Hopper but, as the PTX ISA warns, at a
 * fraction of the rate: 12.7 ms at 4096^3 on an H100, 0.19 of cuBLAS. The
 * m16n8k8 fragments are documented element by element (PTX ISA, "Matrix
 * fragments for mma.m16n8k8", as for .tf32): lane = 4 g + t, g in 0..7, t in
 * 0..3; A (16 x 8) in 4 doubles (g, t), (g + 8, t), (g, t + 4), (g + 8,
 * t + 4); B (8 x 8) in 2: (k t, column g), (k t + 4, column g); C (16 x 8)
 * in 4: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). Hopper's
 * warpgroup wgmma has no f64 form, so mma.sync is the FP64 tensor-core path.
 * The m16n8k16 shape (also sm_90) does the same work in half the
 * instructions, but measured no faster: the pipe's peak is the same for both
 * shapes (docs/gemm.md), and its larger fragments cost registers that the
 * second fragment buffer (below) needs.
 *
 * Tiles: each block computes a 128 x 64 tile of C_out with 4 warps (2 down
 * m, 2 across n), each warp 64 x 32: 4 x 4 instructions per k step, 64
 * double accumulators per thread (128 registers); each A fragment read from
 * shared memory feeds 4 instructions, each B fragment 4. Two blocks run on a
 * multiprocessor (__launch_bounds__(128, 2): 255 registers a thread, 8
 * warps), so that one block's barrier and copies fall while the other's
 * instructions run. This is the tiling cuBLAS 13.1 picks for DGEMM on an
 * H100 (its kernel's name: tilesize128x64x16, stage3, warpsize2x2x1,
 * tensor16x8x8; docs/gemm.md, "Tensor cores"). The grid walks blocks in
 * groups of 8 block rows so that the blocks running together share panels
 * of A and B in L2.
 *
 * Why this shape (measured, docs/gemm.md): a warp keeps its sub-partition's
 * FP64 tensor pipe full only while it has DMMA to issue, and the pipe idles
 * whenever both warps of a sub-partition are doing something else (waiting
 * for fragments, at the barrier, computing copy addresses, reloading
 * spilled registers). So the kernel is organised to spend as little as it
 * can on anything else: fragments are read one k step ahead into a second
 * register buffer, the barrier comes when the next step's fragments are
 * already in registers, and a tile wholly inside both matrices runs a loop
 * of its own (multiply_tile's INTERIOR) whose copies need no bounds tests
 * and whose addresses are a fixed step from the last stage's. That loop
 * spills nothing; the general one, for the tiles on the edges, spills 104 to
 * 128 bytes a thread to the L1 cache (-Xptxas -v: the accumulators and the
 * two fragment buffers, 2 x 48 registers, leave too few registers for its
 * bounds). In SASS the interior loop issues 6.4 to 6.8 instructions a DMMA,
 * cuBLAS's DGEMM 6.4; the single loop it replaced issued 8.7.
 *
 * Pipeline: k is walked 16 at a time through 3 shared-memory stages (75 to
 * 90 KB a block, two blocks a multiprocessor), filled by cp.async (16-byte
 * copies straight from global to shared memory, no register staging): while
 * the warps compute on one stage, the copies of the next 2 are in flight.
 * One barrier per stage, before its last k step: it both publishes the next
 * stage and tells that every read of this one has been issued, so the copy
 * issued at the next stage's start may overwrite it.
 *
 * Shared layouts: each operand's tile is kept as the operand is stored, so
 * that every copy is a 16-byte run: an operand with k along its rows (A as
 * stored, B transposed) as tile[row][k], rows padded to 20 doubles; the others
 * as tile[k][row], rows padded to 132 (A) or 68 (B) doubles. A warp's
 * 8-byte fragment reads are served half a warp (16 lanes: g 0..3, t 0..3)
 * at a time; with any of these paddings the 16 doubles of a half warp fall
 * in 16 different 8-byte bank pairs (row stride 4 mod 16 doubles: 4g + t, or
 * 4t + g), so no read waits on a bank conflict.
 *
 * Edges and alignment: any m, n, k. A block whose tile lies wholly inside
 * m and n, with k even and both operands as below, copies 16-byte chunks
 * with no tests (interior_copy), but for the stage where k ends, whose
 * chunks past k are zeros; every other block copies the general way
 * (copy_tile). A 16-byte chunk wholly inside the matrix,
 * from an operand whose rows are an even number of doubles and whose base is
 * 16-byte aligned, is one 16-byte copy; any other chunk is two 8-byte
 * copies. A copy of an element outside the matrix reads nothing and writes
 * zeros (cp.async's source size 0), and 0 * 0 adds nothing and makes no NaN
 * from an infinity. Rows and columns beyond m and n are computed on zeros and
 * never stored; c and c_out are read and written element by element, so they
 * need no alignment.
 *
 * Precision: accumulates in f64, one IEEE fma per product (above); then
 * c_out = alpha * acc (beta = 0) or fma(alpha, acc, beta * c), in f64: at
 * most k + 2 roundings per term, inside gamma(k + 2), f64's own bound.
 *
 * What is not read (docs/gemm.md): m = 0 or n = 0 launches nothing; alpha =
 * 0 or k = 0 runs the same kernel with no k steps, so a and b are never read
 * and c_out = beta * c (zeros, c unread, when beta = 0); beta = 0 never reads
 * c. c_out may alias c: each element of c is read by the thread that then
 * writes that element of c_out.
 *
 * Without a GPU: the tensor-core instruction and cp.async are inline PTX,
 * which the host emulation (tests/cuda_gemm_emulation.sh) cannot run, so
 * nothing in this file is emulated or claimed to be; only a GPU run checks
 * it.
 *
 * Run only it: ./build/kcs run --backend cuda --kernel tensor 'gemm/f64-*'
 */
#include <climits>
#include <cstdint>

#include "../async_copy.cuh" /* cp.async, with zeros for what lies outside the matrix */
#include "../common.cuh"
#include "gemm.cuh"

namespace {

constexpr int BLOCK_M = 128, BLOCK_N = 64, BLOCK_K = 16, STAGES = 3;
constexpr int WARPS_M = 2, WARPS_N = 2, THREADS = 32 * WARPS_M * WARPS_N;
constexpr int WARP_M = BLOCK_M / WARPS_M, WARP_N = BLOCK_N / WARPS_N; /* 64 x 32 */
constexpr int BLOCKS_PER_SM = 2; /* two blocks' barriers fall at different moments */
constexpr int MMA_M = 16, MMA_N = 8, MMA_K = 8;
constexpr int TILES_M = WARP_M / MMA_M, TILES_N = WARP_N / MMA_N; /* instructions per warp and k step */
constexpr int GROUP_ROWS = 8;                                     /* block rows walked together */
constexpr int K_STEPS = BLOCK_K / MMA_K; /* instructions deep per stage */
static_assert(WARP_M % MMA_M == 0 && WARP_N % MMA_N == 0 && BLOCK_K % MMA_K == 0, "tiles of whole instructions");
static_assert(K_STEPS % 2 == 0, "the two fragment buffers alternate within a stage");
static_assert(STAGES >= 3, "a stage is refilled while the next one is read");

/* The shared tile of one operand of ROWS rows of op(A) (or columns of
 * op(B)) by BLOCK_K: K_ROWS (k along the stored rows) as tile[r][k], else as
 * tile[k][r]. Row strides are 4 mod 16 doubles (see the banner). */
template <int ROWS, bool K_ROWS> struct operand_tile {
    static constexpr int stride = K_ROWS ? BLOCK_K + 4 : ROWS + 4;
    static constexpr int doubles = K_ROWS ? ROWS * stride : BLOCK_K * stride;
    static constexpr int chunks_per_line = (K_ROWS ? BLOCK_K : ROWS) / 2; /* 16-byte chunks per stored line */
    static constexpr int chunks = ROWS * BLOCK_K / 2;
    static constexpr int per_thread = chunks / THREADS;
    static_assert(stride % 16 == 4, "conflict-free fragment reads");
    static_assert(chunks % THREADS == 0, "every thread copies the same number of chunks");
    static_assert(THREADS % chunks_per_line == 0, "a thread's chunks share one place along the line");

    /* Element (r, kk) of the tile: r a row of op(A) or column of op(B). */
    static __device__ __forceinline__ int at(int r, int kk) { return K_ROWS ? r * stride + kk : kk * stride + r; }
};

/* Starts the copies of one operand's tile: rows r0.. of op(A) (or columns of
 * op(B)), k from k0. base[line * ld + i] as stored; K_ROWS: line = row, i =
 * k; otherwise line = k, i = row. Chunk c of the tile is 2 consecutive
 * doubles of one stored line, consecutive threads on consecutive chunks. */
template <int ROWS, bool K_ROWS>
__device__ __forceinline__ void copy_tile(double *tile, const double *base, int ld, int rows, int k, int r0, int k0,
                                          bool vector_ok)
{
    using L = operand_tile<ROWS, K_ROWS>;
#pragma unroll
    for (int s = 0; s < L::per_thread; s++) {
        const int c = (int)threadIdx.x + s * THREADS;
        const int line = c / L::chunks_per_line, first = (c % L::chunks_per_line) * 2; /* in the tile */
        const int r = K_ROWS ? line : first, kk = K_ROWS ? first : line;
        double *destination = tile + L::at(r, kk);
        /* the stored line and its first element; lines end at rows (K_ROWS) or k */
        const int stored_line = K_ROWS ? r0 + line : k0 + line, stored_first = K_ROWS ? k0 + first : r0 + first;
        const int lines = K_ROWS ? rows : k, length = K_ROWS ? k : rows;
        const bool line_inside = stored_line < lines;
        const double *source = base + (size_t)(line_inside ? stored_line : 0) * ld;
        if (vector_ok && (stored_first + 2 <= length || !line_inside)) {
            copy_async_or_zeros<16>(destination, line_inside ? source + stored_first : base, line_inside ? 16 : 0);
        } else {
#pragma unroll
            for (int v = 0; v < 2; v++) {
                const bool inside = line_inside && stored_first + v < length;
                /* a chunk's two elements lie along the stored line, next to each other in the tile too */
                copy_async_or_zeros<8>(destination + v, inside ? source + stored_first + v : base, inside ? 8 : 0);
            }
        }
    }
}

/* The same copies for a tile wholly inside both matrices, from operands
 * that take 16-byte copies, with k even: no bounds to test but k's, so a
 * thread's chunks are one address plus a fixed step, and its address at
 * stage kt is its first stage's plus kt steps along k, set up once a block
 * (the general path above costs more integer work than the tensor cores
 * leave time for). */
template <int ROWS, bool K_ROWS> struct interior_copy {
    using L = operand_tile<ROWS, K_ROWS>;
    static constexpr int lines_per_pass = THREADS / L::chunks_per_line; /* stored lines the block covers per chunk */
    const double *source; /* this thread's first chunk at stage 0 */
    size_t chunk_step;    /* doubles from one of its chunks to the next */
    size_t stage_step;    /* doubles from one stage to the next */
    int destination;      /* its first chunk in the tile */

    __device__ __forceinline__ interior_copy(const double *base, int ld, int r0)
    {
        const int line = (int)threadIdx.x / L::chunks_per_line, first = ((int)threadIdx.x % L::chunks_per_line) * 2;
        source = base + (K_ROWS ? (size_t)(r0 + line) * ld + first : (size_t)line * ld + r0 + first);
        chunk_step = (size_t)lines_per_pass * ld;
        stage_step = K_ROWS ? (size_t)BLOCK_K : (size_t)BLOCK_K * ld;
        destination = K_ROWS ? L::at(line, first) : L::at(first, line);
    }

    /* The copies of stage kt. BOUNDED: k ends within it, and a chunk that
     * lies past k reads nothing and writes zeros (k is even, so a chunk lies
     * wholly before k or wholly past it). first_k: the k of this thread's
     * first chunk (its place along the line, or its line, as in the
     * constructor). */
    template <bool BOUNDED> __device__ __forceinline__ void stage(double *tile, int kt, int k) const
    {
        const double *from = source + (size_t)kt * stage_step;
        const int first_k = kt * BLOCK_K + (K_ROWS ? ((int)threadIdx.x % L::chunks_per_line) * 2
                                                   : (int)threadIdx.x / L::chunks_per_line);
#pragma unroll
        for (int s = 0; s < L::per_thread; s++) {
            const bool inside = !BOUNDED || (K_ROWS ? first_k : first_k + s * lines_per_pass) < k;
            copy_async_or_zeros<16>(tile + destination + s * lines_per_pass * L::stride,
                                    inside ? from + s * chunk_step : source, inside ? 16 : 0);
        }
    }
};

/* Fragments of one instruction: A_VALUES doubles of A per thread, value v at
 * row g + 8 (v % 2), k t + 4 (v / 2); B_VALUES of B, value v at k t + 4 v,
 * column g. */
constexpr int A_VALUES = MMA_K / 2, B_VALUES = MMA_K / 4;
static_assert(MMA_K == 8, "the instruction below is m16n8k8");

__device__ __forceinline__ void mma(double (&d)[4], const double (&a)[A_VALUES], const double (&b)[B_VALUES])
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
}

/* What one launch needs. */
struct f64_params {
    const double *a, *b; /* as stored (docs/gemm.md) */
    const double *c;     /* read only when beta != 0 */
    double *out;
    int m, n, k;         /* k = 0 when alpha = 0: a and b unread */
    int lda, ldb;        /* row lengths of a and b as stored; c and out have n */
    int blocks_m, blocks_n;
    double alpha, beta;
    int vector_a, vector_b; /* the operand's rows an even number of doubles, its base 16-byte aligned */
};

/* One k step's fragments of a warp: its TILES_M A and TILES_N B fragments. */
struct warp_fragments {
    double a[TILES_M][A_VALUES];
    double b[TILES_N][B_VALUES];
};

template <bool TRANSPOSE_A, bool TRANSPOSE_B> struct f64_layout {
    /* A as stored has k along its rows unless transposed; B the other way round. */
    using A = operand_tile<BLOCK_M, !TRANSPOSE_A>;
    using B = operand_tile<BLOCK_N, TRANSPOSE_B>;
    static constexpr int stage = A::doubles + B::doubles; /* doubles; a multiple of 2 keeps stages 16-byte aligned */
    static constexpr size_t shared_bytes = (size_t)STAGES * stage * sizeof(double);
    static_assert(A::doubles % 2 == 0 && B::doubles % 2 == 0, "16-byte aligned tiles");
};

/* A warp's place in its block's tile: its first row and column, and its
 * lane's group g and place t in the group (the banner's fragment layout). */
struct warp_place {
    int row, column, g, t;
};

using warp_accumulators = double[TILES_M][TILES_N][4];

/* acc += the block's tile of op(A) op(B) over the whole of k, for the tile
 * at (m0, n0). INTERIOR: the tile lies wholly inside m and n, k is even and
 * both operands take 16-byte copies (interior_copy), so the loop tests no
 * bounds but k's, once a stage; the kernel picks it per block, and the two
 * loops differ only in their copies. Its own loop spills nothing, where one
 * loop holding both kinds of copy spilled (the banner). */
template <bool TRANSPOSE_A, bool TRANSPOSE_B, bool INTERIOR>
__device__ __forceinline__ void multiply_tile(const f64_params &params, double *stages, int m0, int n0,
                                              const warp_place &w, warp_accumulators &acc)
{
    using Layout = f64_layout<TRANSPOSE_A, TRANSPOSE_B>;
    using A = typename Layout::A;
    using B = typename Layout::B;
    const int k_tiles = (params.k + BLOCK_K - 1) / BLOCK_K;
    const interior_copy<BLOCK_M, !TRANSPOSE_A> a_copy(params.a, params.lda, m0);
    const interior_copy<BLOCK_N, TRANSPOSE_B> b_copy(params.b, params.ldb, n0);
    auto copy_stage = [&](int kt) {
        double *a_tile = stages + (kt % STAGES) * Layout::stage, *b_tile = a_tile + A::doubles;
        if (INTERIOR && (kt + 1) * BLOCK_K <= params.k) {
            a_copy.template stage<false>(a_tile, kt, params.k);
            b_copy.template stage<false>(b_tile, kt, params.k);
            return;
        }
        if (INTERIOR) { /* the last stage, where k ends */
            a_copy.template stage<true>(a_tile, kt, params.k);
            b_copy.template stage<true>(b_tile, kt, params.k);
            return;
        }
        copy_tile<BLOCK_M, !TRANSPOSE_A>(a_tile, params.a, params.lda, params.m, params.k, m0, kt * BLOCK_K,
                                          params.vector_a);
        copy_tile<BLOCK_N, TRANSPOSE_B>(b_tile, params.b, params.ldb, params.n, params.k, n0, kt * BLOCK_K,
                                         params.vector_b);
    };

    /* One copy group per k step, empty past the end, so that the count of
     * groups in flight is the same every step. */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < k_tiles)
            copy_stage(s);
        copy_async_commit();
    }
    /* A warp's fragments of one k step (MMA_K deep) from the stage kt. */
    auto load_fragments = [&](warp_fragments &f, int kt, int k0) {
        const double *a_tile = stages + (kt % STAGES) * Layout::stage, *b_tile = a_tile + A::doubles;
#pragma unroll
        for (int i = 0; i < TILES_M; i++)
#pragma unroll
            for (int v = 0; v < A_VALUES; v++)
                f.a[i][v] = a_tile[A::at(w.row + i * MMA_M + w.g + 8 * (v % 2), k0 + w.t + 4 * (v / 2))];
#pragma unroll
        for (int j = 0; j < TILES_N; j++)
#pragma unroll
            for (int v = 0; v < B_VALUES; v++)
                f.b[j][v] = b_tile[B::at(w.column + j * MMA_N + w.g, k0 + w.t + 4 * v)];
    };

    /* Fragments in two register buffers: each k step's instructions run
     * while the next step's fragments are read, so that a warp never stops
     * issuing DMMA to wait for shared memory, the barrier included: it comes
     * before the last k step of a stage, whose fragments are already loaded.
     * The last stage's last step reads the next stage's place too, and never
     * uses it: that place lies inside the block's shared memory, no copy is
     * writing it then (the last copies went to earlier stages), and a test
     * there cost an instruction before each of the step's 24 reads in SASS. */
    warp_fragments fragments[2];
    copy_async_wait<STAGES - 2>(); /* stage 0 has landed */
    __syncthreads();
    if (k_tiles > 0)
        load_fragments(fragments[0], 0, 0);
    for (int kt = 0; kt < k_tiles; kt++) {
#pragma unroll
        for (int step = 0; step < K_STEPS; step++) {
            if (step == 0) {
                /* into the stage of kt - 1, which every warp finished reading before the last barrier */
                if (kt + STAGES - 1 < k_tiles)
                    copy_stage(kt + STAGES - 1);
                copy_async_commit();
            }
            if (step == K_STEPS - 1) {
                copy_async_wait<STAGES - 2>(); /* this thread's copies of stage kt + 1 have landed */
                __syncthreads();           /* everyone's have; all reads of stage kt have been issued */
            }
            load_fragments(fragments[(step + 1) % 2], step + 1 < K_STEPS ? kt : kt + 1,
                           step + 1 < K_STEPS ? (step + 1) * MMA_K : 0);
            const warp_fragments &f = fragments[step % 2];
#pragma unroll
            for (int i = 0; i < TILES_M; i++)
#pragma unroll
                for (int j = 0; j < TILES_N; j++)
                    mma(acc[i][j], f.a[i], f.b[j]);
        }
    }
}

/* The kernel: one block per BLOCK_M x BLOCK_N tile of c_out, a 1-D grid
 * walked GROUP_ROWS block rows at a time. */
template <bool TRANSPOSE_A, bool TRANSPOSE_B>
__global__ void __launch_bounds__(THREADS, BLOCKS_PER_SM) kcs_gemm_f64_tensor(const f64_params params)
{
    extern __shared__ __align__(16) double stages[];

    /* which tile: groups of GROUP_ROWS block rows, down a group's rows first */
    const int block = (int)blockIdx.x, per_group = GROUP_ROWS * params.blocks_n;
    const int first_row = (block / per_group) * GROUP_ROWS;
    const int rows_here = min(params.blocks_m - first_row, GROUP_ROWS);
    const int m0 = (first_row + (block % per_group) % rows_here) * BLOCK_M;
    const int n0 = ((block % per_group) / rows_here) * BLOCK_N;

    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int warp_row = (warp / WARPS_N) * WARP_M, warp_column = (warp % WARPS_N) * WARP_N;
    const warp_place w = {warp_row, warp_column, g, t};

    warp_accumulators acc;
#pragma unroll
    for (int i = 0; i < TILES_M; i++)
#pragma unroll
        for (int j = 0; j < TILES_N; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0;

    if (m0 + BLOCK_M <= params.m && n0 + BLOCK_N <= params.n && params.k % 2 == 0 && params.vector_a &&
        params.vector_b)
        multiply_tile<TRANSPOSE_A, TRANSPOSE_B, true>(params, stages, m0, n0, w, acc);
    else
        multiply_tile<TRANSPOSE_A, TRANSPOSE_B, false>(params, stages, m0, n0, w, acc);

    /* c_out = alpha * acc (+ beta * c) in f64, one rounding each */
#pragma unroll
    for (int i = 0; i < TILES_M; i++)
#pragma unroll
        for (int j = 0; j < TILES_N; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int row = m0 + warp_row + i * MMA_M + g + (e >> 1) * 8;
                const int column = n0 + warp_column + j * MMA_N + 2 * t + (e & 1);
                if (row < params.m && column < params.n) {
                    const size_t index = (size_t)row * params.n + column;
                    double value = params.alpha * acc[i][j][e];
                    if (params.beta != 0.0)
                        value = fma(params.alpha, acc[i][j][e], params.beta * params.c[index]);
                    params.out[index] = value;
                }
            }
}

bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

using f64_kernel = void (*)(const f64_params);

/* The kernel of one transpose case and the shared memory it takes. */
template <bool TRANSPOSE_A, bool TRANSPOSE_B> f64_kernel kernel_of(size_t *shared_bytes)
{
    *shared_bytes = f64_layout<TRANSPOSE_A, TRANSPOSE_B>::shared_bytes;
    return kcs_gemm_f64_tensor<TRANSPOSE_A, TRANSPOSE_B>;
}

f64_kernel kernel_for(int transpose_a, int transpose_b, size_t *shared_bytes)
{
    if (!transpose_a)
        return transpose_b ? kernel_of<false, true>(shared_bytes) : kernel_of<false, false>(shared_bytes);
    return transpose_b ? kernel_of<true, true>(shared_bytes) : kernel_of<true, false>(shared_bytes);
}

KCS_KERNEL_RUN(run_f64_tensor)
{
    const kcs_gemm_args *g = &args->gemm;
    const size_t blocks = ((g->m + BLOCK_M - 1) / BLOCK_M) * ((g->n + BLOCK_N - 1) / BLOCK_N);
    f64_params p = {};
    size_t shared_bytes = 0;
    const f64_kernel kernel = kernel_for(g->transpose_a, g->transpose_b, &shared_bytes);
    auto prepare = [&]() -> kcs_status {
        const kcs_status fits = kcs_gemm_sizes_fit(g, kcs_gemm_most_size, err);
        if (fits != KCS_OK)
            return fits;
        if (blocks > (size_t)INT_MAX) /* the grid's blocks are an int */
            return kcs_fail(err, KCS_UNSUPPORTED, "gemm: at most %d tiles of %dx%d here (m=%zu n=%zu)", INT_MAX,
                            BLOCK_M, BLOCK_N, g->m, g->n);
        p.a = (const double *)inputs[0]->data;
        p.b = (const double *)inputs[1]->data;
        p.c = g->beta != 0.0 ? (const double *)inputs[2]->data : nullptr;
        p.out = (double *)outputs[0]->data;
        p.m = (int)g->m;
        p.n = (int)g->n;
        p.k = g->alpha != 0.0 ? (int)g->k : 0; /* alpha = 0: a and b are not read */
        p.lda = (int)(g->transpose_a ? g->m : g->k);
        p.ldb = (int)(g->transpose_b ? g->k : g->n);
        p.blocks_m = (p.m + BLOCK_M - 1) / BLOCK_M;
        p.blocks_n = (p.n + BLOCK_N - 1) / BLOCK_N;
        p.alpha = g->alpha;
        p.beta = g->beta;
        p.vector_a = p.lda % 2 == 0 && aligned16(p.a);
        p.vector_b = p.ldb % 2 == 0 && aligned16(p.b);

        /* past the default 48 KB of shared memory a block must ask */
        KCS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes));
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0) {
            kernel<<<(unsigned int)blocks, THREADS, shared_bytes, device->stream>>>(p);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_f64_tensor");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* supports(): every f64 case, on a card with the f64 mma shapes of sm_90. */
KCS_KERNEL_SUPPORTS(supports_f64_tensor)
{
    (void)args;
    int major = 0;
    KCS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device->ordinal));
    if (major < 9)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "mma.sync.m16n8k8 with f64 needs compute capability 9.0 or later (this is %d.x)", major);
    return KCS_OK;
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_F64, "tensor",
     "FP64 tensor cores: mma.sync m16n8k8 f64 (DMMA, IEEE fma), 128x64x16 tiles, 4 warps of 64x32, "
     "2 blocks per SM, 3-stage cp.async pipeline, fragments double-buffered in registers",
     run_f64_tensor, supports_f64_tensor},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_tensor_f64_kernels = KCS_KERNEL_TABLE(rows);
