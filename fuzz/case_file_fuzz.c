/* case_file_fuzz.c: libFuzzer target for the literate case parser.
 *
 * Any bytes, parsed as a case file, must give cases and problems, never a
 * crash, a hang, an out-of-bounds access or a leak. Build and run:
 *     ninja fuzz   (then build/fuzz/case_file_fuzz fuzz/corpus/case_file -max_total_time=600)
 * docs/fuzzing.md says more.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "case_file.h"
#include "op.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* the parser reads text; an embedded NUL ends it early, as fopen'd files are checked */
    kcs_case_list list = {0};
    kcs_parse_case_text(text, "fuzz.md", &list, NULL);
    /* Also run what the runner does next with each parsed case. */
    for (size_t i = 0; i < list.count; i++) {
        const kcs_op *op;
        kcs_op_args args;
        kcs_layout layout;
        kcs_error err;
        kcs_op_prepare(&list.cases[i], &op, &args, &layout, &err);
        kcs_case_matches(&list.cases[i], "sumsq/f64-*");
    }
    kcs_case_list_free(&list);
    free(text);
    return 0;
}
