/* softmax.c: launches the OpenCL softmax of opencl/softmax.cl (docs/softmax.md).
 *
 * Three variants, the rows at the end of this file; the kernels
 * and their numerics are described in opencl/softmax.cl.
 *
 *   group-registers: a row is split over row_items work-items, each holding
 *     V vectors of four elements in registers (V = 4, 8 or 16, one kernel
 *     each). V is the smallest that needs at most preferred_row_items
 *     work-items per row: a 128-column row takes 8 work-items, 32 rows to a
 *     work-group of 256; a 1024-column row 64, 4 rows to a group. Without
 *     sub-group operations every step of a row's tree is a barrier of the
 *     whole work-group, so fewer, fuller work-items per row mean fewer
 *     steps, and 4 vectors keep 64 bytes of loads in flight per work-item.
 *     Next the smallest V that needs at most local_row_items (256).
 *     Longer rows go to the kernel with local memory: 256 work-items a row
 *     and a work-group, each with KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS
 *     (24) vectors in registers and the rest of its share in local memory
 *     (32768 columns: 24 + 8 vectors, 32 KB a work-group, 127 registers a
 *     work-item on an H200, so two work-groups, two rows, share a compute
 *     unit and one's loads overlap the other's trees and stores). Where
 *     local memory is too small for the rest, the smallest V whose
 *     row_items the kernel can launch; failing that, group-online. Work-groups
 *     hold group_items / row_items rows.
 *   group-online: row_items work-items per row, each visiting at least
 *     online_least_pieces vectors of four where the row has them (as above,
 *     to shorten the trees), up to group_items work-items, more only to keep
 *     each at most most_online_pieces (the depth derivation in
 *     opencl/softmax.cl relies on it); reads a row twice.
 *   cpu-rows: work_items_per_compute_unit work-groups of one work-item per
 *     compute unit of a CPU device (more on a GPU, so that it is not
 *     pathologically slow there), each a contiguous block of rows.
 *
 * f16 and bf16 rows run the same kernels built for 16-bit storage (loads
 * widen to float, stores round once; opencl/softmax.cl), computed in f32
 * with f32's sizes, on every device: their conversions are core OpenCL 1.2
 * and integer operations, no cl_khr_fp16.
 *
 * f64 needs cl_khr_fp64: without it the f64 kernels are not built and
 * kcs_opencl_softmax_supports reports the skip. On CPU devices the two
 * group variants skip cases beyond 2^22 elements (the three perf shapes),
 * with that reason: cpu-rows runs them there (kcs_opencl_softmax_group_supports).
 *
 * Speed on NVIDIA's OpenCL (H200, medians against the copy rate measured in
 * the same run): group-registers 0.89 to 0.90 of copy on 32768 x 1024,
 * 0.94 on 4096 x 32768, 0.95 on 10^6 x 128; group-online 0.80, 0.62 and
 * 0.87. The register kernels were at 0.74, 0.57 and 0.80 until their loads
 * and their max were written as two loops: taking each vector's max right
 * after its load made every work-item wait for each load before issuing
 * the next (one 16-byte load in flight, as the SASS showed), which no
 * tuning of work-group sizes, rotations, persistent or split-row variants
 * (all tried, all 0.31 to 0.63 on the long rows) could hide.
 *
 * Run only it: build/kcs run --backend opencl softmax
 */
#include "kcs_opencl.h"

/* Vectors of four f32 elements that a work-item of opencl/softmax.cl's
 * group-registers kernel with local memory keeps in registers (f64: half as
 * many, the same bytes), passed to its build. */
#define KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS 24

/* Work-items of a row (and of a work-group) of that kernel, passed to its build. */
#define KCS_OPENCL_SOFTMAX_LOCAL_ROW_ITEMS 256

KCS_OPENCL_EMBEDDED_SOURCE(softmax);

/* opencl/softmax.cl: one program holds the kernels of every type. */
static const kcs_opencl_program softmax_program = KCS_OPENCL_PROGRAM(
    softmax, "-cl-fp32-correctly-rounded-divide-sqrt"
             " -DKCS_SOFTMAX_LOCAL_REGISTER_VECTORS="
             KCS_OPENCL_STRINGIFY(KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS)
             " -DKCS_SOFTMAX_LOCAL_ROW_ITEMS=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_SOFTMAX_LOCAL_ROW_ITEMS));

enum {
    /* Work-items per row that group-registers prefers not to exceed. */
    preferred_row_items = 128,
    /* Work-items a row of the group-registers kernel with local memory takes
     * (and the most a registers-only row takes before it is tried). */
    local_row_items = KCS_OPENCL_SOFTMAX_LOCAL_ROW_ITEMS,
    /* Most vectors of four (registers and local memory together) a work-item
     * of that kernel sums in one chain: the depth derivation in
     * opencl/softmax.cl relies on it where local memory is large (a CPU
     * device's); on a GPU's 48 KB it is 35 at most. */
    most_local_slots = 128,
    /* Work-items in a work-group whose rows are shorter than that: several
     * rows share a group, so short rows still fill a GPU's SIMD lanes. */
    group_items = 256,
    /* The largest work-group any kernel here asks for. */
    largest_group = 1024,
    /* Fewest and most vectors of four a group-online work-item visits in one
     * row (fewer only in rows too short to give each work-item that many). */
    online_least_pieces = 4,
    most_online_pieces = 128,
    /* cpu-rows: work-items per compute unit on a CPU device (POCL runs one
     * work-group at a time per thread), and on any other device. */
    work_items_per_compute_unit = 4,
    gpu_work_items_per_compute_unit = 256,
};

/* Elements beyond which the group kernels are left to GPUs on a CPU device:
 * under POCL, which runs a work-group's items one after another between
 * barriers, they took 0.2 to 2.9 s on the perf shapes (10^8 elements and
 * more) where cpu-rows took 0.1 to 0.35 s, and `ninja check` must stay quick
 * on a two-core machine. Every case below it runs all three variants. */
static const double cpu_most_group_elements = 0x1.0p22;

/* The vectors of four a work-item of each group-registers kernel holds, smallest first. */
static const size_t register_kernel_vectors[] = {4, 8, 16};
enum { register_kernel_count = sizeof register_kernel_vectors / sizeof register_kernel_vectors[0] };

/* opencl/softmax.cl's kernels for one case type (its one program holds both
 * types), and the sizes their launches depend on. */
typedef struct {
    size_t element;                               /* bytes per element of the compute type (local memory) */
    size_t local_register_vectors;                /* vectors in registers of the kernel with local memory */
    const char *registers[register_kernel_count]; /* group-registers, by register_kernel_vectors */
    const char *registers_local;                  /* group-registers with local memory */
    const char *online;                           /* group-online */
    const char *cpu_rows;                         /* cpu-rows */
} softmax_type;

/* The types, indexed by case dtype (the kernel rows name no other); f64
 * keeps half as many vectors in registers, the same bytes; f16 and bf16 are
 * computed, held and reduced in float, so they take f32's sizes. */
static const softmax_type types[] = {
    [KCS_F16] = {sizeof(cl_float), KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS,
                 {"kcs_softmax_registers_f16_v4", "kcs_softmax_registers_f16_v8",
                  "kcs_softmax_registers_f16_v16"},
                 "kcs_softmax_registers_local_f16", "kcs_softmax_online_f16", "kcs_softmax_cpu_rows_f16"},
    [KCS_BF16] = {sizeof(cl_float), KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS,
                  {"kcs_softmax_registers_bf16_v4", "kcs_softmax_registers_bf16_v8",
                   "kcs_softmax_registers_bf16_v16"},
                  "kcs_softmax_registers_local_bf16", "kcs_softmax_online_bf16", "kcs_softmax_cpu_rows_bf16"},
    [KCS_F32] = {sizeof(cl_float), KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS,
                 {"kcs_softmax_registers_f32_v4", "kcs_softmax_registers_f32_v8",
                  "kcs_softmax_registers_f32_v16"},
                 "kcs_softmax_registers_local_f32", "kcs_softmax_online_f32", "kcs_softmax_cpu_rows_f32"},
    [KCS_F64] = {sizeof(cl_double), KCS_OPENCL_SOFTMAX_LOCAL_REGISTER_VECTORS / 2,
                 {"kcs_softmax_registers_f64_v4", "kcs_softmax_registers_f64_v8",
                  "kcs_softmax_registers_f64_v16"},
                 "kcs_softmax_registers_local_f64", "kcs_softmax_online_f64", "kcs_softmax_cpu_rows_f64"},
};

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* The smallest power of two at least value (1 for 0). */
static size_t power_of_two_at_least(size_t value)
{
    size_t power = 1;
    while (power < value)
        power *= 2;
    return power;
}

/* KCS_UNSUPPORTED for f64 without fp64. */
static KCS_KERNEL_SUPPORTS(softmax_supports)
{
    if (args->dtype == KCS_F64 && !device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64 (f64 softmax)");
    return KCS_OK;
}

/* The group variants': as softmax_supports, and on CPU devices beyond 2^22 elements. */
static KCS_KERNEL_SUPPORTS(softmax_group_supports)
{
    double elements = (double)args->softmax.rows * (double)args->softmax.cols;
    if ((device->type & CL_DEVICE_TYPE_CPU) && elements > cpu_most_group_elements)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "a GPU-shaped kernel, left out on CPU devices beyond %.3g elements "
                        "(seconds under POCL; cpu-rows runs this case there)",
                        cpu_most_group_elements);
    return softmax_supports(device, args, err);
}

/* Sets x, y, rows, cols and (for the group kernels) row_items. */
static kcs_status set_common_args(cl_kernel kernel, cl_mem x, cl_mem y, const kcs_softmax_args *s,
                                  kcs_error *err)
{
    cl_ulong rows = s->rows, cols = s->cols;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof y, &y), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof rows, &rows), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof cols, &cols), err);
    return KCS_OK;
}

/* Launches a group kernel whose rows each take row_items of group work-items. */
static kcs_status launch_rows(kcs_device *device, cl_kernel kernel, const kcs_softmax_args *s,
                              size_t row_items, size_t group, kcs_opencl_events *events,
                              kcs_error *err)
{
    cl_uint row_items_argument = (cl_uint)row_items;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof row_items_argument, &row_items_argument),
                     err);
    size_t rows_per_group = group / row_items;
    size_t groups = ceil_div(s->rows, rows_per_group);
    return kcs_opencl_launch(device, kernel, groups * group, group, events, err);
}

/* The work-group for rows of row_items work-items: one row, or several short ones. */
static size_t group_for(size_t row_items, size_t allowed)
{
    size_t group = allowed < group_items ? allowed : group_items;
    return row_items > group ? row_items : group;
}

/* What every enqueue function below reads: the sizes, the dtype's kernels and
 * the buffers; an empty matrix launches nothing (kcs_opencl_timed then gives 0 s). */
#define SOFTMAX_OPERANDS                                                                           \
    const kcs_softmax_args *s = &args->softmax;                                                    \
    const softmax_type *type = &types[args->dtype];                                                \
    cl_mem x = inputs[0]->memory, y = outputs[0]->memory;                                          \
    if (s->rows == 0 || s->cols == 0)                                                              \
        return KCS_OK

static kcs_status enqueue_online(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                 kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    SOFTMAX_OPERANDS;
    cl_kernel kernel;
    size_t allowed;
    kcs_status status = kcs_opencl_kernel(device, &softmax_program, type->online, &kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, kernel, largest_group, &allowed, err);
    if (status != KCS_OK)
        return status;
    size_t pieces = ceil_div(s->cols, 4);
    size_t row_items = power_of_two_at_least(ceil_div(pieces, online_least_pieces));
    if (row_items > group_items)
        row_items = group_items;
    while (row_items * 2 <= allowed && pieces > row_items * most_online_pieces)
        row_items *= 2;
    if (row_items > allowed)
        row_items = allowed;
    size_t group = group_for(row_items, allowed);
    size_t element = type->element;
    status = set_common_args(kernel, x, y, s, err);
    if (status != KCS_OK)
        return status;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, group * element, NULL), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, group * element, NULL), err);
    return launch_rows(device, kernel, s, row_items, group, events, err);
}

/* Sets the held-vector arguments of a group-registers kernel: local memory for
 * held vectors of four per work-item of a work-group of group. Without held
 * vectors the kernel never touches it, and it is one vector, as OpenCL wants no
 * empty local arguments: a vector per work-item there took 32 KB of a 1024-item
 * f64 group for nothing, beyond the 32 KB some devices have (Oclgrind's). */
static kcs_status set_held_args(cl_kernel kernel, size_t group, size_t held, size_t element,
                                kcs_error *err)
{
    cl_uint held_argument = (cl_uint)held;
    size_t bytes = (held ? held * group : 1) * 4 * element;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, bytes, NULL), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 7, sizeof held_argument, &held_argument), err);
    return KCS_OK;
}

/* Launches a group-registers kernel: row_items work-items a row, each with held
 * vectors of four in local memory beside those in its registers. */
static kcs_status launch_registers(kcs_device *device, cl_kernel kernel, const kcs_softmax_args *s,
                                   const softmax_type *type, cl_mem x, cl_mem y, size_t row_items,
                                   size_t allowed, size_t held, kcs_opencl_events *events,
                                   kcs_error *err)
{
    size_t group = group_for(row_items, allowed);
    size_t element = type->element;
    kcs_status status = set_common_args(kernel, x, y, s, err);
    if (status == KCS_OK)
        status = set_held_args(kernel, group, held, element, err);
    if (status != KCS_OK)
        return status;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, group * element, NULL), err);
    return launch_rows(device, kernel, s, row_items, group, events, err);
}

static kcs_status enqueue_registers(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                    kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    SOFTMAX_OPERANDS;
    size_t pieces = ceil_div(s->cols, 4);
    size_t element = type->element;
    cl_kernel kernels[register_kernel_count], local_kernel;
    size_t allowed[register_kernel_count], local_allowed;
    for (int v = 0; v < register_kernel_count; v++) {
        kcs_status status = kcs_opencl_kernel(device, &softmax_program, type->registers[v], &kernels[v], err);
        if (status == KCS_OK)
            status = kcs_opencl_group_size(device, kernels[v], largest_group, &allowed[v], err);
        if (status != KCS_OK)
            return status;
    }
    kcs_status status =
        kcs_opencl_kernel(device, &softmax_program, type->registers_local, &local_kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, local_kernel, largest_group, &local_allowed, err);
    if (status != KCS_OK)
        return status;

    /* Registers only, in rows of at most preferred_row_items and then of at
     * most local_row_items work-items: the smallest V that does. */
    for (int pass = 0; pass < 2; pass++)
        for (int v = 0; v < register_kernel_count; v++) {
            size_t items = power_of_two_at_least(ceil_div(pieces, register_kernel_vectors[v]));
            size_t limit = pass == 0 ? preferred_row_items : local_row_items;
            if (items <= limit && items <= allowed[v])
                return launch_registers(device, kernels[v], s, type, x, y, items, allowed[v], 0,
                                        events, err);
        }
    /* Registers and local memory, local_row_items work-items a row. */
    size_t register_vectors = type->local_register_vectors;
    size_t slots = ceil_div(pieces, local_row_items);
    if (local_allowed >= local_row_items && slots <= most_local_slots) {
        size_t held = slots > register_vectors ? slots - register_vectors : 0;
        size_t group = group_for(local_row_items, local_allowed);
        size_t local_bytes = held * group * 4 * element + group * element;
        if (local_bytes <= device->local_memory)
            return launch_registers(device, local_kernel, s, type, x, y, local_row_items,
                                    local_allowed, held, events, err);
    }
    /* Registers only, as many work-items as the kernel can launch. */
    for (int v = 0; v < register_kernel_count; v++) {
        size_t items = power_of_two_at_least(ceil_div(pieces, register_kernel_vectors[v]));
        if (items <= allowed[v])
            return launch_registers(device, kernels[v], s, type, x, y, items, allowed[v], 0,
                                    events, err);
    }
    return enqueue_online(device, args, inputs, outputs, events, err);
}

static kcs_status enqueue_cpu_rows(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                   kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    SOFTMAX_OPERANDS;
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &softmax_program, type->cpu_rows, &kernel, err);
    if (status == KCS_OK)
        status = set_common_args(kernel, x, y, s, err);
    if (status != KCS_OK)
        return status;
    size_t per_unit = device->type & CL_DEVICE_TYPE_CPU ? work_items_per_compute_unit
                                                        : gpu_work_items_per_compute_unit;
    size_t wanted = (size_t)device->compute_units * per_unit;
    size_t rows_per_item = ceil_div(s->rows, wanted ? wanted : 1);
    size_t items = ceil_div(s->rows, rows_per_item);
    cl_ulong rows_per_item_argument = rows_per_item;
    KCS_OPENCL_CHECK(
        clSetKernelArg(kernel, 4, sizeof rows_per_item_argument, &rows_per_item_argument), err);
    /* Work-groups of one: a CPU device runs each work-group on one thread. */
    return kcs_opencl_launch(device, kernel, items, 1, events, err);
}

/* softmax: rows split over work-items that hold them in registers, read once
 * (online beyond that). */
static KCS_KERNEL_RUN(softmax_group_registers)
{
    return kcs_opencl_timed(enqueue_registers, device, args, inputs, outputs, kernel_seconds, err);
}

/* softmax: running max and rescaled sum per work-item, merged per row; reads a row twice. */
static KCS_KERNEL_RUN(softmax_group_online)
{
    return kcs_opencl_timed(enqueue_online, device, args, inputs, outputs, kernel_seconds, err);
}

/* softmax, shaped for CPU devices: a few work-items, each a block of rows in 8-wide vectors. */
static KCS_KERNEL_RUN(softmax_cpu_rows)
{
    return kcs_opencl_timed(enqueue_cpu_rows, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"softmax", KCS_F32, "group-registers",
     "a row over 1 to 1024 work-items, 16 to 64 elements each in registers (long rows: 256 items, 96 "
     "elements in registers and the rest in local memory), read once; local-memory trees",
     softmax_group_registers, softmax_group_supports},
    {"softmax", KCS_F64, "group-registers", "as f32, in double", softmax_group_registers,
     softmax_group_supports},
    {"softmax", KCS_F16, "group-registers", "as f32, loaded by vload_half4, stored by vstore_half4_rte",
     softmax_group_registers, softmax_group_supports},
    {"softmax", KCS_BF16, "group-registers", "as f32, loaded and stored as ushort4, rounded once",
     softmax_group_registers, softmax_group_supports},
    {"softmax", KCS_F32, "group-online",
     "a row over up to 1024 work-items, running max and rescaled sum merged in a tree; reads it twice",
     softmax_group_online, softmax_group_supports},
    {"softmax", KCS_F64, "group-online", "as f32, in double", softmax_group_online, softmax_group_supports},
    {"softmax", KCS_F16, "group-online", "as f32, loaded by vload_half4, stored by vstore_half4_rte",
     softmax_group_online, softmax_group_supports},
    {"softmax", KCS_BF16, "group-online", "as f32, loaded and stored as ushort4, rounded once",
     softmax_group_online, softmax_group_supports},
    {"softmax", KCS_F32, "cpu-rows", "a few work-items, each a block of rows in float8 sweeps",
     softmax_cpu_rows, softmax_supports},
    {"softmax", KCS_F64, "cpu-rows", "as f32, double8 sweeps", softmax_cpu_rows, softmax_supports},
    {"softmax", KCS_F16, "cpu-rows", "as f32, vload_half8 and vstore_half8_rte", softmax_cpu_rows,
     softmax_supports},
    {"softmax", KCS_BF16, "cpu-rows", "as f32, ushort8 widened and rounded once", softmax_cpu_rows,
     softmax_supports},
};

const kcs_kernel_table kcs_opencl_softmax_kernels = KCS_KERNEL_TABLE(rows);
