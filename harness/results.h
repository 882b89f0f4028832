/* results.h: the results file (versioned JSON, docs/results.md) and the
 * JUnit XML file for CI systems, built up case by case during a run.
 */
#ifndef KCS_RESULTS_H
#define KCS_RESULTS_H

#include <stdio.h>

#include "backend.h"
#include "expectations.h"
#include "op.h"
#include "suite.h"

#define KCS_RESULTS_SCHEMA_VERSION 2

typedef struct kcs_results kcs_results;

/* Where a result's data was saved to be taken away (--save-failures,
 * harness/take_away.h) and the command that replays it. */
typedef struct {
    const char *case_folder;    /* the case's inputs, expected values and bounds */
    const char *outputs_folder; /* the kernel's outputs; NULL when it hung or crashed */
    const char *replay;         /* the `kcs apply` command that runs it again */
} kcs_saved_paths;

/* One line of the results: a case on a device with a kernel, or a problem
 * with a case that never reached a device (device_id NULL). */
typedef struct {
    const kcs_case *c;           /* NULL for a problem in a file */
    const char *case_name;       /* always set ("" for a file-level problem) */
    const char *file;            /* the case file */
    int line;                    /* line in it */
    const char *backend;         /* NULL when no backend was involved */
    const char *device_id;       /* "opencl:1" */
    const char *kernel;          /* kernel variant */
    const char *kernel_library;  /* the vendor library the kernel row is (kcs_kernel.library), or NULL */
    const char *expected_from;   /* "golden", "oracle", "closed form" */
    const kcs_op *op;            /* for bytes and flops; NULL if unknown */
    const kcs_op_args *args;     /* likewise */
    const kcs_run_result *run;   /* outcome, message, accuracy, timing */
    const kcs_ceilings *ceilings; /* the device's, when measured; NULL otherwise */
    kcs_verdict verdict;         /* what the expectations say of it, decided by the runner */
    const kcs_saved_paths *saved; /* where its data was saved; NULL when nothing was */
} kcs_result_entry;

/* Counts of outcomes, by each result's verdict (expectations.h): a met
 * expectation counts as passed (a skip as skipped), and also in expected;
 * an unexpected pass as failed, and also in unexpected_passes. */
typedef struct {
    int passed, failed, skipped, errors;
    int expected;            /* failures, errors and skips that were expected */
    int unexpected_passes;   /* expected to fail, error or skip, but passed */
} kcs_result_counts;

/* A new, empty set of results; NULL when memory runs out. */
kcs_results *kcs_results_create(void);

/* Frees the results. */
void kcs_results_free(kcs_results *results);

/* Records how the run was made: revision, command line, options. */
void kcs_results_set_run(kcs_results *results, const char *revision, int argc, char **argv,
                         const kcs_run_options *options);

/* Records a device that cases ran on, with its ceilings when measured (else NULL). */
void kcs_results_add_device(kcs_results *results, const char *id, const char *backend, int index,
                            const kcs_device_info *info, const kcs_ceilings *ceilings);

/* Records one result. With an expectation (entry->verdict.line) its entry
 * gets "expected" (the line, and whether it was met); an unexpected pass
 * is written as a failure saying so. A result that belongs to no device
 * (device_id and kernel NULL) of a case that has one already with the same
 * backend is not recorded again (nor counted): every lane meets it. */
void kcs_results_add(kcs_results *results, const kcs_result_entry *entry);

/* One result as a line of compact JSON, for a worker process to send to
 * the runner that supervises it (malloc'd; free() it): the results file's
 * entry and its verdict's kind as "verdict", which the receiver takes off. */
char *kcs_result_entry_serialize(const kcs_result_entry *entry);

/* A device as a line of compact JSON (malloc'd). */
char *kcs_device_serialize(const char *id, const char *backend, int index, const kcs_device_info *info,
                           const kcs_ceilings *ceilings);

/* Adds a result sent by a worker. */
kcs_status kcs_results_add_serialized(kcs_results *results, const char *text, kcs_error *err);

/* Adds an error result for the unit a worker had begun when the worker
 * hung or died there: identity is the unit's result serialized with the
 * outcome error, and so with the verdict on an error, which goes to verdict;
 * saved (or NULL) says where the runner saved the unit's case to replay it. */
kcs_status kcs_results_add_serialized_error(kcs_results *results, const char *identity, const char *message,
                                           const kcs_saved_paths *saved, kcs_verdict_kind *verdict,
                                           kcs_error *err);

/* Adds a device sent by a worker, unless one with its id is there already. */
kcs_status kcs_results_add_serialized_device(kcs_results *results, const char *text, kcs_error *err);

/* Orders the results as a run of one worker would have: by the case's place
 * in cases, then the device's place among the devices (a case's results
 * without a device first), then as they came; problems in files stay first.
 * Workers of several lanes send their results in whatever order they finish. */
void kcs_results_sort(kcs_results *results, const kcs_case_list *cases);

/* Compares the results with each other once the run is over (harness/agreement.c,
 * docs/runner.md): identical devices' output hashes ("agreement"), the odd
 * one out among three or more results of a case ("odd_one_out"), and devices
 * slower than their identical peers ("stragglers"); writes them into the
 * results and prints one line per finding (nothing when quiet). Returns the
 * number of disagreements: silent data corruption fails the run. locator
 * (NULL: none) is asked where each disagreeing group's outputs differ
 * before its lines are printed (results_json.h). */
struct kcs_difference_locator;
int kcs_results_compare_devices(kcs_results *results, int quiet, const struct kcs_difference_locator *locator);

/* The counts so far. */
kcs_result_counts kcs_results_counts(const kcs_results *results);

/* Results that checked something (failed, or passed comparing at least one
 * output element, whether expected or not) on backend, or on any backend
 * when backend is NULL: a pass of outputs with no element checked no value. */
size_t kcs_results_checked(const kcs_results *results, const char *backend);

/* Prints, one line each, the distinct outcomes and messages of the results
 * ("    3 skip: no cuda device: ..."; a pass of outputs with no element
 * says so), the most frequent first, at most limit lines and a count of the
 * rest: why a run checked nothing, even under --quiet. */
void kcs_results_print_reasons(const kcs_results *results, FILE *out, size_t limit);

/* Whether some result was listed by the expectation written at file:line. */
int kcs_results_used_expectation(const kcs_results *results, const char *file, int line);

/* Writes the JSON results file. */
kcs_status kcs_results_write_json(const kcs_results *results, const char *path, kcs_error *err);

/* Writes the JUnit XML file. */
kcs_status kcs_results_write_junit(const kcs_results *results, const char *path, kcs_error *err);

#endif
