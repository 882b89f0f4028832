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

#include "explain.h"
#include "status.h"

/* One expectation and where it was written. */
typedef struct {
    char backend[64], device[256], driver[128], case_pattern[160], kernel[64];
    char outcome[8]; /* "fail", "error" or "skip" */
    char explained_by[64]; /* with "fail=NAME": the model the failure must be explained by alone
                              (or with models the case cannot tell from it), or "unexplained":
                              by none (docs/explaining.md); "" when the line asks nothing of it */
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

/* Who a result is about, in the terms of an expectation's first five fields.
 * A line's device glob may name the device by its name, its id or its
 * platform, as `kcs devices` prints them ("*NVIDIA*", "opencl:1", "*Portable*"). */
typedef struct {
    const char *backend;   /* NULL for a problem no backend was involved in: never listed */
    const char *device;    /* the device's name; "" or NULL without a device */
    const char *device_id; /* optional: its id as `kcs devices` prints it ("opencl:1") */
    const char *platform;  /* optional: its platform ("Portable Computing Language", "CUDA") */
    const char *driver;    /* its driver version; "" or NULL without a device */
    const char *case_name; /* the case's full name */
    const char *kernel;    /* the kernel variant; NULL when no kernel ran */
    const kcs_explanation *explanation; /* optional: what the op's models said of a failure */
} kcs_expectation_subject;

/* What the expectations say about one result. */
typedef enum {
    KCS_VERDICT_NONE,            /* no line lists it */
    KCS_VERDICT_MET,             /* listed, and it came out as listed (an error meets "fail") */
    KCS_VERDICT_UNEXPECTED_PASS, /* listed, but it passed: counted as failed, so the line is fixed */
    KCS_VERDICT_DIFFERENT,       /* listed, but it came out otherwise (a skip listed as "fail", a
                                    failure explained otherwise than "fail=NAME" says): counted
                                    as what it was */
} kcs_verdict_kind;

/* A verdict and the line that gave it (NULL with KCS_VERDICT_NONE). */
typedef struct {
    kcs_verdict_kind kind;
    const kcs_expectation *line;
} kcs_verdict;

/* The verdict on a result of this subject and outcome ("pass", "fail",
 * "skip" or "error"); the first matching line decides. expectations may be NULL. */
kcs_verdict kcs_expectations_verdict(const kcs_expectations *expectations, const kcs_expectation_subject *subject,
                                     const char *outcome);

/* The name of a verdict kind: "none", "met", "unexpected pass", "different". */
const char *kcs_verdict_name(kcs_verdict_kind kind);

/* The kind a name stands for; KCS_VERDICT_NONE for NULL or an unknown name. */
kcs_verdict_kind kcs_verdict_from_name(const char *name);

/* Frees the list. */
void kcs_expectations_free(kcs_expectations *expectations);

#endif
