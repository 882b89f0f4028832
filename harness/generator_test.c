/* generator_test.c: pins the generator's output, so that a change to it,
 * which would silently invalidate every golden file, cannot go unnoticed.
 * The random bits, the uniform values and the default seed were computed
 * independently by a Python transcription of docs/inputs.md; the normal
 * values agree with that transcription (which uses libm's log) to the last
 * printed digit and are pinned to the bit here. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "generator.h"

static void random_bits_are_pinned(void **state)
{
    (void)state;
    assert_int_equal(kcs_random_bits(0, 0), 0x93118a61ed9e9e14ull);
    assert_int_equal(kcs_random_bits(1, 0), 0x90287996c3e2222aull);
    assert_int_equal(kcs_random_bits(1, 1), 0xbba11c9520801befull);
    assert_int_equal(kcs_random_bits(42, 1000000), 0x3fdacade5c24bd59ull);
    assert_int_equal(kcs_random_bits(UINT64_MAX, 7), 0xc997b17bc5c54c35ull);
}

static void default_seed_is_the_hash_of_case_and_input(void **state)
{
    (void)state;
    assert_int_equal(kcs_string_hash("sumsq/f64-n7:x"), 0x7602e8c63a92d5bbull);
}

static kcs_distribution make(const char *name, uint64_t seed)
{
    kcs_distribution d;
    memset(&d, 0, sizeof d);
    strcpy(d.name, name);
    d.seed = seed;
    return d;
}

static void add_param(kcs_distribution *d, const char *name, double value)
{
    strcpy(d->params[d->param_count].name, name);
    d->params[d->param_count++].value = value;
}

static void uniform_is_pinned(void **state)
{
    (void)state;
    kcs_distribution d = make("uniform", 7);
    double v[3];
    assert_int_equal(kcs_generate(&d, KCS_F64, v, 0, 3, NULL), KCS_OK);
    assert_true(v[0] == 0.8338241343293695);
    assert_true(v[1] == 0.6545697378715991);
    assert_true(v[2] == 0.8130057368826025);
    add_param(&d, "lo", -2);
    add_param(&d, "hi", 2);
    float f[3];
    assert_int_equal(kcs_generate(&d, KCS_F32, f, 0, 3, NULL), KCS_OK);
    assert_true(f[0] == 0x1.55d5fep+0f);
    assert_true(f[1] == 0x1.3c8f1p-1f);
    assert_true(f[2] == 0x1.408494p+0f);
}

static void normal_is_pinned(void **state)
{
    (void)state;
    kcs_distribution d = make("normal", 7);
    double v[4];
    assert_int_equal(kcs_generate(&d, KCS_F64, v, 0, 4, NULL), KCS_OK);
    assert_true(v[0] == 0x1.01604073270ecp+0);
    assert_true(v[1] == 0x1.d12b8a5558221p-1);
    assert_true(v[2] == 0x1.1068878654ba5p-1);
    assert_true(v[3] == 0x1.15d83097edc4p+0);
}

static void normal_has_the_right_moments(void **state)
{
    (void)state;
    kcs_distribution d = make("normal", 99);
    add_param(&d, "mean", 5);
    add_param(&d, "stddev", 2);
    enum { count = 200000 };
    double *v = malloc(count * sizeof *v);
    assert_int_equal(kcs_generate(&d, KCS_F64, v, 0, count, NULL), KCS_OK);
    double sum = 0, sum_squares = 0;
    for (int i = 0; i < count; i++)
        sum += v[i];
    double mean = sum / count;
    for (int i = 0; i < count; i++)
        sum_squares += (v[i] - mean) * (v[i] - mean);
    /* standard errors: 2/sqrt(n) = 0.0045 for the mean, about 0.003 for the deviation */
    assert_true(fabs(mean - 5) < 0.03);
    assert_true(fabs(sqrt(sum_squares / count) - 2) < 0.03);
    free(v);
}

static void elements_do_not_depend_on_where_generation_starts(void **state)
{
    (void)state;
    const char *names[] = {"uniform", "normal", "ramp", "integers", "special", "attention"};
    for (size_t k = 0; k < 6; k++) {
        kcs_distribution d = make(names[k], 1234);
        if (strcmp(names[k], "integers") == 0) {
            add_param(&d, "lo", -3);
            add_param(&d, "hi", 3);
        }
        if (strcmp(names[k], "attention") == 0) {
            add_param(&d, "cols", 9);
            add_param(&d, "visible", 1);
            add_param(&d, "step", 1);
        }
        double all[64], part[10];
        assert_int_equal(kcs_generate(&d, KCS_F64, all, 0, 64, NULL), KCS_OK);
        assert_int_equal(kcs_generate(&d, KCS_F64, part, 37, 10, NULL), KCS_OK);
        assert_memory_equal(all + 37, part, sizeof part);
    }
}

static void ramp_constant_and_integers(void **state)
{
    (void)state;
    kcs_distribution ramp = make("ramp", 0);
    add_param(&ramp, "start", -2);
    add_param(&ramp, "step", 0.5);
    double v[5];
    assert_int_equal(kcs_generate(&ramp, KCS_F64, v, 0, 5, NULL), KCS_OK);
    double expected[5] = {-2, -1.5, -1, -0.5, 0};
    assert_memory_equal(v, expected, sizeof v);

    kcs_distribution constant = make("constant", 0);
    add_param(&constant, "value", -INFINITY);
    assert_int_equal(kcs_generate(&constant, KCS_F64, v, 0, 5, NULL), KCS_OK);
    for (int i = 0; i < 5; i++)
        assert_true(v[i] == -INFINITY);

    kcs_distribution integers = make("integers", 5);
    add_param(&integers, "lo", -2);
    add_param(&integers, "hi", 2);
    int32_t ints[1000];
    int seen[5] = {0};
    assert_int_equal(kcs_generate(&integers, KCS_I32, ints, 0, 1000, NULL), KCS_OK);
    for (int i = 0; i < 1000; i++) {
        assert_true(ints[i] >= -2 && ints[i] <= 2);
        seen[ints[i] + 2] = 1;
    }
    for (int i = 0; i < 5; i++)
        assert_true(seen[i]);
}

static void special_values_cover_every_group_in_the_dtype(void **state)
{
    (void)state;
    kcs_distribution d = make("special", 3);
    add_param(&d, "fraction", 1);
    float f[4000];
    assert_int_equal(kcs_generate(&d, KCS_F32, f, 0, 4000, NULL), KCS_OK);
    int nan = 0, inf = 0, negative_zero = 0, subnormal = 0, huge = 0, other = 0;
    for (int i = 0; i < 4000; i++) {
        if (isnan(f[i])) nan++;
        else if (isinf(f[i])) inf++;
        else if (f[i] == 0 && signbit(f[i])) negative_zero++;
        else if (fpclassify(f[i]) == FP_SUBNORMAL) subnormal++;
        else if (fabsf(f[i]) == 0x1.fffffep127f) huge++;
        else if (f[i] != 0) other++;
    }
    assert_true(nan > 0 && inf > 0 && negative_zero > 0 && subnormal > 0 && huge > 0);
    assert_int_equal(other, 0); /* fraction=1: nothing but special values */

    kcs_distribution without_nan = make("special", 3);
    add_param(&without_nan, "nan", 0);
    double v[4000];
    assert_int_equal(kcs_generate(&without_nan, KCS_F64, v, 0, 4000, NULL), KCS_OK);
    for (int i = 0; i < 4000; i++)
        assert_false(isnan(v[i]));
}

/* The positions of one row that hold a finite value, as a string of '#' (finite) and '.' (-inf). */
static void row_pattern(const double *row, size_t cols, char *pattern)
{
    for (size_t k = 0; k < cols; k++)
        pattern[k] = isfinite(row[k]) ? '#' : (row[k] == -INFINITY ? '.' : '?');
    pattern[cols] = '\0';
}

static void attention_masks_a_window_of_each_row(void **state)
{
    (void)state;
    char pattern[16];
    double v[5 * 6];
    /* causal: row r attends to its first r + 1 positions */
    kcs_distribution causal = make("attention", 7);
    add_param(&causal, "cols", 6);
    add_param(&causal, "visible", 1);
    add_param(&causal, "step", 1);
    assert_int_equal(kcs_generate(&causal, KCS_F64, v, 0, 5 * 6, NULL), KCS_OK);
    const char *triangle[] = {"#.....", "##....", "###...", "####..", "#####."};
    for (int r = 0; r < 5; r++) {
        row_pattern(v + 6 * r, 6, pattern);
        assert_string_equal(pattern, triangle[r]);
    }
    /* a window of 2 from position 4 of 5, moving one along each row, wraps round the end */
    kcs_distribution moving = make("attention", 7);
    add_param(&moving, "cols", 5);
    add_param(&moving, "start", 4);
    add_param(&moving, "visible", 2);
    add_param(&moving, "shift", 1);
    assert_int_equal(kcs_generate(&moving, KCS_F64, v, 0, 3 * 5, NULL), KCS_OK);
    const char *wrapped[] = {"#...#", "##...", ".##.."};
    for (int r = 0; r < 3; r++) {
        row_pattern(v + 5 * r, 5, pattern);
        assert_string_equal(pattern, wrapped[r]);
    }
    /* a run of -inf in the middle: the window starts after it and wraps round to its start */
    kcs_distribution middle = make("attention", 7);
    add_param(&middle, "cols", 6);
    add_param(&middle, "start", 4);
    add_param(&middle, "visible", 4);
    assert_int_equal(kcs_generate(&middle, KCS_F64, v, 0, 6, NULL), KCS_OK);
    row_pattern(v, 6, pattern);
    assert_string_equal(pattern, "##..##");
    /* nothing visible: a fully masked row; a window that grows past the row is the row */
    kcs_distribution growing = make("attention", 7);
    add_param(&growing, "cols", 3);
    add_param(&growing, "visible", 0);
    add_param(&growing, "step", 2);
    assert_int_equal(kcs_generate(&growing, KCS_F64, v, 0, 3 * 3, NULL), KCS_OK);
    const char *grown[] = {"...", "##.", "###"};
    for (int r = 0; r < 3; r++) {
        row_pattern(v + 3 * r, 3, pattern);
        assert_string_equal(pattern, grown[r]);
    }
}

static void attention_values_are_uniform_with_the_same_seed(void **state)
{
    (void)state;
    /* inside the window element i is uniform's element i: pinned there */
    kcs_distribution d = make("attention", 7);
    add_param(&d, "cols", 3);
    add_param(&d, "start", 1);
    add_param(&d, "visible", 2);
    add_param(&d, "lo", -2);
    add_param(&d, "hi", 2);
    float f[3];
    assert_int_equal(kcs_generate(&d, KCS_F32, f, 0, 3, NULL), KCS_OK);
    assert_true(f[0] == -INFINITY);
    assert_true(f[1] == 0x1.3c8f1p-1f);
    assert_true(f[2] == 0x1.408494p+0f);
    kcs_distribution everything = make("attention", 7);
    add_param(&everything, "cols", 2);
    double v[3];
    assert_int_equal(kcs_generate(&everything, KCS_F64, v, 0, 3, NULL), KCS_OK);
    assert_true(v[0] == 0.8338241343293695); /* visible defaults to the whole row, lo and hi to 0 and 1 */
    assert_true(v[1] == 0.6545697378715991);
    assert_true(v[2] == 0.8130057368826025);
}

static void attention_parameters_are_checked(void **state)
{
    (void)state;
    kcs_error err;
    kcs_distribution d = make("attention", 0);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "needs parameter 'cols'"));
    add_param(&d, "cols", 0);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "whole cols"));
    d = make("attention", 0);
    add_param(&d, "cols", 8);
    add_param(&d, "visible", 9);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "visible <= cols"));
    d = make("attention", 0);
    add_param(&d, "cols", 8);
    add_param(&d, "shift", -1);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "whole shift"));
    d = make("attention", 0);
    add_param(&d, "cols", 8);
    add_param(&d, "step", 0.5);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "whole step"));
    /* the mask's rows must be the array's */
    d = make("attention", 0);
    add_param(&d, "cols", 8);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_OK);
    assert_int_equal(kcs_distribution_check_rows(&d, 8, &err), KCS_OK);
    assert_int_equal(kcs_distribution_check_rows(&d, 9, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "cols=8, but the array's rows (its last axis) have 9 elements"));
    kcs_distribution uniform = make("uniform", 0);
    assert_int_equal(kcs_distribution_check_rows(&uniform, 9, &err), KCS_OK);
}

static void portable_log_is_accurate(void **state)
{
    (void)state;
    double worst = 0;
    for (double x = 1e-300; x < 1e300; x *= 1.37) {
        double relative = fabs(kcs_portable_log(x) - log(x)) / fabs(log(x) ? log(x) : 1);
        worst = relative > worst ? relative : worst;
    }
    for (double x = 0.5; x < 2.0; x += 0.001) {
        double error = fabs(kcs_portable_log(x) - log(x));
        assert_true(error <= 4e-16 * fmax(fabs(log(x)), 1e-3));
    }
    assert_true(worst < 4e-16);
}

static void bad_distributions_are_named(void **state)
{
    (void)state;
    kcs_error err;
    kcs_distribution d = make("gaussian", 0);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "unknown distribution 'gaussian'"));
    d = make("uniform", 0);
    add_param(&d, "mean", 1);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "no parameter 'mean'"));
    d = make("uniform", 0);
    add_param(&d, "lo", 2);
    add_param(&d, "hi", 1);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "lo <= hi"));
    d = make("constant", 0);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "needs parameter 'value'"));
    d = make("integers", 0);
    add_param(&d, "lo", 0.5);
    add_param(&d, "hi", 3);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
    d = make("special", 0);
    add_param(&d, "fraction", 2);
    assert_int_equal(kcs_distribution_check(&d, &err), KCS_ERROR);
}

static void half_precision_conversion_rounds_to_nearest_even(void **state)
{
    (void)state;
    assert_int_equal(kcs_f16_from_double(1.0), 0x3c00);
    assert_int_equal(kcs_f16_from_double(-2.0), 0xc000);
    assert_int_equal(kcs_f16_from_double(65504.0), 0x7bff);
    assert_int_equal(kcs_f16_from_double(65520.0), 0x7c00);   /* halfway to 2^16: inf */
    assert_int_equal(kcs_f16_from_double(65519.99), 0x7bff);
    assert_int_equal(kcs_f16_from_double(0x1p-24), 0x0001);  /* smallest subnormal */
    assert_int_equal(kcs_f16_from_double(0x1p-25), 0x0000);  /* halfway: to even (zero) */
    assert_int_equal(kcs_f16_from_double(0x1.8p-24), 0x0002); /* 1.5 units: to even (2) */
    assert_int_equal(kcs_f16_from_double(1.0 + 0x1p-11), 0x3c00); /* halfway: to even */
    assert_int_equal(kcs_f16_from_double(1.0 + 0x1.8p-10), 0x3c02);
    assert_int_equal(kcs_f16_from_double(-0.0), 0x8000);
    assert_true(isnan(kcs_f16_to_double(kcs_f16_from_double(NAN))));
    for (unsigned h = 0; h < 0x7c00; h++) /* every finite half survives the round trip */
        assert_int_equal(kcs_f16_from_double(kcs_f16_to_double((uint16_t)h)), h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_bits_are_pinned),
        cmocka_unit_test(default_seed_is_the_hash_of_case_and_input),
        cmocka_unit_test(uniform_is_pinned),
        cmocka_unit_test(normal_is_pinned),
        cmocka_unit_test(normal_has_the_right_moments),
        cmocka_unit_test(elements_do_not_depend_on_where_generation_starts),
        cmocka_unit_test(ramp_constant_and_integers),
        cmocka_unit_test(special_values_cover_every_group_in_the_dtype),
        cmocka_unit_test(attention_masks_a_window_of_each_row),
        cmocka_unit_test(attention_values_are_uniform_with_the_same_seed),
        cmocka_unit_test(attention_parameters_are_checked),
        cmocka_unit_test(portable_log_is_accurate),
        cmocka_unit_test(bad_distributions_are_named),
        cmocka_unit_test(half_precision_conversion_rounds_to_nearest_even),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
