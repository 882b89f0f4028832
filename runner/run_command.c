/* run_command.c: `kcs run`: the checks before a run (every pattern names a
 * case; every file the run will write can be written), the cases run in
 * worker processes (worker.c) or, with --in-process, in this one (run.c),
 * then the comparison of identical devices (rerun.c), the results file, the
 * JUnit file, the summary and the exit status.
 *
 * Kept apart from run.c, which the workers run, so that the files depend on
 * each other one way: run_command.c uses worker.c and run.c, worker.c uses
 * run.c, and both of those send what happens to a sink (sink.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner.h"

#ifndef KCS_SOURCE_DIR
#define KCS_SOURCE_DIR "."
#endif

void kcs_read_revision(char *revision, size_t size)
{
    snprintf(revision, size, "unknown");
    FILE *git = popen("git -C '" KCS_SOURCE_DIR "' describe --always --dirty --abbrev=12 2>/dev/null", "r");
    if (!git)
        return;
    if (fgets(revision, (int)size, git))
        revision[strcspn(revision, "\n")] = '\0';
    if (pclose(git) != 0 || !revision[0])
        snprintf(revision, size, "unknown");
}

/* Writes the results file and, when asked for, the JUnit file. */
static kcs_status write_results(const kcs_runner_options *o, const kcs_results *results, kcs_error *err)
{
    if (kcs_results_write_json(results, o->results_path, err) != KCS_OK)
        return KCS_ERROR;
    if (o->junit_path && kcs_results_write_junit(results, o->junit_path, err) != KCS_OK)
        return KCS_ERROR;
    return KCS_OK;
}

/* Prints the problems of the case files (a case that could not be read is
 * no case, and may be the one that was wanted): those of blocks named
 * pattern (NULL: every one). */
static void print_file_problems(const kcs_case_list *cases, const char *pattern)
{
    for (size_t i = 0; i < cases->problem_count; i++) {
        const kcs_case_problem *problem = &cases->problems[i];
        kcs_case named = {{0}};
        snprintf(named.name, sizeof named.name, "%s", problem->case_name);
        if (pattern && (!problem->case_name[0] || !kcs_case_matches(&named, pattern)))
            continue;
        if (problem->line > 0)
            fprintf(stderr, "    %s:%d: %s%s%s\n", problem->file, problem->line,
                    problem->case_name[0] ? problem->case_name : "", problem->case_name[0] ? ": " : "",
                    problem->message);
        else
            fprintf(stderr, "    %s: %s\n", problem->file, problem->message);
    }
}

/* How many problems print_file_problems would print for pattern. */
static size_t file_problems_named(const kcs_case_list *cases, const char *pattern)
{
    size_t count = 0;
    for (size_t i = 0; i < cases->problem_count; i++) {
        kcs_case named = {{0}};
        snprintf(named.name, sizeof named.name, "%s", cases->problems[i].case_name);
        count += !pattern || (cases->problems[i].case_name[0] && kcs_case_matches(&named, pattern));
    }
    return count;
}

/* Fails (usage) when a pattern matches no case: a mistyped pattern, or a
 * misspelt command taken for one, would otherwise run nothing and pass.
 * Where a case file's problem explains it, the problem is printed too.
 * `kcs run` and `kcs list` ask it. */
int kcs_patterns_match(const kcs_runner_options *o, const kcs_case_list *cases)
{
    int all_match = 1;
    for (int i = 0; i < o->pattern_count; i++) {
        size_t matched = 0;
        for (size_t c = 0; c < cases->count && !matched; c++)
            matched += kcs_case_matches(&cases->cases[c], o->patterns[i]) != 0;
        if (matched == 0) {
            size_t unreadable = file_problems_named(cases, o->patterns[i]);
            fprintf(stderr, "kcs: no case in %s matches '%s'%s%s\n", o->cases_dir, o->patterns[i],
                    i == 0 && strcmp(o->command, "run") == 0 && !strchr(o->patterns[i], '/')
                        ? " (and it is no command: run, list, devices, golden, rows, apply, check; see kcs --help)"
                        : "",
                    unreadable ? ": a case of that name could not be read:" : "");
            print_file_problems(cases, o->patterns[i]);
            all_match = 0;
        }
    }
    if (cases->count == 0 && o->pattern_count == 0) {
        if (cases->problem_count) {
            fprintf(stderr, "kcs: no cases in %s: its case files have %zu problem%s:\n", o->cases_dir,
                    cases->problem_count, cases->problem_count == 1 ? "" : "s");
            print_file_problems(cases, NULL);
        } else {
            fprintf(stderr, "kcs: no cases in %s (no .md file there holds a kcs-case block)\n", o->cases_dir);
        }
        all_match = 0;
    }
    return all_match;
}

/* A run that validated nothing fails, with the reason: every result was a
 * skip, or a backend, device or platform asked for by name checked nothing
 * (asking for a GPU that is not there is an error, not a pass). */
static int checked_something(const kcs_runner_options *o, const kcs_results *results)
{
    int fine = 1;
    if (kcs_results_checked(results, NULL) == 0) {
        /* the reasons themselves, since --quiet hides skips */
        fprintf(stderr, "kcs: nothing was checked: no result failed or passed comparing an output element; the "
                        "results were:\n");
        kcs_results_print_reasons(results, stderr, 10);
        fine = 0;
    }
    char names[sizeof o->backends];
    snprintf(names, sizeof names, "%s", o->backends);
    for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
        if (kcs_results_checked(results, name) == 0) {
            fprintf(stderr, "kcs: backend %s was asked for by name and checked nothing\n", name);
            fine = 0;
        }
    }
    return fine;
}

/* Reports expectation lines that listed no result (a misspelt kernel, a
 * device glob that names nothing here); with --strict-expectations they fail. */
static int expectations_used(const kcs_runner_options *o, const kcs_results *results)
{
    size_t unused = 0;
    for (size_t i = 0; i < o->expectations.count; i++) {
        const kcs_expectation *e = &o->expectations.items[i];
        if (kcs_results_used_expectation(results, e->file, e->line))
            continue;
        fprintf(stderr, "kcs: %s:%d: this expectation matched no result (%s %s %s %s %s)\n", e->file, e->line,
                e->backend, e->device, e->driver, e->case_pattern, e->kernel);
        unused++;
    }
    return unused == 0 || !o->strict_expectations;
}

/* path as the absolute name of the file it would be: its folder resolved
 * (symlinks and all) and its own name; "" when its folder does not resolve. */
static void file_identity(const char *path, char *identity, size_t size)
{
    char folder[4096], *slash;
    snprintf(folder, sizeof folder, "%s", path);
    slash = strrchr(folder, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash == folder)
        snprintf(folder, sizeof folder, "/");
    else if (slash)
        *slash = '\0';
    else
        snprintf(folder, sizeof folder, ".");
    char *resolved = realpath(folder, NULL);
    identity[0] = '\0';
    if (resolved)
        snprintf(identity, size, "%s/%s", strcmp(resolved, "/") == 0 ? "" : resolved, name);
    free(resolved);
}

/* Whether identity (file_identity) lies in folder or below it. */
static int inside(const char *identity, const char *folder)
{
    char *resolved = realpath(folder, NULL);
    int within = 0;
    if (resolved) {
        size_t length = strlen(resolved);
        within = strncmp(identity, resolved, length) == 0 && (identity[length] == '/' || length == 1);
    }
    free(resolved);
    return within;
}

/* Whether path can be written, tried before a run that may take hours
 * rather than found out after it (the file is written in full at the end).
 * Creates nothing, so that a refusal of a later file leaves no empty earlier
 * one behind; refuses a folder, a file in the case or golden folders, and a
 * path that another of the run's files already takes (other: NULL or that
 * file's path). */
static int writable(const kcs_runner_options *o, const char *what, const char *path, const char *other)
{
    if (!path)
        return 1;
    struct stat st;
    char identity[8192], folder[4096];
    const char *problem = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        problem = "it is a folder";
    else if (stat(path, &st) == 0 && access(path, W_OK) != 0)
        problem = strerror(errno);
    file_identity(path, identity, sizeof identity);
    snprintf(folder, sizeof folder, "%s", path);
    char *slash = strrchr(folder, '/');
    if (slash && slash != folder)
        *slash = '\0';
    else
        snprintf(folder, sizeof folder, "%s", slash ? "/" : ".");
    if (!problem && stat(path, &st) != 0 && access(folder, W_OK) != 0)
        problem = errno == ENOENT ? "its folder does not exist" : strerror(errno);
    if (!problem && identity[0] && inside(identity, o->golden_dir))
        problem = "it is in the golden folder (--golden), which only kcs golden writes";
    if (!problem && identity[0] && inside(identity, o->cases_dir))
        problem = "it is in the case folder (--cases)";
    char other_identity[8192] = "";
    if (other)
        file_identity(other, other_identity, sizeof other_identity);
    if (!problem && identity[0] && strcmp(identity, other_identity) == 0)
        problem = "the results file is that file too";
    if (problem) {
        fprintf(stderr, "kcs: cannot write the %s file %s: %s\n", what, path, problem);
        return 0;
    }
    return 1;
}

int kcs_command_run(const kcs_runner_options *o, const kcs_case_list *cases, int argc, char **argv)
{
    if (!kcs_patterns_match(o, cases) || !writable(o, "results", o->results_path, NULL) ||
        !writable(o, "JUnit", o->junit_path, o->results_path))
        return KCS_EXIT_USAGE;
    kcs_start_run_clock();
    kcs_results *results = kcs_results_create();
    if (!results) {
        fprintf(stderr, "kcs: out of memory\n");
        return KCS_EXIT_USAGE;
    }
    char revision[128];
    kcs_read_revision(revision, sizeof revision);
    kcs_results_set_run(results, revision, argc, argv, &o->run);
    kcs_sink direct = {.results = results, .fd = -1, .skip_case = -1, .skip_unit = -1};
    kcs_record_file_problems(o, cases, &direct);
    fflush(stdout);
    if (o->in_process) {
        kcs_run_cases(o, cases, &direct);
    } else {
        kcs_run_in_workers(o, cases, results);
    }
    kcs_results_sort(results, cases);
    /* A stopped run is written as it is: no reruns to locate disagreements (worker.c, "A stop"). */
    int disagreements = kcs_run_stopped_by() ? 0 : kcs_compare_and_locate(o, cases, results);
    int exit_status = KCS_EXIT_PASSED;
    kcs_error err = {{0}};
    if (write_results(o, results, &err) != KCS_OK) {
        fprintf(stderr, "kcs: %s\n", err.message);
        exit_status = KCS_EXIT_USAGE;
    }
    kcs_result_counts counts = kcs_results_counts(results);
    int validated = checked_something(o, results);
    validated &= expectations_used(o, results);
    kcs_results_free(results);
    kcs_print_summary(o->results_path, &counts);
    if (disagreements)
        fprintf(stderr, "kcs: %d case-kernel groups of identical devices disagree bit for bit: see DISAGREE above\n",
                disagreements);
    if (exit_status == KCS_EXIT_PASSED && (counts.failed || counts.errors || !validated || disagreements))
        exit_status = KCS_EXIT_FAILED;
    return exit_status;
}
