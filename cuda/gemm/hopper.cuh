/* hopper.cuh: what kcs's Hopper GEMMs share (cuda/gemm/tensor_wgmma.cu for
 * f16, bf16 and TF32, cuda/gemm/fp8_wgmma.cu for FP8): the pieces of a
 * kernel that copies tiles by TMA into 128-byte swizzled shared memory,
 * waits on mbarriers, and multiplies them with wgmma.mma_async; the host
 * side of the TMA descriptors; the epilogue that stores a 64-row
 * accumulator fragment (by TMA, or by the threads where TMA cannot); and the
 * check every such row makes in supports(). The persistent grid's walk over
 * the tiles is tile_order.cuh's, and the shared-memory matrix descriptors
 * matrix_descriptor.cuh's, which this includes.
 *
 * Only files built for sm_90a alone include it (configure.py): wgmma and
 * setmaxnreg exist there only. The PTX is that of the PTX ISA sections
 * "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
 * (wgmma) and "Tensor copy" (cp.async.bulk.tensor); each helper's comment
 * says which form it emits and why. The mbarriers the TMA copies complete on
 * are cuda/async_copy.cuh's, which this includes.
 *
 * Shared-memory layout (PTX ISA, "Shared Memory Matrix Layout", 128-byte
 * swizzle): an operand stored K-major (k contiguous) is one TMA box of rows
 * x 128 bytes, row r at 128 r; the descriptor's stride byte offset (8 rows
 * to the next 8) is 1024, its leading offset unused, and an instruction
 * whose k starts b bytes into the row starts b bytes in. Every box starts on
 * a 1024-byte boundary, where the swizzle pattern starts, so the
 * descriptors' base offset is 0.
 */
#ifndef KCS_CUDA_GEMM_HOPPER_CUH
#define KCS_CUDA_GEMM_HOPPER_CUH

#include <cstdint>
#include <type_traits>

#include <cuda.h>         /* CUtensorMap and its enums: types only, no libcuda link */
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */

#include "../async_copy.cuh" /* shared_address and the mbarriers */
#include "../common.cuh"
#include "gemm.cuh"
#include "matrix_descriptor.cuh" /* ROW_BYTES and the descriptors wgmma reads */
#include "tile_order.cuh" /* the persistent grid's walk over the tiles */

namespace kcs_hopper {

/* The calling thread's warpgroup (threadIdx.x / 128) as the compiler can see
 * to be the same across the warp (a broadcast from lane 0), so that what
 * derives from it, the consumers' descriptors, stays in uniform registers,
 * where wgmma reads them, rather than move there before every wgmma. */
__device__ __forceinline__ int warpgroup_index()
{
    return __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
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

/* Orders this warpgroup's earlier register and shared-memory accesses
 * before the wgmma.mma_async that follow (wgmma.fence): needed before the
 * first wgmma of a group whose accumulators other instructions touched. */
__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* Closes the group of the wgmma.mma_async issued since the last commit. */
__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* Until at most PENDING committed groups are still running. */
template <int PENDING> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

/* After a wgmma_wait: ties each accumulator register to this point, so
 * that the compiler reads none of them before the wait (the wgmma asm that
 * wrote them is all it sees, and an ordinary read could be moved above the
 * wait). Emits no instruction. */
template <int N> __device__ __forceinline__ void accumulators_ready(float (&d)[N])
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

/* The f32 accumulators of one m64n64 wgmma (32 a thread) and of one
 * m64n256 (128): the register list of the instruction text, and the asm
 * operands it names (%0 on); the first 64 operands, which the m64n256
 * list builds on. */
#define KCS_WGMMA_ACCUMULATORS_32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define KCS_WGMMA_ACCUMULATOR_OPERANDS_32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define KCS_WGMMA_ACCUMULATOR_OPERANDS_64(d) \
    KCS_WGMMA_ACCUMULATOR_OPERANDS_32(d), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define KCS_WGMMA_ACCUMULATORS_128 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define KCS_WGMMA_ACCUMULATOR_OPERANDS_128(d) \
    KCS_WGMMA_ACCUMULATOR_OPERANDS_64(d), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

/* Initialises a pipeline's barriers (thread 0 of the block, before the
 * block's __syncthreads): each stage's full barrier completes on the
 * producer's one arrival and the TMA bytes it expects, its empty one on
 * readers arrivals (the consumer warpgroups that read each stage). */
template <int STAGES> __device__ __forceinline__ void init_stage_barriers(uint64_t *full, uint64_t *empty, int readers)
{
    for (int s = 0; s < STAGES; s++) {
        barrier_init(&full[s], 1);
        barrier_init(&empty[s], readers);
    }
}

/* The producer of a persistent pipeline (its one thread): walks the block's
 * tiles (blockIdx.x, + gridDim.x, ...) in tile_origin's order and, for each
 * of a tile's walk.k_tiles stages, waits for the stage's slot to be free,
 * arms its full barrier with stage_bytes and calls load(slot, kt, m0, n0,
 * &full[slot]) to issue the slot's TMA copies. Stage uses are counted
 * across tiles ("use"): use u fills slot u % STAGES for the (u / STAGES)-th
 * time, so the consumers wait for that phase of its full barrier and the
 * producer, from the second round on, for the phase before of its empty
 * barrier; the j-th tile of a block takes uses j k_tiles .. (j + 1) k_tiles
 * - 1. It runs ahead into the next tile while the consumers store one.
 * Each kernel writes out its own start around it (the barriers, the block's
 * barrier, setmaxnreg for each role, this call): folded into one function
 * that returned the thread's role, the same start made ptxas spill 108 bytes
 * in 8 of the 34 wgmma instances and 844 to 928 in all 12 FP8 ones (nvcc
 * 13.0, sm_90a, -Xptxas -v; 2026-11-29); written out, none spills. */
template <int STAGES, int BLOCK_M, int BLOCK_N, typename Load>
__device__ __forceinline__ void produce_stages(const tile_walk &walk, uint64_t *full, uint64_t *empty, int stage_bytes,
                                               Load load)
{
    const long long tile_count = (long long)walk.tiles_m * walk.tiles_n;
    int use = 0;
    for (long long tile = blockIdx.x; tile < tile_count; tile += gridDim.x) {
        int m0, n0;
        tile_origin<BLOCK_M, BLOCK_N>(walk, tile, m0, n0);
        for (int kt = 0; kt < walk.k_tiles; kt++, use++) {
            const int s = use % STAGES;
            if (use >= STAGES)
                barrier_wait(&empty[s], (use / STAGES - 1) & 1);
            barrier_expect_bytes(&full[s], stage_bytes); /* boxes outside the matrix count, zero-filled */
            load(s, kt, m0, n0, &full[s]);
        }
    }
}

/* What a launch's epilogue needs besides the accumulators. */
template <typename Out> struct epilogue_params {
    CUtensorMap out_map; /* c_out's tensor map, boxes of 64 rows x 128 bytes, where tma_store */
    const Out *c;        /* read only when beta != 0 */
    Out *out;
    int m, n;
    float alpha, beta; /* FP8: alpha already times a_scale and b_scale */
    bool tma_store;    /* c_out stored by TMA: choose_store says when, and the kernel is built for it */
};

/* c_out's element from the accumulated sum and c's element, in f32: alpha *
 * sum, or fma(alpha, sum, beta * c) where beta != 0 (c is not read then:
 * the caller passes anything). */
template <typename Out> __device__ __forceinline__ float epilogue_value(const epilogue_params<Out> &p, float c, float sum)
{
    return p.beta != 0.0f ? fmaf(p.alpha, sum, p.beta * c) : p.alpha * sum;
}

/* Shared memory a consumer warpgroup's epilogue stages its accumulators in,
 * STAGING_BYTES of it, 1024-byte aligned. The TMA store puts them there
 * as c_out's boxes, 64 rows x 128 bytes in the 128-byte swizzle, in
 * STORE_BUFFERS of them so that one box is filled while the last is
 * being copied out. The element-by-element store puts STAGED_COLUMNS
 * columns of its 64 rows there at a time, as f32, each row padded by 8
 * floats so that the fragment's writes hit 32 distinct banks per half warp
 * (a row is 8 banks on from the one above). */
constexpr int STORE_BOX_BYTES = 64 * ROW_BYTES; /* 8 KB */
constexpr int STORE_BUFFERS = 2;
constexpr int STAGED_COLUMNS = 32;
constexpr int STAGED_ROW_FLOATS = STAGED_COLUMNS + 8;
constexpr int STAGING_BYTES = STORE_BUFFERS * STORE_BOX_BYTES; /* 16 KB a consumer */
static_assert(64 * STAGED_ROW_FLOATS * (int)sizeof(float) <= STAGING_BYTES, "the staged store's chunk fits");

/* Waits for the 128 threads of consumer warpgroup `consumer` alone (named
 * barrier 1 + consumer; 0 is __syncthreads'). */
__device__ __forceinline__ void warpgroup_sync(int consumer)
{
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + consumer) : "memory");
}

/* The element-by-element store of store_accumulators (below), where TMA
 * cannot store c_out or c is read.
 *
 * Why through shared memory: in the accumulators' layout (PTX ISA, "Matrix
 * Fragments for wgmma": warp w holds rows 16 w .. 16 w + 15; lane l, for
 * each 8 columns j, d[4 j + e] at row 16 w + l / 4 + 8 (e / 2) and column
 * 8 j + 2 (l % 4) + e % 2) a warp's store covers 8 rows with 8 bytes each,
 * a quarter of a 32-byte sector per row for 16-bit outputs: on the
 * attention-scores shape (k = 128: the output is most of the traffic) the
 * kernel ran at a third of cuBLAS. So STAGED_COLUMNS columns at a time go
 * to `staging` as they lie in the fragment, and are read back by rows, 16
 * bytes of c_out a thread (whole sectors; c read the same way where beta !=
 * 0), where n allows: rows whose start is not 16-byte aligned (n not a
 * multiple of 16 bytes of Out) are stored element by element. Each element
 * of c is read by the thread that then writes it (c_out may alias c). */
template <typename Out, int N>
__device__ __forceinline__ void store_staged(const epilogue_params<Out> &p, const float (&d)[N / 2], int row0,
                                             int column0, float *staging, int consumer)
{
    constexpr int VECTOR = 16 / (int)sizeof(Out);           /* elements in 16 bytes */
    constexpr int THREADS_PER_ROW = STAGED_COLUMNS / VECTOR; /* 4 (16-bit) or 8 (f32) */
    constexpr int ROWS_PER_PASS = 128 / THREADS_PER_ROW;
    static_assert(N % STAGED_COLUMNS == 0 && 64 % ROWS_PER_PASS == 0, "whole chunks and passes");
    const int thread = (int)threadIdx.x % 128, lane = thread % 32, warp = thread / 32;
    const bool vectors = p.n % VECTOR == 0; /* then every row starts 16-byte aligned (cudaMalloc: 256) */
#pragma unroll
    for (int chunk = 0; chunk < N / STAGED_COLUMNS; chunk++) {
#pragma unroll
        for (int jj = 0; jj < STAGED_COLUMNS / 8; jj++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int j = chunk * (STAGED_COLUMNS / 8) + jj;
                const int row = warp * 16 + lane / 4 + 8 * h, column = 8 * jj + 2 * (lane % 4);
                *reinterpret_cast<float2 *>(staging + row * STAGED_ROW_FLOATS + column) =
                    make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
            }
        warpgroup_sync(consumer);
#pragma unroll
        for (int pass = 0; pass < 64 / ROWS_PER_PASS; pass++) {
            const int row = pass * ROWS_PER_PASS + thread / THREADS_PER_ROW;
            const int column = (thread % THREADS_PER_ROW) * VECTOR;
            const int out_row = row0 + row, out_column = column0 + chunk * STAGED_COLUMNS + column;
            if (out_row >= p.m || out_column >= p.n)
                continue;
            const float *sums = staging + row * STAGED_ROW_FLOATS + column;
            const size_t index = (size_t)out_row * p.n + out_column;
            if (vectors && out_column + VECTOR <= p.n) {
                union {
                    uint4 bits;
                    Out values[VECTOR];
                } c, out;
                if (p.beta != 0.0f)
                    c.bits = *reinterpret_cast<const uint4 *>(p.c + index);
#pragma unroll
                for (int e = 0; e < VECTOR; e++)
                    out.values[e] = kcs_narrow<Out>(epilogue_value(p, p.beta != 0.0f ? kcs_widen(c.values[e]) : 0.0f, sums[e]));
                *reinterpret_cast<uint4 *>(p.out + index) = out.bits;
            } else {
                for (int e = 0; e < VECTOR && out_column + e < p.n; e++)
                    p.out[index + e] = kcs_narrow<Out>(
                        epilogue_value(p, p.beta != 0.0f ? kcs_widen(p.c[index + e]) : 0.0f, sums[e]));
            }
        }
        warpgroup_sync(consumer); /* the chunk read before the next one overwrites it */
    }
}

/* Orders this thread's earlier writes to shared memory before the TMA
 * unit's (the async proxy's) reads of it: before a TMA store of what the
 * threads wrote. */
__device__ __forceinline__ void fence_async_shared()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* TMA: the box in shared memory at source to (inner, outer) of the tensor
 * map, the parts outside the matrix dropped; completes in this thread's
 * bulk async-group (tma_store_commit, tma_store_wait). */
__device__ __forceinline__ void tma_store(const CUtensorMap *map, const void *source, int inner, int outer)
{
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\n" ::"l"(
                     reinterpret_cast<uint64_t>(map)),
                 "r"(shared_address(source)), "r"(inner), "r"(outer)
                 : "memory");
}

__device__ __forceinline__ void tma_store_commit()
{
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* Until at most PENDING of this thread's bulk groups still read their
 * shared memory (READ_ONLY) or are still writing global memory. */
template <int PENDING, bool READ_ONLY> __device__ __forceinline__ void tma_store_wait()
{
    if constexpr (READ_ONLY)
        asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(PENDING) : "memory");
    else
        asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

/* Two adjacent elements of c_out, each rounded once to Out, written to
 * shared memory at `to` in one store (16-bit pairs by kcs_narrow_pair, one
 * cvt.rn.*x2). */
template <typename Out> __device__ __forceinline__ void narrowed_pair(float first, float second, uint8_t *to)
{
    if constexpr (sizeof(Out) == 2)
        *reinterpret_cast<unsigned int *>(to) = kcs_narrow_pair<Out>(first, second);
    else
        *reinterpret_cast<float2 *>(to) = make_float2(first, second);
}

/* The TMA store of store_accumulators (below): each box of 64 rows x 128
 * bytes of c_out (64 columns of 16 bits, or 32 of f32) is written by the
 * warpgroup into one of its STORE_BUFFERS in shared memory, in the
 * 128-byte swizzle (the 16-byte unit u of row r at u ^ (r % 8), so that a
 * warp's writes of 8 rows fall in distinct banks), and copied to global
 * memory by one TMA store that thread 0 of the warpgroup issues and does
 * not wait for: the warpgroup goes on to the next box, and to its next
 * tile's wgmmas, while the TMA unit writes whole lines. A buffer is
 * written again once the store from it has been read (wait_group.read,
 * STORE_BUFFERS - 1 stores left in flight); finish_stores waits for the
 * last. */
template <typename Out, int N>
__device__ __forceinline__ void store_by_tma(const epilogue_params<Out> &p, const float (&d)[N / 2], int row0,
                                             int column0, uint8_t *staging, int consumer)
{
    constexpr int COLUMNS = ROW_BYTES / (int)sizeof(Out); /* of one box */
    constexpr int BOXES = N / COLUMNS;
    /* an even number of boxes a tile: the next tile's first box goes to the buffer this tile's first did */
    static_assert(N % COLUMNS == 0 && BOXES % STORE_BUFFERS == 0, "whole boxes, alternating buffers");
    const int thread = (int)threadIdx.x % 128, lane = thread % 32, warp = thread / 32;
#pragma unroll
    for (int box = 0; box < BOXES; box++) {
        uint8_t *buffer = staging + (box % STORE_BUFFERS) * STORE_BOX_BYTES;
        if (thread == 0)
            tma_store_wait<STORE_BUFFERS - 1, true>(); /* this buffer's last store has read it */
        warpgroup_sync(consumer);
#pragma unroll
        for (int jj = 0; jj < COLUMNS / 8; jj++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int j = box * (COLUMNS / 8) + jj;
                const int row = warp * 16 + lane / 4 + 8 * h, byte = (8 * jj + 2 * (lane % 4)) * (int)sizeof(Out);
                narrowed_pair<Out>(epilogue_value(p, 0.0f, d[4 * j + 2 * h]), epilogue_value(p, 0.0f, d[4 * j + 2 * h + 1]),
                                   buffer + row * ROW_BYTES + ((byte / 16) ^ (row % 8)) * 16 + byte % 16);
            }
        fence_async_shared();
        warpgroup_sync(consumer);
        if (thread == 0) {
            tma_store(&p.out_map, buffer, column0 + box * COLUMNS, row0);
            tma_store_commit();
        }
    }
}

/* Stores the f32 accumulators d of one consumer warpgroup's 64 x N tile,
 * whose top left element is (row0, column0) of c_out, each rounded once to
 * Out by epilogue_value; rows and columns beyond m and n are not stored.
 * By TMA in a kernel built for it (TMA_STORE: where choose_store chose it;
 * store_by_tma), else element by element (store_staged). A template
 * argument, not a branch on p.tma_store: with both stores in one kernel
 * the FP8 kernels' consumers spill registers. staging: the consumer's
 * STAGING_BYTES. */
template <typename Out, int N, bool TMA_STORE>
__device__ __forceinline__ void store_accumulators(const epilogue_params<Out> &p, const float (&d)[N / 2], int row0,
                                                   int column0, uint8_t *staging, int consumer)
{
    if constexpr (TMA_STORE)
        store_by_tma<Out, N>(p, d, row0, column0, staging, consumer);
    else
        store_staged<Out, N>(p, d, row0, column0, reinterpret_cast<float *>(staging), consumer);
}

/* At the end of a consumer warpgroup: its TMA stores, written (shared
 * memory must outlive their reads; the kernel's end does not wait). */
template <bool TMA_STORE> __device__ __forceinline__ void finish_stores()
{
    if (TMA_STORE && threadIdx.x % 128 == 0)
        tma_store_wait<0, false>();
}

/* cuTensorMapEncodeTiled from the driver, once (no libcuda link). */
inline kcs_status encode_function(PFN_cuTensorMapEncodeTiled_v12000 *encode, kcs_error *err)
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

/* The tensor map of one operand as stored: rows of `inner` elements of
 * element_bytes each, `outer` of them, `ld` elements apart; boxes of 128
 * bytes by box_outer rows, 128-byte swizzle, zeros outside the matrix. */
inline kcs_status encode_map(CUtensorMap *map, CUtensorMapDataType type, size_t element_bytes, const void *base,
                             size_t inner, size_t outer, size_t ld, int box_outer, const char *name, kcs_error *err)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    kcs_status status = encode_function(&encode, err);
    if (status != KCS_OK)
        return status;
    const cuuint64_t dims[2] = {inner, outer};
    const cuuint64_t strides[1] = {ld * element_bytes};
    const cuuint32_t box[2] = {(cuuint32_t)(ROW_BYTES / element_bytes), (cuuint32_t)box_outer};
    const cuuint32_t element_strides[2] = {1, 1};
    const CUresult result = encode(map, type, 2, const_cast<void *>(base), dims, strides, box, element_strides,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (result != CUDA_SUCCESS)
        return kcs_fail(err, KCS_ERROR,
                        "gemm wgmma: cuTensorMapEncodeTiled failed (%d) for %s: %zu x %zu elements, rows %zu "
                        "apart, box %u x %u",
                        (int)result, name, outer, inner, ld, box[1], box[0]);
    return KCS_OK;
}

/* c_out's element type as a tensor map names it (bits are copied as they are). */
template <typename Out>
constexpr CUtensorMapDataType store_type = sizeof(Out) == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                                            : CU_TENSOR_MAP_DATA_TYPE_UINT16;

/* Whether c_out is stored by TMA (store_accumulators), and its tensor map
 * if so: where c is not read (beta = 0: the TMA store does not read c) and
 * TMA can address c_out (base and rows a multiple of 16 bytes). Else the
 * element-by-element store runs, which any n allows. p's out, m, n and
 * beta are set. */
template <typename Out> kcs_status choose_store(epilogue_params<Out> *p, kcs_error *err)
{
    p->tma_store = p->beta == 0.0f && p->m > 0 && p->n > 0 && (size_t)p->n * sizeof(Out) % 16 == 0 &&
                   (uintptr_t)p->out % 16 == 0;
    if (!p->tma_store)
        return KCS_OK;
    return encode_map(&p->out_map, store_type<Out>, sizeof(Out), p->out, (size_t)p->n, (size_t)p->m, (size_t)p->n,
                      64, "c_out", err);
}

/* supports() of every Hopper row: compute capability 9.0 (sm_90a code runs
 * there alone), and rows of a and b that TMA can address, a multiple of 16
 * bytes long (not asked where alpha = 0 or k = 0 leave a and b unread).
 * elsewhere names the rows that run a case refused here. */
inline kcs_status require_sm90a_and_tma_rows(const kcs_device *device, const kcs_op_args *args,
                                             size_t element_bytes, const char *elsewhere, kcs_error *err)
{
    if (device->compute_capability != 90)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "wgmma and setmaxnreg are sm_90a instructions, built for compute capability 9.0 only "
                        "(this is %d.%d); %s",
                        device->compute_capability / 10, device->compute_capability % 10, elsewhere);
    const kcs_gemm_args *g = &args->gemm;
    if (g->alpha == 0.0 || g->k == 0)
        return KCS_OK; /* a and b are not read */
    const size_t lda = g->transpose_a ? g->m : g->k, ldb = g->transpose_b ? g->k : g->n;
    if (lda * element_bytes % 16 != 0 || ldb * element_bytes % 16 != 0)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "TMA needs rows of a and b a multiple of 16 bytes; here a's are %zu and b's %zu bytes (%s)",
                        lda * element_bytes, ldb * element_bytes, elsewhere);
    return KCS_OK;
}

/* KCS_ERROR unless a and b start on 16-byte boundaries, as TMA needs. */
inline kcs_status require_tma_bases(const void *a, const void *b, kcs_error *err)
{
    if ((uintptr_t)a % 16 != 0 || (uintptr_t)b % 16 != 0)
        return kcs_fail(err, KCS_ERROR, "gemm wgmma: TMA needs a and b 16-byte aligned (a at %p, b at %p)", a, b);
    return KCS_OK;
}

} // namespace kcs_hopper

#endif
