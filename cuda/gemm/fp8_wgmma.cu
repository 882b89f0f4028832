/* fp8_wgmma.cu: kcs's own FP8 GEMM on Hopper's tensor cores (docs/gemm.md,
 * "FP8", whose bound it is checked against):
 *
 *     C_out = alpha * a_scale * b_scale * op(A) op(B) + beta * C
 *
 * with A and B in OCP FP8 (both e4m3, or both e5m2), per-tensor scales
 * a_scale and b_scale, and C and C_out in f32, bf16 or f16 as the case's
 * c_dtype says; the op's layout is transa=N transb=T ("nt": a is m x k and b
 * is n x k, both with k contiguous, as an activation times a weight stored
 * output-major). Rows (the table at the end):
 *
 *   wgmma-fp8   fp8_e4m3: wgmma.mma_async m64n64k32 .e4m3.e4m3, f32
 *               accumulators, promoted into f32 registers every 128 products
 *   wgmma-fp8   fp8_e5m2: the same with .e5m2.e5m2 (which cuBLASLt has no
 *               kernel for; wgmma takes every pairing of the two types)
 *
 * Precision: promotion every 128 products. A product of two FP8 values is
 * exact in f32, but the tensor cores' FP8 accumulation keeps about 14
 * significant bits of the sum (DeepSeek-V3 Technical Report, 2024, section
 * 3.3.2): left to run over all of k, each 32-product block is aligned to a
 * sum that keeps growing and loses ever more of it (25% of a positive sum
 * at k = 4096 under the bound's model; the saboteur accumulates-without-
 * promotion in tests/saboteur_gemm.c fails so). So each stage's 4 k32
 * instructions (128 products, one 128-byte row of k) for a piece of the
 * tile start a fresh accumulation (the first with scale-d = 0) into 32
 * "partial" registers, and once they complete, the partial sums are added
 * into separate f32 "total" registers with ordinary FADDs. That is exactly
 * what the bound assumes: 13 fraction bits kept in blocks of at least 32
 * products, promotion into f32 at least every 128 products, then f32
 * arithmetic (the sums of the intervals, alpha * a_scale * b_scale computed once on the
 * host in f32, times the total, fma with beta * c), all rounded once to
 * C_out's type at the end.
 *
 * Tile shapes and pipeline: a block computes a 128 x 256 tile of C_out
 * with three warpgroups, as cuda/gemm/tensor_wgmma.cu does: one producer,
 * whose one thread issues the TMA copies of a stage (A 128 x 128 bytes, B
 * 256 x 128 bytes, 48 KB) into a ring of 4 (192 KB of the 227 KB a block
 * can have), and two consumers of 64 x 256 each. The promotion doubles the
 * accumulators: 128 totals per consumer thread, plus the partials of one
 * wgmma. A 64 x 256 partial (m64n256k32, 128 registers) would need 256 with
 * the totals, over the 255 a thread can have. So each stage is multiplied
 * in four pieces of 64 columns (m64n64k32), into two sets of 32 partial
 * registers in turn: a piece's 4 wgmmas are issued, and while they run the
 * piece before is waited for (wgmma.wait_group 1) and added into its
 * totals. The consumer so keeps the tensor cores fed during its own
 * promotions, and waits for the tensor cores to drain (wait_group 0, then
 * the last promotion) once every ROUND = 2 stages; the other consumer's
 * pieces fill that gap. 128 totals + 64 partials: setmaxnreg gives the
 * consumers 240 registers and the producer 24 (0 spills).
 *
 * Why not pipelined over every stage, without a drain at all: the piece
 * in flight across the loop's back edge makes ptxas serialize every wgmma
 * ("wgmma.mma_async instructions are serialized", C7514) whatever the loop
 * looks like, so the pipeline runs over ROUND stages unrolled, then
 * drains. Measured on an H200 (2026-11-29, against cuBLASLt 0.1199 and
 * 0.8872 ms at 4096^3 and 8192^3 in the same call, medians of 3 runs):
 * halves of 128 columns, each waited for and promoted before the next
 * (this kernel until then) 0.1263 and 0.9817 ms; quarters drained every
 * stage 0.1236 and 0.9592; every 2 stages (this) 0.1228 and 0.9413; every
 * 4 stages 0.1226 and 0.9431. Under Nsight Compute at 8192^3, at the
 * clock it locks (1.31 to 1.34 GHz), the SM throughput (the tensor pipe's
 * use, for this kernel its busiest) was 73.6% with halves (1.03 ms), 84.2%
 * with this (0.911 ms) and 91.9% in cuBLASLt's kernel (0.843 ms; it runs in
 * clusters of 2): the gap is in the issue of tensor work, not the clocks.
 * Pieces of 64 read A from shared memory four times a stage where halves
 * read it twice. What held the rest back was the consumers' own
 * instructions between the wgmmas: with each stage's descriptors a step
 * from ones made before the loop (matrix_descriptor.cuh), the same
 * schedule ran 0.1166 and 0.8947 ms against cuBLASLt's 0.1210 and 0.8922
 * in one call (H200, 2026-11-29; docs/gemm.md, "Descriptors made once").
 *
 * Why not 128 x 128 tiles with one instruction per stage: they read twice
 * the bytes of A and B from L2 per product, and pay the start of each
 * tile's pipeline and its epilogue over half the work.
 * Measured: a 128 x 128 tile with two partials (stage j's wgmmas into one
 * while stage j - 1's is added; 6 stages) ran at 0.85 and 0.86 of
 * cuBLASLt at 4096^3 and 8192^3 on an H200, where the halves ran at 0.93
 * and 0.89 in the same call: the extra L2 reads cost more than the waits
 * they remove.
 *
 * The grid is persistent: one block per multiprocessor (the shared memory
 * allows no second), each walking tiles blockIdx.x, + gridDim.x, ...; the
 * ring of stages runs on across tiles, so the producer loads the next
 * tile's first stages while the consumers store the last one's results.
 * Tiles are walked a group of row tiles at a time, down m first (16 row
 * tiles, 2048 rows of A, on a 132-SM device: persistent_grid in
 * cuda/gemm/tile_order.cuh): the blocks resident at once then share rows of A
 * and columns of B in L2, which matters where B does not fit in L2
 * (8192^3: 64 MB).
 *
 * Shared-memory layout: both operands are K-major (k contiguous), the only
 * layout wgmma reads FP8 in: a 128-byte row of k per row of A or B, 128-byte
 * swizzle, the same byte layout as a K-major 16-bit operand
 * (cuda/gemm/hopper.cuh): stride byte offset 1024, and the i-th k32
 * instruction of a stage starts 32 i bytes into the row. Piece j of B starts
 * 64 j rows (8 KB) in, on a 1024-byte boundary like every box.
 *
 * Edges and what is refused: any m, n and k; TMA fills the parts of a box
 * outside the matrix with zeros (0 * 0 adds nothing), and rows and columns
 * beyond m and n are computed and never stored. TMA needs a and b 16-byte
 * aligned and their rows a multiple of 16 bytes: k a multiple of 16, or the
 * case is refused with that reason (the reference runs it). Other
 * transposes are refused: wgmma reads FP8 K-major only and TMA does not
 * transpose. alpha = 0 or k = 0 runs no stage (a and b never read, nor
 * their alignment asked for; any transpose then), so c_out = beta * c;
 * beta = 0 never reads c. m = 0 or n = 0 launches nothing. Scales of 0 are
 * unset, 1, as ops/gemm.c reads them.
 *
 * Devices: built for sm_90a alone (configure.py): wgmma and setmaxnreg run
 * on compute capability 9.0 only, and the rows refuse any other device,
 * saying so.
 *
 * Without a GPU: nothing here runs in the host emulation; only a GPU run
 * checks it.
 *
 * Run only it: ./build/kcs run --backend cuda --kernel wgmma-fp8 'gemm/fp8*'
 */
#include <climits>
#include <cstdint>
#include <type_traits>

#include <cuda_fp8.h>

#include "../common.cuh"
#include "gemm.cuh"
#include "hopper.cuh" /* TMA, mbarriers, descriptors, the epilogue: shared with cuda/gemm/tensor_wgmma.cu */

namespace {

using namespace kcs_hopper;

constexpr int BLOCK_M = 128, BLOCK_N = 256;
constexpr int BLOCK_K = ROW_BYTES;   /* FP8 values of k per stage: one promotion interval */
constexpr int INSTRUCTION_K = 32;
constexpr int PROMOTION_INTERVAL = 128; /* the bound's assumption (docs/gemm.md, "FP8") */
static_assert(BLOCK_K <= PROMOTION_INTERVAL, "a stage's partial sums must be promoted within the bound's interval");
constexpr int STAGES = 4;
constexpr int CONSUMERS = 2;         /* warpgroups of 64 x 256 each */
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int A_STAGE_BYTES = BLOCK_M * ROW_BYTES, B_STAGE_BYTES = BLOCK_N * ROW_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
/* the stages, each consumer's epilogue staging (store_accumulators), + room to align the tiles to 1024 bytes */
constexpr int SHARED_BYTES = STAGES * STAGE_BYTES + CONSUMERS * STAGING_BYTES + 1024;
static_assert(SHARED_BYTES <= 227 * 1024, "a block's shared memory on sm_90");
static_assert(SHARED_BYTES <= descriptor_address_limit, "every descriptor_at step stays exact");
constexpr int PIECE_N = 64;               /* columns of one wgmma: m64n64k32 */
constexpr int PIECES = BLOCK_N / PIECE_N; /* of a stage */
constexpr int ROUND = 2;                  /* stages whose pieces follow each other without a wait */
constexpr int PRODUCER_REGISTERS = 24, CONSUMER_REGISTERS = 240;
static_assert(128 * PRODUCER_REGISTERS + 128 * CONSUMERS * CONSUMER_REGISTERS <= 65536, "register file");

/* D (64 x 64, f32) = A (64 x k32) B (k32 x 64) + (accumulate ? D : 0),
 * both operands K-major in shared memory. */
template <typename In>
__device__ __forceinline__ void wgmma_fp8(float (&d)[PIECE_N / 2], uint64_t a, uint64_t b, int accumulate)
{
    if constexpr (std::is_same<In, __nv_fp8_e4m3>::value) {
        asm volatile("{\n"
                     ".reg .pred accumulate;\n"
                     "setp.ne.b32 accumulate, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " KCS_WGMMA_ACCUMULATORS_32
                     ", %32, %33, accumulate, 1, 1;\n"
                     "}\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS_32(d)
                     : "l"(a), "l"(b), "r"(accumulate));
    } else {
        static_assert(std::is_same<In, __nv_fp8_e5m2>::value, "FP8 inputs are e4m3 or e5m2");
        asm volatile("{\n"
                     ".reg .pred accumulate;\n"
                     "setp.ne.b32 accumulate, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 " KCS_WGMMA_ACCUMULATORS_32
                     ", %32, %33, accumulate, 1, 1;\n"
                     "}\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS_32(d)
                     : "l"(a), "l"(b), "r"(accumulate));
    }
}

/* Adds a piece's partial sums into its columns of the totals: the
 * fragment of columns PIECE_N piece .. + PIECE_N - 1 of an m64n256
 * accumulator is its registers PIECE_N / 2 piece on. */
__device__ __forceinline__ void promote(float (&total)[BLOCK_N / 2], const float (&partial)[PIECE_N / 2], int piece)
{
#pragma unroll
    for (int i = 0; i < PIECE_N / 2; i++)
        total[piece * PIECE_N / 2 + i] += partial[i];
}

/* The kernel: a persistent grid; warpgroup 0 produces, 1 and 2 consume.
 * TMA_STORE: c_out stored by TMA (store_accumulators, hopper.cuh). */
template <typename In, typename Out, bool TMA_STORE>
__global__ void __launch_bounds__(THREADS, 1)
    kcs_gemm_wgmma_fp8(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                       const __grid_constant__ epilogue_params<Out> p, const tile_walk walk)
{
    extern __shared__ uint8_t shared_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    uint8_t *tiles = reinterpret_cast<uint8_t *>(((uintptr_t)shared_raw + 1023) & ~(uintptr_t)1023);

    const int warpgroup = warpgroup_index();
    const long long tile_count = (long long)walk.tiles_m * walk.tiles_n;

    if (threadIdx.x == 0) {
        init_stage_barriers<STAGES>(full, empty, CONSUMERS);
        barrier_init_fence();
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGISTERS));
        if (threadIdx.x == 0)
            produce_stages<STAGES, BLOCK_M, BLOCK_N>(
                walk, full, empty, STAGE_BYTES, [&](int s, int kt, int m0, int n0, uint64_t *arrived) {
                    uint8_t *a_tile = tiles + s * STAGE_BYTES, *b_tile = a_tile + A_STAGE_BYTES;
                    tma_load(a_tile, &a_map, kt * BLOCK_K, m0, arrived);
                    tma_load(b_tile, &b_map, kt * BLOCK_K, n0, arrived);
                });
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGISTERS));
    const int consumer = warpgroup - 1; /* rows 64 consumer .. + 63 of the tile */
    const bool reader = threadIdx.x % 128 == 0; /* the warpgroup's arrival on a stage's empty barrier */
    uint8_t *staging = tiles + STAGES * STAGE_BYTES + consumer * STAGING_BYTES;
    float partial[2][PIECE_N / 2]; /* pieces alternate between them: one runs while the other is promoted */
    float total[BLOCK_N / 2]; /* f32 sums of the promoted partials, laid out as one m64n256 accumulator */
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
        for (int i = 0; i < PIECE_N / 2; i++)
            partial[j][i] = 0.0f; /* never read (each piece starts with scale-d = 0), but defined */

    /* Stage 0's descriptors of this consumer's 64 rows of a and of b: stage s, piece and instruction i are a fixed
     * number of bytes on (descriptor_at). */
    const uint64_t a_first = k_major_descriptor(shared_address(tiles) + consumer * 64 * ROW_BYTES);
    const uint64_t b_first = k_major_descriptor(shared_address(tiles) + A_STAGE_BYTES);
    unsigned use = 0; /* unsigned: its % and / by STAGES are a mask and a shift */
    for (long long tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        int m0, n0;
        tile_origin<BLOCK_M, BLOCK_N>(walk, tile, m0, n0);
#pragma unroll
        for (int i = 0; i < BLOCK_N / 2; i++)
            total[i] = 0.0f;

        /* ROUND_STAGES stages (ROUND, or 1 for the stages left over), their
         * pieces issued one after another: each piece is promoted while the
         * next runs, and the round's last one once it completes. */
        auto multiply_round = [&](auto round) {
            constexpr int ROUND_STAGES = decltype(round)::value;
#pragma unroll
            for (int r = 0; r < ROUND_STAGES; r++) {
                const unsigned s = (use + r) % STAGES;
                barrier_wait(&full[s], ((use + r) / STAGES) & 1);
                const uint64_t a_stage = descriptor_at(a_first, s * STAGE_BYTES);
                const uint64_t b_stage = descriptor_at(b_first, s * STAGE_BYTES);
#pragma unroll
                for (int piece = 0; piece < PIECES; piece++) {
                    const int sequence = r * PIECES + piece; /* within the round */
                    float(&issued)[PIECE_N / 2] = partial[sequence % 2];
                    wgmma_fence(); /* the FADDs that read this partial before these overwrite it */
#pragma unroll
                    for (int i = 0; i < BLOCK_K / INSTRUCTION_K; i++)
                        wgmma_fp8<In>(issued, descriptor_at(a_stage, i * INSTRUCTION_K),
                                      descriptor_at(b_stage, piece * PIECE_N * ROW_BYTES + i * INSTRUCTION_K), i > 0);
                    wgmma_commit();
                    if (sequence > 0) { /* the piece before this one, while this one runs */
                        float(&previous)[PIECE_N / 2] = partial[(sequence + 1) % 2];
                        wgmma_wait<1>();
                        accumulators_ready(previous);
                        if (piece == 0 && reader) /* the stage before is read: back to the producer */
                            barrier_arrive(&empty[(s + STAGES - 1) % STAGES]);
                        promote(total, previous, (piece + PIECES - 1) % PIECES);
                    }
                    if (sequence == ROUND_STAGES * PIECES - 1) { /* and the round's last piece, once it completes */
                        wgmma_wait<0>();
                        accumulators_ready(issued);
                        if (reader)
                            barrier_arrive(&empty[s]);
                        promote(total, issued, piece);
                    }
                }
            }
            use += ROUND_STAGES;
        };
        int kt = 0;
        for (; kt + ROUND <= walk.k_tiles; kt += ROUND)
            multiply_round(std::integral_constant<int, ROUND>{});
        for (; kt < walk.k_tiles; kt++)
            multiply_round(std::integral_constant<int, 1>{});
        store_accumulators<Out, BLOCK_N, TMA_STORE>(p, total, m0 + consumer * 64, n0, staging, consumer);
    }
    finish_stores<TMA_STORE>();
}

/* The FP8 kernel with a and b stored as In, c and c_out as Out. */
template <typename In, typename Out> KCS_KERNEL_RUN(run_wgmma_fp8_typed)
{
    const kcs_gemm_args *g = &args->gemm;
    epilogue_params<Out> p = {};
    tile_walk walk = {};
    CUtensorMap a_map = {}, b_map = {};
    unsigned int blocks = 0;
    void (*kernel)(CUtensorMap, CUtensorMap, epilogue_params<Out>, tile_walk) = nullptr;
    auto prepare = [&]() -> kcs_status {
        kcs_status status = kcs_gemm_sizes_fit(g, kcs_gemm_most_size, err);
        if (status != KCS_OK)
            return status;
        const void *a = inputs[0]->data, *b = inputs[1]->data;
        p.c = g->beta != 0.0 ? (const Out *)inputs[2]->data : nullptr;
        p.out = (Out *)outputs[0]->data;
        p.m = (int)g->m;
        p.n = (int)g->n;
        /* alpha * a_scale * b_scale, two f32 roundings, once (the bound counts them) */
        const float a_scale = g->a_scale != 0.0 ? (float)g->a_scale : 1.0f;
        const float b_scale = g->b_scale != 0.0 ? (float)g->b_scale : 1.0f;
        p.alpha = (float)g->alpha * a_scale * b_scale;
        p.beta = (float)g->beta;
        status = choose_store(&p, err);
        if (status != KCS_OK)
            return status;
        kernel = p.tma_store ? kcs_gemm_wgmma_fp8<In, Out, true> : kcs_gemm_wgmma_fp8<In, Out, false>;
        walk = tiles_of(g->m, g->n, g->k, g->alpha != 0.0, BLOCK_M, BLOCK_N, BLOCK_K);
        if (walk.k_tiles > 0) {
            status = require_tma_bases(a, b, err);
            /* a is m x k, b is n x k, both k contiguous: boxes of 128 k by a tile's rows */
            if (status == KCS_OK)
                status = encode_map(&a_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, a, g->k, g->m, g->k, BLOCK_M, "a", err);
            if (status == KCS_OK)
                status = encode_map(&b_map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, b, g->k, g->n, g->k, BLOCK_N, "b", err);
            if (status != KCS_OK)
                return status;
        }
        blocks = persistent_grid(device->sm_count, walk, BLOCK_M, BLOCK_N);
        KCS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES));
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0) {
            kernel<<<blocks, THREADS, SHARED_BYTES, device->stream>>>(a_map, b_map, p, walk);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_wgmma_fp8");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* The row of storage type In, c and c_out of the case's c_dtype (kcs_gemm_with_output). */
template <typename In> KCS_KERNEL_RUN(run_wgmma_fp8)
{
    return kcs_gemm_with_output<In>(args, [&](auto out) {
        return run_wgmma_fp8_typed<In, typename decltype(out)::type>(device, args, inputs, outputs, kernel_seconds,
                                                                     err);
    });
}

/* supports(): transa=N transb=T (unless nothing is read), sm_90a, TMA rows. */
KCS_KERNEL_SUPPORTS(supports_wgmma_fp8)
{
    const kcs_gemm_args *g = &args->gemm;
    const bool reads_a_and_b = g->alpha != 0.0 && g->k != 0;
    if (reads_a_and_b && (g->transpose_a || !g->transpose_b))
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "wgmma reads FP8 operands K-major only and TMA does not transpose: this row runs transa=N "
                        "transb=T alone, not transa=%c transb=%c (the reference runs this case)",
                        g->transpose_a ? 'T' : 'N', g->transpose_b ? 'T' : 'N');
    return require_sm90a_and_tma_rows(device, args, 1, "the reference runs this case", err);
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_FP8_E4M3, "wgmma-fp8",
     "Hopper wgmma m64n64k32 e4m3 -> f32, promoted into f32 registers every 128 products while the next piece "
     "runs; TMA, 128B swizzle, 128x256x128 tiles, 4 stages, persistent grid (transa=N transb=T)",
     run_wgmma_fp8<__nv_fp8_e4m3>, supports_wgmma_fp8},
    {"gemm", KCS_FP8_E5M2, "wgmma-fp8",
     "Hopper wgmma m64n64k32 e5m2 -> f32, promoted into f32 registers every 128 products while the next piece "
     "runs; TMA, 128B swizzle, 128x256x128 tiles, 4 stages, persistent grid (transa=N transb=T)",
     run_wgmma_fp8<__nv_fp8_e5m2>, supports_wgmma_fp8},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_fp8_wgmma_kernels = KCS_KERNEL_TABLE(rows);
