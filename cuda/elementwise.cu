/* elementwise.cu: add, mul, relu and sigmoid on CUDA, out[i] = f(x[i] [, y[i]])
 * (docs/elementwise.md), f16, bf16, f32 and f64.
 *
 * Inputs x (and y for add and mul): n elements; output out: n elements of the
 * same type, a separate buffer. One kernel template serves the four
 * functions, one row per function and type (the rows at the end of this file).
 *
 * Algorithm ("vector-grid", one pass): the arrays are read as 16-byte
 * vectors (float4, double2, or a uint4 holding 8 __half or __nv_bfloat16). Block b owns the KCS_ELEMENTWISE_LOADS_IN_FLIGHT
 * * KCS_ELEMENTWISE_THREADS consecutive vectors from b times that count;
 * thread t of it takes vectors t, t + T, t + 2T, ... of that run (T threads
 * a block), so each warp-wide load reads one contiguous 512 bytes, and each
 * thread issues its 128-bit loads of each input (__ldg) before it computes
 * and stores with 128-bit stores (for add and mul ptxas, holding to 40
 * registers, issues 6 of the 8 first and the last 2 after the first
 * result). The grid covers the whole array, as in opencl/elementwise.cl
 * (1.00 of the copy rate on an H200, where a grid-stride loop over one
 * wave of resident blocks gave 0.94); every block but the last works
 * without bounds checks, and the threads of the last block also do the elements before
 * out's first 16-byte boundary (none for cudaMalloc memory) and the last
 * (n - head) mod width, one by one. When x, y and out are not equally
 * misaligned (possible only for pointers into the middle of buffers), every
 * element is done one by one, each block taking the same number of
 * consecutive elements (width times as many blocks).
 *
 * Precision: each element is widened exactly to its compute type (kcs_widen,
 * cuda/half.cuh: float for f16 and bf16, the type itself for f32 and f64),
 * computed there, and rounded once to the storage type (kcs_narrow, cvt.rn),
 * no accumulation: the spec asks for f32 arithmetic and one final rounding
 * for the 16-bit types, and float's 24 bits keep their add and mul correctly
 * rounded after it (docs/elementwise.md). add and mul are single correctly
 * rounded operations (a lone product or sum: nothing for -fmad to contract). relu is
 * x < 0 ? 0 : x, so that relu(NaN) = NaN (fmax would give 0). sigmoid is
 * 1 / (1 + exp(-x)) with CUDA's expf (2 ulp) or exp (1 ulp), not __expf,
 * and the default IEEE divide (-prec-div=true; the build has no fast-math
 * flag): inside the 3-ulp exp and 2.5-ulp divide of the bound. It never
 * reaches inf/inf: exp(-x) overflows only to 1 / (1 + inf) = 0. Subnormals
 * are kept (the build does not use -ftz).
 *
 * Bytes: 3n or 2n elements; at n = 1e8 f32 the kernels are bound by memory
 * (sigmoid's exp and divide, about 30 instructions an element, stay under
 * the time of its 8 bytes). In f16 and bf16 the same arithmetic and two
 * conversions meet half the bytes: 8 elements per 16-byte access.
 *
 * Tunables (-D on the nvcc line): KCS_ELEMENTWISE_THREADS,
 * KCS_ELEMENTWISE_LOADS_IN_FLIGHT.
 *
 * Run only it: ./build/kcs run --backend cuda elementwise (one function:
 * 'elementwise/sigmoid-*'; add --benchmark to time the n = 1e8 cases).
 */
#include <climits>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common.cuh"
#include "vector_of.cuh" /* the 16-byte vector of each element type */

/* Threads per block: a multiple of 32, at most 1024. */
#ifndef KCS_ELEMENTWISE_THREADS
#define KCS_ELEMENTWISE_THREADS 256
#endif
/* 16-byte vectors of each input a thread loads before using the first. */
#ifndef KCS_ELEMENTWISE_LOADS_IN_FLIGHT
#define KCS_ELEMENTWISE_LOADS_IN_FLIGHT 4
#endif

namespace {

constexpr int threads_per_block = KCS_ELEMENTWISE_THREADS;
constexpr int loads_in_flight = KCS_ELEMENTWISE_LOADS_IN_FLIGHT;

static_assert(threads_per_block % 32 == 0 && threads_per_block <= 1024,
              "KCS_ELEMENTWISE_THREADS must be a multiple of 32, at most 1024");
static_assert(loads_in_flight > 0, "KCS_ELEMENTWISE_LOADS_IN_FLIGHT must be positive");

enum class function { add, mul, relu, sigmoid };

__host__ __device__ constexpr bool is_binary(function f)
{
    return f == function::add || f == function::mul;
}


__device__ __forceinline__ float exp_of(float value)
{
    return expf(value); /* 2 ulp; not __expf */
}

__device__ __forceinline__ double exp_of(double value)
{
    return exp(value); /* 1 ulp */
}

/* One element of f, in the compute type C of the storage type T, rounded
 * once to T; y is ignored by the unary functions. */
template <function F, typename T> __device__ __forceinline__ T apply(T x_stored, T y_stored)
{
    using C = kcs_compute<T>;
    const C x = kcs_widen(x_stored), y = kcs_widen(y_stored);
    if constexpr (F == function::add)
        return kcs_narrow<T>(x + y);
    else if constexpr (F == function::mul)
        return kcs_narrow<T>(x * y);
    else if constexpr (F == function::relu)
        return kcs_narrow<T>(x < C(0) ? C(0) : x); /* NaN < 0 is false: NaN stays NaN */
    else
        return kcs_narrow<T>(C(1) / (C(1) + exp_of(-x)));
}

/* f on each element of a 16-byte vector of T. */
template <function F, typename T>
__device__ __forceinline__ typename vector_of<T>::type apply_vector(typename vector_of<T>::type x,
                                                                    typename vector_of<T>::type y)
{
    if constexpr (std::is_same_v<T, float>) {
        return make_float4(apply<F>(x.x, y.x), apply<F>(x.y, y.y), apply<F>(x.z, y.z), apply<F>(x.w, y.w));
    } else if constexpr (std::is_same_v<T, double>) {
        return make_double2(apply<F>(x.x, y.x), apply<F>(x.y, y.y));
    } else { /* 8 16-bit elements in a uint4: unpacked and packed in registers */
        constexpr int width = vector_of<T>::width;
        T xs[width], ys[width], results[width];
        memcpy(xs, &x, sizeof x);
        memcpy(ys, &y, sizeof y);
#pragma unroll
        for (int k = 0; k < width; k++)
            results[k] = apply<F>(xs[k], ys[k]);
        typename vector_of<T>::type packed;
        memcpy(&packed, results, sizeof packed);
        return packed;
    }
}

/* Vectors (or, in the scalar fallback, elements) a block owns. */
constexpr int vectors_per_block = threads_per_block * loads_in_flight;

/* out = f(x [, y]). head: elements before out's first 16-byte boundary;
 * vectors: whether x, y and out share that misalignment (else all scalar).
 * The grid is the one run() computes: one block per run, the last partial. */
template <function F, typename T>
__global__ void __launch_bounds__(KCS_ELEMENTWISE_THREADS)
kcs_elementwise_vector_grid(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ out,
                            size_t n, size_t head, bool vectors)
{
    using vector = typename vector_of<T>::type;
    constexpr int width = vector_of<T>::width;
    constexpr bool binary = is_binary(F);
    const bool last_block = blockIdx.x == gridDim.x - 1;

    if (!vectors) {
        /* Block b: elements [b E, (b + 1) E), E = width * vectors_per_block. */
        constexpr int per_thread = width * loads_in_flight;
        const size_t first = (size_t)blockIdx.x * (per_thread * threads_per_block) + threadIdx.x;
#pragma unroll
        for (int k = 0; k < per_thread; k++) {
            const size_t i = first + (size_t)k * threads_per_block;
            if (i < n)
                out[i] = apply<F>(x[i], binary ? y[i] : x[i]);
        }
        return;
    }

    head = head < n ? head : n;
    const size_t vector_count = (n - head) / width;
    const vector *__restrict__ xv = reinterpret_cast<const vector *>(x + head);
    const vector *__restrict__ yv = binary ? reinterpret_cast<const vector *>(y + head) : nullptr;
    vector *__restrict__ outv = reinterpret_cast<vector *>(out + head);
    const size_t first = (size_t)blockIdx.x * vectors_per_block + threadIdx.x;

    if (!last_block) {
        /* A whole run of vectors_per_block vectors: no bounds checks. */
        vector a[loads_in_flight], b[loads_in_flight];
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++) {
            a[k] = __ldg(xv + first + k * threads_per_block);
            if constexpr (binary)
                b[k] = __ldg(yv + first + k * threads_per_block);
            else
                b[k] = a[k];
        }
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++)
            outv[first + k * threads_per_block] = apply_vector<F, T>(a[k], b[k]);
        return;
    }

    /* The last block: the rest of the vectors, checked one by one ... */
#pragma unroll
    for (int k = 0; k < loads_in_flight; k++) {
        const size_t q = first + (size_t)k * threads_per_block;
        if (q < vector_count) {
            const vector a = __ldg(xv + q);
            outv[q] = apply_vector<F, T>(a, binary ? __ldg(yv + q) : a);
        }
    }
    /* ... then the head and the tail, one element a thread (at most
     * 2 (width - 1) of them, fewer than threads_per_block). */
    const size_t tail_start = head + vector_count * width;
    const size_t scalar_count = head + (n - tail_start);
    if (threadIdx.x < scalar_count) {
        const size_t i = threadIdx.x < head ? threadIdx.x : tail_start + (threadIdx.x - head);
        out[i] = apply<F>(x[i], binary ? y[i] : x[i]);
    }
}

template <function F, typename T> KCS_KERNEL_RUN(run)
{
    constexpr bool binary = is_binary(F);
    constexpr int width = vector_of<T>::width;
    const size_t n = args->elementwise.n;
    const T *x = nullptr, *y = nullptr;
    T *out = nullptr;
    size_t head = 0, blocks = 0;
    bool vectors = false;
    auto plan = [&]() -> kcs_status {
        x = (const T *)inputs[0]->data;
        y = binary ? (const T *)inputs[1]->data : nullptr;
        out = (T *)outputs[0]->data;
        const uintptr_t misalignment = reinterpret_cast<uintptr_t>(out) % 16;
        vectors = reinterpret_cast<uintptr_t>(x) % 16 == misalignment &&
                  (!binary || reinterpret_cast<uintptr_t>(y) % 16 == misalignment) && misalignment % sizeof(T) == 0;
        head = misalignment == 0 ? 0 : (16 - misalignment) / sizeof(T);

        /* One block per vectors_per_block vectors (elements in the scalar
         * fallback: width times as many blocks), at least one for the head and
         * tail; the last block checks bounds. */
        const size_t clamped_head = head < n ? head : n;
        const size_t units = vectors ? (n - clamped_head) / width : n;
        const size_t per_block = vectors ? (size_t)vectors_per_block : (size_t)vectors_per_block * width;
        blocks = units / per_block + (units % per_block != 0);
        blocks = blocks > 0 ? blocks : 1;
        if (blocks > (size_t)INT_MAX)
            return kcs_fail(err, KCS_ERROR, "%s: n = %zu needs more than %d blocks", args->op, n, INT_MAX);
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (n > 0) {
            kcs_elementwise_vector_grid<F, T><<<(unsigned int)blocks, threads_per_block, 0, device->stream>>>(
                x, y, out, n, head, vectors);
            KCS_CUDA_CHECK_LAUNCH("kcs_elementwise_vector_grid");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

} // namespace

static const kcs_kernel rows[] = {
    {"add", KCS_F16, "one-pass", "as f32 with 8 f16 a uint4, added in float, rounded once", run<function::add, __half>,
     NULL},
    {"add", KCS_BF16, "one-pass", "as f32 with 8 bf16 a uint4, added in float, rounded once",
     run<function::add, __nv_bfloat16>, NULL},
    {"add", KCS_F32, "one-pass", "float4, one pass: 4 loads of each input in flight, last block checked, scalar head and tail",
     run<function::add, float>, NULL},
    {"add", KCS_F64, "one-pass", "as f32 with double2", run<function::add, double>, NULL},
    {"mul", KCS_F16, "one-pass", "as f32 with 8 f16 a uint4, multiplied in float, rounded once",
     run<function::mul, __half>, NULL},
    {"mul", KCS_BF16, "one-pass", "as f32 with 8 bf16 a uint4, multiplied in float, rounded once",
     run<function::mul, __nv_bfloat16>, NULL},
    {"mul", KCS_F32, "one-pass", "float4, one pass: 4 loads of each input in flight, last block checked, scalar head and tail",
     run<function::mul, float>, NULL},
    {"mul", KCS_F64, "one-pass", "as f32 with double2", run<function::mul, double>, NULL},
    {"relu", KCS_F16, "one-pass", "as f32 with 8 f16 a uint4, in float", run<function::relu, __half>, NULL},
    {"relu", KCS_BF16, "one-pass", "as f32 with 8 bf16 a uint4, in float", run<function::relu, __nv_bfloat16>, NULL},
    {"relu", KCS_F32, "one-pass", "x < 0 ? 0 : x (NaN stays NaN), float4 one pass", run<function::relu, float>, NULL},
    {"relu", KCS_F64, "one-pass", "as f32 with double2", run<function::relu, double>, NULL},
    {"sigmoid", KCS_F16, "one-pass", "as f32 with 8 f16 a uint4: expf and IEEE divide in float, rounded once",
     run<function::sigmoid, __half>, NULL},
    {"sigmoid", KCS_BF16, "one-pass", "as f32 with 8 bf16 a uint4: expf and IEEE divide in float, rounded once",
     run<function::sigmoid, __nv_bfloat16>, NULL},
    {"sigmoid", KCS_F32, "one-pass", "1 / (1 + expf(-x)), IEEE divide, float4 one pass", run<function::sigmoid, float>,
     NULL},
    {"sigmoid", KCS_F64, "one-pass", "1 / (1 + exp(-x)), double2 one pass", run<function::sigmoid, double>, NULL},
};

extern "C" const kcs_kernel_table kcs_cuda_elementwise_kernels = KCS_KERNEL_TABLE(rows);
