/* kcs.c: the runner's main. One binary that lists cases, runs them on every
 * chosen backend and device, writes the results file and the JUnit file,
 * and rewrites golden data when asked to; docs/runner.md documents it and
 * `kcs --help` prints the same. runner.h says which file holds what.
 *
 * Exit status: 0 when every case that ran passed (skips are not failures),
 * 1 when any case failed or had an error, 2 for a usage or configuration
 * error (unknown option or backend, unreadable case directory, results file
 * that cannot be written, a kernel row of an unknown op or dtype: rows.c).
 */
#include <stdio.h>
#include <string.h>

#include "runner.h"

/* Runs a command that needs the case files. */
static int run_command_on_cases(const kcs_runner_options *o, int argc, char **argv)
{
    kcs_case_list cases = {0};
    kcs_error err = {{0}};
    if (kcs_parse_case_directory(o->cases_dir, &cases, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        kcs_case_list_free(&cases);
        return KCS_EXIT_USAGE;
    }
    int status;
    if (strcmp(o->command, "list") == 0)
        status = kcs_command_list(o, &cases);
    else if (strcmp(o->command, "golden") == 0)
        status = kcs_command_golden(o, &cases);
    else
        status = kcs_command_run(o, &cases, argc, argv);
    kcs_case_list_free(&cases);
    return status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "apply") == 0)
        return kcs_command_apply(argc, argv);
    if (argc > 1 && strcmp(argv[1], "check") == 0)
        return kcs_command_check(argc, argv);
    if (argc > 1 && strcmp(argv[1], "probe") == 0)
        return kcs_command_probe(argc, argv);
    kcs_runner_options o;
    kcs_options_outcome parsed = kcs_parse_options(argc, argv, &o);
    if (parsed == KCS_OPTIONS_HELP)
        return KCS_EXIT_PASSED;
    if (parsed == KCS_OPTIONS_BAD || !kcs_check_backend_names(&o) || !kcs_rows_start_check(&o))
        return KCS_EXIT_USAGE;
    int status = strcmp(o.command, "devices") == 0 ? kcs_command_devices(&o)
                 : strcmp(o.command, "rows") == 0  ? kcs_command_rows(&o)
                                                   : run_command_on_cases(&o, argc, argv);
    kcs_expectations_free(&o.expectations);
    return status;
}
