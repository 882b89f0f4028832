/* tensor_wgmma.cu: kcs's own GEMM on Hopper's tensor cores, C_out = alpha *
 * op(A) * op(B) + beta * C, row-major, op = N or T (docs/gemm.md is the
 * normative definition; its section "Tensor cores" derives the bound these
 * rows are checked against and says what they reach). Same inputs and layout
 * as cuda/gemm/tensor_mma.cu, whose portable mma.sync rows keep running every case
 * these rows refuse.
 *
 * Rows (the table at the end):
 *
 *   wgmma        f16 and bf16, mode=tensor cases: wgmma.mma_async
 *                m64n256k16 with f32 accumulators; c_out in the storage
 *                type, or in f32 where the case says c_dtype=f32. Every
 *                transpose: wgmma reads a 16-bit operand K-major or
 *                M/N-major from shared memory (the descriptor's layout and
 *                the instruction's transpose bit), so each operand is copied
 *                by TMA exactly as it is stored.
 *   wgmma-tf32   f32, mode=tf32 cases with A not transposed and B transposed
 *                (nt) only: wgmma m64n256k8.tf32 reads 32-bit operands
 *                K-major only, and TMA copies boxes without transposing
 *                them; the other transposes are refused with that reason
 *                (the tensor-tf32 row runs them). The tensor core reads the
 *                top 19 bits of each f32 (TF32 truncated, relative error
 *                below 2^-10, which the bound allows).
 *
 * Instructions and why: on sm_90a, wgmma.mma_async issued by a warpgroup (4
 * warps) multiplies a 64 x N tile read straight from shared memory, with no
 * register fragments to load, and runs asynchronously while the same warps
 * wait on the next tile; cp.async.bulk.tensor (TMA) copies a whole box of a
 * matrix into shared memory in the 128-byte swizzled layout wgmma reads
 * without bank conflicts, completing on an mbarrier, zero-filling what lies
 * outside the matrix. Those two are how Hopper GEMMs get near cuBLAS;
 * mma.sync (cuda/gemm/tensor_mma.cu) reaches about a quarter of it on an H100.
 *
 * Tile shapes and pipeline: a block computes a 128 x 256 tile of C_out with
 * three warpgroups: one producer, whose one thread issues the TMA copies, and
 * two consumers of 64 x 256 each (128 f32 accumulators per thread, so the
 * consumers take 232 registers and the producer gives its own back through
 * setmaxnreg). k is walked 128 bytes at a time (64 16-bit elements, 32 f32):
 * one 128-byte swizzle row, the widest box TMA swizzles. A stage holds 16 KB
 * of A and 32 KB of B; 4 stages (192 KB of the 227 KB a block can have) keep
 * three tiles in flight while the tensor cores work on the fourth. Each stage
 * has a "full" mbarrier (the producer's expected bytes, completed by TMA) and
 * an "empty" one (one arrival per consumer warpgroup once its wgmmas on the
 * stage are done). A consumer keeps one stage's wgmmas in flight while it
 * issues the next stage's, then releases the stage of the one that
 * finished. 128 x 256 is the largest tile whose accumulators fit two
 * consumer warpgroups' registers; it reads 0.75 bytes of shared memory per
 * multiply-add, under the tensor cores' appetite.
 *
 * Persistent grid: one block per multiprocessor (persistent_grid), each
 * walking tiles b, b + blocks, ... in groups of row tiles (16 on a 132-SM
 * H100 or H200: tile_origin and persistent_grid, so that the tiles in
 * flight share A's rows and B's columns in L2). The
 * producer fills the next tile's stages while the consumers store the last
 * one, so a tile's first wgmmas find their operands waiting; with a block
 * per tile instead, every tile paid the pipeline's fill and the store with
 * the tensor cores idle (the attention-scores shape, k = 128, is two
 * stages a tile: mostly fill and store). The TMA store lets a tile's
 * writes of c_out run on under the next tile's wgmmas; stored by the
 * threads, the attention-scores shape ran at 0.60 of cuBLAS on an H200.
 * The blocks are not clustered: clusters of two sharing b by TMA multicast
 * (as cuBLAS's kernels for these shapes run) measured level with this on an
 * H200, before and after the descriptors were made once (docs/gemm.md,
 * "Clusters of 2 again, after the descriptors").
 *
 * Shared-memory layouts (PTX ISA, "Shared Memory Matrix Layout", 128-byte
 * swizzle, in bytes): a K-major operand (A as stored, or B transposed) is one
 * box of rows x 128 bytes, row r at 128 r: the descriptor's stride byte
 * offset (8 rows to the next 8) is 1024, its leading offset unused, and the
 * k-th instruction of a stage starts 32 k bytes in. An M/N-major operand (A
 * transposed, B as stored) is boxes of 64 elements (128 bytes) along m or n
 * by BLOCK_K rows of k, one after another (8 KB each): the stride byte offset
 * (8 k rows to the next 8) is 1024, the leading offset (64 columns to the
 * next 64) is 8192, and the k-th instruction starts 16 k rows = 2048 k bytes
 * in. Every box starts on a 1024-byte boundary, where the swizzle pattern
 * starts, so the descriptors' base offset is 0.
 *
 * Edges and alignment: any m, n and k. TMA fills the parts of a box outside
 * the matrix with zeros (0 * 0 adds nothing and makes no NaN); rows and
 * columns beyond m and n are computed on them and never stored. TMA needs
 * the base of a and b 16-byte aligned and their rows a multiple of 16 bytes
 * long: a case whose rows are not (for 16-bit types, a stored row length not
 * a multiple of 8) is refused with that reason. c_out is stored from the
 * accumulators through shared memory (cuda/gemm/hopper.cuh,
 * store_accumulators): by TMA stores that the warpgroup does not wait for,
 * where beta = 0 and c_out's rows are a multiple of 16 bytes (a kernel
 * built for it, TMA_STORE); else 16 bytes of c and c_out a thread, or an
 * element at a time where rows start unaligned.
 *
 * Precision: every product of two f16, two bf16, two TF32 values is exact in
 * f32, and wgmma accumulates them into f32 in block steps that may align and
 * truncate: the mode's bound (docs/gemm.md, "Tensor cores"). Then c_out =
 * alpha * acc (beta = 0) or fma(alpha, acc, beta * c) in f32, rounded once to
 * the output type, as cuda/gemm/tensor_mma.cu does. f32 accumulation is the
 * mode: wgmma's .f16 accumulator form would round every partial sum to 11
 * bits, which the bound rules out (tests/saboteur_gemm.c).
 *
 * What is not read: m = 0 or n = 0 launches nothing; alpha = 0 or k = 0 runs
 * no k tiles, so a and b are never read (nor their alignment asked for) and
 * c_out = beta * c; beta = 0 never reads c. c_out may alias c: each element
 * of c is read by the thread that then writes it.
 *
 * Devices: the file is compiled for sm_90a alone (configure.py), whose
 * wgmma and setmaxnreg run on compute capability 9.0 only; the rows refuse
 * any other device, saying so. The TMA descriptors are built on the host by
 * cuTensorMapEncodeTiled, fetched from the driver through the runtime
 * (cudaGetDriverEntryPointByVersion), so nothing links libcuda.
 *
 * Shared with the FP8 rows (cuda/gemm/fp8_wgmma.cu), in cuda/gemm/hopper.cuh:
 * the TMA, mbarrier and descriptor helpers, the accumulator register lists,
 * the epilogue from the accumulators and the sm_90a and TMA checks.
 *
 * Without a GPU: nothing here runs in the host emulation; only a GPU run
 * checks it.
 *
 * Run only it: ./build/kcs run --backend cuda --kernel 'wgmma*' gemm
 */
#include <climits>
#include <cstdint>
#include <type_traits>

#include "../common.cuh"
#include "gemm.cuh"
#include "hopper.cuh" /* TMA, mbarriers, descriptors, the epilogue: shared with cuda/gemm/fp8_wgmma.cu */

namespace {

using namespace kcs_hopper;

constexpr int BLOCK_M = 128, BLOCK_N = 256;
constexpr int STAGES = 4;
constexpr int CONSUMERS = 2;              /* warpgroups of 64 x 256 each */
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int BOX_MN = 64;                /* an M/N-major box: 64 16-bit elements, 128 bytes */
constexpr int A_STAGE_BYTES = BLOCK_M * ROW_BYTES, B_STAGE_BYTES = BLOCK_N * ROW_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
/* the stages, each consumer's epilogue staging (store_accumulators), + room to align the tiles to 1024 bytes */
constexpr int SHARED_BYTES = STAGES * STAGE_BYTES + CONSUMERS * STAGING_BYTES + 1024;
static_assert(SHARED_BYTES <= 227 * 1024, "a block's shared memory on sm_90");
static_assert(SHARED_BYTES <= descriptor_address_limit, "every descriptor_at step stays exact");
constexpr int PRODUCER_REGISTERS = 40, CONSUMER_REGISTERS = 232;
static_assert(128 * PRODUCER_REGISTERS + 128 * CONSUMERS * CONSUMER_REGISTERS <= 65536, "register file");

/* Rows of k in a stage: one 128-byte row of In. */
template <typename In> constexpr int block_k = ROW_BYTES / (int)sizeof(In);

/* One stored element's shape per input type: k per instruction, and what the
 * TMA descriptor calls it. */
template <typename In> struct wgmma_input;
template <> struct wgmma_input<__half> {
    static constexpr int instruction_k = 16;
    static constexpr CUtensorMapDataType tma_type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
};
template <> struct wgmma_input<__nv_bfloat16> {
    static constexpr int instruction_k = 16;
    static constexpr CUtensorMapDataType tma_type = CU_TENSOR_MAP_DATA_TYPE_UINT16;
};
template <> struct wgmma_input<float> {
    static constexpr int instruction_k = 8;
    static constexpr CUtensorMapDataType tma_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; /* copied as bits */
};

/* D (64 x 256, f32) += A (64 x k16) B (k16 x 256) from shared memory; the
 * transpose bits say which operand is M/N-major. */
template <typename In, int TRANSPOSE_A, int TRANSPOSE_B>
__device__ __forceinline__ void wgmma(float (&d)[128], uint64_t a, uint64_t b)
{
    if constexpr (sizeof(In) == 4) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " KCS_WGMMA_ACCUMULATORS_128
                     ", %128, %129, 1, 1, 1;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS_128(d)
                     : "l"(a), "l"(b));
    } else if constexpr (std::is_same<In, __half>::value) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " KCS_WGMMA_ACCUMULATORS_128
                     ", %128, %129, 1, 1, 1, %130, %131;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS_128(d)
                     : "l"(a), "l"(b), "n"(TRANSPOSE_A), "n"(TRANSPOSE_B));
    } else {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " KCS_WGMMA_ACCUMULATORS_128
                     ", %128, %129, 1, 1, 1, %130, %131;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS_128(d)
                     : "l"(a), "l"(b), "n"(TRANSPOSE_A), "n"(TRANSPOSE_B));
    }
}

/* The kernel: a persistent grid (persistent_grid), each block walking
 * its tiles of c_out in tile_origin's order. Warpgroup 0 produces, 1 and 2
 * consume. TMA_STORE: c_out stored by TMA (store_accumulators). */
template <typename In, typename Out, bool TRANSPOSE_A, bool TRANSPOSE_B, bool TMA_STORE>
__global__ void __launch_bounds__(THREADS, 1)
    kcs_gemm_wgmma(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                   const __grid_constant__ epilogue_params<Out> p, const tile_walk walk)
{
    constexpr int BK = block_k<In>; /* elements of k per stage */
    constexpr int IK = wgmma_input<In>::instruction_k;
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
                    const int k0 = kt * BK;
                    if (!TRANSPOSE_A) {
                        tma_load(a_tile, &a_map, k0, m0, arrived);
                    } else {
#pragma unroll
                        for (int j = 0; j < BLOCK_M / BOX_MN; j++)
                            tma_load(a_tile + j * BOX_MN * ROW_BYTES, &a_map, m0 + j * BOX_MN, k0, arrived);
                    }
                    if (TRANSPOSE_B) {
                        tma_load(b_tile, &b_map, k0, n0, arrived);
                    } else {
#pragma unroll
                        for (int j = 0; j < BLOCK_N / BOX_MN; j++)
                            tma_load(b_tile + j * BOX_MN * ROW_BYTES, &b_map, n0 + j * BOX_MN, k0, arrived);
                    }
                });
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGISTERS));
    const int consumer = warpgroup - 1; /* rows 64 consumer .. + 63 of the tile */
    const int a_row0 = consumer * 64;
    uint8_t *staging = tiles + STAGES * STAGE_BYTES + consumer * STAGING_BYTES;
    float d[128];
    /* Stage 0's descriptors of this consumer's rows of a and of b; stage s and instruction i are a fixed number of
     * bytes on (descriptor_at). K-major: 64 rows of 128 bytes per consumer, instruction i 32 i bytes along the row.
     * M/N-major: one 8 KB box per 64 rows (or columns), instruction i 16 i rows of k down. */
    const uint32_t a_tiles = shared_address(tiles) + a_row0 * ROW_BYTES;
    const uint32_t b_tiles = shared_address(tiles) + A_STAGE_BYTES;
    const uint64_t a_first = TRANSPOSE_A ? descriptor(a_tiles, BOX_MN * ROW_BYTES, 8 * ROW_BYTES)
                                         : k_major_descriptor(a_tiles);
    const uint64_t b_first = TRANSPOSE_B ? k_major_descriptor(b_tiles)
                                         : descriptor(b_tiles, BOX_MN * ROW_BYTES, 8 * ROW_BYTES);
    constexpr uint32_t a_step = TRANSPOSE_A ? IK * ROW_BYTES : IK * sizeof(In); /* bytes an instruction */
    constexpr uint32_t b_step = TRANSPOSE_B ? IK * sizeof(In) : IK * ROW_BYTES;
    unsigned use = 0; /* unsigned: its % and / by STAGES are a mask and a shift */
    for (long long tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        int m0, n0;
        tile_origin<BLOCK_M, BLOCK_N>(walk, tile, m0, n0);
#pragma unroll
        for (int i = 0; i < 128; i++)
            d[i] = 0.0f;
        for (int kt = 0; kt < walk.k_tiles; kt++, use++) {
            const unsigned s = use % STAGES;
            barrier_wait(&full[s], (use / STAGES) & 1);
            const uint64_t a_stage = descriptor_at(a_first, s * STAGE_BYTES);
            const uint64_t b_stage = descriptor_at(b_first, s * STAGE_BYTES);
            wgmma_fence();
#pragma unroll
            for (int i = 0; i < BK / IK; i++)
                wgmma<In, TRANSPOSE_A ? 1 : 0, TRANSPOSE_B ? 0 : 1>(d, descriptor_at(a_stage, i * a_step),
                                                                    descriptor_at(b_stage, i * b_step));
            wgmma_commit();
            /* Keep this stage's group in flight and wait for the previous
             * one, whose stage then goes back to the producer: the tensor
             * cores never wait for a release and a refill between stages. */
            wgmma_wait<1>();
            if (kt > 0 && threadIdx.x % 128 == 0)
                barrier_arrive(&empty[(use - 1) % STAGES]);
        }
        wgmma_wait<0>();
        if (walk.k_tiles > 0 && threadIdx.x % 128 == 0) /* the tile's last stage, read: back to the producer */
            barrier_arrive(&empty[(use - 1) % STAGES]);
        accumulators_ready(d);
        store_accumulators<Out, BLOCK_N, TMA_STORE>(p, d, m0 + a_row0, n0, staging, consumer);
    }
    finish_stores<TMA_STORE>();
}

template <typename In, typename Out> using wgmma_kernel = void (*)(CUtensorMap, CUtensorMap, epilogue_params<Out>, tile_walk);

template <typename In, typename Out, bool TMA_STORE>
wgmma_kernel<In, Out> wgmma_kernel_for(int transpose_a, int transpose_b)
{
    if constexpr (sizeof(In) == 4) { /* supports_tf32_mode admits nt alone */
        return kcs_gemm_wgmma<In, Out, false, true, TMA_STORE>;
    } else {
        if (!transpose_a)
            return transpose_b ? kcs_gemm_wgmma<In, Out, false, true, TMA_STORE>
                               : kcs_gemm_wgmma<In, Out, false, false, TMA_STORE>;
        return transpose_b ? kcs_gemm_wgmma<In, Out, true, true, TMA_STORE>
                           : kcs_gemm_wgmma<In, Out, true, false, TMA_STORE>;
    }
}

/* The wgmma kernel with a and b stored as In, c and c_out as Out. */
template <typename In, typename Out> KCS_KERNEL_RUN(run_wgmma_typed)
{
    const kcs_gemm_args *g = &args->gemm;
    const In *a = nullptr, *b = nullptr;
    epilogue_params<Out> p = {};
    tile_walk walk = {}; /* k_tiles 0 when alpha = 0: a and b are not read */
    unsigned int blocks = 0;
    CUtensorMap a_map = {}, b_map = {};
    wgmma_kernel<In, Out> kernel = nullptr;
    auto prepare = [&]() -> kcs_status {
        const kcs_status fits = kcs_gemm_sizes_fit(g, kcs_gemm_most_size, err);
        if (fits != KCS_OK)
            return fits;
        a = (const In *)inputs[0]->data, b = (const In *)inputs[1]->data;
        p.c = g->beta != 0.0 ? (const Out *)inputs[2]->data : nullptr;
        p.out = (Out *)outputs[0]->data;
        p.m = (int)g->m;
        p.n = (int)g->n;
        walk = tiles_of(g->m, g->n, g->k, g->alpha != 0.0, BLOCK_M, BLOCK_N, block_k<In>);
        blocks = persistent_grid(device->sm_count, walk, BLOCK_M, BLOCK_N);
        p.alpha = (float)g->alpha;
        p.beta = (float)g->beta;
        const kcs_status store = choose_store(&p, err);
        if (store != KCS_OK)
            return store;
        kernel = p.tma_store ? wgmma_kernel_for<In, Out, true>(g->transpose_a, g->transpose_b)
                             : wgmma_kernel_for<In, Out, false>(g->transpose_a, g->transpose_b);

        if (walk.k_tiles > 0) {
            kcs_status status = require_tma_bases(a, b, err);
            /* a is m x k as stored (k x m transposed), b k x n (n x k transposed) */
            const CUtensorMapDataType type = wgmma_input<In>::tma_type;
            if (status == KCS_OK)
                status = g->transpose_a
                             ? encode_map(&a_map, type, sizeof(In), a, g->m, g->k, g->m, block_k<In>, "a", err)
                             : encode_map(&a_map, type, sizeof(In), a, g->k, g->m, g->k, BLOCK_M, "a", err);
            if (status == KCS_OK)
                status = g->transpose_b
                             ? encode_map(&b_map, type, sizeof(In), b, g->k, g->n, g->k, BLOCK_N, "b", err)
                             : encode_map(&b_map, type, sizeof(In), b, g->n, g->k, g->n, block_k<In>, "b", err);
            if (status != KCS_OK)
                return status;
        }
        KCS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES));
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0) {
            kernel<<<blocks, THREADS, SHARED_BYTES, device->stream>>>(a_map, b_map, p, walk);
            KCS_CUDA_CHECK_LAUNCH("kcs_gemm_wgmma");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
}

/* The wgmma row of storage type In, c and c_out of the type kcs_gemm_with_output chooses. */
template <typename In> KCS_KERNEL_RUN(run_wgmma)
{
    return kcs_gemm_with_output<In>(args, [&](auto out) {
        return run_wgmma_typed<In, typename decltype(out)::type>(device, args, inputs, outputs, kernel_seconds, err);
    });
}

/* What the rows here tell the cases they refuse. */
constexpr const char *elsewhere = "the tensor rows run this case";

/* supports() of the f16 and bf16 row: mode=tensor cases only. */
template <typename In> KCS_KERNEL_SUPPORTS(supports_tensor_mode)
{
    if (!args->gemm.tensor_cores)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tensor cases only: the other f16 and bf16 cases hold a kernel to plain f32 "
                        "accumulation, which tensor cores do not promise (docs/gemm.md, \"Tensor cores\")");
    return require_sm90a_and_tma_rows(device, args, sizeof(In), elsewhere, err);
}

/* supports() of wgmma-tf32: mode=tf32 cases, A as stored and B transposed. */
KCS_KERNEL_SUPPORTS(supports_tf32_mode)
{
    if (!args->gemm.tf32)
        return kcs_fail(err, KCS_UNSUPPORTED, "runs mode=tf32 cases only: plain f32 cases are held to f32 arithmetic");
    if (args->gemm.transpose_a || !args->gemm.transpose_b)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "wgmma reads TF32 operands K-major only and TMA does not transpose: this row runs "
                        "transa=N transb=T alone (tensor-tf32 runs the others)");
    return require_sm90a_and_tma_rows(device, args, sizeof(float), elsewhere, err);
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_F16, "wgmma",
     "Hopper wgmma m64n256k16 f16 -> f32 accumulators from TMA-loaded 128B-swizzled shared memory, 128x256x64 "
     "tiles, 4 stages, 1 producer + 2 consumer warpgroups, persistent grid (mode=tensor)",
     run_wgmma<__half>, supports_tensor_mode<__half>},
    {"gemm", KCS_BF16, "wgmma",
     "Hopper wgmma m64n256k16 bf16 -> f32 accumulators from TMA-loaded 128B-swizzled shared memory, 128x256x64 "
     "tiles, 4 stages, 1 producer + 2 consumer warpgroups, persistent grid (mode=tensor)",
     run_wgmma<__nv_bfloat16>, supports_tensor_mode<__nv_bfloat16>},
    {"gemm", KCS_F32, "wgmma-tf32",
     "Hopper wgmma m64n256k8 tf32 -> f32 accumulators, TMA, 128x256x32 tiles, 4 stages, persistent grid; "
     "transa=N transb=T only (mode=tf32)",
     run_wgmma<float>, supports_tf32_mode},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_tensor_wgmma_kernels = KCS_KERNEL_TABLE(rows);
