/* saboteur_sumsq_test.c: the harness tests itself, on sum of squares. Each deliberately broken
 * kernel of saboteur_backend.c is run through the same path as every real
 * backend (prepare the case from the case files and golden/, poison, run, check)
 * and must fail with the right diagnosis; the reference must pass the same
 * case, so the test fails if either the checker or the case goes wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void dropping_the_last_of_1e8_f64_elements_fails(void **state)
{
    (void)state;
    /* the last element of the ramp is 3e-8 of the sum; the bound is 2.3e-13 of it */
    kcs_test_expect_caught("sumsq/f64-n100000000", "drops-last-element", "times the bound");
}

static void dropping_the_last_of_a_million_f32_elements_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f32-n1000003", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/f64-n7", "drops-last-element", "times the bound");
}

static void accumulating_f64_in_f32_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n1000003", "accumulates-in-float", "times the bound");
    kcs_test_expect_caught("sumsq/f64-ramp-1000", "accumulates-in-float", "times the bound");
    kcs_test_expect_caught("sumsq/f32-n1000003", "accumulates-in-float", "times the bound");
}

static void accumulating_16_bit_input_in_its_own_type_fails(void **state)
{
    (void)state;
    /* an f16 running sum of squares in [-1/4, 1/4] stalls at 128 of about 21000 */
    kcs_test_expect_caught("sumsq/f16-n1000003", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-n1000003", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/f16-tenths", "accumulates-in-storage-type", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-tenths", "accumulates-in-storage-type", "times the bound");
}

static void dropping_one_of_a_short_16_bit_sum_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f16-n93", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/bf16-n93", "drops-last-element", "times the bound");
    kcs_test_expect_caught("sumsq/f16-sum-just-finite", "drops-last-element", "times the bound");
}

static void an_unwritten_output_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n7", "writes-nothing", "never written");
    kcs_test_expect_caught("sumsq/f32-nan", "writes-nothing", "never written"); /* poison is no computed NaN */
}

static void a_zero_answer_fails_and_says_so(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n93", "returns-zero", "all zeros");
}

/* Each saboteur that does what a model of docs/sumsq.md ("Arithmetic
 * models") describes is explained by that model, alone or with one the case
 * cannot tell from it (a ragged tail of one element is the last element). */
static void a_dropped_last_element_is_explained_as_such(void **state)
{
    (void)state;
    const char *cases[] = {"sumsq/f64-n93", "sumsq/f64-n1000003", "sumsq/f32-n1000003", "sumsq/f32-n7",
                           "sumsq/f16-tenths", "sumsq/bf16-tenths", "sumsq/f16-n93", "sumsq/bf16-n93",
                           "sumsq/f16-sum-just-finite", "sumsq/f64-ramp-1000"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "drops-last-element", "sumsq-drops-last-element");
}

static void a_dropped_ragged_tail_is_explained_as_such(void **state)
{
    (void)state;
    /* 4 f32 to a vector: 3 of 7 and of 1000003 dropped; 8 f16: 5 of 93, 4 of 100 */
    const char *cases[] = {"sumsq/f32-n7", "sumsq/f32-n1000003", "sumsq/f16-n93", "sumsq/bf16-n93",
                           "sumsq/bf16-tenths", "sumsq/f64-n93", "sumsq/bf16-ramp-100"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "drops-ragged-tail", "sumsq-drops-ragged-tail");
}

static void an_f32_sum_of_f64_is_explained_as_such(void **state)
{
    (void)state;
    const char *cases[] = {"sumsq/f64-n7", "sumsq/f64-n93", "sumsq/f64-n1000003", "sumsq/f64-ramp-1000",
                           "sumsq/f64-subnormal-among-normal"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "accumulates-in-float", "sumsq-accumulates-in-f32");
}

static void a_sum_in_the_storage_type_is_explained_as_such(void **state)
{
    (void)state;
    /* f32 in f32 is its own storage type */
    kcs_test_expect_explained("sumsq/f32-n1000003", "accumulates-in-float", "sumsq-accumulates-in-storage-type");
    kcs_test_expect_explained("sumsq/f32-n93", "accumulates-in-float", "sumsq-accumulates-in-storage-type");
    const char *cases[] = {"sumsq/f16-tenths", "sumsq/bf16-tenths", "sumsq/f16-n1000003", "sumsq/bf16-n1000003",
                           "sumsq/f16-n4096", "sumsq/bf16-squares-underflow-in-f32"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
        kcs_test_expect_explained(cases[c], "accumulates-in-storage-type", "sumsq-accumulates-in-storage-type");
}

/* No arithmetic leaves the output unwritten or returns 0 for a sum of
 * nonzero squares: unexplained, except where a model's own arithmetic ends
 * at 0 too, and the case cannot tell the two apart. */
static void trivial_answers_are_unexplained(void **state)
{
    (void)state;
    const char *cases[] = {"sumsq/f64-n93", "sumsq/f32-n1000003", "sumsq/f16-tenths", "sumsq/bf16-tenths",
                           "sumsq/f32-nan", "sumsq/f16-sum-overflows"};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        kcs_test_expect_explained(cases[c], "writes-nothing", NULL);
        kcs_test_expect_explained(cases[c], "returns-zero", NULL);
    }
    /* three elements, fewer than an f32 vector: without its tail the sum is empty */
    kcs_test_expect_explained("sumsq/f32-n3", "returns-zero", "sumsq-drops-ragged-tail");
    /* f16 squares below 2^-25 each leave an f16 running sum at 0 */
    kcs_test_expect_explained("sumsq/f16-subnormal-squares", "returns-zero", "sumsq-accumulates-in-storage-type");
}

static void a_modified_input_fails(void **state)
{
    (void)state;
    kcs_test_expect_caught("sumsq/f64-n93", "overwrites-input", "input x was modified");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dropping_the_last_of_1e8_f64_elements_fails),
        cmocka_unit_test(dropping_the_last_of_a_million_f32_elements_fails),
        cmocka_unit_test(accumulating_f64_in_f32_fails),
        cmocka_unit_test(accumulating_16_bit_input_in_its_own_type_fails),
        cmocka_unit_test(dropping_one_of_a_short_16_bit_sum_fails),
        cmocka_unit_test(an_unwritten_output_fails),
        cmocka_unit_test(a_zero_answer_fails_and_says_so),
        cmocka_unit_test(a_modified_input_fails),
        cmocka_unit_test(a_dropped_last_element_is_explained_as_such),
        cmocka_unit_test(a_dropped_ragged_tail_is_explained_as_such),
        cmocka_unit_test(an_f32_sum_of_f64_is_explained_as_such),
        cmocka_unit_test(a_sum_in_the_storage_type_is_explained_as_such),
        cmocka_unit_test(trivial_answers_are_unexplained),
    };
    return cmocka_run_group_tests(tests, kcs_test_load_cases, kcs_test_free_cases);
}
