/* saboteur_gemm_test.c: the harness tests itself, on GEMM. Each broken GEMM
 * of saboteur_gemm.c runs through the same path as every real backend
 * (prepare the case from cases/ and golden/, poison, run, check) and must
 * fail with the right diagnosis, while the reference passes the same case;
 * and the gemm that flushes subnormals fails or passes as the device's own
 * word on flushing says it should. */
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
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
