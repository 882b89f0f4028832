/* suite.h: preparing a case once and running it on any backend's device.
 *
 * A prepared case holds the generated inputs and the expected outputs with
 * their bounds; every backend and device is checked against the same data.
 * Running a case on a device: poison the outputs, upload, run, download,
 * check that the inputs are unmodified, compare within the bounds, and (for
 * perf cases when benchmarking) time kernel and end to end separately.
 */
#ifndef KCS_SUITE_H
#define KCS_SUITE_H

#include "backend.h"
#include "case_file.h"
#include "check.h"
#include "explain.h"
#include "golden.h"
#include "op.h"

/* Element count and bytes of one array. */
typedef struct {
    size_t elements;
    size_t bytes;
} kcs_array_size;

/* The sizes of every input and output of a layout, worked out once when a
 * case is prepared and used by every step that runs it. */
typedef struct {
    kcs_array_size inputs[KCS_MAX_INPUTS];
    kcs_array_size outputs[KCS_MAX_OUTPUTS];
    size_t total_bytes; /* inputs and outputs together: what a device must hold */
} kcs_layout_sizes;

/* A case ready to run: inputs generated, expected values and bounds known. */
typedef struct kcs_prepared_case {
    const kcs_case *c;
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    kcs_layout_sizes sizes; /* of layout's arrays */
    void *inputs[KCS_MAX_INPUTS];
    kcs_expected expected[KCS_MAX_OUTPUTS];
    char expected_from[300]; /* "golden", "oracle", "oracle, sample of N", "closed form"; given
                                to kcs apply and kcs check: "files", or "none" */
    int expected_given;      /* the expected values came from the command line (kcs apply,
                                kcs check), not from the op's golden data, oracle or closed form */
} kcs_prepared_case;

/* The first step of preparing a case: finds its op and fills op, args,
 * layout and sizes (the rest zeroed). `kcs apply`, which brings its own
 * inputs and expected values, stops here. */
kcs_status kcs_prepare_layout(const kcs_case *c, kcs_prepared_case *prepared, kcs_error *err);

/* Prepares a case (golden may be NULL when no case needs it). */
kcs_status kcs_prepare_case(const kcs_case *c, const kcs_golden *golden, kcs_prepared_case *prepared,
                            kcs_error *err);

/* Prepares a case with its expected values taken from source rather than
 * from where the case says: `kcs golden` prepares golden cases from the
 * oracle and writes what it found. */
kcs_status kcs_prepare_case_from(const kcs_case *c, kcs_expect_source source, const kcs_golden *golden,
                                 kcs_prepared_case *prepared, kcs_error *err);

/* Frees a prepared case. */
void kcs_prepared_case_free(kcs_prepared_case *prepared);

/* Fills expected[o].bounds from the case's inputs and expected[o].values:
 * the op's bounds, or its flushing bounds when flushing is set and it has
 * them (a device that flushes f32 subnormals; docs/gemm.md). */
kcs_status kcs_fill_bounds(const kcs_prepared_case *prepared, int flushing, kcs_expected expected[],
                           kcs_error *err);

/* Allocates every output's expected values and bounds in full and fills them
 * from the op's oracle on the case's inputs (kcs_free_expected frees them). */
kcs_status kcs_oracle_expected(const kcs_prepared_case *prepared, int flushing, kcs_expected expected[],
                               kcs_error *err);

/* Frees the values and bounds of KCS_MAX_OUTPUTS expected outputs (not their indices). */
void kcs_free_expected(kcs_expected expected[]);

/* Compares outputs (host copies, in the layout's order) with expected values
 * and bounds for a prepared case: the op's own check where it has one (assign's
 * near-tie rule), else kcs_check_outputs; then names an output that is a
 * trivial answer (all zeros, a copy of an input), unless the expected values
 * were given on the command line and the op's oracle accepts the outputs, in
 * which case it says so instead. flushing: the bounds are flushing ones.
 * `kcs check` uses it for outputs computed elsewhere. */
void kcs_compare_outputs(const kcs_prepared_case *prepared, const kcs_expected expected[], int flushing,
                         void *const actual[], kcs_check_result *check);

/* The outcome of one case on one device and kernel. */
typedef enum {
    KCS_OUTCOME_PASS,
    KCS_OUTCOME_FAIL,
    KCS_OUTCOME_SKIP,
    KCS_OUTCOME_ERROR,
} kcs_outcome;

/* Name of an outcome: "pass", "fail", "skip", "error". */
const char *kcs_outcome_name(kcs_outcome outcome);

/* The most timed repeats a timing keeps one by one (the first ones; the
 * default --max-repeats is this too), for comparisons that test the samples. */
#define KCS_TIMING_KEPT_SAMPLES 1000

/* Median, quartiles and extremes of repeated timings, in seconds, and the
 * repeats themselves in the order they were timed. */
typedef struct {
    int repeats;
    double median, lower_quartile, upper_quartile, minimum, maximum;
    int rotated_copies; /* kernel timing: sets of buffers the repeats rotated among (1: none) */
    double busy_fraction; /* kernel timing: the repeats' summed time over the timed loop's wall time (0: none) */
    int kept;           /* samples kept: min(repeats, KCS_TIMING_KEPT_SAMPLES) */
    double pace_median; /* kernel timing on a device with a pace: the median of the pace timed after
                           each repeat (kcs_backend.pace); 0 without one */
    int back_to_back;   /* kernel timing: the repeats were queued back to back (kcs_backend.time_back_to_back) */
    char one_by_one_because[1024]; /* kernel timing on a backend that can queue them: why they were not ("": they were) */
    double samples[KCS_TIMING_KEPT_SAMPLES];
} kcs_timing;

/* Summarises samples (sorted in place, after the first ones are kept in
 * their timed order) into a timing. */
void kcs_timing_from_samples(double *samples, int count, kcs_timing *timing);

/* How to run. */
typedef struct {
    int benchmark;      /* time perf-tagged cases */
    int min_repeats;    /* at least this many timed runs */
    double min_seconds; /* and at least this much timed time */
    int max_repeats;    /* but never more runs than this */
    double warm_up_seconds; /* untimed runs first: one, and more until this much kernel (or wall) time */
    int one_by_one;     /* time each repeat on its own even where the backend can queue them back to back */
    int keep_outputs;   /* hand the downloaded outputs to the caller (kcs_run_result.actual) */
    int determinism;    /* run each kernel twice and fail it if the outputs differ in any bit */
} kcs_run_options;

/* What happened. */
typedef struct {
    kcs_outcome outcome;
    char message[1024]; /* skip reason, error, or failure diagnosis */
    kcs_check_result check;
    int timed;
    kcs_timing kernel;     /* device time of the kernels alone */
    kcs_timing end_to_end; /* upload from staging memory, run, download */
    void *actual[KCS_MAX_OUTPUTS]; /* with keep_outputs: the outputs as downloaded, else NULL */
    /* SHA-256 of each output's bytes as the first run downloaded them (before
     * any timing), so that devices can be compared bit for bit without keeping
     * the outputs (docs/runner.md, "Identical devices must agree"); set
     * whenever the outputs were downloaded (a pass or a fail), else 0. */
    int hashed_outputs;
    char output_names[KCS_MAX_OUTPUTS][32];
    char output_hashes[KCS_MAX_OUTPUTS][65];
    /* On a failure against the op's own bound: what its arithmetic models
     * say (explain.h); explanation.text is "" when no explanation was tried
     * (a pass, an error, a failure found by no comparison of values). */
    kcs_explanation explanation;
} kcs_run_result;

/* Frees the outputs a run kept. */
void kcs_run_result_free(kcs_run_result *result);

/* Whether a run with options times case c when it passes: --benchmark and a
 * perf-tagged case. The one home of that rule, for kcs_run_on_device and for
 * the ceilings a run measures (runner/devices.c). */
int kcs_run_times(const kcs_run_options *options, const kcs_case *c);

/* Runs a prepared case with one kernel on an open device. */
void kcs_run_on_device(const kcs_prepared_case *prepared, const kcs_backend *backend,
                       kcs_device *device, const kcs_device_info *info, const kcs_kernel *kernel,
                       const kcs_run_options *options, kcs_run_result *result);

#endif
