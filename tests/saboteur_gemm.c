/* saboteur_gemm.c: broken GEMMs, each a mistake real kernels make: an
 * operand read with the wrong transpose, a k loop that stops one short, a
 * ragged edge tile never written, C read when beta = 0, A read when
 * alpha = 0, f64 accumulated in f32, alpha and beta swapped; f16 and bf16
 * GEMMs that round to 16 bits too early (partial sums kept in the storage
 * type, products rounded to it) or drop a slice of k (f32 and f64 too: the
 * tensor-core modes, where one skipped instruction drops 16 terms of k); and an f32 GEMM
 * that flushes subnormals to zero as a GPU built with -ftz does, which is a
 * mistake only where the device does not say it flushes (docs/gemm.md,
 * "Flush to zero"; tests/saboteur_gemm_test.c runs it both ways); FP8 GEMMs
 * that apply the per-tensor scales wrongly (b_scale forgotten, a_scale used
 * twice), accumulate in f16, drop a slice of k, or leave the tensor cores'
 * FP8 accumulation (13 fraction bits kept in blocks of 32 products, the
 * bound's model of it) to run over all of k without promotion into f32, as
 * cuBLASLt's FAST_ACCUM does (docs/gemm.md, "FP8"); beside that one, a
 * control that is no mistake: the same accumulation promoted into f32
 * every 128 products, as cuda/gemm/fp8_wgmma.cu does and the bound assumes,
 * which must pass every FP8 case (tests/saboteur_gemm_test.c); and
 * one saboteur for each arithmetic model of docs/gemm.md ("Arithmetic
 * models") that no mistake above implements: A read with the other
 * transpose, alpha or beta taken as 1, C never added, f32 inputs read as
 * TF32 (rounded or truncated), alpha * AB rounded to a 16-bit C_out before
 * beta * C is added (cuBLAS's epilogue), and a 16-bit running sum rounded
 * once per MMA's k-block rather than per product. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "saboteur_backend.h"

/* What one saboteur gets wrong; all zero is a correct GEMM. */
typedef struct {
    int flip_transpose_a;  /* reads A as if transa were the other way */
    int flip_transpose_b;  /* reads B as if transb were the other way */
    int drop_last_term;    /* the k loop stops at k - 1 */
    int edge_tile;         /* columns past the last whole tile of this many are never written */
    int ignore_beta_zero;  /* adds beta * c even when beta = 0 */
    int ignore_alpha_zero; /* computes alpha * A B even when alpha = 0 */
    int accumulate_float;  /* f64 dot products carried in float */
    int swap_alpha_beta;   /* beta * A B + alpha * C */
    int flush_to_zero;     /* f32: subnormal inputs read as 0, every subnormal result made 0 */
    int accumulate_16_bits; /* f16, bf16: each partial sum rounded to the case type */
    int round_products;    /* f16, bf16: each product rounded to the case type */
    int drop_k_slice;      /* the 16 terms from k / 2 on (a tile of k) are never added */
    int scale_once;        /* FP8: alpha * a_scale, b_scale forgotten */
    int a_scale_twice;     /* FP8: alpha * a_scale * a_scale, b_scale read from the wrong place */
    int alpha_as_one;      /* alpha != 0 taken as 1 */
    int beta_as_one;       /* beta != 0 taken as 1: C added unscaled */
    int c_ignored;         /* beta * C never added */
    int tf32_inputs;       /* f32: each input converted to TF32, 1: to nearest (ties away), 2: truncated */
    int round_alpha_ab;    /* alpha * AB rounded to C_out's type before beta * C is added */
    int accumulate_per_mma; /* f16, bf16, FP8: a 16-bit running sum rounded once per k-block of 16 (FP8: 32)
                               products, each block summed in f32 */
    int fp8_tensor_sum;    /* FP8: block sums as the bound models the tensor cores (fp8_block_step); 1: promoted
                              into an f32 sum every 128 products (the control), 2: never promoted */
} gemm_mistake;

/* value rounded once to dtype, as a double. */
static double rounded_to(kcs_dtype dtype, double value)
{
    double slot;
    kcs_store_element(&slot, dtype, 0, value);
    return kcs_load_element(&slot, dtype, 0);
}

/* An f32 input as tensor cores read it in TF32 mode: to nearest, ties away
 * from zero (as cvt.rna.tf32.f32), or with its 13 low bits ignored. */
static float tf32(float value, int how)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    if (isfinite(value))
        bits = ((how == 1 ? bits + 0x1000u : bits) & ~0x1fffu);
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* An f32 value as a device that flushes subnormals sees it: zero (of the same
 * sign) below the smallest normal. */
static float flushed(float value)
{
    return fabsf(value) < FLT_MIN ? copysignf(0.0f, value) : value;
}

/* The FP8 bound's model of the tensor cores (docs/gemm.md, "FP8"): blocks
 * of fp8_block products, each block step aligning its addends (the carried
 * sum and the block's products) to the largest of them and keeping
 * fp8_fraction_bits below its leading bit, truncated, then truncating the
 * exact sum of what is kept to as many fraction bits of its own; the
 * carried sum promoted into f32 every fp8_promotion products, or never. */
enum { fp8_block = 32, fp8_fraction_bits = 13, fp8_promotion = 128 };

/* value truncated toward zero to a multiple of quantum, a power of two. */
static double truncated(double value, double quantum)
{
    return trunc(value / quantum) * quantum;
}

/* e where 2^e <= |value| < 2^(e + 1), value finite and not 0. */
static int leading_exponent(double value)
{
    int e;
    frexp(value, &e);
    return e - 1;
}

/* One block step: the carried sum and count products in, the new carried
 * sum out. Every addend kept is a multiple of 2^(e - 13) below 2^(e + 1),
 * so their sum (at most 33 of them) is exact in double. */
static double fp8_block_step(double carried, const double *products, size_t count)
{
    double largest = fabs(carried);
    for (size_t q = 0; q < count; q++)
        largest = fmax(largest, fabs(products[q]));
    if (largest == 0.0 || !isfinite(largest)) { /* nothing to align; IEEE for infinities and NaN */
        double sum = carried;
        for (size_t q = 0; q < count; q++)
            sum += products[q];
        return sum;
    }
    double quantum = ldexp(1.0, leading_exponent(largest) - fp8_fraction_bits);
    double sum = truncated(carried, quantum);
    for (size_t q = 0; q < count; q++)
        sum += truncated(products[q], quantum);
    return sum == 0.0 ? 0.0 : truncated(sum, ldexp(1.0, leading_exponent(sum) - fp8_fraction_bits));
}

/* Element (i, j)'s unscaled dot product of an FP8 case through the model:
 * promoted (into an f32 sum every fp8_promotion products) or not. */
static double fp8_tensor_core_element(const kcs_op_args *args, const void *a, const void *b, size_t i, size_t j,
                                      int promoted)
{
    const kcs_gemm_args *g = &args->gemm;
    size_t m = g->m, n = g->n, k = g->k;
    double products[fp8_block], carried = 0.0;
    float total = 0.0f;
    for (size_t p0 = 0; p0 < k; p0 += fp8_block) {
        size_t count = k - p0 < fp8_block ? k - p0 : fp8_block;
        for (size_t q = 0; q < count; q++) {
            size_t p = p0 + q;
            products[q] = kcs_load_element(a, args->dtype, g->transpose_a ? p * m + i : i * k + p) *
                          kcs_load_element(b, args->dtype, g->transpose_b ? j * k + p : p * n + j);
        }
        carried = fp8_block_step(carried, products, count);
        if (promoted && ((p0 + count) % fp8_promotion == 0 || p0 + count == k)) {
            total += (float)carried; /* carried has at most 14 significant bits: exact in f32 */
            carried = 0.0;
        }
    }
    return promoted ? (double)total : (double)(float)carried;
}

/* One element in f32 on a device that flushes subnormal inputs and results:
 * the products summed in order, then alpha times the sum plus beta times c,
 * each operation's result flushed. */
static double flushing_element(const kcs_op_args *args, const void *a, const void *b, double c, size_t i,
                               size_t j)
{
    const kcs_gemm_args *g = &args->gemm;
    size_t m = g->m, n = g->n, k = g->k;
    float sum = 0.0f;
    for (size_t p = 0; p < k && g->alpha != 0.0; p++) {
        float a_ip = flushed((float)kcs_load_element(a, KCS_F32, g->transpose_a ? p * m + i : i * k + p));
        float b_pj = flushed((float)kcs_load_element(b, KCS_F32, g->transpose_b ? j * k + p : p * n + j));
        sum = flushed(sum + flushed(a_ip * b_pj));
    }
    float value = flushed(flushed((float)g->alpha) * sum);
    if (g->beta != 0.0)
        value = flushed(value + flushed(flushed((float)g->beta) * flushed((float)c)));
    return value;
}

static kcs_status broken_gemm(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                              kcs_buffer *const out[], const gemm_mistake *mistake, kcs_error *err)
{
    const kcs_gemm_args *g = &args->gemm;
    size_t m = g->m, n = g->n, k = g->k, size = kcs_dtype_size(args->dtype);
    kcs_dtype c_dtype = kcs_gemm_c_dtype(args);
    size_t c_size = kcs_dtype_size(c_dtype);
    void *a = NULL, *b = NULL, *c = NULL, *result = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], m * k * size, &a, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[1], k * n * size, &b, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[2], m * n * c_size, &c, err);
    if (status == KCS_OK) /* starts from the output as it is (poisoned), so unwritten elements stay so */
        status = kcs_saboteur_fetch(device, out[0], m * n * c_size, &result, err);
    double *row = calloc(n + 1, sizeof *row), *block = calloc(n + 1, sizeof *block);
    if (status == KCS_OK && (!row || !block))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    double alpha = mistake->swap_alpha_beta ? g->beta : g->alpha;
    if (mistake->alpha_as_one && alpha != 0.0)
        alpha = 1.0;
    int fp8 = args->dtype == KCS_FP8_E4M3 || args->dtype == KCS_FP8_E5M2;
    if (fp8) /* the per-tensor scales, as cuBLASLt applies them: alpha * a_scale * b_scale */
        alpha *= mistake->scale_once ? g->a_scale : g->a_scale * (mistake->a_scale_twice ? g->a_scale : g->b_scale);
    kcs_dtype sum_dtype = fp8 ? KCS_F16 : args->dtype; /* accumulate_16_bits: FP8 sums in f16 */
    double beta = mistake->swap_alpha_beta ? g->alpha : g->beta;
    if (mistake->beta_as_one && beta != 0.0)
        beta = 1.0;
    if (mistake->c_ignored)
        beta = 0.0;
    int transpose_a = mistake->flip_transpose_a ? !g->transpose_a : g->transpose_a;
    size_t mma_k = fp8 ? 32 : 16; /* accumulate_per_mma */
    int transpose_b = mistake->flip_transpose_b ? !g->transpose_b : g->transpose_b;
    size_t terms = mistake->drop_last_term && k > 0 ? k - 1 : k;
    size_t written = mistake->edge_tile ? n / (size_t)mistake->edge_tile * (size_t)mistake->edge_tile : n;
    int in_float = args->dtype != KCS_F64 || mistake->accumulate_float; /* f16, bf16 and f32 compute in f32 */
    size_t slice_begin = k / 2, slice_end = k / 2 + 16; /* drop_k_slice */
    for (size_t i = 0; i < m && status == KCS_OK; i++) {
        memset(row, 0, n * sizeof *row);
        memset(block, 0, n * sizeof *block);
        if (fp8 && mistake->fp8_tensor_sum && alpha != 0.0)
            for (size_t j = 0; j < n; j++)
                row[j] = fp8_tensor_core_element(args, a, b, i, j, mistake->fp8_tensor_sum == 1);
        else if (alpha != 0.0 || mistake->ignore_alpha_zero)
            for (size_t p = 0; p < terms; p++) {
                if (mistake->drop_k_slice && p >= slice_begin && p < slice_end)
                    continue;
                double a_ip = kcs_load_element(a, args->dtype, transpose_a ? p * m + i : i * k + p);
                if (mistake->tf32_inputs && args->dtype == KCS_F32)
                    a_ip = tf32((float)a_ip, mistake->tf32_inputs);
                int block_ends = (p + 1) % mma_k == 0 || p + 1 == terms;
                for (size_t j = 0; j < n; j++) {
                    double b_pj = kcs_load_element(b, args->dtype, transpose_b ? j * k + p : p * n + j);
                    if (mistake->tf32_inputs && args->dtype == KCS_F32)
                        b_pj = tf32((float)b_pj, mistake->tf32_inputs);
                    double product = in_float ? (double)((float)a_ip * (float)b_pj) : a_ip * b_pj;
                    if (mistake->round_products)
                        product = rounded_to(args->dtype, product);
                    if (mistake->accumulate_per_mma) {
                        block[j] = (double)((float)block[j] + (float)product);
                        if (block_ends) {
                            row[j] = rounded_to(sum_dtype, (double)((float)row[j] + (float)block[j]));
                            block[j] = 0.0;
                        }
                        continue;
                    }
                    row[j] = in_float ? (double)((float)row[j] + (float)product) : row[j] + product;
                    if (mistake->accumulate_16_bits)
                        row[j] = rounded_to(sum_dtype, row[j]);
                }
            }
        for (size_t j = 0; j < written; j++) {
            double value = alpha * row[j];
            if (mistake->round_alpha_ab)
                value = rounded_to(c_dtype, value);
            if (beta != 0.0 || mistake->ignore_beta_zero)
                value += beta * kcs_load_element(c, c_dtype, i * n + j);
            if (mistake->flush_to_zero && args->dtype == KCS_F32)
                value = flushing_element(args, a, b, kcs_load_element(c, c_dtype, i * n + j), i, j);
            kcs_store_element(result, c_dtype, i * n + j, value);
        }
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], result, m * n * c_size, err);
    free(a);
    free(b);
    free(c);
    free(result);
    free(row);
    free(block);
    return status;
}

#define GEMM_SABOTEUR_FUNCTION(function, ...)                                                      \
    static kcs_status function(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[], \
                               kcs_buffer *const out[], double *seconds, kcs_error *err)             \
    {                                                                                              \
        static const gemm_mistake mistake = {__VA_ARGS__};                                         \
        *seconds = 0;                                                                              \
        return broken_gemm(device, args, in, out, &mistake, err);                                  \
    }

GEMM_SABOTEUR_FUNCTION(gemm_flips_transpose_b, .flip_transpose_b = 1)
GEMM_SABOTEUR_FUNCTION(gemm_drops_last_term, .drop_last_term = 1)
GEMM_SABOTEUR_FUNCTION(gemm_misses_edge_tile, .edge_tile = 16)
GEMM_SABOTEUR_FUNCTION(gemm_reads_c_when_beta_zero, .ignore_beta_zero = 1)
GEMM_SABOTEUR_FUNCTION(gemm_reads_a_when_alpha_zero, .ignore_alpha_zero = 1)
GEMM_SABOTEUR_FUNCTION(gemm_accumulates_in_float, .accumulate_float = 1)
GEMM_SABOTEUR_FUNCTION(gemm_swaps_alpha_beta, .swap_alpha_beta = 1)
GEMM_SABOTEUR_FUNCTION(gemm_flushes_subnormals, .flush_to_zero = 1)
GEMM_SABOTEUR_FUNCTION(gemm_accumulates_in_16_bits, .accumulate_16_bits = 1)
GEMM_SABOTEUR_FUNCTION(gemm_rounds_products, .round_products = 1)
GEMM_SABOTEUR_FUNCTION(gemm_drops_k_slice, .drop_k_slice = 1)
GEMM_SABOTEUR_FUNCTION(gemm_scales_once, .scale_once = 1)
GEMM_SABOTEUR_FUNCTION(gemm_uses_a_scale_twice, .a_scale_twice = 1)
GEMM_SABOTEUR_FUNCTION(gemm_flips_transpose_a, .flip_transpose_a = 1)
GEMM_SABOTEUR_FUNCTION(gemm_ignores_alpha, .alpha_as_one = 1)
GEMM_SABOTEUR_FUNCTION(gemm_ignores_beta, .beta_as_one = 1)
GEMM_SABOTEUR_FUNCTION(gemm_ignores_c, .c_ignored = 1)
GEMM_SABOTEUR_FUNCTION(gemm_rounds_inputs_to_tf32, .tf32_inputs = 1)
GEMM_SABOTEUR_FUNCTION(gemm_truncates_inputs_to_tf32, .tf32_inputs = 2)
GEMM_SABOTEUR_FUNCTION(gemm_rounds_alpha_ab_first, .round_alpha_ab = 1)
GEMM_SABOTEUR_FUNCTION(gemm_accumulates_per_mma, .accumulate_per_mma = 1)
GEMM_SABOTEUR_FUNCTION(gemm_promotes_every_128_products, .fp8_tensor_sum = 1)
GEMM_SABOTEUR_FUNCTION(gemm_accumulates_without_promotion, .fp8_tensor_sum = 2)

#define SABOTEUR(name, description, function)                                                      \
    {"gemm", KCS_F64, name, description, function, NULL},                                          \
    {"gemm", KCS_F32, name, description, function, NULL}

/* A saboteur of the 16-bit storage types, f16 and bf16. */
#define SABOTEUR_16_BITS(name, description, function)                                              \
    {"gemm", KCS_F16, name, description, function, NULL},                                          \
    {"gemm", KCS_BF16, name, description, function, NULL}

/* A saboteur of the FP8 types, e4m3 and e5m2. */
#define SABOTEUR_FP8(name, description, function)                                                  \
    {"gemm", KCS_FP8_E4M3, name, description, function, NULL},                                     \
    {"gemm", KCS_FP8_E5M2, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/gemm.txt says which saboteur must fail where):
 * kcs-saboteur-cases: gemm/f64-nt-37x29x19 gemm/f32-beta0-nan-c gemm/f32-alpha0-nan-a gemm/f32-products-near-underflow gemm/f16-16x16x4096 gemm/bf16-16x16x4096 gemm/f16-nt-37x29x19-f32-out gemm/bf16-7x93x144-f32-out gemm/f16-tensor-16x16x4096 gemm/bf16-tensor-16x16x4096-f32-out gemm/f16-tensor-nt-37x29x19-f32-out gemm/bf16-tensor-7x93x144-f32-out gemm/f32-tf32-7x93x144 gemm/fp8_e4m3-nt-48x32x64-f32-out gemm/fp8_e4m3-nt-32x32x256-bf16-out gemm/fp8_e4m3-16x16x4096-f32-out gemm/fp8_e5m2-nt-32x16x48-edges-f32-out gemm/f16-nt-37x29x19 gemm/bf16-tensor-nt-200x136x144 */
static const kcs_kernel rows[] = {
    SABOTEUR("flips-transpose-b", "reads B transposed when it is not, and the reverse",
             gemm_flips_transpose_b),
    SABOTEUR("drops-last-term", "the k loop stops one short", gemm_drops_last_term),
    SABOTEUR("misses-edge-tile", "columns past the last whole 16-column tile never written",
             gemm_misses_edge_tile),
    SABOTEUR("reads-c-when-beta-zero", "adds beta * C even when beta = 0 (0 * NaN = NaN)",
             gemm_reads_c_when_beta_zero),
    SABOTEUR("reads-a-when-alpha-zero", "computes alpha * A B even when alpha = 0",
             gemm_reads_a_when_alpha_zero),
    SABOTEUR("accumulates-in-float", "dot products carried in f32", gemm_accumulates_in_float),
    SABOTEUR("swaps-alpha-beta", "beta * A B + alpha * C", gemm_swaps_alpha_beta),
    {"gemm", KCS_F32, "flushes-subnormals",
     "f32 with subnormal inputs and results flushed to zero, as built with -ftz=true", gemm_flushes_subnormals,
     NULL},
    SABOTEUR_16_BITS("accumulates-in-16-bits", "each partial sum rounded to f16 or bf16 instead of kept in f32",
                     gemm_accumulates_in_16_bits),
    SABOTEUR_16_BITS("rounds-products-to-16-bits", "each product rounded to f16 or bf16 before it is added",
                     gemm_rounds_products),
    SABOTEUR_16_BITS("drops-k-slice", "the 16 terms from k / 2 on (one tile of k) never added", gemm_drops_k_slice),
    /* the tensor-core modes: one tensor-core instruction's k skipped, in the TF32 and f64 modes too */
    SABOTEUR("drops-k-slice", "the 16 terms from k / 2 on (one tile of k) never added", gemm_drops_k_slice),
    SABOTEUR_FP8("scales-once", "alpha * a_scale: b_scale never applied", gemm_scales_once),
    SABOTEUR_FP8("uses-a-scale-twice", "alpha * a_scale * a_scale: b_scale read from a_scale's place",
                 gemm_uses_a_scale_twice),
    SABOTEUR_FP8("accumulates-in-f16", "each partial sum rounded to f16 instead of kept in f32",
                 gemm_accumulates_in_16_bits),
    SABOTEUR_FP8("drops-k-slice", "the 16 terms from k / 2 on (one tile of k) never added", gemm_drops_k_slice),
    SABOTEUR_FP8("accumulates-without-promotion",
                 "the tensor cores' FP8 sum (13 fraction bits, blocks of 32) over all of k, never promoted into f32",
                 gemm_accumulates_without_promotion),
    /* the control, no mistake: what the FP8 bound assumes and cuda/gemm/fp8_wgmma.cu does; passes every case */
    SABOTEUR_FP8("promotes-every-128-products",
                 "control: the tensor cores' FP8 sum promoted into f32 every 128 products, as the bound assumes",
                 gemm_promotes_every_128_products),
    /* one for each arithmetic model no mistake above implements (docs/gemm.md, "Arithmetic models") */
    SABOTEUR("flips-transpose-a", "reads A transposed when it is not, and the reverse", gemm_flips_transpose_a),
    SABOTEUR("ignores-alpha", "alpha != 0 taken as 1", gemm_ignores_alpha),
    SABOTEUR("ignores-beta", "beta != 0 taken as 1: C added unscaled", gemm_ignores_beta),
    SABOTEUR("ignores-c", "beta * C never added", gemm_ignores_c),
    {"gemm", KCS_F32, "rounds-inputs-to-tf32", "f32 inputs rounded to TF32 (nearest, ties away), summed in f32",
     gemm_rounds_inputs_to_tf32, NULL},
    {"gemm", KCS_F32, "truncates-inputs-to-tf32", "f32 inputs read as TF32 (13 low bits ignored), summed in f32",
     gemm_truncates_inputs_to_tf32, NULL},
    SABOTEUR_16_BITS("rounds-alpha-ab-first", "alpha * AB rounded to C_out's type before beta * C is added",
                     gemm_rounds_alpha_ab_first),
    SABOTEUR_FP8("rounds-alpha-ab-first", "alpha * AB rounded to C_out's type before beta * C is added",
                 gemm_rounds_alpha_ab_first),
    SABOTEUR_16_BITS("accumulates-per-mma", "a 16-bit running sum rounded after each k-block of 16 products",
                     gemm_accumulates_per_mma),
    SABOTEUR_FP8("accumulates-per-mma", "an f16 running sum rounded after each k-block of 32 products",
                 gemm_accumulates_per_mma),
};

const kcs_kernel_table kcs_saboteur_gemm_kernels = KCS_KERNEL_TABLE(rows);
