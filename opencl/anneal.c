/* anneal.c: launches the OpenCL anneal steps of opencl/anneal.cl (docs/anneal.md):
 * assign, reduce, update and energy, their kernel rows at the end of this
 * file. The kernels and their numerics are described in opencl/anneal.cl;
 * this file sizes and orders the launches.
 *
 *   assign (tiled-local): work-groups of KCS_OPENCL_ASSIGN_SIDE^2 work-items,
 *     one per tile of KCS_OPENCL_ASSIGN_SIDE * KCS_OPENCL_ASSIGN_MICRO points.
 *     On CPU devices a case beyond cpu_most_distance_terms multiply-adds
 *     (n m d) is reported unsupported: the perf case, 10^6 x 128 points
 *     against 1024 anchors, is 1.3 * 10^11 of them, minutes under POCL on
 *     the two cores of a CI machine, and GPU-sized by design.
 *   reduce (sorted-two-pass): five launches. Two walks of the points (count,
 *     then scatter) by walk_groups_per_compute_unit work-groups per compute
 *     unit, each a contiguous chunk (work-groups of one work-item on CPU
 *     devices, where the walk is then a plain sequential count: 0.5 s
 *     instead of 1.1 s for the perf case under POCL); the per-anchor totals;
 *     one work-group scanning the counts into offsets; and one work-group
 *     per anchor for its mean and variance. Scratch: slot 0 holds each
 *     walking group's private counts (groups x m ints), slot 1 the offsets
 *     (m ints) and the points sorted by anchor (n ints). Indices are int:
 *     n + m below 2^31.
 *   reduce (sorted-welford): the tile counting sort of opencl/anneal.cl
 *     (one launch) where reduce_items / 32 places per anchor fit in the
 *     device's local memory and the tiles are at most reduce_most_runs, else
 *     the walks above (the same order), then a work-group of reduce_items per
 *     anchor gathering its runs and reading its points once, in f64;
 *     reported unsupported without fp64. Scratch, tile sort: slot 0 the
 *     tiles' run starts (tiles x (m + 1) ints), slot 1 the tiles' sorted
 *     point numbers (n ints); walks: as above.
 *   update (elementwise): one work-item per element of the m x d anchors;
 *     lr T is formed on the host from the f32 roundings, as the reference does.
 *   energy (strided-tree-f64): as sumsq's gpu-strided-tree, the sum in double:
 *     enough work-groups to fill the device (fewer for small n, more where a
 *     work-item would otherwise sum more than most_per_work_item distances),
 *     then one work-group that adds the partials and writes e. Needs fp64.
 *
 * Run only it: build/kcs run --backend opencl anneal
 */
#include <stdint.h>

#include "kcs_opencl.h"

/* Work-items along each side of an assign work-group of opencl/anneal.cl, and the
 * points and anchors each takes (16 x 16 items, 8 x 8 each: 128-point tiles), passed to its build. */
#define KCS_OPENCL_ASSIGN_SIDE 16
#define KCS_OPENCL_ASSIGN_MICRO 8

/* The sorted-welford reduce of opencl/anneal.cl, passed to its build: its
 * work-groups (rows of 32 work-items), the points of a tile of its counting
 * sort, and the points a row of its statistics kernel has in flight. */
#define KCS_OPENCL_REDUCE_ITEMS 256
#define KCS_OPENCL_REDUCE_SORT_TILE 2048
#define KCS_OPENCL_REDUCE_UNROLL 8

KCS_OPENCL_EMBEDDED_SOURCE(anneal);

/* NVIDIA's compiler turns the shortlist kernel's reqd_work_group_size(256)
 * into .reqntid 256, which lets ptxas take up to 255 registers a work-item
 * and ignore -cl-nv-maxrregcount: the kernel took 197, one work-group a
 * compute unit. Where the device takes NVIDIA's options the kernel is built
 * without the attribute (KCS_SHORTLIST_REGISTER_CAP; it is still launched
 * 256 wide) and capped at 128 registers, two work-groups a compute unit
 * (ptxas on the driver's PTX spills 136 bytes): on an H100 the perf case's
 * shortlist pass went from 9.05 to 8.19 ms (8.41 without the attribute but
 * uncapped), 0.86 of the CUDA shortlist kernel's rate in the same run
 * (docs/anneal.md). */
#define KCS_OPENCL_SHORTLIST_NVIDIA "-DKCS_SHORTLIST_REGISTER_CAP -cl-nv-maxrregcount=128"

/* opencl/anneal.cl: one program holds the kernels of all four steps. */
static const kcs_opencl_program anneal_program = KCS_OPENCL_PROGRAM_NVIDIA(
    anneal, "-cl-fp32-correctly-rounded-divide-sqrt"
            " -DKCS_ASSIGN_SIDE=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_ASSIGN_SIDE)
            " -DKCS_ASSIGN_MICRO=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_ASSIGN_MICRO)
            " -DKCS_REDUCE_ITEMS=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_ITEMS)
            " -DKCS_REDUCE_SORT_TILE=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_SORT_TILE)
            " -DKCS_REDUCE_UNROLL=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_UNROLL),
    KCS_OPENCL_SHORTLIST_NVIDIA);

/* The same program with 16-deep shortlist stages (KCS_SHORTLIST_DEPTH in
 * opencl/anneal.cl): half the barriers of the default 8, for devices with
 * the local memory it needs (shortlist_local_bytes); only the shortlist pass
 * is taken from it. On an H100 through NVIDIA's OpenCL the perf case's pass
 * took 8.6 ms with 16-deep stages and 10.2 ms with 8 (docs/anneal.md). */
static const kcs_opencl_program anneal_deep_program = KCS_OPENCL_PROGRAM_NVIDIA(
    anneal, "-cl-fp32-correctly-rounded-divide-sqrt -DKCS_SHORTLIST_DEPTH=16"
            " -DKCS_ASSIGN_SIDE=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_ASSIGN_SIDE)
            " -DKCS_ASSIGN_MICRO=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_ASSIGN_MICRO)
            " -DKCS_REDUCE_ITEMS=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_ITEMS)
            " -DKCS_REDUCE_SORT_TILE=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_SORT_TILE)
            " -DKCS_REDUCE_UNROLL=" KCS_OPENCL_STRINGIFY(KCS_OPENCL_REDUCE_UNROLL),
    KCS_OPENCL_SHORTLIST_NVIDIA);

/* Local memory of the shortlist kernel with stages of depth dimensions:
 * two buffers of both operands' stages (rows padded to 132 floats), then the
 * final merge's runners-up (128 points x 16 work-items) and its three arrays of
 * 128 (the merge's other two arrays reuse the buffers). */
static size_t shortlist_local_bytes(size_t depth)
{
    return sizeof(cl_float) * (4 * depth * 132 + 128 * 16 + 3 * 128);
}

enum {
    /* The work-group of reduce, update and energy (the largest the kernels ask for). */
    group_items = 256,
    /* Walking work-groups per compute unit in reduce: few, since their private
     * counts (groups x m) are summed anchor by anchor in a loop over groups. */
    walk_groups_per_compute_unit = 1,
    /* sorted-welford: its work-groups (rows of 32), the points of a tile of its
     * counting sort, and the points a row of its statistics has in flight. */
    reduce_items = KCS_OPENCL_REDUCE_ITEMS,
    reduce_sort_tile = KCS_OPENCL_REDUCE_SORT_TILE,
    /* sorted-welford: the tiles whose runs its statistics kernel gathers at
     * most (KCS_REDUCE_RUNS of opencl/anneal.cl: 4 a work-item) */
    reduce_most_runs = 4 * KCS_OPENCL_REDUCE_ITEMS,
    /* energy: work-groups per compute unit for a full device, fewest distances
     * per work-item before fewer groups are used, most before more are. */
    energy_groups_per_compute_unit = 8,
    least_per_work_item = 4,
    most_per_work_item = 1024,
};

/* Multiply-adds (n m d) beyond which assign is left to GPUs on a CPU device. */
static const double cpu_most_distance_terms = 0x1.0p31;

/* The kernels of opencl/anneal.cl that differ by point type (its one program
 * holds both types; f16 points are widened by vload_half). */
typedef struct {
    const char *assign_tiles; /* assign, tiled-local */
    const char *assign_shortlist; /* assign, shortlist: the shortlist pass */
    const char *assign_list;      /* assign, shortlist: the direct pass over the flagged points */
    const char *reduce_stats; /* sorted-two-pass's last launch: per anchor, mean and variance */
    const char *reduce_welford; /* sorted-welford's last launch (needs fp64) */
} point_kernels;

/* The kernels, indexed by point dtype (the kernel rows name no other). */
static const point_kernels kernels_of[] = {
    [KCS_F32] = {"kcs_assign_tiles_f32", "kcs_assign_shortlist_f32", "kcs_assign_list_f32",
                 "kcs_reduce_stats_f32", "kcs_reduce_welford_f32"},
    [KCS_F16] = {"kcs_assign_tiles_f16", "kcs_assign_shortlist_f16", "kcs_assign_list_f16",
                 "kcs_reduce_stats_f16", "kcs_reduce_welford_f16"},
};

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* ---- assign ------------------------------------------------------------------- */

/* KCS_UNSUPPORTED for n >= 2^31, and on CPU devices beyond 2^31 n m d. */
static KCS_KERNEL_SUPPORTS(assign_supports)
{
    const kcs_anneal_args *s = &args->assign;
    if (s->n > INT32_MAX)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "assign here indexes points as int: n must be below 2^31");
    double terms = (double)s->n * (double)s->m * (double)s->d;
    if ((device->type & CL_DEVICE_TYPE_CPU) && terms > cpu_most_distance_terms)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "assign of %.3g multiply-adds (n m d) is GPU-sized; the tiled kernel is "
                        "left out on CPU devices beyond %.3g (minutes under POCL)",
                        terms, cpu_most_distance_terms);
    return KCS_OK;
}

static kcs_status enqueue_assign(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                 kcs_opencl_events *events, kcs_error *err)
{
    const kcs_anneal_args *s = &args->assign;
    if (s->n == 0)
        return KCS_OK;
    const size_t group = KCS_OPENCL_ASSIGN_SIDE * KCS_OPENCL_ASSIGN_SIDE;
    const size_t tile = KCS_OPENCL_ASSIGN_SIDE * KCS_OPENCL_ASSIGN_MICRO;
    cl_kernel kernel;
    size_t allowed;
    kcs_status status =
        kcs_opencl_kernel(device, &anneal_program, kernels_of[args->dtype].assign_tiles, &kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, kernel, group, &allowed, err);
    if (status != KCS_OK)
        return status;
    if (allowed < group)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "assign needs work-groups of %zu, the device allows %zu", group, allowed);
    cl_mem x = inputs[0]->memory, a = inputs[1]->memory;
    cl_mem idx = outputs[0]->memory, dist = outputs[1]->memory;
    cl_ulong n = s->n, d = s->d, m = s->m;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, sizeof idx, &idx), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, sizeof dist, &dist), err);
    return kcs_opencl_launch(device, kernel, ceil_div(s->n, tile) * group, group, events, err);
}

/* assign: 128 points x 128 anchors per tile through local memory, fused distance and argmin. */
static KCS_KERNEL_RUN(assign_tiled_local)
{
    return kcs_opencl_timed(enqueue_assign, device, args, inputs, outputs, kernel_seconds, err);
}

/* assign (shortlist): clear the state's words, the anchors' norms, the
 * shortlist pass over every point, then the direct tile kernel over the
 * flagged points (4 work-groups a compute unit looping over the list's tiles). Scratch: slot 0 the state (4 words, then the m norms), slot 1 the
 * flagged points (n). */
static kcs_status enqueue_assign_shortlist(kcs_device *device, const kcs_op_args *args,
                                           kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                           kcs_opencl_events *events, kcs_error *err)
{
    const kcs_anneal_args *s = &args->assign;
    if (s->n == 0)
        return KCS_OK;
    const size_t group = KCS_OPENCL_ASSIGN_SIDE * KCS_OPENCL_ASSIGN_SIDE;
    const size_t tile = KCS_OPENCL_ASSIGN_SIDE * KCS_OPENCL_ASSIGN_MICRO;
    cl_kernel clear, norms, shortlist, listed;
    size_t allowed_shortlist, allowed_listed;
    kcs_status status = kcs_opencl_kernel(device, &anneal_program, "kcs_assign_clear", &clear, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &anneal_program, "kcs_assign_anchor_norms", &norms, err);
    const kcs_opencl_program *shortlist_program =
        shortlist_local_bytes(16) <= device->local_memory ? &anneal_deep_program : &anneal_program;
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, shortlist_program, kernels_of[args->dtype].assign_shortlist,
                                   &shortlist, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &anneal_program, kernels_of[args->dtype].assign_list,
                                   &listed, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, shortlist, group, &allowed_shortlist, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, listed, group, &allowed_listed, err);
    if (status != KCS_OK)
        return status;
    if (allowed_shortlist < group || allowed_listed < group)
        return kcs_fail(err, KCS_UNSUPPORTED, "assign needs work-groups of %zu", group);
    cl_mem state, flagged;
    status = kcs_opencl_scratch(device, 0, (4 + s->m) * sizeof(cl_uint), &state, err);
    if (status == KCS_OK)
        status = kcs_opencl_scratch(device, 1, s->n * sizeof(cl_uint), &flagged, err);
    if (status != KCS_OK)
        return status;
    /* gamma(k) = k u / (1 - k u) in f32, u = 2^-24, rounded up by the factor
     * 1.0001; the margin and the norms' inflation as cuda/assign.cu derives them */
    const double u = 0x1.0p-24;
    const double gamma_d2 = (double)(s->d + 2) * u / (1.0 - (double)(s->d + 2) * u);
    cl_float margin_factor = (float)(4.0 * gamma_d2 * 1.0001);
    cl_float norm_inflation = (float)(1.0 + gamma_d2 + 4.0 * u + 0x1.0p-20);

    cl_mem x = inputs[0]->memory, a = inputs[1]->memory;
    cl_mem idx = outputs[0]->memory, dist = outputs[1]->memory;
    cl_ulong n = s->n, d = s->d, m = s->m;
    KCS_OPENCL_CHECK(clSetKernelArg(clear, 0, sizeof state, &state), err);
    KCS_OPENCL_CHECK(clSetKernelArg(norms, 0, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(norms, 1, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(norms, 2, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(norms, 3, sizeof state, &state), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 1, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 2, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 3, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 4, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 5, sizeof state, &state), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 6, sizeof margin_factor, &margin_factor), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 7, sizeof norm_inflation, &norm_inflation), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 8, sizeof idx, &idx), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 9, sizeof dist, &dist), err);
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 10, sizeof flagged, &flagged), err);
    /* rows of 4k elements: every row aligned for one vector load of 4 */
    cl_int vectors = s->d % 4 == 0;
    KCS_OPENCL_CHECK(clSetKernelArg(shortlist, 11, sizeof vectors, &vectors), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 1, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 2, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 3, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 4, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 5, sizeof flagged, &flagged), err);
    /* the flagged count: the second word of state */
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 6, sizeof state, &state), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 7, sizeof idx, &idx), err);
    KCS_OPENCL_CHECK(clSetKernelArg(listed, 8, sizeof dist, &dist), err);

    status = kcs_opencl_launch(device, clear, 2, 1, events, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, norms, ceil_div(s->m, group_items) * group_items,
                                   group_items, events, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, shortlist, ceil_div(s->n, tile) * group, group, events,
                                   err);
    /* the flagged points are usually a few thousand: a few work-groups a
     * compute unit, each looping over tiles of the list while any are left */
    size_t list_groups = ceil_div(s->n, tile);
    size_t fill = (size_t)(device->compute_units ? device->compute_units : 1) * 4;
    if (list_groups > fill)
        list_groups = fill;
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, listed, list_groups * group, group, events, err);
    return status;
}

/* assign: ||a||^2 - 2 x.a ranks anchors with one FMA a term; points whose runner-up lies within
 * the derived margin are redone by the direct tile kernel. */
static KCS_KERNEL_RUN(assign_shortlist)
{
    return kcs_opencl_timed(enqueue_assign_shortlist, device, args, inputs, outputs, kernel_seconds,
                            err);
}

/* ---- reduce ------------------------------------------------------------------- */

/* KCS_UNSUPPORTED for n + m >= 2^31. */
static KCS_KERNEL_SUPPORTS(reduce_supports)
{
    (void)device;
    const kcs_anneal_args *s = &args->reduce;
    if (s->n + s->m > INT32_MAX || s->m > UINT32_MAX)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "reduce here sorts points by int index: n + m must be below 2^31");
    return KCS_OK;
}

/* The smallest power of two at least value (1 for 0). */
static size_t power_of_two_at_least(size_t value)
{
    size_t power = 1;
    while (power < value)
        power *= 2;
    return power;
}

/* One walk over the points: count (scatter 0) or place (scatter 1). */
static kcs_status enqueue_walk(kcs_device *device, cl_kernel walk, int scatter, size_t groups,
                               size_t local, kcs_opencl_events *events, kcs_error *err)
{
    cl_int scatter_argument = scatter;
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 6, sizeof scatter_argument, &scatter_argument), err);
    return kcs_opencl_launch(device, walk, groups * local, local, events, err);
}

/* Sorts the points by anchor with the two walks: count[j], and sorted =
 * offsets (m ints: where anchor j's points begin) then order (n ints: the
 * point numbers, each anchor's in increasing order). Any m. */
static kcs_status enqueue_walk_sort(kcs_device *device, const kcs_anneal_args *s, cl_mem idx,
                                    cl_mem count, cl_mem *sorted_out, kcs_opencl_events *events,
                                    kcs_error *err)
{
    cl_kernel walk, totals, offsets;
    size_t walk_local, totals_local, offsets_local;
    kcs_status status =
        kcs_opencl_kernel(device, &anneal_program, "kcs_reduce_walk", &walk, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &anneal_program, "kcs_reduce_anchor_totals",
                                   &totals, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &anneal_program, "kcs_reduce_offsets",
                                   &offsets, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, walk, group_items, &walk_local, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, totals, group_items, &totals_local, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, offsets, group_items, &offsets_local, err);
    if (status != KCS_OK)
        return status;
    /* A CPU device runs a work-group's items one after another: there a walk
     * of one work-item per group is a plain sequential count, where the
     * sub-block's rank search would cost local-size comparisons per point. */
    if (device->type & CL_DEVICE_TYPE_CPU)
        walk_local = 1;

    /* Chunks of whole sub-blocks, at most walk_groups_per_compute_unit per unit. */
    size_t wanted = (size_t)device->compute_units * walk_groups_per_compute_unit;
    size_t chunk = ceil_div(ceil_div(s->n, wanted ? wanted : 1), walk_local) * walk_local;
    if (chunk == 0)
        chunk = walk_local;
    size_t groups = s->n ? ceil_div(s->n, chunk) : 1;
    cl_mem partial, sorted;
    status = kcs_opencl_scratch(device, 0, groups * s->m * sizeof(cl_int), &partial, err);
    if (status == KCS_OK)
        status = kcs_opencl_scratch(device, 1, (s->m + s->n) * sizeof(cl_int), &sorted, err);
    if (status != KCS_OK)
        return status;
    *sorted_out = sorted;

    cl_ulong n = s->n, chunk_argument = chunk;
    cl_uint m = (cl_uint)s->m, groups_argument = (cl_uint)groups;
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 0, sizeof idx, &idx), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 1, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 2, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 3, sizeof chunk_argument, &chunk_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 4, sizeof partial, &partial), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 5, sizeof sorted, &sorted), err);
    KCS_OPENCL_CHECK(clSetKernelArg(walk, 7, walk_local * sizeof(cl_int), NULL), err);

    KCS_OPENCL_CHECK(clSetKernelArg(totals, 0, sizeof partial, &partial), err);
    KCS_OPENCL_CHECK(clSetKernelArg(totals, 1, sizeof groups_argument, &groups_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(totals, 2, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(totals, 3, sizeof count, &count), err);

    KCS_OPENCL_CHECK(clSetKernelArg(offsets, 0, sizeof count, &count), err);
    KCS_OPENCL_CHECK(clSetKernelArg(offsets, 1, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(offsets, 2, sizeof sorted, &sorted), err);
    KCS_OPENCL_CHECK(clSetKernelArg(offsets, 3, offsets_local * sizeof(cl_int), NULL), err);

    status = enqueue_walk(device, walk, 0, groups, walk_local, events, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, totals, ceil_div(s->m, totals_local) * totals_local,
                                   totals_local, events, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, offsets, offsets_local, offsets_local, events, err);
    if (status == KCS_OK)
        status = enqueue_walk(device, walk, 1, groups, walk_local, events, err);
    return status;
}

/* The local memory of the tile sort: a place per anchor for each row of 32
 * work-items, the keys of one step and the work-items' sums. */
static size_t tile_sort_local_bytes(size_t m)
{
    return (reduce_items / 32 * m + 2 * reduce_items) * sizeof(cl_int);
}

/* Sorts the points by anchor in one launch, by the tile counting sort of
 * opencl/anneal.cl: each tile into its own stretch of order (scratch slot
 * 1), with its anchors' run starts in tile_starts (slot 0, tiles x (m + 1)
 * ints). Needs tile_sort_local_bytes(m) of local memory; count is written
 * by the statistics kernel, which gathers each anchor's runs. */
static kcs_status enqueue_tile_sort(kcs_device *device, const kcs_anneal_args *s, cl_mem idx,
                                    size_t tiles, cl_mem *tile_starts_out, cl_mem *order_out,
                                    kcs_opencl_events *events, kcs_error *err)
{
    cl_kernel sort;
    kcs_status status = kcs_opencl_kernel(device, &anneal_program, "kcs_reduce_tile_sort", &sort, err);
    if (status != KCS_OK)
        return status;
    cl_mem tile_starts, order;
    status = kcs_opencl_scratch(device, 0, (tiles ? tiles : 1) * (s->m + 1) * sizeof(cl_int),
                                &tile_starts, err);
    if (status == KCS_OK)
        status = kcs_opencl_scratch(device, 1, (s->n ? s->n : 1) * sizeof(cl_int), &order, err);
    if (status != KCS_OK)
        return status;
    *tile_starts_out = tile_starts;
    *order_out = order;

    cl_ulong n = s->n;
    cl_uint m = (cl_uint)s->m;
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 0, sizeof idx, &idx), err);
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 1, sizeof n, &n), err);
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 2, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 3, sizeof tile_starts, &tile_starts), err);
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 4, sizeof order, &order), err);
    KCS_OPENCL_CHECK(clSetKernelArg(sort, 5, reduce_items / 32 * s->m * sizeof(cl_int), NULL), err);
    /* n = 0: no tiles; the statistics kernel, over no runs, writes count = 0 */
    if (tiles == 0)
        return KCS_OK;
    return kcs_opencl_launch(device, sort, tiles * reduce_items, reduce_items, events, err);
}

/* reduce (sorted-two-pass): the walk sort, then per anchor a work-group of
 * two passes (mean, then squared deviations) over its points. */
static kcs_status enqueue_reduce(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                 kcs_opencl_events *events, kcs_error *err)
{
    const kcs_anneal_args *s = &args->reduce;
    if (s->m == 0)
        return KCS_OK; /* then n = 0 too (an index must name an anchor): no outputs */
    cl_kernel stats;
    size_t stats_local;
    kcs_status status =
        kcs_opencl_kernel(device, &anneal_program, kernels_of[args->dtype].reduce_stats, &stats,
                          err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, stats, group_items, &stats_local, err);
    if (status != KCS_OK)
        return status;
    cl_mem x = inputs[0]->memory, idx = inputs[1]->memory;
    cl_mem count = outputs[0]->memory, mean = outputs[1]->memory, var = outputs[2]->memory;
    cl_mem sorted;
    status = enqueue_walk_sort(device, s, idx, count, &sorted, events, err);
    if (status != KCS_OK)
        return status;
    cl_ulong d = s->d;
    cl_uint m = (cl_uint)s->m;
    cl_uint lanes = (cl_uint)power_of_two_at_least(s->d);
    if (lanes > stats_local)
        lanes = (cl_uint)stats_local;
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 1, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 2, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 3, sizeof count, &count), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 4, sizeof sorted, &sorted), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 5, sizeof lanes, &lanes), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 6, sizeof mean, &mean), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 7, sizeof var, &var), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 8, stats_local * sizeof(cl_float), NULL), err);
    return kcs_opencl_launch(device, stats, s->m * stats_local, stats_local, events, err);
}

/* reduce: points counting-sorted by anchor, then per anchor a mean pass and a
 * deviation pass. */
static KCS_KERNEL_RUN(reduce_sorted_two_pass)
{
    return kcs_opencl_timed(enqueue_reduce, device, args, inputs, outputs, kernel_seconds, err);
}

/* As reduce_supports, and the device must have fp64 and work-groups of reduce_items. */
static KCS_KERNEL_SUPPORTS(reduce_welford_supports)
{
    kcs_status status = reduce_supports(device, args, err);
    if (status != KCS_OK)
        return status;
    if (!device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "device lacks cl_khr_fp64 (sorted-welford keeps its states in f64)");
    return KCS_OK;
}

/* reduce (sorted-welford): the tile sort where its local memory fits (else
 * the walk sort, which gives the same order), then per anchor one read of
 * its points, f64 Welford states per row merged by Chan. */
static kcs_status enqueue_reduce_welford(kcs_device *device, const kcs_op_args *args,
                                         kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                         kcs_opencl_events *events, kcs_error *err)
{
    const kcs_anneal_args *s = &args->reduce;
    if (s->m == 0)
        return KCS_OK; /* then n = 0 too: no outputs */
    cl_kernel stats, sort;
    size_t allowed_stats, allowed_sort;
    kcs_status status = kcs_opencl_kernel(device, &anneal_program,
                                          kernels_of[args->dtype].reduce_welford, &stats, err);
    if (status == KCS_OK)
        status = kcs_opencl_kernel(device, &anneal_program, "kcs_reduce_tile_sort", &sort, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, stats, reduce_items, &allowed_stats, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, sort, reduce_items, &allowed_sort, err);
    if (status != KCS_OK)
        return status;
    if (allowed_stats < reduce_items || allowed_sort < reduce_items)
        return kcs_fail(err, KCS_UNSUPPORTED, "sorted-welford needs work-groups of %d",
                        (int)reduce_items);
    cl_mem x = inputs[0]->memory, idx = inputs[1]->memory;
    cl_mem count = outputs[0]->memory, mean = outputs[1]->memory, var = outputs[2]->memory;
    /* The tile sort where its local memory fits and the statistics kernel can
     * gather an anchor's run in every tile (kcs_reduce_welford_* declares 27 KB
     * of local memory of its own); else the walk sort, one run an anchor in
     * sorted = offsets (m ints), then order. */
    size_t tiles = ceil_div(s->n, reduce_sort_tile);
    cl_mem tile_starts, order;
    int tile_sorted = tile_sort_local_bytes(s->m) <= device->local_memory && tiles <= reduce_most_runs;
    cl_int counted = !tile_sorted; /* the walk sort writes count[j] itself */
    cl_ulong order_first = 0;
    if (tile_sorted) {
        status = enqueue_tile_sort(device, s, idx, tiles, &tile_starts, &order, events, err);
    } else {
        status = enqueue_walk_sort(device, s, idx, count, &tile_starts, events, err);
        order = tile_starts;
        order_first = s->m;
        tiles = 1;
    }
    if (status != KCS_OK)
        return status;
    cl_ulong d = s->d, tile_points = reduce_sort_tile;
    cl_uint m = (cl_uint)s->m, tiles_argument = (cl_uint)tiles;
    /* whole rows aligned for 16-byte (f32) or 8-byte (f16) loads: buffers are
     * aligned far beyond that, rows then are when d is a multiple of 4 */
    cl_int vectors = s->d % 4 == 0;
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 0, sizeof x, &x), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 1, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 2, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 3, sizeof tile_starts, &tile_starts), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 4, sizeof tiles_argument, &tiles_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 5, sizeof tile_points, &tile_points), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 6, sizeof counted, &counted), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 7, sizeof order, &order), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 8, sizeof order_first, &order_first), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 9, sizeof count, &count), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 10, sizeof vectors, &vectors), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 11, sizeof mean, &mean), err);
    KCS_OPENCL_CHECK(clSetKernelArg(stats, 12, sizeof var, &var), err);
    return kcs_opencl_launch(device, stats, s->m * reduce_items, reduce_items, events, err);
}

/* reduce: tile counting sort, then per anchor f64 Welford rows merged by Chan, points read once. */
static KCS_KERNEL_RUN(reduce_sorted_welford)
{
    return kcs_opencl_timed(enqueue_reduce_welford, device, args, inputs, outputs, kernel_seconds,
                            err);
}

/* ---- update ------------------------------------------------------------------- */

static kcs_status enqueue_update(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                 kcs_opencl_events *events, kcs_error *err)
{
    const kcs_anneal_update_args *s = &args->update;
    size_t cells = s->m * s->d;
    if (cells == 0)
        return KCS_OK;
    cl_kernel kernel;
    size_t local;
    kcs_status status =
        kcs_opencl_kernel(device, &anneal_program, "kcs_update", &kernel, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, kernel, group_items, &local, err);
    if (status != KCS_OK)
        return status;
    cl_mem a = inputs[0]->memory, v = inputs[1]->memory, mean = inputs[2]->memory;
    cl_mem count = inputs[3]->memory, a_next = outputs[0]->memory, v_next = outputs[1]->memory;
    cl_ulong m = s->m, d = s->d;
    cl_float momentum = (float)s->momentum;
    cl_float rate = (float)s->learning_rate * (float)s->temperature;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof a, &a), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof v, &v), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof mean, &mean), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 3, sizeof count, &count), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 4, sizeof m, &m), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 5, sizeof d, &d), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 6, sizeof momentum, &momentum), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 7, sizeof rate, &rate), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 8, sizeof a_next, &a_next), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 9, sizeof v_next, &v_next), err);
    return kcs_opencl_launch(device, kernel, ceil_div(cells, local) * local, local, events, err);
}

/* update: one work-item per element of the anchors. */
static KCS_KERNEL_RUN(update_elementwise)
{
    return kcs_opencl_timed(enqueue_update, device, args, inputs, outputs, kernel_seconds, err);
}

/* ---- energy ------------------------------------------------------------------- */

/* KCS_UNSUPPORTED without fp64. */
static KCS_KERNEL_SUPPORTS(energy_supports)
{
    (void)args;
    if (!device->has_fp64)
        return kcs_fail(err, KCS_UNSUPPORTED, "device lacks cl_khr_fp64 (energy sums in f64)");
    return KCS_OK;
}

static kcs_status enqueue_energy(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                 kcs_opencl_events *events, kcs_error *err)
{
    size_t n = args->energy.n;
    cl_kernel partials_kernel, finish;
    size_t partials_local, finish_local;
    kcs_status status = kcs_opencl_kernel(device, &anneal_program, "kcs_energy_partials",
                                          &partials_kernel, err);
    if (status == KCS_OK)
        status =
            kcs_opencl_kernel(device, &anneal_program, "kcs_energy_finish", &finish, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, partials_kernel, group_items, &partials_local, err);
    if (status == KCS_OK)
        status = kcs_opencl_group_size(device, finish, group_items, &finish_local, err);
    if (status != KCS_OK)
        return status;
    size_t groups = ceil_div(n, partials_local * least_per_work_item);
    size_t fill = (size_t)device->compute_units * energy_groups_per_compute_unit;
    if (groups > fill)
        groups = fill;
    size_t shallow_enough = ceil_div(n, partials_local * most_per_work_item);
    if (groups < shallow_enough)
        groups = shallow_enough;
    if (groups == 0)
        groups = 1; /* n = 0: one zero partial, and the finish writes 0 / 0 */
    cl_mem partials;
    status = kcs_opencl_scratch(device, 0, groups * sizeof(cl_double), &partials, err);
    if (status != KCS_OK)
        return status;
    cl_mem dist = inputs[0]->memory, e = outputs[0]->memory;
    cl_ulong n_argument = n, count = groups;
    KCS_OPENCL_CHECK(clSetKernelArg(partials_kernel, 0, sizeof dist, &dist), err);
    KCS_OPENCL_CHECK(clSetKernelArg(partials_kernel, 1, sizeof n_argument, &n_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(partials_kernel, 2, sizeof partials, &partials), err);
    KCS_OPENCL_CHECK(clSetKernelArg(partials_kernel, 3, partials_local * sizeof(cl_double), NULL),
                     err);
    KCS_OPENCL_CHECK(clSetKernelArg(finish, 0, sizeof partials, &partials), err);
    KCS_OPENCL_CHECK(clSetKernelArg(finish, 1, sizeof count, &count), err);
    KCS_OPENCL_CHECK(clSetKernelArg(finish, 2, sizeof n_argument, &n_argument), err);
    KCS_OPENCL_CHECK(clSetKernelArg(finish, 3, sizeof e, &e), err);
    KCS_OPENCL_CHECK(clSetKernelArg(finish, 4, finish_local * sizeof(cl_double), NULL), err);
    status = kcs_opencl_launch(device, partials_kernel, groups * partials_local, partials_local,
                               events, err);
    if (status == KCS_OK)
        status = kcs_opencl_launch(device, finish, finish_local, finish_local, events, err);
    return status;
}

/* energy: strided f64 sums, a local tree per work-group, partials added by one work-group. */
static KCS_KERNEL_RUN(energy_strided_tree)
{
    return kcs_opencl_timed(enqueue_energy, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"assign", KCS_F32, "tiled-local",
     "128 points x 128 anchors per work-group through local memory, 8x8 distances per work-item, argmin "
     "merged by (distance, index)",
     assign_tiled_local, assign_supports},
    {"assign", KCS_F16, "tiled-local", "as f32, points widened by vload_half", assign_tiled_local,
     assign_supports},
    {"assign", KCS_F32, "shortlist",
     "as tiled-local with x.a FMAs ranking ||a||^2 - 2x.a (float4 local reads); near ties within a "
     "derived margin redone by the direct tile kernel",
     assign_shortlist, assign_supports},
    {"assign", KCS_F16, "shortlist", "as f32, points widened by vload_half", assign_shortlist,
     assign_supports},
    {"reduce", KCS_F32, "sorted-two-pass",
     "points counting-sorted by anchor without atomics, then a work-group per anchor: mean, then deviations",
     reduce_sorted_two_pass, reduce_supports},
    {"reduce", KCS_F16, "sorted-two-pass", "as f32, points widened by vload_half",
     reduce_sorted_two_pass, reduce_supports},
    {"reduce", KCS_F32, "sorted-welford",
     "tile counting sort by anchor, then a work-group per anchor reading its points once: f64 Welford "
     "per row of 32, Chan merge; needs fp64",
     reduce_sorted_welford, reduce_welford_supports},
    {"reduce", KCS_F16, "sorted-welford", "as f32, points widened by vload_half4",
     reduce_sorted_welford, reduce_welford_supports},
    {"update", KCS_F32, "elementwise", "one work-item per anchor element, (mean - a) formed first",
     update_elementwise, NULL},
    {"energy", KCS_F32, "strided-tree-f64",
     "strided work-items summing in f64, a local tree per work-group, partials added by one work-group",
     energy_strided_tree, energy_supports},
};

const kcs_kernel_table kcs_opencl_anneal_kernels = KCS_KERNEL_TABLE(rows);
