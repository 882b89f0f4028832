/* gemm.c: launches the OpenCL GEMM of opencl/gemm.cl (docs/gemm.md):
 * C_out = alpha * op(A) * op(B) + beta * C, row-major, f32, f64, and f16 and
 * bf16 inputs accumulated in f32 with a 16-bit or (c_dtype=f32) f32 C_out.
 *
 * Two variants, the rows at the end of this file:
 *   packed-128x128 (the fast one): op(A) and op(B) packed k-major and
 *     zero-padded to whole tiles (two launches of kcs_gemm_pack, into the
 *     device's two scratch buffers), then kcs_gemm_tiled over the tiles of C:
 *     128 x 128 per work-group of 16 x 16 work-items, 8 x 8 outputs each in
 *     registers, slices of 16 (f32) or 8 (f64) along k in double-buffered
 *     local memory. Its kernel time covers the packing too.
 *   direct: kcs_gemm_direct, one work-item per element of C reading A and B
 *     as stored; a plain cross-check with nothing to tune.
 * f16 and bf16 run the f32 kernels, not twins of them: gemm.cl is built per
 * pair of storage types, its loads widen exactly to float (opencl/half.cl's
 * kcs_load_f16, kcs_load_bf16) and its stores round once (kcs_store_*), so
 * the products are exact and accumulated in f32; the packed variant widens
 * while packing, so its packed operands (and scratch) are float.
 * Both handle alpha = 0 and k = 0 without reading A or B (the packed
 * variant launches kcs_gemm_scale instead), beta = 0 without reading C, and
 * m = 0 or n = 0 by launching a kernel that writes nothing (so that there is
 * an event to time).
 *
 * What is skipped, with the reason (supports): mode=tf32, which is cuBLAS's
 * tensor-core path (OpenCL has no TF32 arithmetic, and running the f32 path
 * under that name would report a TF32 rate that is not one); f64 where the
 * device lacks cl_khr_fp64; and on CPU devices (POCL) any GEMM of more than
 * 2^32 multiply-adds (the 4096^3 perf cases, 2^36, and the 8192x8192x128
 * attention shape, 2^33, whose direct kernel in bf16 ran for minutes a call
 * under POCL): at the GFLOP/s a CPU device reaches, one would take minutes
 * and hold up the main job.
 *
 * Run only it: build/kcs run --backend opencl gemm
 */
#include <inttypes.h>

#include "kcs_opencl.h"

/* Work-items along the rows and the columns of a tile of opencl/gemm.cl's tiled
 * kernel (8 x 8 outputs each: 128 x 128 tiles), passed to its build. */
#define KCS_OPENCL_GEMM_ITEMS_M 16
#define KCS_OPENCL_GEMM_ITEMS_N 16

/* Tile rows per band of opencl/gemm.cl's walk over the tiles of C, passed to its build. */
#define KCS_OPENCL_GEMM_GROUP_ROWS 8

/* The builds of opencl/gemm.cl, one program each: the case dtype, the dtype
 * of C and C_out, their KCS_GEMM_INPUT and KCS_GEMM_OUTPUT, the depth along
 * k of a slice in local memory (KCS_GEMM_TILE_K: half as deep in f64, the
 * same bytes), and the OpenCL type of the compute type: of the scalars
 * alpha and beta, and of the packed operands. */
#define KCS_OPENCL_GEMM_PRECISIONS(X)                                     \
    X(KCS_F32, KCS_F32, KCS_GEMM_F32, KCS_GEMM_F32, 16, cl_float)         \
    X(KCS_F64, KCS_F64, KCS_GEMM_F64, KCS_GEMM_F64, 8, cl_double)         \
    X(KCS_F16, KCS_F16, KCS_GEMM_F16, KCS_GEMM_F16, 16, cl_float)         \
    X(KCS_F16, KCS_F32, KCS_GEMM_F16, KCS_GEMM_F32, 16, cl_float)         \
    X(KCS_BF16, KCS_BF16, KCS_GEMM_BF16, KCS_GEMM_BF16, 16, cl_float)     \
    X(KCS_BF16, KCS_F32, KCS_GEMM_BF16, KCS_GEMM_F32, 16, cl_float)

KCS_OPENCL_EMBEDDED_SOURCE(gemm);

/* Sets kernel argument index to value rounded to the precision's real type:
 * set_cl_float, set_cl_double. */
#define KCS_OPENCL_GEMM_SET_REAL(real)                                                          \
    static kcs_status set_##real(cl_kernel kernel, cl_uint index, double value, kcs_error *err) \
    {                                                                                           \
        real rounded = (real)value;                                                             \
        KCS_OPENCL_CHECK(clSetKernelArg(kernel, index, sizeof rounded, &rounded), err);         \
        return KCS_OK;                                                                          \
    }
KCS_OPENCL_GEMM_SET_REAL(cl_float)
KCS_OPENCL_GEMM_SET_REAL(cl_double)

/* opencl/gemm.cl built for one pair of storage types, and what the host launches it with. */
typedef struct {
    kcs_dtype dtype, c_dtype;   /* the case dtype and the dtype of C and C_out it serves */
    size_t real_size;           /* bytes of the compute type (of a packed element) */
    kcs_opencl_program program; /* the source with that build's options */
    size_t tile_k;              /* KCS_GEMM_TILE_K of the build */
    /* Sets kernel argument index (alpha or beta) to value in the precision's type. */
    kcs_status (*set_real)(cl_kernel kernel, cl_uint index, double value, kcs_error *err);
} gemm_precision;

/* One precision of the list as an entry of precisions[] below. */
#define KCS_OPENCL_GEMM_BUILD(dtype, c_dtype, input, output, tile_k, real)                     \
    {dtype, c_dtype, sizeof(real),                                                              \
               KCS_OPENCL_PROGRAM(gemm, "-DKCS_GEMM_INPUT=" #input " -DKCS_GEMM_OUTPUT=" #output \
                                        " -DKCS_GEMM_TILE_K=" #tile_k                            \
                                        " -DKCS_GEMM_ITEMS_M="                                   \
                                        KCS_OPENCL_STRINGIFY(KCS_OPENCL_GEMM_ITEMS_M)            \
                                        " -DKCS_GEMM_ITEMS_N="                                   \
                                        KCS_OPENCL_STRINGIFY(KCS_OPENCL_GEMM_ITEMS_N)            \
                                        " -DKCS_GEMM_GROUP_ROWS="                                \
                                        KCS_OPENCL_STRINGIFY(KCS_OPENCL_GEMM_GROUP_ROWS)),       \
               tile_k, set_##real},

/* The builds of gemm.cl. */
static const gemm_precision precisions[] = {KCS_OPENCL_GEMM_PRECISIONS(KCS_OPENCL_GEMM_BUILD)};

/* The build for a case's dtype and C's dtype, or an error naming the pair. */
static kcs_status precision_of(const kcs_op_args *args, const gemm_precision **precision, kcs_error *err)
{
    kcs_dtype c_dtype = kcs_gemm_c_dtype(args);
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++)
        if (precisions[i].dtype == args->dtype && precisions[i].c_dtype == c_dtype) {
            *precision = &precisions[i];
            return KCS_OK;
        }
    return kcs_fail(err, KCS_UNSUPPORTED, "gemm: no OpenCL build for %s inputs with C in %s",
                    kcs_dtype_name(args->dtype), kcs_dtype_name(c_dtype));
}

enum {
    tiled_group_size = KCS_OPENCL_GEMM_ITEMS_M * KCS_OPENCL_GEMM_ITEMS_N,
    tile_m = 8 * KCS_OPENCL_GEMM_ITEMS_M,
    tile_n = 8 * KCS_OPENCL_GEMM_ITEMS_N,
    pack_tile = 32,       /* the edge of the square a pack work-group moves */
    pack_group_size = 256, /* its work-items (reqd_work_group_size in gemm.cl) */
    scale_group_size = 256,
    direct_group_size = 64,
};

/* Multiply-adds beyond which a CPU device skips a case (see the header). */
static const double cpu_most_multiply_adds = 0x1.0p32;

static size_t round_up(size_t a, size_t b)
{
    return (a + b - 1) / b * b;
}

/* KCS_UNSUPPORTED for mode=tf32, f64 without fp64, and on CPU devices beyond 2^32
 * multiply-adds. */
static KCS_KERNEL_SUPPORTS(gemm_supports)
{
    const kcs_gemm_args *g = &args->gemm;
    if (g->tf32)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "mode=tf32 is cuBLAS's tensor-core path; OpenCL has no TF32 arithmetic");
    if (args->dtype == KCS_F64 && !device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64");
    double multiply_adds = (double)g->m * (double)g->n * (double)g->k;
    if ((device->type & CL_DEVICE_TYPE_CPU) && multiply_adds > cpu_most_multiply_adds)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "%.3g multiply-adds is beyond what a CPU device does in reasonable time "
                        "(limit 2^32 on CPU devices)",
                        multiply_adds);
    return KCS_OK;
}

/* Fails with KCS_UNSUPPORTED when the device cannot run kernel in work-groups of size. */
static kcs_status require_group_size(kcs_device *device, cl_kernel kernel, const char *name, size_t size,
                                     kcs_error *err)
{
    size_t allowed = 0;
    kcs_status status = kcs_opencl_kernel_group_limit(device, kernel, &allowed, err);
    if (status != KCS_OK)
        return status;
    if (allowed < size)
        return kcs_fail(err, KCS_UNSUPPORTED, "%s needs work-groups of %zu, device allows %zu", name, size,
                        allowed);
    return KCS_OK;
}

/* c_out = beta * c over count elements (0 without reading c when beta = 0);
 * with count = 0 one work-group that writes nothing. */
static kcs_status enqueue_scale(kcs_device *device, const kcs_op_args *args, cl_mem c, cl_mem out,
                                size_t count, kcs_opencl_events *events, kcs_error *err)
{
    const gemm_precision *precision;
    cl_kernel kernel;
    kcs_status status = precision_of(args, &precision, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &precision->program, "kcs_gemm_scale", &kernel, err);
    if (status != KCS_OK)
        return status;
    cl_ulong count_argument = count;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof c, &c), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof out, &out), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof count_argument, &count_argument), err);
    status = precision->set_real(kernel, 3, args->gemm.beta, err);
    if (status != KCS_OK)
        return status;
    size_t local = 1;
    status = kcs_opencl_group_size(device, kernel, scale_group_size, &local, err);
    if (status != KCS_OK)
        return status;
    size_t global = round_up(count ? count : 1, local);
    return kcs_opencl_launch(device, kernel, global, local, events, err);
}

/* One operand packed k-major: packed[p][x] = op(X)[.][.] for p < count_k,
 * x < count_x, zeros up to padded_k x padded_x. across: the source is
 * stored count_x x count_k (so the pack transposes it). */
static kcs_status enqueue_pack(kcs_device *device, const gemm_precision *precision, cl_mem source,
                               size_t count_x, size_t count_k, int across, cl_mem packed, size_t padded_x,
                               size_t padded_k, kcs_opencl_events *events, kcs_error *err)
{
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &precision->program, "kcs_gemm_pack", &kernel, err);
    if (status == KCS_OK)
        status = require_group_size(device, kernel, "kcs_gemm_pack", pack_group_size, err);
    if (status != KCS_OK)
        return status;
    cl_ulong x_argument = count_x, k_argument = count_k, padded_x_argument = padded_x,
             padded_k_argument = padded_k;
    cl_int across_argument = across;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof source, &source), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof x_argument, &x_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof k_argument, &k_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof across_argument, &across_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof packed, &packed), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, sizeof padded_x_argument, &padded_x_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, sizeof padded_k_argument, &padded_k_argument), err);
    size_t groups = (padded_x / pack_tile) * ((padded_k + pack_tile - 1) / pack_tile);
    return kcs_opencl_launch(device, kernel, groups * pack_group_size, pack_group_size, events, err);
}

/* A scratch buffer for a packed operand, or KCS_UNSUPPORTED when it exceeds one allocation. */
static kcs_status packed_buffer(kcs_device *device, int slot, size_t bytes, cl_mem *memory, kcs_error *err)
{
    if (bytes > device->max_allocation)
        return kcs_fail(err, KCS_UNSUPPORTED, "a packed operand needs %zu bytes in one buffer, device allows %" PRIu64,
                        bytes, (uint64_t)device->max_allocation);
    return kcs_opencl_scratch(device, slot, bytes, memory, err);
}

static kcs_status enqueue_packed(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                 kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    cl_mem a = inputs[0]->memory, b = inputs[1]->memory, c = inputs[2]->memory, out = outputs[0]->memory;
    const kcs_gemm_args *g = &args->gemm;
    if (g->m == 0 || g->n == 0 || g->k == 0 || g->alpha == 0.0)
        return enqueue_scale(device, args, c, out, g->m * g->n, events, err);

    const gemm_precision *precision;
    kcs_status status = precision_of(args, &precision, err);
    if (status != KCS_OK)
        return status;
    size_t element = precision->real_size, tile_k = precision->tile_k;
    size_t padded_m = round_up(g->m, tile_m), padded_n = round_up(g->n, tile_n);
    size_t padded_k = round_up(g->k, tile_k);
    if (padded_m > UINT32_MAX / 2 || padded_n > UINT32_MAX / 2 || padded_k / tile_k > UINT32_MAX ||
        g->m > UINT32_MAX || g->n > UINT32_MAX)
        return kcs_fail(err, KCS_UNSUPPORTED, "m and n must be below 2^31 for the tiled kernel's indices");

    cl_mem packed_a, packed_b;
    cl_kernel kernel;
    status = packed_buffer(device, 0, padded_k * padded_m * element, &packed_a, err);
    if (status == KCS_OK)
        status = packed_buffer(device, 1, padded_k * padded_n * element, &packed_b, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &precision->program, "kcs_gemm_tiled", &kernel, err);
    if (status == KCS_OK)
        status = require_group_size(device, kernel, "kcs_gemm_tiled", tiled_group_size, err);
    if (status != KCS_OK)
        return status;

    /* op(A)[i][p] is a[i k + p] (N: read across the stored rows) or a[p m + i] (T);
     * op(B)[p][j] is b[p n + j] (N) or b[j k + p] (T: read across). */
    status = enqueue_pack(device, precision, a, g->m, g->k, !g->transpose_a, packed_a, padded_m, padded_k,
                          events, err);
    if (status == KCS_OK)
        status = enqueue_pack(device, precision, b, g->n, g->k, g->transpose_b, packed_b, padded_n, padded_k,
                              events, err);
    if (status != KCS_OK)
        return status;

    cl_uint tiles_k = (cl_uint)(padded_k / tile_k), pm = (cl_uint)padded_m, pn = (cl_uint)padded_n;
    cl_uint m = (cl_uint)g->m, n = (cl_uint)g->n;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof packed_a, &packed_a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof packed_b, &packed_b), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof tiles_k, &tiles_k), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof pm, &pm), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof pn, &pn), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, sizeof c, &c), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, sizeof out, &out), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 7, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 8, sizeof n, &n), err);
    status = precision->set_real(kernel, 9, g->alpha, err);
    if (status == KCS_OK)
        status = precision->set_real(kernel, 10, g->beta, err);
    if (status != KCS_OK)
        return status;
    size_t groups = (padded_m / tile_m) * (padded_n / tile_n);
    return kcs_opencl_launch(device, kernel, groups * tiled_group_size, tiled_group_size, events, err);
}

static kcs_status enqueue_direct(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                 kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    cl_mem a = inputs[0]->memory, b = inputs[1]->memory, c = inputs[2]->memory, out = outputs[0]->memory;
    const kcs_gemm_args *g = &args->gemm;
    const gemm_precision *precision;
    cl_kernel kernel;
    kcs_status status = precision_of(args, &precision, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &precision->program, "kcs_gemm_direct", &kernel, err);
    if (status != KCS_OK)
        return status;
    cl_ulong m = g->m, n = g->n, k = g->k;
    cl_int transpose_a = g->transpose_a, transpose_b = g->transpose_b;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof b, &b), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof c, &c), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof out, &out), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, sizeof k, &k), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 7, sizeof transpose_a, &transpose_a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 8, sizeof transpose_b, &transpose_b), err);
    status = precision->set_real(kernel, 9, g->alpha, err);
    if (status == KCS_OK)
        status = precision->set_real(kernel, 10, g->beta, err);
    size_t local = 1;
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, kernel, direct_group_size, &local, err);
    if (status != KCS_OK)
        return status;
    size_t count = g->m * g->n;
    return kcs_opencl_launch(device, kernel, round_up(count ? count : 1, local), local, events, err);
}

/* gemm, fast: operands packed k-major and padded, then 128 x 128 tiles, 8 x 8 per work-item. */
static KCS_KERNEL_RUN(gemm_packed)
{
    return kcs_opencl_timed(enqueue_packed, device, args, inputs, outputs, kernel_seconds, err);
}

/* gemm, simple: one work-item per element of C, reading A and B as stored. */
static KCS_KERNEL_RUN(gemm_direct)
{
    return kcs_opencl_timed(enqueue_direct, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"gemm", KCS_F32, "packed-128x128",
     "op(A), op(B) packed k-major and zero-padded, then 128x128 tiles, 8x8 per work-item, k slices of 16 "
     "double-buffered in local memory",
     gemm_packed, gemm_supports},
    {"gemm", KCS_F64, "packed-128x128", "as f32, k slices of 8", gemm_packed, gemm_supports},
    {"gemm", KCS_F32, "direct", "one work-item per element of C, its dot product read from A and B as stored",
     gemm_direct, gemm_supports},
    {"gemm", KCS_F64, "direct", "as f32", gemm_direct, gemm_supports},
    {"gemm", KCS_F16, "packed-128x128", "as f32, widened to f32 while packing; C_out f16 or f32", gemm_packed,
     gemm_supports},
    {"gemm", KCS_BF16, "packed-128x128", "as f32, widened to f32 while packing; C_out bf16 or f32", gemm_packed,
     gemm_supports},
    {"gemm", KCS_F16, "direct", "as f32, f16 widened on load", gemm_direct, gemm_supports},
    {"gemm", KCS_BF16, "direct", "as f32, bf16 widened on load", gemm_direct, gemm_supports},
};

const kcs_kernel_table kcs_opencl_gemm_kernels = KCS_KERNEL_TABLE(rows);
