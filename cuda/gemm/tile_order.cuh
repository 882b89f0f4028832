/* tile_order.cuh: the persistent grid's walk over the tiles of a GEMM, for
 * kcs's Hopper kernels (cuda/gemm/tensor_wgmma.cu, cuda/gemm/fp8_wgmma.cu,
 * through hopper.cuh): which tiles a launch computes, how many blocks it
 * takes, and the order in which each block visits its tiles.
 *
 * Plain arithmetic, host and device: tests/cuda_gemm_emulation.cpp runs it
 * on the host and checks that every tile is visited once, by one block,
 * within c, for grids of every size against ragged tile counts, and that
 * the tiles in flight at once span the rows it says. A tile that no block
 * visited would otherwise show only on a GPU, as poisoned outputs.
 */
#ifndef KCS_CUDA_GEMM_TILE_ORDER_CUH
#define KCS_CUDA_GEMM_TILE_ORDER_CUH

#include <cmath>

namespace kcs_hopper {

/* Which tiles a persistent launch computes, in which order, and how deep each is. */
struct tile_walk {
    int tiles_m, tiles_n; /* tiles down m and across n */
    int k_tiles;          /* stages of k per tile; 0 when alpha = 0 or k = 0 (a and b unread) */
    int group_rows;       /* row tiles walked together (tile_origin), set by persistent_grid */
};

/* The tiles of a launch of BLOCK_M x BLOCK_N tiles over m x n, with k_tiles
 * stages of block_k each (none where nothing of a and b is read). */
inline tile_walk tiles_of(long long m, long long n, long long k, bool reads_a_and_b, int block_m, int block_n,
                          int block_k)
{
    tile_walk walk;
    walk.tiles_m = (int)((m + block_m - 1) / block_m);
    walk.tiles_n = (int)((n + block_n - 1) / block_n);
    walk.k_tiles = reads_a_and_b ? (int)((k + block_k - 1) / block_k) : 0;
    return walk;
}

/* Blocks of a persistent grid: one per multiprocessor (one block fits one,
 * by its shared memory), fewer where there are fewer tiles. Block b takes
 * tiles b, b + blocks, b + 2 blocks, ... in tile_origin's order, for which
 * this sets walk.group_rows: the tiles in flight at once (one a block) then
 * span group_rows row tiles and blocks / group_rows column tiles, and at
 * each stage of k read group_rows block_m rows of A and blocks / group_rows
 * block_n columns of B between them, the fewest where the two are equal:
 * group_rows = sqrt(blocks block_n / block_m), rounded (16 for 132 blocks of
 * 128 x 256 tiles). Measured on an H200 (Nsight Compute, 2026-11-29), groups
 * of 16 row tiles against 8: 143 against 185 MB read from DRAM at f16
 * 4096^3, 1.22 against 1.49 GB at bf16 8192^3, and up to 2.6% faster in
 * f16 and bf16 (bf16 8192^3 level), level in TF32 and FP8 (docs/gemm.md,
 * "The tile order"). multiprocessors: the device's (kcs_device's sm_count);
 * below 1 counts as 1. */
inline unsigned int persistent_grid(int multiprocessors, tile_walk &walk, int block_m, int block_n)
{
    const long long tiles = (long long)walk.tiles_m * walk.tiles_n;
    const long long most = multiprocessors > 0 ? multiprocessors : 1;
    const unsigned int blocks = (unsigned int)(tiles < most ? tiles : most);
    const long rows = std::lround(std::sqrt((double)blocks * block_n / block_m));
    walk.group_rows = (int)(rows < 1 ? 1 : rows > walk.tiles_m ? walk.tiles_m : rows);
    return blocks;
}

/* The top left element of tile number `tile`: walk.group_rows row tiles at
 * a time, down m first, then the next group (fewer rows in the last), so
 * that the blocks running at once share rows of A and columns of B in L2. */
template <int BLOCK_M, int BLOCK_N>
__host__ __device__ __forceinline__ void tile_origin(const tile_walk &walk, long long tile, int &m0, int &n0)
{
    const long long per_group = (long long)walk.group_rows * walk.tiles_n;
    const int group = (int)(tile / per_group);
    const int first = group * walk.group_rows;
    const int left = walk.tiles_m - first;
    const int rows = walk.group_rows < left ? walk.group_rows : left;
    const int within = (int)(tile - group * per_group);
    m0 = (first + within % rows) * BLOCK_M;
    n0 = (within / rows) * BLOCK_N;
}

} // namespace kcs_hopper

#endif
