/* results_test.c: the results file (docs/results.md), its counts and the
 * JUnit file (results.h), written into temporary files and read back.
 *
 * A timed pass must carry its rates and the ceiling it is judged against;
 * every outcome and every verdict of the expectations must be counted as
 * docs/expectations.md says; JUnit must have one testcase per result with a
 * failure, error or skipped element where one belongs; and a result sent by
 * a worker must arrive as it was sent, verdict included.
 */
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "results.h"

/* A new empty temporary file's name in path (unlink it when done). */
static void temp_file(char path[64])
{
    strcpy(path, "/tmp/kcs_results_test.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

/* The one case of a sumsq f64 n=99 block, with its op and arguments. */
typedef struct {
    kcs_case_list list;
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
} sumsq_case;

static void make_case(sumsq_case *s)
{
    memset(s, 0, sizeof *s);
    kcs_error err = {{0}};
    assert_int_equal(kcs_parse_case_text("```kcs-case\ncase: c\nop: sumsq\ndtype: f64\nsizes: n=99\n"
                                         "input x: normal\nexpect: oracle\n```\n",
                                         "t.md", &s->list, &err),
                     KCS_OK);
    assert_int_equal(s->list.count, 1);
    if (kcs_op_prepare(&s->list.cases[0], &s->op, &s->args, &s->layout, &err) != KCS_OK)
        fail_msg("%s", err.message);
}

/* A result of the case on reference:0 with one kernel and outcome. */
static kcs_result_entry entry_of(const sumsq_case *s, const kcs_run_result *run, const char *kernel)
{
    kcs_result_entry entry = {.c = &s->list.cases[0], .case_name = s->list.cases[0].name, .file = "t.md",
                              .line = 1, .backend = "reference", .device_id = "reference:0",
                              .kernel = kernel, .expected_from = "oracle", .op = s->op, .args = &s->args,
                              .run = run};
    return entry;
}

/* An expectation line of outcome, for verdicts made by hand. */
static kcs_expectation line_expecting(const char *outcome)
{
    kcs_expectation e;
    memset(&e, 0, sizeof e);
    strcpy(e.outcome, outcome);
    strcpy(e.reason, "a known bug");
    strcpy(e.file, "x.txt");
    e.line = 3;
    return e;
}

/* Writes the results file and returns its parsed JSON (json_decref it). */
static json_t *written_json(const kcs_results *results)
{
    kcs_error err = {{0}};
    char path[64];
    temp_file(path);
    if (kcs_results_write_json(results, path, &err) != KCS_OK)
        fail_msg("%s", err.message);
    json_error_t error;
    json_t *root = json_load_file(path, 0, &error);
    unlink(path);
    if (!root)
        fail_msg("%s: %s", path, error.text);
    return root;
}

static double number_at(json_t *object, const char *key)
{
    json_t *value = json_object_get(object, key);
    if (!json_is_number(value))
        fail_msg("no number '%s'", key);
    return json_number_value(value);
}

static void a_timed_pass_has_its_rates_and_ceiling(void **state)
{
    (void)state;
    sumsq_case s;
    make_case(&s);
    kcs_run_result run = {.outcome = KCS_OUTCOME_PASS, .timed = 1};
    run.kernel = (kcs_timing){.repeats = 10, .median = 0.5, .rotated_copies = 4};
    run.end_to_end = (kcs_timing){.repeats = 10, .median = 1.0};
    run.check = (kcs_check_result){.passed = 1, .checked = 1, .fraction = 0.25, .worst_output = -1};
    kcs_ceilings ceilings = {.copy_bytes_per_s = 3200, .host_to_device_bytes_per_s = 800};
    kcs_result_entry entry = entry_of(&s, &run, "blocked-pairwise");
    entry.ceilings = &ceilings;
    kcs_results *results = kcs_results_create();
    kcs_results_add(results, &entry);
    json_t *root = written_json(results);
    json_t *item = json_array_get(json_object_get(root, "results"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "status")), "pass");
    assert_string_equal(json_string_value(json_object_get(item, "kernel")), "blocked-pairwise");
    assert_true(number_at(item, "bytes") == 800); /* (n + 1) f64 */
    assert_true(number_at(json_object_get(item, "accuracy"), "fraction_of_bound") == 0.25);
    json_t *timing = json_object_get(item, "timing");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(timing, "kernel"), "rotated_copies")), 4);
    assert_true(number_at(timing, "kernel_bytes_per_s") == 1600);
    assert_true(number_at(timing, "end_to_end_fraction_of_host_to_device") == 1.0);
    json_t *ceiling = json_object_get(timing, "ceiling");
    assert_string_equal(json_string_value(json_object_get(ceiling, "kind")), "copy");
    assert_string_equal(json_string_value(json_object_get(ceiling, "ceiling_key")), "copy_bytes_per_s");
    assert_string_equal(json_string_value(json_object_get(ceiling, "measure")), "bytes");
    assert_true(number_at(ceiling, "achieved_per_s") == 1600);
    assert_true(number_at(ceiling, "ceiling_per_s") == 3200);
    assert_true(number_at(ceiling, "fraction") == 0.5);
    assert_null(json_object_get(item, "expected"));
    /* kcs's own kernel on a case that says nothing of its bound */
    assert_null(json_object_get(item, "kernel_library"));
    assert_null(json_object_get(item, "bound_tight"));
    json_decref(root);
    kcs_results_free(results);
    kcs_case_list_free(&s.list);
}

/* The fields a report reads to tell a case at its bound by construction
 * from one there by accident, and a vendor library's row from kcs's own. */
static void a_check_has_its_histogram_and_a_row_its_library(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    kcs_error err = {{0}};
    assert_int_equal(kcs_parse_case_text("```kcs-case\ncase: c\nop: sumsq\ndtype: f64\nsizes: n=3\n"
                                         "input x: normal\nexpect: oracle\nbound-tight: one rounding, "
                                         "all of the bound\n```\n",
                                         "t.md", &list, &err),
                     KCS_OK);
    kcs_run_result run = {.outcome = KCS_OUTCOME_PASS};
    run.check = (kcs_check_result){.passed = 1, .checked = 4, .fraction = 1.0, .worst_output = -1};
    run.check.histogram.counts[0] = 2;
    run.check.histogram.counts[7] = 1;
    run.check.histogram.counts[KCS_FRACTION_BINS - 1] = 1;
    kcs_result_entry entry = {.c = &list.cases[0], .case_name = list.cases[0].name, .file = "t.md", .line = 1,
                              .backend = "cuda", .device_id = "cuda:0", .kernel = "cub",
                              .kernel_library = "CUB", .run = &run};
    kcs_results *results = kcs_results_create();
    kcs_results_add(results, &entry);
    json_t *root = written_json(results);
    json_t *item = json_array_get(json_object_get(root, "results"), 0);
    assert_string_equal(json_string_value(json_object_get(item, "kernel_library")), "CUB");
    assert_string_equal(json_string_value(json_object_get(item, "bound_tight")), "one rounding, all of the bound");
    json_t *histogram = json_object_get(json_object_get(item, "accuracy"), "fraction_histogram");
    json_t *upper = json_object_get(histogram, "log2_upper"), *counts = json_object_get(histogram, "counts");
    assert_int_equal(json_array_size(upper), 21);
    assert_int_equal(json_array_size(counts), 21);
    for (int i = 0; i < 21; i++)
        assert_int_equal(json_integer_value(json_array_get(upper, (size_t)i)), i - 20);
    assert_int_equal(json_integer_value(json_array_get(counts, 0)), 2);
    assert_int_equal(json_integer_value(json_array_get(counts, 7)), 1);
    assert_int_equal(json_integer_value(json_array_get(counts, 20)), 1);
    assert_int_equal(json_integer_value(json_object_get(histogram, "above")), 0);
    json_decref(root);
    kcs_results_free(results);
    kcs_case_list_free(&list);
}

/* Results of one of each outcome and verdict, and what they refer to. */
typedef struct {
    sumsq_case s;
    kcs_expectation fail_line, skip_line;
    kcs_results *results;
} every_kind;

/* Adds one result of each outcome and verdict. */
static void add_every_kind(every_kind *k)
{
    make_case(&k->s);
    k->fail_line = line_expecting("fail");
    k->skip_line = line_expecting("skip");
    k->results = kcs_results_create();
    static kcs_run_result pass = {.outcome = KCS_OUTCOME_PASS}, fail = {.outcome = KCS_OUTCOME_FAIL},
                          skip = {.outcome = KCS_OUTCOME_SKIP}, error = {.outcome = KCS_OUTCOME_ERROR};
    strcpy(fail.message, "s[0]: expected 1, got 2");
    strcpy(error.message, "device lost");
    const kcs_run_result *runs[] = {&pass, &fail, &skip, &error, &fail, &error, &skip, &pass, &fail};
    kcs_verdict verdicts[] = {{0}, {0}, {0}, {0},
                              {KCS_VERDICT_MET, &k->fail_line}, {KCS_VERDICT_MET, &k->fail_line},
                              {KCS_VERDICT_MET, &k->skip_line}, {KCS_VERDICT_UNEXPECTED_PASS, &k->fail_line},
                              {KCS_VERDICT_DIFFERENT, &k->skip_line}};
    for (int i = 0; i < 9; i++) {
        kcs_result_entry entry = entry_of(&k->s, runs[i], "k");
        entry.verdict = verdicts[i];
        kcs_results_add(k->results, &entry);
    }
}

static void free_every_kind(every_kind *k)
{
    kcs_results_free(k->results);
    kcs_case_list_free(&k->s.list);
}

static void every_outcome_and_verdict_is_counted(void **state)
{
    (void)state;
    every_kind k;
    add_every_kind(&k);
    kcs_result_counts counts = kcs_results_counts(k.results);
    assert_int_equal(counts.passed, 3);  /* a pass, and the met fail and error */
    assert_int_equal(counts.failed, 3);  /* a fail, the unexpected pass, the fail listed as a skip */
    assert_int_equal(counts.skipped, 2); /* a skip and the met skip */
    assert_int_equal(counts.errors, 1);
    assert_int_equal(counts.expected, 3);
    assert_int_equal(counts.unexpected_passes, 1);
    json_t *root = written_json(k.results);
    json_t *summary = json_object_get(root, "summary");
    assert_int_equal(json_integer_value(json_object_get(summary, "passed")), 3);
    assert_int_equal(json_integer_value(json_object_get(summary, "unexpected_passes")), 1);
    json_t *unexpected = json_array_get(json_object_get(root, "results"), 7);
    assert_string_equal(json_string_value(json_object_get(unexpected, "status")), "fail");
    assert_string_equal(json_string_value(json_object_get(unexpected, "message")),
                        "unexpected pass: x.txt:3 expects fail (a known bug); remove or correct the expectation");
    json_t *expected = json_object_get(json_array_get(json_object_get(root, "results"), 4), "expected");
    assert_string_equal(json_string_value(json_object_get(expected, "where")), "x.txt:3");
    assert_true(json_is_true(json_object_get(expected, "met")));
    expected = json_object_get(json_array_get(json_object_get(root, "results"), 8), "expected");
    assert_true(json_is_false(json_object_get(expected, "met")));
    json_decref(root);
    free_every_kind(&k);
}

/* How many times needle occurs in text. */
static int occurrences(const char *text, const char *needle)
{
    int count = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
        count++;
    return count;
}

static char *read_text(const char *path)
{
    FILE *file = fopen(path, "rb");
    assert_non_null(file);
    static char text[1 << 16];
    size_t length = fread(text, 1, sizeof text - 1, file);
    text[length] = '\0';
    fclose(file);
    return text;
}

static void junit_has_a_testcase_per_result(void **state)
{
    (void)state;
    every_kind k;
    add_every_kind(&k);
    kcs_error err = {{0}};
    char path[64];
    temp_file(path);
    if (kcs_results_write_junit(k.results, path, &err) != KCS_OK)
        fail_msg("%s", err.message);
    const char *xml = read_text(path);
    unlink(path);
    assert_int_equal(occurrences(xml, "<testcase "), 9);
    assert_non_null(strstr(xml, "tests=\"9\" failures=\"3\" errors=\"1\" skipped=\"2\""));
    /* met expectations show as passes: no element of their own */
    assert_int_equal(occurrences(xml, "<failure "), 3);
    assert_int_equal(occurrences(xml, "<error message=\"device lost\"/>"), 1);
    assert_int_equal(occurrences(xml, "<skipped "), 1);
    assert_non_null(strstr(xml, "classname=\"reference.reference:0.k\" name=\"t/c\""));
    free_every_kind(&k);
}

/* A case name and message with bytes that are not UTF-8 are still recorded,
 * in JSON and JUnit, with U+FFFD in their place (jansson refuses them raw). */
static void invalid_utf8_is_replaced_not_dropped(void **state)
{
    (void)state;
    kcs_results *results = kcs_results_create();
    kcs_run_result run = {.outcome = KCS_OUTCOME_ERROR};
    snprintf(run.message, sizeof run.message, "unknown key 'col\xffour'");
    kcs_result_entry entry = {.case_name = "bad/n\xc3\x28me", .file = "bad.md", .run = &run};
    kcs_results_add(results, &entry);
    kcs_error err = {{0}};
    char json_path[64], xml_path[64];
    temp_file(json_path);
    temp_file(xml_path);
    assert_int_equal(kcs_results_write_json(results, json_path, &err), KCS_OK);
    assert_int_equal(kcs_results_write_junit(results, xml_path, &err), KCS_OK);
    char *json = strdup(read_text(json_path));
    const char *xml = read_text(xml_path);
    unlink(json_path);
    unlink(xml_path);
    assert_non_null(strstr(json, "unknown key 'col\\uFFFDour'")); /* written ASCII-only */
    assert_non_null(strstr(json, "bad/n\\uFFFD(me"));
    assert_non_null(strstr(xml, "bad/n\xef\xbf\xbd(me"));
    assert_int_equal(occurrences(xml, "<error "), 1);
    free(json);
    kcs_results_free(results);
}

/* A worker's result arrives with its verdict, which is counted and not written. */
static void a_serialized_result_keeps_its_verdict(void **state)
{
    (void)state;
    sumsq_case s;
    make_case(&s);
    kcs_expectation fail_line = line_expecting("fail");
    kcs_run_result pass = {.outcome = KCS_OUTCOME_PASS}, unfinished = {.outcome = KCS_OUTCOME_ERROR};
    kcs_result_entry entry = entry_of(&s, &pass, "k");
    entry.verdict = (kcs_verdict){KCS_VERDICT_UNEXPECTED_PASS, &fail_line};
    kcs_result_entry identity = entry_of(&s, &unfinished, "hangs");
    identity.verdict = (kcs_verdict){KCS_VERDICT_MET, &fail_line};
    char *sent = kcs_result_entry_serialize(&entry), *begun = kcs_result_entry_serialize(&identity);
    kcs_results *results = kcs_results_create();
    kcs_error err = {{0}};
    kcs_verdict_kind verdict = KCS_VERDICT_NONE;
    assert_int_equal(kcs_results_add_serialized(results, sent, &err), KCS_OK);
    assert_int_equal(kcs_results_add_serialized_error(results, begun, "no progress", NULL, &verdict, &err), KCS_OK);
    assert_int_equal(verdict, KCS_VERDICT_MET);
    kcs_result_counts counts = kcs_results_counts(results);
    assert_int_equal(counts.unexpected_passes, 1);
    assert_int_equal(counts.failed, 1);
    assert_int_equal(counts.expected, 1);
    assert_int_equal(counts.passed, 1);
    json_t *root = written_json(results);
    json_t *hung = json_array_get(json_object_get(root, "results"), 1);
    assert_string_equal(json_string_value(json_object_get(hung, "message")), "no progress");
    assert_null(json_object_get(hung, "verdict"));
    assert_null(json_object_get(json_array_get(json_object_get(root, "results"), 0), "verdict"));
    json_decref(root);
    free(sent);
    free(begun);
    kcs_results_free(results);
    kcs_case_list_free(&s.list);
}

/* A result that belongs to no device (a case left out, or not preparable;
 * a backend without a device) is met by every lane of a run: it is kept
 * once per case and backend, and counted once; device results are not. */
static void a_result_of_no_device_is_kept_once(void **state)
{
    (void)state;
    sumsq_case s;
    make_case(&s);
    kcs_run_result skip = {.outcome = KCS_OUTCOME_SKIP}, pass = {.outcome = KCS_OUTCOME_PASS};
    strcpy(skip.message, "tagged large and --skip-large was given");
    kcs_result_entry left_out = {.c = &s.list.cases[0], .case_name = "c", .file = "t.md", .line = 1, .run = &skip};
    kcs_result_entry no_cuda = left_out;
    no_cuda.backend = "cuda";
    kcs_result_entry file_problem = {.case_name = "", .file = "t.md", .line = 1, .run = &skip};
    kcs_results *results = kcs_results_create();
    kcs_results_add(results, &left_out);
    kcs_result_entry on_device = entry_of(&s, &pass, "k");
    kcs_results_add(results, &on_device);
    char *sent = kcs_result_entry_serialize(&left_out);
    kcs_error err = {{0}};
    assert_int_equal(kcs_results_add_serialized(results, sent, &err), KCS_OK); /* from a second lane */
    kcs_results_add(results, &no_cuda);
    kcs_results_add(results, &no_cuda);
    kcs_result_entry other_device = entry_of(&s, &pass, "k");
    other_device.device_id = "reference:1";
    kcs_results_add(results, &other_device);
    kcs_results_add(results, &file_problem); /* problems in files have no case: each is its own */
    kcs_results_add(results, &file_problem);
    kcs_result_counts counts = kcs_results_counts(results);
    assert_int_equal(counts.skipped, 4);
    assert_int_equal(counts.passed, 2);
    json_t *root = written_json(results);
    assert_int_equal(json_array_size(json_object_get(root, "results")), 6);
    json_decref(root);
    free(sent);
    kcs_results_free(results);
    kcs_case_list_free(&s.list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_timed_pass_has_its_rates_and_ceiling),
        cmocka_unit_test(a_check_has_its_histogram_and_a_row_its_library),
        cmocka_unit_test(every_outcome_and_verdict_is_counted),
        cmocka_unit_test(junit_has_a_testcase_per_result),
        cmocka_unit_test(a_serialized_result_keeps_its_verdict),
        cmocka_unit_test(invalid_utf8_is_replaced_not_dropped),
        cmocka_unit_test(a_result_of_no_device_is_kept_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
