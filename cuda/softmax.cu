/* softmax.cu: row-wise softmax on CUDA (docs/softmax.md), f32, f64, f16 and bf16:
 *
 *     y[r][k] = exp(x[r][k] - M_r) / sum_l exp(x[r][l] - M_r),   M_r = max_l x[r][l]
 *
 * Input x and output y: rows x cols of the storage type T, row-major. Every
 * kernel is one template over T, computing in C = kcs_compute<T> (cuda/
 * half.cuh): float for f32, f16 and bf16, double for f64. A row is held in
 * slots: a 16-byte vector (vector_of<T>: float4, double2, or 8 16-bit
 * elements in a uint4) when every row starts 16-byte aligned (cols *
 * sizeof(T) a multiple of 16), else one element. Slots travel as stored
 * (loads, cp.async, shared memory) and are widened exactly (kcs_widen) where
 * they enter the arithmetic; every output is rounded once (kcs_narrow) as it
 * is stored. Register slots are counted in widened values, so f16 and bf16
 * take half the slots of f32 (8 floats each) and every type keeps the same
 * register bytes. Four kernel families, each a variant of its own (rows of
 * the table at the end of this file, one per dtype), so that the runner
 * runs, times and reports each on its own; their supports() refuses, with
 * the reason, the rows a family cannot hold:
 *
 *   auto            what library users call: the first family below that
 *                   holds the row (cluster only where the device runs
 *                   clusters), so that each row is read from memory once
 *                   where it fits on chip, and online beyond; the warp
 *                   groups only for rows of at most 2 KB, 4 KB in f64
 *                   (auto_group_row_bytes).
 *   warp-groups     rows of at most 32 lanes x 32 values (1024 f32, f16 or
 *                   bf16 or 512 f64 columns when aligned):
 *                   kcs_softmax_registers with GROUP lanes of a warp a row:
 *                   one slot a lane, as many lanes (1, 2, 4, 8, 16, 32) as
 *                   the row has slots (cols = 128: 32 lanes of one float4,
 *                   16 lanes of one uint4 of 16-bit), else 32 lanes of the
 *                   fewest of 2, 4 and 8 slots (cols = 1024: 8 float4, 4
 *                   uint4); shuffles only; a grid of short-lived blocks
 *                   (of one warp for rows of 2 KB and more, else of 128
 *                   threads: warp_block_threads) that covers every row,
 *                   each lane's loads all in flight (load_streaming)
 *                   before it computes.
 *   block-resident  rows whose slots beyond 16 values a thread fit the
 *                   device's shared memory a block of 512 threads (up to
 *                   65536 f32, 32768 f64 or 122880 f16/bf16 columns on a
 *                   227-KB H100/H200): kcs_softmax_resident, a block of 128,
 *                   256 or 512 threads a row, 16 values a thread in
 *                   registers and the rest in shared memory (the stash),
 *                   filled by cp.async; a grid that covers every row, one
 *                   row a block. The block size (plan_for): among those
 *                   that keep four blocks on an SM, the one with the fewest
 *                   stash slots a thread, else the one that keeps the most
 *                   threads on an SM; cols = 32768 takes 512 threads (f32:
 *                   4 float4 in registers and 12 in shared memory a thread,
 *                   96 KB a block, two blocks an SM; bf16: 2 uint4 and 6),
 *                   cols = 4096 256 (f32: 4 float4 a thread, all in
 *                   registers), cols = 2048 128.
 *   cluster         rows whose slices fit 16 blocks' shared memory (up to
 *                   about 974000 f32, 486000 f64 or 1.88e6 f16/bf16 columns
 *                   on a 227-KB H100/H200) on devices and builds that run
 *                   thread-block clusters (sm_90); rows of at least 27
 *                   columns (the depth rule, below). kcs_softmax_cluster:
 *                   a row over a cluster of 2, 4, 8 or 16 blocks of 256
 *                   threads, the fewest whose slices are at most 64 KB
 *                   and 16384 elements (KCS_SOFTMAX_CLUSTER_SLICE_BYTES,
 *                   _ELEMENTS; 262144 f32 or bf16 columns: 16 blocks of
 *                   64 or 32 KB, four or seven blocks an SM; 131072 f32 or
 *                   bf16: 8), else 16. Each block
 *                   reads its slice once, into shared memory (cp.async)
 *                   beyond the 16-byte slots a thread holds in registers
 *                   (three in f32 and f64, one in f16 and bf16:
 *                   cluster_register_slots),
 *                   takes its max and sum, and sends the pair to every
 *                   block of the cluster (st.async into distributed shared
 *                   memory, completing on that block's mbarrier); once its
 *                   own pairs have all arrived every block combines them in
 *                   the same order (the same bits in each) and writes its
 *                   slice's outputs. A grid that covers every row, no block
 *                   beyond its row: clusters of other rows share each SM
 *                   and stream while one waits for its slowest block;
 *                   launched with the load-balancing cluster scheduling
 *                   policy (launch_cluster).
 *   online          rows within the depth rule (below): kcs_softmax_online,
 *                   a block of 1024 threads (512 for f64) a row. Pass 1
 *                   reads the row once keeping a running max m and a sum s
 *                   rescaled by exp(m_old - m_new) when m grows (once per
 *                   batch of 16 values a thread at most), merged across the
 *                   block by max and rescaled sums; pass 2 reads it again
 *                   and writes exp(x - M) / S. Special values are tracked by
 *                   a flag here (NaN or +inf anywhere, or a maximum of -inf,
 *                   makes the row NaN).
 *
 * The resident kernels (warp-groups' kcs_softmax_registers, block-resident's
 * kcs_softmax_resident): a group of GROUP threads (a block's THREADS)
 * holds its row in REG register slots a thread and, for the block, also in
 * shared-memory slots. Slot k of a thread holds the row's slot
 * k * GROUP + lane, so every load and store is coalesced. Per row: the max
 * (a butterfly of shuffles, then across warps through shared memory), then
 * e = exp(x - M) kept in place (in registers in C; in the stash only where
 * T is C, f32 and f64: a 16-bit stash keeps x, and the output pass computes
 * exp(x - M) again, the same bits, rather than round e to 16 bits; a stash
 * of e in f32, twice the shared memory, ran level on an H200 at 8192 to
 * 32768 columns: docs/softmax.md, "Sixteen-bit terms in the block's stash") and
 * summed, the sum reduced the same way, then y = e * (1 / sum); outputs
 * are stored with the streaming hint (__stcs), so that they do not evict
 * inputs. Both grids cover every row, a row a group, and keep no block
 * beyond its row: the SM holds other blocks whose loads are in flight while
 * one computes and stores, and the block scheduler keeps them out of step
 * (a persistent grid that loaded each block's next row as it stored this
 * one ran 4 to 7% slower with the same 512-thread blocks at 8192 to 32768
 * f32 columns: docs/softmax.md, Speed).
 *
 * Special values (docs/softmax.md) need no special case in the resident
 * kernel: the max is taken with fmax (which skips NaN), so a row holding NaN
 * gets a NaN term and a NaN sum; a row holding +inf gets M = +inf and
 * inf - inf = NaN; a row of -inf gets -inf - (-inf) = NaN; a -inf entry
 * under a finite max gets exp(-inf) = 0 exactly.
 *
 * Precision: the working precision of C (for f32, f16 and bf16 the exp2
 * form, exp_of below: ex2.approx of the rounded (x - M) log2 e, 2 ulp, which
 * docs/softmax.md's bound budgets; for f64 exp, 1 ulp; never __expf or
 * fast math), sums in C, one IEEE reciprocal and a product per element (the
 * spec's "a reciprocal and a product"), then for f16 and bf16 one rounding
 * to nearest even (cvt.rn): no term, sum or partial result is ever held in
 * the 16-bit type, which would round twice. Summation depth
 * (docs/softmax.md, D(cols) = min(cols - 1, 2048 + ceil(log2 cols))): a
 * resident thread sums its own elements in one chain, at most 128 (32
 * slots of 4 f32) or 240 (30 slots of 8 16-bit), then a butterfly of at
 * most 5 levels and a chain over at most 16 warp sums: under 300 in all. On short rows most of those add the exact 0 of
 * a lane or a warp that holds none of the row, which rounds nothing, so
 * every resident family keeps to the rule for every row it holds. Online:
 * a term passes through at most width + batch additions in its batch, then
 * at most 9 (an addition and a rescaling, which counts as 8) per later
 * batch of its thread, then 10 merge levels (9 each): supports() refuses
 * rows for which that exceeds D(cols), rather than break the rule: beyond
 * about 3.5e6 f32, 8.8e5 f64 or 3.5e6 f16/bf16 columns (less when rows
 * are not 16-byte aligned), and below about 108 columns, where the count
 * (which does not credit merges with an empty side for being exact) passes
 * cols - 1; auto never gives such short rows to the online kernel.
 * Cluster: a thread's chain over its slots of the slice (at most 57 slots
 * of 16 bytes: 228 f32 or 456 16-bit values), a butterfly of 5 levels, a
 * chain over the 8 warp sums, one rescaling (counted 8) and a butterfly of
 * 5 levels over the blocks: supports() refuses rows below 27 columns, where
 * that count passes cols - 1; auto gives it only rows beyond the block.
 *
 * Speed (memory-bound: an element is read once and written once; 3 TB/s
 * over 132 SMs is 23 bytes a ns an SM, and with latency under load well
 * above the idle 600 ns an H100 SM wants some 40 KB of loads in flight to
 * stream at the copy rate; docs/softmax.md has the measurements). Per shape:
 *   1e6 x 128 and 32768 x 1024 (warp-groups: 32 lanes of one float4 or 16
 *     of one uint4; 32 lanes of 8 float4 or 4 uint4): a grid of 128-thread
 *     blocks that covers every row, capped at 64 registers a thread (f32's
 *     32 values a lane: ptxas takes 61, 8 blocks an SM; one float4 a lane
 *     takes 22, a full SM). Loads by load_streaming (non-coherent,
 *     no L1 allocation, 256-byte L2 fetches): 1.4% faster than __ldcs at
 *     32768 x 1024 f32; one slot a lane at 1e6 x 128 ran 2% faster than 8
 *     lanes of 4 float4, where persistent warps that issue the next row's
 *     loads before reducing this one ran 6 to 8% slower (3 to 5% at 32768 x
 *     1024). A lane's loads of its row are all
 *     issued before it computes, and the SM holds other blocks whose loads
 *     are in flight while it computes and stores this one's: on an H100 this
 *     ran 0.98 of copy at 1e6 x 128 in f32 and bf16, where a persistent grid
 *     that loaded each lane's next row early (the kernel this replaced) ran
 *     0.92 and 0.85, and 0.91 (f32) and 0.88 (bf16) at 32768 x 1024, where
 *     the staged warp (a warp a row, the next row copied into shared memory
 *     by cp.async on a persistent grid; retired, docs/softmax.md) ran 0.89
 *     and 0.80.
 *   4096 x 32768 (block-resident, 512 threads, two blocks an SM): 0.98 of
 *     copy in f32 and 0.95 in f16 and bf16 on an H100, where the persistent
 *     grid this replaced (264 blocks, each loading its next row as it stored
 *     this one; for 16-bit, 1024 threads and two stash buffers) ran 0.94
 *     and 0.91: its blocks started in step, computed in step and left the
 *     memory idle together, and an 8-us head start for half of them alone
 *     won back 1%. Rows split over a cluster of 2, 4 or 8 blocks (max and
 *     sum exchanged in distributed shared memory) ran 0.68 to 0.90: each
 *     block waits for its slowest partner twice a row. Block sizes by
 *     shape (docs/softmax.md, Speed): the rule above is within 1.1% of the
 *     best of 128, 256 and 512 threads on every measured shape from 1024
 *     to 65536 columns in each type. An L2 prefetch of the next row
 *     (cp.async.bulk.prefetch.L2) ran 0.73 (it evicts rows in use).
 *   At 32768 x 1024 the shape itself is close to the limit: under kcs's
 *     held-stream timer a streaming copy kernel of the same bytes runs 0.97
 *     of the 1-GiB copy in f32 and 0.93 in 16-bit, warp-groups 0.95 and
 *     0.92 (2026-11-27).
 * f16 and bf16 move half the bytes per element, so each SM must compute
 * twice as many elements per second: on an H200 (4.3 TB/s) about 4 an
 * SM-cycle at 0.9 of copy, against 128 lanes of issue. With expf (9
 * instructions) an element took about 15, or 24 where the block's 16-bit
 * stash computes exp twice, and the 16-bit rows ran 0.74 to 0.87 of copy
 * where f32 ran 0.93 to 0.98; the exp2 form through ex2.approx (2
 * instructions, exp_of) and outputs rounded in pairs (kcs_narrow_pair) took
 * them to 0.92 to 0.96 (docs/softmax.md, "The exp2 form on the GPU"). On an
 * H100 (3 TB/s) exp2f of the same argument (ex2.approx with a subnormal
 * fix-up) had measured within 1% of expf: the arithmetic became the limit
 * on the faster memory.
 *
 * Bytes: 2 rows cols sizeof(T) (read once, written once) for the resident
 * and cluster kernels; the online kernel reads twice.
 *
 * Tunables (-D on the nvcc line): KCS_SOFTMAX_ONLINE_THREADS,
 * KCS_SOFTMAX_CLUSTER_SLICE_BYTES, KCS_SOFTMAX_CLUSTER_SLICE_ELEMENTS.
 *
 * Run only it: ./build/kcs run --backend cuda softmax (every row, each
 * reported on its own; add --benchmark to time the perf cases).
 */
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include <cooperative_groups.h>
#include <cuda/std/limits>

#include "async_copy.cuh" /* cp.async, mbarriers and the cluster's barrier, in PTX */
#include "common.cuh"
#include "load_streaming.cuh" /* loads of input read once */
#include "vector_of.cuh" /* the 16-byte vector of each element type */

/* Threads of the online kernel for f32, f16 and bf16 (f64 uses half): a multiple of 64, at most 1024. */
#ifndef KCS_SOFTMAX_ONLINE_THREADS
#define KCS_SOFTMAX_ONLINE_THREADS 1024
#endif

namespace {

/* Register slots are sized in compute-type values: a 16-byte slot of f32 or
 * f64 widens to 16 bytes, one of f16 or bf16 to eight floats, 32 bytes. So
 * the 16-bit types take half the register slots of f32 below, and every type
 * keeps the same register bytes a thread (64 bytes a lane of values in the
 * warp groups, the block and the online batch; 128 in the widest warp group). */
template <typename T> constexpr int widening = (int)(sizeof(kcs_compute<T>) / sizeof(T)); /* 1, or 2 */

constexpr int sm_registers = 65536; /* an SM's register file, sm_70 to sm_90 */
/* Blocks of the warp-group kernels, by GROUP lanes a row and REG register slots a lane. Rows of 2 KB or more
 * (32 lanes of 4 or 8 slots: 1024 f16 or bf16 columns, 512 to 1024 f32, 256 to 512 f64) take blocks of one warp,
 * as Triton's softmax for 1024 columns runs: 0.8 to 1.8% faster than 128 threads on an H200 at 32768 x 1024 in
 * bf16, f16 and f32, 65536 x 512 f32 and 32768 x 512 f64, in two alternating rounds each (docs/softmax.md,
 * "Blocks of one warp for rows of 2 KB"). Shorter rows take 128
 * threads: blocks of 32 hold too few rows of 128 columns (at 10^6 x 128 they ran 2.4 times slower), and 128 ran
 * 0.3 to 0.5% faster than 256 at 32768 x 1024 f32 on an H100 and within 0.2% at 10^6 x 128, 65536 x 1024,
 * 131072 x 512 and in bf16 (a block leaves sooner, so the grid's last blocks end closer together). */
template <int GROUP, int REG> constexpr int warp_block_threads = GROUP == 32 && REG >= 4 ? 32 : 128;
/* register slots of the block kernel */
template <typename T> constexpr int block_register_slots = 4 / widening<T>;
/* The most register slots a lane of the warp groups holds (32 lanes, the longest rows): 128 bytes of values a
 * lane, 8 float4 or double2, 4 uint4 of 16-bit (32 floats). Shorter rows take one slot a lane (plan_for). */
template <typename T> constexpr int wide_group_registers = 8 / widening<T>;
/* The longest rows auto gives the warp groups: 2 KB, 64 bytes a lane (1024 f16 or bf16, 512 f32 columns as
 * 16-byte slots; every row of element slots), and every f64 row they hold (4 KB, 512 columns). Longer rows take
 * the block kernel: at 32768 x 1024 in f32 on an H200 it ran 0.923 of copy where 32 lanes of 8 float4 ran 0.874,
 * while in bf16 and f16 at 1024 columns (4 uint4 a lane) the warp groups stay ahead, 0.854 against 0.776
 * (docs/softmax.md, "Rows of 1024 f32 columns: the block kernel"), and in f64 at 32768 x 512 the warp groups ran
 * 0.071 ms against the block kernel's 0.087 (docs/softmax.md, "Blocks of one warp for rows of 2 KB"). */
template <typename T> constexpr size_t auto_group_row_bytes = sizeof(T) == 8 ? 4096 : 2048;
/* The online kernel's threads: f64's exp needs more registers than 64. */
template <typename T>
constexpr int online_threads =
    sizeof(kcs_compute<T>) == 4 ? KCS_SOFTMAX_ONLINE_THREADS : KCS_SOFTMAX_ONLINE_THREADS / 2;
/* slots a thread of the online kernel loads before using them */
template <typename T> constexpr int online_batch = 4 / widening<T>;
/* Registers a thread of the warp kernels may take, 64 for a 4-byte compute type, 128 for f64, whose exp needs
 * more; each instance is capped by __launch_bounds__ at the blocks an SM this leaves. f32's widest group (32
 * values a lane) once spilled within 64 and had a cap of 80; ptxas takes 61 for it now, without spills (ptxas -v,
 * sm_90, 2026-11-27). */
template <typename T> constexpr int warp_registers = sizeof(kcs_compute<T>) == 4 ? 64 : 128;
/* Blocks of THREADS an SM at warp_registers<T> a thread, at most 32 (sm_90's limit of resident blocks). */
template <typename T, int THREADS>
constexpr int warp_min_blocks = sm_registers / (warp_registers<T> * THREADS) < 32
                                    ? sm_registers / (warp_registers<T> * THREADS)
                                    : 32;
/* The block kernel's sizes, a power of two each: plan_for picks one per row length. The largest sets the
 * longest row the family holds (its stash is the smallest a thread). */
constexpr int block_thread_choices[] = {128, 256, 512};
constexpr int largest_block_threads = 512;
/* Registers a thread of the block kernel may take: 64. No instance spills within it (ptxas -v, sm_90, 2026-11-27:
 * 32 to 64 used; f64's double2 slots spill within 56), and a cap of 48, which let 10 blocks of 128 threads onto
 * an SM instead of 8, measured up to 2.5% slower (bf16 at 4096 x 32768 and 32768 x 4096 on an H100). Each
 * instance is capped by __launch_bounds__ at the blocks of its size that this leaves an SM of 65536 registers
 * (block_min_blocks), which is also what plan_for counts on. */
constexpr int block_registers = 64;
template <int THREADS> constexpr int block_min_blocks = sm_registers / (block_registers * THREADS);

/* The cluster kernel (rows split over a cluster of blocks): threads a block, and the most blocks a cluster (16
 * needs cudaFuncAttributeNonPortableClusterSizeAllowed; 8 is the portable limit). */
constexpr int cluster_block_threads = 256;
constexpr int cluster_most_blocks = 16;
constexpr int cluster_portable_blocks = 8;
/* The blocks of the cluster kernel that share an SM, which its __launch_bounds__ ask ptxas to leave room for (a cap
 * of 65536 / (256 x blocks) registers a thread): four in f32 and f64, whose 52-KB slices leave shared memory for
 * four (64 registers a thread); seven in f16 and bf16, whose 28-KB slices leave it for seven (36; registers are
 * allotted in eights, so ptxas keeps within 32). ptxas -v, sm_90: f32 48, f64 64, f16 and bf16 31, no spills. */
template <typename T> constexpr int cluster_min_blocks = widening<T> == 1 ? 4 : 7;
/* Register slots a thread of the cluster kernel holds before its shared-memory part of the slice (the first of its
 * slots), so that more blocks share an SM's 228 KB of shared memory (1 KB reserved each):
 * - f32 and f64: three, 48 bytes a thread, 12 KB of a 64-KB slice: four blocks of 52 KB in place of three of 64.
 *   Measured on an H200 against the slice all in shared memory, in the same call: 512 x 262144 0.870 -> 0.904 of
 *   copy in f32, 2048 x 131072 0.918 -> 0.936, f64 512 x 131072 0.654 -> 0.670 (docs/softmax.md, "Slots in
 *   registers").
 * - f16 and bf16: one, 4 KB of a 32-KB slice: seven blocks of 28 KB in place of six of 32. Its four registers fit
 *   the 32 that seven blocks allow (31 used) only since the slots are widened in pairs and the slice's loop counts
 *   in 32 bits: before, the kernel took 32 without a register slot and 38 with one. Measured on an H200
 *   (docs/softmax.md, "Sixteen-bit slices: one slot in registers"): bf16 512 x 262144 0.853 -> 0.873 of copy,
 *   2048 x 131072 0.884 -> 0.913; two slots and eight blocks (the SM's 2048 threads) ran level at 512 x 262144
 *   and 0.3% slower at 2048 x 131072. */
template <typename T> constexpr int cluster_register_slots = widening<T> == 1 ? 3 : 1;
/* Slots of its shared-memory part a thread of the cluster kernel takes an iteration of each pass: two in f16 and
 * bf16, whose slots carry twice the elements of f32's and whose loop overhead is the larger share of the work, one
 * in f32 and f64 (two take f64 past its 64 registers, ptxas -v: 20 bytes spilled). */
template <typename T> constexpr int cluster_slots_an_iteration = widening<T> == 2 ? 2 : 1;
/* The slice a block of the cluster kernel aims at: plan_for takes the fewest blocks a row (2, 4, 8, 16) whose slices
 * are at most cluster_slice_limit<T>: at most cluster_slice_bytes, so that several blocks (rows of different clusters:
 * four in f32 and f64 and seven in f16 and bf16, with cluster_register_slots) share an SM, and at most
 * cluster_slice_elements, 64 a thread, so that 16-bit slices are 32 KB. A block's work once its slice has arrived (two
 * exps an element, in f32) grows with its elements, not its bytes: on an H200, bf16 rows ran 3% faster in 32-KB slices
 * than in 64-KB ones (512 x 262144: 16 blocks a row in place of 8; 2048 x 131072: 8 in place of 4), f32 rows 5% slower
 * (2048 x 131072: 16 blocks of 32 KB in place of 8 of 64 KB): docs/softmax.md, "Long rows on the H200". */
#ifndef KCS_SOFTMAX_CLUSTER_SLICE_BYTES
#define KCS_SOFTMAX_CLUSTER_SLICE_BYTES 65536
#endif
#ifndef KCS_SOFTMAX_CLUSTER_SLICE_ELEMENTS
#define KCS_SOFTMAX_CLUSTER_SLICE_ELEMENTS 16384
#endif
constexpr size_t cluster_slice_bytes = KCS_SOFTMAX_CLUSTER_SLICE_BYTES;
constexpr size_t cluster_slice_elements = KCS_SOFTMAX_CLUSTER_SLICE_ELEMENTS;
template <typename T>
constexpr size_t cluster_slice_limit =
    cluster_slice_elements * sizeof(T) < cluster_slice_bytes ? cluster_slice_elements * sizeof(T) : cluster_slice_bytes;

static_assert(KCS_SOFTMAX_ONLINE_THREADS % 64 == 0 && KCS_SOFTMAX_ONLINE_THREADS <= 1024,
              "KCS_SOFTMAX_ONLINE_THREADS must be a multiple of 64, at most 1024");

/* A slot (a vector V or one element T) in storage: its element count, and
 * its elements widened to the compute type C (exactly) or rounded from it
 * (once, to nearest even: kcs_narrow). For f32 and f64 both are copies. */
template <typename T, typename V> constexpr int slot_width = (int)(sizeof(V) / sizeof(T));

template <typename T, typename V, typename C = kcs_compute<T>>
__device__ __forceinline__ void widen_slot(const V &stored, C (&values)[slot_width<T, V>])
{
    constexpr int width = slot_width<T, V>;
    if constexpr (sizeof(T) == 2 && width % 2 == 0) { /* f16, bf16 in pairs: the slot read whole, as pairs */
        unsigned int pairs[width / 2];
        memcpy(pairs, &stored, sizeof stored);
#pragma unroll
        for (int e = 0; e < width / 2; e++)
            kcs_widen_pair<T>(pairs[e], values[2 * e], values[2 * e + 1]);
    } else {
        T elements[width];
        memcpy(elements, &stored, sizeof stored);
#pragma unroll
        for (int e = 0; e < width; e++)
            values[e] = kcs_widen(elements[e]);
    }
}

template <typename T, typename V, typename C = kcs_compute<T>>
__device__ __forceinline__ V narrow_slot(const C (&values)[slot_width<T, V>])
{
    constexpr int width = slot_width<T, V>;
    V stored;
    if constexpr (sizeof(T) == 2 && width % 2 == 0) { /* f16, bf16 in pairs: one conversion for two */
        unsigned int pairs[width / 2];
#pragma unroll
        for (int e = 0; e < width / 2; e++)
            pairs[e] = kcs_narrow_pair<T>(values[2 * e], values[2 * e + 1]);
        memcpy(&stored, pairs, sizeof stored);
    } else {
        T elements[width];
#pragma unroll
        for (int e = 0; e < width; e++)
            elements[e] = kcs_narrow<T>(values[e]);
        memcpy(&stored, elements, sizeof stored);
    }
    return stored;
}

/* exp(difference) for the 4-byte compute type, in the exp2 form the bound budgets (docs/softmax.md, "The
 * argument"): the difference (x - M, rounded once by the caller) times fl(log2 e), rounded once, then 2^p by the
 * SFU's ex2.approx.ftz.f32: the instruction CUDA's exp2f compiles to (ex2.approx.f32, nvcc 13.0; the Programming
 * Guide documents exp2f at 2 ulp), within the bound's 3, without exp2f's fix-up for subnormal results (.ftz).
 * Every softmax case passes with it on an H200. Results below f32's smallest normal are flushed to 0, which the
 * bound's absolute term allows (lambda); f16's subnormal outputs come from terms far above it (a term is at least
 * its output, the row sum being at least 1), so they stay correctly rounded. Special values are kept: 2^-inf = 0
 * (a masked entry), 2^NaN = NaN. Two instructions where expf, which computes the same 2^p with a compensated
 * argument, takes nine; f16 and bf16 rows move half the bytes of f32 ones per element, and on an H200 the
 * arithmetic, not the memory, had become their limit (docs/softmax.md, "The exp2 form on the GPU"). The host's
 * exp2f stands in under emulation (tests/cuda_kernels_emulation.sh), which checks indexing and semantics, not the
 * GPU's exp.
 */
__device__ __forceinline__ float exp_of(float difference)
{
    const float power = difference * 1.44269504088896341f; /* fl(log2 e) = 0x1.715476p0 */
#ifdef __CUDA_ARCH__
    float result;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(power));
    return result;
#else
    return exp2f(power);
#endif
}

__device__ __forceinline__ double exp_of(double value)
{
    return exp(value); /* 1 ulp */
}

/* The larger of a and b, ignoring a NaN (fmax): NaN reaches the row another way. */
__device__ __forceinline__ float max_of(float a, float b)
{
    return fmaxf(a, b);
}

__device__ __forceinline__ double max_of(double a, double b)
{
    return fmax(a, b);
}

template <typename T> __device__ __forceinline__ T minus_infinity()
{
    return -cuda::std::numeric_limits<T>::infinity();
}

template <typename T> __device__ __forceinline__ T not_a_number()
{
    return cuda::std::numeric_limits<T>::quiet_NaN();
}

/* The cluster kernel's two meetings, from cuda/async_copy.cuh's PTX. cooperative_groups' barrier_arrive is
 * barrier.cluster.arrive with release semantics, which ptxas makes a MEMBAR.ALL.GPU: Nsight Compute on an H200
 * found `bf16` 512 x 262144's warps stalled there 12% of their time (docs/softmax.md, "The cluster's meetings
 * without a GPU-wide fence"). Neither meeting needs that fence:
 *   - every block has started (so that distributed shared memory may be used): a relaxed arrive as a thread
 *     starts, when it has touched no memory to release, and a wait before its block's first store into another
 *     block. The one thread that initialises the block's pairs barrier (below) first makes that initialisation
 *     visible to the cluster with fence.mbarrier_init, which is what it is for;
 *   - every block's pair has arrived: each pair goes into every block's arrays by st.async, whose bytes complete
 *     on the receiving block's mbarrier (`pairs_arrived`), expecting 2 * sizeof(C) bytes from each block; a block
 *     reads its arrays once its own barrier has seen all of them. No block stores into another after that, and a
 *     block exits only after its own pairs have all arrived, so no store reaches an exited block.
 * The host emulation runs the kernel's meetings as they are, on tests/cuda_kernels_emulation.h's versions of
 * cuda/async_copy.cuh's functions. */

/* One thread of the block: the pairs barrier, one arrival (its own, now) and bytes to come. */
__device__ __forceinline__ void pairs_expect(uint64_t *arrived, unsigned int bytes)
{
    barrier_init(arrived, 1);
    barrier_expect_bytes(arrived, (int)bytes);
    barrier_init_fence();
}

struct maximum {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return max_of(a, b); }
};

struct plus {
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};

/* Reduces value over the GROUP lanes of a group (GROUP <= 32, a power of
 * two, groups aligned in the warp) by a butterfly: every lane gets the same
 * bits (the operations are commutative). All 32 lanes must call it. */
template <int GROUP, typename T, typename Op> __device__ __forceinline__ T group_reduce(T value, Op op)
{
#pragma unroll
    for (int offset = GROUP / 2; offset > 0; offset /= 2)
        value = op(value, __shfl_xor_sync(0xffffffffu, value, offset, GROUP));
    return value;
}

/* Reduces value over a block of THREADS threads; every thread gets the same
 * bits. partial has a slot per warp; the caller keeps separate arrays for
 * successive reductions that are not separated by another barrier. */
template <int THREADS, typename T, typename Op>
__device__ __forceinline__ T block_reduce(T value, Op op, T *partial)
{
    constexpr int warps = THREADS / 32;
    value = group_reduce<32>(value, op);
    if (threadIdx.x % 32 == 0)
        partial[threadIdx.x / 32] = value;
    __syncthreads();
    value = partial[0];
#pragma unroll
    for (int w = 1; w < warps; w++)
        value = op(value, partial[w]);
    return value;
}

/* Calls visit(at, q) for each of this thread's stash slots that the row has: at, the slot in stash
 * ([shared_slots][THREADS]); q, its index among the row's slots (its k * THREADS + thread, k counted
 * after the REG register slots). The one home of the stash's loop, for every pass over it. */
template <int THREADS, int REG, typename V, typename Visit>
__device__ __forceinline__ void for_stash_slots(V *stash, int shared_slots, size_t row_slots, Visit visit)
{
    for (int k = REG; k < REG + shared_slots; k++) {
        const size_t q = (size_t)k * THREADS + threadIdx.x;
        if (q < row_slots)
            visit(stash + (size_t)(k - REG) * THREADS + threadIdx.x, q);
    }
}

/* The running max (max_of: NaN ignored) of the elements of the slots added to it; -inf for none. Slots of 16-bit
 * pairs are compared a pair at a time, widened once at the end (kcs_max_pair: the same bits as element by element,
 * in a quarter of the instructions). Every family takes its max with it, of the slots as loaded, and widens a slot
 * once, for its exp (docs/softmax.md, "The max of the stored slots, in every family"). */
template <typename T, typename V, typename C = kcs_compute<T>> struct running_max {
    static constexpr bool pairs = sizeof(T) == 2 && sizeof(V) == 16;
    static constexpr int width = slot_width<T, V>;
    std::conditional_t<pairs, unsigned int, C> larger;

    __device__ __forceinline__ running_max()
    {
        if constexpr (pairs)
            larger = kcs_narrow_pair<T>(minus_infinity<C>(), minus_infinity<C>());
        else
            larger = minus_infinity<C>();
    }

    __device__ __forceinline__ void add(const V &slot)
    {
        if constexpr (pairs) {
            const uint4 held = reinterpret_cast<const uint4 &>(slot);
            larger = kcs_max_pair<T>(larger, kcs_max_pair<T>(kcs_max_pair<T>(held.x, held.y),
                                                             kcs_max_pair<T>(held.z, held.w)));
        } else {
            C s[width];
            widen_slot<T, V>(slot, s);
#pragma unroll
            for (int e = 0; e < width; e++)
                larger = max_of(larger, s[e]);
        }
    }

    __device__ __forceinline__ C value() const
    {
        if constexpr (pairs) {
            const V widened = {larger, 0u, 0u, 0u};
            C s[width];
            widen_slot<T, V>(widened, s);
            return max_of(s[0], s[1]);
        } else {
            return larger;
        }
    }
};

/* The block-resident kernel: see the header comment. T the storage type, V
 * a slot of it; a block of THREADS threads a row (block blockIdx.x takes row
 * blockIdx.x; the grid covers every row), REG register slots a thread and
 * shared_slots shared-memory slots a thread in the stash. row_slots: slots in
 * a row (cols / width). MIN_BLOCKS: block_min_blocks, the register cap. */
template <typename T, typename V, int THREADS, int REG, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
kcs_softmax_resident(const T *__restrict__ x, T *__restrict__ y, size_t rows, size_t cols, int shared_slots)
{
    using C = kcs_compute<T>;
    constexpr int width = slot_width<T, V>;
    /* f32, f64: the stash holds e = exp(x - M) in place; f16, bf16: it keeps x, and e is computed again */
    constexpr bool stash_terms = std::is_same_v<T, C>;

    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    V *const stash = reinterpret_cast<V *>(dynamic_shared); /* [shared_slots][THREADS] */
    __shared__ C partial_max[THREADS / 32];
    __shared__ C partial_sum[THREADS / 32];

    const int lane = threadIdx.x;
    const size_t row_slots = cols / width;
    const size_t row = blockIdx.x;
    if (row >= rows)
        return;
    const V *in = reinterpret_cast<const V *>(x + row * cols);

    /* Every load of the row goes out before any is used: register slots, then the stash by cp.async. */
    V stored[REG];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * THREADS + lane;
        if (q < row_slots)
            stored[k] = __ldg(in + q);
    }
    for_stash_slots<THREADS, REG>(stash, shared_slots, row_slots,
                                  [&](V *at, size_t q) { copy_async<sizeof(V)>(at, in + q); });
    copy_async_commit();

    /* The max, of the slots as stored (running_max: 16-bit pairs compared without widening). */
    running_max<T, V> local;
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * THREADS + lane;
        if (q < row_slots)
            local.add(stored[k]);
    }
    copy_async_wait_all(); /* only this thread reads its own stash slots */
    for_stash_slots<THREADS, REG>(stash, shared_slots, row_slots, [&](V *at, size_t) { local.add(*at); });
    const C row_max = block_reduce<THREADS>(local.value(), maximum(), partial_max);

    /* e = exp(x - M), kept in registers (and, for f32 and f64, in place in the stash), and the sum. */
    C value[REG][width];
    C sum = C(0);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * THREADS + lane;
        if (q < row_slots) {
            widen_slot<T, V>(stored[k], value[k]);
#pragma unroll
            for (int e = 0; e < width; e++) {
                const C term = exp_of(value[k][e] - row_max);
                value[k][e] = term;
                sum += term;
            }
        }
    }
    for_stash_slots<THREADS, REG>(stash, shared_slots, row_slots, [&](V *at, size_t) {
        C s[width];
        widen_slot<T, V>(*at, s);
#pragma unroll
        for (int e = 0; e < width; e++) {
            const C term = exp_of(s[e] - row_max);
            s[e] = term;
            sum += term;
        }
        if constexpr (stash_terms)
            *at = narrow_slot<T, V>(s); /* T is C: a copy */
    });
    sum = block_reduce<THREADS>(sum, plus(), partial_sum);
    const C inverse = C(1) / sum;

    /* y = e / sum, rounded once to T. */
    V *out = reinterpret_cast<V *>(y + row * cols);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * THREADS + lane;
        if (q < row_slots) {
            C s[width];
#pragma unroll
            for (int e = 0; e < width; e++)
                s[e] = value[k][e] * inverse;
            __stcs(out + q, narrow_slot<T, V>(s));
        }
    }
    for_stash_slots<THREADS, REG>(stash, shared_slots, row_slots, [&](V *at, size_t q) {
        C s[width];
        widen_slot<T, V>(*at, s);
#pragma unroll
        for (int e = 0; e < width; e++)
            s[e] = (stash_terms ? s[e] : exp_of(s[e] - row_max)) * inverse;
        __stcs(out + q, narrow_slot<T, V>(s));
    });
}

/* The register kernel of the warp groups: GROUP lanes of a warp a row (a
 * power of two up to 32), REG register slots a lane, a row a group, the
 * grid covering every row (the launcher refuses more rows than a grid
 * holds). A group loads all its row's slots (streaming: the input is read
 * once) before it uses any, so REG 16-byte loads a lane are in flight
 * together; then the max, the terms, the sum and the outputs (streaming
 * stores) from registers alone. No loop and no prefetch: the blocks are
 * small and short-lived, and the scheduler overlaps one block's arithmetic
 * with the loads of the blocks beside it (measured faster than a
 * persistent grid that prefetches: docs/softmax.md). */
template <typename T, typename V, int GROUP, int REG, int THREADS, int MIN_BLOCKS>
__global__ void __launch_bounds__(THREADS, MIN_BLOCKS)
kcs_softmax_registers(const T *__restrict__ x, T *__restrict__ y, size_t rows, size_t cols)
{
    using C = kcs_compute<T>;
    constexpr int width = slot_width<T, V>;
    constexpr int groups = THREADS / GROUP;
    static_assert(GROUP <= 32 && 32 % GROUP == 0, "GROUP: a power of two up to 32");

    const int lane = threadIdx.x % GROUP;
    const size_t row = (size_t)blockIdx.x * groups + threadIdx.x / GROUP;
    /* The warp's first row: a warp whose rows all lie beyond the last returns as a whole; otherwise every lane
     * stays, so that whole warps take part in every shuffle, and a group past the last row holds -inf and stores
     * nothing. */
    if ((size_t)blockIdx.x * groups + (threadIdx.x / 32) * (32 / GROUP) >= rows)
        return;
    const bool active = row < rows;
    const size_t row_slots = cols / width;
    const V *in = reinterpret_cast<const V *>(x + (active ? row : 0) * cols);

    V stored[REG];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * GROUP + lane;
        if (active && q < row_slots)
            stored[k] = load_streaming(in + q);
    }
    /* The max, of the slots as stored (running_max: 16-bit pairs compared without widening; -inf for none). */
    running_max<T, V> local;
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * GROUP + lane;
        if (active && q < row_slots)
            local.add(stored[k]);
    }
    const C row_max = group_reduce<GROUP>(local.value(), maximum());

    /* e = exp(x - M), kept in registers, and the sum. */
    C value[REG][width];
    C sum = C(0);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * GROUP + lane;
        if (active && q < row_slots) {
            widen_slot<T, V>(stored[k], value[k]);
#pragma unroll
            for (int e = 0; e < width; e++) {
                const C term = exp_of(value[k][e] - row_max);
                value[k][e] = term;
                sum += term;
            }
        }
    }
    sum = group_reduce<GROUP>(sum, plus());
    const C inverse = C(1) / sum;

    /* y = e / sum, rounded once to T. */
    V *out = reinterpret_cast<V *>(y + (active ? row : 0) * cols);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * GROUP + lane;
        if (active && q < row_slots) {
            C s[width];
#pragma unroll
            for (int e = 0; e < width; e++)
                s[e] = value[k][e] * inverse;
            __stcs(out + q, narrow_slot<T, V>(s));
        }
    }
}

/* Running (max, sum of exp(x - max)) of the online kernel, in the compute type. */
template <typename C> struct running {
    C max; /* -inf while nothing finite has been seen */
    C sum;
};

/* The merge of two running states: the smaller max's sum rescaled. */
template <typename C> __device__ __forceinline__ running<C> merge(running<C> a, running<C> b)
{
    const C max = max_of(a.max, b.max);
    if (max == minus_infinity<C>())
        return running<C>{max, C(0)};
    /* exp(-inf - finite) = 0 leaves an empty side out */
    return running<C>{max, a.sum * exp_of(a.max - max) + b.sum * exp_of(b.max - max)};
}

/* A butterfly over the warp: every lane ends with the same state. */
template <typename C> __device__ __forceinline__ running<C> warp_merge(running<C> r)
{
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
        running<C> other;
        other.max = __shfl_xor_sync(0xffffffffu, r.max, offset);
        other.sum = __shfl_xor_sync(0xffffffffu, r.sum, offset);
        r = merge(r, other);
    }
    return r;
}

/* The online kernel: a block per row (grid-strided), two reads of the row. */
template <typename T, typename V>
__global__ void __launch_bounds__(online_threads<T>, 1)
kcs_softmax_online(const T *__restrict__ x, T *__restrict__ y, size_t rows, size_t cols)
{
    using C = kcs_compute<T>;
    constexpr int width = slot_width<T, V>;
    constexpr int threads = online_threads<T>;
    constexpr int warps = threads / 32;
    constexpr int batch_slots = online_batch<T>;
    __shared__ C warp_max[32], warp_sum[32];
    __shared__ C row_max_shared, row_sum_shared;

    const size_t row_slots = cols / width;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const V *in = reinterpret_cast<const V *>(x + row * cols);
        V *out = reinterpret_cast<V *>(y + row * cols);

        /* Pass 1: running max and rescaled sum, a batch of slots at a time. */
        running<C> state{minus_infinity<C>(), C(0)};
        int special = 0; /* NaN or +inf seen */
        for (size_t first = threadIdx.x; first < row_slots; first += (size_t)batch_slots * threads) {
            V stored[batch_slots];
#pragma unroll
            for (int b = 0; b < batch_slots; b++) {
                const size_t q = first + (size_t)b * threads;
                if (q < row_slots)
                    stored[b] = __ldg(in + q);
            }
            C batch[batch_slots][width];
#pragma unroll
            for (int b = 0; b < batch_slots; b++) {
                const size_t q = first + (size_t)b * threads;
                if (q < row_slots) {
                    widen_slot<T, V>(stored[b], batch[b]);
                } else {
#pragma unroll
                    for (int e = 0; e < width; e++)
                        batch[b][e] = minus_infinity<C>();
                }
            }
            C batch_max = minus_infinity<C>();
#pragma unroll
            for (int b = 0; b < batch_slots; b++)
#pragma unroll
                for (int e = 0; e < width; e++) {
                    const C value = batch[b][e];
                    if (!(value < cuda::std::numeric_limits<C>::infinity())) {
                        special = 1; /* NaN or +inf: the row is NaN; keep it out of the sums */
                        batch[b][e] = minus_infinity<C>();
                    } else {
                        batch_max = max_of(batch_max, value);
                    }
                }
            if (batch_max > state.max) {
                state.sum *= exp_of(state.max - batch_max); /* 0 * 0 while empty */
                state.max = batch_max;
            }
            if (state.max != minus_infinity<C>()) {
                C batch_sum = C(0);
#pragma unroll
                for (int b = 0; b < batch_slots; b++) {
                    C slot_sum = C(0);
#pragma unroll
                    for (int e = 0; e < width; e++)
                        slot_sum += exp_of(batch[b][e] - state.max);
                    batch_sum += slot_sum;
                }
                state.sum += batch_sum;
            }
        }
        special = __syncthreads_or(special);

        /* Merge: a butterfly in each warp, then one over the warps' states. */
        state = warp_merge(state);
        if (threadIdx.x % 32 == 0) {
            warp_max[threadIdx.x / 32] = state.max;
            warp_sum[threadIdx.x / 32] = state.sum;
        }
        __syncthreads();
        if (threadIdx.x < 32) {
            const int lane = threadIdx.x;
            running<C> r{minus_infinity<C>(), C(0)};
            if (lane < warps) {
                r.max = warp_max[lane];
                r.sum = warp_sum[lane];
            }
            r = warp_merge(r);
            if (lane == 0) {
                row_max_shared = r.max;
                row_sum_shared = r.sum;
            }
        }
        __syncthreads();
        const C row_max = row_max_shared;
        const bool nan_row = special || row_max == minus_infinity<C>();
        const C inverse = C(1) / row_sum_shared;

        /* Pass 2: the outputs, exp(x - M) computed again and rounded once to T. */
        for (size_t first = threadIdx.x; first < row_slots; first += (size_t)batch_slots * threads) {
            V stored[batch_slots];
#pragma unroll
            for (int b = 0; b < batch_slots; b++) {
                const size_t q = first + (size_t)b * threads;
                if (q < row_slots)
                    stored[b] = __ldg(in + q);
            }
#pragma unroll
            for (int b = 0; b < batch_slots; b++) {
                const size_t q = first + (size_t)b * threads;
                if (q < row_slots) {
                    C s[width];
                    widen_slot<T, V>(stored[b], s);
#pragma unroll
                    for (int e = 0; e < width; e++)
                        s[e] = nan_row ? not_a_number<C>() : exp_of(s[e] - row_max) * inverse;
                    out[q] = narrow_slot<T, V>(s);
                }
            }
        }
        __syncthreads(); /* the shared row values are read before the next row writes them */
    }
}

/* The cluster kernel's dynamic shared memory: its slice of the row (slice_bytes, rounded up to 16 bytes), then
 * the per-warp partials of its two block reductions and the (max, sum) pair of each block of its cluster, which
 * the blocks store into each other's copy, then the mbarrier those stores complete on (8-byte aligned: the C
 * arrays before it are 48 elements of 4 or 8 bytes). All of it is dynamic: no __shared__ variable, so that the host
 * emulation, which keeps one copy of each static one, can run a cluster's blocks side by side. */
__host__ __device__ constexpr size_t cluster_arrays_at(size_t slice_bytes)
{
    return (slice_bytes + 15) / 16 * 16;
}

template <typename C> __host__ __device__ constexpr size_t cluster_pairs_arrived_at(size_t slice_bytes)
{
    return cluster_arrays_at(slice_bytes) +
           (size_t)(2 * (cluster_block_threads / 32) + 2 * cluster_most_blocks) * sizeof(C);
}

template <typename C> __host__ __device__ constexpr size_t cluster_shared_bytes(size_t slice_bytes)
{
    return cluster_pairs_arrived_at<C>(slice_bytes) + sizeof(uint64_t);
}
static_assert(cluster_pairs_arrived_at<float>(0) % 8 == 0 && cluster_pairs_arrived_at<double>(0) % 8 == 0,
              "the mbarrier is 8-byte aligned");

/* The slots of a slice of slice_slots that a block keeps in shared memory: those beyond its threads' REG register
 * slots each. */
template <int REG> __host__ __device__ constexpr size_t cluster_shared_slots(size_t slice_slots)
{
    return slice_slots > (size_t)REG * cluster_block_threads ? slice_slots - (size_t)REG * cluster_block_threads : 0;
}

/* Calls visit(slot, q) for each of this thread's slots of a cluster slice (q = threadIdx.x, + threads, ... below held),
 * in that order: the first REG from registers (stored), the rest from shared memory (shared, which begins at the
 * slice's slot REG threads), UNROLL of those an iteration. The one home of the slice's loop for the three passes over
 * it; the load before them, which fills stored, walks the same slots in the same order in the kernel itself (it writes
 * what this only reads). (The shared part is laid out as the block kernel's stash, for_stash_slots, but walked by a
 * loop of its own, counted in 32 bits and unrolled: the form timed for this kernel on an H200, docs/softmax.md.) */
template <int REG, int UNROLL, typename V, int N, typename Visit>
__device__ __forceinline__ void for_slice_slots(const V (&stored)[N], const V *shared, size_t held, Visit visit)
{
    constexpr size_t threads = cluster_block_threads;
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * threads + threadIdx.x;
        if (q < held)
            visit(stored[k], q);
    }
    /* Counted in 32 bits (a slice lies in one block's shared memory and registers: far fewer than 2^31 slots),
     * UNROLL slots an iteration (cluster_slots_an_iteration). */
    const int end = (int)held;
    const V *at = shared + threadIdx.x;
#pragma unroll UNROLL
    for (int q = REG * threads + (int)threadIdx.x; q < end; q += threads, at += threads)
        visit(*at, q);
}

/* The cluster kernel: a row split over the blocks of a cluster (cluster.num_blocks(), 2 to 16; the grid has
 * rows times that many blocks, cluster c taking row c), each block holding slice_slots consecutive slots of it
 * (the last block fewer, or none) in shared memory, read once from global memory by cp.async. Per block: the
 * slice's max m_b and sum s_b of exp(x - m_b) (a thread's slots in one chain, a butterfly, then the warps in
 * order), stored into every block's pair array through distributed shared memory; a wait for every pair; then in
 * every warp of every block the same combine of the pairs in the same order, M = max_b m_b and S = sum_b s_b
 * exp(m_b - M) (butterflies over the lanes, one lane a block), so that every block has the same bits of M and S;
 * then y = exp(x - M) * (1 / S) from the slice, streaming stores. Each term is rescaled once (the sum's
 * exp(m_b - M)), as in an online softmax: supports() counts it as eight additions (docs/softmax.md,
 * "Algorithm"). Special values: a slice with no finite max (nothing but -inf, no slots, or -inf and NaN) sums
 * exp(x - 0) instead, which is 0 for -inf and NaN for NaN, and its rescaling exp(-inf - M) = 0 keeps an empty
 * slice out of a row with a finite max; a NaN or +inf makes its slice's sum NaN (exp(+inf - +inf) for +inf), and
 * so S and every output of the row; a row of nothing but -inf has M = -inf and S = NaN (exp(-inf - (-inf))):
 * NaN throughout, as docs/softmax.md asks. The blocks meet twice (cluster_arrive_relaxed and its neighbours, above):
 * every thread arrives at the cluster barrier as it starts and waits before its block's first store into another
 * block's shared memory (so that every block of the cluster is running: distributed shared memory may be used only
 * then); the pairs go out by st.async and each block waits on its own mbarrier until all of them have arrived
 * before reading its pair arrays, so that no block stores into another after that one has read or exited. */
template <typename T, typename V, int MIN_BLOCKS, int REG>
__global__ void __launch_bounds__(cluster_block_threads, MIN_BLOCKS)
kcs_softmax_cluster(const T *__restrict__ x, T *__restrict__ y, size_t cols, size_t slice_slots)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    __trap(); /* clusters need sm_90: limits_of finds this stub (its ptxVersion) and no family launches it */
#else
    using C = kcs_compute<T>;
    constexpr int width = slot_width<T, V>;
    constexpr int threads = cluster_block_threads;
    constexpr int warps = threads / 32;
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    const unsigned int blocks = cluster.num_blocks();
    const unsigned int rank = cluster.block_rank();

    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    const size_t slice_bytes = cluster_shared_slots<REG>(slice_slots) * sizeof(V);
    V *const shared = reinterpret_cast<V *>(dynamic_shared); /* [cluster_shared_slots<REG>(slice_slots)] */
    C *const partial_max = reinterpret_cast<C *>(dynamic_shared + cluster_arrays_at(slice_bytes));
    C *const partial_sum = partial_max + warps;
    C *const block_max = partial_sum + warps;           /* [cluster_most_blocks]: m_b of block b */
    C *const block_sum = block_max + cluster_most_blocks; /* s_b */
    uint64_t *const pairs_arrived =
        reinterpret_cast<uint64_t *>(dynamic_shared + cluster_pairs_arrived_at<C>(slice_bytes));
    if (threadIdx.x == 0)
        pairs_expect(pairs_arrived, blocks * 2 * (unsigned int)sizeof(C));
    cluster_arrive_relaxed(); /* this block has started (and its pairs barrier is set) */
    const size_t row = blockIdx.x / blocks;
    const size_t row_slots = cols / width;
    const size_t first = (size_t)rank * slice_slots;
    const size_t held = first >= row_slots ? 0 : row_slots - first < slice_slots ? row_slots - first : slice_slots;
    const V *in = reinterpret_cast<const V *>(x + row * cols) + first;

    /* The slice, once: a thread loads, and later reads, slots threadIdx.x, + threads, ... only; its first REG into
     * registers, then the rest into shared memory by cp.async. */
    V stored[REG > 0 ? REG : 1];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const size_t q = (size_t)k * threads + threadIdx.x;
        if (q < held)
            stored[k] = __ldg(in + q);
    }
    for (size_t q = (size_t)REG * threads + threadIdx.x; q < held; q += threads)
        copy_async<sizeof(V)>(shared + (q - (size_t)REG * threads), in + q);
    copy_async_commit();
    copy_async_wait_all();

    running_max<T, V> larger;
    constexpr int UNROLL = cluster_slots_an_iteration<T>;
    for_slice_slots<REG, UNROLL>(stored, shared, held, [&](const V &slot, size_t) { larger.add(slot); });
    const C slice_max = block_reduce<threads>(larger.value(), maximum(), partial_max);
    const C shift = slice_max == minus_infinity<C>() ? C(0) : slice_max; /* see above: no finite max */
    C sum = C(0);
    for_slice_slots<REG, UNROLL>(stored, shared, held, [&](const V &slot, size_t) {
        C s[width];
        widen_slot<T, V>(slot, s);
#pragma unroll
        for (int e = 0; e < width; e++)
            sum += exp_of(s[e] - shift);
    });
    const C slice_sum = block_reduce<threads>(sum, plus(), partial_sum);

    /* Once every block has started: this block's pair into every block's arrays (its own included); then every
     * block's pair into this one's. */
    cluster_wait();
    if (threadIdx.x < blocks) {
        store_async_remote(block_max + rank, threadIdx.x, slice_max, pairs_arrived);
        store_async_remote(block_sum + rank, threadIdx.x, slice_sum, pairs_arrived);
    }
    barrier_wait_cluster(pairs_arrived, 0); /* its first phase: every block's pair has arrived, acquired */

    /* M and S, the same bits in every warp of every block: lane b holds block b's pair. */
    const int lane = threadIdx.x % 32;
    const C pair_max = lane < (int)blocks ? block_max[lane] : minus_infinity<C>();
    const C row_max = group_reduce<32>(pair_max, maximum());
    const C rescaled = lane < (int)blocks ? block_sum[lane] * exp_of(pair_max - row_max) : C(0);
    const C row_sum = group_reduce<32>(rescaled, plus());
    const C inverse = C(1) / row_sum;

    /* y = exp(x - M) / S, rounded once to T. */
    V *out = reinterpret_cast<V *>(y + row * cols) + first;
    for_slice_slots<REG, UNROLL>(stored, shared, held, [&](const V &slot, size_t q) {
        C s[width];
        widen_slot<T, V>(slot, s);
#pragma unroll
        for (int e = 0; e < width; e++)
            s[e] = exp_of(s[e] - row_max) * inverse;
        __stcs(out + q, narrow_slot<T, V>(s));
    });
#endif
}

/* The cluster kernel for storage type T in slots V. */
template <typename T, typename V>
constexpr auto cluster_kernel = kcs_softmax_cluster<T, V, cluster_min_blocks<T>, cluster_register_slots<T>>;

/* What the families' plans need to know of the device: the most shared memory one block may have (opt-in), and
 * whether it runs thread-block clusters: compute capability 9.0 or later, and the cluster kernel built for it
 * (a --cuda-arch below 90 builds it as a stub, which PTX compiled on the device keeps). */
struct device_limits {
    size_t shared_available;
    bool clusters;
};

kcs_status limits_of(kcs_device *device, device_limits *limits, kcs_error *err)
{
    int shared = 0;
    KCS_CUDA_CHECK(cudaDeviceGetAttribute(&shared, cudaDevAttrMaxSharedMemoryPerBlockOptin, device->ordinal));
    limits->shared_available = shared > 0 ? (size_t)shared : 0;
    limits->clusters = false;
    if (device->compute_capability >= 90) {
        cudaFuncAttributes attributes = {};
        KCS_CUDA_CHECK(cudaFuncGetAttributes(&attributes, cluster_kernel<float, float4>));
        limits->clusters = attributes.ptxVersion >= 90;
    }
    return KCS_OK;
}

/* Additions (the rescaling counted 8) a term passes through in the cluster kernel for slices of slice_slots
 * slots of width elements: its thread's chain, a butterfly of 5 levels and the chain over the warps, its slice
 * sum's rescaling, then a butterfly of 5 levels over the blocks' sums. */
inline size_t cluster_depth(size_t slice_slots, int width)
{
    const size_t per_thread = (slice_slots + cluster_block_threads - 1) / cluster_block_threads * (size_t)width;
    return per_thread + 5 + (cluster_block_threads / 32 - 1) + 8 + 5;
}

/* Additions (rescalings counted 8) a term passes through in the online
 * kernel for rows of row_slots slots of width elements: see the header. */
template <typename T> size_t online_depth(size_t row_slots, int width)
{
    const size_t per_batch = (size_t)online_batch<T> * online_threads<T>;
    const size_t batches = (row_slots + per_batch - 1) / per_batch;
    return (size_t)width + online_batch<T> + 9 * batches + 9 * 10;
}

size_t depth_limit(size_t cols)
{
    size_t log2_ceiling = 0;
    while (((size_t)1 << log2_ceiling) < cols)
        log2_ceiling++;
    const size_t limit = 2048 + log2_ceiling;
    return cols - 1 < limit ? cols - 1 : limit;
}

/* The blocks of a persistent grid for rows, rows_per_block at a time. */
kcs_status persistent_blocks(kcs_device *device, const void *kernel, int threads, size_t shared_bytes,
                             size_t rows, size_t rows_per_block, unsigned int *blocks, kcs_error *err)
{
    int per_sm = 0;
    KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared_bytes));
    if (per_sm < 1)
        return kcs_fail(err, KCS_ERROR,
                        "softmax: a block of %d threads and %zu bytes of shared memory does not fit an SM",
                        threads, shared_bytes);
    const size_t resident = (size_t)(device->sm_count > 0 ? device->sm_count : 1) * (size_t)per_sm;
    size_t needed = (rows + rows_per_block - 1) / rows_per_block;
    needed = needed < resident ? needed : resident;
    *blocks = (unsigned int)(needed > 0 ? needed : 1);
    return KCS_OK;
}

/* Each launcher below is called twice: with launch false before the timer
 * starts, to size the grid (and raise the shared-memory limit), which calls
 * the runtime on the host; then with launch true inside the timer, to launch. */

/* The register kernel with GROUP lanes a row and REG register slots a lane,
 * blocks of warp_block_threads, a grid that covers every row. */
template <typename T, typename V, int GROUP, int REG>
kcs_status launch_warp_groups(kcs_device *device, const T *x, T *y, size_t rows, size_t cols, bool launch,
                              unsigned int *blocks, kcs_error *err)
{
    constexpr int threads = warp_block_threads<GROUP, REG>;
    auto kernel = kcs_softmax_registers<T, V, GROUP, REG, threads, warp_min_blocks<T, threads>>;
    if (!launch) {
        const size_t rows_per_block = threads / GROUP;
        const size_t needed = (rows + rows_per_block - 1) / rows_per_block;
        if (needed > (size_t)INT_MAX)
            return kcs_fail(err, KCS_UNSUPPORTED,
                            "softmax: %zu rows of %zu columns take %zu blocks of %zu rows, more than a grid holds "
                            "(%d)",
                            rows, cols, needed, rows_per_block, INT_MAX);
        *blocks = (unsigned int)needed;
        return KCS_OK;
    }
    kernel<<<*blocks, threads, 0, device->stream>>>(x, y, rows, cols);
    KCS_CUDA_CHECK_LAUNCH("kcs_softmax_registers (warp groups)");
    return KCS_OK;
}

/* The block-resident kernel in blocks of THREADS (one of block_thread_choices): a block a row, the grid covering
 * every row (the launcher refuses more rows than a grid holds). */
template <typename T, typename V, int THREADS>
kcs_status launch_resident_blocks(kcs_device *device, int shared_slots, size_t shared_bytes, const T *x, T *y,
                                  size_t rows, size_t cols, bool launch, unsigned int *blocks, kcs_error *err)
{
    auto kernel = kcs_softmax_resident<T, V, THREADS, block_register_slots<T>, block_min_blocks<THREADS>>;
    if (!launch) {
        if (rows > (size_t)INT_MAX)
            return kcs_fail(err, KCS_UNSUPPORTED,
                            "softmax: %zu rows of %zu columns take a block each, more than a grid holds (%d)", rows,
                            cols, INT_MAX);
        KCS_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared_bytes));
        *blocks = (unsigned int)rows;
        return KCS_OK;
    }
    kernel<<<*blocks, THREADS, shared_bytes, device->stream>>>(x, y, rows, cols, shared_slots);
    KCS_CUDA_CHECK_LAUNCH("kcs_softmax_resident (block)");
    return KCS_OK;
}

/* The block-resident kernel in plan p's block size and stash. */
template <typename T, typename V, typename P>
kcs_status launch_block_resident(kcs_device *device, const P &p, const T *x, T *y, size_t rows, size_t cols,
                                 bool launch, unsigned int *blocks, kcs_error *err)
{
    static_assert(block_thread_choices[0] == 128 && block_thread_choices[1] == 256 &&
                      block_thread_choices[2] == largest_block_threads && largest_block_threads == 512,
                  "an instance for each block size");
    switch (p.threads) {
    case 128:
        return launch_resident_blocks<T, V, 128>(device, p.shared_slots, p.shared_bytes, x, y, rows, cols, launch,
                                                 blocks, err);
    case 256:
        return launch_resident_blocks<T, V, 256>(device, p.shared_slots, p.shared_bytes, x, y, rows, cols, launch,
                                                 blocks, err);
    default:
        return launch_resident_blocks<T, V, largest_block_threads>(device, p.shared_slots, p.shared_bytes, x, y,
                                                                   rows, cols, launch, blocks, err);
    }
}

/* The online kernel: a block per row, two reads. */
template <typename T, typename V>
kcs_status launch_online(kcs_device *device, const T *x, T *y, size_t rows, size_t cols, bool launch,
                         unsigned int *blocks, kcs_error *err)
{
    auto kernel = kcs_softmax_online<T, V>;
    if (!launch)
        return persistent_blocks(device, (const void *)kernel, online_threads<T>, 0, rows, 1, blocks, err);
    kernel<<<*blocks, online_threads<T>, 0, device->stream>>>(x, y, rows, cols);
    KCS_CUDA_CHECK_LAUNCH("kcs_softmax_online");
    return KCS_OK;
}

/* The cluster kernel: a cluster of p.cluster blocks a row (p.slice_slots slots each), a grid that covers every
 * row. Sizing checks that a cluster of that many blocks and that much shared memory can be placed at all
 * (cudaOccupancyMaxActiveClusters): 16 blocks are beyond the portable 8, which a device may not place. The launch
 * asks for the load-balancing cluster scheduling policy (cudaClusterSchedulingPolicyLoadBalancing, "allow the
 * hardware to load-balance the blocks in a cluster to the SMs"; NVIDIA documents no more of what it does),
 * measured on an H200 in two calls against the default in the same call: 512 x 262144 0.872 of copy in f32
 * (default 0.845 to 0.848) and 0.856 to 0.857 in bf16 (0.843 to 0.846), 2048 x 131072 0.920 in f32 (0.910) and
 * 0.889 in bf16 (0.879); the spread policy ran level with the default (docs/softmax.md, "Long rows on the H200"). */
template <typename T, typename V, typename P>
kcs_status launch_cluster(kcs_device *device, const P &p, const T *x, T *y, size_t rows, size_t cols, bool launch,
                          unsigned int *blocks, kcs_error *err)
{
    auto kernel = cluster_kernel<T, V>;
    cudaLaunchAttribute attribute[2] = {};
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = (unsigned int)p.cluster;
    attribute[0].val.clusterDim.y = 1;
    attribute[0].val.clusterDim.z = 1;
    attribute[1].id = cudaLaunchAttributeClusterSchedulingPolicyPreference;
    attribute[1].val.clusterSchedulingPolicyPreference = cudaClusterSchedulingPolicyLoadBalancing;
    cudaLaunchConfig_t config = {};
    config.blockDim = dim3(cluster_block_threads);
    config.dynamicSmemBytes = p.shared_bytes;
    config.stream = device->stream;
    config.attrs = attribute;
    config.numAttrs = 2;
    if (!launch) {
        if (rows > (size_t)INT_MAX / (size_t)p.cluster)
            return kcs_fail(err, KCS_UNSUPPORTED,
                            "softmax: %zu rows of %zu columns take %d blocks each, more than a grid holds (%d)", rows,
                            cols, p.cluster, INT_MAX);
        *blocks = (unsigned int)(rows * (size_t)p.cluster);
        KCS_CUDA_CHECK(
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)p.shared_bytes));
        if (p.cluster > cluster_portable_blocks)
            KCS_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        config.gridDim = dim3(*blocks);
        int clusters = 0;
        KCS_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
        if (clusters < 1)
            return kcs_fail(err, KCS_UNSUPPORTED,
                            "softmax rows of %zu columns: this device places no cluster of %d blocks of %d threads "
                            "and %zu bytes of shared memory",
                            cols, p.cluster, cluster_block_threads, p.shared_bytes);
        return KCS_OK;
    }
    config.gridDim = dim3(*blocks);
    KCS_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, x, y, cols, p.slice_slots));
    KCS_CUDA_CHECK_LAUNCH("kcs_softmax_cluster");
    return KCS_OK;
}

/* The kernel families, a row of the table each, in the order in which
 * "auto" tries them; automatic stands for "auto" itself. */
enum class family { warp_groups, block_resident, cluster, online, automatic };

/* A family and the configuration in which it holds rows of one length. */
struct plan {
    family kernel;       /* never automatic */
    int group;           /* warp-groups: lanes a row */
    int registers;       /* warp-groups: register slots a lane */
    int shared_slots;    /* block-resident: shared-memory slots a thread (the stash) */
    size_t shared_bytes; /* block-resident: the stash's dynamic shared memory */
    int threads;         /* block-resident: threads a block (a row), one of block_thread_choices */
    int cluster;         /* cluster: blocks a row (a cluster), 2 to cluster_most_blocks */
    size_t slice_slots;  /* cluster: slots of the row a block holds (the last block fewer) */
};

/* Shared-memory slots a thread of a block of threads holds beyond reg in registers, for rows of row_slots. */
inline size_t stash_slots(size_t row_slots, int threads, int reg)
{
    const size_t per_thread = (row_slots + threads - 1) / threads;
    return per_thread > (size_t)reg ? per_thread - reg : 0;
}

/* How family f holds rows of cols elements in slots of width elements on a
 * device of these limits, or KCS_UNSUPPORTED with the reason when it cannot
 * hold them. automatic takes the first family that can (the cluster kernel
 * only where the device runs clusters); the online kernel holds any row. */
template <typename T>
kcs_status plan_for(family f, size_t cols, int width, const device_limits &limits, plan *p, kcs_error *err)
{
    const size_t shared_available = limits.shared_available;
    const size_t row_slots = cols / (size_t)width;
    switch (f) {
    case family::warp_groups:
        /* One slot a lane while 32 lanes hold the row (as many lanes as the row has slots, a power of two),
         * beyond that 32 lanes of the fewest of 2, 4 and 8 slots (docs/softmax.md, Speed: at 10^6 x 128 f32,
         * 32 lanes of one float4 ran 2% faster than 8 lanes of four, as fast as a copy kernel). */
        for (int group = 1; group <= 32; group *= 2)
            if (row_slots <= (size_t)group) {
                *p = plan{f, group, 1, 0, 0, 0, 0, 0};
                return KCS_OK;
            }
        for (int registers = 2; registers <= wide_group_registers<T>; registers *= 2)
            if (row_slots <= (size_t)32 * registers) {
                *p = plan{f, 32, registers, 0, 0, 0, 0, 0};
                return KCS_OK;
            }
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "softmax rows of %zu columns are %zu slots of %d; a warp group holds at most %d "
                        "(32 lanes x %d register slots)",
                        cols, row_slots, width, 32 * wide_group_registers<T>, wide_group_registers<T>);
    case family::block_resident: {
        /* The block size (docs/softmax.md, Speed: within 1.1% of the best of the three on every shape measured,
         * 1024 to 65536 columns in each type): among the sizes that keep at least rows_in_flight blocks (rows) on
         * an SM, so that other rows' loads are in flight while one block computes, the one whose threads hold the
         * most of the row in registers (the fewest stash slots: the stash costs a pass through shared memory each
         * way, and for f16 and bf16 a second exp); where none keeps that many, the one that keeps the most threads
         * on an SM. Ties go to the smaller block. An SM holds at least the blocks its registers allow under each
         * instance's cap (block_min_blocks; ptxas often takes fewer, and more fit) and at most what its shared
         * memory allows: 1 KB more than a block may take (228 and 227 KB on an H100), each block taking its
         * stash, its two arrays of per-warp partials and 1 KB that the runtime reserves. A stash must also leave
         * 1 KB of a block's limit (the kernel's static arrays, with room). */
        constexpr size_t rows_in_flight = 4;
        const size_t slot_bytes = (size_t)width * sizeof(T);
        int most_resident = 0;
        bool enough_rows = false;
        for (int threads : block_thread_choices) {
            const size_t shared_slots = stash_slots(row_slots, threads, block_register_slots<T>);
            const size_t shared_bytes = shared_slots * (size_t)threads * slot_bytes;
            if (shared_bytes + 1024 > shared_available)
                continue;
            const size_t per_block = shared_bytes + 2 * (size_t)(threads / 32) * sizeof(kcs_compute<T>) + 1024;
            const size_t by_shared = (shared_available + 1024) / per_block;
            const size_t by_registers = (size_t)sm_registers / ((size_t)block_registers * threads);
            const size_t blocks = by_shared < by_registers ? by_shared : by_registers;
            const int resident = threads * (int)blocks;
            const bool enough = blocks >= rows_in_flight;
            const bool better = most_resident == 0 || (enough && !enough_rows) ||
                                (enough && shared_slots < (size_t)p->shared_slots) ||
                                (!enough && !enough_rows && resident > most_resident);
            if (better) {
                most_resident = resident;
                enough_rows = enough;
                *p = plan{f, 0, block_register_slots<T>, (int)shared_slots, shared_bytes, threads, 0, 0};
            }
        }
        if (most_resident > 0)
            return KCS_OK;
        const size_t shared_slots = stash_slots(row_slots, largest_block_threads, block_register_slots<T>);
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "softmax rows of %zu columns need %zu bytes of shared memory a block (%d threads, %zu "
                        "slots of %d a thread beyond %d in registers); this device has %zu, 1 KB of it reserved",
                        cols, shared_slots * largest_block_threads * slot_bytes, largest_block_threads, shared_slots,
                        width, block_register_slots<T>, shared_available);
    }
    case family::cluster: {
        /* The fewest blocks a row (a power of two from 2) whose slices are at most cluster_slice_limit<T>; where
         * even 16 blocks' are larger, 16 blocks while their slices fit a block's shared memory (1 KB of it
         * reserved, as above). */
        if (!limits.clusters)
            return kcs_fail(err, KCS_UNSUPPORTED,
                            "softmax rows of %zu columns: the cluster kernel needs thread-block clusters (compute "
                            "capability 9.0, and a build for sm_90 or later); this device or build has none",
                            cols);
        const size_t slot_bytes = (size_t)width * sizeof(T);
        auto shared_bytes_of = [&](size_t slice_slots) {
            return cluster_shared_bytes<kcs_compute<T>>(
                cluster_shared_slots<cluster_register_slots<T>>(slice_slots) * slot_bytes);
        };
        for (int blocks = 2; blocks <= cluster_most_blocks; blocks *= 2) {
            const size_t slice_slots = (row_slots + blocks - 1) / blocks;
            const size_t shared_bytes = shared_bytes_of(slice_slots);
            const bool fits = shared_bytes + 1024 <= shared_available;
            if (fits && (slice_slots * slot_bytes <= cluster_slice_limit<T> || blocks == cluster_most_blocks)) {
                *p = plan{f, 0, 0, 0, shared_bytes, cluster_block_threads, blocks, slice_slots};
                return KCS_OK;
            }
        }
        const size_t slice_slots = (row_slots + cluster_most_blocks - 1) / cluster_most_blocks;
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "softmax rows of %zu columns need %zu bytes of shared memory a block in clusters of %d "
                        "blocks (%zu slots of %d a block, %d a thread in registers); this device has %zu, 1 KB of "
                        "it reserved",
                        cols, shared_bytes_of(slice_slots), cluster_most_blocks, slice_slots, width,
                        cluster_register_slots<T>, shared_available);
    }
    case family::online:
        *p = plan{f, 0, 0, 0, 0, 0, 0, 0};
        return KCS_OK;
    case family::automatic:
        break;
    }
    kcs_error not_this_one = {{0}};
    if (cols * sizeof(T) <= auto_group_row_bytes<T> &&
        plan_for<T>(family::warp_groups, cols, width, limits, p, &not_this_one) == KCS_OK)
        return KCS_OK;
    if (plan_for<T>(family::block_resident, cols, width, limits, p, &not_this_one) == KCS_OK)
        return KCS_OK;
    if (limits.clusters && plan_for<T>(family::cluster, cols, width, limits, p, &not_this_one) == KCS_OK)
        return KCS_OK;
    return plan_for<T>(family::online, cols, width, limits, p, err);
}

/* Sizes (launch false) or launches (launch true) the kernel of plan p, in
 * the configurations plan_for picks. */
template <typename T, typename V>
kcs_status launch_plan(kcs_device *device, const plan &p, const T *x, T *y, size_t rows, size_t cols, bool launch,
                       unsigned int *blocks, kcs_error *err)
{
    switch (p.kernel) {
    case family::warp_groups:
        /* one slot a lane, 1 to 32 lanes; then 32 lanes of 2, 4 or (f32, f64) 8 slots */
        switch (p.registers == 1 ? p.group : 32 * p.registers) {
        case 1: return launch_warp_groups<T, V, 1, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 2: return launch_warp_groups<T, V, 2, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 4: return launch_warp_groups<T, V, 4, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 8: return launch_warp_groups<T, V, 8, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 16: return launch_warp_groups<T, V, 16, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 32: return launch_warp_groups<T, V, 32, 1>(device, x, y, rows, cols, launch, blocks, err);
        case 64: return launch_warp_groups<T, V, 32, 2>(device, x, y, rows, cols, launch, blocks, err);
        case 128: return launch_warp_groups<T, V, 32, 4>(device, x, y, rows, cols, launch, blocks, err);
        default:
            return launch_warp_groups<T, V, 32, wide_group_registers<T>>(device, x, y, rows, cols, launch, blocks,
                                                                         err);
        }
    case family::block_resident:
        return launch_block_resident<T, V>(device, p, x, y, rows, cols, launch, blocks, err);
    case family::cluster:
        return launch_cluster<T, V>(device, p, x, y, rows, cols, launch, blocks, err);
    default:
        return launch_online<T, V>(device, x, y, rows, cols, launch, blocks, err);
    }
}

/* Whether every row starts 16-byte aligned, so that slots can be vectors. */
template <typename T> bool rows_are_vectors(const T *x, const T *y, size_t cols)
{
    return (cols * sizeof(T)) % 16 == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
           reinterpret_cast<uintptr_t>(y) % 16 == 0;
}

/* The run function of variant F: family F's kernel (auto: the kernel of the
 * first family that holds rows of this length), its grid sized before the
 * timer starts and launched inside it. */
template <typename T, family F> KCS_KERNEL_RUN(run)
{
    using V = typename vector_of<T>::type;
    const size_t rows = args->softmax.rows, cols = args->softmax.cols;
    const T *x = nullptr;
    T *y = nullptr;
    bool vectors = false;
    const bool work = rows > 0 && cols > 0;
    plan p = {};
    unsigned int blocks = 0;
    /* launch_plan sizes the grid when not launching, and launches the grid it sized when launching */
    auto launch_or_size = [&](bool launching) -> kcs_status {
        if (work && vectors)
            return launch_plan<T, V>(device, p, x, y, rows, cols, launching, &blocks, err);
        if (work)
            return launch_plan<T, T>(device, p, x, y, rows, cols, launching, &blocks, err);
        return KCS_OK;
    };
    auto size = [&]() -> kcs_status {
        device_limits limits = {};
        kcs_status status = limits_of(device, &limits, err);
        if (status != KCS_OK)
            return status;
        x = (const T *)inputs[0]->data;
        y = (T *)outputs[0]->data;
        vectors = rows_are_vectors(x, y, cols);
        if (work) {
            /* rows that are not 16-byte aligned take 4 or 2 times the slots supports() assumed: refused here */
            status = plan_for<T>(F, cols, vectors ? (int)(sizeof(V) / sizeof(T)) : 1, limits, &p, err);
            if (status != KCS_OK)
                return status;
        }
        return launch_or_size(false);
    };
    auto launch = [&]() -> kcs_status { return launch_or_size(true); };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, size, launch);
}

/* The supports() of variant F: whether family F (auto: the family it would
 * take) holds rows of these args' length, and, for the online kernel,
 * whether it keeps to the depth rule. Assumes buffers from cudaMalloc
 * (256-byte aligned), as the runner's are. */
template <typename T, family F> KCS_KERNEL_SUPPORTS(supports)
{
    const size_t cols = args->softmax.cols;
    device_limits limits = {};
    kcs_status status = limits_of(device, &limits, err); /* of device->ordinal: no need to select it */
    if (status != KCS_OK || cols == 0)
        return status;
    /* The slot width the run will use for buffers from cudaMalloc. */
    const int width = (cols * sizeof(T)) % 16 == 0 ? 16 / (int)sizeof(T) : 1;
    plan p = {};
    status = plan_for<T>(F, cols, width, limits, &p, err);
    if (status != KCS_OK || (p.kernel != family::online && p.kernel != family::cluster))
        return status;
    const bool online = p.kernel == family::online;
    const size_t depth =
        online ? online_depth<T>(cols / (size_t)width, width) : cluster_depth(p.slice_slots, width);
    if (depth > depth_limit(cols))
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "softmax rows of %zu columns: the %s kernel's summation depth (%zu) would "
                        "exceed docs/softmax.md's D(cols) = %zu",
                        cols, online ? "online" : "cluster", depth, depth_limit(cols));
    return KCS_OK;
}

} // namespace

/* A family's rows, one per dtype: f32 (float4 slots), f64 (double2), f16 and bf16 (8 to a uint4, computed in f32). */
#define SOFTMAX_ROWS(variant, F, description)                                                                  \
    {"softmax", KCS_F32, variant, description, run<float, F>, supports<float, F>},                            \
    {"softmax", KCS_F64, variant, description, run<double, F>, supports<double, F>},                          \
    {"softmax", KCS_F16, variant, description, run<__half, F>, supports<__half, F>},                          \
    {"softmax", KCS_BF16, variant, description, run<__nv_bfloat16, F>, supports<__nv_bfloat16, F>}

static const kcs_kernel rows[] = {
    SOFTMAX_ROWS("auto", family::automatic,
                 "what library users call: warp-groups to 128 bytes of values a lane (1024 f32 or 16-bit columns), "
                 "block-resident while shared memory holds the row, then cluster (sm_90: while 16 blocks' shared "
                 "memory holds it), online beyond"),
    SOFTMAX_ROWS("warp-groups", family::warp_groups,
                 "1-32 lanes of a warp a row (one 16-byte slot a lane, else 32 lanes of up to 128 bytes of "
                 "values), the whole row in registers, a grid that covers every row, shuffles only, read once"),
    SOFTMAX_ROWS("block-resident", family::block_resident,
                 "a block of 128, 256 or 512 threads a row (by row length), 16 values a thread in registers and "
                 "the rest in shared memory (cp.async), read once"),
    SOFTMAX_ROWS("cluster", family::cluster,
                 "a cluster of 2 to 16 blocks of 256 threads a row (by row length; sm_90), each block's slice in "
                 "shared memory (cp.async), (max, sum) pairs exchanged in distributed shared memory, read once"),
    SOFTMAX_ROWS("online", family::online,
                 "a 1024-thread block a row (f64: 512), two reads: running max and rescaled sum, then the outputs"),
};

#undef SOFTMAX_ROWS

extern "C" const kcs_kernel_table kcs_cuda_softmax_kernels = KCS_KERNEL_TABLE(rows);
