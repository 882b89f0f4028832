/* case_file.h: literate case files, parsed straight from Markdown.
 *
 * cases/<op>.md is prose for people with fenced blocks for the runner:
 *
 *     ```kcs-case
 *     case: f64-ramp-1000          name, unique in the file
 *     op: sumsq                    operation (ops/<name>.c)
 *     dtype: f64                   element type of the case
 *     sizes: n=1000                the op's sizes, name=value
 *     params: alpha=2 transa=T     the op's parameters, name=value (optional)
 *     input x: ramp start=1 step=1 one line per input: distribution and
 *                                  parameters, optional seed=N
 *     expect: closed-form          golden | oracle [sample=N] | closed-form
 *     tags: perf large             optional: perf, large, no-reference,
 *                                  sanitize, sanitize-unoptimised
 *     bound-tight: why             optional: the case uses (nearly) all of its
 *                                  bound by construction, and why
 *     ```
 *
 * docs/case-format.md is the normative description. A malformed block is
 * reported with file, line and cause, and parsing goes on with the next one.
 */
#ifndef KCS_CASE_FILE_H
#define KCS_CASE_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "generator.h"
#include "status.h"

#define KCS_MAX_SIZES 4
#define KCS_MAX_PARAMS 8
#define KCS_MAX_INPUTS 4

/* Where a case's expected outputs come from. */
typedef enum {
    KCS_EXPECT_GOLDEN = 1,  /* golden/<file>/<case>.npy, written by `ninja golden` */
    KCS_EXPECT_ORACLE,      /* the op's oracle, at run time (for cases too big for golden/) */
    KCS_EXPECT_CLOSED_FORM, /* the op's closed form for these inputs */
} kcs_expect_source;

/* Tags, as bits (kcs_tag_bit gives a tag's bit from its name). */
enum {
    KCS_TAG_PERF = 1u << 0,         /* timed when the runner benchmarks */
    KCS_TAG_LARGE = 1u << 1,        /* needs much memory or time; --skip-large leaves it out */
    KCS_TAG_NO_REFERENCE = 1u << 2, /* too slow for the scalar reference backend */
    /* Small enough for a simulator and taking its op's kernels through their
     * paths: run under Oclgrind by tests/opencl_sanitize.sh, in its first pass
     * (the kernels built as for a device). The op's own case file says which
     * of its cases the sanitizer runs, so a new op brings its own. */
    KCS_TAG_SANITIZE = 1u << 3,
    /* The same script's second pass (kernels unoptimised, each row in a run
     * of its own, the uninitialised-value check): one small case per op and
     * dtype. */
    KCS_TAG_SANITIZE_UNOPTIMISED = 1u << 4,
};

/* The known tags' names, in bit order ("perf" is bit 0), as a case file and
 * `kcs run --tag` spell them, and how many there are. */
extern const char *const kcs_tag_names[];
extern const int kcs_tag_count;

/* The bit of the tag called name, or 0 when no tag has that name. */
unsigned kcs_tag_bit(const char *name);

/* A parameter as written: name and text value, interpreted by the op. */
typedef struct {
    char name[32];
    char text[64];
} kcs_param;

/* One input: which of the op's inputs, and how to generate it. */
typedef struct {
    char name[32];
    kcs_distribution distribution;
} kcs_input_spec;

/* One case, as parsed. */
typedef struct {
    char name[160]; /* "<file stem>/<case>", e.g. "sumsq/f64-ramp-1000" */
    char file[256]; /* the Markdown file */
    int line;       /* line of the opening fence */
    char op[32];
    kcs_dtype dtype;
    kcs_named_value sizes[KCS_MAX_SIZES];
    int size_count;
    kcs_param params[KCS_MAX_PARAMS];
    int param_count;
    kcs_input_spec inputs[KCS_MAX_INPUTS];
    int input_count;
    kcs_expect_source expect;
    uint64_t sample; /* with expect oracle: output rows checked, 0 for all */
    unsigned tags;
    /* Why the case uses (nearly) all of its bound by construction (its
     * bound-tight line), so that a report tells it from a kernel close to its
     * bound by accident; "" when the case file says nothing. */
    char bound_tight[320];
} kcs_case;

/* A problem found in a case file. */
typedef struct {
    char file[256];
    int line;
    char case_name[160]; /* "" when the block has no usable name */
    char message[512];
} kcs_case_problem;

/* Growing lists of parsed cases and of problems. */
typedef struct {
    kcs_case *cases;
    size_t count, capacity;
    kcs_case_problem *problems;
    size_t problem_count, problem_capacity;
} kcs_case_list;

/* Parses the Markdown text of file (its stem prefixes case names), appending
 * cases and problems to list. KCS_ERROR only when memory runs out. */
kcs_status kcs_parse_case_text(const char *text, const char *file, kcs_case_list *list,
                               kcs_error *err);

/* Reads and parses one file; a file that cannot be read becomes a problem. */
kcs_status kcs_parse_case_file(const char *path, kcs_case_list *list, kcs_error *err);

/* Parses every *.md file of a directory, in name order. */
kcs_status kcs_parse_case_directory(const char *directory, kcs_case_list *list, kcs_error *err);

/* Frees the lists. */
void kcs_case_list_free(kcs_case_list *list);

/* Reads text, the value of size name, as a size (digits, 1e6 or 10^6):
 * returns 1 with *size set, or 0 with why saying what is wrong (not a
 * number, negative, too large, not whole). */
int kcs_parse_size(const char *name, const char *text, double *size, char *why, size_t why_size);

/* The size called name; fallback when the case does not give it. */
double kcs_case_size(const kcs_case *c, const char *name, double fallback);

/* The text of the parameter called name, or NULL. */
const char *kcs_case_param(const kcs_case *c, const char *name);

/* The input spec called name, or NULL. */
const kcs_input_spec *kcs_case_input(const kcs_case *c, const char *name);

/* Whether the case's name matches a shell-style glob (*, ?, [...]); a
 * pattern with none of those characters matches names starting with it. */
int kcs_case_matches(const kcs_case *c, const char *pattern);

#endif
