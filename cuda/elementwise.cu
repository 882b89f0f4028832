/* elementwise.cu: add, mul, relu and sigmoid on CUDA, out[i] = f(x[i] [, y[i]])
 * (docs/elementwise.md), f32 and f64.
 *
 * Inputs x (and y for add and mul): n elements; output out: n elements of the
 * same type, a separate buffer. One kernel template serves the four
 * functions, one row of backend.cu's table per function and type.
 *
 * Algorithm ("vector-grid"): a grid of whole waves of resident blocks; each
 * thread walks the arrays with a grid-wide stride in 16-byte vectors (float4,
 * double2), KCS_ELEMENTWISE_LOADS_IN_FLIGHT vectors of each input loaded
 * before the first is used, and stores 16-byte vectors. The elements before
 * out's first 16-byte boundary (none for cudaMalloc memory) and the last
 * n mod width are done one by one by the lowest threads. When x, y and out
 * are not equally misaligned (possible only for pointers into the middle of
 * buffers), every element goes through the scalar grid-stride loop instead.
 * The grid is one wave of resident blocks at most (fewer for small n).
 *
 * Precision: each element is one IEEE operation in its own type, no
 * accumulation. add and mul are single correctly rounded operations (a
 * lone product or sum: nothing for -fmad to contract). relu is
 * x < 0 ? 0 : x, so that relu(NaN) = NaN (fmax would give 0). sigmoid is
 * 1 / (1 + exp(-x)) with CUDA's expf (2 ulp) or exp (1 ulp), not __expf,
 * and the default IEEE divide (-prec-div=true; the build has no fast-math
 * flag): inside the 3-ulp exp and 2.5-ulp divide of the bound. It never
 * reaches inf/inf: exp(-x) overflows only to 1 / (1 + inf) = 0. Subnormals
 * are kept (the build does not use -ftz).
 *
 * Bytes: 3n or 2n elements; at n = 1e8 f32 the kernels are bound by memory
 * (sigmoid's exp and divide, about 30 instructions an element, stay under
 * the time of its 8 bytes).
 *
 * Tunables (-D on the nvcc line): KCS_ELEMENTWISE_THREADS,
 * KCS_ELEMENTWISE_LOADS_IN_FLIGHT.
 *
 * Run only it: ./build/kcs run --backend cuda add mul relu sigmoid
 * (add --benchmark to time the n = 1e8 cases).
 */
#include <climits>
#include <cstdint>

#include "common.cuh"

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

/* The 16-byte vector of each element type, and its components. */
template <typename T> struct vector_of;
template <> struct vector_of<float> {
    using type = float4;
    static constexpr int width = 4;
};
template <> struct vector_of<double> {
    using type = double2;
    static constexpr int width = 2;
};

__device__ __forceinline__ float exp_of(float value)
{
    return expf(value); /* 2 ulp; not __expf */
}

__device__ __forceinline__ double exp_of(double value)
{
    return exp(value); /* 1 ulp */
}

/* One element of f; y is ignored by the unary functions. */
template <function F, typename T> __device__ __forceinline__ T apply(T x, T y)
{
    if constexpr (F == function::add)
        return x + y;
    else if constexpr (F == function::mul)
        return x * y;
    else if constexpr (F == function::relu)
        return x < T(0) ? T(0) : x; /* NaN < 0 is false: NaN stays NaN */
    else
        return T(1) / (T(1) + exp_of(-x));
}

template <function F> __device__ __forceinline__ float4 apply_vector(float4 x, float4 y)
{
    return make_float4(apply<F>(x.x, y.x), apply<F>(x.y, y.y), apply<F>(x.z, y.z), apply<F>(x.w, y.w));
}

template <function F> __device__ __forceinline__ double2 apply_vector(double2 x, double2 y)
{
    return make_double2(apply<F>(x.x, y.x), apply<F>(x.y, y.y));
}

/* out = f(x [, y]). head: elements before out's first 16-byte boundary;
 * vectors: whether x, y and out share that misalignment (else all scalar). */
template <function F, typename T>
__global__ void __launch_bounds__(KCS_ELEMENTWISE_THREADS)
kcs_elementwise_vector_grid(const T *__restrict__ x, const T *__restrict__ y, T *__restrict__ out,
                            size_t n, size_t head, bool vectors)
{
    using vector = typename vector_of<T>::type;
    constexpr int width = vector_of<T>::width;
    constexpr bool binary = is_binary(F);

    const size_t thread = (size_t)blockIdx.x * threads_per_block + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * threads_per_block;

    if (!vectors) {
        for (size_t i = thread; i < n; i += stride)
            out[i] = apply<F>(x[i], binary ? y[i] : T(0));
        return;
    }

    head = head < n ? head : n;
    const size_t vector_count = (n - head) / width;
    const size_t tail_start = head + vector_count * width;
    const size_t scalar_count = head + (n - tail_start);
    if (thread < scalar_count) {
        const size_t i = thread < head ? thread : tail_start + (thread - head);
        out[i] = apply<F>(x[i], binary ? y[i] : T(0));
    }

    const vector *xv = reinterpret_cast<const vector *>(x + head);
    const vector *yv = binary ? reinterpret_cast<const vector *>(y + head) : nullptr;
    vector *outv = reinterpret_cast<vector *>(out + head);
    size_t i = thread;
    for (; i + (loads_in_flight - 1) * stride < vector_count; i += loads_in_flight * stride) {
        vector a[loads_in_flight], b[loads_in_flight];
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++) {
            a[k] = __ldg(xv + i + k * stride);
            if constexpr (binary)
                b[k] = __ldg(yv + i + k * stride);
            else
                b[k] = a[k];
        }
#pragma unroll
        for (int k = 0; k < loads_in_flight; k++)
            outv[i + k * stride] = apply_vector<F>(a[k], b[k]);
    }
    for (; i < vector_count; i += stride) {
        const vector a = __ldg(xv + i);
        outv[i] = apply_vector<F>(a, binary ? __ldg(yv + i) : a);
    }
}

template <function F, typename T>
kcs_status run(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
               kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err)
{
    constexpr bool binary = is_binary(F);
    constexpr int width = vector_of<T>::width;
    const size_t n = args->elementwise.n;
    if (n > SIZE_MAX / sizeof(T))
        return kcs_fail(err, KCS_ERROR, "%s: n = %zu is too large", args->op, n);
    const size_t bytes = n * sizeof(T);
    if (inputs[0]->bytes < bytes || (binary && inputs[1]->bytes < bytes) || outputs[0]->bytes < bytes)
        return kcs_fail(err, KCS_ERROR, "%s: buffers smaller than n = %zu elements", args->op, n);
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;

    const T *x = (const T *)inputs[0]->data;
    const T *y = binary ? (const T *)inputs[1]->data : nullptr;
    T *out = (T *)outputs[0]->data;
    const uintptr_t misalignment = reinterpret_cast<uintptr_t>(out) % 16;
    const bool vectors = reinterpret_cast<uintptr_t>(x) % 16 == misalignment &&
                         (!binary || reinterpret_cast<uintptr_t>(y) % 16 == misalignment) &&
                         misalignment % sizeof(T) == 0;
    const size_t head = misalignment == 0 ? 0 : (16 - misalignment) / sizeof(T);

    int blocks_per_sm = 0;
    KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks_per_sm, kcs_elementwise_vector_grid<F, T>, threads_per_block, 0));
    const size_t resident = (size_t)(device->sm_count > 0 ? device->sm_count : 1) *
                            (size_t)(blocks_per_sm > 0 ? blocks_per_sm : 1);
    const size_t work_items = vectors ? n / width + 2 * width : n;
    size_t blocks = (work_items + threads_per_block - 1) / threads_per_block;
    blocks = blocks < resident ? blocks : resident;
    blocks = blocks > 0 ? blocks : 1;

    status = kcs_cuda_timer_start(device, err);
    if (status != KCS_OK)
        return status;
    if (n > 0) {
        kcs_elementwise_vector_grid<F, T><<<(unsigned int)blocks, threads_per_block, 0, device->stream>>>(
            x, y, out, n, head, vectors);
        KCS_CUDA_CHECK_LAUNCH("kcs_elementwise_vector_grid");
    }
    return kcs_cuda_timer_stop(device, kernel_seconds, err);
}

} // namespace

#define KCS_ELEMENTWISE_ROW(name, F, T)                                                           \
    kcs_status name(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],      \
                    kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err)         \
    {                                                                                             \
        return run<F, T>(device, args, inputs, outputs, kernel_seconds, err);                     \
    }

KCS_ELEMENTWISE_ROW(kcs_cuda_add_f32, function::add, float)
KCS_ELEMENTWISE_ROW(kcs_cuda_add_f64, function::add, double)
KCS_ELEMENTWISE_ROW(kcs_cuda_mul_f32, function::mul, float)
KCS_ELEMENTWISE_ROW(kcs_cuda_mul_f64, function::mul, double)
KCS_ELEMENTWISE_ROW(kcs_cuda_relu_f32, function::relu, float)
KCS_ELEMENTWISE_ROW(kcs_cuda_relu_f64, function::relu, double)
KCS_ELEMENTWISE_ROW(kcs_cuda_sigmoid_f32, function::sigmoid, float)
KCS_ELEMENTWISE_ROW(kcs_cuda_sigmoid_f64, function::sigmoid, double)
