/* sumsq.cl: sum of squares, s = sum of x[i]^2, as OpenCL C 1.2 kernels (docs/sumsq.md).
 *
 * Precision. Squares and sums are carried in double for f32 and f64 inputs
 * alike, as the spec requires: an f32 square is then exact, and a sum carried
 * in float would lose whole elements of a long input. The result is rounded
 * once, to the input type, by the last kernel. Contraction of x * x + sum
 * into one fma is allowed (OpenCL C's default): it rounds once where the spec
 * counts two roundings, so it stays inside the bound.
 *
 * Order. The checker's bound assumes that every term passes through at most
 * D(n) = min(n - 1, 2048 + ceil(log2 n)) additions, so no kernel keeps one
 * running sum over more than a few hundred elements; the depths are derived
 * beside each kernel below and in opencl/sumsq.c, which launches them.
 *
 * Two shapes, each a row of the backend's kernel table:
 *   gpu-strided-tree: kcs_sumsq_groups_* launches many work-groups of up to
 *     KCS_SUMSQ_GROUP_SIZE work-items. Work-item g reads x[g], x[g + G],
 *     x[g + 2G], ... (G = global size), so neighbouring work-items read
 *     neighbouring elements and loads coalesce; it keeps four running sums so
 *     that four loads are in flight. A tree in local memory adds the group's
 *     sums; one partial per work-group goes to a scratch buffer, and
 *     kcs_sumsq_add_partials adds partials the same way until one work-group
 *     writes s (kcs_sumsq_finish_f32 is that last pass for f32 output).
 *   cpu-contiguous-chunks: kcs_sumsq_chunks_* launches a few work-groups of
 *     one work-item each (a CPU device such as POCL runs each on a thread).
 *     Each sums one contiguous chunk of x in blocks of KCS_SUMSQ_BLOCK_LENGTH
 *     elements with four double8 accumulators (explicit vectors, because a
 *     compiler may not reassociate a scalar sum to vectorise it); block sums
 *     are added pairwise through a binary ladder, so the depth grows with
 *     log2 of the chunk, not its length. The same last pass as above, run
 *     as one work-item, adds the chunk sums and writes s.
 *
 * Under POCL the strided shape is slow (about 0.5 s for 10^8 f64 against
 * 30 ms for the chunks): POCL runs a work-group's work-items one after
 * another, so each walks the whole array with a stride of thousands of
 * elements instead of streaming through it.
 *
 * The tunables below are #ifndef defaults, so the file compiles on its own;
 * the host passes its values with -D when it builds the program.
 *
 * Run only it: build/kcs run --backend opencl sumsq
 */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#ifndef KCS_SUMSQ_GROUP_SIZE
/* Largest work-group of the tree kernels, a power of two: the size of their
 * local array. 256 is a multiple of every GPU's SIMD width and lets eight
 * groups share a streaming multiprocessor. */
#define KCS_SUMSQ_GROUP_SIZE 256
#endif

#ifndef KCS_SUMSQ_BLOCK_LENGTH
/* Elements a chunk work-item sums in its vector lanes before the block's sum
 * joins the pairwise ladder; a multiple of 32 (four double8 accumulators).
 * 4096 gives each lane a chain of 128 additions. */
#define KCS_SUMSQ_BLOCK_LENGTH 4096
#endif

/* ---- gpu-strided-tree ---------------------------------------------------- */

/* Adds value over the work-group (a power of two in size) by halving in local
 * memory; each value passes through log2(local size) additions. Returns the
 * sum in every work-item. */
static double kcs_sumsq_group_sum(local double *scratch, double value)
{
    size_t id = get_local_id(0);
    scratch[id] = value;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t width = get_local_size(0) / 2; width > 0; width /= 2) {
        if (id < width)
            scratch[id] += scratch[id + width];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return scratch[0];
}

/* A strided sum over the whole launch: work-item g takes elements g, g + G,
 * ... (G = global size) into four running sums, so an element passes through
 * at most ceil(count / 4G) additions in its sum and two more joining them.
 * SQUARE is 1 for the first pass over x and 0 for passes over partials. */
#define KCS_SUMSQ_STRIDED_SUM(name, type, SQUARE)                                        \
    static double name(global const type *x, ulong count)                             \
    {                                                                                \
        ulong stride = get_global_size(0);                                           \
        ulong i = get_global_id(0);                                                  \
        double sum0 = 0.0, sum1 = 0.0, sum2 = 0.0, sum3 = 0.0;                       \
        for (; i + 3 * stride < count; i += 4 * stride) {                            \
            double a = (double)x[i], b = (double)x[i + stride];                      \
            double c = (double)x[i + 2 * stride], d = (double)x[i + 3 * stride];     \
            sum0 += SQUARE ? a * a : a;                                              \
            sum1 += SQUARE ? b * b : b;                                              \
            sum2 += SQUARE ? c * c : c;                                              \
            sum3 += SQUARE ? d * d : d;                                              \
        }                                                                            \
        for (; i < count; i += stride) {                                             \
            double a = (double)x[i];                                                 \
            sum0 += SQUARE ? a * a : a;                                              \
        }                                                                            \
        return (sum0 + sum1) + (sum2 + sum3);                                        \
    }

KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_squares_f64, double, 1)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_squares_f32, float, 1)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_sum, double, 0)

/* First pass: partials[group] = the group's share of sum x[i]^2. */
kernel void kcs_sumsq_groups_f64(global const double *x, ulong n, global double *partials)
{
    local double scratch[KCS_SUMSQ_GROUP_SIZE];
    double sum = kcs_sumsq_group_sum(scratch, kcs_sumsq_strided_squares_f64(x, n));
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = sum;
}

kernel void kcs_sumsq_groups_f32(global const float *x, ulong n, global double *partials)
{
    local double scratch[KCS_SUMSQ_GROUP_SIZE];
    double sum = kcs_sumsq_group_sum(scratch, kcs_sumsq_strided_squares_f32(x, n));
    if (get_local_id(0) == 0)
        partials[get_group_id(0)] = sum;
}

/* Later passes: sums[group] = the group's share of the sum of partials. With
 * one work-group and the output as sums, this is also the f64 last pass. */
kernel void kcs_sumsq_add_partials(global const double *partials, ulong count, global double *sums)
{
    local double scratch[KCS_SUMSQ_GROUP_SIZE];
    double sum = kcs_sumsq_group_sum(scratch, kcs_sumsq_strided_sum(partials, count));
    if (get_local_id(0) == 0)
        sums[get_group_id(0)] = sum;
}

/* The f32 last pass: one work-group adds the partials and rounds the sum to
 * float once (round to nearest: a sum beyond FLT_MAX by half an ulp is inf). */
kernel void kcs_sumsq_finish_f32(global const double *partials, ulong count, global float *s)
{
    local double scratch[KCS_SUMSQ_GROUP_SIZE];
    double sum = kcs_sumsq_group_sum(scratch, kcs_sumsq_strided_sum(partials, count));
    if (get_local_id(0) == 0)
        s[0] = (float)sum;
}

/* ---- cpu-contiguous-chunks ----------------------------------------------- */

/* Adds a block sum into a binary ladder: ladder[k] holds the sum of 2^k
 * blocks while bit k of *blocks is set, as in a binary counter, so each
 * block sum passes through at most log2(blocks) additions here. */
static void kcs_sumsq_ladder_push(double *ladder, ulong *blocks, double value)
{
    ulong carry = *blocks;
    int level = 0;
    for (; carry & 1; carry >>= 1, level++)
        value = ladder[level] + value;
    ladder[level] = value;
    *blocks += 1;
}

/* The sum of the ladder's rungs, smallest first: at most 64 more additions. */
static double kcs_sumsq_ladder_total(const double *ladder, ulong blocks)
{
    double total = 0.0;
    for (int level = 0; blocks >> level; level++)
        if ((blocks >> level) & 1)
            total = ladder[level] + total;
    return total;
}

static double kcs_sumsq_lanes_total(double8 sum)
{
    double4 four = sum.lo + sum.hi;
    double2 two = four.lo + four.hi;
    return two.lo + two.hi;
}

/* partials[item] = sum of x[i]^2 over the item's chunk [item * chunk_length,
 * (item + 1) * chunk_length) clipped to n; chunk_length is a multiple of
 * KCS_SUMSQ_BLOCK_LENGTH, so every chunk but the last is whole blocks and
 * each vector load is aligned like the buffer. A term's depth: 128 in its
 * lane, 2 joining accumulators, 3 joining lanes, log2(blocks) in the ladder
 * and up to 64 collecting it, then the item's place among the partials. */
#define KCS_SUMSQ_CHUNKS(name, type, LOAD8)                                            \
    kernel void name(global const type *x, ulong n, ulong chunk_length,                \
                     global double *partials)                                         \
    {                                                                                \
        ulong item = get_global_id(0);                                               \
        ulong begin = min(n, item * chunk_length);                                   \
        ulong end = min(n, begin + chunk_length);                                    \
        double ladder[64];                                                           \
        ulong blocks = 0;                                                            \
        ulong i = begin;                                                             \
        for (; i + KCS_SUMSQ_BLOCK_LENGTH <= end; i += KCS_SUMSQ_BLOCK_LENGTH) {     \
            double8 sum0 = 0.0, sum1 = 0.0, sum2 = 0.0, sum3 = 0.0;                  \
            for (ulong j = i; j < i + KCS_SUMSQ_BLOCK_LENGTH; j += 32) {             \
                double8 a = LOAD8(x + j), b = LOAD8(x + j + 8);                      \
                double8 c = LOAD8(x + j + 16), d = LOAD8(x + j + 24);                \
                sum0 += a * a;                                                       \
                sum1 += b * b;                                                       \
                sum2 += c * c;                                                       \
                sum3 += d * d;                                                       \
            }                                                                        \
            kcs_sumsq_ladder_push(ladder, &blocks,                                   \
                                  kcs_sumsq_lanes_total((sum0 + sum1) + (sum2 + sum3))); \
        }                                                                            \
        /* The ragged end (< one block): whole vectors, then single elements. */     \
        double8 lanes = 0.0;                                                         \
        for (; i + 8 <= end; i += 8) {                                               \
            double8 a = LOAD8(x + i);                                                \
            lanes += a * a;                                                          \
        }                                                                            \
        double rest = 0.0;                                                           \
        for (; i < end; i++) {                                                       \
            double a = (double)x[i];                                                 \
            rest += a * a;                                                           \
        }                                                                            \
        kcs_sumsq_ladder_push(ladder, &blocks, kcs_sumsq_lanes_total(lanes) + rest);  \
        partials[item] = kcs_sumsq_ladder_total(ladder, blocks);                     \
    }

#define KCS_SUMSQ_LOAD8_F64(p) vload8(0, p)
#define KCS_SUMSQ_LOAD8_F32(p) convert_double8(vload8(0, p))

KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_f64, double, KCS_SUMSQ_LOAD8_F64)
KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_f32, float, KCS_SUMSQ_LOAD8_F32)
