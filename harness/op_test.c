/* op_test.c: kcs_check_buffers, the one check of a call's buffers against
 * its op's layout that every backend's call path and the library make
 * (harness/op.h), on the reference backend's buffers: the sizes come from
 * the layout (not from the case dtype alone), every input and output is
 * checked, the message names the buffer and both sizes, and a reference
 * row refuses a short buffer before it reads it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend.h"
#include "op.h"

extern const kcs_backend kcs_reference_backend; /* ref/backend.c */

/* The reference's device and up to 8 buffers, released by teardown. */
typedef struct {
    kcs_device *device;
    kcs_buffer *buffers[8];
    int count;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    kcs_device_info info;
    kcs_error err;
    if (kcs_reference_backend.open(0, &f.device, &info, &err) != KCS_OK)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int i = 0; i < f->count; i++)
        kcs_reference_backend.release(f->device, f->buffers[i]);
    kcs_reference_backend.close(f->device);
    return 0;
}

static kcs_buffer *buffer(fixture *f, size_t bytes)
{
    kcs_error err;
    assert_true(f->count < 8);
    assert_int_equal(kcs_reference_backend.allocate(f->device, bytes, &f->buffers[f->count], &err), KCS_OK);
    return f->buffers[f->count++];
}

static void exact_sizes_pass_and_one_byte_short_is_refused(void **state)
{
    fixture *f = *state;
    kcs_op_args args = {.op = "sumsq", .dtype = KCS_F64, .sumsq = {.n = 1000}};
    kcs_buffer *x = buffer(f, 8000), *s = buffer(f, 8), *short_x = buffer(f, 7999);
    kcs_error err;
    assert_int_equal(kcs_check_buffers(kcs_find_op("sumsq"), &args, (kcs_buffer *[]){x}, (kcs_buffer *[]){s}, &err),
                     KCS_OK);
    assert_int_equal(
        kcs_check_buffers(kcs_find_op("sumsq"), &args, (kcs_buffer *[]){short_x}, (kcs_buffer *[]){s}, &err),
        KCS_ERROR);
    assert_string_equal(err.message, "input 0 (x) needs 8000 bytes, its buffer has 7999");
    /* the output too: the scalar s is one element of the case dtype */
    assert_int_equal(kcs_check_buffers(kcs_find_op("sumsq"), &args, (kcs_buffer *[]){x}, (kcs_buffer *[]){x}, &err),
                     KCS_OK);
    args.sumsq.n = 1;
    assert_int_equal(kcs_check_buffers(kcs_find_op("sumsq"), &args, (kcs_buffer *[]){x}, (kcs_buffer *[]){short_x},
                                       &err),
                     KCS_OK);
}

static void sizes_come_from_the_layout_not_the_case_dtype(void **state)
{
    /* an f16 GEMM whose C and C_out are f32 (c_dtype=f32): a and b of 2-byte
     * elements, c and c_out of 4-byte ones, transposed a stored k x m */
    fixture *f = *state;
    kcs_op_args args = {.op = "gemm", .dtype = KCS_F16,
                        .gemm = {.m = 3, .n = 5, .k = 7, .transpose_a = 1, .alpha = 1, .c_dtype = KCS_F32}};
    kcs_buffer *a = buffer(f, 3 * 7 * 2), *b = buffer(f, 7 * 5 * 2), *c = buffer(f, 3 * 5 * 4);
    kcs_buffer *c_as_f16 = buffer(f, 3 * 5 * 2);
    kcs_error err;
    const kcs_op *gemm = kcs_find_op("gemm");
    assert_int_equal(kcs_check_buffers(gemm, &args, (kcs_buffer *[]){a, b, c}, (kcs_buffer *[]){c}, &err), KCS_OK);
    assert_int_equal(kcs_check_buffers(gemm, &args, (kcs_buffer *[]){a, b, c}, (kcs_buffer *[]){c_as_f16}, &err),
                     KCS_ERROR);
    assert_string_equal(err.message, "output 0 (c_out) needs 60 bytes, its buffer has 30");
    assert_int_equal(kcs_check_buffers(gemm, &args, (kcs_buffer *[]){a, b, c_as_f16}, (kcs_buffer *[]){c}, &err),
                     KCS_ERROR);
    assert_string_equal(err.message, "input 2 (c) needs 60 bytes, its buffer has 30");
}

static void every_output_is_checked(void **state)
{
    /* reduce writes three: count (m i32), mean and var (m x d f32) */
    fixture *f = *state;
    kcs_op_args args = {.op = "reduce", .dtype = KCS_F32, .reduce = {.n = 10, .d = 3, .m = 4}};
    kcs_buffer *x = buffer(f, 10 * 3 * 4), *idx = buffer(f, 10 * 4), *count = buffer(f, 4 * 4);
    kcs_buffer *mean = buffer(f, 4 * 3 * 4), *short_var = buffer(f, 4 * 3 * 4 - 1);
    kcs_error err;
    assert_int_equal(kcs_check_buffers(kcs_find_op("reduce"), &args, (kcs_buffer *[]){x, idx},
                                       (kcs_buffer *[]){count, mean, mean}, &err),
                     KCS_OK);
    assert_int_equal(kcs_check_buffers(kcs_find_op("reduce"), &args, (kcs_buffer *[]){x, idx},
                                       (kcs_buffer *[]){count, mean, short_var}, &err),
                     KCS_ERROR);
    assert_string_equal(err.message, "output 2 (var) needs 48 bytes, its buffer has 47");
}

static void a_missing_buffer_an_unknown_op_and_an_impossible_size_are_refused(void **state)
{
    fixture *f = *state;
    kcs_buffer *x = buffer(f, 16);
    kcs_error err;
    kcs_op_args args = {.op = "add", .dtype = KCS_F32, .elementwise = {.n = 4}};
    assert_int_equal(kcs_check_buffers(kcs_find_op("add"), &args, (kcs_buffer *[]){x, NULL}, (kcs_buffer *[]){x}, &err),
                     KCS_ERROR);
    assert_string_equal(err.message, "input 1 (y, 16 bytes) is NULL");
    assert_int_equal(kcs_check_buffers(kcs_find_op("add"), &args, (kcs_buffer *[]){x, x}, NULL, &err), KCS_ERROR);
    assert_string_equal(err.message, "output 0 (out, 16 bytes) is NULL");

    kcs_op_args nothing = {.op = "no-such-op", .dtype = KCS_F32};
    assert_int_equal(kcs_check_buffers(kcs_find_op(nothing.op), &nothing, NULL, NULL, &err), KCS_ERROR);
    assert_string_equal(err.message, "there is no op 'no-such-op'");

    /* n x 8 bytes past SIZE_MAX: refused, not wrapped around to a small size */
    kcs_op_args huge = {.op = "sumsq", .dtype = KCS_F64, .sumsq = {.n = SIZE_MAX / 4}};
    assert_int_equal(kcs_check_buffers(kcs_find_op("sumsq"), &huge, (kcs_buffer *[]){x}, (kcs_buffer *[]){x}, &err),
                     KCS_ERROR);
    assert_string_equal(err.message, "input 0 (x) has more bytes than a size_t counts");
}

static void a_reference_row_refuses_a_short_buffer_before_reading_it(void **state)
{
    fixture *f = *state;
    const kcs_kernel *row = kcs_backend_find_kernel(&kcs_reference_backend, "sumsq", KCS_F64, NULL);
    assert_non_null(row);
    kcs_buffer *x = buffer(f, 80), *s = buffer(f, 8);
    double ones[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, result = -1;
    kcs_error err;
    assert_int_equal(kcs_reference_backend.upload(f->device, x, ones, sizeof ones, &err), KCS_OK);
    assert_int_equal(kcs_reference_backend.upload(f->device, s, &result, sizeof result, &err), KCS_OK);
    double seconds = 0;
    kcs_op_args args = {.op = "sumsq", .dtype = KCS_F64, .sumsq = {.n = 11}};
    assert_int_equal(row->run(f->device, &args, (kcs_buffer *[]){x}, (kcs_buffer *[]){s}, &seconds, &err), KCS_ERROR);
    assert_string_equal(err.message, "input 0 (x) needs 88 bytes, its buffer has 80");
    assert_int_equal(kcs_reference_backend.download(f->device, s, &result, sizeof result, &err), KCS_OK);
    assert_true(result == -1); /* nothing ran */
    args.sumsq.n = 10;
    assert_int_equal(row->run(f->device, &args, (kcs_buffer *[]){x}, (kcs_buffer *[]){s}, &seconds, &err), KCS_OK);
    assert_int_equal(kcs_reference_backend.download(f->device, s, &result, sizeof result, &err), KCS_OK);
    assert_true(result == 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(exact_sizes_pass_and_one_byte_short_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(sizes_come_from_the_layout_not_the_case_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(every_output_is_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(a_missing_buffer_an_unknown_op_and_an_impossible_size_are_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_reference_row_refuses_a_short_buffer_before_reading_it, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
