/* saboteur_softmax.c: broken softmaxes, each a mistake real kernels make:
 * no max subtraction (exp overflows near 1e4), the last row computed from
 * the row before it (an index clamped one short), a row sum that stops
 * one element short, and a merge of pieces of a row that lets a piece of
 * nothing but -inf in. Computed in double and rounded to the case dtype, so
 * each error is the mistake alone. Two more are mistakes of the 16-bit
 * types only (f16 and bf16 rows): a row sum added in the storage type, and
 * terms exp(x - M) rounded to the storage type before the division (two
 * roundings of each output where the spec allows one).
 *
 * The last mistake is a saboteur per kernel variant, each cutting a row into
 * the pieces that variant's work-items, lanes, threads or blocks hold (as
 * opencl/softmax.c and cuda/softmax.cu size them; a layout below per
 * variant). Each piece is summed against its own max and the pieces merged
 * by rescaling, as online and FlashAttention-style kernels do, without
 * keeping an empty piece out: exp(-inf - (-inf)) is NaN, and so is the row.
 * Where such a saboteur fails a case, a whole piece of that variant lies
 * inside the case's mask: tests/saboteur-expectations/softmax.txt lists
 * where, so that the attention-shaped cases of cases/softmax.md are shown to
 * empty pieces of every variant, and the randomly masked ones to empty none
 * of the OpenCL kernels' work-items (the merge they cannot test). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "saboteur_backend.h"

/* What one saboteur gets wrong; all zero is a correct softmax. */
typedef struct {
    int no_max;           /* exp(x) / sum exp(x), without subtracting the max */
    int last_row_shifted; /* the last row reads the row before it */
    int sum_drops_last;   /* the row sum leaves out the last element */
    int sum_in_storage;   /* terms and row sum rounded to the case type at every step (pairwise) */
    int terms_in_storage; /* each term rounded to the case type before the division */
    int masked_nan;       /* a -inf entry's term is NaN instead of 0 */
} softmax_mistake;

/* value rounded once to dtype (the identity for f64), through its storage. */
static double rounded_to(kcs_dtype dtype, double value)
{
    uint64_t storage;
    kcs_store_element(&storage, dtype, 0, value);
    return kcs_load_element(&storage, dtype, 0);
}

/* Sum of terms[0..count) pairwise, every addition rounded to dtype: the
 * tree a GPU kernel's lanes and warps form, here kept in the storage type
 * (exact for powers of two, so a row of equal terms only overflows). */
static double pairwise_sum_in(kcs_dtype dtype, const double *terms, size_t count)
{
    if (count == 0)
        return 0.0;
    if (count == 1)
        return terms[0];
    size_t half = count / 2;
    return rounded_to(dtype, pairwise_sum_in(dtype, terms, half) +
                                 pairwise_sum_in(dtype, terms + half, count - half));
}

static kcs_status broken_softmax(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const in[], kcs_buffer *const out[],
                                 const softmax_mistake *mistake, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(args->dtype);
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    double *terms = malloc((cols ? cols : 1) * sizeof *terms);
    if (status == KCS_OK && (!y || !terms))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_dtype dtype = args->dtype;
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        size_t source = mistake->last_row_shifted && r == rows - 1 && r > 0 ? r - 1 : r;
        double max = -INFINITY, sum = 0.0;
        for (size_t k = 0; k < cols; k++)
            max = fmax(max, kcs_load_element(x, dtype, source * cols + k));
        double shift = mistake->no_max ? 0.0 : max;
        size_t summed = mistake->sum_drops_last && cols > 1 ? cols - 1 : cols;
        for (size_t k = 0; k < cols; k++) {
            double v = kcs_load_element(x, dtype, source * cols + k);
            terms[k] = mistake->masked_nan && v == -INFINITY ? NAN : exp(v - shift);
            if (mistake->sum_in_storage || mistake->terms_in_storage)
                terms[k] = rounded_to(dtype, terms[k]);
        }
        if (mistake->sum_in_storage) {
            sum = pairwise_sum_in(dtype, terms, summed);
        } else {
            for (size_t k = 0; k < summed; k++)
                sum += terms[k];
        }
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, dtype, r * cols + k, terms[k] / sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    free(terms);
    return status;
}

#define SABOTEUR_FUNCTION(function, ...)                                                           \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const softmax_mistake mistake = {__VA_ARGS__};                                      \
        *seconds = 0;                                                                              \
        return broken_softmax(device, args, in, out, &mistake, err);                               \
    }

SABOTEUR_FUNCTION(softmax_no_max, .no_max = 1)
SABOTEUR_FUNCTION(softmax_last_row_shifted, .last_row_shifted = 1)
SABOTEUR_FUNCTION(softmax_sum_drops_last, .sum_drops_last = 1)
SABOTEUR_FUNCTION(softmax_sum_in_storage, .sum_in_storage = 1)
SABOTEUR_FUNCTION(softmax_terms_in_storage, .terms_in_storage = 1)
SABOTEUR_FUNCTION(softmax_masked_nan, .masked_nan = 1)

/* The softmax of each column instead of each row (axis 0), in double. */
static kcs_status softmax_wrong_axis(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                     kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, bytes = rows * cols * kcs_dtype_size(args->dtype);
    *seconds = 0;
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    if (status == KCS_OK && !y)
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t c = 0; c < cols && status == KCS_OK; c++) {
        double max = -INFINITY, sum = 0.0;
        for (size_t r = 0; r < rows; r++) {
            double v = kcs_load_element(x, args->dtype, r * cols + c);
            max = isnan(v) || isnan(max) ? NAN : fmax(max, v);
        }
        for (size_t r = 0; r < rows; r++)
            sum += exp(kcs_load_element(x, args->dtype, r * cols + c) - max);
        for (size_t r = 0; r < rows; r++)
            kcs_store_element(y, args->dtype, r * cols + c, exp(kcs_load_element(x, args->dtype, r * cols + c) - max) / sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    return status;
}

/* A 16-bit softmax as PyTorch's eager operations compose it on f16 or bf16
 * tensors, e = torch.exp(x - x.max(-1).values); y = e / e.sum(-1): each op
 * computes in float and rounds its result to the storage type, so x - M, its
 * exp, the row sum (added in float) and the quotient are each rounded. */
static kcs_status softmax_composed_in_storage(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                              kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, bytes = rows * cols * kcs_dtype_size(args->dtype);
    kcs_dtype dtype = args->dtype;
    *seconds = 0;
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    double *terms = malloc((cols ? cols : 1) * sizeof *terms);
    if (status == KCS_OK && (!y || !terms))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        float max = -INFINITY, sum = 0.0f;
        for (size_t k = 0; k < cols; k++) {
            float v = (float)kcs_load_element(x, dtype, r * cols + k);
            max = isnan(v) || isnan(max) ? NAN : fmaxf(max, v);
        }
        for (size_t k = 0; k < cols; k++) {
            float d = (float)rounded_to(dtype, (float)kcs_load_element(x, dtype, r * cols + k) - max);
            terms[k] = rounded_to(dtype, expf(d));
            sum += (float)terms[k];
        }
        float stored_sum = (float)rounded_to(dtype, sum);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, dtype, r * cols + k, (float)terms[k] / stored_sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    free(terms);
    return status;
}

/* ---- the exp2 form (docs/softmax.md, "The argument") ----------------------
 *
 * Production softmaxes (PyTorch's, FlashAttention's) compute the exponential
 * as exp2((x - M) * log2 e). These kernels do that in the case type, each
 * operation correctly rounded: t = x - M, p = t * fl(log2 e), an exp2 that
 * errs by a chosen number of ulps in the direction that hurts most (the
 * row's largest terms down, every other term up), a pairwise row sum and one
 * division. f16 and bf16 rows compute all of that in f32, as the spec asks,
 * and round each quotient once to the storage type. With an exp2 of at most 1 ulp this is a correct kernel and must
 * pass every case (tests/saboteur_softmax_test.c); with one far beyond the
 * 3-ulp budget, or with M * log2 e rounded on its own (the fused form), it
 * must fail. */

/* value rounded to the case type (one correct rounding: an f32 operation
 * computed in double and rounded to float is correctly rounded, 53 >= 2*24 + 2). */
static double in_type(kcs_dtype dtype, double value)
{
    return dtype == KCS_F32 ? (double)(float)value : value;
}

/* The next number of the case type after value, towards direction. */
static double step(kcs_dtype dtype, double value, double direction)
{
    return dtype == KCS_F32 ? (double)nextafterf((float)value, (float)direction) : nextafter(value, direction);
}

/* 2^p in the case type, off by less than ulps ulps, upwards or downwards:
 * the neighbour of the exact value on that side (the value itself when it is
 * representable), then ulps - 1 steps further. */
static double exp2_off_by(kcs_dtype dtype, double p, int ulps, int upwards)
{
    long double exact = exp2l((long double)p);
    if (exact == 0.0L || isinf(p) || isnan(p))
        return (double)exact;
    double direction = upwards ? INFINITY : -INFINITY;
    double near = in_type(dtype, (double)exact);
    double result = near;
    if (upwards ? (long double)near < exact : (long double)near > exact)
        result = step(dtype, near, direction);
    for (int s = 1; s < ulps; s++)
        result = step(dtype, result, direction);
    return result;
}

/* Sum of terms[0..count) in the case type, pairwise: each term passes
 * through ceil(log2 count) additions, inside the allowed depth. */
static double pairwise_sum(kcs_dtype dtype, const double *terms, size_t count)
{
    if (count == 0)
        return 0.0;
    if (count == 1)
        return terms[0];
    size_t half = count / 2;
    return in_type(dtype, pairwise_sum(dtype, terms, half) + pairwise_sum(dtype, terms + half, count - half));
}

/* How an exp2-form kernel computes its exponentials. */
typedef struct {
    int exp2_ulps;    /* its exp2 errs by less than this many ulps */
    int fused_max;    /* exp2(fma(x, c, -fl(M c))), FlashAttention's form */
    double log2e;     /* the constant c as written (0: log2 e to full precision) */
} exp2_form;

static kcs_status exp2_softmax(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                               kcs_buffer *const out[], const exp2_form *form, kcs_error *err)
{
    kcs_dtype storage = args->dtype;
    kcs_dtype dtype = storage == KCS_F16 || storage == KCS_BF16 ? KCS_F32 : storage; /* arithmetic */
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(storage);
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    double *terms = malloc((cols ? cols : 1) * sizeof *terms);
    if (status == KCS_OK && (!y || !terms))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    double log2e = in_type(dtype, form->log2e != 0.0 ? form->log2e : 1.44269504088896340735992468100189214);
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        double max = -INFINITY;
        for (size_t k = 0; k < cols; k++) {
            double v = kcs_load_element(x, storage, r * cols + k);
            max = isnan(v) || isnan(max) ? NAN : fmax(max, v);
        }
        double scaled_max = in_type(dtype, max * log2e);
        for (size_t k = 0; k < cols; k++) {
            double v = kcs_load_element(x, storage, r * cols + k);
            double p = form->fused_max ? in_type(dtype, fma(v, log2e, -scaled_max)) /* the product unrounded */
                                       : in_type(dtype, in_type(dtype, v - max) * log2e);
            terms[k] = exp2_off_by(dtype, p, form->exp2_ulps, !(p == 0.0));
        }
        double sum = pairwise_sum(dtype, terms, cols);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, storage, r * cols + k, in_type(dtype, terms[k] / sum));
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    free(terms);
    return status;
}

#define EXP2_FUNCTION(function, ...)                                                               \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const exp2_form form = {__VA_ARGS__};                                               \
        *seconds = 0;                                                                              \
        return exp2_softmax(device, args, in, out, &form, err);                                    \
    }

EXP2_FUNCTION(exp2_within_1_ulp, .exp2_ulps = 1)
EXP2_FUNCTION(exp2_within_3_ulps, .exp2_ulps = 3)
EXP2_FUNCTION(exp2_fused_within_3_ulps, .exp2_ulps = 3, .fused_max = 1)
EXP2_FUNCTION(exp2_off_by_10_ulps, .exp2_ulps = 10)
EXP2_FUNCTION(exp2_short_log2e, .exp2_ulps = 1, .log2e = 1.4427)

/* ---- pieces of a row, per kernel variant ------------------------------------ */

/* How a variant cuts a row of cols elements: piece t of pieces holds slots
 * t, t + pieces, t + 2 pieces, ... of width elements each (strided), or
 * elements [t width, (t + 1) width) (blocked, one slot each). */
typedef struct {
    int blocked;   /* contiguous blocks rather than strided slots */
    size_t pieces; /* work-items, lanes or threads a row */
    size_t width;  /* elements a slot (a block, when blocked) */
} row_layout;

/* The smallest power of two at least value (1 for 0). */
static size_t power_of_two_at_least(size_t value)
{
    size_t power = 1;
    while (power < value)
        power *= 2;
    return power;
}

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

/* Each layout function fills the layout for rows of cols elements of dtype,
 * or returns KCS_UNSUPPORTED where the variant refuses such rows (as the real
 * kernel's supports() does, so that the saboteur runs where it runs). */
typedef kcs_status (*layout_function)(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err);

/* OpenCL group-registers (opencl/softmax.c, enqueue_registers): vectors of
 * four; the fewest work-items, a power of two, that hold the row in 4, 8 or
 * 16 vectors each, up to 128 and then 256; longer rows 256 (the kernel with
 * local memory). */
static kcs_status opencl_registers_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    (void)dtype, (void)err;
    static const size_t vectors[] = {4, 8, 16}, limits[] = {128, 256};
    size_t slots = ceil_div(cols, 4);
    *layout = (row_layout){0, 256, 4};
    for (int l = 0; l < 2; l++)
        for (int v = 0; v < 3; v++) {
            size_t items = power_of_two_at_least(ceil_div(slots, vectors[v]));
            if (items <= limits[l]) {
                layout->pieces = items;
                return KCS_OK;
            }
        }
    return KCS_OK;
}

/* OpenCL group-online (enqueue_online): vectors of four, a power of two of
 * work-items giving each at least 4 (at most 256), doubled while one would
 * visit more than 128. */
static kcs_status opencl_online_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    (void)dtype, (void)err;
    size_t slots = ceil_div(cols, 4), items = power_of_two_at_least(ceil_div(slots, 4));
    if (items > 256)
        items = 256;
    while (items * 2 <= 1024 && slots > items * 128)
        items *= 2;
    *layout = (row_layout){0, items, 4};
    return KCS_OK;
}

/* OpenCL cpu-rows: blocks of KCS_SOFTMAX_CPU_BLOCK (2048) elements. */
static kcs_status opencl_cpu_rows_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    (void)dtype, (void)err;
    *layout = (row_layout){1, ceil_div(cols, 2048), 2048};
    return KCS_OK;
}

/* CUDA slots (cuda/softmax.cu): 16-byte vectors where rows start 16-byte aligned, else elements. */
static size_t cuda_slot_width(size_t cols, kcs_dtype dtype)
{
    size_t size = kcs_dtype_size(dtype);
    return (cols * size) % 16 == 0 ? 16 / size : 1;
}

/* CUDA warp-groups: one slot a lane, as many lanes (1 to 32, a power of two) as the row has slots, else 32
 * lanes of up to 8 slots (4 of eight f16 or bf16). */
static kcs_status cuda_warp_groups_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    size_t width = cuda_slot_width(cols, dtype), slots = cols / width;
    size_t most_per_lane = kcs_dtype_size(dtype) == 2 ? 4 : 8;
    for (size_t lanes = 1; lanes <= 32; lanes *= 2)
        if (slots <= lanes) {
            *layout = (row_layout){0, lanes, width};
            return KCS_OK;
        }
    if (slots <= most_per_lane * 32) {
        *layout = (row_layout){0, 32, width};
        return KCS_OK;
    }
    return kcs_fail(err, KCS_UNSUPPORTED, "CUDA warp-groups holds rows of at most %zu slots", most_per_lane * 32);
}

/* CUDA block-resident: a block of 128, 256 or 512 threads a row, as plan_for in cuda/softmax.cu picks it on an
 * H100 (4 register slots a thread, 2 for f16 and bf16, the rest in a shared-memory stash; 64 registers a thread;
 * 228 KB of shared memory an SM, 227 KB a block, each block's stash, partials and 1 KB reserve): the fewest stash
 * slots among the sizes that keep 4 blocks on an SM, else the most threads on an SM; ties to the smaller. */
static kcs_status cuda_block_resident_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    (void)err;
    const size_t width = cuda_slot_width(cols, dtype), size = kcs_dtype_size(dtype);
    const size_t slots = cols / width, registers = size == 2 ? 2 : 4, compute = size == 8 ? 8 : 4;
    const size_t block_limit = 232448, sm_shared = block_limit + 1024;
    size_t chosen = 0, chosen_stash = 0, chosen_resident = 0;
    int chosen_enough = 0;
    for (size_t threads = 128; threads <= 512; threads *= 2) {
        size_t per_thread = ceil_div(slots, threads);
        size_t stash = per_thread > registers ? per_thread - registers : 0;
        size_t stash_bytes = stash * threads * width * size;
        if (stash_bytes + 1024 > block_limit)
            continue;
        size_t by_shared = sm_shared / (stash_bytes + 2 * (threads / 32) * compute + 1024);
        size_t by_registers = 65536 / (64 * threads);
        size_t blocks = by_shared < by_registers ? by_shared : by_registers;
        int enough = blocks >= 4;
        if (!chosen || (enough && !chosen_enough) || (enough && stash < chosen_stash) ||
            (!enough && !chosen_enough && threads * blocks > chosen_resident)) {
            chosen = threads;
            chosen_stash = stash;
            chosen_resident = threads * blocks;
            chosen_enough = enough;
        }
    }
    *layout = (row_layout){0, chosen ? chosen : 512, width};
    return KCS_OK;
}

/* CUDA online: 1024 threads a row (512 for f64), refused where its summation
 * depth (online_depth in cuda/softmax.cu) exceeds D(cols): short rows. */
static kcs_status cuda_online_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    size_t width = cuda_slot_width(cols, dtype), threads = dtype == KCS_F64 ? 512 : 1024;
    size_t depth = width + 4 + 9 * ceil_div(cols / width, 4 * threads) + 9 * 10;
    size_t log2_cols = 0;
    while (((size_t)1 << log2_cols) < cols)
        log2_cols++;
    size_t limit = cols - 1 < 2048 + log2_cols ? cols - 1 : 2048 + log2_cols;
    if (depth > limit)
        return kcs_fail(err, KCS_UNSUPPORTED, "CUDA online refuses rows this short (depth rule)");
    *layout = (row_layout){0, threads, width};
    return KCS_OK;
}

/* CUDA cluster: a row over a cluster of 2, 4, 8 or 16 blocks, each a slice of ceil(slots / blocks) consecutive
 * slots (the last block fewer, or none), as plan_for in cuda/softmax.cu picks it on an H100: the fewest blocks
 * whose slices are at most 64 KB and 16384 elements, else 16, while a slice, rounded to 16 bytes, and the
 * kernel's arrays (8 warps' two partials and 16 blocks' pairs in the compute type) and 1 KB of reserve fit
 * 227 KB; refused where its summation depth (cluster_depth: a thread's chain over its slots of 256 threads,
 * plus 25) exceeds D(cols). */
static kcs_status cuda_cluster_layout(size_t cols, kcs_dtype dtype, row_layout *layout, kcs_error *err)
{
    const size_t width = cuda_slot_width(cols, dtype), size = kcs_dtype_size(dtype), slots = cols / width;
    const size_t compute = size == 8 ? 8 : 4, slot_bytes = width * size;
    const size_t slice_limit = 16384 * size < 65536 ? 16384 * size : 65536;
    for (size_t blocks = 2; blocks <= 16; blocks *= 2) {
        size_t slice = ceil_div(slots, blocks), shared = ceil_div(slice * slot_bytes, 16) * 16 + (16 + 32) * compute;
        if (shared + 1024 > 232448 || (slice * slot_bytes > slice_limit && blocks < 16))
            continue;
        size_t depth = ceil_div(slice, 256) * width + 25, log2_cols = 0;
        while (((size_t)1 << log2_cols) < cols)
            log2_cols++;
        if (depth > (cols - 1 < 2048 + log2_cols ? cols - 1 : 2048 + log2_cols))
            return kcs_fail(err, KCS_UNSUPPORTED, "CUDA cluster refuses rows this short (depth rule)");
        *layout = (row_layout){1, blocks, slice * width};
        return KCS_OK;
    }
    return kcs_fail(err, KCS_UNSUPPORTED, "CUDA cluster holds rows of at most 16 slices of 227 KB");
}

/* Softmax of each row from pieces cut by layout, each summed against its own
 * max and merged by rescaling, an empty piece not kept out. Pieces that hold
 * none of the row (the row ends before their first slot) take no part. */
static kcs_status pieces_softmax(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                 kcs_buffer *const out[], layout_function cut, int empty_as_one, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(args->dtype);
    row_layout layout = {0, 1, 1};
    kcs_status status = cols ? cut(cols, args->dtype, &layout, err) : KCS_OK;
    void *x = NULL;
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    double *piece_max = malloc(layout.pieces * sizeof *piece_max);
    double *piece_sum = malloc(layout.pieces * sizeof *piece_sum);
    if (status == KCS_OK && (!y || !piece_max || !piece_sum))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    size_t slots = cols ? ceil_div(cols, layout.width) : 0;
    /* pieces 0 .. holding - 1 hold some of the row */
    size_t holding = layout.blocked || slots > layout.pieces ? layout.pieces : slots;
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        for (size_t t = 0; t < holding; t++) {
            piece_max[t] = -INFINITY;
            piece_sum[t] = 0.0;
        }
        /* element k: its slot, and the piece holding that slot */
        for (int pass = 0; pass < 2; pass++)
            for (size_t k = 0; k < cols; k++) {
                size_t slot = k / layout.width;
                size_t t = layout.blocked ? slot : slot % layout.pieces;
                double v = kcs_load_element(x, args->dtype, r * cols + k);
                if (pass == 0)
                    piece_max[t] = fmax(piece_max[t], v);
                else
                    piece_sum[t] += exp(v - piece_max[t]); /* NaN for a piece of nothing but -inf */
            }
        double max = -INFINITY, sum = 0.0;
        for (size_t t = 0; t < holding; t++)
            max = fmax(max, piece_max[t]);
        for (size_t t = 0; t < holding; t++)
            sum += empty_as_one && piece_max[t] == -INFINITY ? 1.0 : piece_sum[t] * exp(piece_max[t] - max);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, args->dtype, r * cols + k,
                              exp(kcs_load_element(x, args->dtype, r * cols + k) - max) / sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    free(piece_max);
    free(piece_sum);
    return status;
}

#define PIECES_SABOTEUR(function, layout)                                                          \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        *seconds = 0;                                                                              \
        return pieces_softmax(device, args, in, out, layout, 0, err);                              \
    }                                                                                              \
    static KCS_KERNEL_SUPPORTS(function##_supports)                                                \
    {                                                                                              \
        (void)device;                                                                              \
        row_layout unused;                                                                         \
        return args->softmax.cols ? layout(args->softmax.cols, args->dtype, &unused, err) : KCS_OK; \
    }

PIECES_SABOTEUR(empty_piece_opencl_registers, opencl_registers_layout)
PIECES_SABOTEUR(empty_piece_opencl_online, opencl_online_layout)
PIECES_SABOTEUR(empty_piece_opencl_cpu_rows, opencl_cpu_rows_layout)
PIECES_SABOTEUR(empty_piece_cuda_warp_groups, cuda_warp_groups_layout)
PIECES_SABOTEUR(empty_piece_cuda_block_resident, cuda_block_resident_layout)
PIECES_SABOTEUR(empty_piece_cuda_online, cuda_online_layout)
PIECES_SABOTEUR(empty_piece_cuda_cluster, cuda_cluster_layout)

/* Pieces as OpenCL group-online's work-items, an empty one merged as 1: its
 * rescaling guarded against exp(-inf - (-inf)) by a factor of 1, and its sum
 * started at 1 for its own max, so that it adds 1 to the row sum. */
static kcs_status empty_piece_as_one(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                     kcs_buffer *const out[], double *seconds, kcs_error *err)
{
    *seconds = 0;
    return pieces_softmax(device, args, in, out, opencl_online_layout, 1, err);
}

#define SABOTEUR(name, description, function)                                                      \
    {"softmax", KCS_F64, name, description, function, NULL},                                       \
    {"softmax", KCS_F32, name, description, function, NULL}

/* A mistake of every dtype, f16 and bf16 included. */
#define EVERY_TYPE_SABOTEUR(name, description, function)                                           \
    SABOTEUR(name, description, function),                                                         \
    {"softmax", KCS_F16, name, description, function, NULL},                                       \
    {"softmax", KCS_BF16, name, description, function, NULL}

/* A mistake of the 16-bit storage types only. */
#define HALF_SABOTEUR(name, description, function)                                                 \
    {"softmax", KCS_F16, name, description, function, NULL},                                       \
    {"softmax", KCS_BF16, name, description, function, NULL}

#define PIECES(name, description, function)                                                        \
    {"softmax", KCS_F64, name, description, function, function##_supports},                        \
    {"softmax", KCS_F32, name, description, function, function##_supports}

/* The cases `ninja check` runs these saboteurs on (configure.py reads the lines
 * below; tests/saboteur-expectations/softmax.txt says which saboteur must fail
 * where): overflow, the randomly masked cases, and the attention-shaped ones. */
/* kcs-saboteur-cases: softmax/f32-near-1e4 softmax/f64-near-1e4 */
/* kcs-saboteur-cases: softmax/f32-masked softmax/f64-masked softmax/f32-masked-cols33 */
/* kcs-saboteur-cases: softmax/f32-causal-64 softmax/f64-causal-64 softmax/f32-one-entry-64 */
/* kcs-saboteur-cases: softmax/f64-one-entry-64 softmax/f32-causal-1000 softmax/f64-causal-1000 */
/* kcs-saboteur-cases: softmax/f32-masked-start-1000 softmax/f32-masked-middle-1000 */
/* kcs-saboteur-cases: softmax/f32-masked-end-1000 softmax/f64-masked-start-1000 */
/* kcs-saboteur-cases: softmax/f32-causal-20000 softmax/f64-causal-20000 */
/* kcs-saboteur-cases: softmax/f32-one-entry-4097 softmax/f32-causal-held-30001 */
/* kcs-saboteur-cases: softmax/f16-cols33 softmax/bf16-cols33 softmax/f16-cols1000 */
/* kcs-saboteur-cases: softmax/bf16-cols1000 softmax/f16-near-1e4 softmax/bf16-near-1e4 */
/* kcs-saboteur-cases: softmax/f16-causal-64 softmax/bf16-causal-64 softmax/f16-constant-65536 */
/* kcs-saboteur-cases: softmax/bf16-constant-65536 softmax/f16-near-equal-70000 */
/* kcs-saboteur-cases: softmax/bf16-near-equal-4096 softmax/f16-ramp-underflow */
static const kcs_kernel rows[] = {
    EVERY_TYPE_SABOTEUR("no-max-subtraction", "exp(x) / sum exp(x): overflows for x near 1e4", softmax_no_max),
    EVERY_TYPE_SABOTEUR("last-row-off-by-one", "the last row is computed from the row before it",
                        softmax_last_row_shifted),
    EVERY_TYPE_SABOTEUR("sum-one-element-short", "the row sum leaves out the last element",
                        softmax_sum_drops_last),
    HALF_SABOTEUR("sum-in-storage-type", "terms and a pairwise row sum rounded to f16 or bf16 at every step",
                  softmax_sum_in_storage),
    HALF_SABOTEUR("terms-in-storage-type", "exp(x - M) rounded to f16 or bf16, then divided: two roundings",
                  softmax_terms_in_storage),
    PIECES("empty-piece-opencl-group-registers",
           "pieces as OpenCL group-registers' work-items, an empty one merged as NaN",
           empty_piece_opencl_registers),
    PIECES("empty-piece-opencl-group-online",
           "pieces as OpenCL group-online's work-items, an empty one merged as NaN",
           empty_piece_opencl_online),
    PIECES("empty-piece-opencl-cpu-rows",
           "pieces as OpenCL cpu-rows' blocks of 2048, an empty one merged as NaN",
           empty_piece_opencl_cpu_rows),
    PIECES("empty-piece-cuda-warp-groups",
           "pieces as CUDA warp-groups' lanes, an empty one merged as NaN",
           empty_piece_cuda_warp_groups),
    PIECES("empty-piece-cuda-block-resident",
           "pieces as CUDA block-resident's threads, an empty one merged as NaN",
           empty_piece_cuda_block_resident),
    PIECES("empty-piece-cuda-online",
           "pieces as CUDA online's threads, an empty one merged as NaN",
           empty_piece_cuda_online),
    PIECES("empty-piece-cuda-cluster",
           "pieces as CUDA cluster's blocks (slices of a row), an empty one merged as NaN",
           empty_piece_cuda_cluster),

    EVERY_TYPE_SABOTEUR("wrong-axis", "the softmax of each column instead of each row", softmax_wrong_axis),
    EVERY_TYPE_SABOTEUR("minus-inf-to-nan", "a -inf entry's term is NaN instead of 0: masked rows are NaN",
                        softmax_masked_nan),
    HALF_SABOTEUR("composed-in-storage-type",
                  "PyTorch's eager exp(x - max) / sum in f16 or bf16: x - M, exp, the row sum and the quotient rounded",
                  softmax_composed_in_storage),
    SABOTEUR("empty-piece-merged-as-one", "pieces as OpenCL group-online's work-items, an empty one adding 1 to the sum",
             empty_piece_as_one),

    /* the exp2 form (above): a production kernel's exponential, made wrong */
    SABOTEUR("exp2-short-log2e", "exp2((x - M) * 1.4427): log2 e to five digits, 2.4e-6 off",
             exp2_short_log2e),
};

const kcs_kernel_table kcs_saboteur_softmax_kernels = KCS_KERNEL_TABLE(rows);

#define EXP2_ROW(name, description, function)                                                      \
    {"softmax", KCS_F64, name, description, function, NULL},                                       \
    {"softmax", KCS_F32, name, description, function, NULL},                                       \
    {"softmax", KCS_F16, name, description, function, NULL},                                       \
    {"softmax", KCS_BF16, name, description, function, NULL}

/* Not saboteurs, and not run by the saboteur runner (three are correct, and
 * the fourth fails only where the bound's slack does not hide it): the exp2
 * form with exp2s of 1 and 3 ulps, and FlashAttention's fused form, which
 * must pass every case, and one off by up to 10 ulps, which must fail on
 * rows of two columns (tests/saboteur_softmax_test.c says why 10). */
static const kcs_kernel exp2_form_rows[] = {
    EXP2_ROW("exp2-within-1-ulp", "exp2((x - M) log2 e), its exp2 off by up to 1 ulp the harmful way",
             exp2_within_1_ulp),
    EXP2_ROW("exp2-within-3-ulps", "exp2((x - M) log2 e), its exp2 off by up to 3 ulps the harmful way",
             exp2_within_3_ulps),
    EXP2_ROW("exp2-fused-within-3-ulps", "exp2(fma(x, log2 e, -fl(M log2 e))), exp2 off by up to 3 ulps",
             exp2_fused_within_3_ulps),
    EXP2_ROW("exp2-off-by-10-ulps", "exp2((x - M) log2 e), its exp2 off by 9 to 10 ulps the harmful way",
             exp2_off_by_10_ulps),
};

const kcs_kernel_table kcs_softmax_exp2_form_kernels = KCS_KERNEL_TABLE(exp2_form_rows);
