/* check_test.c: the element rules of the checker (docs/checking.md). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

/* A one-output f64 layout of count elements. */
static kcs_layout layout_of(kcs_dtype dtype, size_t count)
{
    kcs_layout layout;
    memset(&layout, 0, sizeof layout);
    layout.output_count = 1;
    strcpy(layout.outputs[0].name, "y");
    layout.outputs[0].dtype = dtype;
    layout.outputs[0].ndim = 1;
    layout.outputs[0].shape[0] = count;
    return layout;
}

static kcs_check_result check(kcs_dtype dtype, const void *actual, double *expected, double *bounds,
                              size_t count)
{
    kcs_layout layout = layout_of(dtype, count);
    kcs_expected e = {.count = count, .values = expected, .bounds = bounds};
    void *outputs[1] = {(void *)actual};
    kcs_check_result result;
    kcs_check_outputs(&layout, outputs, &e, &result);
    return result;
}

static void within_bound_passes_and_reports_the_fraction(void **state)
{
    (void)state;
    double actual[3] = {1.0, 2.5, 3.0}, expected[3] = {1.0, 2.0, 3.0}, bounds[3] = {0, 1.0, 0};
    kcs_check_result r = check(KCS_F64, actual, expected, bounds, 3);
    assert_true(r.passed);
    assert_int_equal(r.checked, 3);
    assert_true(r.fraction == 0.5);
    assert_int_equal(r.worst_index, 1);
}

static void outside_bound_fails_with_the_first_bad_element(void **state)
{
    (void)state;
    double actual[3] = {1.0, 2.5, 3.5}, expected[3] = {1.0, 2.0, 3.0}, bounds[3] = {0, 0.25, 0.25};
    kcs_check_result r = check(KCS_F64, actual, expected, bounds, 3);
    assert_false(r.passed);
    assert_int_equal(r.failures, 2);
    assert_true(r.fraction == 2.0);
    assert_non_null(strstr(r.diagnosis, "y[1]"));
    assert_non_null(strstr(r.diagnosis, "2 times the bound"));
    assert_non_null(strstr(r.diagnosis, "1 more"));
}

static void an_element_of_a_matrix_is_named_by_its_coordinates(void **state)
{
    (void)state;
    enum { rows = 3, cols = 5 };
    double actual[rows * cols], expected[rows * cols], bounds[rows * cols];
    for (int i = 0; i < rows * cols; i++)
        actual[i] = expected[i] = i, bounds[i] = 0.25;
    actual[1 * cols + 4] = 100; /* flat index 9 */
    kcs_layout layout = layout_of(KCS_F64, rows * cols);
    strcpy(layout.outputs[0].name, "c_out");
    layout.outputs[0].ndim = 2;
    layout.outputs[0].shape[0] = rows;
    layout.outputs[0].shape[1] = cols;
    kcs_expected e = {.count = rows * cols, .values = expected, .bounds = bounds};
    void *outputs[1] = {actual};
    kcs_check_result r;
    kcs_check_outputs(&layout, outputs, &e, &r);
    assert_false(r.passed);
    assert_non_null(strstr(r.diagnosis, "c_out[1, 4]: "));
    assert_null(strstr(r.diagnosis, "c_out[9]"));
    char name[64];
    kcs_element_name(&layout.outputs[0], 14, name, sizeof name);
    assert_string_equal(name, "c_out[2, 4]");
    layout.outputs[0].ndim = 1;
    kcs_element_name(&layout.outputs[0], 14, name, sizeof name);
    assert_string_equal(name, "c_out[14]");
    layout.outputs[0].ndim = 0;
    kcs_element_name(&layout.outputs[0], 0, name, sizeof name);
    assert_string_equal(name, "c_out[0]");
}

static void a_zero_bound_allows_only_the_exact_value(void **state)
{
    (void)state;
    double actual[1] = {nextafter(1.0, 2.0)}, expected[1] = {1.0}, bounds[1] = {0};
    kcs_check_result r = check(KCS_F64, actual, expected, bounds, 1);
    assert_false(r.passed);
    assert_true(isinf(r.fraction));
}

static void nan_and_infinity_must_match_in_class(void **state)
{
    (void)state;
    double expected[4] = {NAN, INFINITY, -INFINITY, 1.0}, bounds[4] = {1e300, 1e300, 1e300, 1e300};
    double right[4] = {NAN, INFINITY, -INFINITY, 1.0};
    assert_true(check(KCS_F64, right, expected, bounds, 4).passed);
    double nan_for_number[4] = {NAN, INFINITY, -INFINITY, NAN};
    assert_non_null(strstr(check(KCS_F64, nan_for_number, expected, bounds, 4).diagnosis, "got NaN"));
    double number_for_nan[4] = {0.0, INFINITY, -INFINITY, 1.0};
    assert_non_null(strstr(check(KCS_F64, number_for_nan, expected, bounds, 4).diagnosis,
                           "expected NaN"));
    double wrong_sign[4] = {NAN, -INFINITY, -INFINITY, 1.0};
    assert_false(check(KCS_F64, wrong_sign, expected, bounds, 4).passed);
    double inf_for_number[4] = {NAN, INFINITY, -INFINITY, INFINITY};
    assert_false(check(KCS_F64, inf_for_number, expected, bounds, 4).passed);
}

static void infinity_is_accepted_only_where_the_bound_reaches_overflow(void **state)
{
    (void)state;
    float actual[1] = {INFINITY};
    double near_max[1] = {0x1.fffffep127}, bound[1] = {0x1p104};
    assert_true(check(KCS_F32, actual, near_max, bound, 1).passed);
    double far[1] = {1e38};
    assert_false(check(KCS_F32, actual, far, bound, 1).passed);
}

static void poisoned_elements_are_reported_unwritten(void **state)
{
    (void)state;
    double actual[3] = {1.0, 2.0, 3.0}, expected[3] = {1.0, 2.0, NAN}, bounds[3] = {0, 0, 0};
    kcs_poison(&actual[2], KCS_F64, 1);
    assert_true(isnan(actual[2])); /* the poison is a NaN, yet must not pass for an expected NaN */
    kcs_check_result r = check(KCS_F64, actual, expected, bounds, 3);
    assert_false(r.passed);
    assert_int_equal(r.unwritten, 1);
    assert_non_null(strstr(r.diagnosis, "never written"));
    for (kcs_dtype dtype = KCS_F16; dtype <= KCS_I64; dtype++) {
        unsigned char buffer[16] = {0};
        kcs_poison(buffer, dtype, 2);
        assert_true(kcs_is_poison(buffer, dtype, 1));
        buffer[kcs_dtype_size(dtype)] ^= 1;
        assert_false(kcs_is_poison(buffer, dtype, 1));
    }
    float computed_nan = NAN;
    assert_false(kcs_is_poison(&computed_nan, KCS_F32, 0));
}

static void trivial_answers_are_named(void **state)
{
    (void)state;
    kcs_layout layout = layout_of(KCS_F64, 2);
    layout.input_count = 1;
    layout.inputs[0] = layout.outputs[0];
    strcpy(layout.inputs[0].name, "x");
    double x[2] = {5, 6}, copy[2] = {5, 6}, zeros[2] = {0, 0}, expected[2] = {1, 2}, bounds[2] = {0, 0};
    kcs_expected e = {.count = 2, .values = expected, .bounds = bounds};
    void *inputs[1] = {x};
    void *outputs[1] = {copy};
    kcs_check_result r;
    kcs_check_outputs(&layout, outputs, &e, &r);
    kcs_diagnose_trivial(&layout, inputs, outputs, &r);
    assert_non_null(strstr(r.diagnosis, "copy of input x"));
    outputs[0] = zeros;
    kcs_check_outputs(&layout, outputs, &e, &r);
    kcs_diagnose_trivial(&layout, inputs, outputs, &r);
    assert_non_null(strstr(r.diagnosis, "all zeros"));
}

/* The sum of a histogram's bins and its count above the bound. */
static size_t histogram_total(const kcs_fraction_histogram *h)
{
    size_t total = h->above;
    for (int i = 0; i < KCS_FRACTION_BINS; i++)
        total += h->counts[i];
    return total;
}

/* The bin one fraction lands in, or -1 for above the bound. */
static int bin_of(double fraction)
{
    kcs_fraction_histogram h;
    memset(&h, 0, sizeof h);
    kcs_fraction_histogram_add(&h, fraction);
    assert_int_equal(histogram_total(&h), 1);
    for (int i = 0; i < KCS_FRACTION_BINS; i++)
        if (h.counts[i])
            return i;
    return -1;
}

static void the_histogram_bins_fractions_by_powers_of_two_edges_included(void **state)
{
    (void)state;
    /* bin i holds 2^(i-21) < f <= 2^(i-20): each power of two closes its bin */
    assert_int_equal(bin_of(1.0), 20);
    assert_int_equal(bin_of(nextafter(1.0, 0.0)), 20);
    assert_int_equal(bin_of(0.75), 20);
    assert_int_equal(bin_of(nextafter(0.5, 1.0)), 20);
    assert_int_equal(bin_of(0.5), 19);
    assert_int_equal(bin_of(0.3), 19);
    assert_int_equal(bin_of(0.25), 18);
    assert_int_equal(bin_of(0x1p-19), 1);
    assert_int_equal(bin_of(nextafter(0x1p-20, 1.0)), 1);
    /* the first bin also holds everything smaller, exact elements included */
    assert_int_equal(bin_of(0x1p-20), 0);
    assert_int_equal(bin_of(0x1p-40), 0);
    assert_int_equal(bin_of(0x1p-1074), 0);
    assert_int_equal(bin_of(0.0), 0);
    /* outside the bound, by however little, and NaN */
    assert_int_equal(bin_of(nextafter(1.0, 2.0)), -1);
    assert_int_equal(bin_of(2.0), -1);
    assert_int_equal(bin_of(INFINITY), -1);
    assert_int_equal(bin_of(NAN), -1);
}

static void the_checker_counts_every_checked_element_once(void **state)
{
    (void)state;
    /* exact; 1/2 of the bound; all of it; twice it; NaN for a number; NaN
     * for NaN; infinity within the overflow allowance; unwritten */
    double expected[8] = {1.0, 1.0, 1.0, 1.0, 1.0, NAN, 0x1.fffffep127, 3.0};
    double bounds[8] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.0, 0x1p104, 0.5};
    float actual[8] = {1.0f, 1.25f, 1.5f, 2.0f, NAN, NAN, INFINITY, 0.0f};
    kcs_poison(&actual[7], KCS_F32, 1);
    kcs_check_result r = check(KCS_F32, actual, expected, bounds, 8);
    const kcs_fraction_histogram *h = &r.histogram;
    assert_int_equal(histogram_total(h), r.checked);
    assert_int_equal(h->above, r.failures); /* twice the bound, NaN for 1, unwritten */
    assert_int_equal(h->above, 3);
    assert_int_equal(h->counts[0], 2);      /* the exact element and NaN for NaN */
    assert_int_equal(h->counts[19], 1);     /* 0.25 / 0.5 */
    assert_int_equal(h->counts[20], 2);     /* 0.5 / 0.5, and the accepted infinity */
}

static void exactly_compared_elements_count_as_zero_or_above(void **state)
{
    (void)state;
    int32_t actual[4] = {3, 7, -1, 9};
    double expected[4] = {3, 7, 5, 9}, bounds[4] = {0, 0, 0, 0};
    kcs_check_result r = check(KCS_I32, actual, expected, bounds, 4);
    assert_false(r.passed);
    assert_int_equal(r.histogram.counts[0], 3);
    assert_int_equal(r.histogram.above, 1);
    assert_int_equal(histogram_total(&r.histogram), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(within_bound_passes_and_reports_the_fraction),
        cmocka_unit_test(outside_bound_fails_with_the_first_bad_element),
        cmocka_unit_test(an_element_of_a_matrix_is_named_by_its_coordinates),
        cmocka_unit_test(a_zero_bound_allows_only_the_exact_value),
        cmocka_unit_test(nan_and_infinity_must_match_in_class),
        cmocka_unit_test(infinity_is_accepted_only_where_the_bound_reaches_overflow),
        cmocka_unit_test(poisoned_elements_are_reported_unwritten),
        cmocka_unit_test(trivial_answers_are_named),
        cmocka_unit_test(the_histogram_bins_fractions_by_powers_of_two_edges_included),
        cmocka_unit_test(the_checker_counts_every_checked_element_once),
        cmocka_unit_test(exactly_compared_elements_count_as_zero_or_above),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
