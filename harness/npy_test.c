/* npy_test.c: unit tests of the .npy reader and writer (cmocka).
 *
 * Golden data is only as trustworthy as the code that reads it, so these
 * tests check that every dtype and rank survives a round trip bit for bit,
 * that files numpy wrote read correctly (and that ours are byte-identical to
 * numpy's), and that every kind of damaged file becomes a message naming the
 * file and the cause instead of a crash, an over-read or a wrong array.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "npy.h"

/* Made with numpy 1.24.2:
 *   a = np.arange(6, dtype='<f4').reshape(2, 3)
 *   np.save(f, a)                                        (version 1.0)
 *   np.lib.format.write_array(f, a, version=(2, 0))      (version 2.0)
 *   np.save(f, np.array(-0.0, dtype='<f8'))              (a 0-d scalar)
 * and printed as hex with bytes.hex(). */
static const unsigned char numpy_arange6_f4_v1[152] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27,
    0x64, 0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34,
    0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f,
    0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20,
    0x28, 0x32, 0x2c, 0x20, 0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40,
    0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40,
};
static const unsigned char numpy_arange6_f4_v2[152] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x02, 0x00, 0x74, 0x00, 0x00, 0x00,
    0x7b, 0x27, 0x64, 0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c,
    0x66, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61,
    0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61,
    0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27,
    0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20, 0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x40, 0x40,
    0x00, 0x00, 0x80, 0x40, 0x00, 0x00, 0xa0, 0x40,
};
static const unsigned char numpy_negative_zero_f8_scalar[136] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27,
    0x64, 0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x38,
    0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f,
    0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20,
    0x28, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x80,
};

static char temp_dir[64];

static int make_temp_dir(void **state)
{
    (void)state;
    strcpy(temp_dir, "/tmp/kcs_npy_test.XXXXXX");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int remove_temp_dir(void **state)
{
    (void)state;
    DIR *dir = opendir(temp_dir);
    if (dir == NULL)
        return -1;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", temp_dir, entry->d_name);
        unlink(path);
    }
    closedir(dir);
    return rmdir(temp_dir);
}

/* A path in the temporary directory; each call reuses one of a few buffers. */
static const char *temp_path(const char *file_name)
{
    static char paths[4][512];
    static int next;
    char *path = paths[next++ % 4];
    snprintf(path, sizeof paths[0], "%s/%s", temp_dir, file_name);
    return path;
}

static void write_file(const char *path, const void *bytes, size_t length)
{
    FILE *file = fopen(path, "wb");
    assert_non_null(file);
    if (length > 0)
        assert_int_equal(fwrite(bytes, 1, length, file), length);
    assert_int_equal(fclose(file), 0);
}

static unsigned char *read_file(const char *path, size_t *length)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    assert_int_equal(fseek(file, 0, SEEK_END), 0);
    long size = ftell(file);
    assert_true(size >= 0);
    rewind(file);
    unsigned char *bytes = malloc((size_t)size + 1);
    assert_non_null(bytes);
    *length = fread(bytes, 1, (size_t)size + 1, file);
    assert_int_equal(*length, (size_t)size);
    fclose(file);
    return bytes;
}

/* A .npy file of the given version whose header is exactly header_text (no
 * padding added, so the data need not be aligned) followed by data_length
 * bytes of data. */
static unsigned char *npy_bytes(unsigned major, unsigned minor, const char *header_text, size_t data_length,
                                size_t *length)
{
    size_t header_length = strlen(header_text);
    size_t preamble = major == 1 ? 10 : 12;
    *length = preamble + header_length + data_length;
    unsigned char *bytes = calloc(*length > 0 ? *length : 1, 1);
    assert_non_null(bytes);
    memcpy(bytes, "\x93NUMPY", 6);
    bytes[6] = (unsigned char)major;
    bytes[7] = (unsigned char)minor;
    for (size_t i = 0; i < preamble - 8; i++)
        bytes[8 + i] = (unsigned char)(header_length >> (8 * i));
    memcpy(bytes + preamble, header_text, header_length);
    for (size_t i = 0; i < data_length; i++)
        bytes[preamble + header_length + i] = (unsigned char)(i * 7 + 1);
    return bytes;
}

/* Fails the test unless err starts with "name:" and contains every word. */
static void assert_message(const kcs_error *err, const char *name, const char *const *words)
{
    size_t name_length = strlen(name);
    if (strncmp(err->message, name, name_length) != 0 || err->message[name_length] != ':')
        fail_msg("message does not start with \"%s:\": %s", name, err->message);
    for (; *words; words++)
        if (strstr(err->message, *words) == NULL)
            fail_msg("message lacks \"%s\": %s", *words, err->message);
}

static void assert_zeroed(const kcs_npy_array *array)
{
    assert_null(array->data);
    assert_int_equal(array->ndim, 0);
    assert_int_equal(array->dtype, KCS_DTYPE_NONE);
}

/* Reads bytes both from a file and from an exactly-sized heap copy (so that
 * AddressSanitizer catches any read past the end) and expects both to fail
 * with a message naming the source and containing every word. */
static void expect_error(const char *file_name, const unsigned char *bytes, size_t length, const char *const *words)
{
    const char *path = temp_path(file_name);
    write_file(path, bytes, length);
    kcs_npy_array array;
    kcs_error err = {{0}};
    assert_int_equal(kcs_npy_read(path, &array, &err), KCS_ERROR);
    assert_message(&err, path, words);
    assert_zeroed(&array);
    unlink(path);

    unsigned char *copy = malloc(length > 0 ? length : 1);
    assert_non_null(copy);
    if (length > 0)
        memcpy(copy, bytes, length);
    err.message[0] = '\0';
    assert_int_equal(kcs_npy_parse(copy, length, "in-memory.npy", &array, &err), KCS_ERROR);
    assert_message(&err, "in-memory.npy", words);
    assert_zeroed(&array);
    free(copy);
}

#define EXPECT_ERROR(bytes, length, ...) \
    expect_error(__func__, (bytes), (length), (const char *const[]){__VA_ARGS__, NULL})

/* A version 1.0 file with header_text and data_length bytes of data. */
#define EXPECT_HEADER_ERROR(header_text, data_length, ...)                            \
    do {                                                                              \
        size_t npy_length;                                                            \
        unsigned char *npy = npy_bytes(1, 0, (header_text), (data_length), &npy_length); \
        EXPECT_ERROR(npy, npy_length, __VA_ARGS__);                                   \
        free(npy);                                                                    \
    } while (0)

/* Parses header_text with data_length bytes of data, expecting success. */
static void expect_parse(const char *header_text, size_t data_length, kcs_npy_array *array)
{
    size_t length;
    unsigned char *bytes = npy_bytes(1, 0, header_text, data_length, &length);
    kcs_error err = {{0}};
    kcs_status status = kcs_npy_parse(bytes, length, "variation.npy", array, &err);
    if (status != KCS_OK)
        fail_msg("header %s: %s", header_text, err.message);
    free(bytes);
}

/* ---- round trips ---- */

static uint64_t random_state = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
    random_state ^= random_state << 13;
    random_state ^= random_state >> 7;
    random_state ^= random_state << 17;
    return random_state;
}

/* Bit patterns that a careless reader or writer would change: NaN payloads
 * (quiet, signalling, negative), -0.0, the smallest subnormal, -inf, and the
 * integer extremes. */
static void put_special_values(void *data, kcs_dtype dtype, size_t count)
{
    static const uint16_t f16[] = {0x7e01, 0x7c01, 0xfe3f, 0x8000, 0x0001, 0xfc00};
    static const uint16_t bf16[] = {0x7fc1, 0x7f81, 0xffff, 0x8000, 0x0001, 0xff80};
    static const uint32_t f32[] = {0x7fc12345u, 0x7f800001u, 0xffffffffu, 0x80000000u, 0x00000001u, 0xff800000u};
    static const uint64_t f64[] = {0x7ff8deadbeef0001u, 0x7ff0000000000001u, 0xfff8000000000000u,
                                   0x8000000000000000u, 0x0000000000000001u, 0xfff0000000000000u};
    static const int32_t i32[] = {INT32_MIN, -1, 0, INT32_MAX};
    static const int64_t i64[] = {INT64_MIN, -1, 0, INT64_MAX};
    const void *values;
    size_t value_count, size = kcs_dtype_size(dtype);
    switch (dtype) {
    case KCS_F16: values = f16; value_count = 6; break;
    case KCS_BF16: values = bf16; value_count = 6; break;
    case KCS_F32: values = f32; value_count = 6; break;
    case KCS_F64: values = f64; value_count = 6; break;
    case KCS_I32: values = i32; value_count = 4; break;
    default: values = i64; value_count = 4; break;
    }
    if (value_count > count)
        value_count = count;
    memcpy(data, values, value_count * size);
}

static void round_trip(kcs_dtype dtype, int ndim, const size_t *shape)
{
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= shape[i];
    size_t bytes = count * kcs_dtype_size(dtype);
    unsigned char *data = malloc(bytes > 0 ? bytes : 1);
    assert_non_null(data);
    for (size_t i = 0; i < bytes; i++)
        data[i] = (unsigned char)next_random();
    put_special_values(data, dtype, count);

    char file_name[64];
    snprintf(file_name, sizeof file_name, "round_trip_%s_%d.npy", kcs_dtype_name(dtype), ndim);
    const char *path = temp_path(file_name);
    kcs_error err = {{0}};
    if (kcs_npy_write(path, dtype, ndim, shape, data, &err) != KCS_OK)
        fail_msg("%s", err.message);

    size_t file_length;
    unsigned char *file_bytes = read_file(path, &file_length);
    assert_true(file_length >= bytes);
    assert_int_equal((file_length - bytes) % 64, 0); /* numpy's alignment */
    assert_int_equal(file_bytes[file_length - bytes - 1], '\n');
    free(file_bytes);

    kcs_npy_array array;
    if (kcs_npy_read(path, &array, &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(array.dtype, dtype);
    assert_int_equal(array.ndim, ndim);
    for (int i = 0; i < ndim; i++)
        assert_int_equal(array.shape[i], shape[i]);
    assert_int_equal(kcs_npy_element_count(&array), count);
    assert_non_null(array.data);
    if (bytes > 0)
        assert_memory_equal(array.data, data, bytes);
    kcs_npy_free(&array);
    assert_zeroed(&array);
    unlink(path);
    free(data);
}

static void test_round_trip_every_dtype_and_rank(void **state)
{
    (void)state;
    static const kcs_dtype dtypes[] = {KCS_F16, KCS_BF16, KCS_F32, KCS_F64, KCS_I32, KCS_I64};
    static const size_t shapes[5][KCS_NPY_MAX_DIMS] = {{0}, {7}, {3, 5}, {2, 3, 4}, {2, 1, 3, 2}};
    for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
        for (int ndim = 0; ndim <= KCS_NPY_MAX_DIMS; ndim++)
            round_trip(dtypes[d], ndim, shapes[ndim]);
}

static void test_round_trip_empty_and_large_extents(void **state)
{
    (void)state;
    const size_t empty[2] = {0, 3};
    round_trip(KCS_F32, 2, empty);
    const size_t wide[1] = {100000}; /* larger than any internal buffer */
    round_trip(KCS_F64, 1, wide);
}

/* ---- files numpy wrote ---- */

static void check_arange6(const kcs_npy_array *array)
{
    assert_int_equal(array->dtype, KCS_F32);
    assert_int_equal(array->ndim, 2);
    assert_int_equal(array->shape[0], 2);
    assert_int_equal(array->shape[1], 3);
    assert_int_equal(kcs_npy_element_count(array), 6);
    const float *values = array->data;
    for (int i = 0; i < 6; i++)
        assert_true(values[i] == (float)i);
}

static void test_reads_numpy_version_1(void **state)
{
    (void)state;
    const char *path = temp_path("numpy_v1.npy");
    write_file(path, numpy_arange6_f4_v1, sizeof numpy_arange6_f4_v1);
    kcs_npy_array array;
    kcs_error err = {{0}};
    if (kcs_npy_read(path, &array, &err) != KCS_OK)
        fail_msg("%s", err.message);
    check_arange6(&array);
    kcs_npy_free(&array);
    unlink(path);
}

static void test_reads_numpy_versions_2_and_3(void **state)
{
    (void)state;
    unsigned char bytes[sizeof numpy_arange6_f4_v2];
    memcpy(bytes, numpy_arange6_f4_v2, sizeof bytes);
    kcs_npy_array array;
    kcs_error err = {{0}};
    if (kcs_npy_parse(bytes, sizeof bytes, "numpy_v2.npy", &array, &err) != KCS_OK)
        fail_msg("%s", err.message);
    check_arange6(&array);
    kcs_npy_free(&array);
    /* 3.0 differs from 2.0 only in allowing UTF-8 in the header. */
    bytes[6] = 3;
    if (kcs_npy_parse(bytes, sizeof bytes, "numpy_v3.npy", &array, &err) != KCS_OK)
        fail_msg("%s", err.message);
    check_arange6(&array);
    kcs_npy_free(&array);
}

static void test_reads_numpy_scalar(void **state)
{
    (void)state;
    kcs_npy_array array;
    kcs_error err = {{0}};
    if (kcs_npy_parse(numpy_negative_zero_f8_scalar, sizeof numpy_negative_zero_f8_scalar, "scalar.npy", &array,
                      &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(array.dtype, KCS_F64);
    assert_int_equal(array.ndim, 0);
    assert_int_equal(kcs_npy_element_count(&array), 1);
    double value = *(const double *)array.data;
    assert_true(value == 0.0 && signbit(value));
    kcs_npy_free(&array);
}

/* The writer's output is byte-identical to np.save's, header padding and all. */
static void test_writes_what_numpy_writes(void **state)
{
    (void)state;
    const float values[6] = {0, 1, 2, 3, 4, 5};
    const size_t shape[2] = {2, 3};
    const char *path = temp_path("like_numpy.npy");
    kcs_error err = {{0}};
    assert_int_equal(kcs_npy_write(path, KCS_F32, 2, shape, values, &err), KCS_OK);
    size_t length;
    unsigned char *bytes = read_file(path, &length);
    assert_int_equal(length, sizeof numpy_arange6_f4_v1);
    assert_memory_equal(bytes, numpy_arange6_f4_v1, length);
    free(bytes);

    const double negative_zero = -0.0;
    assert_int_equal(kcs_npy_write(path, KCS_F64, 0, NULL, &negative_zero, &err), KCS_OK);
    bytes = read_file(path, &length);
    assert_int_equal(length, sizeof numpy_negative_zero_f8_scalar);
    assert_memory_equal(bytes, numpy_negative_zero_f8_scalar, length);
    free(bytes);
    unlink(path);
}

/* ---- header variations numpy (or a person) might write ---- */

static void test_accepts_header_variations(void **state)
{
    (void)state;
    static const struct {
        const char *header;
        int ndim;
        size_t shape0, shape1;
        size_t data_length;
    } cases[] = {
        {"{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}", 2, 2, 3, 24},
        {"{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4',}\n", 2, 2, 3, 24},
        {"  {  'descr' :'<f4' ,'fortran_order':False,'shape':( 2 , 3 ) }  \n", 2, 2, 3, 24},
        {"{'descr':\t'<f4',\n 'fortran_order': False,\r\n 'shape': (2L, 3L), }", 2, 2, 3, 24},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 1, 3, 0, 24},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (+3 ,), }", 1, 3, 0, 12},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (), }", 0, 0, 0, 2},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': ( ), }", 0, 0, 0, 8},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }", 2, 0, 5, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kcs_npy_array array;
        expect_parse(cases[i].header, cases[i].data_length, &array);
        assert_int_equal(array.ndim, cases[i].ndim);
        if (cases[i].ndim > 0)
            assert_int_equal(array.shape[0], cases[i].shape0);
        if (cases[i].ndim > 1)
            assert_int_equal(array.shape[1], cases[i].shape1);
        assert_int_equal(kcs_npy_element_count(&array) * kcs_dtype_size(array.dtype), cases[i].data_length);
        assert_non_null(array.data);
        kcs_npy_free(&array);
    }
}

/* ---- errors: preamble ---- */

static void test_error_bad_magic(void **state)
{
    (void)state;
    unsigned char bytes[sizeof numpy_arange6_f4_v1];
    memcpy(bytes, numpy_arange6_f4_v1, sizeof bytes);
    bytes[5] = 'Z';
    EXPECT_ERROR(bytes, sizeof bytes, "bad magic", "not a .npy file");
}

static void test_error_empty_file(void **state)
{
    (void)state;
    EXPECT_ERROR((const unsigned char *)"", 0, "bad magic", "empty");
}

static void test_error_unsupported_version(void **state)
{
    (void)state;
    unsigned char bytes[sizeof numpy_arange6_f4_v1];
    memcpy(bytes, numpy_arange6_f4_v1, sizeof bytes);
    bytes[6] = 4;
    EXPECT_ERROR(bytes, sizeof bytes, "unsupported .npy format version 4.0");
    bytes[6] = 1;
    bytes[7] = 1;
    EXPECT_ERROR(bytes, sizeof bytes, "unsupported .npy format version 1.1");
}

static void test_error_truncated_preamble(void **state)
{
    (void)state;
    EXPECT_ERROR((const unsigned char *)"\x93NUMPY\x01", 7, "truncated", "format version");
    EXPECT_ERROR((const unsigned char *)"\x93NUMPY\x02\x00\x10\x00", 10, "truncated", "header length");
}

static void test_error_header_length_past_end(void **state)
{
    (void)state;
    unsigned char bytes[sizeof numpy_arange6_f4_v1];
    memcpy(bytes, numpy_arange6_f4_v1, sizeof bytes);
    bytes[8] = 0x00;
    bytes[9] = 0x10;
    EXPECT_ERROR(bytes, sizeof bytes, "header length 4096", "past the end of the file");
    unsigned char bytes_v2[sizeof numpy_arange6_f4_v2];
    memcpy(bytes_v2, numpy_arange6_f4_v2, sizeof bytes_v2);
    memset(bytes_v2 + 8, 0xff, 4);
    EXPECT_ERROR(bytes_v2, sizeof bytes_v2, "header length 4294967295", "past the end of the file");
}

/* ---- errors: the header dict ---- */

static void test_error_header_not_a_dict(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("['descr', '<f4']", 0, "not a Python dict literal", "['descr'");
    EXPECT_HEADER_ERROR("", 0, "header is empty");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", 4, "expected ',' or '}'",
                        "end of the header");
    EXPECT_HEADER_ERROR("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4, "expected ',' or '}'",
                        "'fortran_order'");
    EXPECT_HEADER_ERROR("{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", 4, "quoted dict key");
    EXPECT_HEADER_ERROR("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", 4, "expected ':'");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", 4,
                        "only padding after the header dict");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\x01", 4,
                        "only padding", "\\x01");
    EXPECT_HEADER_ERROR("{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", 4, "unsupported descr '<f4, '");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x", 4, "unterminated string");
    EXPECT_HEADER_ERROR("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", 4, "escape sequences");
}

static void test_error_missing_key(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False}", 4, "missing key 'shape'");
    EXPECT_HEADER_ERROR("{'shape': (1,)}", 4, "missing keys 'descr' 'fortran_order'");
    EXPECT_HEADER_ERROR("{}", 4, "missing keys 'descr' 'fortran_order' 'shape'");
}

static void test_error_duplicate_key(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), \"descr\": '<f4'}", 4,
                        "duplicate key 'descr'");
}

static void test_error_unknown_key(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'order': 'C'}", 4,
                        "unknown key 'order'");
}

static void test_error_unsupported_descr(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<c8', 'fortran_order': False, 'shape': (1,)}", 8, "unsupported descr '<c8'",
                        "complex");
    EXPECT_HEADER_ERROR("{'descr': '|O', 'fortran_order': False, 'shape': (1,)}", 8, "unsupported descr '|O'",
                        "Python objects");
    /* numpy writes '|' only for one-byte types, never for these. */
    EXPECT_HEADER_ERROR("{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", 4, "unsupported descr '|f4'");
    EXPECT_HEADER_ERROR("{'descr': '<u4', 'fortran_order': False, 'shape': (1,)}", 4, "unsupported descr '<u4'",
                        "unsigned");
    EXPECT_HEADER_ERROR("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4, "structured");
    EXPECT_HEADER_ERROR("{'descr': 4, 'fortran_order': False, 'shape': (1,)}", 4, "descr string");
}

static void test_error_big_endian(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", 4, "'>f4'",
                        "byte order is not supported");
}

static void test_error_fortran_order(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}", 24,
                        "Fortran-ordered arrays are not supported: save with np.ascontiguousarray");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", 24, "True or False");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3)}", 24, "True or False");
}

/* ---- errors: the shape ---- */

static void test_error_too_many_dimensions(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1)}", 4, "5 dimensions",
                        "at most 4");
}

static void test_error_negative_shape(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}", 4, "negative");
}

static void test_error_non_integer_shape(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,)}", 12,
                        "'3.5' is not a non-negative integer");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': ('a',)}", 4,
                        "'a'' is not a non-negative integer");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (1e3,)}", 4,
                        "'1e3' is not a non-negative integer");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}", 4, "not a non-negative integer");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", 4, "',' or ')' in shape");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", 4, "a shape entry or ')'");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", 24, "a tuple");
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", 12, "shape (3) is not a tuple");
}

static void test_error_shape_overflow(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", 4,
                        "99999999999999999999999 overflows size_t");
    char header[256];
    /* Element count overflows: SIZE_MAX/2+1 times 2. */
    snprintf(header, sizeof header, "{'descr': '<i4', 'fortran_order': False, 'shape': (%zu, 2)}",
             SIZE_MAX / 2 + 1);
    EXPECT_HEADER_ERROR(header, 4, "too large", "overflows size_t");
    /* Element count fits but the byte size does not. */
    snprintf(header, sizeof header, "{'descr': '<f8', 'fortran_order': False, 'shape': (%zu,)}", SIZE_MAX / 8 + 1);
    EXPECT_HEADER_ERROR(header, 4, "too large", "overflows size_t");
}

/* ---- errors: the data ---- */

static void test_error_truncated_data(void **state)
{
    (void)state;
    EXPECT_ERROR(numpy_arange6_f4_v1, sizeof numpy_arange6_f4_v1 - 4,
                 "truncated: expected 24 bytes of data, found 20");
    EXPECT_HEADER_ERROR("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000,)}", 8,
                        "truncated: expected 8000000 bytes of data, found 8");
}

static void test_error_trailing_data(void **state)
{
    (void)state;
    EXPECT_HEADER_ERROR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", 28,
                        "4 trailing bytes after the 24 bytes");
}

static void test_error_missing_file(void **state)
{
    (void)state;
    const char *path = temp_path("does_not_exist.npy");
    kcs_npy_array array;
    kcs_error err = {{0}};
    assert_int_equal(kcs_npy_read(path, &array, &err), KCS_ERROR);
    assert_message(&err, path, (const char *const[]){"cannot open", "No such file", NULL});
    assert_zeroed(&array);
}

/* A FIFO, a device and a directory are refused before anything is read:
 * /dev/zero would otherwise grow without bound, and a FIFO hang. */
static void test_error_not_a_regular_file(void **state)
{
    (void)state;
    const char *fifo = temp_path("fifo.npy");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *paths[] = {fifo, "/dev/zero", "/tmp"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        kcs_npy_array array;
        kcs_error err = {{0}};
        assert_int_equal(kcs_npy_read(paths[i], &array, &err), KCS_ERROR);
        assert_message(&err, paths[i], (const char *const[]){"not a regular file", NULL});
        assert_zeroed(&array);
    }
    unlink(fifo);
}

/* Every prefix and many one-byte changes of a real file either parse or fail
 * with a message naming the input; under AddressSanitizer this also shows
 * that no input makes the parser read past its end. */
static void test_damaged_files_never_crash(void **state)
{
    (void)state;
    static const unsigned char replacements[] = {0x00, 0x0a, 0x20, '\'', '"', '(', ')', ',', ':',
                                                 '{',  '}',  '-',  '9',  'L', 0x80, 0xff};
    const size_t length = sizeof numpy_arange6_f4_v1;
    unsigned char *bytes = malloc(length);
    assert_non_null(bytes);
    for (size_t prefix = 0; prefix < length; prefix++) {
        unsigned char *exact = malloc(prefix > 0 ? prefix : 1);
        assert_non_null(exact);
        memcpy(exact, numpy_arange6_f4_v1, prefix);
        kcs_npy_array array;
        kcs_error err = {{0}};
        assert_int_equal(kcs_npy_parse(exact, prefix, "prefix.npy", &array, &err), KCS_ERROR);
        assert_true(strncmp(err.message, "prefix.npy: ", 12) == 0);
        free(exact);
    }
    for (size_t position = 0; position < length; position++) {
        for (size_t r = 0; r < sizeof replacements; r++) {
            memcpy(bytes, numpy_arange6_f4_v1, length);
            bytes[position] = replacements[r];
            kcs_npy_array array;
            kcs_error err = {{0}};
            kcs_status status = kcs_npy_parse(bytes, length, "mutated.npy", &array, &err);
            if (status == KCS_OK)
                kcs_npy_free(&array);
            else
                assert_true(strncmp(err.message, "mutated.npy: ", 13) == 0);
        }
    }
    free(bytes);
}

/* ---- writer errors and small functions ---- */

static void test_write_errors(void **state)
{
    (void)state;
    const float value = 1.0f;
    const size_t shape[5] = {1, 1, 1, 1, 1};
    kcs_error err = {{0}};
    const char *path = temp_path("write_error.npy");
    assert_int_equal(kcs_npy_write(path, KCS_DTYPE_NONE, 1, shape, &value, &err), KCS_ERROR);
    assert_message(&err, path, (const char *const[]){"cannot write dtype none", NULL});
    assert_int_equal(kcs_npy_write(path, KCS_F32, 5, shape, &value, &err), KCS_ERROR);
    assert_message(&err, path, (const char *const[]){"5 dimensions", NULL});
    assert_int_equal(kcs_npy_write(path, KCS_F32, 1, shape, NULL, &err), KCS_ERROR);
    assert_message(&err, path, (const char *const[]){"no data", NULL});
    const size_t huge[2] = {SIZE_MAX / 2, 3};
    assert_int_equal(kcs_npy_write(path, KCS_F32, 2, huge, &value, &err), KCS_ERROR);
    assert_message(&err, path, (const char *const[]){"too large", NULL});
    const char *unwritable = "/nonexistent-kcs-directory/x.npy";
    assert_int_equal(kcs_npy_write(unwritable, KCS_F32, 1, shape, &value, &err), KCS_ERROR);
    assert_message(&err, unwritable, (const char *const[]){"cannot create", NULL});
    assert_int_equal(access(path, F_OK), -1);
}

static void test_element_count_and_free(void **state)
{
    (void)state;
    kcs_npy_array array = {.dtype = KCS_F32, .ndim = 0};
    assert_int_equal(kcs_npy_element_count(&array), 1);
    array.ndim = 3;
    array.shape[0] = 2;
    array.shape[1] = 0;
    array.shape[2] = 5;
    assert_int_equal(kcs_npy_element_count(&array), 0);
    array.shape[1] = 4;
    assert_int_equal(kcs_npy_element_count(&array), 40);
    kcs_npy_array zeroed = {0};
    kcs_npy_free(&zeroed);
    kcs_npy_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_dtype_and_rank),
        cmocka_unit_test(test_round_trip_empty_and_large_extents),
        cmocka_unit_test(test_reads_numpy_version_1),
        cmocka_unit_test(test_reads_numpy_versions_2_and_3),
        cmocka_unit_test(test_reads_numpy_scalar),
        cmocka_unit_test(test_writes_what_numpy_writes),
        cmocka_unit_test(test_accepts_header_variations),
        cmocka_unit_test(test_error_bad_magic),
        cmocka_unit_test(test_error_empty_file),
        cmocka_unit_test(test_error_unsupported_version),
        cmocka_unit_test(test_error_truncated_preamble),
        cmocka_unit_test(test_error_header_length_past_end),
        cmocka_unit_test(test_error_header_not_a_dict),
        cmocka_unit_test(test_error_missing_key),
        cmocka_unit_test(test_error_duplicate_key),
        cmocka_unit_test(test_error_unknown_key),
        cmocka_unit_test(test_error_unsupported_descr),
        cmocka_unit_test(test_error_big_endian),
        cmocka_unit_test(test_error_fortran_order),
        cmocka_unit_test(test_error_too_many_dimensions),
        cmocka_unit_test(test_error_negative_shape),
        cmocka_unit_test(test_error_non_integer_shape),
        cmocka_unit_test(test_error_shape_overflow),
        cmocka_unit_test(test_error_truncated_data),
        cmocka_unit_test(test_error_trailing_data),
        cmocka_unit_test(test_error_missing_file),
        cmocka_unit_test(test_error_not_a_regular_file),
        cmocka_unit_test(test_damaged_files_never_crash),
        cmocka_unit_test(test_write_errors),
        cmocka_unit_test(test_element_count_and_free),
    };
    return cmocka_run_group_tests(tests, make_temp_dir, remove_temp_dir);
}
