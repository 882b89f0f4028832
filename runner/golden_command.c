/* golden_command.c: `kcs golden`: rewrites the golden file of every output
 * of the selected golden cases from the op's oracle, and golden/MANIFEST
 * (docs/golden.md). Each case is prepared as a check run prepares it, with
 * the oracle as the source of its expected values; harness/golden.c writes
 * the files and their hashes. */
#include <stdio.h>

#include "runner.h"

/* Prepares a golden case from its oracle and writes each output's golden
 * file, counting them in written; a failure is printed with the case. */
static kcs_status write_golden_case(kcs_golden *golden, const kcs_case *c, int *written)
{
    kcs_prepared_case p;
    kcs_error err = {{0}};
    kcs_status status = kcs_prepare_case_from(c, KCS_EXPECT_ORACLE, NULL, &p, &err);
    for (int out = 0; out < p.layout.output_count && status == KCS_OK; out++) {
        char path[2600];
        status = kcs_golden_write(golden, c, &p.layout.outputs[out], p.expected[out].values, path, sizeof path,
                                  &err);
        if (status == KCS_OK) {
            printf("wrote %s\n", path);
            (*written)++;
        }
    }
    if (status != KCS_OK)
        fprintf(stderr, "%s:%d: case %s: %s\n", c->file, c->line, c->name, err.message);
    kcs_prepared_case_free(&p);
    return status;
}

int kcs_command_golden(const kcs_runner_options *o, const kcs_case_list *cases)
{
    kcs_golden *golden;
    kcs_error err = {{0}};
    if (kcs_golden_open_to_write(o->golden_dir, &golden, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        return KCS_EXIT_USAGE;
    }
    int failures = 0, written = 0;
    for (size_t i = 0; i < cases->count; i++) {
        const kcs_case *c = &cases->cases[i];
        if (!kcs_case_selected(o, c) || c->expect != KCS_EXPECT_GOLDEN)
            continue;
        if (write_golden_case(golden, c, &written) != KCS_OK)
            failures++;
    }
    if (kcs_golden_write_manifest(golden, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        failures++;
    }
    kcs_golden_close(golden);
    printf("%d golden files written, %d cases failed\n", written, failures);
    return failures ? KCS_EXIT_FAILED : KCS_EXIT_PASSED;
}
