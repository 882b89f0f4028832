/* speed_test.c: how the runner writes rates (speed.h): a prefix that keeps
 * three significant digits below 1000, whatever the device's speed, so that
 * a CPU's GEMM reads "2.55 GFLOP/s" and not "0.0 TFLOP/s"; which ceiling a
 * case is judged against, and the bit that asks a backend to measure it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "speed.h"

static void expect_rate(double per_second, const char *unit, const char *want)
{
    char text[64];
    kcs_format_rate(per_second, unit, text, sizeof text);
    if (strcmp(text, want) != 0)
        fail_msg("%.17g %s: wrote '%s', want '%s'", per_second, unit, text, want);
}

static void rates_take_the_prefix_that_keeps_them_below_1000(void **state)
{
    (void)state;
    expect_rate(0.1e12, "FLOP/s", "100 GFLOP/s"); /* was "FMA 0.1 TFLOP/s" */
    expect_rate(2.55e9, "FLOP/s", "2.55 GFLOP/s");
    expect_rate(5.384e8, "FLOP/s", "538 MFLOP/s");
    expect_rate(51.2e12, "FLOP/s", "51.2 TFLOP/s");
    expect_rate(16.2e9, "B/s", "16.2 GB/s");
    expect_rate(3.35e12, "B/s", "3.35 TB/s");
    expect_rate(1500.0, "B/s", "1.5 kB/s");
    expect_rate(999.0, "B/s", "999 B/s");
    expect_rate(1000.0, "B/s", "1 kB/s");
    expect_rate(0.0, "FLOP/s", "0 FLOP/s");
    expect_rate(0.25, "B/s", "0.25 B/s");
}

static void a_rate_that_rounds_to_1000_moves_up_a_prefix(void **state)
{
    (void)state;
    expect_rate(999.7e9, "B/s", "1 TB/s"); /* not "1e+03 GB/s" */
    expect_rate(999.4e9, "B/s", "999 GB/s");
    expect_rate(999.96, "FLOP/s", "1 kFLOP/s");
}

static void rates_beyond_the_prefixes_and_not_numbers_still_read(void **state)
{
    (void)state;
    expect_rate(2e18, "FLOP/s", "2 EFLOP/s");
    expect_rate(2e21, "FLOP/s", "2e+03 EFLOP/s"); /* no prefix past E: the exponent says it */
    expect_rate(INFINITY, "B/s", "inf B/s");
    expect_rate(NAN, "B/s", "nan B/s");
}

static void a_kernel_speed_reads_as_a_rate_and_a_fraction(void **state)
{
    (void)state;
    char text[160];
    kcs_speed copy = {.kind = KCS_CEILING_COPY, .name = "copy", .measure = "bytes", .achieved = 12.34e9,
                      .ceiling = 13e9, .fraction = 12.34 / 13.0};
    kcs_speed_format(&copy, text, sizeof text);
    assert_string_equal(text, "12.3 GB/s = 0.95 of copy");
    kcs_speed gemm = {.kind = KCS_CEILING_GEMM, .name = "gemm", .measure = "flops", .achieved = 2.55e9};
    kcs_speed_format(&gemm, text, sizeof text);
    assert_string_equal(text, "2.55 GFLOP/s (no gemm ceiling measured)");
}

/* The one decision of which ceiling a kernel is filed under (speed.c): a
 * GEMM by its case's dtype and mode, every other op by what it names. */
static kcs_ceiling_kind gemm_ceiling(kcs_dtype dtype, int tf32)
{
    kcs_op gemm = {.name = "gemm", .ceiling = KCS_CEILING_GEMM_OF_MODE};
    kcs_op_args args = {.op = "gemm", .dtype = dtype, .gemm = {.tf32 = tf32}};
    return kcs_ceiling_of(&gemm, &args);
}

static void each_gemm_mode_is_filed_under_its_own_ceiling(void **state)
{
    (void)state;
    assert_int_equal(gemm_ceiling(KCS_F32, 0), KCS_CEILING_GEMM);
    assert_int_equal(gemm_ceiling(KCS_F32, 1), KCS_CEILING_GEMM_TF32);
    assert_int_equal(gemm_ceiling(KCS_F64, 0), KCS_CEILING_GEMM_F64);
    assert_int_equal(gemm_ceiling(KCS_F16, 0), KCS_CEILING_GEMM_F16);
    assert_int_equal(gemm_ceiling(KCS_BF16, 0), KCS_CEILING_GEMM_BF16);
    assert_int_equal(gemm_ceiling(KCS_FP8_E4M3, 0), KCS_CEILING_GEMM_FP8_E4M3);
    assert_int_equal(gemm_ceiling(KCS_FP8_E5M2, 0), KCS_CEILING_GEMM_FP8_E4M3);
    /* assign is GEMM-like in f32 whatever its points are stored in */
    kcs_op assign = {.name = "assign", .ceiling = KCS_CEILING_GEMM};
    kcs_op_args args = {.op = "assign", .dtype = KCS_F16};
    assert_int_equal(kcs_ceiling_of(&assign, &args), KCS_CEILING_GEMM);
}

static double two_flops(const kcs_op_args *args)
{
    (void)args;
    return 2e12;
}

static void a_gemm_fraction_is_of_its_mode_ceiling_and_names_it(void **state)
{
    (void)state;
    kcs_ceilings ceilings = {.gemm_flops_per_s = 50e12, .gemm_f16_flops_per_s = 700e12,
                             .gemm_f64_flops_per_s = 60e12};
    kcs_op gemm = {.name = "gemm", .flops = two_flops, .bytes = two_flops, .ceiling = KCS_CEILING_GEMM_OF_MODE};
    kcs_op_args f16 = {.op = "gemm", .dtype = KCS_F16};
    kcs_speed speed = kcs_kernel_speed(&gemm, &f16, &ceilings, 0.05); /* 40 TFLOP/s */
    assert_string_equal(speed.name, "gemm-f16");
    assert_string_equal(speed.ceiling_key, "gemm_f16_flops_per_s");
    assert_true(fabs(speed.fraction - 40.0 / 700.0) < 1e-12); /* not 40/50 of SGEMM */
    kcs_op_args tf32 = {.op = "gemm", .dtype = KCS_F32, .gemm = {.tf32 = 1}};
    speed = kcs_kernel_speed(&gemm, &tf32, &ceilings, 0.05);
    assert_string_equal(speed.ceiling_key, "gemm_tf32_flops_per_s");
    assert_true(speed.ceiling == 0.0 && speed.fraction == 0.0); /* not measured: no fraction */
    char text[160];
    kcs_speed_format(&speed, text, sizeof text);
    assert_string_equal(text, "40 TFLOP/s (no gemm-tf32 ceiling measured)");
}

/* The mask a run asks a backend for (backend.h): one bit per ceiling a case
 * is judged against, each rate of kcs_ceilings named once with its own bit,
 * and the bits of the rates together are KCS_CEILINGS_ALL. */
static void each_case_asks_for_the_bit_of_its_own_ceiling(void **state)
{
    (void)state;
    kcs_op copy_bound = {.name = "sumsq", .ceiling = KCS_CEILING_COPY};
    kcs_op gemm = {.name = "gemm", .ceiling = KCS_CEILING_GEMM_OF_MODE};
    kcs_op_args f32 = {.op = "gemm", .dtype = KCS_F32}, tf32 = {.op = "gemm", .dtype = KCS_F32, .gemm = {.tf32 = 1}};
    kcs_op_args f64 = {.op = "gemm", .dtype = KCS_F64}, bf16 = {.op = "gemm", .dtype = KCS_BF16};
    kcs_op_args e5m2 = {.op = "gemm", .dtype = KCS_FP8_E5M2};
    assert_int_equal(kcs_ceilings_judging(&copy_bound, &f64), KCS_CEILING_BIT_COPY);
    assert_int_equal(kcs_ceilings_judging(&gemm, &f32), KCS_CEILING_BIT_GEMM);
    assert_int_equal(kcs_ceilings_judging(&gemm, &tf32), KCS_CEILING_BIT_GEMM_TF32);
    assert_int_equal(kcs_ceilings_judging(&gemm, &f64), KCS_CEILING_BIT_GEMM_F64);
    assert_int_equal(kcs_ceilings_judging(&gemm, &bf16), KCS_CEILING_BIT_GEMM_BF16);
    assert_int_equal(kcs_ceilings_judging(&gemm, &e5m2), KCS_CEILING_BIT_GEMM_FP8_E4M3);
    kcs_ceiling_mask seen = 0;
    size_t count = 0;
    for (const kcs_ceiling_rate *rate = kcs_ceiling_rates; rate->key; rate++, count++) {
        assert_int_equal(seen & rate->bit, 0);
        seen |= rate->bit;
    }
    assert_int_equal(seen, KCS_CEILINGS_ALL);
    assert_int_equal(count * sizeof(double), offsetof(kcs_ceilings, method)); /* every double of kcs_ceilings */
    for (const kcs_ceiling_info *info = kcs_ceiling_infos; info->name; info++) /* judged ones are rates too */
        assert_true(info->bit & seen);
    /* a rate not asked for and not measured is "not measured in this run"; asked for, it is the device's */
    kcs_ceilings only_copy = {.copy_bytes_per_s = 1e12, .asked = KCS_CEILING_BIT_COPY};
    assert_false(kcs_ceiling_rate_not_measured_in_run(&only_copy, &kcs_ceiling_rates[0]));
    assert_true(kcs_ceiling_rate_not_measured_in_run(&only_copy, &kcs_ceiling_rates[3]));
    only_copy.asked = KCS_CEILINGS_ALL;
    assert_false(kcs_ceiling_rate_not_measured_in_run(&only_copy, &kcs_ceiling_rates[3]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rates_take_the_prefix_that_keeps_them_below_1000),
        cmocka_unit_test(a_rate_that_rounds_to_1000_moves_up_a_prefix),
        cmocka_unit_test(rates_beyond_the_prefixes_and_not_numbers_still_read),
        cmocka_unit_test(a_kernel_speed_reads_as_a_rate_and_a_fraction),
        cmocka_unit_test(each_gemm_mode_is_filed_under_its_own_ceiling),
        cmocka_unit_test(a_gemm_fraction_is_of_its_mode_ceiling_and_names_it),
        cmocka_unit_test(each_case_asks_for_the_bit_of_its_own_ceiling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
