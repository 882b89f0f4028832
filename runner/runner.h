/* runner.h: what the files of the kcs runner share (docs/runner.md).
 *
 *   kcs.c             main: reads the options and the cases, then one command
 *   cli.c             the options: usage text, parsing, which cases are selected
 *   devices.c         opening the wanted devices, their ceilings, `kcs devices`
 *   run_command.c     `kcs run`: checks before the run, the results files, the summary
 *   run.c             every selected case on every device and kernel, sent to a sink
 *   worker.c          running the cases in worker processes, and the pipe protocol
 *   sink.c            where results go: into the results, or down a worker's pipe
 *   console.c         the lines a run prints: devices, one per result, the summary
 *   rerun.c           where disagreeing devices' outputs differ: their case rerun, element by element
 *   list.c            `kcs list`
 *   rows.c            every kernel row checked against the op table and the cases: at start-up, `kcs rows`
 *   golden_command.c  `kcs golden`
 *   apply.c           `kcs apply`
 *   check.c           `kcs check`
 *   probe.c           `kcs probe`: the probe for silent data corruption (lib/kcs_probe.h)
 *   given_arrays.c    what apply and check share: arrays given as .npy files
 *   op_arrays.c       what apply and check say of an op: its arrays, sizes, parameters
 *   time_limit.c      how long a unit may go without progress before its worker is killed
 */
#ifndef KCS_RUNNER_H
#define KCS_RUNNER_H

#include <stdio.h>

#include "backend.h"
#include "case_file.h"
#include "expectations.h"
#include "npy.h"
#include "results.h"
#include "speed.h"
#include "suite.h"

/* Exit status of the runner. */
enum {
    KCS_EXIT_PASSED = 0, /* every case that ran passed (skips are not failures) */
    KCS_EXIT_FAILED = 1, /* a case failed or had an error */
    KCS_EXIT_USAGE = 2,  /* usage or configuration error */
};

/* The command line of `kcs run`, `list`, `devices` and `golden`. */
typedef struct {
    const char *command;
    char cases_dir[2048];
    char golden_dir[2048];
    char backends[512];
    int devices[64];
    int device_count;
    const char *platform;
    int strict_expectations; /* an expectation line that matched nothing fails the run */
    const char *kernel_pattern; /* --kernel: only kernel variants matching this glob; NULL: all */
    unsigned tag;      /* --tag: only cases with this tag (a KCS_TAG_* bit); 0: any */
    const char *results_path;
    const char *junit_path;
    int skip_large;
    int quiet;
    int list_json;     /* kcs list --json: every case's fields as JSON (runner/list.c) */
    int ceilings;      /* measure ceilings (always with --benchmark) */
    int all_ceilings;  /* every ceiling (--all-ceilings, --ceilings), not only those the timed cases need */
    int in_process;    /* no worker process: faster to debug, but a hang or crash ends the run */
    double time_limit; /* --time-limit: seconds without progress before a worker is killed; 0: none;
                          KCS_TIME_LIMIT_DERIVED: each unit's own (kcs_unit_time_limit) */
    int jobs;          /* --jobs: workers at once, each device its own; 0: the default lanes (devices.c) */
    kcs_expectations expectations; /* expected failures and skips (--expectations) */
    const char *save_dir; /* NULL: save nothing */
    int save_all;
    const char *program;
    kcs_run_options run;
    char **patterns;
    int pattern_count;
} kcs_runner_options;

/* What parsing the command line came to. */
typedef enum {
    KCS_OPTIONS_PARSED, /* go on with the command */
    KCS_OPTIONS_HELP,   /* --help was given and the usage printed */
    KCS_OPTIONS_BAD,    /* a usage error, already printed */
} kcs_options_outcome;

/* Parses the command line into o. */
kcs_options_outcome kcs_parse_options(int argc, char **argv, kcs_runner_options *o);

/* Whether every name given with --backend is a backend of this build; prints the first that is not. */
int kcs_check_backend_names(const kcs_runner_options *o);

/* Whether the command line's patterns and --tag select a case (neither: every case). */
int kcs_case_selected(const kcs_runner_options *o, const kcs_case *c);

/* Whether a run runs kernel (a row of some backend) on case c: its op and
 * dtype, and its variant matches --kernel where given. */
int kcs_kernel_selected(const kcs_runner_options *o, const kcs_kernel *kernel, const kcs_case *c);

/* Why a selected case c is not run on backend (NULL: on any backend), or
 * NULL when it is: tagged large under --skip-large, or tagged no-reference
 * where backend is the reference. The one home of the tags that leave a case
 * out, for the runs and for the ceilings those runs need. */
const char *kcs_case_left_out(const kcs_runner_options *o, const kcs_case *c, const kcs_backend *backend);

/* ---- lanes: the devices that run at once (devices.c, docs/runner.md "All devices at once") ---- */

#define KCS_MAX_LANE_DEVICES 64

/* A device the first worker opened, as the runner plans lanes from it. */
typedef struct {
    char id[64];           /* "cuda:1" */
    int shares_host_cores; /* kcs_device_info.shares_host_cores */
    char pci_bus_id[32];   /* "0000:3b:00.0" where the backend tells it (kcs_pci_bus_id), else "" */
    int has_ceilings;      /* measured by the first worker, before any case ran */
    kcs_ceilings ceilings;
    int lane;              /* the lane that runs it */
} kcs_lane_device;

/* Which worker runs which devices: one lane per GPU, the devices that share
 * the host's cores together in one (or, with --jobs, every device its own);
 * either way the devices of one PCI address (one card seen by two backends)
 * share a lane. */
typedef struct {
    kcs_lane_device devices[KCS_MAX_LANE_DEVICES];
    int device_count;
    int lane_count;
} kcs_lane_plan;

/* ---- time limits (time_limit.c, docs/runner.md "Isolation") ---- */

/* kcs_runner_options.time_limit when --time-limit was not given. */
#define KCS_TIME_LIMIT_DERIVED (-1.0)

/* Seconds a worker may be silent outside any unit (opening devices,
 * measuring their ceilings) without --time-limit. */
#define KCS_SETUP_TIME_LIMIT 600.0

/* Seconds unit (0: preparing the case; later: one kernel on device, which
 * may be NULL where it is not known) of case c may go without progress:
 * --time-limit where given, else derived from the case's size and the
 * device's measured rate (time_limit.c says how). */
double kcs_unit_time_limit(const kcs_runner_options *o, const kcs_case *c, int unit,
                           const kcs_lane_device *device);

/* Assigns each of plan's devices (in the order they were opened) a lane:
 * by kcs_plan_lanes alone, so the first worker and the runner agree. */
void kcs_plan_lanes(const kcs_runner_options *o, kcs_lane_plan *plan);

/* The label of a lane for the console: its device's id, "card <PCI address>"
 * for the devices of one card, or "host" for the lane of several devices that
 * share the host's cores. */
void kcs_lane_label(const kcs_lane_plan *plan, int lane, char *label, size_t size);

/* Whether a lane of plan holds a device that shares the host's cores. */
int kcs_lane_shares_host_cores(const kcs_lane_plan *plan, int lane);

/* The "pci_bus_id=" of a device's details ("0000:3b:00.0"; CUDA and OpenCL
 * write it where the driver tells it), or "" in pci. */
void kcs_pci_bus_id(const char *details, char *pci, size_t size);

/* Progress shared by every worker of a run (in memory all of them map):
 * the units begun and their total, for "[i/N]" over all lanes. */
typedef struct {
    long begun;
    long total;
} kcs_shared_progress;

/* An open device of a backend. */
typedef struct {
    const kcs_backend *backend;
    int index;
    kcs_device *device;
    kcs_device_info info;
    char id[64];
    kcs_ceilings ceilings;
    int has_ceilings; /* measured in this run */
} kcs_open_device;

/* A backend that has no usable device, and why. */
typedef struct {
    const kcs_backend *backend;
    char reason[1024];
} kcs_absent_backend;

/* Every wanted device that opened, and the backends left without one. */
typedef struct {
    kcs_open_device *devices;
    int device_count;
    kcs_absent_backend *absent;
    int absent_count;
} kcs_device_set;

/* Opens every device the options want; a backend without one is kept with the reason. */
void kcs_open_devices(const kcs_runner_options *o, kcs_device_set *set);

/* Opens the wanted devices of one lane of plan, with the ceilings the plan
 * holds; the backends without a device are kept (with the reason) only in
 * lane 0, and a device of the lane that no longer opens is kept as absent. */
void kcs_open_lane_devices(const kcs_runner_options *o, const kcs_lane_plan *plan, int lane, kcs_device_set *set);

/* Closes and drops the devices of set that are not in lane of plan. */
void kcs_keep_lane_devices(const kcs_lane_plan *plan, int lane, kcs_device_set *set);

/* Closes the devices and frees the set. */
void kcs_close_devices(kcs_device_set *set);

/* Measures every ceiling of each device where its backend can, and prints what it found. */
void kcs_measure_ceilings(kcs_device_set *set);

/* The ceilings a run of cases asks backend to measure: every one with
 * --all-ceilings (or --ceilings); else the union, over the selected
 * perf-tagged cases that --benchmark times on one of backend's kernels, of
 * the ceiling each is judged against (kcs_ceilings_judging): the copy for
 * a copy-bound case, its mode's rate for a GEMM case. 0 when nothing is
 * timed there. */
kcs_ceiling_mask kcs_ceilings_wanted(const kcs_runner_options *o, const kcs_case_list *cases,
                                     const kcs_backend *backend);

/* Measures the ceilings of wanted (KCS_CEILING_BIT_*) of one device where its
 * backend can, records wanted as the ceilings' asked, and prints what it
 * found; wanted 0 measures nothing and says so. */
void kcs_measure_device_ceilings(kcs_open_device *device, kcs_ceiling_mask wanted);

/* A device's ceilings when this run measured them, else NULL. */
const kcs_ceilings *kcs_device_ceilings(const kcs_open_device *device);

/* ---- the sink: where a run's results go (sink.c) ----
 * run.c sends what happens to a sink, and worker.c gives each worker one
 * that writes to its pipe: both use the sink, so neither calls the other
 * back (run_command.c -> worker.c -> run.c -> sink.c). */

/* Where a run's results go: added to the results in this process, or sent
 * to the supervising runner by a worker (worker.c), which starts another
 * worker after a unit that hung or crashed. */
typedef struct {
    kcs_results *results; /* in one process: add here */
    int fd;               /* in a worker: send here, else -1 */
    int skip_case;        /* a restarted worker skips units up to and including */
    int skip_unit;        /*   (skip_case, skip_unit); -1 when nothing is skipped */
    /* Lanes (worker.c): NULL plan, every wanted device (in the runner's own
     * process). first: this worker opens every device, measures their
     * ceilings, sends them and "P", then keeps lane 0's. Otherwise it opens
     * only lane's devices and takes their ceilings from the plan. */
    const kcs_lane_plan *plan;
    int lane;
    int first;
    kcs_shared_progress *progress; /* NULL: this process counts alone */
} kcs_sink;

/* Records one result. */
void kcs_sink_result(kcs_sink *out, const kcs_result_entry *entry);

/* Records a device the run uses. */
void kcs_sink_device(kcs_sink *out, const kcs_open_device *device);

/* Tells the runner that the worker begins measuring a device's ceilings
 * ("M <id>"): progress, for the hang timer, on a loaded machine. */
void kcs_sink_measuring(kcs_sink *out, const kcs_open_device *device);

/* Tells the runner that the first worker has sent every device ("P"): it
 * plans the lanes and starts their workers. */
void kcs_sink_plan_ready(kcs_sink *out);

/* Whether case_index is new to this worker: after a worker hung or died, the
 * next one skips the cases (and the progress lines) the earlier one began. */
int kcs_sink_resumes_after(const kcs_sink *out, int case_index);

/* Announces unit (case_index, unit) (unit 0 prepares the case, each later
 * one is a kernel on a device) with identity, the result to record if it
 * never ends (an error, with its verdict); returns 0 when this worker must
 * skip it (an earlier worker did it, or hung or died there). */
int kcs_sink_begin(kcs_sink *out, int case_index, int unit, const kcs_result_entry *identity);

/* Tells the runner that the worker ran every case ("E"); it then exits. */
void kcs_sink_finished(kcs_sink *out);

/* ---- running the cases (run.c, worker.c, run_command.c) ---- */

/* Runs the selected cases in worker processes, adding their results. */
void kcs_run_in_workers(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results);

/* Runs the selected cases on every wanted device, sending what happens to out. */
void kcs_run_cases(const kcs_runner_options *o, const kcs_case_list *cases, kcs_sink *out);

/* Records (and prints) an error result for each problem of the case files:
 * a case that cannot be read is an error of the run, which goes on. */
void kcs_record_file_problems(const kcs_runner_options *o, const kcs_case_list *cases, kcs_sink *out);

/* Starts the clock of the progress lines' times and estimates; called
 * before any worker starts, so that a worker started after a crash counts
 * from the same start. */
void kcs_start_run_clock(void);

/* Prints the line that names a device the run uses (unless --quiet). */
void kcs_print_device(const kcs_runner_options *o, const kcs_open_device *device);

/* Prints one result's line (unless --quiet hides it); with the verdict of
 * an expectation (NULL: none), XFAIL (or XSKIP, XERR) when it was met and
 * XPASS when a listed case passed. */
void kcs_print_result(const kcs_runner_options *o, const char *case_name, const char *where,
                      const kcs_run_result *run, const kcs_speed *speed, const kcs_verdict *verdict);

/* The paths a take-away wrote (kcs_saved_paths points into them). */
typedef struct {
    char case_folder[4096];
    char outputs_folder[4400];
    char replay[8192];
    kcs_saved_paths paths;
} kcs_take_away;

/* Saves the case a worker hung or died in (its inputs and expected values,
 * as for a failure) with the command that replays the unit's kernel, where
 * --save-failures is on; returns 0 with the reason printed when it cannot.
 * backend, device_index and kernel name the unit. */
int kcs_save_unfinished_unit(const kcs_runner_options *o, const kcs_case *c, const char *backend,
                             int device_index, const char *kernel, kcs_take_away *saved);

/* Prints where a take-away went: "saved: ..." and "replay: ...". */
void kcs_print_take_away(const kcs_take_away *saved);

/* Prints the line of a unit whose worker hung or died; expected: an expectation lists the error. */
void kcs_print_unit_error(const char *case_name, const char *where, const char *message, int expected);

/* Prints where the results went and the counts. */
void kcs_print_summary(const char *results_path, const kcs_result_counts *counts);

/* The signal (SIGTERM, SIGINT) that stopped kcs_run_in_workers, or 0 (worker.c, "A stop"). */
int kcs_run_stopped_by(void);

/* `kcs run`: argc and argv as main's, for the results file; returns the exit status. */
int kcs_command_run(const kcs_runner_options *o, const kcs_case_list *cases, int argc, char **argv);

/* Compares the run's results with each other (kcs_results_compare_devices)
 * and, for each group of identical devices that disagree, reruns the case
 * and kernel on them to name the first differing element (rerun.c);
 * returns the number of disagreeing groups. */
int kcs_compare_and_locate(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results);

/* Whether every pattern of o matches a case of cases (and, with no
 * pattern, whether there is a case at all); prints each that does not. */
int kcs_patterns_match(const kcs_runner_options *o, const kcs_case_list *cases);

/* `kcs list`: returns the exit status; a pattern that matches no case is a
 * usage error, as for `kcs run` (a script reading the list would otherwise
 * take a mistyped pattern for an empty selection). */
int kcs_command_list(const kcs_runner_options *o, const kcs_case_list *cases);

/* Whether every kernel row of every backend built names a known op, a dtype
 * it accepts and a variant of its own (kcs_kernel_row_problem); prints each
 * row that does not. main runs no command without it but `kcs rows`, which
 * lists them all (rows.c). */
int kcs_rows_start_check(const kcs_runner_options *o);

/* `kcs rows`: every kernel row with the cases that select it; returns the exit status (rows.c). */
int kcs_command_rows(const kcs_runner_options *o);

/* `kcs devices`: returns the exit status. */
int kcs_command_devices(const kcs_runner_options *o);

/* `kcs golden`: returns the exit status. */
int kcs_command_golden(const kcs_runner_options *o, const kcs_case_list *cases);

/* `kcs apply OP ...`: argv as main's; returns the exit status. */
int kcs_command_apply(int argc, char **argv);

/* `kcs check OP ...`: argv as main's; returns the exit status. */
int kcs_command_check(int argc, char **argv);

/* `kcs probe ...`: argv as main's; returns the exit status (probe.c). */
int kcs_command_probe(int argc, char **argv);

/* The source tree's revision (git describe), or "unknown", for a results file (run_command.c). */
void kcs_read_revision(char *revision, size_t size);

/* ---- arrays given as .npy files: `kcs apply` and `kcs check` (given_arrays.c) ---- */

/* An array given on the command line as NAME=FILE.npy. */
typedef struct {
    char *name, *file;
} kcs_named_file;

/* What `kcs apply` or `kcs check` was given. */
typedef struct {
    const char *command; /* "apply" or "check", for messages */
    kcs_case c;          /* the op, dtype, sizes and parameters, as a case */
    const char *dtype_name; /* --dtype; NULL: the dtype of the op's first input's file */
    kcs_named_file inputs[KCS_MAX_INPUTS];
    int input_count;
    kcs_named_file expected[KCS_MAX_OUTPUTS];
    int expected_count;
    kcs_named_file actual[KCS_MAX_OUTPUTS]; /* kcs check: the outputs to check */
    int actual_count;
    const char *errors_dir; /* --errors: where each element's error and bound go; NULL: nowhere */
    int overwrite;          /* --overwrite: files that exist may be replaced (never a given file) */
    kcs_npy_array input_arrays[KCS_MAX_INPUTS]; /* the files read, in the order given */
    kcs_npy_array expected_arrays[KCS_MAX_OUTPUTS];
    kcs_npy_array actual_arrays[KCS_MAX_OUTPUTS];
} kcs_given;

/* getopt_long codes of the options apply and check share. */
enum {
    KCS_GIVEN_DTYPE = 't',    /* --dtype T */
    KCS_GIVEN_SIZE = 's',     /* --size NAME=VALUE */
    KCS_GIVEN_PARAM = 'p',    /* --param NAME=VALUE */
    KCS_GIVEN_INPUT = 'i',    /* --input NAME=FILE.npy */
    KCS_GIVEN_EXPECTED = 'e', /* --expected NAME=FILE.npy */
    KCS_GIVEN_ACTUAL = 'a',   /* --actual NAME=FILE.npy (check) */
    KCS_GIVEN_ERRORS = 'E',   /* --errors DIR */
    KCS_GIVEN_OVERWRITE = 'O', /* --overwrite */
};

/* Parsing goes on (kcs_take_given_option's answer when the option was taken). */
enum { KCS_GIVEN_KEEP_GOING = -1 };

/* Starts g for command ("apply", "check") and op. */
void kcs_given_init(kcs_given *g, const char *command, const char *op);

/* Takes one shared option (a KCS_GIVEN_ code and its value); returns
 * KCS_GIVEN_KEEP_GOING, or KCS_EXIT_USAGE with the message printed. */
int kcs_take_given_option(int option, char *value, kcs_given *g);

/* Reads the given files and prepares the case: the op and its inputs named
 * in the command line's words, the dtype, the sizes (those not given from
 * the shapes), the layout, and the inputs checked and taken. */
kcs_status kcs_given_prepare(kcs_given *g, kcs_prepared_case *prepared, kcs_error *err);

/* Fills the expected values and bounds of every output: from the --expected
 * files (integer outputs also from int32 or int64), or from the op's oracle
 * when none were given. flushing: the op's bounds for a device that flushes
 * f32 subnormals. */
kcs_status kcs_given_expected(const kcs_given *g, kcs_prepared_case *prepared, int flushing, kcs_error *err);

/* The --actual file of every output, checked against the layout, in host
 * memory of the output's dtype (int64 narrowed to int32 where it fits). */
kcs_status kcs_given_actual(const kcs_given *g, const kcs_prepared_case *prepared, void *actual[],
                            kcs_error *err);

/* Writes dir/error.<output>.npy (|actual - expected| by the checker's rules:
 * inf where NaN or infinity does not match) and dir/bound.<output>.npy, both
 * float64 of the output's shape, for a case checked in full; returns 0, or 2
 * with the reason printed. */
int kcs_write_errors(const kcs_prepared_case *prepared, void *const actual[], const char *dir,
                     const char *command);

/* Prints the worst element and the verdict (PASS or FAIL and the
 * diagnosis); returns whether it passed. A check that compared no element
 * (every output empty) is no pass: FAIL, naming the outputs' shapes and the
 * files of g that hold no element. */
int kcs_print_check(const kcs_given *g, const kcs_prepared_case *prepared, const kcs_check_result *check,
                    const char *message);

/* Runs a prepared case's kernel and writes its outputs to output_dir;
 * checks them when g gave expected values, and then writes each element's
 * error and bound into g's errors_dir when it has one. Returns 0, 1 (outside
 * the bound, or nothing compared) or 2. */
int kcs_apply_prepared(const kcs_given *g, const kcs_prepared_case *prepared, const char *backend,
                       int device_index, const char *kernel, const char *output_dir);

/* Whether every file the command will write can be written without losing
 * one: output_dir/<output>.npy for each output (output_dir NULL: none) and,
 * with --errors, error.<output>.npy and bound.<output>.npy. Never a file
 * given on the command line (an input, expected values, an output to check:
 * the same file by any path); a file that exists only with --overwrite; all
 * of them tried before anything is written. */
kcs_status kcs_given_writes_allowed(const kcs_given *g, const kcs_prepared_case *prepared, const char *output_dir,
                                    kcs_error *err);

/* Frees the arrays read. */
void kcs_given_free(kcs_given *g);

/* Prints what `kcs <command> OP` takes for op_name (op_arrays.c): its input
 * and output names with their shapes, sizes, parameters and dtypes; nothing
 * for an unknown op. */
void kcs_print_op_arrays(const char *command, const char *op_name, FILE *out);

#endif
