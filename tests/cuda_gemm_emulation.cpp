/* cuda_gemm_emulation.cpp: cuda/gemm/simt.cu's tiled kernels run on the host,
 * for machines without a GPU (tests/cuda_gemm_emulation.sh builds and runs it).
 *
 * The device code and the launch planning of cuda/gemm/simt.cu (between
 * "namespace {" and "End of what runs without a device") are compiled as
 * host C++: every CUDA thread of a block is a fiber, __syncthreads a barrier
 * of fibers (tests/cuda_threads_emulation.h), shared arrays are statics,
 * blocks run one after another. Each
 * case runs the same launches as run_tiled (scale kernel, tiled kernel in the
 * edge mode and split-k it picks, split sum) on inputs in host memory with
 * guard zones, and checks every element against a long double reference
 * within docs/gemm.md's bound gamma(k + 2) (P + Q) (NaN and infinities by
 * class), that nothing outside c_out was written, that no global access left
 * its array and every 16-byte access was aligned, and that the inputs are
 * unchanged. EMU_ALIAS=1 also runs each case in place (c_out = c) and
 * demands the same bits. Each case runs in f32 and f64, and with f16 and
 * bf16 inputs (f32 accumulation) into a C_out of the same type, whose bound
 * adds one rounding of the result (docs/gemm.md, "Half precision"), and into
 * an f32 C_out (c_dtype=f32).
 *
 *     tests/cuda_gemm_emulation.sh              the listed cases, every type
 *     tests/cuda_gemm_emulation.sh random SEED [COUNT]   random shapes
 *
 * It checks index arithmetic, bounds and alpha/beta semantics, not the
 * GPU's memory model or speed: the GPU run of ./build/kcs run --backend cuda
 * gemm is the real test.
 *
 * Before the cases it also runs cuda/gemm/tile_order.cuh, the Hopper
 * kernels' walk over their tiles, on the host (check_tile_order): every tile
 * of c visited once by the persistent grid, for grids and tile counts of
 * every kind; and cuda/gemm/matrix_descriptor.cuh (check_descriptor_steps):
 * every descriptor stepped within a block's shared memory is the one made at
 * the address it steps to.
 */
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <mutex>
#include <vector>

#include "cuda_threads_emulation.h"

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    dim3() = default;
    dim3(unsigned a, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline double2 make_double2(double a, double b) { return {a, b}; }
dim3 threadIdx, blockIdx; // threadIdx: set as each fiber resumes
dim3 gridDim, blockDim;
emu_barrier *block_barrier;
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
struct emu_range { const char *storage_begin, *storage_end, *valid_begin, *valid_end; };
std::vector<emu_range> emu_ranges;
std::mutex emu_mutex;
long emu_violations = 0;
static void emu_check(const void *pointer, size_t bytes, const char *what)
{
    const char *p = (const char *)pointer;
    if (bytes == 16 && (uintptr_t)p % 16 != 0) {
        std::lock_guard<std::mutex> lock(emu_mutex);
        if (emu_violations++ < 5) printf("  MISALIGNED %s at %p\n", what, pointer);
    }
    for (auto &r : emu_ranges)
        if (p >= r.storage_begin && p < r.storage_end) {
            if (p < r.valid_begin || p + bytes > r.valid_end) {
                std::lock_guard<std::mutex> lock(emu_mutex);
                if (emu_violations++ < 5) printf("  OUT OF BOUNDS %s at %p (valid %p..%p)\n", what, pointer, (void*)r.valid_begin, (void*)r.valid_end);
            }
            return;
        }
}
template <class T> static inline T __ldg(const T *p) { emu_check(p, sizeof(T), "__ldg"); return *p; }
using std::fma;
using std::fmaf;
using std::min;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(a, b)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict

extern "C" {
#include "op_args.h"
#include "kcs_ref_half.h"
}
#include "cuda_half_emulation.h"

#include "gemm_device.inc"
#define __host__
#include "../cuda/gemm/tile_order.cuh" /* the Hopper GEMMs' walk over the tiles: check_tile_order */
#include "../cuda/gemm/matrix_descriptor.cuh" /* the Hopper GEMMs' descriptors: check_descriptor_steps */

template <class F, class... A> void launch(F kernel, dim3 grid, dim3 block, A... args)
{
    gridDim = grid;
    blockDim = block;
    const unsigned threads = block.x;
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_barrier bar(threads);
                block_barrier = &bar;
                blockIdx = dim3(x, y, z);
                auto thread = [&] { kernel(args...); };
                emu_team_run(
                    threads, [](unsigned, void *argument) { (*static_cast<decltype(thread) *>(argument))(); },
                    &thread, [](unsigned t) { threadIdx = dim3(t); });
            }
}

// A value as storage type T (rounded once from float for the 16-bit types), and back.
template <typename T> static T from_double(double v)
{
    if constexpr (sizeof(T) == 2)
        return kcs_narrow<T>((float)v);
    else
        return (T)v;
}
template <typename T> static double to_double(T v) { return (double)kcs_widen(v); }
template <typename T> static bool same_bits(const T &x, const T &y) { return memcmp(&x, &y, sizeof(T)) == 0; }
template <typename T> static const char *type_name()
{
    return sizeof(T) == 8 ? "f64" : sizeof(T) == 4 ? "f32" : std::is_same<T, __half>::value ? "f16" : "bf16";
}

// run_tiled's launches (run_tiled_typed<In, Out>), with malloc'd workspace.
template <typename In, typename Out>
void emulated_run(const kcs_gemm_args *g, const In *a, const In *b, const Out *c, Out *c_out, int sm_count, int *mode,
                  int *splits)
{
    using T = kcs_compute<In>;
    const gemm_plan plan = plan_of(g);
    *mode = -1;
    *splits = 0;
    if (plan == plan_scale) {
        launch(kcs_gemm_scale<Out>, dim3(3), dim3(64), c, c_out, g->m * g->n, (kcs_compute<Out>)g->beta);
    } else if (plan == plan_gemm) {
        const tiled_split split = split_of<T>(g, sm_count);
        std::vector<T> workspace_memory(split.workspace_bytes / sizeof(T) + 4);
        T *workspace = split.splits > 1 ? workspace_memory.data() : nullptr;
        emu_ranges.push_back({(const char *)workspace_memory.data(),
                              (const char *)(workspace_memory.data() + workspace_memory.size()),
                              (const char *)workspace_memory.data(),
                              (const char *)workspace_memory.data() + split.workspace_bytes});
        // poison the workspace
        for (auto &w : workspace_memory)
            w = (T)NAN;
        if (split.splits > 1) {
            tiled_launch<In, T> l = tiled_launch_of<In, T>(g, split, a, b, nullptr, workspace);
            *mode = l.mode;
            *splits = l.splits;
            launch(l.kernel, l.grid, dim3(shape<T>::threads), l.params);
            launch(kcs_gemm_split_sum<T, Out>, dim3(3), dim3(64), (const T *)l.params.out, l.splits, g->m * g->n,
                   c, c_out, (T)g->alpha, (T)g->beta);
        } else {
            tiled_launch<In, Out> l = tiled_launch_of<In, Out>(g, split, a, b, c, c_out);
            *mode = l.mode;
            *splits = l.splits;
            launch(l.kernel, l.grid, dim3(shape<T>::threads), l.params);
        }
        emu_ranges.pop_back(); // the workspace is freed
    }
}

struct test_case {
    const char *name;
    size_t m, n, k;
    int ta, tb;
    double alpha, beta;
    int fill_a, fill_c; // 0 uniform, 1 NaN, 2 special values, 3 integers
    int misalign;       // offset pointers by this many elements
};

static double gamma_of(double k, double u) { return k * u / (1 - k * u); }

template <typename In, typename Out> int run_case(const test_case &tc, int sm_count)
{
    using T = kcs_compute<In>;
    const size_t m = tc.m, n = tc.n, k = tc.k, off = tc.misalign;
    std::mt19937_64 rng(12345 + m * 7 + n * 13 + k);
    std::uniform_real_distribution<double> uni(-1, 1);
    std::uniform_int_distribution<int> ints(-4, 4);
    const size_t slack = 64;
    std::vector<In> A(m * k + off + 2 * slack), B(k * n + off + 2 * slack);
    std::vector<Out> C(m * n + off + 2 * slack), O(m * n + off + 2 * slack);
    In *a = A.data() + slack + off, *b = B.data() + slack + off;
    Out *c = C.data() + slack + off, *o = O.data() + slack + off;
    emu_ranges.clear();
    auto reg = [](auto &v, auto *valid, size_t count) {
        emu_ranges.push_back({(const char *)v.data(), (const char *)(v.data() + v.size()), (const char *)valid,
                              (const char *)(valid + count)});
    };
    reg(A, a, m * k);
    reg(B, b, k * n);
    reg(C, c, m * n);
    reg(O, o, m * n);
    const Out guard = from_double<Out>(777);
    for (auto &x : O)
        x = guard;
    for (size_t i = 0; i < m * k; i++) {
        a[i] = from_double<In>(tc.fill_a == 1 ? NAN : tc.fill_a == 3 ? (double)ints(rng) : uni(rng));
        if (tc.fill_a == 2 && rng() % 100 == 0)
            a[i] = from_double<In>(rng() % 3 == 0 ? NAN : rng() % 2 ? INFINITY : -INFINITY);
    }
    for (size_t i = 0; i < k * n; i++)
        b[i] = from_double<In>(tc.fill_a == 2 ? 0.5 + 0.5 * std::fabs(uni(rng)) : tc.fill_a == 3 ? (double)ints(rng) : uni(rng));
    for (size_t i = 0; i < m * n; i++)
        c[i] = from_double<Out>(tc.fill_c == 1 ? NAN : tc.fill_c == 3 ? (double)ints(rng) : uni(rng));
    for (size_t i = 0; i < m * n; i++)
        o[i] = from_double<Out>(-12345.678); // poison
    kcs_gemm_args g = {};
    g.m = m, g.n = n, g.k = k, g.transpose_a = tc.ta, g.transpose_b = tc.tb;
    g.alpha = (double)(T)tc.alpha, g.beta = (double)(T)tc.beta, g.tf32 = 0;
    int mode, splits;
    std::vector<In> A0(A), B0(B);
    std::vector<Out> C0(C);
    emulated_run<In, Out>(&g, a, b, c, o, sm_count, &mode, &splits);
    const double u = sizeof(T) == 4 ? 0x1p-24 : 0x1p-53;
    const double eta = sizeof(T) == 4 ? 0x1p-149 : 0x1p-1074;
    // a 16-bit C_out: one more rounding of the result (docs/gemm.md, "Half precision")
    const bool narrow_out = sizeof(Out) == 2;
    const double u_out = !narrow_out ? 0 : std::is_same<Out, __half>::value ? 0x1p-11 : 0x1p-8;
    const double eta_out = !narrow_out ? 0 : std::is_same<Out, __half>::value ? 0x1p-24 : 0x1p-133;
    size_t bad = 0;
    double worst = 0;
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            long double sum = 0, mag = 0;
            bool nonfinite = false;
            double plain = 0;
            if (g.alpha != 0)
                for (size_t p = 0; p < k; p++) {
                    long double x = to_double(tc.ta ? a[p * m + i] : a[i * k + p]);
                    long double y = to_double(tc.tb ? b[j * k + p] : b[p * n + j]);
                    sum += x * y;
                    mag += fabsl(x * y);
                    plain += (double)x * (double)y;
                    if (!std::isfinite((double)x))
                        nonfinite = true;
                }
            long double expect = (long double)g.alpha * sum;
            long double qmag = 0;
            const double c_ij = to_double(c[i * n + j]);
            if (g.beta != 0) {
                expect += (long double)g.beta * c_ij;
                qmag = fabsl((long double)g.beta * c_ij);
            }
            if (g.alpha == 0 || k == 0)
                expect = g.beta != 0 ? (long double)g.beta * c_ij : 0.0L;
            const double got = to_double(o[i * n + j]);
            if (nonfinite) {
                double e = g.alpha * plain + (g.beta != 0 ? g.beta * c_ij : 0.0);
                bool ok = std::isnan(e) ? std::isnan(got) : got == e;
                if (!ok) {
                    if (bad < 5)
                        printf("  %s (%zu,%zu): got %g expected class %g\n", tc.name, i, j, got, e);
                    bad++;
                }
                continue;
            }
            double bound = gamma_of(k + 2, u) * (double)(fabsl(g.alpha) * mag + qmag) + (k + 2) * eta + 1e-300;
            bound += u_out * ((double)fabsl(expect) + bound) + eta_out / 2;
            double error = std::fabs((double)(got - expect));
            if (!(error <= bound)) {
                if (bad < 5)
                    printf("  %s (%zu,%zu): got %.17g expected %.17Lg bound %g\n", tc.name, i, j, got, expect, bound);
                bad++;
            } else
                worst = std::max(worst, bound > 0 ? error / bound : 0);
        }
    bool alias_ok = true;
    if (getenv("EMU_ALIAS")) {
        std::vector<Out> inplace(C);
        Out *ci = inplace.data() + slack + off;
        emu_ranges.push_back({(const char *)inplace.data(), (const char *)(inplace.data() + inplace.size()),
                              (const char *)ci, (const char *)(ci + m * n)});
        int mode2, splits2;
        emulated_run<In, Out>(&g, a, b, ci, ci, sm_count, &mode2, &splits2);
        alias_ok = memcmp(ci, o, m * n * sizeof(Out)) == 0;
        if (!alias_ok) printf("  in-place result differs\n");
    }
    bool untouched = emu_violations == 0 && alias_ok;
    emu_violations = 0;
    for (size_t i = 0; i < O.size(); i++)
        if ((O.data() + i < o || O.data() + i >= o + m * n) && !same_bits(O[i], guard))
            untouched = false;
    // inputs unmodified
    bool inputs_same = memcmp(A.data(), A0.data(), A.size() * sizeof(In)) == 0 &&
                       memcmp(B.data(), B0.data(), B.size() * sizeof(In)) == 0 &&
                       memcmp(C.data(), C0.data(), C.size() * sizeof(Out)) == 0;
    char types[16];
    snprintf(types, sizeof types, "%s%s%s", type_name<In>(), sizeof(Out) != sizeof(In) ? ">" : "",
             sizeof(Out) != sizeof(In) ? type_name<Out>() : "");
    printf("%-8s %-28s m=%zu n=%zu k=%zu %c%c alpha=%g beta=%g mode=%d splits=%d: %s (worst %.3f of bound)%s%s\n",
           types, tc.name, m, n, k, tc.ta ? 'T' : 'N', tc.tb ? 'T' : 'N', g.alpha, g.beta,
           mode, splits, bad ? "FAIL" : "ok", worst, untouched ? "" : " WROTE OUTSIDE OR OUT OF BOUNDS", inputs_same ? "" : " INPUT CHANGED");
    return bad || !untouched || !inputs_same;
}

// A case in every pair of storage types of cuda/gemm/simt.cu's rows: f32, f64, and
// f16 and bf16 into a C_out of their own type or f32.
static int run_every_type(const test_case &tc, int sm_count)
{
    return run_case<float, float>(tc, sm_count) + run_case<double, double>(tc, sm_count) +
           run_case<__half, __half>(tc, sm_count) + run_case<__half, float>(tc, sm_count) +
           run_case<__nv_bfloat16, __nv_bfloat16>(tc, sm_count) + run_case<__nv_bfloat16, float>(tc, sm_count);
}

/* cuda/gemm/tile_order.cuh for one grid: block b takes tiles b, b + blocks, ... (as the Hopper kernels walk
 * them), and together the blocks must visit every tile of a tiles_m x tiles_n c (its last row and column of
 * tiles ragged where there are several) exactly once, each at a tile's corner inside c; where the first
 * `blocks` tiles (those in flight at once) lie in one group, they span at most group_rows row tiles. Returns
 * the failures, each printed. */
template <int BLOCK_M, int BLOCK_N> static int check_tile_order_of(int multiprocessors, int tiles_m, int tiles_n)
{
    using namespace kcs_hopper;
    const long long m = (long long)tiles_m * BLOCK_M - (tiles_m > 1 ? BLOCK_M / 2 : 0);
    const long long n = (long long)tiles_n * BLOCK_N - (tiles_n > 2 ? 1 : 0);
    tile_walk walk = tiles_of(m, n, 1000, true, BLOCK_M, BLOCK_N, 64);
    const unsigned blocks = persistent_grid(multiprocessors, walk, BLOCK_M, BLOCK_N);
    const long long tiles = (long long)tiles_m * tiles_n;
    int failures = 0;
    auto fail = [&](const char *what, long long detail) {
        if (failures++ < 3)
            printf("FAIL tile order %dx%d tiles of %dx%d on %d multiprocessors (%u blocks, groups of %d rows): "
                   "%s (%lld)\n", tiles_m, tiles_n, BLOCK_M, BLOCK_N, multiprocessors, blocks, walk.group_rows,
                   what, detail);
    };
    if (walk.tiles_m != tiles_m || walk.tiles_n != tiles_n || walk.k_tiles != 16)
        fail("tiles_of counted other tiles", (long long)walk.tiles_m * walk.tiles_n);
    if (blocks != (unsigned)std::min<long long>(tiles, multiprocessors))
        fail("blocks are not min(tiles, multiprocessors)", blocks);
    if (walk.group_rows < 1 || walk.group_rows > tiles_m)
        fail("group_rows outside 1 to tiles_m", walk.group_rows);
    std::vector<int> visits(tiles, 0);
    std::vector<char> first_rows(tiles_m, 0);
    for (unsigned b = 0; b < blocks; b++)
        for (long long tile = b; tile < tiles; tile += blocks) {
            int m0 = -1, n0 = -1;
            tile_origin<BLOCK_M, BLOCK_N>(walk, tile, m0, n0);
            if (m0 < 0 || n0 < 0 || m0 % BLOCK_M != 0 || n0 % BLOCK_N != 0 || m0 >= m || n0 >= n) {
                fail("a tile's origin is not a tile's corner inside c", tile);
                continue;
            }
            visits[(long long)(m0 / BLOCK_M) * tiles_n + n0 / BLOCK_N]++;
            if (tile < (long long)blocks)
                first_rows[m0 / BLOCK_M] = 1;
        }
    for (long long t = 0; t < tiles; t++)
        if (visits[t] != 1)
            fail(visits[t] == 0 ? "a tile is never visited" : "a tile is visited more than once", t);
    const long long spanned = std::count(first_rows.begin(), first_rows.end(), 1);
    if ((long long)blocks <= (long long)walk.group_rows * tiles_n && spanned > walk.group_rows)
        fail("the tiles in flight at once span more row tiles than a group", spanned);
    return failures;
}

/* cuda/gemm/matrix_descriptor.cuh: descriptor_at(descriptor(a), b) is descriptor(a + b), bit for bit, for every
 * 16-byte-aligned address a and step b with a + b below descriptor_address_limit, in both layouts the kernels
 * make (K-major: leading offset unused, 8 rows of 128 bytes 1024 apart; M/N-major: boxes of 64 elements x 128 bytes,
 * 8 KB apart); that the address field is the PTX ISA's, bits 0-13; and that past the limit the step is wrong (it
 * carries out of the field), so the limit is where the header says and the kernels' static_asserts mean something. */
static int check_descriptor_steps()
{
    using namespace kcs_hopper;
    const uint32_t layouts[][2] = {{16, 8 * ROW_BYTES}, {64 * ROW_BYTES, 8 * ROW_BYTES}};
    int failures = 0;
    long long checked = 0;
    for (const auto &layout : layouts)
        for (uint32_t address = 0; address < descriptor_address_limit; address += 16) {
            const uint64_t first = descriptor(address, layout[0], layout[1]);
            for (uint32_t bytes = 0; address + bytes < descriptor_address_limit; bytes += 16, checked++)
                if (descriptor_at(first, bytes) != descriptor(address + bytes, layout[0], layout[1]) &&
                    failures++ < 5)
                    printf("descriptor_at: %u bytes on from address %u (leading %u, stride %u) gives %#llx, the "
                           "descriptor made there %#llx\n",
                           bytes, address, layout[0], layout[1], (unsigned long long)descriptor_at(first, bytes),
                           (unsigned long long)descriptor(address + bytes, layout[0], layout[1]));
        }
    const uint32_t last = descriptor_address_limit - 16;
    if ((descriptor(last, 0, 0) & 0xFFFF) != 0x3FFF) { /* the PTX ISA's start address: bits 0-13, bits 14-15 zero */
        printf("descriptor: the start address field of %u is %#llx, not bits 0-13 all set\n", last,
               (unsigned long long)(descriptor(last, 0, 0) & 0xFFFF));
        failures++;
    }
    if (descriptor_at(k_major_descriptor(last), 16) == k_major_descriptor(last + 16)) {
        printf("descriptor_at: stepping past descriptor_address_limit (%u) still matches: the limit is not where "
               "matrix_descriptor.cuh says\n",
               descriptor_address_limit);
        failures++;
    }
    if (checked == 0) { /* a limit or a loop that leaves nothing to compare validates nothing */
        printf("descriptor steps: none checked\n");
        failures++;
    }
    printf("descriptor steps: %lld checked, %d failures\n", checked, failures);
    return failures;
}

/* Every grid from 1 to 144 multiprocessors against tile counts around a group's edges, in the Hopper kernels'
 * 128 x 256 tiles and in 64 x 128 ones; and the group docs/gemm.md quotes: 16 rows for 132 blocks of
 * 128 x 256 tiles. */
static int check_tile_order()
{
    int failures = 0, grids = 0;
    for (int multiprocessors : {1, 2, 7, 16, 66, 114, 132, 144})
        for (int tiles_m : {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 65})
            for (int tiles_n : {1, 2, 3, 5, 16, 17, 32, 33}) {
                failures += check_tile_order_of<128, 256>(multiprocessors, tiles_m, tiles_n);
                failures += check_tile_order_of<64, 128>(multiprocessors, tiles_m, tiles_n);
                grids += 2;
            }
    kcs_hopper::tile_walk walk = kcs_hopper::tiles_of(4096, 4096, 4096, true, 128, 256, 64);
    kcs_hopper::persistent_grid(132, walk, 128, 256);
    if (walk.group_rows != 16) {
        printf("FAIL tile order: 132 blocks of 128 x 256 tiles walk %d rows a group, not 16\n", walk.group_rows);
        failures++;
    }
    printf("tile order: %d grids, %d failures\n", grids, failures);
    return failures;
}

int main(int argc, char **argv)
{
    const int sm_count = 132;
    std::vector<test_case> cases = {
        {"m0", 0, 5, 7, 0, 0, 1, 0, 0, 0, 0},
        {"n0", 5, 0, 7, 0, 0, 1, 0, 0, 0, 0},
        {"k0", 5, 7, 0, 0, 0, 1, 0.5, 0, 0, 0},
        {"k0-beta0-nan-c", 6, 3, 0, 0, 0, 1, 0, 0, 1, 0},
        {"1x1x1", 1, 1, 1, 0, 0, 1, 1, 0, 0, 0},
        {"7x93x144", 7, 93, 144, 0, 0, 1, 0, 0, 0, 0},
        {"33x65x17", 33, 65, 17, 0, 0, 1, 1, 0, 0, 0},
        {"129x31x257", 129, 31, 257, 0, 0, 1, 0, 0, 0, 0},
        {"nn-37x29x19", 37, 29, 19, 0, 0, 1.5, -0.5, 0, 0, 0},
        {"nt-37x29x19", 37, 29, 19, 0, 1, 1.5, -0.5, 0, 0, 0},
        {"tn-37x29x19", 37, 29, 19, 1, 0, 1.5, -0.5, 0, 0, 0},
        {"tt-37x29x19", 37, 29, 19, 1, 1, 1.5, -0.5, 0, 0, 0},
        {"alpha0", 17, 23, 9, 0, 0, 0, 2, 0, 0, 0},
        {"alpha0-nan-a", 17, 23, 9, 0, 0, 0, -1.25, 1, 0, 0},
        {"beta0-nan-c", 33, 65, 17, 0, 0, 1, 0, 0, 1, 0},
        {"negative-alpha", 45, 19, 70, 0, 0, -2, 0.75, 0, 0, 0},
        {"special-a", 33, 65, 17, 0, 0, 1, 1, 2, 0, 0},
        {"integers", 65, 33, 100, 0, 0, 2, -1, 3, 3, 0},
        {"integers-tn", 65, 33, 100, 1, 0, 2, -1, 3, 3, 0},
        {"integers-nt", 31, 47, 1000, 0, 1, 3, 1, 3, 3, 0},
        // full tiles (f32 128x128x8, f64 128x64x8)
        {"full-nn", 256, 256, 40, 0, 0, 1, 0, 0, 0, 0},
        {"full-nt", 256, 256, 40, 0, 1, 0.5, 2, 0, 0, 0},
        {"full-tn", 256, 256, 40, 1, 0, 1, 0, 0, 0, 0},
        {"full-tt", 256, 256, 40, 1, 1, -1, 1, 0, 0, 0},
        {"full-beta0-nan-c", 128, 128, 16, 0, 0, 1, 0, 0, 1, 0},
        // vector edges: the row lengths of a and b as stored are multiples of 4
        {"vector-nn", 132, 100, 20, 0, 0, 1, 0.25, 0, 0, 0},
        {"vector-nt", 132, 100, 20, 0, 1, 1, 0.25, 0, 0, 0},
        {"vector-tn", 132, 100, 20, 1, 0, 1, 0.25, 0, 0, 0},
        {"vector-tt", 132, 100, 20, 1, 1, 1, 0.25, 0, 0, 0},
        {"vector-n-odd", 100, 132, 28, 0, 0, 1, 0, 0, 1, 0},
        {"vector-m-odd-ta", 36, 131, 12, 1, 0, 1, 1, 0, 0, 0},
        // misaligned pointers: scalar edges even where sizes would allow vectors
        {"misaligned-full-size", 128, 128, 16, 0, 0, 1, 1, 0, 0, 1},
        {"misaligned-tt", 128, 128, 16, 1, 1, 1, 1, 0, 0, 1},
        // split-k
        {"split-512", 512, 512, 512, 0, 0, 1, 0, 0, 0, 0},
        {"split-long-k", 64, 64, 4100, 0, 0, 1, 0.5, 0, 0, 0},
        {"split-long-k-tt", 20, 70, 3000, 1, 1, -1, 0, 0, 1, 0},
        {"split-long-k-full", 128, 128, 2048, 0, 1, 1, 1, 0, 0, 0},
    };
    if (argc > 2 && strcmp(argv[1], "random") == 0) {
        std::mt19937 rng(atoi(argv[2]));
        int failures = 0, count = argc > 3 ? atoi(argv[3]) : 40;
        for (int i = 0; i < count; i++) {
            auto size = [&](int most) { return (size_t)(rng() % 4 == 0 ? (rng() % 3 + 1) * 64 + (rng() % 3) * 4 : 1 + rng() % most); };
            test_case tc = {"random", size(300), size(300), size(rng() % 5 == 0 ? 3000 : 200), (int)(rng() % 2),
                            (int)(rng() % 2), rng() % 6 == 0 ? 0.0 : (double)((int)(rng() % 9) - 4) / 2,
                            (double)((int)(rng() % 5) - 2) / 4, 0, (int)(rng() % 4 == 0), (int)(rng() % 5 == 0)};
            if (tc.alpha == 0 && rng() % 2) tc.fill_a = 1;
            if (tc.fill_c == 1) tc.beta = 0;
            failures += run_every_type(tc, 1 + rng() % 132);
        }
        printf("%d failures\n", failures);
        return failures != 0;
    }
    int only = argc > 1 ? atoi(argv[1]) : -1;
    int failures = only < 0 ? check_tile_order() + check_descriptor_steps() : 0;
    for (size_t i = 0; i < cases.size(); i++) {
        if (only >= 0 && (int)i != only)
            continue;
        failures += run_every_type(cases[i], sm_count);
    }
    printf("%d failures\n", failures);
    return failures != 0;
}
