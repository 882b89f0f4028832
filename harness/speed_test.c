/* speed_test.c: how the runner writes rates (speed.h): a prefix that keeps
 * three significant digits below 1000, whatever the device's speed, so that
 * a CPU's GEMM reads "2.55 GFLOP/s" and not "0.0 TFLOP/s". */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rates_take_the_prefix_that_keeps_them_below_1000),
        cmocka_unit_test(a_rate_that_rounds_to_1000_moves_up_a_prefix),
        cmocka_unit_test(rates_beyond_the_prefixes_and_not_numbers_still_read),
        cmocka_unit_test(a_kernel_speed_reads_as_a_rate_and_a_fraction),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
