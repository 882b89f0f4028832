/* case_file_test.c: the literate case parser, on good blocks and on every
 * kind of malformed one. Each problem must name the file and line, and the
 * blocks after a bad one must still be read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "case_file.h"
#include "generator.h"

static const char good[] =
    "# Sum of squares\n"
    "Prose, with a fence of another language:\n"
    "```c\nint x;\n```\n"
    "```kcs-case\n"
    "case: f64-ramp\n"
    "op: sumsq\n"
    "dtype: f64\n"
    "sizes: n=10^3\n"
    "# a comment line\n"
    "\n"
    "input x: ramp start=1 step=2 seed=0x10\n"
    "expect: closed-form\n"
    "tags: perf large\n"
    "bound-tight: rounded once: error: half an ulp, all of the bound\n"
    "```\n"
    "More prose.\n"
    "```kcs-case\n"
    "case: gemm-nt\n"
    "op: gemm\n"
    "dtype: f32\n"
    "sizes: m=7 n=93 k=144\n"
    "params: transa=N transb=T alpha=1.5\n"
    "input a: normal\n"
    "input b: uniform lo=-1 hi=1\n"
    "expect: oracle sample=64\n"
    "```\n";

static void good_blocks_are_parsed(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(good, "cases/sumsq.md", &list, NULL), KCS_OK);
    assert_int_equal(list.problem_count, 0);
    assert_int_equal(list.count, 2);
    const kcs_case *c = &list.cases[0];
    assert_string_equal(c->name, "sumsq/f64-ramp");
    assert_string_equal(c->file, "cases/sumsq.md");
    assert_int_equal(c->line, 6);
    assert_string_equal(c->op, "sumsq");
    assert_int_equal(c->dtype, KCS_F64);
    assert_true(kcs_case_size(c, "n", -1) == 1000);
    assert_int_equal(c->input_count, 1);
    assert_string_equal(c->inputs[0].distribution.name, "ramp");
    assert_int_equal(c->inputs[0].distribution.seed, 16);
    assert_true(kcs_distribution_param(&c->inputs[0].distribution, "step", 0) == 2);
    assert_int_equal(c->expect, KCS_EXPECT_CLOSED_FORM);
    assert_int_equal(c->tags, KCS_TAG_PERF | KCS_TAG_LARGE);
    /* the reason is the rest of the line, colons and all */
    assert_string_equal(c->bound_tight, "rounded once: error: half an ulp, all of the bound");

    c = &list.cases[1];
    assert_string_equal(c->name, "sumsq/gemm-nt");
    assert_string_equal(kcs_case_param(c, "transb"), "T");
    assert_null(kcs_case_param(c, "beta"));
    assert_int_equal(c->expect, KCS_EXPECT_ORACLE);
    assert_int_equal(c->sample, 64);
    assert_string_equal(c->bound_tight, ""); /* not said: not tight by construction */
    /* without seed=, the seed is the hash of "<case name>:<input name>" */
    assert_int_equal(kcs_case_input(c, "a")->distribution.seed, kcs_string_hash("sumsq/gemm-nt:a"));
    kcs_case_list_free(&list);
}

static void patterns_are_globs_or_prefixes(void **state)
{
    (void)state;
    kcs_case c;
    memset(&c, 0, sizeof c);
    strcpy(c.name, "sumsq/f64-n7");
    assert_true(kcs_case_matches(&c, "sumsq"));
    assert_true(kcs_case_matches(&c, "sumsq/f64-*"));
    assert_true(kcs_case_matches(&c, "*/f64-n?"));
    assert_false(kcs_case_matches(&c, "gemm"));
    assert_false(kcs_case_matches(&c, "sumsq/f32-*"));
}

/* A block with one bad line, then a good block: the problem is reported
 * with file and line, and the good block is still read. */
static void expect_problem_at(const char *bad_line, int line, const char *words)
{
    char text[2048];
    snprintf(text, sizeof text,
             "prose\n```kcs-case\ncase: bad\nop: sumsq\ndtype: f64\nsizes: n=3\n%s\n"
             "input x: normal\nexpect: golden\n```\n"
             "```kcs-case\ncase: good\nop: sumsq\ndtype: f32\nsizes: n=3\ninput x: normal\n"
             "expect: golden\n```\n",
             bad_line);
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "cases/x.md", &list, NULL), KCS_OK);
    if (list.problem_count != 1 || !strstr(list.problems[0].message, words))
        fail_msg("line '%s': expected one problem containing '%s', got %zu: '%s'", bad_line, words,
                 list.problem_count, list.problem_count ? list.problems[0].message : "");
    assert_string_equal(list.problems[0].file, "cases/x.md");
    assert_int_equal(list.problems[0].line, line);
    assert_int_equal(list.count, 1);
    assert_string_equal(list.cases[0].name, "x/good");
    kcs_case_list_free(&list);
}

static void expect_problem(const char *bad_line, const char *words)
{
    expect_problem_at(bad_line, 7, words);
}

static void every_malformed_line_is_reported(void **state)
{
    (void)state;
    expect_problem("colour: red", "unknown key 'colour'");
    expect_problem("dtype: f64", "given twice");
    expect_problem("no colon here", "expected 'key: value'");
    expect_problem("tags: fast", "unknown tag 'fast' (known: perf, large, no-reference, sanitize, "
                                 "sanitize-unoptimised)");
    expect_problem("tags: sanitize-optimised", "unknown tag 'sanitize-optimised'");
    expect_problem("params: alpha", "is not name=value");
    expect_problem("params: alpha=1 alpha=2", "'alpha' given twice");
    expect_problem("input y: gaussian", "unknown distribution 'gaussian'");
    expect_problem("input y: uniform lo=1 hi=0", "lo <= hi");
    expect_problem("input y: uniform lo=abc", "not a number");
    expect_problem("input y: normal seed=-1", "seed '-1'");
    expect_problem_at("input x: normal", 8, "input 'x' given twice"); /* the second one is wrong */
    expect_problem("input: normal", "needs an input name");
    expect_problem("bound-tight:", "bound-tight needs the reason");
}

/* Every tag a case file may give is parsed into its own bit, and --tag finds
 * the same bit by name. */
static void every_tag_has_its_bit(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text("```kcs-case\ncase: t\nop: sumsq\ndtype: f32\nsizes: n=3\n"
                                         "input x: normal\nexpect: golden\n"
                                         "tags: sanitize, sanitize-unoptimised no-reference\n```\n",
                                         "cases/x.md", &list, NULL),
                     KCS_OK);
    assert_int_equal(list.problem_count, 0);
    assert_int_equal(list.cases[0].tags, KCS_TAG_SANITIZE | KCS_TAG_SANITIZE_UNOPTIMISED | KCS_TAG_NO_REFERENCE);
    kcs_case_list_free(&list);
    unsigned all = 0;
    for (int t = 0; t < kcs_tag_count; t++) {
        assert_int_equal(kcs_tag_bit(kcs_tag_names[t]), 1u << t);
        all |= kcs_tag_bit(kcs_tag_names[t]);
    }
    assert_int_equal(all, KCS_TAG_PERF | KCS_TAG_LARGE | KCS_TAG_NO_REFERENCE | KCS_TAG_SANITIZE |
                              KCS_TAG_SANITIZE_UNOPTIMISED);
    assert_int_equal(kcs_tag_bit("sanitise"), 0);
}

static void expect_block_problem(const char *block, int line, const char *words)
{
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(block, "cases/y.md", &list, NULL), KCS_OK);
    if (list.problem_count != 1 || !strstr(list.problems[0].message, words) ||
        list.problems[0].line != line)
        fail_msg("expected one problem at line %d containing '%s', got %zu: line %d '%s'", line, words,
                 list.problem_count, list.problem_count ? list.problems[0].line : 0,
                 list.problem_count ? list.problems[0].message : "");
    assert_int_equal(list.count, 0);
    kcs_case_list_free(&list);
}

static void every_malformed_block_is_reported(void **state)
{
    (void)state;
    expect_block_problem("```kcs-case\ncase: a\nop: sumsq\ndtype: f64\ninput x: normal\n```\n", 1,
                         "lacks the key 'expect'");
    expect_block_problem("```kcs-case\nop: sumsq\ndtype: f64\nexpect: golden\n```\n", 1,
                         "lacks the key 'case'");
    expect_block_problem("\n```kcs-case\ncase: a\nop: sumsq\ndtype: f64\nexpect: golden\n", 2,
                         "never closed");
    expect_block_problem("```kcs-case yaml\ncase: a\n```\n", 1, "text after");
    expect_block_problem("```kcs-case\ncase: a\ndtype: f128\n```\n", 3, "unknown dtype 'f128'");
    expect_block_problem("```kcs-case\ncase: a b\n```\n", 2, "case name");
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=-3\n```\n", 3, "size n=-3 is negative");
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=2.5\n```\n", 3, "size n=2.5 is not a whole number");
    /* whole, only too large: said so, not "not a whole number" */
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=10^20\n```\n", 3, "n=10^20 is 1e+20, too large");
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=1e16\n```\n", 3, "too large: a size is at most 2^53");
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=ten\n```\n", 3, "size n=ten is not a number");
    expect_block_problem("```kcs-case\ncase: a\nsizes: n=nan\n```\n", 3, "size n=nan is not a number");
    expect_block_problem("```kcs-case\ncase: a\ndtype: f8\n```\n", 3, "(known: f16, bf16, f32, f64, i32, i64, fp8_e4m3");
    expect_block_problem("```kcs-case\ncase: a\nexpect: magic\n```\n", 3, "expect must be");
    expect_block_problem("```kcs-case\ncase: a\nexpect: oracle sample=0\n```\n", 3, "sample");
    expect_block_problem("```kcs-case\ncase: a\nexpect: oracle every=2\n```\n", 3, "sample=N");
}

static void a_case_defined_twice_is_reported(void **state)
{
    (void)state;
    const char text[] = "```kcs-case\ncase: a\nop: sumsq\ndtype: f64\nexpect: golden\n```\n"
                        "```kcs-case\ncase: a\nop: sumsq\ndtype: f32\nexpect: golden\n```\n";
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_text(text, "cases/z.md", &list, NULL), KCS_OK);
    assert_int_equal(list.count, 1);
    assert_int_equal(list.problem_count, 1);
    assert_int_equal(list.problems[0].line, 7);
    assert_non_null(strstr(list.problems[0].message, "defined twice (first at line 1)"));
    kcs_case_list_free(&list);
}

static void an_unreadable_file_is_a_problem_not_a_crash(void **state)
{
    (void)state;
    kcs_case_list list = {0};
    assert_int_equal(kcs_parse_case_file("/nonexistent/cases.md", &list, NULL), KCS_OK);
    assert_int_equal(list.problem_count, 1);
    assert_non_null(strstr(list.problems[0].message, "cannot read"));
    kcs_case_list_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_blocks_are_parsed),
        cmocka_unit_test(patterns_are_globs_or_prefixes),
        cmocka_unit_test(every_malformed_line_is_reported),
        cmocka_unit_test(every_tag_has_its_bit),
        cmocka_unit_test(every_malformed_block_is_reported),
        cmocka_unit_test(a_case_defined_twice_is_reported),
        cmocka_unit_test(an_unreadable_file_is_a_problem_not_a_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
