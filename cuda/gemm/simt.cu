/* simt.cu: GEMM on CUDA's cores (SIMT FMAs, no tensor cores in kcs's own
 * kernel) and the cuBLAS peers of every mode but FP8, C_out = alpha * op(A)
 * * op(B) + beta * C, row-major, op = N (as stored) or T (transposed);
 * docs/gemm.md is the normative definition and derives the bound the
 * checker applies. The other families of GEMM rows are its neighbours in
 * cuda/gemm/: tensor_mma.cu (mma.sync), tensor_wgmma.cu (Hopper's wgmma),
 * tensor_f64.cu (FP64 tensor cores) and fp8_cublaslt.cu (FP8, cuBLASLt).
 *
 * Inputs a, b, c and output c_out, in ops/gemm.c's order: a is m x k
 * (k x m when transposed), b is k x n (n x k when transposed), c and c_out
 * are m x n, all dense row-major in the case type. Variants, the rows at
 * the end of this file:
 *
 *   tiled        our kernel, f32 and f64. Each block computes a BM x BN tile
 *                of C_out with 256 threads, each thread a TM x TN micro-tile
 *                held in registers (f32: 128 x 128 tiles, 8 x 8 per thread;
 *                f64: 128 x 64 tiles, 8 x 4 per thread). k is walked BK = 8
 *                at a time through two shared-memory buffers: while the
 *                block computes on one, each thread's 16-byte global loads
 *                of the next tile are in flight into registers, stored into
 *                the other buffer after the compute, then one barrier.
 *                Shared memory holds both operands k-major (tile[p][i]), so
 *                a thread reads its A column and B row of one k step as
 *                16-byte vectors (LDS.128) and does TM * TN FMAs on them: 64
 *                FFMA per 4 LDS.128 in f32. Its rows are TM / V chunks of V
 *                (the 16-byte vector width: 4 floats, 2 doubles) spaced
 *                LANES_M * V apart, and likewise its columns, so that a
 *                warp's vector reads are a few broadcast 16-byte words of
 *                one contiguous line. Operands whose k is contiguous in
 *                memory (A as stored, B transposed) are transposed on their
 *                way into shared memory (scalar stores), the others are
 *                stored as vectors; rows are padded by one vector, which
 *                makes the transposing stores conflict-free. All four
 *                transposes are instantiations of the one kernel: the
 *                layout differs only in how a tile is loaded.
 *                Edges: three instantiations per transpose. full-tiles
 *                (m, n, k multiples of the tile, 16-byte aligned) has no
 *                bounds checks; vector-edges (the rows of a and b as stored
 *                a multiple of 4 floats or 2 doubles long) checks each
 *                16-byte vector, which is then wholly in or out; scalar-
 *                edges (any sizes) loads element by element. Out-of-range
 *                elements load as zero in both operands along k (0 * 0, no
 *                NaN from inf * 0); rows and columns beyond m and n are
 *                computed on zeros and never stored.
 *                Split-k: when the tiles would fill less than half a wave of
 *                resident blocks (64 x 64 x 65536: one tile), k is cut into
 *                slices of at least KCS_GEMM_SPLIT_MIN_K, one block per tile
 *                and slice; each writes its unscaled partial sums to scratch
 *                reserved before the timer, and a second kernel adds the
 *                slices in slice order and applies alpha and beta. The same
 *                input gives the same bits on every run.
 *                Resources (ptxas 13.0, sm_90): 127 or 128 registers and no
 *                spills in every instantiation, 16.5 KiB (f32) or 24.5 KiB
 *                (f64) of static shared memory, 2 blocks of 256 threads per
 *                SM. The f32 full-tiles loop (two k tiles per trip) is 1024
 *                FFMA, 64 LDS.128, 4 LDG.128, 10 STS and STS.128, 2 BAR and
 *                about 25 others: 91% FFMA; f64's is 512 DFMA, 96 LDS.128.
 *   cublas       the peer, f32 and f64: cublasSgemm (math mode
 *                CUBLAS_DEFAULT_MATH, set before every call: no TF32 for
 *                SGEMM, which is opt-in) and cublasDgemm (FP64 tensor cores
 *                on Hopper, IEEE fp64 FMAs).
 *   cublas-tf32  f32 cases with mode=tf32 only: cublasGemmEx with
 *                CUBLAS_COMPUTE_32F_FAST_TF32 (tensor cores on inputs
 *                converted to TF32, f32 accumulation).
 *
 * f16 and bf16 (docs/gemm.md, "Half precision"): the same tiled kernel, not
 * a twin. It is templated over the storage type of a and b (In) and of c and
 * c_out (Out: In, or f32 where the case says c_dtype=f32) and computes in
 * kcs_compute<In>: each 16-bit element is widened exactly to float on its
 * way into shared memory (kcs_widen, cuda/half.cuh; one element at a time,
 * so 16-bit operands need no 16-byte alignment), the products of two
 * widened values are exact in f32 and accumulated with f32 FMAs as in f32,
 * and the epilogue (or the split sum, whose partial sums stay f32) rounds
 * once to Out with kcs_narrow. Their cublas rows call cublasGemmEx with
 * CUBLAS_COMPUTE_32F_PEDANTIC (see cublas_gemm_ex).
 *
 *   cublas-tensor  f16 and bf16 cases with mode=tensor only:
 *                cublasGemmEx with CUBLAS_COMPUTE_32F, which lets cuBLAS
 *                run the products on tensor cores (f32 accumulation in
 *                block steps that may align and truncate: the wider bound of
 *                docs/gemm.md, "Tensor cores"). The peer of kcs's own
 *                tensor-core rows, and the f16 and bf16 ceilings' call
 *                (cuda/ceilings.cu). bf16 cases with beta != 0 are
 *                refused: measured on an H100, cuBLAS rounds that C_out
 *                more than once (supports_tensor_only says how).
 *
 * The row-major to column-major mapping (docs/gemm.md): the row-major C is
 * the column-major C^T = op(B)^T op(A)^T, so cuBLAS is called with b first
 * and a second, n and m swapped, each operand keeping its own transpose flag
 * and the leading dimensions of the row-major storage (b: transb ? k : n,
 * a: transa ? m : k, c_out: n). cuBLAS updates C in place: when beta != 0, c
 * is copied into c_out first (cudaMemcpyAsync device to device, inside the
 * timed region: it is part of what an out-of-place GEMM costs on cuBLAS), and
 * c_out is then passed as C. With beta = 0 nothing is copied: cuBLAS
 * documents that C is not read then, and it writes all of C.
 *
 * What every variant does before any GEMM (docs/gemm.md, "What is not
 * read"): m = 0 or n = 0 launches nothing; alpha = 0 or k = 0 launches only
 * a scaling kernel, c_out = beta * c (zeros when beta = 0, c unread), so a
 * and b are never read (cuBLAS promises nothing for alpha = 0); beta = 0
 * never reads c. c_out may alias c in the tiled variant (each element of c is
 * read by the thread that then writes that element of c_out) and in the
 * cuBLAS ones (the copy is skipped).
 *
 * Precision: f32, f16 and bf16 accumulate in f32, f64 in f64, one FMA per term
 * (acc = fma(a, b, acc)), then c_out = alpha * acc (beta = 0) or
 * fma(alpha, acc, beta * c): at most k + 1 roundings for a product term and
 * 2 for the C term, inside the k + 2 that gamma(k + 2) allows; split-k adds
 * one addition per slice, and slices are at least 128 long, so the count
 * stays below k + 2. Carrying f32 in f64 would be more accurate than the
 * bound asks and halve the speed; carrying f64 in f32 is what the bound
 * rules out.
 *
 * Tunables (-D on the nvcc line): KCS_GEMM_F32_{BLOCK_M, BLOCK_N, BLOCK_K,
 * THREAD_M, THREAD_N, LANES_M, MIN_BLOCKS} and the same for F64 (threads per
 * block follow: (BLOCK_M / (LANES_M * THREAD_M)) * (BLOCK_N / (LANES_N *
 * THREAD_N)) warps, LANES_N = 32 / LANES_M), KCS_GEMM_SPLIT_MIN_K,
 * KCS_GEMM_SPLIT_MAX_BYTES.
 *
 * Run only it: ./build/kcs run --backend cuda gemm   (--benchmark for timings)
 * Without a GPU: tests/cuda_gemm_emulation.sh runs the tiled kernels and
 * their launch planning on the host (everything before "End of what runs
 * without a device" below must stay plain enough for that).
 */
#include <climits>
#include <cstdint>

#include "../common.cuh"
#include "gemm.cuh"

/* f32: 128 x 128 x 8 tiles, 8 x 8 per thread, lanes 4 x 8: 256 threads, at
 * most 128 registers each for 2 blocks per SM (64K registers). */
#ifndef KCS_GEMM_F32_BLOCK_M
#define KCS_GEMM_F32_BLOCK_M 128
#endif
#ifndef KCS_GEMM_F32_BLOCK_N
#define KCS_GEMM_F32_BLOCK_N 128
#endif
#ifndef KCS_GEMM_F32_BLOCK_K
#define KCS_GEMM_F32_BLOCK_K 8
#endif
#ifndef KCS_GEMM_F32_THREAD_M
#define KCS_GEMM_F32_THREAD_M 8
#endif
#ifndef KCS_GEMM_F32_THREAD_N
#define KCS_GEMM_F32_THREAD_N 8
#endif
#ifndef KCS_GEMM_F32_LANES_M
#define KCS_GEMM_F32_LANES_M 4
#endif
#ifndef KCS_GEMM_F32_MIN_BLOCKS
#define KCS_GEMM_F32_MIN_BLOCKS 2
#endif
/* f64: 128 x 64 x 8 tiles, 8 x 4 per thread (32 accumulators, 64 registers):
 * FP64 FMAs issue at half the f32 rate, so fewer per shared load suffice. */
#ifndef KCS_GEMM_F64_BLOCK_M
#define KCS_GEMM_F64_BLOCK_M 128
#endif
#ifndef KCS_GEMM_F64_BLOCK_N
#define KCS_GEMM_F64_BLOCK_N 64
#endif
#ifndef KCS_GEMM_F64_BLOCK_K
#define KCS_GEMM_F64_BLOCK_K 8
#endif
#ifndef KCS_GEMM_F64_THREAD_M
#define KCS_GEMM_F64_THREAD_M 8
#endif
#ifndef KCS_GEMM_F64_THREAD_N
#define KCS_GEMM_F64_THREAD_N 4
#endif
#ifndef KCS_GEMM_F64_LANES_M
#define KCS_GEMM_F64_LANES_M 4
#endif
#ifndef KCS_GEMM_F64_MIN_BLOCKS
#define KCS_GEMM_F64_MIN_BLOCKS 2
#endif
/* The shortest k slice of split-k (and so at most k / this many slices). */
#ifndef KCS_GEMM_SPLIT_MIN_K
#define KCS_GEMM_SPLIT_MIN_K 128
#endif
/* The most scratch memory the slices' partial sums may take. */
#ifndef KCS_GEMM_SPLIT_MAX_BYTES
#define KCS_GEMM_SPLIT_MAX_BYTES (256u << 20)
#endif

namespace {

/* The 16-byte vector of each element type. */
template <typename T> struct vector16;
template <> struct vector16<float> {
    static constexpr int width = 4;
};
template <> struct vector16<double> {
    static constexpr int width = 2;
};

/* The tiling of each element type, from the tunables. */
template <typename T> struct tiling;
template <> struct tiling<float> {
    static constexpr int block_m = KCS_GEMM_F32_BLOCK_M, block_n = KCS_GEMM_F32_BLOCK_N,
                         block_k = KCS_GEMM_F32_BLOCK_K, thread_m = KCS_GEMM_F32_THREAD_M,
                         thread_n = KCS_GEMM_F32_THREAD_N, lanes_m = KCS_GEMM_F32_LANES_M,
                         min_blocks = KCS_GEMM_F32_MIN_BLOCKS;
};
template <> struct tiling<double> {
    static constexpr int block_m = KCS_GEMM_F64_BLOCK_M, block_n = KCS_GEMM_F64_BLOCK_N,
                         block_k = KCS_GEMM_F64_BLOCK_K, thread_m = KCS_GEMM_F64_THREAD_M,
                         thread_n = KCS_GEMM_F64_THREAD_N, lanes_m = KCS_GEMM_F64_LANES_M,
                         min_blocks = KCS_GEMM_F64_MIN_BLOCKS;
};

/* Everything the kernel derives from the tiling. */
template <typename T> struct shape : tiling<T> {
    using base = tiling<T>;
    static constexpr int vector = vector16<T>::width;
    static constexpr int lanes_n = 32 / base::lanes_m;
    static constexpr int warp_tile_m = base::lanes_m * base::thread_m;
    static constexpr int warp_tile_n = lanes_n * base::thread_n;
    static constexpr int warps_m = base::block_m / warp_tile_m;
    static constexpr int warps_n = base::block_n / warp_tile_n;
    static constexpr int threads = 32 * warps_m * warps_n;
    static_assert(32 % base::lanes_m == 0, "LANES_M must divide 32");
    static_assert(base::thread_m % vector == 0 && base::thread_n % vector == 0,
                  "THREAD_M and THREAD_N must be multiples of the 16-byte vector");
    static_assert(base::block_m % warp_tile_m == 0 && base::block_n % warp_tile_n == 0,
                  "BLOCK_M and BLOCK_N must be multiples of the warp tile");
    static_assert(base::block_k % vector == 0, "BLOCK_K must be a multiple of the 16-byte vector");
    static_assert(threads <= 1024, "at most 1024 threads per block");
};

/* How much of the kernel checks bounds (see the header comment). */
enum edge_mode { full_tiles = 0, vector_edges = 1, scalar_edges = 2 };

__device__ __forceinline__ float fused(float x, float y, float z)
{
    return fmaf(x, y, z);
}

__device__ __forceinline__ double fused(double x, double y, double z)
{
    return fma(x, y, z);
}

/* 16-byte loads and stores between memory and a register array. Global
 * loads of a and b go through the read-only path; c may alias c_out, so it
 * is read with plain loads. */
__device__ __forceinline__ void load_read_only(const float *p, float (&v)[4])
{
    const float4 x = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}

__device__ __forceinline__ void load_read_only(const double *p, double (&v)[2])
{
    const double2 x = __ldg(reinterpret_cast<const double2 *>(p));
    v[0] = x.x, v[1] = x.y;
}

__device__ __forceinline__ void load_vector(const float *p, float (&v)[4])
{
    const float4 x = *reinterpret_cast<const float4 *>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}

__device__ __forceinline__ void load_vector(const double *p, double (&v)[2])
{
    const double2 x = *reinterpret_cast<const double2 *>(p);
    v[0] = x.x, v[1] = x.y;
}

__device__ __forceinline__ void store_vector(float *p, const float (&v)[4])
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}

__device__ __forceinline__ void store_vector(double *p, const double (&v)[2])
{
    *reinterpret_cast<double2 *>(p) = make_double2(v[0], v[1]);
}

/* The same for 16-bit storage (__half, __nv_bfloat16) as four floats: one
 * element at a time, each widened exactly (kcs_widen) or rounded once to
 * the storage type (kcs_narrow), so no 16-bit value is ever computed with. */
template <typename H> __device__ __forceinline__ void load_read_only(const H *p, float (&v)[4])
{
#pragma unroll
    for (int e = 0; e < 4; e++)
        v[e] = kcs_widen(__ldg(p + e));
}
template <typename H> __device__ __forceinline__ void load_vector(const H *p, float (&v)[4])
{
#pragma unroll
    for (int e = 0; e < 4; e++)
        v[e] = kcs_widen(p[e]);
}
template <typename H> __device__ __forceinline__ void store_vector(H *p, const float (&v)[4])
{
#pragma unroll
    for (int e = 0; e < 4; e++)
        p[e] = kcs_narrow<H>(v[e]);
}

/* What one launch of the tiled kernel needs: In is the storage type of a
 * and b, Out that of c and out, computed in T = kcs_compute<In>. */
template <typename In, typename Out> struct gemm_params {
    using T = kcs_compute<In>;
    const In *a, *b;     /* as stored (docs/gemm.md) */
    const Out *c;        /* read only when beta != 0 */
    Out *out;            /* c_out, or the split-k scratch (Out = T) */
    int m, n, k;
    size_t lda, ldb;     /* row lengths of a and b as stored; c and out have n */
    T alpha, beta;       /* 1 and 0 for split-k partial sums */
    int tiles_n;         /* tiles across n: blockIdx.x = tile row * tiles_n + tile column */
    int k_per_split;     /* k slice of blockIdx.z; a multiple of BLOCK_K */
    size_t split_stride; /* elements between the slices' outputs (m * n; 0 for one slice) */
    int vector_out;      /* n a multiple of the vector and out (and c) 16-byte aligned */
};

/* Loads one operand's BLOCK_K x ROWS tiles from global memory into shared
 * memory stored k-major, tile[p][r] for k index p and row r of the tile (r:
 * a row of op(A) or a column of op(B)). K_CONTIGUOUS: the operand is stored
 * with k along its rows (A as stored, B transposed), element (p, r) at
 * base[(r0 + r) * ld + k0 + p]; otherwise at base[(k0 + p) * ld + r0 + r].
 * Each thread loads SLOTS 16-byte vectors along the stored rows, the same
 * positions in every tile: K_CONTIGUOUS, side by side in one stored row (a
 * tile's stored rows are short: BLOCK_K elements), so that the slots lie at
 * constant offsets from one pointer; otherwise one per LINE_STEP stored rows,
 * so that a warp reads whole rows of the tile. */
template <typename In, int ROWS, int BK, int THREADS, bool K_CONTIGUOUS, int MODE> struct tile_loader {
    using T = kcs_compute<In>; /* loads widen a 16-bit In to float */
    static constexpr int V = vector16<T>::width;
    static constexpr int per_line = K_CONTIGUOUS ? BK / V : ROWS / V; /* vectors per stored row */
    static constexpr int slots = ROWS * BK / V / THREADS;
    static constexpr int line_step = K_CONTIGUOUS ? 0 : THREADS / per_line; /* stored rows between slots */
    static_assert(ROWS * BK % (V * THREADS) == 0 && slots >= 1,
                  "a tile must be a whole number of 16-byte vectors per thread");
    static_assert(K_CONTIGUOUS ? per_line % slots == 0 : THREADS % per_line == 0,
                  "a thread's vectors must lie in one stored row (K_CONTIGUOUS) or the threads must cover "
                  "whole stored rows of a tile");

    const In *pointer; /* this thread's slot-0 vector of the current tile */
    size_t slot_step;  /* elements between slots */
    size_t tile_step;  /* elements between tiles along k */
    int line, offset;  /* slot 0's stored row and position in it, relative to the tile */
    int rows_left;     /* rows of the operand from the tile's first (valid r < rows_left) */
    int k_left;        /* k indices left from the tile's first (valid p < k_left) */
    T staged[slots][V];

    __device__ __forceinline__ tile_loader(const In *base, size_t ld, int row0, int rows, int k0, int k_end,
                                           int thread)
    {
        const int first = K_CONTIGUOUS ? thread * slots : thread; /* the first vector's index in the tile */
        line = first / per_line;
        offset = first % per_line * V;
        slot_step = K_CONTIGUOUS ? (size_t)V : (size_t)line_step * ld;
        tile_step = K_CONTIGUOUS ? (size_t)BK : (size_t)BK * ld;
        rows_left = rows - row0;
        k_left = k_end - k0;
        if (K_CONTIGUOUS)
            pointer = base + (size_t)(row0 + line) * ld + (size_t)(k0 + offset);
        else
            pointer = base + (size_t)(k0 + line) * ld + (size_t)(row0 + offset);
    }

    /* Slot s's stored row and position in it, relative to the tile. */
    __device__ __forceinline__ int line_of(int s) const
    {
        return K_CONTIGUOUS ? line : line + s * line_step;
    }

    __device__ __forceinline__ int offset_of(int s) const
    {
        return K_CONTIGUOUS ? offset + s * V : offset;
    }

    /* Global loads of the current tile into staged (zeros outside the operand). */
    __device__ __forceinline__ void fetch()
    {
#pragma unroll
        for (int s = 0; s < slots; s++) {
            const In *q = pointer + s * slot_step;
            if (MODE == full_tiles) {
                load_read_only(q, staged[s]);
                continue;
            }
            /* K_CONTIGUOUS: the vector runs along k in one row r;
             * otherwise along r at one k index p. */
            const bool line_valid = line_of(s) < (K_CONTIGUOUS ? rows_left : k_left);
            const int along_limit = K_CONTIGUOUS ? k_left : rows_left;
            if (MODE == vector_edges) {
                /* The stored rows are a multiple of V long, so a vector
                 * that starts inside a row ends inside it. */
                if (line_valid && offset_of(s) < along_limit) {
                    load_read_only(q, staged[s]);
                } else {
#pragma unroll
                    for (int e = 0; e < V; e++)
                        staged[s][e] = T(0);
                }
            } else {
#pragma unroll
                for (int e = 0; e < V; e++)
                    staged[s][e] = line_valid && offset_of(s) + e < along_limit ? kcs_widen(__ldg(q + e)) : T(0);
            }
        }
    }

    /* Moves to the next tile along k. */
    __device__ __forceinline__ void advance()
    {
        pointer += tile_step;
        k_left -= BK;
    }

    /* Stores staged into tile[p][r]. */
    __device__ __forceinline__ void store(T (*tile)[ROWS + V]) const
    {
#pragma unroll
        for (int s = 0; s < slots; s++) {
            if (K_CONTIGUOUS) {
#pragma unroll
                for (int e = 0; e < V; e++)
                    tile[offset_of(s) + e][line_of(s)] = staged[s][e];
            } else {
                store_vector(&tile[line_of(s)][offset_of(s)], staged[s]);
            }
        }
    }
};

/* One block computes one tile of C (or its partial sums over one k slice):
 * see the header comment. */
template <typename In, typename Out, bool TRANSPOSE_A, bool TRANSPOSE_B, int MODE>
__global__ void __launch_bounds__(shape<kcs_compute<In>>::threads, shape<kcs_compute<In>>::min_blocks)
kcs_gemm_tiled(const gemm_params<In, Out> g)
{
    using T = kcs_compute<In>;
    using S = shape<T>;
    constexpr int V = S::vector, BM = S::block_m, BN = S::block_n, BK = S::block_k;
    constexpr int TM = S::thread_m, TN = S::thread_n, LM = S::lanes_m, LN = S::lanes_n;
    constexpr bool checked = MODE != full_tiles;

    /* Rows padded by one vector: the transposing stores of a K_CONTIGUOUS
     * operand then hit different banks for different k (docs in the header). */
    __shared__ __align__(16) T a_tile[2][BK][BM + V];
    __shared__ __align__(16) T b_tile[2][BK][BN + V];

    const int thread = threadIdx.x;
    const int row0 = (int)(blockIdx.x / (unsigned)g.tiles_n) * BM;
    const int col0 = (int)(blockIdx.x % (unsigned)g.tiles_n) * BN;
    const int k_begin = (int)blockIdx.z * g.k_per_split;
    const int k_end = (int)min((long long)g.k, (long long)k_begin + g.k_per_split);

    tile_loader<In, BM, BK, S::threads, !TRANSPOSE_A, MODE> load_a(g.a, g.lda, row0, g.m, k_begin, k_end,
                                                                   thread);
    tile_loader<In, BN, BK, S::threads, TRANSPOSE_B, MODE> load_b(g.b, g.ldb, col0, g.n, k_begin, k_end,
                                                                  thread);

    const int warp = thread / 32, lane = thread % 32;
    const int a_offset = warp / S::warps_n * S::warp_tile_m + lane / LN * V;
    const int b_offset = warp % S::warps_n * S::warp_tile_n + lane % LN * V;

    T acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = T(0);

    const int tiles = (k_end - k_begin + BK - 1) / BK;
    load_a.fetch();
    load_b.fetch();
    load_a.store(a_tile[0]);
    load_b.store(b_tile[0]);
    __syncthreads();

    /* The next tile's loads are in flight while this tile is computed. In
     * full-tiles mode the last tile fetches itself again and stores that
     * into the buffer no one reads any more, rather than branching around
     * both: with ptxas 13.0 that is what fits 128 registers without spills
     * there, while the checked modes fit only with the branches. */
    constexpr bool refetch_last = !checked;
    /* Two tiles per trip in full-tiles mode: the buffers' addresses become
     * constants and fewer registers move (90% of the loop's instructions are
     * FFMA rather than 87%); the checked modes would spill. */
    constexpr int tiles_per_trip = checked ? 1 : 2;
#pragma unroll tiles_per_trip
    for (int t = 0; t < tiles; t++) {
        const int buffer = t & 1;
        const bool more = t + 1 < tiles;
        if (more) {
            load_a.advance();
            load_b.advance();
        }
        if (refetch_last || more) {
            load_a.fetch();
            load_b.fetch();
        }
#pragma unroll
        for (int p = 0; p < BK; p++) {
            T a[TM / V][V], b[TN / V][V];
#pragma unroll
            for (int c = 0; c < TM / V; c++)
                load_vector(&a_tile[buffer][p][a_offset + c * LM * V], a[c]);
#pragma unroll
            for (int d = 0; d < TN / V; d++)
                load_vector(&b_tile[buffer][p][b_offset + d * LN * V], b[d]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fused(a[i / V][i % V], b[j / V][j % V], acc[i][j]);
        }
        if (refetch_last || more) {
            /* the other buffer's readers passed the barrier of the last tile */
            load_a.store(a_tile[buffer ^ 1]);
            load_b.store(b_tile[buffer ^ 1]);
        }
        __syncthreads();
    }

    /* Epilogue: out = alpha * acc, or fma(alpha, acc, beta * c); c unread when beta = 0. */
    Out *out = g.out + (size_t)blockIdx.z * g.split_stride;
    const bool read_c = g.beta != T(0);
#pragma unroll
    for (int c = 0; c < TM / V; c++) {
#pragma unroll
        for (int r = 0; r < V; r++) {
            const int i = row0 + a_offset + c * LM * V + r;
            if (checked && i >= g.m)
                continue;
            Out *out_row = out + (size_t)i * (size_t)g.n;
            const Out *c_row = read_c ? g.c + (size_t)i * (size_t)g.n : nullptr;
#pragma unroll
            for (int d = 0; d < TN / V; d++) {
                const int j = col0 + b_offset + d * LN * V;
                if (!checked || (g.vector_out && j < g.n)) {
                    T values[V];
                    if (read_c) {
                        T old[V];
                        load_vector(c_row + j, old);
#pragma unroll
                        for (int s = 0; s < V; s++)
                            values[s] = fused(g.alpha, acc[c * V + r][d * V + s], g.beta * old[s]);
                    } else {
#pragma unroll
                        for (int s = 0; s < V; s++)
                            values[s] = g.alpha * acc[c * V + r][d * V + s];
                    }
                    store_vector(out_row + j, values);
                } else {
#pragma unroll
                    for (int s = 0; s < V; s++) {
                        if (j + s >= g.n)
                            continue;
                        const T value = acc[c * V + r][d * V + s];
                        out_row[j + s] = kcs_narrow<Out>(read_c ? fused(g.alpha, value, g.beta * kcs_widen(c_row[j + s]))
                                                                : g.alpha * value);
                    }
                }
            }
        }
    }
}

/* Split-k's second step: out = alpha * (sum of the slices in slice order) + beta * c,
 * partial sums in the compute type T, c and out in storage type Out. */
template <typename T, typename Out>
__global__ void kcs_gemm_split_sum(const T *__restrict__ partials, int splits, size_t count, const Out *c, Out *out,
                                   T alpha, T beta)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t index = (size_t)blockIdx.x * blockDim.x + threadIdx.x; index < count; index += stride) {
        T sum = partials[index];
        for (int z = 1; z < splits; z++)
            sum += partials[(size_t)z * count + index];
        out[index] = kcs_narrow<Out>(beta != T(0) ? fused(alpha, sum, beta * kcs_widen(c[index])) : alpha * sum);
    }
}

/* alpha = 0 or k = 0: out = beta * c, one rounded product in the compute
 * type (then one rounding to a 16-bit Out); zeros (c unread) when beta = 0. */
template <typename Out> __global__ void kcs_gemm_scale(const Out *c, Out *out, size_t count, kcs_compute<Out> beta)
{
    using T = kcs_compute<Out>;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t index = (size_t)blockIdx.x * blockDim.x + threadIdx.x; index < count; index += stride)
        out[index] = kcs_narrow<Out>(beta != T(0) ? beta * kcs_widen(c[index]) : T(0));
}

/* Host side: how a GEMM is cut into launches of the tiled kernel. Plain
 * functions of the arguments (no CUDA calls), so that they can be checked
 * apart from a device. */

/* What a run launches, decided before the timer starts. */
enum gemm_plan { plan_nothing, plan_scale, plan_gemm };

gemm_plan plan_of(const kcs_gemm_args *g)
{
    if (g->m == 0 || g->n == 0)
        return plan_nothing;
    if (g->alpha == 0.0 || g->k == 0)
        return plan_scale;
    return plan_gemm;
}

/* The grid: tiles of C and slices of k. */
struct tiled_split {
    size_t tiles_m, tiles_n, tiles; /* tiles of C down, across, and in all */
    size_t splits, k_per_split;     /* slices of k and the length of each but the last */
    size_t workspace_bytes;         /* scratch for the slices' partial sums; 0 for one slice */
};

/* Splits k when the tiles fill less than half a wave of resident blocks. */
template <typename T> tiled_split split_of(const kcs_gemm_args *g, int sm_count)
{
    using S = shape<T>;
    const size_t m = g->m, n = g->n, k = g->k;
    tiled_split split = {};
    split.tiles_m = (m + S::block_m - 1) / S::block_m;
    split.tiles_n = (n + S::block_n - 1) / S::block_n;
    split.tiles = split.tiles_m * split.tiles_n;
    const size_t wave = (size_t)(sm_count > 0 ? sm_count : 1) * S::min_blocks;
    size_t splits = 1;
    if (split.tiles * 2 <= wave) {
        splits = wave / split.tiles;
        if (splits > k / KCS_GEMM_SPLIT_MIN_K)
            splits = k / KCS_GEMM_SPLIT_MIN_K;
        const size_t most = (size_t)KCS_GEMM_SPLIT_MAX_BYTES / (m * n * sizeof(T));
        if (splits > most)
            splits = most;
        if (splits < 2)
            splits = 1;
    }
    /* Whole tiles of k per slice; the rounding may leave fewer slices. */
    size_t k_per_split = (k + splits - 1) / splits;
    k_per_split = (k_per_split + S::block_k - 1) / S::block_k * S::block_k;
    split.k_per_split = k_per_split;
    split.splits = (k + k_per_split - 1) / k_per_split;
    split.workspace_bytes = split.splits > 1 ? split.splits * m * n * sizeof(T) : 0;
    return split;
}

bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

template <typename In, typename Out> using tiled_kernel = void (*)(const gemm_params<In, Out>);

template <typename In, typename Out, int MODE> tiled_kernel<In, Out> tiled_for(int transpose_a, int transpose_b)
{
    if (!transpose_a)
        return transpose_b ? kcs_gemm_tiled<In, Out, false, true, MODE> : kcs_gemm_tiled<In, Out, false, false, MODE>;
    return transpose_b ? kcs_gemm_tiled<In, Out, true, true, MODE> : kcs_gemm_tiled<In, Out, true, false, MODE>;
}

/* One launch of the tiled kernel (and of the split sum when splits > 1). */
template <typename In, typename Out> struct tiled_launch {
    tiled_kernel<In, Out> kernel;
    int mode;               /* edge_mode of kernel */
    dim3 grid;              /* tiles x 1 x slices */
    gemm_params<In, Out> params;
    int splits;
};

/* The launch for m, n, k > 0 and alpha != 0, writing out: c_out (of the
 * storage type Out) for one slice, or split's workspace (Out the compute
 * type, c unused) when it has more than one. */
template <typename In, typename Out>
tiled_launch<In, Out> tiled_launch_of(const kcs_gemm_args *g, const tiled_split &split, const In *a, const In *b,
                                      const Out *c, Out *out)
{
    using T = kcs_compute<In>;
    using S = shape<T>;
    constexpr int V = S::vector;
    const size_t m = g->m, n = g->n, k = g->k;
    const size_t lda = g->transpose_a ? m : k, ldb = g->transpose_b ? k : n;
    const bool sliced = split.splits > 1;
    /* the slices' partial sums are unscaled; the split sum applies alpha and beta */
    const bool read_c = !sliced && g->beta != 0.0;
    const bool operands_aligned = aligned16(a) && aligned16(b);
    const bool out_aligned = aligned16(out) && (!read_c || aligned16(c));

    tiled_launch<In, Out> launch = {};
    gemm_params<In, Out> &p = launch.params;
    p.a = a;
    p.b = b;
    p.c = read_c ? c : nullptr;
    p.out = out;
    p.m = (int)m;
    p.n = (int)n;
    p.k = (int)k;
    p.lda = lda;
    p.ldb = ldb;
    p.alpha = sliced ? T(1) : (T)g->alpha;
    p.beta = read_c ? (T)g->beta : T(0);
    p.tiles_n = (int)split.tiles_n;
    p.k_per_split = (int)split.k_per_split;
    p.split_stride = sliced ? m * n : 0;
    p.vector_out = n % V == 0 && out_aligned;
    if (m % S::block_m == 0 && n % S::block_n == 0 && k % S::block_k == 0 && operands_aligned && out_aligned)
        launch.mode = full_tiles;
    else if (lda % V == 0 && ldb % V == 0 && operands_aligned)
        launch.mode = vector_edges;
    else
        launch.mode = scalar_edges;
    launch.kernel = launch.mode == full_tiles ? tiled_for<In, Out, full_tiles>(g->transpose_a, g->transpose_b)
                    : launch.mode == vector_edges
                        ? tiled_for<In, Out, vector_edges>(g->transpose_a, g->transpose_b)
                        : tiled_for<In, Out, scalar_edges>(g->transpose_a, g->transpose_b);
    launch.grid = dim3((unsigned int)split.tiles, 1, (unsigned int)split.splits);
    launch.splits = (int)split.splits;
    return launch;
}

/* End of what runs without a device. */

constexpr int elementwise_threads = 256;

/* Blocks for a grid-stride loop over count elements: enough for every SM, no more than needed. */
unsigned int elementwise_blocks(size_t count, int sm_count)
{
    const size_t needed = (count + elementwise_threads - 1) / elementwise_threads;
    const size_t most = (size_t)(sm_count > 0 ? sm_count : 1) * 8;
    return (unsigned int)(needed < most ? (needed > 0 ? needed : 1) : most);
}

/* A GEMM call's operands as its rows' storage types: a and b of In, c and c_out of Out. */
template <typename In, typename Out> struct gemm_operands {
    const In *a, *b;
    const Out *c;
    Out *c_out;
};

/* The operands of a call whose buffers kcs_cuda_timed has checked, where its sizes are those the
 * tiled kernel and cuBLAS take (kcs_gemm_sizes_fit). */
template <typename In, typename Out>
kcs_status operands_of(const kcs_gemm_args *g, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                       gemm_operands<In, Out> *o, kcs_error *err)
{
    const kcs_status status = kcs_gemm_sizes_fit(g, kcs_gemm_most_size, err);
    if (status == KCS_OK)
        *o = {(const In *)inputs[0]->data, (const In *)inputs[1]->data, (const Out *)inputs[2]->data,
              (Out *)outputs[0]->data};
    return status;
}

template <typename Out>
kcs_status launch_scale(kcs_device *device, const kcs_gemm_args *g, const Out *c, Out *out, kcs_error *err)
{
    const size_t count = g->m * g->n;
    kcs_gemm_scale<Out><<<elementwise_blocks(count, device->sm_count), elementwise_threads, 0, device->stream>>>(
        c, out, count, (kcs_compute<Out>)g->beta);
    KCS_CUDA_CHECK_LAUNCH("kcs_gemm_scale");
    return KCS_OK;
}

/* The tiled kernel with a and b stored as In, c and c_out as Out. */
template <typename In, typename Out> KCS_KERNEL_RUN(run_tiled_typed)
{
    using T = kcs_compute<In>;
    const kcs_gemm_args *g = &args->gemm;
    const gemm_plan plan = plan_of(g);
    /* one slice: a launch writing c_out; several: one writing T partial sums, then the split sum */
    tiled_launch<In, Out> single = {};
    tiled_launch<In, T> sliced = {};
    gemm_operands<In, Out> o = {};
    auto prepare = [&]() -> kcs_status {
        kcs_status status = operands_of(g, inputs, outputs, &o, err);
        if (status != KCS_OK || plan != plan_gemm)
            return status;
        const tiled_split split = split_of<T>(g, device->sm_count);
        if (split.tiles > INT_MAX)
            return kcs_fail(err, KCS_UNSUPPORTED, "gemm: %zu tiles are more than a grid has", split.tiles);
        if (split.splits > 1) {
            status = kcs_cuda_reserve(&device->partials, split.workspace_bytes, err);
            if (status == KCS_OK)
                sliced = tiled_launch_of<In, T>(g, split, o.a, o.b, nullptr, (T *)device->partials.data);
        } else {
            single = tiled_launch_of<In, Out>(g, split, o.a, o.b, o.c, o.c_out);
        }
        return status;
    };
    auto launch = [&]() -> kcs_status {
        if (plan == plan_scale) {
            return launch_scale<Out>(device, g, o.c, o.c_out, err);
        } else if (plan == plan_gemm && sliced.splits > 1) {
            sliced.kernel<<<sliced.grid, shape<T>::threads, 0, device->stream>>>(sliced.params);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_tiled");
            const size_t count = g->m * g->n;
            kcs_gemm_split_sum<T, Out><<<elementwise_blocks(count, device->sm_count), elementwise_threads, 0,
                                         device->stream>>>(sliced.params.out, sliced.splits, count, o.c, o.c_out,
                                                           (T)g->alpha, (T)g->beta);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_split_sum");
        } else if (plan == plan_gemm) {
            single.kernel<<<single.grid, shape<T>::threads, 0, device->stream>>>(single.params);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_tiled");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* Whether storage type In is 16 bits, computed in f32 (its cases may say c_dtype=f32). */
template <typename In> constexpr bool sixteen_bits = sizeof(In) == 2;

/* The tiled row of storage type In, c and c_out of the type kcs_gemm_with_output chooses. */
template <typename In> KCS_KERNEL_RUN(run_tiled)
{
    return kcs_gemm_with_output<In>(args, [&](auto out) {
        return run_tiled_typed<In, typename decltype(out)::type>(device, args, inputs, outputs, kernel_seconds, err);
    });
}

/* cuBLAS, column-major: C^T = op(B)^T op(A)^T (docs/gemm.md), into c_out:
 * cublasSgemm or cublasDgemm, or with TF32 cublasGemmEx on TF32 tensor cores. */
template <typename T, bool TF32>
kcs_status cublas_gemm(kcs_device *device, const kcs_gemm_args *g, const T *a, const T *b, T *c_out, kcs_error *err)
{
    static_assert(!TF32 || sizeof(T) == 4, "TF32 is an f32 mode");
    const T alpha = (T)g->alpha, beta = (T)g->beta;
    const int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    const cublasOperation_t op_b = g->transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = g->transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = g->transpose_b ? k : n, lda = g->transpose_a ? m : k;
    if constexpr (TF32)
        KCS_CUBLAS_CHECK(cublasGemmEx(device->blas, op_b, op_a, n, m, k, &alpha, b, CUDA_R_32F, ldb, a,
                                      CUDA_R_32F, lda, &beta, c_out, CUDA_R_32F, n,
                                      CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    else if constexpr (sizeof(T) == 4)
        KCS_CUBLAS_CHECK(cublasSgemm(device->blas, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c_out, n));
    else
        KCS_CUBLAS_CHECK(cublasDgemm(device->blas, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c_out, n));
    return KCS_OK;
}

/* cuBLAS's name of a storage type. */
template <typename T> constexpr cudaDataType_t cuda_data_type();
template <> constexpr cudaDataType_t cuda_data_type<__half>() { return CUDA_R_16F; }
template <> constexpr cudaDataType_t cuda_data_type<__nv_bfloat16>() { return CUDA_R_16BF; }
template <> constexpr cudaDataType_t cuda_data_type<float>() { return CUDA_R_32F; }

/* 16-bit a and b, c_out in Out (16-bit or f32): cublasGemmEx, as cublas_gemm,
 * with f32 scalars and CUBLAS_COMPUTE_32F_PEDANTIC: the plain f32 arithmetic
 * that docs/gemm.md's bound for these modes assumes. CUBLAS_COMPUTE_32F
 * would let cuBLAS run the products on tensor cores, whose accumulation
 * may align and truncate inside a block product (Fasi et al. 2021), which
 * is the later tensor-core mode's, with its own bound. */
template <typename In, typename Out, cublasComputeType_t Compute>
kcs_status cublas_gemm_ex(kcs_device *device, const kcs_gemm_args *g, const In *a, const In *b, Out *c_out,
                          kcs_error *err)
{
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    const int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    const cublasOperation_t op_b = g->transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = g->transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int ldb = g->transpose_b ? k : n, lda = g->transpose_a ? m : k;
    KCS_CUBLAS_CHECK(cublasGemmEx(device->blas, op_b, op_a, n, m, k, &alpha, b, cuda_data_type<In>(), ldb, a,
                                  cuda_data_type<In>(), lda, &beta, c_out, cuda_data_type<Out>(), n, Compute,
                                  CUBLAS_GEMM_DEFAULT));
    return KCS_OK;
}

/* A cuBLAS peer row for a and b stored as In, c and c_out as Out: c copied
 * into c_out where cuBLAS would read it, then cublas_gemm<In, TF32> (f32,
 * f64) or cublas_gemm_ex<In, Out> (f16, bf16; on tensor cores when Tensor). */
template <typename In, typename Out, bool TF32, bool Tensor = false> KCS_KERNEL_RUN(run_cublas_typed)
{
    const kcs_gemm_args *g = &args->gemm;
    const gemm_plan plan = plan_of(g);
    gemm_operands<In, Out> o = {};
    auto prepare = [&]() -> kcs_status {
        const kcs_status status = operands_of(g, inputs, outputs, &o, err);
        if (status != KCS_OK)
            return status;
        /* The handle is shared: pin its modes on every run (ceilings.cu sets the math mode too). */
        KCS_CUBLAS_CHECK(cublasSetPointerMode(device->blas, CUBLAS_POINTER_MODE_HOST));
        KCS_CUBLAS_CHECK(cublasSetMathMode(device->blas, CUBLAS_DEFAULT_MATH));
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (plan == plan_scale) {
            return launch_scale<Out>(device, g, o.c, o.c_out, err);
        } else if (plan == plan_gemm) {
            if (g->beta != 0.0 && (const void *)o.c != (const void *)o.c_out)
                KCS_CUDA_CHECK(cudaMemcpyAsync(o.c_out, o.c, g->m * g->n * sizeof(Out), cudaMemcpyDeviceToDevice,
                                               device->stream));
            if constexpr (sixteen_bits<In> && Tensor)
                return cublas_gemm_ex<In, Out, CUBLAS_COMPUTE_32F>(device, g, o.a, o.b, o.c_out, err);
            else if constexpr (sixteen_bits<In>)
                return cublas_gemm_ex<In, Out, CUBLAS_COMPUTE_32F_PEDANTIC>(device, g, o.a, o.b, o.c_out, err);
            else
                return cublas_gemm<In, TF32>(device, g, o.a, o.b, o.c_out, err);
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* A cuBLAS row of storage type T, c and c_out of the type kcs_gemm_with_output chooses (TF32 is an f32
 * mode: false for the 16-bit rows, whose output may be f32). */
template <typename T, bool TF32, bool Tensor = false> KCS_KERNEL_RUN(run_cublas)
{
    static_assert(!TF32 || !sixteen_bits<T>, "TF32 is an f32 mode");
    return kcs_gemm_with_output<T>(args, [&](auto out) {
        return run_cublas_typed<T, typename decltype(out)::type, TF32, Tensor>(device, args, inputs, outputs,
                                                                               kernel_seconds, err);
    });
}

/* supports() of the plain f32 rows: mode=tf32 cases are the cublas-tf32 row's. */
KCS_KERNEL_SUPPORTS(supports_plain_f32)
{
    (void)device;
    if (args->gemm.tf32)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "mode=tf32 cases are the cublas-tf32 variant's; this variant computes in plain f32 "
                        "(inside the TF32 bound, but its timing would be filed under TF32)");
    return KCS_OK;
}

/* supports() of cublas-tf32: mode=tf32 cases only. */
KCS_KERNEL_SUPPORTS(supports_tf32_only)
{
    (void)device;
    if (!args->gemm.tf32)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tf32 cases only; plain f32 cases are the cublas and tiled variants'");
    return KCS_OK;
}

/* supports() of cublas-tensor: mode=tensor cases only, whose bound allows
 * tensor-core accumulation (docs/gemm.md, "Tensor cores"). */
KCS_KERNEL_SUPPORTS(supports_tensor_only)
{
    (void)device;
    if (!args->gemm.tensor_cores)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tensor cases only: tensor cores may align and truncate, which the plain "
                        "f16 and bf16 bound does not allow (that is the PEDANTIC cublas variant's)");
    if (args->gemm.beta != 0.0 && kcs_gemm_c_dtype(args) == KCS_BF16)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "cuBLAS's tensor-core path does not round a bf16 C_out once when beta != 0: on an H100 "
                        "(cuBLAS 13.0) gemm/bf16-tensor-nt-200x136x144 (beta=1) had 2041 of 27200 elements "
                        "beyond the one-rounding bound, by up to 1.0x, as rounding alpha AB to bf16 before "
                        "adding beta C would (docs/gemm.md, \"Tensor cores\"); the PEDANTIC cublas row "
                        "passes it");
    return KCS_OK;
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_F32, "tiled",
     "128x128x8 tiles, 256 threads x 8x8 f32 FMAs in registers, LDS.128, double-buffered shared memory; split-k when few tiles",
     run_tiled<float>, supports_plain_f32},
    {"gemm", KCS_F64, "tiled", "as f32 with 128x64x8 tiles, 8x4 f64 FMAs per thread", run_tiled<double>, NULL},
    {"gemm", KCS_F32, "cublas", "peer: cublasSgemm, default math (no TF32), row-major as C^T = B^T A^T",
     run_cublas<float, false>, supports_plain_f32, "cuBLAS"},
    {"gemm", KCS_F64, "cublas", "peer: cublasDgemm, row-major as C^T = B^T A^T", run_cublas<double, false>, NULL,
     "cuBLAS"},
    {"gemm", KCS_F32, "cublas-tf32", "cublasGemmEx with CUBLAS_COMPUTE_32F_FAST_TF32 (mode=tf32 cases)",
     run_cublas<float, true>, supports_tf32_only, "cuBLAS"},
    {"gemm", KCS_F16, "tiled", "as f32: f16 widened to f32 on load, f32 FMAs, C_out rounded once to f16 (or f32)",
     run_tiled<__half>, NULL},
    {"gemm", KCS_BF16, "tiled", "as f32: bf16 widened to f32 on load, f32 FMAs, C_out rounded once to bf16 (or f32)",
     run_tiled<__nv_bfloat16>, NULL},
    {"gemm", KCS_F16, "cublas", "peer: cublasGemmEx, CUDA_R_16F inputs, CUBLAS_COMPUTE_32F_PEDANTIC (no tensor cores)",
     run_cublas<__half, false>, NULL, "cuBLAS"},
    {"gemm", KCS_BF16, "cublas", "peer: cublasGemmEx, CUDA_R_16BF inputs, CUBLAS_COMPUTE_32F_PEDANTIC (no tensor cores)",
     run_cublas<__nv_bfloat16, false>, NULL, "cuBLAS"},
    /* the peers of the tensor-core mode (docs/gemm.md, "Tensor cores") */
    {"gemm", KCS_F16, "cublas-tensor", "peer: cublasGemmEx, CUDA_R_16F inputs, CUBLAS_COMPUTE_32F (tensor cores; mode=tensor cases)",
     run_cublas<__half, false, true>, supports_tensor_only, "cuBLAS"},
    {"gemm", KCS_BF16, "cublas-tensor", "peer: cublasGemmEx, CUDA_R_16BF inputs, CUBLAS_COMPUTE_32F (tensor cores; mode=tensor cases)",
     run_cublas<__nv_bfloat16, false, true>, supports_tensor_only, "cuBLAS"},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_simt_kernels = KCS_KERNEL_TABLE(rows);
