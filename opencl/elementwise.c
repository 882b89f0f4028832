/* elementwise.c: launches add, mul, relu and sigmoid of opencl/elementwise.cl
 * (docs/elementwise.md), f16, bf16, f32 and f64.
 *
 * One variant, "vectorized", a row per op and dtype at the end of this
 * file: one launch of ceil(ceil(n / W) / (G U)) work-groups of G =
 * KCS_OPENCL_ELEMENTWISE_GROUP_SIZE work-items, each work-item taking U =
 * KCS_OPENCL_ELEMENTWISE_VECTORS_PER_ITEM vectors of W elements (16 bytes:
 * float4, double2, 8 f16 or bf16 computed as a float8) and the work-item at the ragged end its last n % W elements one
 * by one. n = 0 still launches one work-group, which writes nothing, so that
 * there is an event to time. Unary ops get x as their unused second input.
 * f64 is skipped, with the reason, on a device without cl_khr_fp64; f16 and
 * bf16 need no extension (they are computed in float, converted by
 * opencl/half.cl).
 *
 * Run only it: build/kcs run --backend opencl add mul relu sigmoid
 */
#include <string.h>

#include "kcs_opencl.h"

/* Work-group size of opencl/elementwise.cl, passed to its build. */
#define KCS_OPENCL_ELEMENTWISE_GROUP_SIZE 256

/* Vectors (float4, double2) each work-item of opencl/elementwise.cl takes, passed to its build. */
#define KCS_OPENCL_ELEMENTWISE_VECTORS_PER_ITEM 4

/* The precisions opencl/elementwise.cl is built for, one program each: the
 * case dtype, the KCS_ELEMENTWISE_<name> its build defines, and the elements
 * of a 16-byte vector of it. */
#define KCS_OPENCL_ELEMENTWISE_PRECISIONS(X) \
    X(KCS_F16, F16, 8)                      \
    X(KCS_BF16, BF16, 8)                    \
    X(KCS_F32, F32, 4)                      \
    X(KCS_F64, F64, 2)

KCS_OPENCL_EMBEDDED_SOURCE(elementwise);

/* opencl/elementwise.cl built for one precision, and the width of its vectors. */
typedef struct {
    kcs_opencl_program program; /* the source with that precision's options */
    size_t width;               /* elements per vector load */
} elementwise_precision;

/* One precision of the list as an entry of precisions[] below. */
#define KCS_OPENCL_ELEMENTWISE_BUILD(dtype, name, vector_width)                                       \
    [dtype] = {KCS_OPENCL_PROGRAM(elementwise,                                                        \
                                  "-DKCS_ELEMENTWISE_" #name                                           \
                                  " -DKCS_ELEMENTWISE_GROUP_SIZE="                                     \
                                  KCS_OPENCL_STRINGIFY(KCS_OPENCL_ELEMENTWISE_GROUP_SIZE)              \
                                  " -DKCS_ELEMENTWISE_VECTORS_PER_ITEM="                               \
                                  KCS_OPENCL_STRINGIFY(KCS_OPENCL_ELEMENTWISE_VECTORS_PER_ITEM)),      \
               vector_width},

/* The builds of elementwise.cl, indexed by case dtype (the kernel rows name no other). */
static const elementwise_precision precisions[] = {
    KCS_OPENCL_ELEMENTWISE_PRECISIONS(KCS_OPENCL_ELEMENTWISE_BUILD)};

/* KCS_UNSUPPORTED for f64 without fp64. */
static KCS_KERNEL_SUPPORTS(elementwise_supports)
{
    if (args->dtype == KCS_F64 && !device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64");
    return KCS_OK;
}

/* The kernel of an op ("add" -> kcs_elementwise_add), or NULL for an op this file lacks. */
static const char *kernel_name(const char *op, int *binary)
{
    static const struct {
        const char *op;
        const char *kernel;
        int binary;
    } names[] = {
        {"add", "kcs_elementwise_add", 1},
        {"mul", "kcs_elementwise_mul", 1},
        {"relu", "kcs_elementwise_relu", 0},
        {"sigmoid", "kcs_elementwise_sigmoid", 0},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(names[i].op, op) == 0) {
            *binary = names[i].binary;
            return names[i].kernel;
        }
    }
    return NULL;
}

static kcs_status enqueue(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                          kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    int binary = 0;
    const char *name = kernel_name(args->op, &binary);
    if (!name)
        return kcs_fail(err, KCS_ERROR, "opencl/elementwise.c has no kernel for op %s", args->op);
    const elementwise_precision *precision = &precisions[args->dtype];
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &precision->program, name, &kernel, err);
    if (status != KCS_OK)
        return status;
    size_t group = KCS_OPENCL_ELEMENTWISE_GROUP_SIZE, allowed = 0;
    if ((status = kcs_opencl_kernel_group_limit(device, kernel, &allowed, err)) != KCS_OK)
        return status;
    if (allowed < group)
        return kcs_fail(err, KCS_UNSUPPORTED, "%s needs work-groups of %zu, device allows %zu", name, group,
                        allowed);

    size_t n = args->elementwise.n;
    size_t width = precision->width;
    size_t vectors = (n + width - 1) / width; /* the last one maybe partial */
    size_t per_group = group * KCS_OPENCL_ELEMENTWISE_VECTORS_PER_ITEM;
    size_t groups = (vectors + per_group - 1) / per_group;
    if (groups == 0)
        groups = 1;

    cl_mem x = inputs[0]->memory, y = binary ? inputs[1]->memory : x, out = outputs[0]->memory;
    cl_ulong n_argument = n;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof y, &y), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof out, &out), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof n_argument, &n_argument), err);
    return kcs_opencl_launch(device, kernel, groups * group, group, events, err);
}

/* add, mul, relu, sigmoid: vector loads, several per work-item, a scalar tail. */
static KCS_KERNEL_RUN(elementwise_vectorized)
{
    return kcs_opencl_timed(enqueue, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"add", KCS_F16, "vectorized", "8 f16 a load (vloada_half8), add in float, rounded once; scalar tail",
     elementwise_vectorized, elementwise_supports},
    {"add", KCS_BF16, "vectorized", "8 bf16 a load (ushort8), add in float, rounded once; scalar tail",
     elementwise_vectorized, elementwise_supports},
    {"add", KCS_F32, "vectorized", "float4 loads, 4 per work-item, scalar tail", elementwise_vectorized,
     elementwise_supports},
    {"add", KCS_F64, "vectorized", "double2 loads, 4 per work-item, scalar tail", elementwise_vectorized,
     elementwise_supports},
    {"mul", KCS_F16, "vectorized", "8 f16 a load (vloada_half8), multiply in float, rounded once; scalar tail",
     elementwise_vectorized, elementwise_supports},
    {"mul", KCS_BF16, "vectorized", "8 bf16 a load (ushort8), multiply in float, rounded once; scalar tail",
     elementwise_vectorized, elementwise_supports},
    {"mul", KCS_F32, "vectorized", "float4 loads, 4 per work-item, scalar tail", elementwise_vectorized,
     elementwise_supports},
    {"mul", KCS_F64, "vectorized", "double2 loads, 4 per work-item, scalar tail", elementwise_vectorized,
     elementwise_supports},
    {"relu", KCS_F16, "vectorized", "8 f16 a load, x < 0 ? 0 : x by select in float", elementwise_vectorized,
     elementwise_supports},
    {"relu", KCS_BF16, "vectorized", "8 bf16 a load, x < 0 ? 0 : x by select in float", elementwise_vectorized,
     elementwise_supports},
    {"relu", KCS_F32, "vectorized", "float4 loads, x < 0 ? 0 : x by select", elementwise_vectorized,
     elementwise_supports},
    {"relu", KCS_F64, "vectorized", "double2 loads, x < 0 ? 0 : x by select", elementwise_vectorized,
     elementwise_supports},
    {"sigmoid", KCS_F16, "vectorized", "8 f16 a load, 1 / (1 + exp(-x)) in float, rounded once",
     elementwise_vectorized, elementwise_supports},
    {"sigmoid", KCS_BF16, "vectorized", "8 bf16 a load, 1 / (1 + exp(-x)) in float, rounded once",
     elementwise_vectorized, elementwise_supports},
    {"sigmoid", KCS_F32, "vectorized", "float4 loads, 1 / (1 + exp(-x)), OpenCL exp (no native_)",
     elementwise_vectorized, elementwise_supports},
    {"sigmoid", KCS_F64, "vectorized", "double2 loads, 1 / (1 + exp(-x))", elementwise_vectorized,
     elementwise_supports},
};

const kcs_kernel_table kcs_opencl_elementwise_kernels = KCS_KERNEL_TABLE(rows);
