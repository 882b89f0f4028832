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
 * stage are done). A consumer keeps one tile's wgmmas in flight while it
 * issues the next tile's, then releases the stage of the one that finished. 128 x 256 is the largest tile whose accumulators fit two
 * consumer warpgroups' registers; it reads 0.75 bytes of shared memory per
 * multiply-add, under the tensor cores' appetite.
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
 * a multiple of 8) is refused with that reason. c and c_out are read and
 * written from the accumulators' registers, element by element, or two
 * adjacent elements at once where n is even (an even index, from a base that
 * cudaMalloc aligns to 256 bytes).
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
 * Without a GPU: nothing here runs in the host emulation; only a GPU run
 * checks it.
 *
 * Run only it: ./build/kcs run --backend cuda --kernel 'wgmma*' gemm
 */
#include <climits>
#include <cstdint>
#include <type_traits>

#include <cuda.h>         /* CUtensorMap and its enums: types only, no libcuda link */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */

#include "../common.cuh"
#include "gemm.cuh"

namespace {

constexpr int BLOCK_M = 128, BLOCK_N = 256;
constexpr int ROW_BYTES = 128;            /* a k tile of one row: the 128-byte swizzle's width */
constexpr int STAGES = 4;
constexpr int CONSUMERS = 2;              /* warpgroups of 64 x 256 each */
constexpr int THREADS = 128 * (1 + CONSUMERS);
constexpr int BOX_MN = 64;                /* an M/N-major box: 64 16-bit elements, 128 bytes */
constexpr int A_STAGE_BYTES = BLOCK_M * ROW_BYTES, B_STAGE_BYTES = BLOCK_N * ROW_BYTES;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
constexpr int SHARED_BYTES = STAGES * STAGE_BYTES + 1024; /* + room to align the tiles to 1024 bytes */
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

/* The 128 f32 accumulators of one m64n256 wgmma: the register list of the
 * instruction text and the asm operands it names. */
#define KCS_WGMMA_ACCUMULATORS \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define KCS_WGMMA_ACCUMULATOR_OPERANDS(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

/* D (64 x 256, f32) += A (64 x k16) B (k16 x 256) from shared memory; the
 * transpose bits say which operand is M/N-major. */
template <typename In, int TRANSPOSE_A, int TRANSPOSE_B>
__device__ __forceinline__ void wgmma(float (&d)[128], uint64_t a, uint64_t b)
{
    if constexpr (sizeof(In) == 4) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " KCS_WGMMA_ACCUMULATORS
                     ", %128, %129, 1, 1, 1;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS(d)
                     : "l"(a), "l"(b));
    } else if constexpr (std::is_same<In, __half>::value) {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " KCS_WGMMA_ACCUMULATORS
                     ", %128, %129, 1, 1, 1, %130, %131;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS(d)
                     : "l"(a), "l"(b), "n"(TRANSPOSE_A), "n"(TRANSPOSE_B));
    } else {
        asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " KCS_WGMMA_ACCUMULATORS
                     ", %128, %129, 1, 1, 1, %130, %131;\n"
                     : KCS_WGMMA_ACCUMULATOR_OPERANDS(d)
                     : "l"(a), "l"(b), "n"(TRANSPOSE_A), "n"(TRANSPOSE_B));
    }
}

/* A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"):
 * start address, leading and stride byte offsets (each >> 4), 128-byte
 * swizzle (mode 1 in bits 62-63), base offset 0. */
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leading, uint32_t stride)
{
    return (uint64_t)((address & 0x3FFFF) >> 4) | (uint64_t)((leading & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((stride & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}

__device__ __forceinline__ uint32_t shared_address(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void barrier_init(uint64_t *barrier, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(count));
}

__device__ __forceinline__ void barrier_expect_bytes(uint64_t *barrier, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void barrier_arrive(uint64_t *barrier)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

/* Until the barrier's phase of this parity has completed. */
__device__ __forceinline__ void barrier_wait(uint64_t *barrier, int parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait;\n"
                 "}\n" ::"r"(shared_address(barrier)),
                 "r"(parity)
                 : "memory");
}

/* TMA: the box at (inner, outer) of the tensor map into shared memory,
 * completing on the barrier. */
__device__ __forceinline__ void tma_load(void *destination, const CUtensorMap *map, int inner, int outer,
                                         uint64_t *barrier)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(shared_address(destination)),
                 "l"(reinterpret_cast<uint64_t>(map)), "r"(inner), "r"(outer), "r"(shared_address(barrier))
                 : "memory");
}

/* What one launch needs besides the two tensor maps. */
template <typename Out> struct wgmma_params {
    const Out *c; /* read only when beta != 0 */
    Out *out;
    int m, n, k;  /* k = 0 when alpha = 0: a and b unread */
    float alpha, beta;
};

/* c_out[index] (and index + 1 when PAIR) from the accumulators, rounded once. */
template <typename Out>
__device__ __forceinline__ float epilogue_value(const wgmma_params<Out> &p, size_t index, float sum)
{
    if (p.beta != 0.0f)
        return fmaf(p.alpha, sum, p.beta * kcs_widen(p.c[index]));
    return p.alpha * sum;
}

template <typename Out> struct alignas(2 * sizeof(Out)) output_pair {
    Out x, y;
};

/* The kernel: one block per 128 x 256 tile of c_out, blockIdx.x across n,
 * blockIdx.y down m. Warpgroup 0 produces, 1 and 2 consume. */
template <typename In, typename Out, bool TRANSPOSE_A, bool TRANSPOSE_B>
__global__ void __launch_bounds__(THREADS, 1)
    kcs_gemm_wgmma(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                   const wgmma_params<Out> p)
{
    constexpr int BK = block_k<In>; /* elements of k per stage */
    constexpr int IK = wgmma_input<In>::instruction_k;
    extern __shared__ uint8_t shared_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    uint8_t *tiles = reinterpret_cast<uint8_t *>(((uintptr_t)shared_raw + 1023) & ~(uintptr_t)1023);

    const int m0 = (int)blockIdx.y * BLOCK_M, n0 = (int)blockIdx.x * BLOCK_N;
    const int warpgroup = (int)threadIdx.x / 128;
    const int k_tiles = (p.k + BK - 1) / BK;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            barrier_init(&full[s], 1);
            barrier_init(&empty[s], CONSUMERS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (warpgroup == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGISTERS));
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < k_tiles; kt++) {
                const int s = kt % STAGES;
                if (kt >= STAGES)
                    barrier_wait(&empty[s], (kt / STAGES - 1) & 1);
                uint8_t *a_tile = tiles + s * STAGE_BYTES, *b_tile = a_tile + A_STAGE_BYTES;
                const int k0 = kt * BK;
                barrier_expect_bytes(&full[s], STAGE_BYTES); /* boxes outside the matrix count, zero-filled */
                if (!TRANSPOSE_A) {
                    tma_load(a_tile, &a_map, k0, m0, &full[s]);
                } else {
#pragma unroll
                    for (int j = 0; j < BLOCK_M / BOX_MN; j++)
                        tma_load(a_tile + j * BOX_MN * ROW_BYTES, &a_map, m0 + j * BOX_MN, k0, &full[s]);
                }
                if (TRANSPOSE_B) {
                    tma_load(b_tile, &b_map, k0, n0, &full[s]);
                } else {
#pragma unroll
                    for (int j = 0; j < BLOCK_N / BOX_MN; j++)
                        tma_load(b_tile + j * BOX_MN * ROW_BYTES, &b_map, n0 + j * BOX_MN, k0, &full[s]);
                }
            }
        }
        return;
    }

    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGISTERS));
    const int consumer = warpgroup - 1; /* rows 64 consumer .. + 63 of the tile */
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; i++)
        d[i] = 0.0f;

    for (int kt = 0; kt < k_tiles; kt++) {
        const int s = kt % STAGES;
        barrier_wait(&full[s], (kt / STAGES) & 1);
        const uint32_t a_tile = shared_address(tiles + s * STAGE_BYTES), b_tile = a_tile + A_STAGE_BYTES;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int i = 0; i < BK / IK; i++) {
            /* K-major: 64 rows of 128 bytes per consumer, instruction i 32 i bytes along the row.
             * M/N-major: one 8 KB box per 64 rows (or columns), instruction i 16 i rows of k down. */
            const uint64_t a = TRANSPOSE_A
                                   ? descriptor(a_tile + consumer * BOX_MN * ROW_BYTES + i * IK * ROW_BYTES,
                                                BOX_MN * ROW_BYTES, 8 * ROW_BYTES)
                                   : descriptor(a_tile + consumer * 64 * ROW_BYTES + i * IK * (int)sizeof(In), 16,
                                                8 * ROW_BYTES);
            const uint64_t b = TRANSPOSE_B
                                   ? descriptor(b_tile + i * IK * (int)sizeof(In), 16, 8 * ROW_BYTES)
                                   : descriptor(b_tile + i * IK * ROW_BYTES, BOX_MN * ROW_BYTES, 8 * ROW_BYTES);
            wgmma<In, TRANSPOSE_A ? 1 : 0, TRANSPOSE_B ? 0 : 1>(d, a, b);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        /* Keep this tile's group in flight and wait for the previous one, whose
         * stage then goes back to the producer: the tensor cores never wait
         * for a release and a refill between tiles. */
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        if (kt > 0 && threadIdx.x % 128 == 0)
            barrier_arrive(&empty[(kt - 1) % STAGES]);
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    /* Accumulator layout of m64nNk*, f32 (PTX ISA, "Matrix Fragments for
     * wgmma"): warp w of the warpgroup holds rows 16 w .. 16 w + 15; lane l,
     * for each 8 columns j, d[4 j + e] at row 16 w + l / 4 + 8 (e / 2) and
     * column 8 j + 2 (l % 4) + e % 2. */
    const int lane = (int)threadIdx.x % 32, warp = ((int)threadIdx.x % 128) / 32;
    const bool pairs = p.n % 2 == 0; /* then every even index is 2-element aligned */
#pragma unroll
    for (int j = 0; j < 32; j++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = m0 + consumer * 64 + warp * 16 + lane / 4 + 8 * h;
            const int column = n0 + 8 * j + 2 * (lane % 4);
            if (row >= p.m || column >= p.n)
                continue;
            const size_t index = (size_t)row * p.n + column;
            const float x = epilogue_value(p, index, d[4 * j + 2 * h]);
            if (column + 1 < p.n) {
                const float y = epilogue_value(p, index + 1, d[4 * j + 2 * h + 1]);
                if (pairs) {
                    *reinterpret_cast<output_pair<Out> *>(p.out + index) = {kcs_narrow<Out>(x), kcs_narrow<Out>(y)};
                } else {
                    p.out[index] = kcs_narrow<Out>(x);
                    p.out[index + 1] = kcs_narrow<Out>(y);
                }
            } else {
                p.out[index] = kcs_narrow<Out>(x);
            }
        }
}

template <typename In, typename Out> using wgmma_kernel = void (*)(CUtensorMap, CUtensorMap, wgmma_params<Out>);

template <typename In, typename Out> wgmma_kernel<In, Out> wgmma_kernel_for(int transpose_a, int transpose_b)
{
    if constexpr (sizeof(In) == 4) { /* supports_tf32_mode admits nt alone */
        return kcs_gemm_wgmma<In, Out, false, true>;
    } else {
        if (!transpose_a)
            return transpose_b ? kcs_gemm_wgmma<In, Out, false, true> : kcs_gemm_wgmma<In, Out, false, false>;
        return transpose_b ? kcs_gemm_wgmma<In, Out, true, true> : kcs_gemm_wgmma<In, Out, true, false>;
    }
}

/* cuTensorMapEncodeTiled from the driver, once (no libcuda link). */
kcs_status encode_function(PFN_cuTensorMapEncodeTiled_v12000 *encode, kcs_error *err)
{
    static PFN_cuTensorMapEncodeTiled_v12000 found = nullptr;
    if (!found) {
        void *function = nullptr;
        cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
        KCS_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000,
                                                        cudaEnableDefault, &result));
        if (result != cudaDriverEntryPointSuccess || !function)
            return kcs_fail(err, KCS_ERROR, "gemm wgmma: the driver has no cuTensorMapEncodeTiled (query result %d)",
                            (int)result);
        found = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
    }
    *encode = found;
    return KCS_OK;
}

/* The tensor map of one operand as stored: rows of `inner` elements, `outer`
 * of them, `ld` elements apart; boxes of 128 bytes by box_outer rows, 128-byte
 * swizzle, zeros outside. */
template <typename In>
kcs_status encode_map(CUtensorMap *map, const In *base, size_t inner, size_t outer, size_t ld, int box_outer,
                      const char *name, kcs_error *err)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    kcs_status status = encode_function(&encode, err);
    if (status != KCS_OK)
        return status;
    const cuuint64_t dims[2] = {inner, outer};
    const cuuint64_t strides[1] = {ld * sizeof(In)};
    const cuuint32_t box[2] = {(cuuint32_t)(ROW_BYTES / sizeof(In)), (cuuint32_t)box_outer};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult result =
        encode(map, wgmma_input<In>::tma_type, 2, const_cast<In *>(base), dims, strides, box, element_strides,
               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS)
        return kcs_fail(err, KCS_ERROR,
                        "gemm wgmma: cuTensorMapEncodeTiled failed (%d) for %s: %zu x %zu elements, rows %zu "
                        "apart, box %u x %u",
                        (int)result, name, outer, inner, ld, box[1], box[0]);
    return KCS_OK;
}

/* The wgmma kernel with a and b stored as In, c and c_out as Out. */
template <typename In, typename Out> KCS_KERNEL_RUN(run_wgmma_typed)
{
    const kcs_gemm_args *g = &args->gemm;
    const In *a = nullptr, *b = nullptr;
    wgmma_params<Out> p = {};
    CUtensorMap a_map = {}, b_map = {};
    const wgmma_kernel<In, Out> kernel = wgmma_kernel_for<In, Out>(g->transpose_a, g->transpose_b);
    const dim3 grid((unsigned int)((g->n + BLOCK_N - 1) / BLOCK_N), (unsigned int)((g->m + BLOCK_M - 1) / BLOCK_M));
    auto prepare = [&]() -> kcs_status {
        /* m: a grid has at most 65535 rows of blocks */
        const kcs_status fits = kcs_gemm_sizes_fit(g, (size_t)65535 * BLOCK_M, err);
        if (fits != KCS_OK)
            return fits;
        a = (const In *)inputs[0]->data, b = (const In *)inputs[1]->data;
        p.c = g->beta != 0.0 ? (const Out *)inputs[2]->data : nullptr;
        p.out = (Out *)outputs[0]->data;
        p.m = (int)g->m;
        p.n = (int)g->n;
        p.k = g->alpha != 0.0 ? (int)g->k : 0; /* alpha = 0: a and b are not read */
        p.alpha = (float)g->alpha;
        p.beta = (float)g->beta;

        if (p.k > 0) {
            if ((uintptr_t)a % 16 != 0 || (uintptr_t)b % 16 != 0)
                return kcs_fail(err, KCS_ERROR, "gemm wgmma: TMA needs a and b 16-byte aligned (a at %p, b at %p)",
                                (const void *)a, (const void *)b);
            /* a is m x k as stored (k x m transposed), b k x n (n x k transposed) */
            kcs_status status = g->transpose_a ? encode_map(&a_map, a, g->m, g->k, g->m, block_k<In>, "a", err)
                                               : encode_map(&a_map, a, g->k, g->m, g->k, BLOCK_M, "a", err);
            if (status == KCS_OK)
                status = g->transpose_b ? encode_map(&b_map, b, g->k, g->n, g->k, BLOCK_N, "b", err)
                                        : encode_map(&b_map, b, g->n, g->k, g->n, block_k<In>, "b", err);
            if (status != KCS_OK)
                return status;
        }
        KCS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED_BYTES));
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0) {
            kernel<<<grid, THREADS, SHARED_BYTES, device->stream>>>(a_map, b_map, p);
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

/* Compute capability 9.0 (sm_90a code runs there alone), and rows of a and b
 * that TMA can address: a multiple of 16 bytes long. */
kcs_status require_sm90a_and_tma_rows(kcs_device *device, const kcs_op_args *args, size_t element_bytes,
                                      kcs_error *err)
{
    if (device->compute_capability != 90)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "wgmma and setmaxnreg are sm_90a instructions, built for compute capability 9.0 only "
                        "(this is %d.%d); the tensor rows run this case",
                        device->compute_capability / 10, device->compute_capability % 10);
    const kcs_gemm_args *g = &args->gemm;
    if (g->alpha == 0.0 || g->k == 0)
        return KCS_OK; /* a and b are not read */
    const size_t lda = g->transpose_a ? g->m : g->k, ldb = g->transpose_b ? g->k : g->n;
    if (lda * element_bytes % 16 != 0 || ldb * element_bytes % 16 != 0)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "TMA needs rows of a and b a multiple of 16 bytes; here a's are %zu and b's %zu bytes "
                        "(the tensor rows run this case)",
                        lda * element_bytes, ldb * element_bytes);
    return KCS_OK;
}

/* supports() of the f16 and bf16 row: mode=tensor cases only. */
template <typename In> KCS_KERNEL_SUPPORTS(supports_tensor_mode)
{
    if (!args->gemm.tensor_cores)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "runs mode=tensor cases only: the other f16 and bf16 cases hold a kernel to plain f32 "
                        "accumulation, which tensor cores do not promise (docs/gemm.md, \"Tensor cores\")");
    return require_sm90a_and_tma_rows(device, args, sizeof(In), err);
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
    return require_sm90a_and_tma_rows(device, args, sizeof(float), err);
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_F16, "wgmma",
     "Hopper wgmma m64n256k16 f16 -> f32 accumulators from TMA-loaded 128B-swizzled shared memory, 128x256x64 "
     "tiles, 4 stages, 1 producer + 2 consumer warpgroups (mode=tensor)",
     run_wgmma<__half>, supports_tensor_mode<__half>},
    {"gemm", KCS_BF16, "wgmma",
     "Hopper wgmma m64n256k16 bf16 -> f32 accumulators from TMA-loaded 128B-swizzled shared memory, 128x256x64 "
     "tiles, 4 stages, 1 producer + 2 consumer warpgroups (mode=tensor)",
     run_wgmma<__nv_bfloat16>, supports_tensor_mode<__nv_bfloat16>},
    {"gemm", KCS_F32, "wgmma-tf32",
     "Hopper wgmma m64n256k8 tf32 -> f32 accumulators, TMA, 128x256x32 tiles, 4 stages; transa=N transb=T only "
     "(mode=tf32)",
     run_wgmma<float>, supports_tf32_mode},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_tensor_wgmma_kernels = KCS_KERNEL_TABLE(rows);
