/* tensor_mma.cu: kcs's own GEMM on tensor cores, C_out = alpha * op(A) *
 * op(B) + beta * C, row-major, op = N or T (docs/gemm.md is the normative
 * definition; its section "Tensor cores" derives the bound these rows are
 * checked against). Same inputs and layout as cuda/gemm/simt.cu: a is m x k (k x m
 * when transposed), b is k x n (n x k when transposed), c and c_out m x n.
 *
 * Rows (the table at the end):
 *
 *   tensor       f16 and bf16, mode=tensor cases only: mma.sync.m16n8k16
 *                with f32 accumulators, c_out in the storage type or in f32
 *                where the case says c_dtype=f32.
 *   tensor-tf32  f32, mode=tf32 cases only: each input rounded to TF32 to
 *                nearest (cvt.rna.tf32.f32, relative error below 2^-11,
 *                inside the bound's 2^-10), mma.sync.m16n8k8.tf32, f32
 *                accumulators.
 *
 * f64's `tensor` row, on the FP64 tensor cores, is cuda/gemm/tensor_f64.cu:
 * its shapes, pipeline and layouts differ from these.
 *
 * Instructions and why: mma.sync (PTX ISA 7.0+, sm_80 and later) is the
 * portable warp-level tensor-core instruction, whose register fragments are
 * documented element by element, so every index below can be checked by
 * hand against the PTX ISA ("Matrix fragments for mma.m16n8k16 / m16n8k8").
 * On Hopper (sm_90a) the `wgmma` rows of cuda/gemm/tensor_wgmma.cu (wgmma.mma_async
 * fed by TMA through an mbarrier pipeline) are about 3.7x faster; these rows
 * stay as the path for every other card and for the cases wgmma refuses
 * (docs/gemm.md, "Tensor cores", says what each row reaches).
 *
 * Organisation: one kernel template over the storage type In of a and b and
 * Out of c and c_out. Each block computes a BLOCK_M x BLOCK_N tile of C_out
 * (128 x 128 with 8 warps of 64 x 32), each warp 4 x 4 instructions' worth
 * of accumulators (64 floats per thread). k is walked BLOCK_K at a time (32
 * 16-bit elements, 16 floats) through two shared-memory buffers: while
 * the warps run the tensor-core instructions on one, every thread's 16-byte
 * global loads of the next tile are in flight into registers, stored into
 * the other buffer afterwards, then one barrier (pipeline depth 2: shared
 * plus registers). Shared memory holds both operands k-contiguous
 * (a_tile[row of op(A)][k], b_tile[column of op(B)][k]), rows padded to 80
 * bytes so that a warp's fragment reads (8 rows x 4 words) fall in
 * 32 different banks. Operands stored with k along their rows (A as stored,
 * B transposed) are copied 16 bytes at a time; the others are transposed on
 * their way in (scalar stores). The 16-bit types are kept as stored (the
 * tensor core reads them exactly); f32 is kept as f32 and rounded to TF32
 * as a fragment is read.
 *
 * Edges and alignment: any m, n, k. A 16-byte chunk of an operand that lies
 * wholly inside the matrix, from an operand whose rows are a multiple of 16
 * bytes and whose base is 16-byte aligned, is one vector load; any other is
 * loaded element by element, each outside the matrix as zero (0 * 0 adds
 * nothing and makes no NaN from an infinity). Rows and columns beyond m and
 * n are computed on zeros and never stored; c and c_out are read and
 * written element by element, so they need no alignment.
 *
 * Precision: every product of two f16, two bf16, two TF32 values is exact
 * in f32, and the tensor cores accumulate them into f32 in block steps that
 * may align and truncate (Fasi, Higham, Mikaitis and Pranesh, PeerJ CS
 * 7:e330, 2021): that is the mode's bound, about 2.5 times plain f32's. Then
 * c_out = alpha * acc (beta = 0) or fma(alpha, acc, beta * c) in f32, rounded
 * once to Out. Accumulating in f32 is what the mode is: an f16 accumulator
 * (mma's .f16 form) rounds every partial sum to 11 bits, which the bound
 * rules out (tests/saboteur_gemm.c, accumulates-in-16-bits).
 *
 * What is not read (docs/gemm.md): m = 0 or n = 0 launches nothing; alpha =
 * 0 or k = 0 runs the same kernel with no k tiles, so a and b are never read
 * and c_out = beta * c (zeros, c unread, when beta = 0); beta = 0 never reads
 * c. c_out may alias c: each element of c is read by the thread that then
 * writes that element of c_out.
 *
 * Without a GPU: the tensor-core instructions are inline PTX, which the host
 * emulation (tests/cuda_gemm_emulation.sh) cannot run, so nothing in this
 * file is emulated or claimed to be; only a GPU run checks it.
 *
 * Run only it: ./build/kcs run --backend cuda --kernel 'tensor*' gemm
 */
#include <climits>
#include <cstdint>

#include "../common.cuh"
#include "gemm.cuh"

namespace {

/* Raw bits of a storage element: loads, zeros and copies move bits only. */
template <int Bytes> struct bits_type;
template <> struct bits_type<2> { using type = uint16_t; };
template <> struct bits_type<4> { using type = uint32_t; };
template <typename In> using bits_of = typename bits_type<sizeof(In)>::type;

/* One warp-level tensor-core instruction per storage type: its shape, the
 * block tiling around it, how a thread's fragments are read from the
 * k-contiguous shared tiles, and where its accumulators sit in C.
 *
 * Fragments (PTX ISA, mma.sync): lane = 4 * group + thread_in_group, group
 * in 0..7, thread_in_group in 0..3, written g and t below. */
template <typename In> struct tensor_instruction;

/* f16 and bf16: mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}. A (16 x 16)
 * in 4 registers of two consecutive-k elements (lower k in the low half):
 * (g, 2t), (g + 8, 2t), (g, 2t + 8), (g + 8, 2t + 8); B (16 x 8) in 2:
 * (k 2t, column g), (k 2t + 8, column g); C (16 x 8 f32): (g, 2t), (g, 2t + 1),
 * (g + 8, 2t), (g + 8, 2t + 1). */
struct sixteen_bit_instruction {
    static constexpr int m = 16, n = 8, k = 16, accumulators = 4;
    static constexpr int block_m = 128, block_n = 128, block_k = 32, warps_m = 2, warps_n = 4;
    static constexpr int padding = 8; /* rows of 40 elements: 80 bytes, 20 words */
    using a_fragment = uint32_t[4];
    using b_fragment = uint32_t[2];
    using accumulator = float;

    static __device__ __forceinline__ uint32_t word(const uint16_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

    template <int STRIDE>
    static __device__ __forceinline__ void load_a(a_fragment &a, const uint16_t *tile, int row, int k0, int g, int t)
    {
        a[0] = word(tile + (row + g) * STRIDE + k0 + 2 * t);
        a[1] = word(tile + (row + g + 8) * STRIDE + k0 + 2 * t);
        a[2] = word(tile + (row + g) * STRIDE + k0 + 2 * t + 8);
        a[3] = word(tile + (row + g + 8) * STRIDE + k0 + 2 * t + 8);
    }
    template <int STRIDE>
    static __device__ __forceinline__ void load_b(b_fragment &b, const uint16_t *tile, int column, int k0, int g, int t)
    {
        b[0] = word(tile + (column + g) * STRIDE + k0 + 2 * t);
        b[1] = word(tile + (column + g) * STRIDE + k0 + 2 * t + 8);
    }
    /* accumulator e of a thread: row and column inside the 16 x 8 tile */
    static __device__ __forceinline__ int row_of(int e, int g, int t) { return g + (e >> 1) * 8; }
    static __device__ __forceinline__ int column_of(int e, int g, int t) { return 2 * t + (e & 1); }
};

template <> struct tensor_instruction<__half> : sixteen_bit_instruction {
    static __device__ __forceinline__ void mma(float (&d)[4], const a_fragment &a, const b_fragment &b)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <> struct tensor_instruction<__nv_bfloat16> : sixteen_bit_instruction {
    static __device__ __forceinline__ void mma(float (&d)[4], const a_fragment &a, const b_fragment &b)
    {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

/* f32 as TF32: mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32. A (16 x 8)
 * in 4 registers: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4); B (8 x 8) in
 * 2: (k t, column g), (k t + 4, column g); C as for m16n8k16. Each f32 is
 * rounded to TF32 (10 fraction bits) to nearest, ties away, as it is read. */
template <> struct tensor_instruction<float> {
    static constexpr int m = 16, n = 8, k = 8, accumulators = 4;
    static constexpr int block_m = 128, block_n = 128, block_k = 16, warps_m = 2, warps_n = 4;
    static constexpr int padding = 4; /* rows of 20 words: 80 bytes */
    using a_fragment = uint32_t[4];
    using b_fragment = uint32_t[2];
    using accumulator = float;

    static __device__ __forceinline__ uint32_t tf32(uint32_t f32_bits)
    {
        uint32_t rounded;
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(rounded) : "f"(__uint_as_float(f32_bits)));
        return rounded;
    }
    template <int STRIDE>
    static __device__ __forceinline__ void load_a(a_fragment &a, const uint32_t *tile, int row, int k0, int g, int t)
    {
        a[0] = tf32(tile[(row + g) * STRIDE + k0 + t]);
        a[1] = tf32(tile[(row + g + 8) * STRIDE + k0 + t]);
        a[2] = tf32(tile[(row + g) * STRIDE + k0 + t + 4]);
        a[3] = tf32(tile[(row + g + 8) * STRIDE + k0 + t + 4]);
    }
    template <int STRIDE>
    static __device__ __forceinline__ void load_b(b_fragment &b, const uint32_t *tile, int column, int k0, int g, int t)
    {
        b[0] = tf32(tile[(column + g) * STRIDE + k0 + t]);
        b[1] = tf32(tile[(column + g) * STRIDE + k0 + t + 4]);
    }
    static __device__ __forceinline__ int row_of(int e, int g, int t) { return g + (e >> 1) * 8; }
    static __device__ __forceinline__ int column_of(int e, int g, int t) { return 2 * t + (e & 1); }
    static __device__ __forceinline__ void mma(float (&d)[4], const a_fragment &a, const b_fragment &b)
    {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

/* Everything the kernel derives from the instruction's tiling. */
template <typename In> struct tensor_shape : tensor_instruction<In> {
    using I = tensor_instruction<In>;
    using bits = bits_of<In>;
    static constexpr int warps = I::warps_m * I::warps_n, threads = 32 * warps;
    static constexpr int warp_m = I::block_m / I::warps_m, warp_n = I::block_n / I::warps_n;
    static constexpr int tiles_m = warp_m / I::m, tiles_n = warp_n / I::n; /* instructions per warp */
    static constexpr int vector = 16 / (int)sizeof(In);                   /* elements per 16 bytes */
    static constexpr int stride = I::block_k + I::padding;                /* shared row, in elements */
    static_assert(warp_m % I::m == 0 && warp_n % I::n == 0 && I::block_k % I::k == 0, "tiles of whole instructions");
    static_assert((stride * sizeof(In)) % 16 == 0, "shared rows must keep 16-byte chunks aligned");
    static_assert(I::block_k % vector == 0, "BLOCK_K must be a multiple of the 16-byte vector");
};

/* What one launch needs: In is the storage type of a and b, Out that of c and out. */
template <typename In, typename Out> struct tensor_params {
    using T = kcs_compute<In>;
    const In *a, *b;       /* as stored (docs/gemm.md) */
    const Out *c;          /* read only when beta != 0 */
    Out *out;
    int m, n, k;           /* k = 0 when alpha = 0: a and b unread */
    int lda, ldb;          /* row lengths of a and b as stored; c and out have n */
    T alpha, beta;
    int vector_a, vector_b; /* the operand's rows a multiple of 16 bytes, its base 16-byte aligned */
};

/* Loads one operand's ROWS x BLOCK_K tile (rows of op(A), or columns of
 * op(B)) from global memory into registers, 16-byte chunks of it as stored,
 * then stores them k-contiguous into shared memory, tile[r * stride + p].
 * K_CONTIGUOUS: element (r, p) of the tile is at base[(r0 + r) * ld + k0 +
 * p]; otherwise at base[(k0 + p) * ld + r0 + r]. */
template <typename In, int ROWS, bool K_CONTIGUOUS> struct tile_loader {
    using S = tensor_shape<In>;
    using bits = bits_of<In>;
    static constexpr int V = S::vector, BK = S::block_k;
    static constexpr int chunks = ROWS * BK / V;
    static constexpr int per_thread = chunks / S::threads;
    static_assert(chunks % S::threads == 0, "every thread loads the same number of chunks");
    /* Transposing loads: lanes 4 wide along the stored row and 8 deep along
     * k, so a warp reads 64-byte runs and its scalar shared stores spread
     * over banks. */
    static constexpr int lanes_along_row = 4;
    static_assert(K_CONTIGUOUS || (ROWS / V) % lanes_along_row == 0, "chunks across a stored row");

    uint4 staged[per_thread];

    /* Chunk s of this thread: its tile row r and k offset p (its first element). */
    static __device__ __forceinline__ void position(int s, int &r, int &p)
    {
        const int linear = (int)threadIdx.x + s * S::threads;
        if (K_CONTIGUOUS) {
            r = linear / (BK / V);
            p = (linear % (BK / V)) * V;
        } else {
            const int along = linear % lanes_along_row, deep = linear / lanes_along_row;
            p = deep % BK;
            r = ((deep / BK) * lanes_along_row + along) * V;
        }
    }

    __device__ __forceinline__ void load(const In *base, int ld, int rows, int k, int r0, int k0, bool vector_ok)
    {
        const bits *raw = reinterpret_cast<const bits *>(base);
#pragma unroll
        for (int s = 0; s < per_thread; s++) {
            int r, p;
            position(s, r, p);
            bits *e = reinterpret_cast<bits *>(&staged[s]);
            if (K_CONTIGUOUS) {
                const int row = r0 + r, first = k0 + p;
                if (vector_ok && row < rows && first + V <= k) {
                    staged[s] = __ldg(reinterpret_cast<const uint4 *>(raw + (size_t)row * ld + first));
                } else {
#pragma unroll
                    for (int v = 0; v < V; v++)
                        e[v] = row < rows && first + v < k ? __ldg(raw + (size_t)row * ld + first + v) : bits(0);
                }
            } else {
                const int along_k = k0 + p, first = r0 + r;
                if (vector_ok && along_k < k && first + V <= rows) {
                    staged[s] = __ldg(reinterpret_cast<const uint4 *>(raw + (size_t)along_k * ld + first));
                } else {
#pragma unroll
                    for (int v = 0; v < V; v++)
                        e[v] = along_k < k && first + v < rows ? __ldg(raw + (size_t)along_k * ld + first + v)
                                                                : bits(0);
                }
            }
        }
    }

    __device__ __forceinline__ void store(bits *tile) const
    {
#pragma unroll
        for (int s = 0; s < per_thread; s++) {
            int r, p;
            position(s, r, p);
            if (K_CONTIGUOUS) {
                *reinterpret_cast<uint4 *>(tile + r * S::stride + p) = staged[s];
            } else {
                const bits *e = reinterpret_cast<const bits *>(&staged[s]);
#pragma unroll
                for (int v = 0; v < V; v++)
                    tile[(r + v) * S::stride + p] = e[v];
            }
        }
    }
};

__device__ __forceinline__ float fused(float x, float y, float z)
{
    return fmaf(x, y, z);
}

/* The kernel: one block per BLOCK_M x BLOCK_N tile of c_out, blockIdx.x
 * across n and blockIdx.y down m. */
template <typename In, typename Out, bool TRANSPOSE_A, bool TRANSPOSE_B>
__global__ void __launch_bounds__(tensor_shape<In>::threads)
    kcs_gemm_tensor(const tensor_params<In, Out> params)
{
    using S = tensor_shape<In>;
    using I = tensor_instruction<In>;
    using bits = bits_of<In>;
    using T = kcs_compute<In>;
    using Acc = typename I::accumulator;
    constexpr int BM = I::block_m, BN = I::block_n, BK = I::block_k, STRIDE = S::stride;
    __shared__ __align__(16) bits a_tiles[2][BM * STRIDE];
    __shared__ __align__(16) bits b_tiles[2][BN * STRIDE];

    const int m0 = (int)blockIdx.y * BM, n0 = (int)blockIdx.x * BN;
    const int lane = (int)threadIdx.x % 32, warp = (int)threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int warp_row = (warp / I::warps_n) * S::warp_m, warp_column = (warp % I::warps_n) * S::warp_n;

    Acc acc[S::tiles_m][S::tiles_n][I::accumulators];
#pragma unroll
    for (int i = 0; i < S::tiles_m; i++)
#pragma unroll
        for (int j = 0; j < S::tiles_n; j++)
#pragma unroll
            for (int e = 0; e < I::accumulators; e++)
                acc[i][j][e] = Acc(0);

    /* A as stored has k along its rows unless transposed; B the other way round. */
    tile_loader<In, BM, !TRANSPOSE_A> a_loader;
    tile_loader<In, BN, TRANSPOSE_B> b_loader;
    const int k_tiles = (params.k + BK - 1) / BK;
    if (k_tiles > 0) {
        a_loader.load(params.a, params.lda, params.m, params.k, m0, 0, params.vector_a);
        b_loader.load(params.b, params.ldb, params.n, params.k, n0, 0, params.vector_b);
        a_loader.store(a_tiles[0]);
        b_loader.store(b_tiles[0]);
        __syncthreads();
    }
    for (int kt = 0; kt < k_tiles; kt++) {
        const int current = kt & 1;
        const bool more = kt + 1 < k_tiles;
        if (more) { /* in flight while the tensor cores work on the current tiles */
            a_loader.load(params.a, params.lda, params.m, params.k, m0, (kt + 1) * BK, params.vector_a);
            b_loader.load(params.b, params.ldb, params.n, params.k, n0, (kt + 1) * BK, params.vector_b);
        }
        const bits *a_tile = a_tiles[current], *b_tile = b_tiles[current];
#pragma unroll
        for (int k0 = 0; k0 < BK; k0 += I::k) {
            typename I::a_fragment a[S::tiles_m];
            typename I::b_fragment b[S::tiles_n];
#pragma unroll
            for (int i = 0; i < S::tiles_m; i++)
                I::template load_a<STRIDE>(a[i], a_tile, warp_row + i * I::m, k0, g, t);
#pragma unroll
            for (int j = 0; j < S::tiles_n; j++)
                I::template load_b<STRIDE>(b[j], b_tile, warp_column + j * I::n, k0, g, t);
#pragma unroll
            for (int i = 0; i < S::tiles_m; i++)
#pragma unroll
                for (int j = 0; j < S::tiles_n; j++)
                    I::mma(acc[i][j], a[i], b[j]);
        }
        if (more) {
            a_loader.store(a_tiles[current ^ 1]);
            b_loader.store(b_tiles[current ^ 1]);
        }
        __syncthreads();
    }

    /* c_out = alpha * acc (+ beta * c), in the compute type, rounded once to Out */
#pragma unroll
    for (int i = 0; i < S::tiles_m; i++)
#pragma unroll
        for (int j = 0; j < S::tiles_n; j++)
#pragma unroll
            for (int e = 0; e < I::accumulators; e++) {
                const int row = m0 + warp_row + i * I::m + I::row_of(e, g, t);
                const int column = n0 + warp_column + j * I::n + I::column_of(e, g, t);
                if (row < params.m && column < params.n) {
                    const size_t index = (size_t)row * params.n + column;
                    const T sum = (T)acc[i][j][e];
                    T value = params.alpha * sum;
                    if (params.beta != T(0))
                        value = fused(params.alpha, sum, params.beta * kcs_widen(params.c[index]));
                    params.out[index] = kcs_narrow<Out>(value);
                }
            }
}

template <typename In, typename Out> using tensor_kernel = void (*)(const tensor_params<In, Out>);

template <typename In, typename Out> tensor_kernel<In, Out> tensor_kernel_for(int transpose_a, int transpose_b)
{
    if (!transpose_a)
        return transpose_b ? kcs_gemm_tensor<In, Out, false, true> : kcs_gemm_tensor<In, Out, false, false>;
    return transpose_b ? kcs_gemm_tensor<In, Out, true, true> : kcs_gemm_tensor<In, Out, true, false>;
}

bool aligned16(const void *p)
{
    return (uintptr_t)p % 16 == 0;
}

/* The tensor-core kernel with a and b stored as In, c and c_out as Out. */
template <typename In, typename Out> KCS_KERNEL_RUN(run_tensor_typed)
{
    using S = tensor_shape<In>;
    using T = kcs_compute<In>;
    const kcs_gemm_args *g = &args->gemm;
    tensor_params<In, Out> p = {};
    const tensor_kernel<In, Out> kernel = tensor_kernel_for<In, Out>(g->transpose_a, g->transpose_b);
    const dim3 grid((unsigned int)((g->n + S::block_n - 1) / S::block_n),
                    (unsigned int)((g->m + S::block_m - 1) / S::block_m));
    auto prepare = [&]() -> kcs_status {
        /* m: a grid has at most 65535 rows of blocks */
        const kcs_status fits = kcs_gemm_sizes_fit(g, (size_t)65535 * S::block_m, err);
        if (fits != KCS_OK)
            return fits;
        p.a = (const In *)inputs[0]->data;
        p.b = (const In *)inputs[1]->data;
        p.c = g->beta != 0.0 ? (const Out *)inputs[2]->data : nullptr;
        p.out = (Out *)outputs[0]->data;
        p.m = (int)g->m;
        p.n = (int)g->n;
        p.k = g->alpha != 0.0 ? (int)g->k : 0; /* alpha = 0: a and b are not read */
        p.lda = (int)(g->transpose_a ? g->m : g->k);
        p.ldb = (int)(g->transpose_b ? g->k : g->n);
        p.alpha = (T)g->alpha;
        p.beta = (T)g->beta;
        p.vector_a = (size_t)p.lda % S::vector == 0 && aligned16(p.a);
        p.vector_b = (size_t)p.ldb % S::vector == 0 && aligned16(p.b);
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0) {
            kernel<<<grid, S::threads, 0, device->stream>>>(p);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_tensor");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* The tensor row of storage type In, c and c_out of the type kcs_gemm_with_output chooses. */
template <typename In> KCS_KERNEL_RUN(run_tensor)
{
    return kcs_gemm_with_output<In>(args, [&](auto out) {
        return run_tensor_typed<In, typename decltype(out)::type>(device, args, inputs, outputs, kernel_seconds, err);
    });
}

/* Tensor cores with these instructions: compute capability 8.0 or later. */
kcs_status require_sm80(kcs_device *device, kcs_error *err)
{
    int major = 0;
    KCS_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device->ordinal));
    if (major < 8)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "mma.sync with bf16 and tf32 needs compute capability 8.0 or later (this is %d.x)",
                        major);
    return KCS_OK;
}

/* supports() of the f16 and bf16 row: mode=tensor cases only. */
KCS_KERNEL_SUPPORTS(supports_tensor_mode)
{
    if (!args->gemm.tensor_cores)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tensor cases only: the other f16 and bf16 cases hold a kernel to plain f32 "
                        "accumulation, which tensor cores do not promise (docs/gemm.md, \"Tensor cores\")");
    return require_sm80(device, err);
}

/* supports() of tensor-tf32: mode=tf32 cases only. */
KCS_KERNEL_SUPPORTS(supports_tf32_mode)
{
    if (!args->gemm.tf32)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tf32 cases only: plain f32 cases are held to f32 arithmetic");
    return require_sm80(device, err);
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_F16, "tensor",
     "mma.sync m16n8k16 f16 -> f32 accumulators, 128x128x32 tiles, 8 warps of 64x32, double-buffered (mode=tensor)",
     run_tensor<__half>, supports_tensor_mode},
    {"gemm", KCS_BF16, "tensor",
     "mma.sync m16n8k16 bf16 -> f32 accumulators, 128x128x32 tiles, 8 warps of 64x32, double-buffered (mode=tensor)",
     run_tensor<__nv_bfloat16>, supports_tensor_mode},
    {"gemm", KCS_F32, "tensor-tf32",
     "mma.sync m16n8k8 on inputs rounded to TF32, f32 accumulators, 128x128x16 tiles (mode=tf32)",
     run_tensor<float>, supports_tf32_mode},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_tensor_mma_kernels = KCS_KERNEL_TABLE(rows);
