/* apply.c: `kcs apply`, one op on one backend and device, on inputs given
 * as .npy files, writing the outputs as .npy; with expected values given,
 * it also checks them against the op's derived bound. This is how a failure
 * is replayed outside the suite, and how a kernel developer runs an op on
 * data of their own (docs/take-away.md shows the round trip with numpy).
 * Outputs computed elsewhere are checked by `kcs check` (check.c) instead.
 *
 * The given arrays are read and checked against the op by given_arrays.c,
 * which check.c shares: sizes may come from the shapes, and nothing is
 * converted silently.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "runner.h"
#include "take_away.h"

static const char apply_usage[] =
    "usage: kcs apply OP --input NAME=FILE.npy ... [options]\n"
    "\n"
    "Runs OP on one backend and device on the given inputs and writes each output\n"
    "as OUTPUT-DIR/<output>.npy. With --expected for every output, checks them\n"
    "within the op's derived bound and prints the worst element. To check outputs\n"
    "computed elsewhere, without running a kernel: kcs check --help.\n"
    "\n"
    "  --dtype T            the case dtype (default: the dtype of the op's first input)\n"
    "  --size NAME=VALUE    a size of the op (--size n=7); needed only where no\n"
    "                       given array's shape says it, and checked against them\n"
    "  --param NAME=VALUE   a parameter of the op (--param transa=T)\n"
    "  --input NAME=FILE    an input of the op, as .npy (repeat for each input)\n"
    "  --expected NAME=FILE expected values of an output, as .npy (any float dtype;\n"
    "                       int32 or int64 for an integer output)\n"
    "  --errors DIR         with --expected: write each output's per-element error and\n"
    "                       bound as DIR/error.<output>.npy and DIR/bound.<output>.npy\n"
    "  --backend NAME       backend (default: reference)\n"
    "  --device N           device index of that backend (default: 0)\n"
    "  --kernel VARIANT     kernel variant (default: the backend's first for OP and dtype)\n"
    "  --output-dir DIR     where outputs go (default: kcs-apply)\n"
    "  --overwrite          replace output (and --errors) files that exist; a file\n"
    "                       given with --input or --expected is never written over\n"
    "\n"
    "exit status: 0 ran (and passed, if checked), 1 outside the bound, 2 bad input or usage\n";

/* What `kcs apply` was asked to do: the arrays, and where to run. */
typedef struct {
    kcs_given given;
    const char *backend_name, *kernel_name, *output_dir;
    int device_index;
} apply_request;

static int take_device_index(const char *text, apply_request *r)
{
    char *end;
    long index = strtol(text, &end, 10);
    r->device_index = (int)index;
    if (end == text || *end || index < 0 || index > 1000000) {
        fprintf(stderr, "kcs apply: --device needs an index >= 0\n");
        return KCS_EXIT_USAGE;
    }
    return KCS_GIVEN_KEEP_GOING;
}

static const struct option apply_options[] = {
    {"dtype", required_argument, 0, KCS_GIVEN_DTYPE},       {"size", required_argument, 0, KCS_GIVEN_SIZE},
    {"param", required_argument, 0, KCS_GIVEN_PARAM},       {"input", required_argument, 0, KCS_GIVEN_INPUT},
    {"expected", required_argument, 0, KCS_GIVEN_EXPECTED}, {"errors", required_argument, 0, KCS_GIVEN_ERRORS},
    {"backend", required_argument, 0, 'b'},                 {"device", required_argument, 0, 'd'},
    {"kernel", required_argument, 0, 'k'},                  {"output-dir", required_argument, 0, 'o'},
    {"overwrite", no_argument, 0, KCS_GIVEN_OVERWRITE},     {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* Applies one option (getopt_long's code and argument) to the request. */
static int take_apply_option(int option, char *value, apply_request *r)
{
    switch (option) {
    case 'b': r->backend_name = value; return KCS_GIVEN_KEEP_GOING;
    case 'd': return take_device_index(value, r);
    case 'k': r->kernel_name = value; return KCS_GIVEN_KEEP_GOING;
    case 'o': r->output_dir = value; return KCS_GIVEN_KEEP_GOING;
    case 'h':
        fputs(apply_usage, stdout);
        fputc('\n', stdout);
        kcs_print_op_arrays("apply", r->given.c.op, stdout);
        return KCS_EXIT_PASSED;
    case '?': fputs(apply_usage, stderr); return KCS_EXIT_USAGE;
    default: return kcs_take_given_option(option, value, &r->given);
    }
}

/* Parses `kcs apply OP [options]` into r; returns KCS_GIVEN_KEEP_GOING or the exit status. */
static int parse_apply(int argc, char **argv, apply_request *r)
{
    if (argc < 3 || argv[2][0] == '-') {
        int help = argc >= 3 && strcmp(argv[2], "--help") == 0;
        fputs(apply_usage, help ? stdout : stderr);
        return help ? KCS_EXIT_PASSED : KCS_EXIT_USAGE;
    }
    memset(r, 0, sizeof *r);
    kcs_given_init(&r->given, "apply", argv[2]);
    r->backend_name = "reference";
    r->output_dir = "kcs-apply";
    optind = 3;
    for (int option; (option = getopt_long(argc, argv, "", apply_options, NULL)) != -1;) {
        int status = take_apply_option(option, optarg, r);
        if (status != KCS_GIVEN_KEEP_GOING)
            return status;
    }
    if (optind != argc) {
        fprintf(stderr, "kcs apply: unexpected argument '%s'\n", argv[optind]);
        return KCS_EXIT_USAGE;
    }
    if (r->given.input_count == 0) {
        fprintf(stderr, "kcs apply: give the op's inputs with --input NAME=FILE.npy\n");
        kcs_print_op_arrays("apply", argv[2], stderr);
        return KCS_EXIT_USAGE;
    }
    if (r->given.errors_dir && r->given.expected_count == 0) {
        fprintf(stderr, "kcs apply: --errors needs --expected for every output (or use kcs check, whose expected "
                        "values come from the op's oracle)\n");
        return KCS_EXIT_USAGE;
    }
    return KCS_GIVEN_KEEP_GOING;
}

/* The expected values: from the files when given; without them every
 * output gets an empty set, and nothing is checked. */
static kcs_status take_expected(const kcs_given *g, kcs_prepared_case *p, kcs_error *err)
{
    if (g->expected_count)
        return kcs_given_expected(g, p, 0, err);
    snprintf(p->expected_from, sizeof p->expected_from, "none");
    return KCS_OK;
}

int kcs_command_apply(int argc, char **argv)
{
    apply_request r;
    int status = parse_apply(argc, argv, &r);
    if (status != KCS_GIVEN_KEEP_GOING)
        return status;
    kcs_prepared_case p;
    kcs_error err = {{0}};
    status = KCS_EXIT_USAGE;
    if (kcs_given_prepare(&r.given, &p, &err) == KCS_OK && take_expected(&r.given, &p, &err) == KCS_OK &&
        kcs_given_writes_allowed(&r.given, &p, r.output_dir, &err) == KCS_OK)
        status = kcs_apply_prepared(&r.given, &p, r.backend_name, r.device_index, r.kernel_name, r.output_dir);
    if (status == KCS_EXIT_USAGE && err.message[0])
        fprintf(stderr, "kcs apply: %s\n", err.message);
    kcs_given_free(&r.given);
    kcs_prepared_case_free(&p);
    return status;
}

/* The backend called name and its kernel for the case (the first for the op
 * and dtype when kernel_name is NULL); returns 0 with the reason printed
 * when there is none. */
static int find_kernel(const kcs_prepared_case *p, const char *backend_name, const char *kernel_name,
                       const kcs_backend **backend, const kcs_kernel **kernel)
{
    *backend = NULL;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++)
        if (strcmp(kcs_builtin_backends[b]->name, backend_name) == 0)
            *backend = kcs_builtin_backends[b];
    if (!*backend) {
        fprintf(stderr, "kcs apply: no backend '%s' in this build\n", backend_name);
        return 0;
    }
    *kernel = kcs_backend_find_kernel(*backend, p->c->op, p->c->dtype, kernel_name);
    if (!*kernel) {
        fprintf(stderr, "kcs apply: %s has no kernel %s for %s %s\n", backend_name, kernel_name ? kernel_name : "",
                p->c->op, kcs_dtype_name(p->c->dtype));
        return 0;
    }
    return 1;
}

/* Opens device index of a backend; returns 0 with the reason printed when it cannot. */
static int open_device(const kcs_backend *backend, int index, kcs_device **device, kcs_device_info *info)
{
    kcs_error err = {{0}};
    int count = 0;
    if (backend->device_count(&count, &err) != KCS_OK || index >= count ||
        backend->open(index, device, info, &err) != KCS_OK) {
        fprintf(stderr, "kcs apply: %s device %d: %s\n", backend->name, index,
                err.message[0] ? err.message : "no such device");
        return 0;
    }
    return 1;
}

/* Writes each output as output_dir/<output>.npy; returns 0, or 2 when one could not be written. */
static int write_outputs(const kcs_prepared_case *p, const kcs_run_result *result, const char *output_dir)
{
    int status = 0;
    for (int o = 0; o < p->layout.output_count; o++) {
        const kcs_array_spec *spec = &p->layout.outputs[o];
        char path[4200];
        kcs_error err = {{0}};
        snprintf(path, sizeof path, "%s/%s.npy", output_dir, spec->name);
        if (kcs_make_directories(output_dir, &err) != KCS_OK ||
            kcs_npy_write(path, spec->dtype, spec->ndim, spec->shape, result->actual[o], &err) != KCS_OK) {
            fprintf(stderr, "kcs apply: %s\n", err.message);
            status = 2;
        } else {
            printf("wrote %s\n", path);
        }
    }
    return status;
}

int kcs_apply_prepared(const kcs_given *g, const kcs_prepared_case *p, const char *backend_name, int device_index,
                       const char *kernel_name, const char *output_dir)
{
    int check = g->expected_count > 0;
    const char *errors_dir = g->errors_dir;
    const kcs_backend *backend;
    const kcs_kernel *kernel;
    kcs_device *device;
    kcs_device_info info;
    if (!find_kernel(p, backend_name, kernel_name, &backend, &kernel) ||
        !open_device(backend, device_index, &device, &info))
        return 2;
    kcs_run_options options = {.keep_outputs = 1};
    kcs_run_result result;
    kcs_run_on_device(p, backend, device, &info, kernel, &options, &result);
    backend->close(device);
    if (result.outcome == KCS_OUTCOME_ERROR || result.outcome == KCS_OUTCOME_SKIP) {
        fprintf(stderr, "kcs apply: %s %s on %s: %s\n", kcs_outcome_name(result.outcome), kernel->variant,
                info.name, result.message);
        kcs_run_result_free(&result);
        return 2;
    }
    int status = write_outputs(p, &result, output_dir);
    printf("ran %s %s on %s:%d (%s), kernel %s\n", p->c->op, kcs_dtype_name(p->c->dtype), backend_name,
           device_index, info.name, kernel->variant);
    if (!check)
        printf("no expected values given: nothing checked\n");
    else if (!kcs_print_check(g, p, &result.check, result.message) && status == 0)
        status = 1;
    if (check && result.outcome == KCS_OUTCOME_FAIL && result.explanation.text[0])
        printf("explained: %s\n", result.explanation.text);
    if (check && errors_dir) {
        int written = kcs_write_errors(p, result.actual, errors_dir, "apply");
        status = written != KCS_EXIT_PASSED ? written : status;
    }
    kcs_run_result_free(&result);
    return status;
}
