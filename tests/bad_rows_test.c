/* bad_rows_test.c: a kernel table with rows wrong on purpose, checked as the
 * runner checks every row at start-up and in `kcs rows` (harness/kernel_rows.c,
 * kcs_kernel_row_problem; runner/rows.c). Each wrong row must be found with
 * a message naming the backend, the row (op, dtype, variant) and the cause,
 * and the right rows, and every row of the reference backend, must pass.
 * The table is this file's own, so no runner ever carries it; that the real
 * tables pass is tests/kernel_rows_test.sh (`kcs rows` on build/kcs and
 * build/kcs-saboteur).
 *
 * Run only it: ninja build/tests/bad_rows_test && build/tests/bad_rows_test
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "kernel_rows.h"

extern const kcs_backend kcs_reference_backend;

static KCS_KERNEL_RUN(run_nothing)
{
    (void)device, (void)args, (void)inputs, (void)outputs, (void)err;
    if (kernel_seconds)
        *kernel_seconds = 0;
    return KCS_OK;
}

static const kcs_kernel rows[] = {
    {"sumsq", KCS_F32, "loop", "right", run_nothing, NULL},
    {"sumsqq", KCS_F32, "loop", "an op misspelt", run_nothing, NULL},
    {"sumsq", KCS_I32, "loop", "a dtype sumsq does not have", run_nothing, NULL},
    {"sumsq", KCS_F32, "loop", "the first row's variant again, for the same op and dtype", run_nothing, NULL},
    {"sumsq", KCS_F64, "loop", "right: the same variant name, another dtype", run_nothing, NULL},
    {"sumsq", KCS_F16, "", "no variant name", run_nothing, NULL},
    {"sumsq", KCS_BF16, "nothing", "no run function", NULL, NULL},
    {"softmax", KCS_DTYPE_NONE, "loop", "no dtype at all", run_nothing, NULL},
};
static const kcs_kernel_table table = KCS_KERNEL_TABLE(rows);
static const kcs_kernel_table *const tables[] = {&table, NULL};
static const kcs_backend bad_backend = {.interface_version = KCS_BACKEND_INTERFACE_VERSION, .name = "bad-rows",
                                        .kernel_tables = tables};

/* Row index of bad_backend has the problem message, word for word. */
static void expect_problem(size_t index, const char *message)
{
    char found[1024] = "";
    if (!kcs_kernel_row_problem(&bad_backend, index, found, sizeof found))
        fail_msg("row %zu (%s): no problem found, expected '%s'", index, rows[index].description, message);
    assert_string_equal(found, message);
}

static void each_wrong_row_is_named_with_its_cause(void **state)
{
    (void)state;
    char message[1024];
    /* The unknown op: the message lists the known ones (the op table's, which grows), so its start is fixed. */
    assert_int_equal(kcs_kernel_row_problem(&bad_backend, 1, message, sizeof message), 1);
    const char *start = "bad-rows: kernel row sumsqq f32 loop: no op 'sumsqq' in the op table (known: ";
    if (strncmp(message, start, strlen(start)) != 0 || !strstr(message, "sumsq, ") || !strstr(message, "gemm") ||
        message[strlen(message) - 1] != ')')
        fail_msg("unexpected message for the misspelt op: '%s'", message);
    expect_problem(2, "bad-rows: kernel row sumsq i32 loop: op sumsq has no dtype i32 (it has: f16, bf16, f32, f64)");
    expect_problem(3, "bad-rows: kernel row sumsq f32 loop: an earlier row of sumsq f32 has the variant name loop too "
                      "(a variant names one row)");
    expect_problem(5, "bad-rows: kernel row sumsq f16 : no variant name");
    expect_problem(6, "bad-rows: kernel row sumsq bf16 nothing: no run function");
    expect_problem(7, "bad-rows: kernel row softmax none loop: op softmax has no dtype none (it has: f16, bf16, f32, "
                      "f64)");
}

static void right_rows_pass(void **state)
{
    (void)state;
    char message[1024] = "";
    assert_int_equal(kcs_kernel_row_problem(&bad_backend, 0, message, sizeof message), 0);
    assert_int_equal(kcs_kernel_row_problem(&bad_backend, 4, message, sizeof message), 0);
    size_t count = kcs_backend_kernel_count(&kcs_reference_backend);
    assert_true(count > 0);
    for (size_t k = 0; k < count; k++)
        if (kcs_kernel_row_problem(&kcs_reference_backend, k, message, sizeof message))
            fail_msg("a row of the reference backend: %s", message);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_wrong_row_is_named_with_its_cause),
        cmocka_unit_test(right_rows_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
