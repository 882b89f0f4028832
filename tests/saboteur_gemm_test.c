/* saboteur_gemm_test.c: the harness tests itself, on GEMM. Each broken GEMM
 * of saboteur_gemm.c runs through the same path as every real backend
 * (prepare the case from cases/ and golden/, poison, run, check) and must
 * fail with the right diagnosis, while the reference passes the same case;
 * the gemm that flushes subnormals fails or passes as the device's own word
 * on flushing says it should; and each failure is explained by the
 * arithmetic model the saboteur implements, or by none (docs/gemm.md,
 * "Arithmetic models"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void a_transposed_operand_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-nn-37x29x19", "flips-transpose-b", "times the bound");
    kcs_test_expect_caught("gemm/f64-nt-37x29x19", "flips-transpose-b", "times the bound");
    /* TF32's wider bound is still far below a wrong element */
    kcs_test_expect_caught("gemm/f32-tf32-7x93x144", "flips-transpose-b", "times the bound");
}

static void a_k_loop_one_short_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-7x93x144", "drops-last-term", "times the bound");
    kcs_test_expect_caught("gemm/f64-33x65x17", "drops-last-term", "times the bound");
    kcs_test_expect_caught("gemm/f32-integers", "drops-last-term", "times the bound");
    /* in f64 even one of 65536 terms is far outside gamma(k + 2) */
    kcs_test_expect_caught("gemm/f64-64x64x65536", "drops-last-term", "times the bound");
}

static void an_unwritten_edge_tile_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-33x65x17", "misses-edge-tile", "never written");
    kcs_test_expect_caught("gemm/f64-7x93x144", "misses-edge-tile", "never written");
}

static void reading_c_when_beta_is_zero_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-beta0-nan-c", "reads-c-when-beta-zero", "got NaN");
    kcs_test_expect_caught("gemm/f64-k0-beta0-nan-c", "reads-c-when-beta-zero", "got NaN");
}

static void reading_a_when_alpha_is_zero_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-alpha0-nan-a", "reads-a-when-alpha-zero", "got NaN");
}

static void accumulating_f64_in_f32_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f64-129x31x257", "accumulates-in-float", "times the bound");
    kcs_test_expect_caught("gemm/f64-7x93x144", "accumulates-in-float", "times the bound");
}

static void swapping_alpha_and_beta_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f64-negative-alpha", "swaps-alpha-beta", "times the bound");
    kcs_test_expect_caught("gemm/f32-tt-37x29x19", "swaps-alpha-beta", "times the bound");
}

/* The gemm that flushes f32 subnormals (as a GPU build with -ftz=true does)
 * fails every case with subnormal products on a device that says it keeps
 * them, by orders of magnitude: flushed products near 1e-40, partial sums
 * near 1e-38, subnormal inputs times 1e30. */
static void flushing_subnormals_fails_where_the_device_keeps_them(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/f32-subnormal-products", "flushes-subnormals", "got 0");
    kcs_test_expect_caught("gemm/f32-products-near-underflow", "flushes-subnormals", "times the bound");
    kcs_test_expect_caught("gemm/f32-subnormal-a", "flushes-subnormals", "got 0");
}

/* On a device that says it flushes (OpenCL without CL_FP_DENORM, CUDA built
 * with -ftz=true) the flushing bound of docs/gemm.md applies, and the same
 * gemm passes those cases and every other f32 case it is tried on. */
static void flushing_subnormals_passes_where_the_device_says_it_flushes(void **state)
{
    (void)state;
    const char *cases[] = {"gemm/f32-subnormal-products", "gemm/f32-products-near-underflow",
                           "gemm/f32-subnormal-a", "gemm/f32-7x93x144", "gemm/f32-tt-37x29x19",
                           "gemm/f32-alpha0-nan-a", "gemm/f32-beta0-nan-c", "gemm/f32-negative-alpha",
                           "gemm/f32-special-values-in-a", "gemm/f32-integers", "gemm/f32-tf32-7x93x144"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        kcs_test_expect_passes(cases[i], "flushes-subnormals", 1);
}

/* The flushing bound adds what flushing can lose (terms with a subnormal
 * factor or partial product, and the smallest normal per addition): on data
 * of ordinary size that is nothing, and the mistakes stay caught. */
static void the_flushing_bound_still_catches_mistakes(void **state)
{
    (void)state;
    kcs_test_expect_caught_flushing("gemm/f32-7x93x144", "drops-last-term", "times the bound");
    kcs_test_expect_caught_flushing("gemm/f32-nn-37x29x19", "flips-transpose-b", "times the bound");
    kcs_test_expect_caught_flushing("gemm/f32-integers", "drops-last-term", "times the bound");
    kcs_test_expect_caught_flushing("gemm/f32-tt-37x29x19", "swaps-alpha-beta", "times the bound");
    kcs_test_expect_caught_flushing("gemm/f32-subnormal-a", "swaps-alpha-beta", "times the bound");
}

/* FP8 (docs/gemm.md, "FP8"): the tensor cores' accumulation as the bound
 * models it (13 fraction bits kept in blocks of 32 products, truncated),
 * left to run over k = 4096 positive terms without promotion into f32,
 * ends 7% low, about 4 bounds; the same accumulation promoted into f32
 * every 128 products, as cuda/gemm/fp8_wgmma.cu does, passes every FP8
 * case (3% of the bound at k = 4096), so the bound tells the two apart
 * with room on both sides. */
static void fp8_sums_fail_without_promotion_and_pass_with_it(void **state)
{
    (void)state;
    kcs_test_expect_caught("gemm/fp8_e4m3-16x16x4096-f32-out", "accumulates-without-promotion", "times the bound");
    const char *cases[] = {"gemm/fp8_e4m3-nt-48x32x64-f32-out",     "gemm/fp8_e4m3-nt-32x32x256-bf16-out",
                           "gemm/fp8_e4m3-nt-48x32x64-edges-bf16-out", "gemm/fp8_e5m2-nt-32x16x48-edges-f32-out",
                           "gemm/fp8_e4m3-16x16x4096-f32-out",      "gemm/fp8_e4m3-integers",
                           "gemm/fp8_e4m3-alpha0-nan-a",            "gemm/fp8_e4m3-nt-200x136x160-f16-out",
                           "gemm/fp8_e5m2-nt-130x264x208-bf16-out", "gemm/fp8_e4m3-k0"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        kcs_test_expect_passes(cases[i], "promotes-every-128-products", 0);
}

/* Each saboteur, on every case of its kcs-saboteur-cases line where it
 * fails (tests/saboteur-expectations/gemm.txt lists the same), is explained
 * by the model it implements: named alone, or with models the case cannot
 * tell from it (the NaN cases, where swapped scalars and an operand read
 * that must not be both give NaN everywhere); NULL: by none. */
static const struct {
    const char *case_name, *saboteur, *model;
} explained[] = {
    {"gemm/f64-nt-37x29x19", "accumulates-in-float", "gemm-f64-accumulates-in-f32"},
    {"gemm/f64-nt-37x29x19", "drops-last-term", "gemm-drops-last-term"},
    {"gemm/f32-beta0-nan-c", "drops-last-term", "gemm-drops-last-term"},
    {"gemm/f32-products-near-underflow", "drops-last-term", "gemm-drops-last-term"},
    {"gemm/f32-tf32-7x93x144", "drops-last-term", "gemm-drops-last-term"},
    {"gemm/f64-nt-37x29x19", "flips-transpose-b", "gemm-transposes-b"},
    {"gemm/f32-beta0-nan-c", "flips-transpose-b", "gemm-transposes-b"},
    {"gemm/f32-products-near-underflow", "flips-transpose-b", "gemm-transposes-b"},
    {"gemm/f32-tf32-7x93x144", "flips-transpose-b", "gemm-transposes-b"},
    {"gemm/f64-nt-37x29x19", "misses-edge-tile", NULL},
    {"gemm/f32-beta0-nan-c", "misses-edge-tile", NULL},
    {"gemm/f32-alpha0-nan-a", "misses-edge-tile", NULL},
    {"gemm/f32-products-near-underflow", "misses-edge-tile", NULL},
    {"gemm/f32-tf32-7x93x144", "misses-edge-tile", NULL},
    {"gemm/f64-nt-37x29x19", "swaps-alpha-beta", "gemm-swaps-alpha-beta"},
    {"gemm/f32-beta0-nan-c", "swaps-alpha-beta", "gemm-swaps-alpha-beta"},
    {"gemm/f32-alpha0-nan-a", "swaps-alpha-beta", "gemm-swaps-alpha-beta"},
    {"gemm/f32-tf32-7x93x144", "swaps-alpha-beta", "gemm-swaps-alpha-beta"},
    {"gemm/f32-beta0-nan-c", "reads-c-when-beta-zero", "gemm-reads-unread-operands"},
    {"gemm/f32-alpha0-nan-a", "reads-a-when-alpha-zero", "gemm-reads-unread-operands"},
    {"gemm/f32-products-near-underflow", "flushes-subnormals", "gemm-flushes-subnormals"},
    {"gemm/f16-16x16x4096", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/bf16-16x16x4096", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/f16-nt-37x29x19-f32-out", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/bf16-7x93x144-f32-out", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/f16-tensor-16x16x4096", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/bf16-tensor-16x16x4096-f32-out", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/f16-tensor-nt-37x29x19-f32-out", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/bf16-tensor-7x93x144-f32-out", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/f16-nt-37x29x19", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/bf16-tensor-nt-200x136x144", "accumulates-in-16-bits", "gemm-accumulates-in-16-bits"},
    {"gemm/f16-16x16x4096", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/bf16-16x16x4096", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f16-nt-37x29x19-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/bf16-7x93x144-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f64-nt-37x29x19", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f32-beta0-nan-c", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f32-products-near-underflow", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f32-tf32-7x93x144", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f16-tensor-16x16x4096", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/bf16-tensor-16x16x4096-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f16-tensor-nt-37x29x19-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/bf16-tensor-7x93x144-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/fp8_e4m3-nt-48x32x64-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/fp8_e4m3-nt-32x32x256-bf16-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/fp8_e5m2-nt-32x16x48-edges-f32-out", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f16-nt-37x29x19", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/bf16-tensor-nt-200x136x144", "drops-k-slice", "gemm-drops-k-slice"},
    {"gemm/f16-nt-37x29x19-f32-out", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/bf16-7x93x144-f32-out", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/f16-tensor-nt-37x29x19-f32-out", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/bf16-tensor-7x93x144-f32-out", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/f16-nt-37x29x19", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/bf16-tensor-nt-200x136x144", "rounds-products-to-16-bits", "gemm-rounds-products"},
    {"gemm/fp8_e4m3-nt-48x32x64-f32-out", "scales-once", "gemm-fp8-ignores-b-scale"},
    {"gemm/fp8_e4m3-nt-32x32x256-bf16-out", "scales-once", "gemm-fp8-ignores-b-scale"},
    {"gemm/fp8_e4m3-16x16x4096-f32-out", "scales-once", "gemm-fp8-ignores-b-scale"},
    {"gemm/fp8_e5m2-nt-32x16x48-edges-f32-out", "scales-once", "gemm-fp8-ignores-b-scale"},
    {"gemm/fp8_e4m3-nt-48x32x64-f32-out", "uses-a-scale-twice", NULL},
    {"gemm/fp8_e4m3-nt-32x32x256-bf16-out", "uses-a-scale-twice", NULL},
    {"gemm/fp8_e4m3-16x16x4096-f32-out", "uses-a-scale-twice", "gemm-fp8-ignores-b-scale"},
    {"gemm/fp8_e5m2-nt-32x16x48-edges-f32-out", "uses-a-scale-twice", NULL},
    {"gemm/fp8_e4m3-16x16x4096-f32-out", "accumulates-in-f16", "gemm-accumulates-in-16-bits"},
    {"gemm/fp8_e4m3-16x16x4096-f32-out", "accumulates-without-promotion", NULL},
    {"gemm/f64-nt-37x29x19", "flips-transpose-a", "gemm-transposes-a"},
    {"gemm/f32-beta0-nan-c", "flips-transpose-a", "gemm-transposes-a"},
    {"gemm/f32-products-near-underflow", "flips-transpose-a", "gemm-transposes-a"},
    {"gemm/f32-tf32-7x93x144", "flips-transpose-a", "gemm-transposes-a"},
    {"gemm/f64-nt-37x29x19", "ignores-alpha", "gemm-ignores-alpha"},
    {"gemm/f64-nt-37x29x19", "ignores-beta", "gemm-ignores-beta"},
    {"gemm/f32-alpha0-nan-a", "ignores-beta", "gemm-ignores-beta"},
    {"gemm/f64-nt-37x29x19", "ignores-c", "gemm-ignores-c"},
    {"gemm/f32-alpha0-nan-a", "ignores-c", "gemm-ignores-c"},
    {"gemm/f32-products-near-underflow", "ignores-c", "gemm-ignores-c"},
    {"gemm/f32-beta0-nan-c", "rounds-inputs-to-tf32", "gemm-tf32-inputs"},
    {"gemm/f32-products-near-underflow", "rounds-inputs-to-tf32", "gemm-tf32-inputs"},
    {"gemm/f32-beta0-nan-c", "truncates-inputs-to-tf32", "gemm-tf32-truncated-inputs"},
    {"gemm/f32-products-near-underflow", "truncates-inputs-to-tf32", "gemm-tf32-truncated-inputs"},
    {"gemm/f16-16x16x4096", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/bf16-16x16x4096", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/f16-nt-37x29x19-f32-out", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/bf16-7x93x144-f32-out", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/f16-tensor-16x16x4096", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/bf16-tensor-16x16x4096-f32-out", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/f16-tensor-nt-37x29x19-f32-out", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/bf16-tensor-7x93x144-f32-out", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/f16-nt-37x29x19", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/bf16-tensor-nt-200x136x144", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma"},
    {"gemm/f16-nt-37x29x19", "rounds-alpha-ab-first", "gemm-epilogue-rounds-twice"},
    {"gemm/bf16-tensor-nt-200x136x144", "rounds-alpha-ab-first", "gemm-epilogue-rounds-twice"},
};

static void each_saboteur_is_explained_by_its_model_where_it_fails(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof explained / sizeof *explained; i++)
        kcs_test_expect_explained(explained[i].case_name, explained[i].saboteur, explained[i].model);
}

/* Beyond the saboteur cases: long k, every transpose, whole numbers, TF32
 * mode, and the edges where two models are the same arithmetic. */
static void explanations_hold_on_other_cases(void **state)
{
    (void)state;
    /* 65536 terms in f64: the dropped one is far outside every other model's bound */
    kcs_test_expect_explained("gemm/f64-64x64x65536", "drops-last-term", "gemm-drops-last-term");
    kcs_test_expect_explained("gemm/f32-tt-37x29x19", "flips-transpose-a", "gemm-transposes-a");
    kcs_test_expect_explained("gemm/f32-tn-37x29x19", "flips-transpose-b", "gemm-transposes-b");
    kcs_test_expect_explained("gemm/f32-negative-alpha", "ignores-alpha", "gemm-ignores-alpha");
    kcs_test_expect_explained("gemm/f32-negative-alpha", "ignores-beta", "gemm-ignores-beta");
    kcs_test_expect_explained("gemm/f32-integers", "swaps-alpha-beta", "gemm-swaps-alpha-beta");
    kcs_test_expect_explained("gemm/f64-129x31x257", "accumulates-in-float", "gemm-f64-accumulates-in-f32");
    kcs_test_expect_explained("gemm/f32-subnormal-a", "flushes-subnormals", "gemm-flushes-subnormals");
    kcs_test_expect_explained("gemm/f32-7x93x144", "truncates-inputs-to-tf32", "gemm-tf32-truncated-inputs");
    kcs_test_expect_explained("gemm/f32-7x93x144", "rounds-inputs-to-tf32", "gemm-tf32-inputs");
    /* whole numbers in bf16: sums exact in f32, so only the roundings to bf16 tell the models apart */
    kcs_test_expect_explained("gemm/bf16-integers", "accumulates-per-mma", "gemm-accumulates-in-16-bits-per-mma");
    kcs_test_expect_explained("gemm/bf16-integers", "rounds-alpha-ab-first", "gemm-epilogue-rounds-twice");
    kcs_test_expect_explained("gemm/bf16-tensor-tt-200x264x136", "rounds-alpha-ab-first",
                              "gemm-epilogue-rounds-twice");
    /* k = 16: one MMA's block is the whole dot product, rounded to f16 once, where f16 overflows */
    kcs_test_expect_explained("gemm/f16-overflow-f32-out", "accumulates-per-mma",
                              "gemm-accumulates-in-16-bits-per-mma");
    /* k = 1: the slice from k/2 is the last term; k = 0: C unscaled is C swapped in */
    kcs_test_expect_explained("gemm/f32-1x1x1", "drops-k-slice", "gemm-drops-last-term");
    kcs_test_expect_explained("gemm/f32-1x1x1", "drops-k-slice", "gemm-drops-k-slice");
    kcs_test_expect_explained("gemm/f32-k0", "ignores-beta", "gemm-swaps-alpha-beta");
    kcs_test_expect_explained("gemm/f64-33x65x17", "misses-edge-tile", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_transposed_operand_fails),
        cmocka_unit_test(a_k_loop_one_short_fails),
        cmocka_unit_test(an_unwritten_edge_tile_fails),
        cmocka_unit_test(reading_c_when_beta_is_zero_fails),
        cmocka_unit_test(reading_a_when_alpha_is_zero_fails),
        cmocka_unit_test(accumulating_f64_in_f32_fails),
        cmocka_unit_test(swapping_alpha_and_beta_fails),
        cmocka_unit_test(flushing_subnormals_fails_where_the_device_keeps_them),
        cmocka_unit_test(flushing_subnormals_passes_where_the_device_says_it_flushes),
        cmocka_unit_test(the_flushing_bound_still_catches_mistakes),
        cmocka_unit_test(fp8_sums_fail_without_promotion_and_pass_with_it),
        cmocka_unit_test(each_saboteur_is_explained_by_its_model_where_it_fails),
        cmocka_unit_test(explanations_hold_on_other_cases),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
