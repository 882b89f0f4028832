/* expectations_test.c: reading expectation files and the verdict on a
 * result (expectations.h, docs/expectations.md).
 *
 * The verdict decides whether a failure fails the run, so each kind is
 * pinned: met (an error meets "fail"), an unexpected pass, a different
 * outcome than the one listed, and none when no line matches; the first
 * matching line decides, and a result with no backend is never listed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "expectations.h"

static char path[64];

/* Writes text to a temporary file and reads it as expectations. */
static kcs_status read_text(const char *text, kcs_expectations *expectations, kcs_error *err)
{
    strcpy(path, "/tmp/kcs_expectations_test.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *file = fdopen(fd, "w");
    fputs(text, file);
    fclose(file);
    memset(expectations, 0, sizeof *expectations);
    kcs_status status = kcs_expectations_read(path, expectations, err);
    unlink(path);
    return status;
}

static const char listing[] =
    "# backend device driver case kernel outcome reason\n"
    "\n"
    "opencl  *H100*  580.*  softmax/f64-*  *        fail   exp(-inf) is NaN (bug 1234)\n"
    "   saboteur *   *      sumsq/*        hangs    error  never returns\n"
    "saboteur  *     *      sumsq/*        *        fail   every saboteur fails\n"
    "cuda      *     *      gemm/*         tiled    skip   no tensor cores here\n";

/* Reads text that must parse. */
static void read_valid(const char *text, kcs_expectations *list)
{
    kcs_error err = {{0}};
    if (read_text(text, list, &err) != KCS_OK)
        fail_msg("%s", err.message);
}

static void lines_are_read_with_their_place(void **state)
{
    (void)state;
    kcs_expectations list;
    read_valid(listing, &list);
    assert_int_equal(list.count, 4);
    const kcs_expectation *e = &list.items[0];
    assert_string_equal(e->backend, "opencl");
    assert_string_equal(e->device, "*H100*");
    assert_string_equal(e->driver, "580.*");
    assert_string_equal(e->case_pattern, "softmax/f64-*");
    assert_string_equal(e->kernel, "*");
    assert_string_equal(e->outcome, "fail");
    assert_string_equal(e->reason, "exp(-inf) is NaN (bug 1234)");
    assert_string_equal(e->file, path);
    assert_int_equal(e->line, 3);
    assert_string_equal(list.items[1].backend, "saboteur");
    assert_int_equal(list.items[1].line, 4);
    kcs_expectations_free(&list);
}

static void malformed_lines_are_errors_naming_the_line(void **state)
{
    (void)state;
    kcs_expectations list;
    kcs_error err = {{0}};
    assert_int_equal(read_text("# ok\nopencl * * sumsq/* * fail\n", &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":2: expected 'backend device driver case kernel outcome reason...'"));
    kcs_expectations_free(&list);
    assert_int_equal(read_text("opencl * * sumsq/* * passes because\n", &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":1: outcome 'passes' is not fail, error or skip"));
    kcs_expectations_free(&list);
}

/* The verdict on a result of saboteur or opencl with this outcome. */
static kcs_verdict verdict_of(const kcs_expectations *list, const char *backend, const char *device,
                              const char *case_name, const char *kernel, const char *outcome)
{
    kcs_expectation_subject subject = {.backend = backend, .device = device, .driver = "580.65",
                                       .case_name = case_name, .kernel = kernel};
    return kcs_expectations_verdict(list, &subject, outcome);
}

/* A device glob names the device by its name, its id or its platform, as
 * `kcs devices` prints them: "*PoCL*"-style lines match through the platform. */
static void a_device_glob_matches_name_id_or_platform(void **state)
{
    (void)state;
    const char *text = "opencl *Portable* * softmax/* online fail POCL's platform\n"
                       "opencl opencl:1 * sumsq/* * skip the second device by id\n";
    char path[] = "/tmp/kcs_expectations_test.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    kcs_expectations list = {0};
    kcs_error err = {{0}};
    assert_int_equal(kcs_expectations_read(path, &list, &err), KCS_OK);
    unlink(path);
    kcs_expectation_subject pocl = {.backend = "opencl", .device = "cpu-skylake-avx512", .device_id = "opencl:0",
                                    .platform = "Portable Computing Language", .driver = "5.0",
                                    .case_name = "softmax/f32-n7", .kernel = "online"};
    assert_int_equal(kcs_expectations_verdict(&list, &pocl, "fail").kind, KCS_VERDICT_MET);
    kcs_expectation_subject nvidia = {.backend = "opencl", .device = "NVIDIA H100", .device_id = "opencl:1",
                                      .platform = "NVIDIA CUDA", .driver = "580", .case_name = "sumsq/f64-n7",
                                      .kernel = "gpu-strided-tree"};
    assert_int_equal(kcs_expectations_verdict(&list, &nvidia, "skip").kind, KCS_VERDICT_MET);
    nvidia.case_name = "softmax/f32-n7";
    nvidia.kernel = "online";
    assert_int_equal(kcs_expectations_verdict(&list, &nvidia, "fail").kind, KCS_VERDICT_NONE);
    kcs_expectations_free(&list);
}

static void the_verdict_says_how_the_outcome_compares(void **state)
{
    (void)state;
    kcs_expectations list;
    read_valid(listing, &list);
    kcs_verdict v = verdict_of(&list, "opencl", "NVIDIA H100 80GB", "softmax/f64-n7", "online", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_MET);
    assert_ptr_equal(v.line, &list.items[0]);
    v = verdict_of(&list, "opencl", "NVIDIA H100 80GB", "softmax/f64-n7", "online", "error");
    assert_int_equal(v.kind, KCS_VERDICT_MET); /* an error meets "fail" */
    v = verdict_of(&list, "opencl", "NVIDIA H100 80GB", "softmax/f64-n7", "online", "pass");
    assert_int_equal(v.kind, KCS_VERDICT_UNEXPECTED_PASS);
    assert_ptr_equal(v.line, &list.items[0]);
    v = verdict_of(&list, "opencl", "NVIDIA H100 80GB", "softmax/f64-n7", "online", "skip");
    assert_int_equal(v.kind, KCS_VERDICT_DIFFERENT);
    v = verdict_of(&list, "cuda", "", "gemm/f32-64", "tiled", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_DIFFERENT); /* listed as a skip */
    v = verdict_of(&list, "saboteur", "host", "sumsq/f64-n7", "hangs", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_DIFFERENT); /* the first matching line lists an error */
    assert_ptr_equal(v.line, &list.items[1]);
    v = verdict_of(&list, "saboteur", "host", "sumsq/f64-n7", "drops-last-element", "fail");
    assert_ptr_equal(v.line, &list.items[2]);
    kcs_expectations_free(&list);
}

static void no_matching_line_gives_no_verdict(void **state)
{
    (void)state;
    kcs_expectations list;
    read_valid(listing, &list);
    kcs_verdict v = verdict_of(&list, "opencl", "NVIDIA A100", "softmax/f64-n7", "online", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_NONE); /* another device */
    assert_null(v.line);
    v = verdict_of(&list, "opencl", "NVIDIA H100 80GB", "softmax/f32-n7", "online", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_NONE); /* another case */
    v = verdict_of(&list, "cuda", "", "gemm/f32-64", "naive", "pass");
    assert_int_equal(v.kind, KCS_VERDICT_NONE); /* another kernel */
    v = verdict_of(NULL, "opencl", "NVIDIA H100 80GB", "softmax/f64-n7", "online", "fail");
    assert_int_equal(v.kind, KCS_VERDICT_NONE);
    kcs_expectations_free(&list);
    /* A problem in a case file has no backend: even a line of globs only does not list it. */
    read_valid("*  *  *  *  *  error  every error\n", &list);
    assert_int_equal(verdict_of(&list, "opencl", "", "broken/x", NULL, "error").kind, KCS_VERDICT_MET);
    assert_int_equal(verdict_of(&list, NULL, "", "broken/x", NULL, "error").kind, KCS_VERDICT_NONE);
    kcs_expectations_free(&list);
}

static void verdict_names_read_back(void **state)
{
    (void)state;
    for (int kind = KCS_VERDICT_NONE; kind <= KCS_VERDICT_DIFFERENT; kind++)
        assert_int_equal(kcs_verdict_from_name(kcs_verdict_name((kcs_verdict_kind)kind)), kind);
    assert_string_equal(kcs_verdict_name(KCS_VERDICT_UNEXPECTED_PASS), "unexpected pass");
    assert_int_equal(kcs_verdict_from_name("bogus"), KCS_VERDICT_NONE);
    assert_int_equal(kcs_verdict_from_name(NULL), KCS_VERDICT_NONE);
}

/* A field longer than its room is an error naming it: a glob cut short would
 * match something else than what was written. The reason is limited too. */
static void an_overlong_field_is_an_error_not_cut_short(void **state)
{
    (void)state;
    char text[1024];
    char device[300];
    memset(device, 'x', sizeof device - 1);
    device[sizeof device - 1] = '\0';
    snprintf(text, sizeof text, "opencl %s * sumsq/* * fail too long a device\n", device);
    kcs_expectations list;
    kcs_error err = {{0}};
    assert_int_equal(read_text(text, &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":1: the device field is 299 characters, more than 255"));
    kcs_expectations_free(&list);
    char reason[300];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    snprintf(text, sizeof text, "opencl * * sumsq/* * fail %s\n", reason);
    assert_int_equal(read_text(text, &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":1: the reason is 299 characters, more than 255"));
    kcs_expectations_free(&list);
}

/* The subject of a POCL canary result: device name, driver version. */
static kcs_verdict canary_verdict(const kcs_expectations *list, const char *device, const char *driver)
{
    kcs_expectation_subject subject = {.backend = "opencl", .device = device, .device_id = "opencl:0",
                                       .platform = "Portable Computing Language", .driver = driver,
                                       .case_name = "elementwise/relu-f32-n93",
                                       .kernel = "canary-zero-then-store"};
    return kcs_expectations_verdict(list, &subject, "fail");
}

/* expectations/known-bugs.txt, as shipped (read from the source root, where
 * the tests run): the zero-then-store canary is expected to fail on POCL 3.1's
 * default path on AVX-512 CPUs, alternatives of an extended glob each, and on
 * nothing else: another path (the compiler settings in brackets), a CPU
 * without AVX-512, POCL 5, NVIDIA. */
static void the_shipped_known_bugs_name_exactly_the_buggy_implementations(void **state)
{
    (void)state;
    kcs_expectations list = {0};
    kcs_error err = {{0}};
    if (kcs_expectations_read("expectations/known-bugs.txt", &list, &err) != KCS_OK)
        fail_msg("%s", err.message);
    assert_int_equal(canary_verdict(&list, "pthread-skylake-avx512-AMD EPYC", "3.1+debian").kind, KCS_VERDICT_MET);
    assert_int_equal(canary_verdict(&list, "pthread-sapphirerapids-Intel Xeon", "3.1+debian").kind,
                     KCS_VERDICT_MET);
    assert_int_equal(canary_verdict(&list, "pthread-icelake-server-Intel Xeon", "3.1").kind, KCS_VERDICT_MET);
    assert_int_equal(canary_verdict(&list, "pthread-skylake-avx512-AMD EPYC",
                                    "3.1+debian [POCL_WORK_GROUP_METHOD=loops]").kind,
                     KCS_VERDICT_NONE);
    assert_int_equal(canary_verdict(&list, "pthread-znver3-AMD EPYC", "3.1+debian").kind, KCS_VERDICT_NONE);
    assert_int_equal(canary_verdict(&list, "pthread-haswell-Intel Xeon", "3.1+debian").kind, KCS_VERDICT_NONE);
    assert_int_equal(canary_verdict(&list, "cpu-sapphirerapids-Intel Xeon Platinum 8480+", "5.0+debian").kind,
                     KCS_VERDICT_NONE);
    kcs_expectation_subject nvidia = {.backend = "opencl", .device = "NVIDIA H100 80GB HBM3",
                                      .device_id = "opencl:1", .platform = "NVIDIA CUDA", .driver = "580.159.04",
                                      .case_name = "elementwise/relu-f32-n93",
                                      .kernel = "canary-zero-then-store"};
    assert_int_equal(kcs_expectations_verdict(&list, &nvidia, "fail").kind, KCS_VERDICT_NONE);
    kcs_expectations_free(&list);
}

/* "fail=MODEL" is met by a failure that MODEL explains alone or with models
 * the case cannot tell from it; "fail=unexplained" by one no model fits; a
 * failure explained otherwise, an error, or one never explained is a
 * different outcome; and only "fail" may name an explanation. */
static void a_failure_may_be_listed_with_what_explains_it(void **state)
{
    (void)state;
    static const kcs_model twice = {.name = "gemm-epilogue-rounds-twice", .description = "rounds twice"};
    static const kcs_model tf32 = {.name = "gemm-tf32-inputs", .description = "TF32 inputs"};
    kcs_expectations list;
    read_valid("saboteur * * gemm/a * fail=gemm-epilogue-rounds-twice rounds twice\n"
               "saboteur * * gemm/b * fail=unexplained nothing fits\n",
               &list);
    assert_string_equal(list.items[0].outcome, "fail");
    assert_string_equal(list.items[0].explained_by, "gemm-epilogue-rounds-twice");
    kcs_explanation alone = {.tried = 2, .fitting = 1, .fits = {{&twice, 1, 0.6, 0}, {&tf32, 0, 3.0, 5}},
                             .text = "consistent with: gemm-epilogue-rounds-twice"};
    kcs_explanation other = {.tried = 2, .fitting = 1, .fits = {{&tf32, 1, 0.6, 0}, {&twice, 0, 3.0, 5}},
                             .text = "consistent with: gemm-tf32-inputs"};
    kcs_explanation both = {.tried = 2, .fitting = 2, .fits = {{&twice, 1, 0.6, 0}, {&tf32, 1, 0.7, 0}},
                            .text = "consistent with: both"};
    kcs_explanation none = {.tried = 2, .fitting = 0, .fits = {{&twice, 0, 3.0, 5}, {&tf32, 0, 4.0, 5}},
                            .text = "unexplained: none fits"};
    kcs_expectation_subject subject = {.backend = "saboteur", .device = "host", .driver = "1",
                                       .case_name = "gemm/a", .kernel = "k", .explanation = &alone};
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_MET);
    subject.explanation = &other;
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_DIFFERENT);
    subject.explanation = &both; /* two fit, and the case tells them apart */
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_DIFFERENT);
    both.indistinguishable = 1;
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_MET);
    subject.explanation = NULL; /* a failure of guards or inputs: nothing was explained */
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_DIFFERENT);
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "error").kind, KCS_VERDICT_DIFFERENT);
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "pass").kind, KCS_VERDICT_UNEXPECTED_PASS);
    subject.case_name = "gemm/b";
    subject.explanation = &none;
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_MET);
    subject.explanation = &alone;
    assert_int_equal(kcs_expectations_verdict(&list, &subject, "fail").kind, KCS_VERDICT_DIFFERENT);
    kcs_expectations_free(&list);
    kcs_error err = {{0}};
    assert_int_equal(read_text("saboteur * * gemm/a * skip=x no\n", &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":1: only a failure names what explains it"));
    kcs_expectations_free(&list);
    assert_int_equal(read_text("saboteur * * gemm/a * fail= empty\n", &list, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, ":1: only a failure names what explains it"));
    kcs_expectations_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lines_are_read_with_their_place),
        cmocka_unit_test(malformed_lines_are_errors_naming_the_line),
        cmocka_unit_test(the_verdict_says_how_the_outcome_compares),
        cmocka_unit_test(a_device_glob_matches_name_id_or_platform),
        cmocka_unit_test(no_matching_line_gives_no_verdict),
        cmocka_unit_test(verdict_names_read_back),
        cmocka_unit_test(an_overlong_field_is_an_error_not_cut_short),
        cmocka_unit_test(a_failure_may_be_listed_with_what_explains_it),
        cmocka_unit_test(the_shipped_known_bugs_name_exactly_the_buggy_implementations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
