/* list.c: `kcs list`: the selected cases, one line each (name, op, dtype,
 * sizes, where the expected values come from, tags), and the problems
 * found in the case files, which make the exit status 1.
 *
 * `kcs list --json` writes the same as one JSON document on stdout: every
 * selected case with every field as the case file parser read it, and the
 * problems. It is how other tools read case files (the report's op pages,
 * report/kcs_report.py), so that there is one parser: harness/case_file.c.
 * The layout is in docs/runner.md, "Listing the cases as JSON".
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "runner.h"

static const char *expect_name(kcs_expect_source expect)
{
    return expect == KCS_EXPECT_GOLDEN ? "golden" : expect == KCS_EXPECT_ORACLE ? "oracle" : "closed-form";
}

/* A value read as a number: an integer where it is one (sizes, most parameters), else a real. */
static json_t *number(double value)
{
    if (value == floor(value) && fabs(value) < 9007199254740992.0)
        return json_integer((json_int_t)value);
    return json_real(value);
}

static json_t *input_json(const kcs_input_spec *input)
{
    json_t *params = json_object();
    for (int p = 0; p < input->distribution.param_count; p++)
        json_object_set_new(params, input->distribution.params[p].name, number(input->distribution.params[p].value));
    /* A seed is 64 bits: JSON readers keep integers only to 53 bits, so as decimal text. */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)input->distribution.seed);
    return json_pack("{s:s, s:s, s:o, s:s}", "name", input->name, "distribution", input->distribution.name, "params",
                     params, "seed", seed);
}

static json_t *case_json(const kcs_case *c)
{
    json_t *sizes = json_object(), *params = json_object(), *inputs = json_array(), *tags = json_array();
    for (int s = 0; s < c->size_count; s++)
        json_object_set_new(sizes, c->sizes[s].name, number(c->sizes[s].value));
    for (int p = 0; p < c->param_count; p++)
        json_object_set_new(params, c->params[p].name, json_string(c->params[p].text));
    for (int i = 0; i < c->input_count; i++)
        json_array_append_new(inputs, input_json(&c->inputs[i]));
    for (int t = 0; t < kcs_tag_count; t++)
        if (c->tags & (1u << t))
            json_array_append_new(tags, json_string(kcs_tag_names[t]));
    return json_pack("{s:s, s:s, s:i, s:s, s:s, s:o, s:o, s:o, s:s, s:I, s:o, s:o}", "name", c->name, "file",
                              c->file, "line", c->line, "op", c->op, "dtype", kcs_dtype_name(c->dtype), "sizes", sizes,
                              "params", params, "inputs", inputs, "expect", expect_name(c->expect), "sample",
                              (json_int_t)c->sample, "tags", tags, "bound_tight",
                              c->bound_tight[0] ? json_string(c->bound_tight) : json_null());
}

/* The whole listing as JSON on stdout; 0 when it could not be written. */
static int print_json(const kcs_runner_options *o, const kcs_case_list *cases)
{
    json_t *listed = json_array(), *problems = json_array();
    for (size_t i = 0; i < cases->count; i++)
        if (kcs_case_selected(o, &cases->cases[i]))
            json_array_append_new(listed, case_json(&cases->cases[i]));
    for (size_t i = 0; i < cases->problem_count; i++) {
        const kcs_case_problem *problem = &cases->problems[i];
        json_array_append_new(problems, json_pack("{s:s, s:i, s:s, s:s}", "file", problem->file, "line", problem->line,
                                                  "case", problem->case_name, "message", problem->message));
    }
    json_t *document = json_pack("{s:s, s:i, s:s, s:o, s:o}", "schema", "kcs-cases", "version", 1, "cases_dir",
                                 o->cases_dir, "cases", listed, "problems", problems);
    int written = document && json_dumpf(document, stdout, JSON_INDENT(1) | JSON_ENSURE_ASCII) == 0;
    json_decref(document);
    if (written)
        putchar('\n');
    return written;
}

int kcs_command_list(const kcs_runner_options *o, const kcs_case_list *cases)
{
    if (!kcs_patterns_match(o, cases))
        return KCS_EXIT_USAGE;
    if (o->list_json) {
        if (!print_json(o, cases)) {
            fprintf(stderr, "kcs: the case list could not be written as JSON\n");
            return KCS_EXIT_USAGE;
        }
        return cases->problem_count ? KCS_EXIT_FAILED : KCS_EXIT_PASSED;
    }
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!kcs_case_selected(o, c))
            continue;
        printf("%-40s %-8s %-4s", c->name, c->op, kcs_dtype_name(c->dtype));
        for (int s = 0; s < c->size_count; s++)
            printf(" %s=%.0f", c->sizes[s].name, c->sizes[s].value);
        printf("  expect %s", expect_name(c->expect));
        for (int t = 0; t < kcs_tag_count; t++)
            if (c->tags & (1u << t))
                printf(" [%s]", kcs_tag_names[t]);
        putchar('\n');
    }
    for (size_t i = 0; i < cases->problem_count; i++)
        fprintf(stderr, "%s:%d: %s\n", cases->problems[i].file, cases->problems[i].line,
                cases->problems[i].message);
    return cases->problem_count ? KCS_EXIT_FAILED : KCS_EXIT_PASSED;
}
