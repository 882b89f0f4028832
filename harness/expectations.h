/* expectations.h: reviewed lists of expected failures and skips.
 *
 * A driver or card with a known bug, or the saboteur backend whose kernels
 * are wrong on purpose, is listed in a file of expectations; a listed
 * failure does not fail the run, and a listed case that passes is reported
 * as an unexpected pass, which does (the list must be kept true). Each line
 * is whitespace-separated, with shell globs in the first five fields:
 *
 *     # backend  device  driver  case            kernel  outcome  reason...
 *     opencl     *H100*  580.*   softmax/f64-*   *       fail     driver bug 1234: exp(-inf) is NaN
 *
 * outcome is fail, error or skip; the reason is required. docs/expectations.md.
 */
#ifndef KCS_EXPECTATIONS_H
#define KCS_EXPECTATIONS_H

#include <stddef.h>

#include "status.h"

/* One expectation and where it was written. */
typedef struct {
    char backend[64], device[128], driver[128], case_pattern[160], kernel[64];
    char outcome[8]; /* "fail", "error" or "skip" */
    char reason[256];
    char file[256];
    int line;
} kcs_expectation;

/* All expectations of a run. */
typedef struct {
    kcs_expectation *items;
    size_t count;
} kcs_expectations;

/* Reads one file and appends its lines; errors name the file and line. */
kcs_status kcs_expectations_read(const char *path, kcs_expectations *expectations, kcs_error *err);

/* The first expectation matching a result, or NULL. */
const kcs_expectation *kcs_expectations_match(const kcs_expectations *expectations, const char *backend,
                                              const char *device, const char *driver, const char *case_name,
                                              const char *kernel);

/* Frees the list. */
void kcs_expectations_free(kcs_expectations *expectations);

#endif
