/* rows.c: every kernel row of the build checked against the op table and the
 * cases (docs/adding-an-op.md, docs/runner.md "Kernel rows"). A row is an op,
 * a dtype and a variant in some backend's table; a row whose op or dtype is
 * misspelt, or that no case selects, would never run, and nothing else says
 * so. Two checks:
 *
 *   at start-up, every command (kcs_rows_start_check): each row of each
 *   backend built names an op of the table, a dtype that op accepts, and a
 *   variant no earlier row of its op and dtype has (harness/kernel_rows.c,
 *   kcs_kernel_row_problem); a row that does not is a configuration error,
 *   exit 2, named;
 *
 *   `kcs rows` (kcs_command_rows), part of `ninja check`
 *   (tests/kernel_rows_test.sh): the same, and each row listed with the
 *   number of cases that select it, from the cases of cases/ and tests/cases/
 *   (the suite's and the test-only ops'; --cases DIR: that folder only), as
 *   a run selects them (kcs_kernel_selected, kcs_case_left_out: a reference
 *   row is not reached by no-reference cases; with --tag, only the cases of
 *   that tag, as `kcs run --tag` takes them). A row no case selects is a
 *   problem unless its `unreachable` says why (backend.h). Exit 1 on any.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "kernel_rows.h"
#include "runner.h"

/* Whether the rows of backend are the command's: --backend names it, or no --backend. */
static int backend_named(const kcs_runner_options *o, const char *name)
{
    if (!o->backends[0])
        return 1;
    char list[sizeof o->backends];
    snprintf(list, sizeof list, "%s", o->backends);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save))
        if (strcmp(item, name) == 0)
            return 1;
    return 0;
}

int kcs_rows_start_check(const kcs_runner_options *o)
{
    if (strcmp(o->command, "rows") == 0)
        return 1; /* it checks them itself, and lists every row */
    int fine = 1;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++) {
        const kcs_backend *backend = kcs_builtin_backends[b];
        for (size_t k = 0; k < kcs_backend_kernel_count(backend); k++) {
            char message[1024];
            if (kcs_kernel_row_problem(backend, k, message, sizeof message)) {
                fprintf(stderr, "kcs: %s\n", message);
                fine = 0;
            }
        }
    }
    if (!fine)
        fprintf(stderr, "kcs: a kernel row of this build is wrong, so it runs nothing; correct it (`kcs rows` "
                        "lists every row)\n");
    return fine;
}

/* Reads the case folders of `kcs rows` into cases, their names into folders:
 * --cases DIR, and tests/cases beside the default one. 0 on a folder that
 * cannot be read (said). */
static int read_case_folders(const kcs_runner_options *o, kcs_case_list *cases, char *folders, size_t size)
{
    char default_cases[sizeof o->cases_dir], test_cases[sizeof o->cases_dir];
    snprintf(default_cases, sizeof default_cases, "%s/cases", KCS_SOURCE_DIR);
    snprintf(test_cases, sizeof test_cases, "%s/tests/cases", KCS_SOURCE_DIR);
    const char *paths[] = {o->cases_dir, strcmp(o->cases_dir, default_cases) == 0 ? test_cases : NULL};
    folders[0] = '\0';
    for (size_t i = 0; i < sizeof paths / sizeof paths[0] && paths[i]; i++) {
        kcs_error err = {{0}};
        if (kcs_parse_case_directory(paths[i], cases, &err) != KCS_OK) {
            fprintf(stderr, "kcs: %s\n", err.message);
            return 0;
        }
        snprintf(folders + strlen(folders), size - strlen(folders), "%s%s", i ? " and " : "", paths[i]);
    }
    return 1;
}

/* How many of cases a run with options o runs on row of backend. */
static size_t cases_selecting(const kcs_runner_options *o, const kcs_case_list *cases, const kcs_backend *backend,
                              const kcs_kernel *row)
{
    size_t count = 0;
    for (size_t i = 0; i < cases->count; i++)
        count += kcs_case_selected(o, &cases->cases[i]) && kcs_kernel_selected(o, row, &cases->cases[i]) &&
                 !kcs_case_left_out(o, &cases->cases[i], backend);
    return count;
}

/* One line of `kcs rows`: the row, and what it comes to. */
static void print_row(const kcs_backend *backend, const kcs_kernel *row, const char *verdict)
{
    printf("%-10s %-12s %-9s %-28s %s\n", backend->name, row->op ? row->op : "(none)", kcs_dtype_name(row->dtype),
           row->variant ? row->variant : "(none)", verdict);
}

int kcs_command_rows(const kcs_runner_options *o)
{
    if (o->pattern_count) {
        fprintf(stderr, "kcs rows: takes no PATTERN: it checks each row against every case (--kernel GLOB "
                        "and --backend LIST choose rows)\n");
        return KCS_EXIT_USAGE;
    }
    kcs_case_list cases = {0};
    char source[2 * sizeof o->cases_dir + 96]; /* where the cases come from, for messages */
    if (!read_case_folders(o, &cases, source, sizeof source)) {
        kcs_case_list_free(&cases);
        return KCS_EXIT_USAGE;
    }
    for (int t = 0; t < kcs_tag_count; t++)
        if (o->tag == 1u << t)
            snprintf(source + strlen(source), sizeof source - strlen(source), " tagged %s", kcs_tag_names[t]);
    size_t rows = 0, problems = 0;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++) {
        const kcs_backend *backend = kcs_builtin_backends[b];
        if (!backend_named(o, backend->name))
            continue;
        for (size_t k = 0; k < kcs_backend_kernel_count(backend); k++) {
            const kcs_kernel *row = kcs_backend_kernel(backend, k);
            if (o->kernel_pattern && (!row->variant || fnmatch(o->kernel_pattern, row->variant, 0) != 0))
                continue; /* --kernel GLOB: only the variants it names */
            rows++;
            char message[1024], verdict[1024];
            size_t count = 0;
            if (kcs_kernel_row_problem(backend, k, message, sizeof message)) {
                print_row(backend, row, "WRONG");
                fprintf(stderr, "kcs rows: %s\n", message);
                problems++;
            } else if ((count = cases_selecting(o, &cases, backend, row)) > 0) {
                snprintf(verdict, sizeof verdict, "%zu case%s", count, count == 1 ? "" : "s");
                print_row(backend, row, verdict);
            } else if (row->unreachable) {
                snprintf(verdict, sizeof verdict, "no case, on purpose: %s", row->unreachable);
                print_row(backend, row, verdict);
            } else {
                print_row(backend, row, "NO CASE");
                fprintf(stderr,
                        "kcs rows: %s: kernel row %s %s %s: no case of %s selects it, so no run of those cases "
                        "runs it: %s a case of %s %s, or give the row an .unreachable that says why none can be\n",
                        backend->name, row->op, kcs_dtype_name(row->dtype), row->variant, source,
                        o->tag ? "tag" : "add", row->op, kcs_dtype_name(row->dtype));
                problems++;
            }
        }
    }
    for (size_t i = 0; i < cases.problem_count; i++) {
        fprintf(stderr, "kcs rows: %s:%d: %s\n", cases.problems[i].file, cases.problems[i].line,
                cases.problems[i].message);
        problems++;
    }
    kcs_case_list_free(&cases);
    if (problems) {
        fprintf(stderr, "kcs rows: %zu problem%s in %zu kernel rows and the cases of %s\n", problems,
                problems == 1 ? "" : "s", rows, source);
        return KCS_EXIT_FAILED;
    }
    printf("%zu kernel rows, each of a known op and dtype and selected by a case of %s (or unreachable with a "
           "reason)\n", rows, source);
    return KCS_EXIT_PASSED;
}
