/* golden_test.c: unit tests of golden files (golden.h) in a temporary folder.
 *
 * What `kcs golden` writes must read back bit for bit, including NaN and
 * infinities, and every way a golden file can be wrong (missing, changed
 * since it was written, not an .npy file, another shape, no manifest) must
 * be an error that names the file and says what is wrong with it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "golden.h"
#include "manifest.h"

static char temp_dir[64];

static int make_temp_dir(void **state)
{
    (void)state;
    strcpy(temp_dir, "/tmp/kcs_golden_test.XXXXXX");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int remove_temp_dir(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", temp_dir);
    return system(command);
}

/* A folder of its own under the temporary folder for one test. */
static const char *folder(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", temp_dir, name);
    return path;
}

static kcs_case case_named(const char *name)
{
    kcs_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.expect = KCS_EXPECT_GOLDEN;
    return c;
}

/* A rows x cols output called name. */
static kcs_array_spec matrix(const char *name, size_t rows, size_t cols)
{
    kcs_array_spec spec;
    memset(&spec, 0, sizeof spec);
    snprintf(spec.name, sizeof spec.name, "%s", name);
    spec.dtype = KCS_F32;
    spec.ndim = 2;
    spec.shape[0] = rows;
    spec.shape[1] = cols;
    return spec;
}

/* Writes values as the golden file of output y of case t/c in directory, with its manifest. */
static void write_golden(const char *directory, const kcs_array_spec *output, const double *values)
{
    kcs_case c = case_named("t/c");
    kcs_golden *golden;
    kcs_error err = {{0}};
    char path[2600];
    if (kcs_golden_open_to_write(directory, &golden, &err) != KCS_OK ||
        kcs_golden_write(golden, &c, output, values, path, sizeof path, &err) != KCS_OK ||
        kcs_golden_write_manifest(golden, &err) != KCS_OK)
        fail_msg("%s", err.message);
    char expected_path[512];
    snprintf(expected_path, sizeof expected_path, "%s/t/c.%s.npy", directory, output->name);
    assert_string_equal(path, expected_path);
    kcs_golden_close(golden);
}

/* Reads output of case t/c back from directory; returns the status and leaves the message in err. */
static kcs_status read_golden(const char *directory, const kcs_array_spec *output, double *values,
                              size_t count, kcs_error *err)
{
    kcs_case c = case_named("t/c");
    kcs_golden *golden;
    if (kcs_golden_open(directory, &golden, err) != KCS_OK)
        return KCS_ERROR;
    kcs_expected expected = {.count = count, .values = values};
    kcs_status status = kcs_golden_read(golden, &c, output, &expected, err);
    kcs_golden_close(golden);
    return status;
}

/* Writes {1, 2} as the golden file of a 1 x 2 output y into a folder of
 * its own called name; returns the folder and puts the file's path in path. */
static const char *write_small(const char *name, kcs_array_spec *y, char *path, size_t size)
{
    const char *directory = folder(name);
    *y = matrix("y", 1, 2);
    double values[2] = {1, 2};
    write_golden(directory, y, values);
    snprintf(path, size, "%s/t/c.y.npy", directory);
    return directory;
}

static void assert_mentions(const kcs_error *err, const char *first, const char *second)
{
    if (!strstr(err->message, first) || !strstr(err->message, second))
        fail_msg("'%s' does not mention '%s' and '%s'", err->message, first, second);
}

/* Reading output y back from directory must fail with a message naming path and cause. */
static void assert_read_fails(const char *directory, const kcs_array_spec *y, const char *path, const char *cause)
{
    double back[16];
    kcs_error err = {{0}};
    assert_int_equal(read_golden(directory, y, back, y->shape[0] * y->shape[1], &err), KCS_ERROR);
    assert_mentions(&err, path, cause);
}

static void write_file(const char *path, const char *text)
{
    FILE *file = fopen(path, "w");
    assert_non_null(file);
    fputs(text, file);
    fclose(file);
}

static void the_path_is_the_case_name_and_the_output_name(void **state)
{
    (void)state;
    kcs_case c = case_named("sumsq/f64-n7");
    kcs_array_spec s = matrix("s", 1, 1);
    char path[64];
    kcs_golden_relative_path(&c, &s, path, sizeof path);
    assert_string_equal(path, "sumsq/f64-n7.s.npy");
}

static void what_is_written_reads_back_bit_for_bit(void **state)
{
    (void)state;
    const char *directory = folder("round-trip");
    kcs_array_spec y = matrix("y", 2, 3);
    double values[6] = {1.0, -0.0, 0x1p-1074, NAN, INFINITY, -1e308}, back[6];
    write_golden(directory, &y, values);
    kcs_error err = {{0}};
    if (read_golden(directory, &y, back, 6, &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_memory_equal(back, values, sizeof values);
}

static void a_missing_manifest_is_named(void **state)
{
    (void)state;
    kcs_golden *golden;
    kcs_error err = {{0}};
    assert_int_equal(kcs_golden_open(folder("no-such-folder"), &golden, &err), KCS_ERROR);
    assert_mentions(&err, "no-such-folder/MANIFEST", "not found");
}

static void a_missing_file_is_named(void **state)
{
    (void)state;
    kcs_array_spec y;
    char path[512];
    const char *directory = write_small("missing", &y, path, sizeof path);
    assert_int_equal(unlink(path), 0);
    assert_read_fails(directory, &y, path, "missing");
}

static void a_changed_file_is_named(void **state)
{
    (void)state;
    kcs_array_spec y;
    char path[512];
    const char *directory = write_small("changed", &y, path, sizeof path);
    FILE *file = fopen(path, "r+b");
    assert_non_null(file);
    fseek(file, -1, SEEK_END);
    fputc(0x7f, file);
    fclose(file);
    assert_read_fails(directory, &y, path, "changed since");
}

/* A file the manifest vouches for that is no .npy file at all. */
static void a_corrupt_file_is_named(void **state)
{
    (void)state;
    kcs_array_spec y;
    char path[512], manifest_path[512], hex[65], manifest[128];
    const char *directory = write_small("corrupt", &y, path, sizeof path);
    write_file(path, "not an array");
    kcs_error err = {{0}};
    assert_int_equal(kcs_sha256_file(path, hex, &err), KCS_OK);
    snprintf(manifest, sizeof manifest, "%s  t/c.y.npy\n", hex);
    snprintf(manifest_path, sizeof manifest_path, "%s/MANIFEST", directory);
    write_file(manifest_path, manifest);
    assert_read_fails(directory, &y, path, "magic");
}

static void a_file_of_another_shape_is_named(void **state)
{
    (void)state;
    const char *directory = folder("shape");
    kcs_array_spec written = matrix("y", 2, 3), wanted = matrix("y", 3, 2);
    double values[6] = {0};
    write_golden(directory, &written, values);
    assert_read_fails(directory, &wanted, "t/c.y.npy", "does not match output y");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_path_is_the_case_name_and_the_output_name),
        cmocka_unit_test(what_is_written_reads_back_bit_for_bit),
        cmocka_unit_test(a_missing_manifest_is_named),
        cmocka_unit_test(a_missing_file_is_named),
        cmocka_unit_test(a_changed_file_is_named),
        cmocka_unit_test(a_corrupt_file_is_named),
        cmocka_unit_test(a_file_of_another_shape_is_named),
    };
    return cmocka_run_group_tests(tests, make_temp_dir, remove_temp_dir);
}
