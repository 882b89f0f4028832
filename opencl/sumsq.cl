/* sumsq.cl: sum of squares, s = sum of x[i]^2, as OpenCL C 1.2 kernels (docs/sumsq.md).
 *
 * Precision. Squares and sums are carried in double for f32 and f64 inputs
 * alike, as the spec requires: an f32 square is then exact, and a sum carried
 * in float would lose whole elements of a long input. f16 and bf16 inputs
 * (loaded with opencl/half.cl's conversions) are carried in float, as the
 * spec requires of them and no more: their squares are exact in float (bf16
 * ones unless they underflow, which the bound counts), and the float sum's
 * error, at most gamma_32(D), stays below the final rounding's 2^-11 or
 * 2^-8; float also lets these rows run on devices without fp64, whose
 * compilers see only the float kernels (#ifdef cl_khr_fp64). The result is
 * rounded once, to the input type, by the last kernel (from float to f16 or
 * bf16, from double to f32). Contraction of x * x + sum into one fma is
 * allowed (OpenCL C's default): it rounds once where the spec counts two
 * roundings, so it stays inside the bound.
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
 *     writes s (kcs_sumsq_finish_f32, _f16 and _bf16 are that last pass for
 *     the types that round: f32 from double partials, the 16-bit types from
 *     float ones; kcs_sumsq_add_partials_float adds float partials). For the
 *     16-bit types, kcs_sumsq_one_launch_* is the first pass and the last in
 *     one launch: the last work-group to finish adds the partials (see
 *     KCS_SUMSQ_ONE_LAUNCH).
 *   cpu-contiguous-chunks: kcs_sumsq_chunks_* launches a few work-groups of
 *     one work-item each (a CPU device such as POCL runs each on a thread).
 *     Each sums one contiguous chunk of x in blocks of KCS_SUMSQ_BLOCK_LENGTH
 *     elements with four double8 (float8 for 16-bit inputs) accumulators (explicit vectors, because a
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
#ifndef KCS_SUMSQ_GROUP_SIZE
/* Largest work-group of the tree kernels, a power of two: the size of their
 * local array. 256 is a multiple of every GPU's SIMD width and lets eight
 * groups share a streaming multiprocessor. */
#define KCS_SUMSQ_GROUP_SIZE 256
#endif

#ifndef KCS_SUMSQ_BLOCK_LENGTH
/* Elements a chunk work-item sums in its vector lanes before the block's sum
 * joins the pairwise ladder; a multiple of 32 (four 8-wide accumulators).
 * 4096 gives each lane a chain of 128 additions. */
#define KCS_SUMSQ_BLOCK_LENGTH 4096
#endif

/* The pieces below are macros over the accumulator type ACC (double, or
 * float for the 16-bit inputs), expanded once per accumulator further down. */

/* ---- gpu-strided-tree ---------------------------------------------------- */

/* Adds value over the work-group (a power of two in size) by halving in local
 * memory; each value passes through log2(local size) additions. Returns the
 * sum in every work-item. */
#define KCS_SUMSQ_GROUP_SUM(name, ACC)                                              \
    static ACC name(local ACC *scratch, ACC value)                                  \
    {                                                                                \
        size_t id = get_local_id(0);                                                 \
        scratch[id] = value;                                                         \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        for (size_t width = get_local_size(0) / 2; width > 0; width /= 2) {          \
            if (id < width)                                                          \
                scratch[id] += scratch[id + width];                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                            \
        }                                                                            \
        return scratch[0];                                                           \
    }

/* A strided sum over the whole launch: work-item g takes elements g, g + G,
 * ... (G = global size) into four running sums, so an element passes through
 * at most ceil(count / 4G) additions in its sum and two more joining them.
 * LOAD(x, i) gives element i as an ACC; SQUARE is 1 for the first pass over
 * x and 0 for passes over partials. */
#define KCS_SUMSQ_STRIDED_SUM(name, type, ACC, LOAD, SQUARE)                        \
    static ACC name(global const type *x, ulong count)                               \
    {                                                                                \
        ulong stride = get_global_size(0);                                           \
        ulong i = get_global_id(0);                                                  \
        ACC sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;                                  \
        for (; i + 3 * stride < count; i += 4 * stride) {                            \
            ACC a = LOAD(x, i), b = LOAD(x, i + stride);                             \
            ACC c = LOAD(x, i + 2 * stride), d = LOAD(x, i + 3 * stride);            \
            sum0 += SQUARE ? a * a : a;                                              \
            sum1 += SQUARE ? b * b : b;                                              \
            sum2 += SQUARE ? c * c : c;                                              \
            sum3 += SQUARE ? d * d : d;                                              \
        }                                                                            \
        for (; i < count; i += stride) {                                             \
            ACC a = LOAD(x, i);                                                      \
            sum0 += SQUARE ? a * a : a;                                              \
        }                                                                            \
        return (sum0 + sum1) + (sum2 + sum3);                                        \
    }

/* The 16-bit first pass's strided sum, 16 bytes a load: work-item g takes
 * the eight-element vectors g, g + G, ... of x (an unaligned start cannot
 * happen: x is a cl_mem at offset 0, aligned for any vector type), four
 * loads in flight before the first use; each load's squares go alternately
 * into two of eight float running sums (KCS_SUMSQ_ADD_SQUARES_X8: scalar
 * sums rather than float8 ones, to keep registers low), and the last
 * n mod 8 elements go one each to the lowest work-items. WIDEN8 gives a
 * ushort8's eight elements as floats, LOAD(x, i) element i (opencl/half.cl,
 * PTX conversions on NVIDIA). Of a work-item's m vectors, the m mod 4
 * ragged ones are its first: they are loaded before the loop (beside its
 * first round of four) and added after it, one into each of the first
 * pairs of sums, so no round at the end waits a memory latency with few
 * bytes in flight; those a work-item does not have stay zero and add
 * nothing. A running sum takes floor(m / 4) + 1 loads, four terms each: a
 * term passes through at most 4 (floor(m / 4) + 1) additions there, 3
 * joining the sums and 1 for the ragged end. */
#define KCS_SUMSQ_ADD_SQUARES_X8(a, even, odd)                                       \
    do {                                                                             \
        even += (a).s0 * (a).s0;                                                     \
        odd += (a).s1 * (a).s1;                                                      \
        even += (a).s2 * (a).s2;                                                     \
        odd += (a).s3 * (a).s3;                                                      \
        even += (a).s4 * (a).s4;                                                     \
        odd += (a).s5 * (a).s5;                                                      \
        even += (a).s6 * (a).s6;                                                     \
        odd += (a).s7 * (a).s7;                                                      \
    } while (0)

#define KCS_SUMSQ_STRIDED_SQUARES_X8(name, WIDEN8, LOAD)                             \
    static float name(global const ushort *x, ulong n)                                \
    {                                                                                \
        ulong stride = get_global_size(0);                                           \
        ulong g = get_global_id(0), i = g;                                           \
        ulong vectors = n / 8;                                                       \
        global const ushort8 *v = (global const ushort8 *)x;                         \
        float sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;                                \
        float sum4 = 0, sum5 = 0, sum6 = 0, sum7 = 0;                                \
        ulong mine = g < vectors ? (vectors - g - 1) / stride + 1 : 0;               \
        uint ragged = (uint)(mine % 4);                                              \
        ushort8 e0 = 0, e1 = 0, e2 = 0; /* all-zero bits: +0 in f16 and bf16 */      \
        if (ragged > 0)                                                              \
            e0 = v[i];                                                               \
        if (ragged > 1)                                                              \
            e1 = v[i + stride];                                                      \
        if (ragged > 2)                                                              \
            e2 = v[i + 2 * stride];                                                  \
        for (i += ragged * stride; i < vectors; i += 4 * stride) {                   \
            float8 a = WIDEN8(v[i]), b = WIDEN8(v[i + stride]);                      \
            float8 c = WIDEN8(v[i + 2 * stride]), d = WIDEN8(v[i + 3 * stride]);     \
            KCS_SUMSQ_ADD_SQUARES_X8(a, sum0, sum1);                                 \
            KCS_SUMSQ_ADD_SQUARES_X8(b, sum2, sum3);                                 \
            KCS_SUMSQ_ADD_SQUARES_X8(c, sum4, sum5);                                 \
            KCS_SUMSQ_ADD_SQUARES_X8(d, sum6, sum7);                                 \
        }                                                                            \
        float8 a = WIDEN8(e0), b = WIDEN8(e1), c = WIDEN8(e2);                       \
        KCS_SUMSQ_ADD_SQUARES_X8(a, sum0, sum1);                                     \
        KCS_SUMSQ_ADD_SQUARES_X8(b, sum2, sum3);                                     \
        KCS_SUMSQ_ADD_SQUARES_X8(c, sum4, sum5);                                     \
        float sum = ((sum0 + sum1) + (sum2 + sum3)) + ((sum4 + sum5) + (sum6 + sum7)); \
        if (g < n - 8 * vectors) {                                                   \
            float a = LOAD(x, 8 * vectors + g);                                      \
            sum += a * a;                                                            \
        }                                                                            \
        return sum;                                                                  \
    }

/* First pass: partials[group] = the group's share of sum x[i]^2. */
#define KCS_SUMSQ_GROUPS(name, type, ACC, strided_squares, group_sum)               \
    kernel void name(global const type *x, ulong n, global ACC *partials)           \
    {                                                                                \
        local ACC scratch[KCS_SUMSQ_GROUP_SIZE];                                     \
        ACC sum = group_sum(scratch, strided_squares(x, n));                         \
        if (get_local_id(0) == 0)                                                    \
            partials[get_group_id(0)] = sum;                                         \
    }

/* Later passes: sums[group] = the group's share of the sum of partials. With
 * one work-group and the output as sums, this is also the f64 last pass. */
#define KCS_SUMSQ_ADD_PARTIALS(name, ACC, strided_sum, group_sum)                   \
    kernel void name(global const ACC *partials, ulong count, global ACC *sums)     \
    {                                                                                \
        local ACC scratch[KCS_SUMSQ_GROUP_SIZE];                                     \
        ACC sum = group_sum(scratch, strided_sum(partials, count));                  \
        if (get_local_id(0) == 0)                                                    \
            sums[get_group_id(0)] = sum;                                             \
    }

/* A last pass that rounds: one work-group adds the partials, and work-item 0
 * stores the sum with STORE(s, sum), one rounding to nearest even (a sum past
 * the type's largest finite value by half an ulp is inf). */
#define KCS_SUMSQ_FINISH(name, type, ACC, strided_sum, group_sum, STORE)            \
    kernel void name(global const ACC *partials, ulong count, global type *s)       \
    {                                                                                \
        local ACC scratch[KCS_SUMSQ_GROUP_SIZE];                                     \
        ACC sum = group_sum(scratch, strided_sum(partials, count));                  \
        if (get_local_id(0) == 0)                                                    \
            STORE(s, sum);                                                           \
    }

/* The 16-bit first pass and last pass in one launch. state[0] counts the
 * work-groups done and is zero at launch; state[1 + g] holds group g's
 * partial (kcs_opencl_groups_done, opencl/kcs_opencl.h, promises both). Each
 * work-group stores its partial as KCS_SUMSQ_GROUPS does and counts itself
 * done; the work-group that counts last adds every partial in index order, as
 * the one-work-group last pass (KCS_SUMSQ_FINISH) would (work-item l takes
 * partials l, l + L, ... into four running sums, then the tree), stores s
 * with STORE and sets the count back to zero for the next launch. The host
 * launches it only when there are at most L * 64 partials (opencl/sumsq.c),
 * so a partial's depth there is the last pass's.
 *
 * Why the last group sees every partial. OpenCL 1.2 defines no memory model
 * across work-groups; this relies on the two things it does state, and on
 * nothing else:
 *   - every access to state that crosses work-groups is an atomic function
 *     (atomic_xchg to store a partial's bits, atomic_or with 0 to read them,
 *     atomic_inc and atomic_xchg on the count); 1.2 section 6.12.11 has each
 *     performed on the memory location itself, so no read sees a stale copy
 *     in a cache (on NVIDIA they are done in L2; no plain load of another
 *     group's data is made);
 *   - mem_fence(CLK_GLOBAL_MEM_FENCE) between a group's partial and its
 *     count: 1.2 section 6.12.9 has the loads and stores before it committed
 *     to memory before those after it. So once the count shows a group done,
 *     its partial is in memory; the group whose atomic_inc returns the number
 *     of groups less one comes after every other group's count, and reads the
 *     partials after a fence of its own.
 * No work-group waits for another, so no promise of forward progress is
 * needed. Oclgrind reports no data race, as no plain access crosses
 * work-groups (a plain store of the partial is reported, tried once), and no
 * uninitialised value, as the buffer is made zero-filled. The partials are
 * float bits in uint, the type 1.2's atomics take: the sum stays float, as
 * in the two-launch path. */
#define KCS_SUMSQ_ONE_LAUNCH(name, type, strided_squares, STORE)                    \
    kernel void name(global const ushort *x, ulong n, volatile global uint *state,   \
                     global type *s)                                                 \
    {                                                                                \
        local float scratch[KCS_SUMSQ_GROUP_SIZE];                                   \
        local int last_group;                                                        \
        volatile global uint *partials = state + 1;                                  \
        float sum = kcs_sumsq_group_sum_float(scratch, strided_squares(x, n));       \
        if (get_local_id(0) == 0) {                                                  \
            atomic_xchg(partials + get_group_id(0), as_uint(sum));                   \
            mem_fence(CLK_GLOBAL_MEM_FENCE);                                         \
            last_group = atomic_inc(state) == (uint)(get_num_groups(0) - 1);         \
            mem_fence(CLK_GLOBAL_MEM_FENCE);                                         \
        }                                                                            \
        barrier(CLK_LOCAL_MEM_FENCE);                                                \
        if (!last_group)                                                             \
            return; /* the whole group takes the same branch */                      \
        ulong count = get_num_groups(0), stride = get_local_size(0);                 \
        ulong i = get_local_id(0);                                                   \
        float sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;                                \
        for (; i + 3 * stride < count; i += 4 * stride) {                            \
            sum0 += as_float(atomic_or(partials + i, 0u));                           \
            sum1 += as_float(atomic_or(partials + i + stride, 0u));                  \
            sum2 += as_float(atomic_or(partials + i + 2 * stride, 0u));              \
            sum3 += as_float(atomic_or(partials + i + 3 * stride, 0u));              \
        }                                                                            \
        for (; i < count; i += stride)                                               \
            sum0 += as_float(atomic_or(partials + i, 0u));                           \
        sum = kcs_sumsq_group_sum_float(scratch, (sum0 + sum1) + (sum2 + sum3));     \
        if (get_local_id(0) == 0) {                                                  \
            STORE(s, sum);                                                           \
            atomic_xchg(state, 0u);                                                  \
        }                                                                            \
    }

/* ---- cpu-contiguous-chunks ----------------------------------------------- */

/* ladder_push adds a block sum into a binary ladder: ladder[k] holds the sum
 * of 2^k blocks while bit k of *blocks is set, as in a binary counter, so
 * each block sum passes through at most log2(blocks) additions here.
 * ladder_total is the sum of the rungs, smallest first: at most 64 more
 * additions. lanes_total adds the eight lanes of an accumulator. */
#define KCS_SUMSQ_LADDER(ACC, ACC8)                                                  \
    static void kcs_sumsq_ladder_push_##ACC(ACC *ladder, ulong *blocks, ACC value)   \
    {                                                                                \
        ulong carry = *blocks;                                                       \
        int level = 0;                                                               \
        for (; carry & 1; carry >>= 1, level++)                                      \
            value = ladder[level] + value;                                           \
        ladder[level] = value;                                                       \
        *blocks += 1;                                                                \
    }                                                                                \
                                                                                     \
    static ACC kcs_sumsq_ladder_total_##ACC(const ACC *ladder, ulong blocks)         \
    {                                                                                \
        ACC total = 0;                                                               \
        for (int level = 0; blocks >> level; level++)                                \
            if ((blocks >> level) & 1)                                               \
                total = ladder[level] + total;                                       \
        return total;                                                                \
    }                                                                                \
                                                                                     \
    static ACC kcs_sumsq_lanes_total_##ACC(ACC8 sum)                                 \
    {                                                                                \
        ACC##4 four = sum.lo + sum.hi;                                               \
        ACC##2 two = four.lo + four.hi;                                              \
        return two.lo + two.hi;                                                      \
    }

/* partials[item] = sum of x[i]^2 over the item's chunk [item * chunk_length,
 * (item + 1) * chunk_length) clipped to n; chunk_length is a multiple of
 * KCS_SUMSQ_BLOCK_LENGTH, so every chunk but the last is whole blocks and
 * each vector load is aligned like the buffer. LOAD8(p) gives p[0..7] as an
 * ACC8, LOAD(x, i) element i as an ACC. A term's depth: 128 in its lane, 2
 * joining accumulators, 3 joining lanes, log2(blocks) in the ladder and up
 * to 64 collecting it, then the item's place among the partials. */
#define KCS_SUMSQ_CHUNKS(name, type, ACC, ACC8, LOAD8, LOAD)                         \
    kernel void name(global const type *x, ulong n, ulong chunk_length,              \
                     global ACC *partials)                                           \
    {                                                                                \
        ulong item = get_global_id(0);                                               \
        ulong begin = min(n, item * chunk_length);                                   \
        ulong end = min(n, begin + chunk_length);                                    \
        ACC ladder[64];                                                              \
        ulong blocks = 0;                                                            \
        ulong i = begin;                                                             \
        for (; i + KCS_SUMSQ_BLOCK_LENGTH <= end; i += KCS_SUMSQ_BLOCK_LENGTH) {     \
            ACC8 sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;                             \
            for (ulong j = i; j < i + KCS_SUMSQ_BLOCK_LENGTH; j += 32) {             \
                ACC8 a = LOAD8(x + j), b = LOAD8(x + j + 8);                         \
                ACC8 c = LOAD8(x + j + 16), d = LOAD8(x + j + 24);                   \
                sum0 += a * a;                                                       \
                sum1 += b * b;                                                       \
                sum2 += c * c;                                                       \
                sum3 += d * d;                                                       \
            }                                                                        \
            kcs_sumsq_ladder_push_##ACC(ladder, &blocks,                             \
                                        kcs_sumsq_lanes_total_##ACC((sum0 + sum1) + (sum2 + sum3))); \
        }                                                                            \
        /* The ragged end (< one block): whole vectors, then single elements. */     \
        ACC8 lanes = 0;                                                              \
        for (; i + 8 <= end; i += 8) {                                               \
            ACC8 a = LOAD8(x + i);                                                   \
            lanes += a * a;                                                          \
        }                                                                            \
        ACC rest = 0;                                                                \
        for (; i < end; i++) {                                                       \
            ACC a = LOAD(x, i);                                                      \
            rest += a * a;                                                           \
        }                                                                            \
        kcs_sumsq_ladder_push_##ACC(ladder, &blocks, kcs_sumsq_lanes_total_##ACC(lanes) + rest); \
        partials[item] = kcs_sumsq_ladder_total_##ACC(ladder, blocks);               \
    }

/* ---- f16 and bf16: float accumulators, on every device ------------------- */

#define KCS_SUMSQ_LOAD_F16(x, i) kcs_load_f16(x, i)
#define KCS_SUMSQ_LOAD_F16_BITS(x, i) kcs_load_f16((global const half *)(x), i)
#define KCS_SUMSQ_LOAD_BF16(x, i) kcs_load_bf16(x, i)
#define KCS_SUMSQ_LOAD_FLOAT(x, i) (x)[i]
/* Eight elements from p, which a chunk boundary may leave unaligned: vload8
 * and vload_half8 need only element alignment. */
#define KCS_SUMSQ_LOAD8_F16(p) vload_half8(0, p)
#define KCS_SUMSQ_LOAD8_BF16(p) kcs_bf16x8_to_float(vload8(0, p))
#define KCS_SUMSQ_STORE_F16(s, value) kcs_store_f16(s, 0, value)
#define KCS_SUMSQ_STORE_BF16(s, value) kcs_store_bf16(s, 0, value)

KCS_SUMSQ_GROUP_SUM(kcs_sumsq_group_sum_float, float)
KCS_SUMSQ_STRIDED_SQUARES_X8(kcs_sumsq_strided_squares_f16, kcs_f16x8_to_float, KCS_SUMSQ_LOAD_F16_BITS)
KCS_SUMSQ_STRIDED_SQUARES_X8(kcs_sumsq_strided_squares_bf16, kcs_bf16x8_to_float, KCS_SUMSQ_LOAD_BF16)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_sum_float, float, float, KCS_SUMSQ_LOAD_FLOAT, 0)
KCS_SUMSQ_GROUPS(kcs_sumsq_groups_f16, ushort, float, kcs_sumsq_strided_squares_f16, kcs_sumsq_group_sum_float)
KCS_SUMSQ_GROUPS(kcs_sumsq_groups_bf16, ushort, float, kcs_sumsq_strided_squares_bf16, kcs_sumsq_group_sum_float)
KCS_SUMSQ_ONE_LAUNCH(kcs_sumsq_one_launch_f16, half, kcs_sumsq_strided_squares_f16, KCS_SUMSQ_STORE_F16)
KCS_SUMSQ_ONE_LAUNCH(kcs_sumsq_one_launch_bf16, ushort, kcs_sumsq_strided_squares_bf16, KCS_SUMSQ_STORE_BF16)
KCS_SUMSQ_ADD_PARTIALS(kcs_sumsq_add_partials_float, float, kcs_sumsq_strided_sum_float, kcs_sumsq_group_sum_float)
KCS_SUMSQ_FINISH(kcs_sumsq_finish_f16, half, float, kcs_sumsq_strided_sum_float, kcs_sumsq_group_sum_float,
                 KCS_SUMSQ_STORE_F16)
KCS_SUMSQ_FINISH(kcs_sumsq_finish_bf16, ushort, float, kcs_sumsq_strided_sum_float, kcs_sumsq_group_sum_float,
                 KCS_SUMSQ_STORE_BF16)
KCS_SUMSQ_LADDER(float, float8)
KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_f16, half, float, float8, KCS_SUMSQ_LOAD8_F16, KCS_SUMSQ_LOAD_F16)
KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_bf16, ushort, float, float8, KCS_SUMSQ_LOAD8_BF16, KCS_SUMSQ_LOAD_BF16)

/* ---- f32 and f64: double accumulators, on devices with fp64 -------------- */

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define KCS_SUMSQ_LOAD_DOUBLE(x, i) ((double)(x)[i])
#define KCS_SUMSQ_LOAD8_F64(p) vload8(0, p)
#define KCS_SUMSQ_LOAD8_F32(p) convert_double8(vload8(0, p))
#define KCS_SUMSQ_STORE_F32(s, value) ((s)[0] = (float)(value))

KCS_SUMSQ_GROUP_SUM(kcs_sumsq_group_sum, double)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_squares_f64, double, double, KCS_SUMSQ_LOAD_DOUBLE, 1)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_squares_f32, float, double, KCS_SUMSQ_LOAD_DOUBLE, 1)
KCS_SUMSQ_STRIDED_SUM(kcs_sumsq_strided_sum, double, double, KCS_SUMSQ_LOAD_DOUBLE, 0)
KCS_SUMSQ_GROUPS(kcs_sumsq_groups_f64, double, double, kcs_sumsq_strided_squares_f64, kcs_sumsq_group_sum)
KCS_SUMSQ_GROUPS(kcs_sumsq_groups_f32, float, double, kcs_sumsq_strided_squares_f32, kcs_sumsq_group_sum)
KCS_SUMSQ_ADD_PARTIALS(kcs_sumsq_add_partials, double, kcs_sumsq_strided_sum, kcs_sumsq_group_sum)
/* The f32 last pass rounds the double sum to float once. */
KCS_SUMSQ_FINISH(kcs_sumsq_finish_f32, float, double, kcs_sumsq_strided_sum, kcs_sumsq_group_sum,
                 KCS_SUMSQ_STORE_F32)
KCS_SUMSQ_LADDER(double, double8)
KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_f64, double, double, double8, KCS_SUMSQ_LOAD8_F64, KCS_SUMSQ_LOAD_DOUBLE)
KCS_SUMSQ_CHUNKS(kcs_sumsq_chunks_f32, float, double, double8, KCS_SUMSQ_LOAD8_F32, KCS_SUMSQ_LOAD_DOUBLE)

#endif
