/* elementwise.cl: add, mul, relu and sigmoid as OpenCL C 1.2 kernels
 * (docs/elementwise.md).
 *
 *   add      out[i] = x[i] + y[i]           one IEEE add: correctly rounded
 *   mul      out[i] = x[i] * y[i]           one IEEE multiply: correctly rounded
 *   relu     out[i] = x[i] < 0 ? 0 : x[i]   exact; NaN stays NaN (fmax would give 0)
 *   sigmoid  out[i] = 1 / (1 + exp(-x[i]))  exp within 3 ulp, divide within 2.5 ulp (f32)
 *
 * Precision. The program is built once per element type, with one of
 * KCS_ELEMENTWISE_F16, _BF16 or _F64 defined, or none for f32
 * (opencl/elementwise.c), so a device without fp64 still builds the others.
 * Each element is computed in its compute type: f32 and f64 in themselves,
 * f16 and bf16 in float (widened exactly at the load, rounded once to nearest
 * even at the store, by opencl/half.cl: no cl_khr_fp16 needed), because the
 * spec asks for f32 arithmetic and one final rounding, and float's 24 bits
 * keep add and mul correctly rounded after that rounding (docs/elementwise.md).
 * The bounds of docs/elementwise.md are
 * OpenCL's own limits without fast math: the host builds this file without
 * -cl-fast-relaxed-math, -cl-mad-enable or -cl-denorms-are-zero, it uses
 * exp rather than native_exp or half_exp, and it turns contraction off (there
 * is no a * b + c here to fuse, but a fused form would not be the IEEE
 * operation the bound of add and mul admits). Subnormals are kept: a device
 * that flushes them fails the subnormal cases, as the spec intends.
 *
 * Shape. One launch of work-groups of KCS_ELEMENTWISE_GROUP_SIZE work-items;
 * the arrays are read as vectors of KCS_ELEMENTWISE_WIDTH elements (float4,
 * double2, or 8 f16 or bf16 widened to a float8: 16 bytes, one 128-bit load
 * per work-item on a GPU). Work-group
 * g takes KCS_ELEMENTWISE_VECTORS_PER_ITEM * KCS_ELEMENTWISE_GROUP_SIZE
 * consecutive vectors; work-item l of it takes vectors l, l + G, l + 2G, ...
 * of that block (G the group size), so each load instruction of a warp reads
 * one contiguous run of memory, and each work-item has all its loads in
 * flight before it computes and stores. Every group but the last takes a
 * whole block without bounds checks; the last checks each vector, and the
 * work-item that meets the ragged end (n not a multiple of the width) does
 * its last n % width elements one by one. The buffers are cl_mem objects at
 * offset 0, aligned for any vector type (CL_DEVICE_MEM_BASE_ADDR_ALIGN), so
 * the vector accesses (through vector pointers, 16-byte ushort8 for f16 and
 * bf16) are aligned.
 *
 * Under POCL a work-group runs as a loop over its work-items on one thread:
 * the same block is then one contiguous stream, which suits a CPU too.
 *
 * The tunables below are #ifndef defaults, so the file compiles on its own;
 * the host passes its values with -D when it builds the program.
 *
 * Run only it: build/kcs run --backend opencl add mul relu sigmoid
 */
#pragma OPENCL FP_CONTRACT OFF

#ifndef KCS_ELEMENTWISE_GROUP_SIZE
/* Work-items per work-group: a multiple of every GPU's SIMD width. */
#define KCS_ELEMENTWISE_GROUP_SIZE 256
#endif

#ifndef KCS_ELEMENTWISE_VECTORS_PER_ITEM
/* Vectors each work-item loads before it computes: 4 loads of 16 bytes in
 * flight per work-item (per operand) hide memory latency on a GPU. */
#define KCS_ELEMENTWISE_VECTORS_PER_ITEM 4
#endif

/* The storage type of the arrays, the compute type real, its vector
 * real_vector of KCS_ELEMENTWISE_WIDTH elements (16 bytes of storage), and
 * how a vector (element q of the vectors) and an element (i) are loaded and
 * stored. */
#if defined(KCS_ELEMENTWISE_F64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double storage;
typedef double real;
typedef double2 real_vector;
typedef long2 real_mask; /* what comparing two real_vectors gives */
#define KCS_ELEMENTWISE_WIDTH 2
#elif defined(KCS_ELEMENTWISE_F16) || defined(KCS_ELEMENTWISE_BF16)
typedef float real;
typedef float8 real_vector;
typedef int8 real_mask;
#define KCS_ELEMENTWISE_WIDTH 8
#else /* f32 */
typedef float storage;
typedef float real;
typedef float4 real_vector;
typedef int4 real_mask;
#define KCS_ELEMENTWISE_WIDTH 4
#endif

#if defined(KCS_ELEMENTWISE_F16)
typedef half storage; /* a pointer target only: opencl/half.cl converts the bits */
#define KCS_LOAD_V(p, q) kcs_load_f16x8((p), (q))
#define KCS_STORE_V(p, q, v) kcs_store_f16x8((p), (q), (v))
#define KCS_LOAD_S(p, i) kcs_load_f16((p), (i))
#define KCS_STORE_S(p, i, v) kcs_store_f16((p), (i), (v))
#elif defined(KCS_ELEMENTWISE_BF16)
typedef ushort storage; /* bit patterns: opencl/half.cl converts */
#define KCS_LOAD_V(p, q) kcs_load_bf16x8((p), (q))
#define KCS_STORE_V(p, q, v) kcs_store_bf16x8((p), (q), (v))
#define KCS_LOAD_S(p, i) kcs_load_bf16((p), (i))
#define KCS_STORE_S(p, i, v) kcs_store_bf16((p), (i), (v))
#else
#define KCS_LOAD_V(p, q) (((global const real_vector *)(p))[q])
#define KCS_STORE_V(p, q, v) (((global real_vector *)(p))[q] = (v))
#define KCS_LOAD_S(p, i) ((p)[i])
#define KCS_STORE_S(p, i, v) ((p)[i] = (v))
#endif

#define KCS_GROUP KCS_ELEMENTWISE_GROUP_SIZE
#define KCS_UNROLL KCS_ELEMENTWISE_VECTORS_PER_ITEM

/* The four functions, for vectors (V) and for single elements (S). relu
 * compares x < 0, so that NaN (and -0) pass through unchanged. */
#define KCS_ADD_V(x, y) ((x) + (y))
#define KCS_ADD_S(x, y) ((x) + (y))
#define KCS_MUL_V(x, y) ((x) * (y))
#define KCS_MUL_S(x, y) ((x) * (y))
#define KCS_RELU_V(x, y) select((x), (real_vector)0, (real_mask)((x) < (real_vector)0))
#define KCS_RELU_S(x, y) ((x) < (real)0 ? (real)0 : (x))
/* sigmoid's divide, vector form. On NVIDIA's OpenCL (KCS_OPENCL_NVIDIA_SM,
 * defined by opencl/backend.c) for f16 it is PTX div.full.f32: within
 * 2 ulp over the full range, subnormals kept (the CUDA C++ Programming Guide's
 * bound for x / y built with -prec-div=false, which is this instruction), so
 * inside the 2.5 ulp that docs/elementwise.md's sigmoid bound allows OpenCL's
 * divide; NVIDIA's OpenCL compiles `/` to a slower sequence, and this took
 * the f16 sigmoid from 0.93-0.94 to 0.945-0.948 of copy on an H100. bf16
 * (0.952-0.958 of copy either way, two runs each: no gain), f32 and f64, and
 * every other device keep `/`. */
#if defined(KCS_OPENCL_NVIDIA_SM) && defined(KCS_ELEMENTWISE_F16)
inline float kcs_div_full(float a, float b)
{
    float q;
    asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a), "f"(b));
    return q;
}
inline float8 kcs_sigmoid8(float8 x)
{
    float8 d = 1.0f + exp(-x);
    return (float8)(kcs_div_full(1.0f, d.s0), kcs_div_full(1.0f, d.s1), kcs_div_full(1.0f, d.s2),
                    kcs_div_full(1.0f, d.s3), kcs_div_full(1.0f, d.s4), kcs_div_full(1.0f, d.s5),
                    kcs_div_full(1.0f, d.s6), kcs_div_full(1.0f, d.s7));
}
#define KCS_SIGMOID_V(x, y) kcs_sigmoid8(x)
#else
#define KCS_SIGMOID_V(x, y) ((real_vector)1 / ((real_vector)1 + exp(-(x))))
#endif
#define KCS_SIGMOID_S(x, y) ((real)1 / ((real)1 + exp(-(x))))

/* One kernel. y is read only when BINARY is 1 (unary kernels are given x
 * twice by the host, and never read the second). */
#define KCS_ELEMENTWISE_KERNEL(name, BINARY, F_V, F_S)                                   \
    __attribute__((reqd_work_group_size(KCS_GROUP, 1, 1)))                             \
    kernel void name(global const storage *x, global const storage *y,                \
                     global storage *out, ulong n)                                     \
    {                                                                                  \
        const ulong vectors = n / KCS_ELEMENTWISE_WIDTH;                               \
        const ulong block = (ulong)get_group_id(0) * (KCS_GROUP * KCS_UNROLL);         \
        const ulong first = block + get_local_id(0);                                   \
        if (block + KCS_GROUP * KCS_UNROLL <= vectors) {                               \
            real_vector xs[KCS_UNROLL], ys[KCS_UNROLL];                                \
            for (int u = 0; u < KCS_UNROLL; u++) {                                     \
                xs[u] = KCS_LOAD_V(x, first + u * KCS_GROUP);                          \
                ys[u] = BINARY ? KCS_LOAD_V(y, first + u * KCS_GROUP) : xs[u];         \
            }                                                                          \
            for (int u = 0; u < KCS_UNROLL; u++)                                       \
                KCS_STORE_V(out, first + u * KCS_GROUP, F_V(xs[u], ys[u]));            \
            return;                                                                    \
        }                                                                              \
        for (int u = 0; u < KCS_UNROLL; u++) {                                         \
            const ulong q = first + u * KCS_GROUP;                                     \
            if (q < vectors) {                                                         \
                real_vector a = KCS_LOAD_V(x, q), b = BINARY ? KCS_LOAD_V(y, q) : a;   \
                KCS_STORE_V(out, q, F_V(a, b));                                        \
            } else if (q == vectors) {                                                 \
                for (ulong i = q * KCS_ELEMENTWISE_WIDTH; i < n; i++) {                \
                    real a = KCS_LOAD_S(x, i), b = BINARY ? KCS_LOAD_S(y, i) : a;      \
                    KCS_STORE_S(out, i, F_S(a, b));                                    \
                }                                                                      \
            }                                                                          \
        }                                                                              \
    }

KCS_ELEMENTWISE_KERNEL(kcs_elementwise_add, 1, KCS_ADD_V, KCS_ADD_S)
KCS_ELEMENTWISE_KERNEL(kcs_elementwise_mul, 1, KCS_MUL_V, KCS_MUL_S)
KCS_ELEMENTWISE_KERNEL(kcs_elementwise_relu, 0, KCS_RELU_V, KCS_RELU_S)
KCS_ELEMENTWISE_KERNEL(kcs_elementwise_sigmoid, 0, KCS_SIGMOID_V, KCS_SIGMOID_S)
