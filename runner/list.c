/* list.c: `kcs list`: the selected cases, one line each (name, op, dtype,
 * sizes, where the expected values come from, tags), and the problems
 * found in the case files, which make the exit status 1. */
#include <stdio.h>

#include "runner.h"

int kcs_command_list(const kcs_runner_options *o, const kcs_case_list *cases)
{
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!kcs_case_selected(o, c))
            continue;
        printf("%-40s %-8s %-4s", c->name, c->op, kcs_dtype_name(c->dtype));
        for (int s = 0; s < c->size_count; s++)
            printf(" %s=%.0f", c->sizes[s].name, c->sizes[s].value);
        printf("  expect %s", c->expect == KCS_EXPECT_GOLDEN ? "golden"
                              : c->expect == KCS_EXPECT_ORACLE ? "oracle" : "closed-form");
        if (c->tags & KCS_TAG_PERF) printf(" [perf]");
        if (c->tags & KCS_TAG_LARGE) printf(" [large]");
        if (c->tags & KCS_TAG_NO_REFERENCE) printf(" [no-reference]");
        putchar('\n');
    }
    for (size_t i = 0; i < cases->problem_count; i++)
        fprintf(stderr, "%s:%d: %s\n", cases->problems[i].file, cases->problems[i].line,
                cases->problems[i].message);
    return cases->problem_count ? KCS_EXIT_FAILED : KCS_EXIT_PASSED;
}
