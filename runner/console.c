/* console.c: what a run prints: a line per device, a line per result, and
 * the summary. Each result's line is
 *
 *     LABEL case-name                            where                              detail
 *
 * LABEL is PASS, FAIL, SKIP or ERROR; with a matching expectation
 * (--expectations) XFAIL, XSKIP or XERR when it was met and XPASS for a
 * listed case that passed. --quiet prints only failures, errors, listed
 * results and the summary. */
#include <stdio.h>

#include "runner.h"

void kcs_print_device(const kcs_runner_options *o, const kcs_open_device *device)
{
    if (!o->quiet)
        printf("device %s: %s [%s], driver %s, %s\n", device->id, device->info.name, device->info.platform,
               device->info.driver_version, device->info.runtime_version);
}

/* The detail of a pass: the fraction of the bound used and, when timed, the kernel's time and speed. */
static void print_pass_detail(const kcs_run_result *run, const kcs_speed *speed)
{
    if (run->check.checked == 0) {
        printf(" no output element to compare: only the guards and inputs were checked");
        return;
    }
    printf(" %8.2e of bound", run->check.fraction);
    if (!run->timed)
        return;
    printf("  kernel %.4g ms (median of %d)", 1e3 * run->kernel.median, run->kernel.repeats);
    if (speed) {
        char text[160];
        kcs_speed_format(speed, text, sizeof text);
        printf(", %s", text);
    }
}

void kcs_print_result(const kcs_runner_options *o, const char *case_name, const char *where,
                      const kcs_run_result *run, const kcs_speed *speed, const kcs_verdict *verdict)
{
    kcs_verdict_kind kind = verdict ? verdict->kind : KCS_VERDICT_NONE;
    if (o->quiet && (run->outcome == KCS_OUTCOME_PASS || run->outcome == KCS_OUTCOME_SKIP) &&
        kind == KCS_VERDICT_NONE)
        return;
    static const char *labels[] = {"PASS ", "FAIL ", "SKIP ", "ERROR"};
    static const char *expected_labels[] = {"XPASS", "XFAIL", "XSKIP", "XERR "};
    /* a different failure than the one listed is shown as it is */
    int marked = kind == KCS_VERDICT_MET || kind == KCS_VERDICT_UNEXPECTED_PASS;
    printf("%s %-40s %-34s", marked ? expected_labels[run->outcome] : labels[run->outcome], case_name, where);
    if (kind == KCS_VERDICT_UNEXPECTED_PASS)
        printf(" unexpected pass: %s:%d expects %s (%s)", verdict->line->file, verdict->line->line,
               verdict->line->outcome, verdict->line->reason);
    else if (run->outcome == KCS_OUTCOME_PASS)
        print_pass_detail(run, speed);
    else
        printf(" %s", run->message);
    putchar('\n');
    /* a failure of values says what explains it (docs/explaining.md), and
     * where a line listed another explanation, which */
    if (run->outcome == KCS_OUTCOME_FAIL && run->explanation.text[0])
        printf("      explained: %s\n", run->explanation.text);
    if (kind == KCS_VERDICT_DIFFERENT && verdict->line->explained_by[0])
        printf("      not as listed: %s:%d expects a failure explained by %s\n", verdict->line->file,
               verdict->line->line, verdict->line->explained_by);
    fflush(stdout);
}

void kcs_print_unit_error(const char *case_name, const char *where, const char *message, int expected)
{
    printf("%s %-40s %-34s %s\n", expected ? "XERR " : "ERROR", case_name, where, message);
}

void kcs_print_summary(const char *results_path, const kcs_result_counts *counts)
{
    printf("results: %s\n", results_path);
    if (counts->errors)
        printf("%d of the failed had errors (bad case, golden file or device fault): see above\n", counts->errors);
    if (counts->expected)
        printf("%d failures or skips were expected (--expectations) and count as passed or skipped\n",
               counts->expected);
    if (counts->unexpected_passes)
        printf("%d cases passed that were expected not to: counted as failed\n", counts->unexpected_passes);
    printf("%d passed, %d failed, %d skipped\n", counts->passed, counts->failed + counts->errors,
           counts->skipped);
}
