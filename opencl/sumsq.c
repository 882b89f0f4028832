/* sumsq.c: launches the OpenCL sum of squares of opencl/sumsq.cl (docs/sumsq.md).
 *
 * Two variants, the rows at the end of this file; both write s even for
 * n = 0 (their first pass then yields one zero partial, which the last pass
 * writes). The f32 and f64 rows carry double partials and need a device with
 * fp64; the f16 and bf16 rows carry float partials (opencl/sumsq.cl says
 * why) and run on any device.
 *
 *   gpu-strided-tree: enough work-groups to fill the device
 *     (groups_per_compute_unit per compute unit, fewer for small n), each
 *     writing one partial; further passes of the same shape add partials
 *     until few enough remain for one work-group, which writes s. The f16
 *     and bf16 rows do it in one launch when the first pass leaves few
 *     enough partials for one work-group (always, below n = 4 * 10^9 on an
 *     H100): the last work-group to finish adds them and writes s
 *     (opencl/sumsq.cl, KCS_SUMSQ_ONE_LAUNCH, says why that is valid); a
 *     second launch and the wait between the two cost more than that sum
 *     (docs/sumsq.md).
 *   cpu-contiguous-chunks: work_items_per_compute_unit work-items per
 *     compute unit, each summing a contiguous chunk; one work-item then adds
 *     the chunk sums and writes s.
 *
 * Depth of the summation tree (docs/sumsq.md allows a term to pass through
 * D(n) = min(n - 1, 2048 + ceil(log2 n)) additions):
 *   strided passes: a work-item takes at most most_per_work_item = 1024
 *     elements, 256 per running sum, so a term passes through at most
 *     256 + 2 (joining the four sums) + 8 (the tree of 256) = 266 additions
 *     in one pass; the last pass takes at most 256 * finish_per_work_item
 *     partials, 16 per running sum: at most 26. Passes in between run only
 *     when the first leaves more than 16384 partials (n > 4 * 10^9 on an
 *     H100), and each then divides the count by 15 or more. For 10^8
 *     elements on an H100 (132 compute units): 93 + 2 + 8 in the first
 *     pass, 2 + 2 + 8 in the last, 115 in all. The f16 and bf16 first pass
 *     reads eight elements a load into eight running sums, four terms of a
 *     load into each of two: at most 128 vectors a work-item, so at most 33
 *     loads (32 in the loop of four, 1 ragged) and 132 additions in a
 *     running sum, + 3 (joining the eight) + 1 (the ragged end) + 8 (the
 *     tree) = 144; for 10^8 elements on an H100, 47 vectors a work-item at
 *     most: 48 + 3 + 1 + 8 = 60 in the first pass. Its one-launch form adds
 *     the partials as the last pass does: 26 at most, 2 + 2 + 8 for 10^8.
 *   chunks: 128 in a vector lane (KCS_OPENCL_SUMSQ_BLOCK_LENGTH / 32), 5
 *     joining accumulators and lanes, then at most 2 * log2(blocks in a
 *     chunk) + 1 in the ladder, then the last pass over the chunk sums (a
 *     few per compute unit). For 10^8 elements on 2 cores: about 165.
 *
 * Run only it: build/kcs run --backend opencl sumsq
 */
#include "kcs_opencl.h"

/* Largest work-group of the tree kernels in opencl/sumsq.cl, passed to its build. */
#define KCS_OPENCL_SUMSQ_GROUP_SIZE 256

/* Elements a chunk work-item of opencl/sumsq.cl sums before its ladder, passed to its build. */
#define KCS_OPENCL_SUMSQ_BLOCK_LENGTH 4096

KCS_OPENCL_EMBEDDED_SOURCE(sumsq);

/* opencl/sumsq.cl: one program holds the kernels of both input types. */
static const kcs_opencl_program sumsq_program = KCS_OPENCL_PROGRAM(
    sumsq, "-DKCS_SUMSQ_GROUP_SIZE=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_SUMSQ_GROUP_SIZE)
           " -DKCS_SUMSQ_BLOCK_LENGTH=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_SUMSQ_BLOCK_LENGTH));

enum {
    /* Work-groups per compute unit for a full device: 8 groups of 256 are 2048
     * work-items, what an NVIDIA SM holds at once. */
    groups_per_compute_unit = 8,
    /* Fewest elements per work-item before a pass uses fewer work-groups. */
    least_per_work_item = 4,
    /* Most elements per work-item in one strided pass: keeps each running sum
     * at 256 additions whatever n is (more work-groups instead). */
    most_per_work_item = 1024,
    /* Most partials per work-item that the one-work-group last pass takes. */
    finish_per_work_item = 64,
    /* Chunks per compute unit. Under POCL on 2 cores, 1 to 8 per core ran
     * within 5% of each other (28.5-30 ms for 10^8 f64, at the memory
     * bandwidth two threads reach); 2 leaves a spare chunk for a core that
     * finishes early while the other is interrupted. */
    work_items_per_compute_unit = 2,
};

/* opencl/sumsq.cl's kernels for one input type (its one program holds every type). */
typedef struct {
    const char *groups; /* gpu-strided-tree's first pass: work-group partials of the squares */
    const char *chunks; /* cpu-contiguous-chunks' first pass: one partial per chunk */
    const char *add;    /* gpu-strided-tree's passes in between: partials of partials */
    const char *finish; /* both variants' last pass: adds the partials and writes s */
    size_t partial_bytes; /* one partial: a double, or a float for the 16-bit types */
    const char *one_launch; /* gpu-strided-tree's first and last pass in one, or NULL */
} sumsq_kernels;

/* The kernels, indexed by input dtype (the kernel rows name no other); an f64
 * sum is written as it is, the others rounded once to their type. */
static const sumsq_kernels kernels_of[] = {
    [KCS_F64] = {"kcs_sumsq_groups_f64", "kcs_sumsq_chunks_f64", "kcs_sumsq_add_partials",
                 "kcs_sumsq_add_partials", sizeof(cl_double)},
    [KCS_F32] = {"kcs_sumsq_groups_f32", "kcs_sumsq_chunks_f32", "kcs_sumsq_add_partials",
                 "kcs_sumsq_finish_f32", sizeof(cl_double)},
    [KCS_F16] = {"kcs_sumsq_groups_f16", "kcs_sumsq_chunks_f16", "kcs_sumsq_add_partials_float",
                 "kcs_sumsq_finish_f16", sizeof(cl_float), "kcs_sumsq_one_launch_f16"},
    [KCS_BF16] = {"kcs_sumsq_groups_bf16", "kcs_sumsq_chunks_bf16", "kcs_sumsq_add_partials_float",
                  "kcs_sumsq_finish_bf16", sizeof(cl_float), "kcs_sumsq_one_launch_bf16"},
};

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* KCS_UNSUPPORTED for f32 and f64 where the device has no fp64. */
static KCS_KERNEL_SUPPORTS(sumsq_supports)
{
    if (kernels_of[args->dtype].partial_bytes == sizeof(cl_double) && !device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64 (sumsq accumulates in f64)");
    return KCS_OK;
}

/* Sets a kernel's arguments: an input buffer, its element count and an output buffer. */
static kcs_status set_pass_args(cl_kernel kernel, cl_mem input, size_t count, cl_mem output,
                                kcs_error *err)
{
    cl_ulong count_argument = count;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof input, &input), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof count_argument, &count_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof output, &output), err);
    return KCS_OK;
}

/* Work-groups for one strided pass over count values in groups of local work-items. */
static size_t pass_groups(const kcs_device *device, size_t count, size_t local)
{
    size_t groups = ceil_div(count, local * least_per_work_item);
    size_t fill = (size_t)device->compute_units * groups_per_compute_unit;
    if (groups > fill)
        groups = fill;
    size_t shallow_enough = ceil_div(count, local * most_per_work_item);
    if (groups < shallow_enough)
        groups = shallow_enough;
    return groups ? groups : 1;
}

/* The last pass: one work-group of local work-items adds count partials and writes s. */
static kcs_status enqueue_finish(kcs_device *device, kcs_dtype dtype, cl_mem partials, size_t count,
                                 cl_mem output, size_t local, kcs_opencl_events *events,
                                 kcs_error *err)
{
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &sumsq_program, kernels_of[dtype].finish, &kernel, err);
    if (status == KCS_OK)
        status = set_pass_args(kernel, partials, count, output, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, kernel, local, local, events, err);
    return status;
}

/* The 16-bit gpu-strided-tree in one launch (opencl/sumsq.cl, KCS_SUMSQ_ONE_LAUNCH),
 * the last work-group to finish writing s; *launched is 0, and nothing is
 * enqueued, when its last work-group would have more partials to add than the
 * last pass takes (finish_per_work_item each; n beyond about 4 * 10^9 on an
 * H100), so that the depth stays the multi-pass path's. */
static kcs_status enqueue_one_launch(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                     kcs_buffer *const outputs[], kcs_opencl_events *events, int *launched,
                                     kcs_error *err)
{
    cl_mem input = inputs[0]->memory, output = outputs[0]->memory, state;
    cl_ulong n = args->sumsq.n;
    cl_kernel kernel;
    size_t local;
    *launched = 0;
    kcs_status status =
        kcs_opencl_kernel(device, &sumsq_program, kernels_of[args->dtype].one_launch, &kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, kernel, KCS_OPENCL_SUMSQ_GROUP_SIZE, &local, err);
    if (status != KCS_OK)
        return status;
    size_t groups = pass_groups(device, n, local);
    if (groups > local * finish_per_work_item)
        return KCS_OK;
    status = kcs_opencl_groups_done(device, groups * kernels_of[args->dtype].partial_bytes, &state, err);
    if (status != KCS_OK)
        return status;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof input, &input), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof state, &state), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof output, &output), err);
    *launched = 1;
    return kcs_opencl_launch(device, kernel, groups * local, local, events, err);
}

static kcs_status enqueue_strided_tree(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                       kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err)
{
    cl_mem input = inputs[0]->memory, output = outputs[0]->memory;
    size_t n = args->sumsq.n;
    cl_kernel first, add;
    size_t first_local, add_local;
    const sumsq_kernels *kernels = &kernels_of[args->dtype];
    /* The 16-bit rows in one launch where it fits: a second launch and the
     * wait between the two cost more than the last group's sum (docs/sumsq.md). */
    if (kernels->one_launch) {
        int launched;
        kcs_status status = enqueue_one_launch(device, args, inputs, outputs, events, &launched, err);
        if (status != KCS_OK || launched)
            return status;
    }
    kcs_status status = kcs_opencl_kernel(device, &sumsq_program, kernels->groups, &first, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &sumsq_program, kernels->add, &add, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, first, KCS_OPENCL_SUMSQ_GROUP_SIZE, &first_local, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, add, KCS_OPENCL_SUMSQ_GROUP_SIZE, &add_local, err);
    if (status != KCS_OK)
        return status;

    size_t groups = pass_groups(device, n, first_local);
    cl_mem partials;
    int slot = 0;
    status = kcs_opencl_scratch(device, slot, groups * kernels->partial_bytes, &partials, err);
    if (status == KCS_OK)
        status = set_pass_args(first, input, n, partials, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, first, groups * first_local, first_local, events, err);

    /* Only a device whose first pass leaves more partials than one work-group
     * takes (n beyond about 10^9 on a large GPU) needs passes in between. */
    size_t count = groups;
    while (status == KCS_OK && count > add_local * finish_per_work_item) {
        size_t next_groups = pass_groups(device, count, add_local);
        cl_mem sums = NULL;
        status = kcs_opencl_scratch(device, 1 - slot, next_groups * kernels->partial_bytes, &sums, err);
        if (status == KCS_OK)
            status = set_pass_args(add, partials, count, sums, err);
        if (status == KCS_OK)
            status = kcs_opencl_launch(device, add, next_groups * add_local, add_local, events, err);
        partials = sums;
        slot = 1 - slot;
        count = next_groups;
    }
    if (status == KCS_OK)
        status = enqueue_finish(device, args->dtype, partials, count, output, add_local, events, err);
    return status;
}

static kcs_status enqueue_contiguous_chunks(kcs_device *device, const kcs_op_args *args,
                                            kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                            kcs_opencl_events *events, kcs_error *err)
{
    cl_mem input = inputs[0]->memory, output = outputs[0]->memory;
    size_t n = args->sumsq.n;
    size_t wanted = (size_t)device->compute_units * work_items_per_compute_unit;
    size_t chunk_length = ceil_div(ceil_div(n, wanted ? wanted : 1), KCS_OPENCL_SUMSQ_BLOCK_LENGTH) *
                          KCS_OPENCL_SUMSQ_BLOCK_LENGTH;
    if (chunk_length == 0)
        chunk_length = KCS_OPENCL_SUMSQ_BLOCK_LENGTH;
    size_t items = ceil_div(n, chunk_length);
    if (items == 0)
        items = 1; /* n = 0: one work-item writes the zero partial */

    cl_kernel kernel;
    cl_mem partials;
    cl_ulong n_argument = n, chunk_argument = chunk_length;
    kcs_status status =
        kcs_opencl_kernel(device, &sumsq_program, kernels_of[args->dtype].chunks, &kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_scratch(device, 0, items * kernels_of[args->dtype].partial_bytes, &partials, err);
    if (status != KCS_OK)
        return status;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof input, &input), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof n_argument, &n_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof chunk_argument, &chunk_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof partials, &partials), err);
    /* Work-groups of one: a CPU device runs each work-group on one thread. */
    status = kcs_opencl_launch(device, kernel, items, 1, events, err);
    if (status == KCS_OK)
        status = enqueue_finish(device, args->dtype, partials, items, output, 1, events, err);
    return status;
}

/* sumsq, shaped for GPUs: strided work-items, a local-memory tree, partials in passes. */
static KCS_KERNEL_RUN(sumsq_strided_tree)
{
    return kcs_opencl_timed(enqueue_strided_tree, device, args, inputs, outputs, kernel_seconds, err);
}

/* sumsq, shaped for CPU devices: a few work-items, each a contiguous chunk in vectors. */
static KCS_KERNEL_RUN(sumsq_contiguous_chunks)
{
    return kcs_opencl_timed(enqueue_contiguous_chunks, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"sumsq", KCS_F64, "gpu-strided-tree",
     "strided work-items, four f64 sums each, local-memory tree, partials added in a second pass",
     sumsq_strided_tree, sumsq_supports},
    {"sumsq", KCS_F32, "gpu-strided-tree", "as f64, squares and sums in f64, rounded once to f32",
     sumsq_strided_tree, sumsq_supports},
    {"sumsq", KCS_F64, "cpu-contiguous-chunks",
     "a few work-items, each a contiguous chunk in double8 blocks added pairwise, then combined",
     sumsq_contiguous_chunks, sumsq_supports},
    {"sumsq", KCS_F32, "cpu-contiguous-chunks", "as f64, float8 loads widened to double8",
     sumsq_contiguous_chunks, sumsq_supports},
    {"sumsq", KCS_F16, "gpu-strided-tree", "as f64, squares and sums in f32, rounded once to f16",
     sumsq_strided_tree, sumsq_supports},
    {"sumsq", KCS_BF16, "gpu-strided-tree", "as f64, squares and sums in f32, rounded once to bf16",
     sumsq_strided_tree, sumsq_supports},
    {"sumsq", KCS_F16, "cpu-contiguous-chunks", "as f64, vload_half8 to float8, sums in f32",
     sumsq_contiguous_chunks, sumsq_supports},
    {"sumsq", KCS_BF16, "cpu-contiguous-chunks", "as f64, ushort8 loads widened to float8, sums in f32",
     sumsq_contiguous_chunks, sumsq_supports},
};

const kcs_kernel_table kcs_opencl_sumsq_kernels = KCS_KERNEL_TABLE(rows);
