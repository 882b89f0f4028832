/* manifest_test.c: unit tests of the golden-file manifest (cmocka).
 *
 * The manifest is what tells a check run that its golden data is the data
 * `ninja golden` wrote, so these tests pin the hash to the FIPS 180-2 test
 * vectors, the file format to what sha256sum reads (sorted, two spaces,
 * comments), and every way verification can fail to a message that says
 * which file, which line and what to do about it.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"

/* FIPS 180-2, appendix B: "abc", the 448-bit two-block message, and one
 * million 'a'; the empty string's digest is the widely published one. */
static const char sha256_abc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
static const char sha256_empty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char sha256_two_blocks[] = "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1";
static const char sha256_million_a[] = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

static char temp_dir[64];

static int make_temp_dir(void **state)
{
    (void)state;
    strcpy(temp_dir, "/tmp/kcs_manifest_test.XXXXXX");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int remove_tree(const char *path)
{
    struct stat info;
    if (lstat(path, &info) != 0)
        return -1;
    if (!S_ISDIR(info.st_mode))
        return unlink(path);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return -1;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char child[512];
        snprintf(child, sizeof child, "%s/%s", path, entry->d_name);
        remove_tree(child);
    }
    closedir(dir);
    return rmdir(path);
}

static int remove_temp_dir(void **state)
{
    (void)state;
    return remove_tree(temp_dir);
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

static void write_text(const char *path, const char *text)
{
    write_file(path, text, strlen(text));
}

static char *read_text(const char *path)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    char *text = calloc(1, 65536);
    assert_non_null(text);
    size_t got = fread(text, 1, 65535, file);
    assert_true(got < 65535);
    fclose(file);
    return text;
}

/* Fails the test unless the message starts with prefix and contains every word. */
static void assert_message(const kcs_error *err, const char *prefix, const char *const *words)
{
    if (strncmp(err->message, prefix, strlen(prefix)) != 0)
        fail_msg("message does not start with \"%s\": %s", prefix, err->message);
    for (; *words; words++)
        if (strstr(err->message, *words) == NULL)
            fail_msg("message lacks \"%s\": %s", *words, err->message);
}

#define ASSERT_MESSAGE(err, prefix, ...) assert_message((err), (prefix), (const char *const[]){__VA_ARGS__, NULL})

/* ---- SHA-256 ---- */

static void test_sha256_test_vectors(void **state)
{
    (void)state;
    char hex[65];
    kcs_sha256_bytes("abc", 3, hex);
    assert_string_equal(hex, sha256_abc);
    kcs_sha256_bytes("", 0, hex);
    assert_string_equal(hex, sha256_empty);
    kcs_sha256_bytes(NULL, 0, hex);
    assert_string_equal(hex, sha256_empty);
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    kcs_sha256_bytes(two_blocks, strlen(two_blocks), hex);
    assert_string_equal(hex, sha256_two_blocks);
}

static void test_sha256_of_files(void **state)
{
    (void)state;
    char hex[65];
    kcs_error err = {{0}};
    const char *path = temp_path("abc.txt");
    write_text(path, "abc");
    assert_int_equal(kcs_sha256_file(path, hex, &err), KCS_OK);
    assert_string_equal(hex, sha256_abc);
    write_text(path, "");
    assert_int_equal(kcs_sha256_file(path, hex, &err), KCS_OK);
    assert_string_equal(hex, sha256_empty);
    /* A million bytes spans many of the reader's chunks. */
    char *million = malloc(1000000);
    assert_non_null(million);
    memset(million, 'a', 1000000);
    write_file(path, million, 1000000);
    free(million);
    assert_int_equal(kcs_sha256_file(path, hex, &err), KCS_OK);
    assert_string_equal(hex, sha256_million_a);
    unlink(path);

    const char *missing = temp_path("missing.txt");
    assert_int_equal(kcs_sha256_file(missing, hex, &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, missing, "No such file");
}

/* ---- reading and writing ---- */

static void test_write_sorts_and_reads_back(void **state)
{
    (void)state;
    kcs_manifest manifest = {0};
    kcs_error err = {{0}};
    static const char *const paths[] = {"b/z.npy", "a.npy", "b/a.npy", "a/b.npy", "B.npy"};
    char hex[65];
    for (size_t i = 0; i < 5; i++) {
        kcs_sha256_bytes(paths[i], strlen(paths[i]), hex);
        assert_int_equal(kcs_manifest_set(&manifest, paths[i], hex, &err), KCS_OK);
    }
    assert_int_equal(manifest.count, 5);
    const char *manifest_path = temp_path("MANIFEST");
    assert_int_equal(kcs_manifest_write(&manifest, manifest_path, &err), KCS_OK);

    /* Bytewise order, as LC_ALL=C sort: uppercase first, '.' before '/'. */
    static const char *const sorted[] = {"B.npy", "a.npy", "a/b.npy", "b/a.npy", "b/z.npy"};
    char expected[4096];
    size_t used = (size_t)snprintf(expected, sizeof expected, "%s",
                                   "# SHA-256 of every golden file. Written by `ninja golden`; do not edit by hand.\n"
                                   "# Checked by `ninja check` (or by hand: cd golden && sha256sum -c MANIFEST).\n");
    for (size_t i = 0; i < 5; i++) {
        kcs_sha256_bytes(sorted[i], strlen(sorted[i]), hex);
        used += (size_t)snprintf(expected + used, sizeof expected - used, "%s  %s\n", hex, sorted[i]);
    }
    char *text = read_text(manifest_path);
    assert_string_equal(text, expected);
    free(text);

    kcs_manifest read_back;
    assert_int_equal(kcs_manifest_read(manifest_path, &read_back, &err), KCS_OK);
    assert_string_equal(read_back.source, manifest_path);
    assert_int_equal(read_back.count, 5);
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(read_back.entries[i].path, sorted[i]);
        assert_string_equal(read_back.entries[i].path, manifest.entries[i].path);
        assert_string_equal(read_back.entries[i].hex, manifest.entries[i].hex);
    }
    const kcs_manifest_entry *found = kcs_manifest_find(&read_back, "b/a.npy");
    assert_non_null(found);
    kcs_sha256_bytes("b/a.npy", 7, hex);
    assert_string_equal(found->hex, hex);
    assert_null(kcs_manifest_find(&read_back, "b/b.npy"));
    assert_null(kcs_manifest_find(&read_back, "c.npy"));

    /* Adding to a manifest that was read keeps it sorted and growable. */
    assert_int_equal(kcs_manifest_set(&read_back, "0.npy", hex, &err), KCS_OK);
    assert_int_equal(kcs_manifest_set(&read_back, "z.npy", hex, &err), KCS_OK);
    assert_int_equal(read_back.count, 7);
    assert_string_equal(read_back.entries[0].path, "0.npy");
    assert_string_equal(read_back.entries[6].path, "z.npy");

    /* No temporary file is left beside the manifest. */
    DIR *dir = opendir(temp_dir);
    assert_non_null(dir);
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        if (strstr(entry->d_name, ".tmp"))
            fail_msg("temporary file left behind: %s", entry->d_name);
    closedir(dir);

    kcs_manifest_free(&read_back);
    kcs_manifest_free(&manifest);
    assert_int_equal(manifest.count, 0);
    assert_null(manifest.entries);
    unlink(manifest_path);
}

static void test_empty_manifest_round_trip(void **state)
{
    (void)state;
    kcs_manifest manifest = {0};
    kcs_error err = {{0}};
    assert_null(kcs_manifest_find(&manifest, "a.npy"));
    const char *manifest_path = temp_path("EMPTY_MANIFEST");
    assert_int_equal(kcs_manifest_write(&manifest, manifest_path, &err), KCS_OK);
    kcs_manifest read_back;
    assert_int_equal(kcs_manifest_read(manifest_path, &read_back, &err), KCS_OK);
    assert_int_equal(read_back.count, 0);
    assert_null(kcs_manifest_find(&read_back, "a.npy"));
    kcs_manifest_free(&read_back);
    unlink(manifest_path);
}

static void test_many_entries(void **state)
{
    (void)state;
    kcs_manifest manifest = {0};
    kcs_error err = {{0}};
    char hex[65], path[32];
    /* Reverse order makes every insertion go to the front. */
    for (int i = 999; i >= 0; i--) {
        snprintf(path, sizeof path, "cases/%04d.npy", i);
        kcs_sha256_bytes(path, strlen(path), hex);
        assert_int_equal(kcs_manifest_set(&manifest, path, hex, &err), KCS_OK);
    }
    assert_int_equal(manifest.count, 1000);
    for (int i = 0; i < 1000; i++) {
        snprintf(path, sizeof path, "cases/%04d.npy", i);
        assert_string_equal(manifest.entries[i].path, path);
        assert_ptr_equal(kcs_manifest_find(&manifest, path), &manifest.entries[i]);
    }
    kcs_manifest_free(&manifest);
}

static void test_reads_comments_blank_lines_and_any_order(void **state)
{
    (void)state;
    const char *manifest_path = temp_path("HAND_MANIFEST");
    char text[1024];
    snprintf(text, sizeof text, "# a comment\n\n%s  z.npy\n# another\n%s  a b.npy", sha256_abc, sha256_empty);
    write_text(manifest_path, text); /* and no final newline */
    kcs_manifest manifest;
    kcs_error err = {{0}};
    if (kcs_manifest_read(manifest_path, &manifest, &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(manifest.count, 2);
    assert_string_equal(manifest.entries[0].path, "a b.npy");
    assert_string_equal(manifest.entries[0].hex, sha256_empty);
    assert_string_equal(manifest.entries[1].path, "z.npy");
    kcs_manifest_free(&manifest);
    unlink(manifest_path);
}

static void test_set_replaces_and_rejects(void **state)
{
    (void)state;
    kcs_manifest manifest = {0};
    kcs_error err = {{0}};
    assert_int_equal(kcs_manifest_set(&manifest, "a.npy", sha256_abc, &err), KCS_OK);
    assert_int_equal(kcs_manifest_set(&manifest, "a.npy", sha256_empty, &err), KCS_OK);
    assert_int_equal(manifest.count, 1);
    assert_string_equal(manifest.entries[0].hex, sha256_empty);

    static const struct {
        const char *path;
        const char *cause;
    } bad_paths[] = {
        {"", "empty path"},        {"/etc/passwd", "absolute path"}, {"../x.npy", "'..'"},
        {"a/../b.npy", "'..'"},    {"a/..", "'..'"},                 {"./a.npy", "'.' or empty component"},
        {"a//b.npy", "'.' or empty component"}, {"a/", "'.' or empty component"},
        {"a\nb.npy", "newline"},
    };
    for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
        assert_int_equal(kcs_manifest_set(&manifest, bad_paths[i].path, sha256_abc, &err), KCS_ERROR);
        ASSERT_MESSAGE(&err, "manifest: cannot add", bad_paths[i].cause);
    }
    char upper[65];
    strcpy(upper, sha256_abc);
    upper[0] = 'B';
    assert_int_equal(kcs_manifest_set(&manifest, "b.npy", upper, &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, "manifest: cannot add 'b.npy'", "64 lowercase hex digits");
    assert_int_equal(manifest.count, 1);
    kcs_manifest_free(&manifest);
}

static void test_write_error(void **state)
{
    (void)state;
    kcs_manifest manifest = {0};
    kcs_error err = {{0}};
    assert_int_equal(kcs_manifest_set(&manifest, "a.npy", sha256_abc, &err), KCS_OK);
    const char *path = "/nonexistent-kcs-directory/MANIFEST";
    assert_int_equal(kcs_manifest_write(&manifest, path, &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, path, "cannot create");
    kcs_manifest_free(&manifest);
}

/* ---- verification ---- */

/* Writes golden/<relative_path> and lists it in a manifest read back from disk. */
static void make_golden(const char *golden_dir, kcs_manifest *manifest)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cases", golden_dir);
    assert_int_equal(mkdir(golden_dir, 0777), 0);
    assert_int_equal(mkdir(path, 0777), 0);
    kcs_manifest building = {0};
    kcs_error err = {{0}};
    static const char *const files[] = {"top.npy", "cases/add.npy", "cases/mul.npy"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", golden_dir, files[i]);
        write_text(path, files[i]);
        char hex[65];
        assert_int_equal(kcs_sha256_file(path, hex, &err), KCS_OK);
        assert_int_equal(kcs_manifest_set(&building, files[i], hex, &err), KCS_OK);
    }
    snprintf(path, sizeof path, "%s/MANIFEST", golden_dir);
    assert_int_equal(kcs_manifest_write(&building, path, &err), KCS_OK);
    kcs_manifest_free(&building);
    assert_int_equal(kcs_manifest_read(path, manifest, &err), KCS_OK);
}

static void test_verify(void **state)
{
    (void)state;
    char golden_dir[256];
    snprintf(golden_dir, sizeof golden_dir, "%s/golden", temp_dir);
    kcs_manifest manifest;
    make_golden(golden_dir, &manifest);
    kcs_error err = {{0}};
    char path[512];

    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "top.npy", &err), KCS_OK);
    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "cases/add.npy", &err), KCS_OK);
    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "cases/mul.npy", &err), KCS_OK);

    /* Not listed. */
    snprintf(path, sizeof path, "%s/cases/sub.npy", golden_dir);
    write_text(path, "sub");
    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "cases/sub.npy", &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, path, "not listed in", "MANIFEST", "ninja golden");

    /* A one-byte change. */
    snprintf(path, sizeof path, "%s/cases/add.npy", golden_dir);
    const char *listed = kcs_manifest_find(&manifest, "cases/add.npy")->hex;
    write_text(path, "cases/adc.npy");
    char actual[65];
    kcs_sha256_bytes("cases/adc.npy", 13, actual);
    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "cases/add.npy", &err), KCS_ERROR);
    char expected[1024];
    snprintf(expected, sizeof expected, "%s has sha256 %s but %s/MANIFEST says %s", path, actual, golden_dir, listed);
    ASSERT_MESSAGE(&err, expected, "the file changed since `ninja golden` wrote it");

    /* Missing. */
    snprintf(path, sizeof path, "%s/cases/mul.npy", golden_dir);
    unlink(path);
    assert_int_equal(kcs_manifest_verify_file(&manifest, golden_dir, "cases/mul.npy", &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, path, "missing", kcs_manifest_find(&manifest, "cases/mul.npy")->hex);

    kcs_manifest_free(&manifest);
}

/* ---- malformed manifests ---- */

static void expect_read_error(const char *text, size_t length, const char *line_prefix_suffix, const char *cause)
{
    const char *path = temp_path("BAD_MANIFEST");
    write_file(path, text, length);
    kcs_manifest manifest;
    kcs_error err = {{0}};
    assert_int_equal(kcs_manifest_read(path, &manifest, &err), KCS_ERROR);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s%s", path, line_prefix_suffix);
    ASSERT_MESSAGE(&err, prefix, cause);
    assert_int_equal(manifest.count, 0);
    assert_null(manifest.entries);
    assert_null(manifest.source);
    unlink(path);
}

static void test_malformed_lines_report_line_numbers(void **state)
{
    (void)state;
    char text[1024];
    const char *head = "# comment\n# comment\n";
#define BAD(format, argument, line, cause)                                 \
    do {                                                                    \
        int length = snprintf(text, sizeof text, "%s" format, head, argument); \
        expect_read_error(text, (size_t)length, line, cause);               \
    } while (0)
    BAD("%.63s  a.npy\n", sha256_abc, ":3:", "malformed hash");
    BAD("%s0  a.npy\n", sha256_abc, ":3:", "malformed hash");
    BAD("BA%s  a.npy\n", sha256_abc + 2, ":3:", "malformed hash");
    BAD("%s a.npy\n", sha256_abc, ":3:", "missing two spaces");
    BAD("%s\ta.npy\n", sha256_abc, ":3:", "missing two spaces");
    BAD("%s *a.npy\n", sha256_abc, ":3:", "missing two spaces");
    BAD("%s\n", sha256_abc, ":3:", "missing two spaces");
    BAD("%s  \n", sha256_abc, ":3:", "empty path");
    BAD("%s  /golden/a.npy\n", sha256_abc, ":3:", "absolute path");
    BAD("%s  cases/../../a.npy\n", sha256_abc, ":3:", "'..'");
    BAD("%s  a.npy\r\n", sha256_abc, ":3:", "carriage return");
    BAD("\\%s  a\\\\b.npy\n", sha256_abc, ":3:", "escaped file names");
    BAD("%s  a.npy\n   \n", sha256_abc, ":4:", "malformed hash");
#undef BAD
    int length = snprintf(text, sizeof text, "%s%s  a.npy\n%s  b.npy\n\n%s  a.npy\n", head, sha256_abc, sha256_abc,
                          sha256_empty);
    expect_read_error(text, (size_t)length, ":6:", "duplicate path 'a.npy' (first listed on line 3)");
    static const char with_nul[] = "# x\nba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  a\0.npy\n";
    expect_read_error(with_nul, sizeof with_nul - 1, ":2:", "NUL");
}

static void test_missing_manifest(void **state)
{
    (void)state;
    const char *path = temp_path("NO_MANIFEST");
    kcs_manifest manifest;
    kcs_error err = {{0}};
    assert_int_equal(kcs_manifest_read(path, &manifest, &err), KCS_ERROR);
    ASSERT_MESSAGE(&err, path, "not found", "run `ninja golden`");
    kcs_manifest_free(&manifest);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_test_vectors),
        cmocka_unit_test(test_sha256_of_files),
        cmocka_unit_test(test_write_sorts_and_reads_back),
        cmocka_unit_test(test_empty_manifest_round_trip),
        cmocka_unit_test(test_many_entries),
        cmocka_unit_test(test_reads_comments_blank_lines_and_any_order),
        cmocka_unit_test(test_set_replaces_and_rejects),
        cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_malformed_lines_report_line_numbers),
        cmocka_unit_test(test_missing_manifest),
    };
    return cmocka_run_group_tests(tests, make_temp_dir, remove_temp_dir);
}
