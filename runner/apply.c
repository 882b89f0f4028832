/* apply.c: `kcs apply`, one op on one backend and device, on inputs given
 * as .npy files, writing the outputs as .npy; with expected values given,
 * it also checks them against the op's derived bound. This is how a failure
 * is replayed outside the suite, and how a kernel developer runs an op on
 * data of their own (docs/take-away.md shows the round trip with numpy).
 *
 * Every given array is checked against the op before anything runs: its
 * dtype and shape must be what the op needs for the given sizes; the .npy
 * reader refuses Fortran order, truncated files and unsupported dtypes.
 * Nothing is converted silently (expected values are widened to double,
 * which is exact).
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "npy.h"
#include "runner.h"
#include "take_away.h"

static const char apply_usage[] =
    "usage: kcs apply OP --input NAME=FILE.npy ... [options]\n"
    "\n"
    "Runs OP on one backend and device on the given inputs and writes each output\n"
    "as OUTPUT-DIR/<output>.npy. With --expected for every output, checks them\n"
    "within the op's derived bound and prints the worst element.\n"
    "\n"
    "  --dtype T            the case dtype (default: the first input's dtype)\n"
    "  --size NAME=VALUE    a size of the op (repeat for each: --size n=7)\n"
    "  --param NAME=VALUE   a parameter of the op (--param transa=T)\n"
    "  --input NAME=FILE    an input of the op, as .npy (repeat for each input)\n"
    "  --expected NAME=FILE expected values of an output, as .npy (any float dtype)\n"
    "  --backend NAME       backend (default: reference)\n"
    "  --device N           device index of that backend (default: 0)\n"
    "  --kernel VARIANT     kernel variant (default: the backend's first for OP and dtype)\n"
    "  --output-dir DIR     where outputs go (default: kcs-apply)\n"
    "\n"
    "exit status: 0 ran (and passed, if checked), 1 outside the bound, 2 bad input or usage\n";

/* Splits "name=value"; returns 0 if there is no '='. */
static int split_pair(char *text, char **name, char **value)
{
    char *equals = strchr(text, '=');
    if (!equals || equals == text)
        return 0;
    *equals = '\0';
    *name = text;
    *value = equals + 1;
    return 1;
}

static void format_shape(int ndim, const size_t *shape, char *text, size_t size)
{
    snprintf(text, size, "(");
    for (int d = 0; d < ndim; d++) {
        size_t length = strlen(text);
        snprintf(text + length, size - length, d ? ", %zu" : "%zu", shape[d]);
    }
    size_t length = strlen(text);
    snprintf(text + length, size - length, ndim == 1 ? ",)" : ")");
}

static int same_shape(const kcs_npy_array *array, const kcs_array_spec *spec)
{
    if (array->ndim != spec->ndim)
        return 0;
    for (int d = 0; d < spec->ndim; d++)
        if (array->shape[d] != spec->shape[d])
            return 0;
    return 1;
}

/* An array given on the command line as NAME=FILE.npy. */
typedef struct {
    char *name, *file;
} named_file;

/* What `kcs apply` was asked to do. */
typedef struct {
    kcs_case c; /* the op, dtype, sizes and parameters, as a case */
    named_file inputs[KCS_MAX_INPUTS];
    int input_count;
    named_file expected[KCS_MAX_OUTPUTS];
    int expected_count;
    const char *dtype_name; /* NULL: the first input's dtype */
    const char *backend_name, *kernel_name, *output_dir;
    int device_index;
} apply_request;

/* Parsing goes on, or `kcs apply` ends with an exit status (0, 2). */
enum { keep_going = -1 };

static int take_size(char *text, kcs_case *c)
{
    char *name, *value, *end;
    if (!split_pair(text, &name, &value) || c->size_count == KCS_MAX_SIZES) {
        fprintf(stderr, "kcs apply: --size needs NAME=VALUE\n");
        return 2;
    }
    for (int i = 0; i < c->size_count; i++)
        if (strcmp(c->sizes[i].name, name) == 0) {
            fprintf(stderr, "kcs apply: size %s was given twice\n", name);
            return 2;
        }
    snprintf(c->sizes[c->size_count].name, sizeof c->sizes[0].name, "%s", name);
    c->sizes[c->size_count].value = strtod(value, &end);
    double size = c->sizes[c->size_count].value;
    if (end == value || *end || !(size >= 0) || size != floor(size) || size > 0x1p53) {
        fprintf(stderr, "kcs apply: size %s=%s is not a whole number >= 0\n", name, value);
        return 2;
    }
    c->size_count++;
    return keep_going;
}

static int take_param(char *text, kcs_case *c)
{
    char *name, *value;
    if (!split_pair(text, &name, &value) || c->param_count == KCS_MAX_PARAMS) {
        fprintf(stderr, "kcs apply: --param needs NAME=VALUE\n");
        return 2;
    }
    for (int i = 0; i < c->param_count; i++)
        if (strcmp(c->params[i].name, name) == 0) {
            fprintf(stderr, "kcs apply: parameter %s was given twice\n", name);
            return 2;
        }
    snprintf(c->params[c->param_count].name, sizeof c->params[0].name, "%s", name);
    snprintf(c->params[c->param_count].text, sizeof c->params[0].text, "%s", value);
    c->param_count++;
    return keep_going;
}

/* --input (option 'i') or --expected ('e'). */
static int take_named_file(int option, char *text, apply_request *r)
{
    named_file *list = option == 'i' ? r->inputs : r->expected;
    int *count = option == 'i' ? &r->input_count : &r->expected_count;
    char *name, *value;
    if (!split_pair(text, &name, &value) || *count == (option == 'i' ? KCS_MAX_INPUTS : KCS_MAX_OUTPUTS)) {
        fprintf(stderr, "kcs apply: --%s needs NAME=FILE.npy\n", option == 'i' ? "input" : "expected");
        return 2;
    }
    for (int i = 0; i < *count; i++)
        if (strcmp(list[i].name, name) == 0) {
            fprintf(stderr, "kcs apply: --%s %s was given twice\n", option == 'i' ? "input" : "expected", name);
            return 2;
        }
    list[*count].name = name;
    list[*count].file = value;
    (*count)++;
    return keep_going;
}

static int take_device_index(const char *text, apply_request *r)
{
    char *end;
    long index = strtol(text, &end, 10);
    r->device_index = (int)index;
    if (end == text || *end || index < 0 || index > 1000000) {
        fprintf(stderr, "kcs apply: --device needs an index >= 0\n");
        return 2;
    }
    return keep_going;
}

static const struct option apply_options[] = {
    {"dtype", required_argument, 0, 't'},  {"size", required_argument, 0, 's'},
    {"param", required_argument, 0, 'p'},  {"input", required_argument, 0, 'i'},
    {"expected", required_argument, 0, 'e'}, {"backend", required_argument, 0, 'b'},
    {"device", required_argument, 0, 'd'}, {"kernel", required_argument, 0, 'k'},
    {"output-dir", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* Applies one option (getopt_long's code and argument) to the request. */
static int take_apply_option(int option, char *value, apply_request *r)
{
    switch (option) {
    case 't': r->dtype_name = value; return keep_going;
    case 's': return take_size(value, &r->c);
    case 'p': return take_param(value, &r->c);
    case 'i':
    case 'e': return take_named_file(option, value, r);
    case 'b': r->backend_name = value; return keep_going;
    case 'd': return take_device_index(value, r);
    case 'k': r->kernel_name = value; return keep_going;
    case 'o': r->output_dir = value; return keep_going;
    case 'h': fputs(apply_usage, stdout); return 0;
    default: fputs(apply_usage, stderr); return 2;
    }
}

/* Parses `kcs apply OP [options]` into r; returns keep_going or the exit status. */
static int parse_apply(int argc, char **argv, apply_request *r)
{
    if (argc < 3 || argv[2][0] == '-') {
        int help = argc >= 3 && strcmp(argv[2], "--help") == 0;
        fputs(apply_usage, help ? stdout : stderr);
        return help ? 0 : 2;
    }
    memset(r, 0, sizeof *r);
    snprintf(r->c.op, sizeof r->c.op, "%s", argv[2]);
    snprintf(r->c.name, sizeof r->c.name, "apply/%s", argv[2]);
    snprintf(r->c.file, sizeof r->c.file, "(command line)");
    r->c.expect = KCS_EXPECT_GOLDEN;
    r->backend_name = "reference";
    r->output_dir = "kcs-apply";
    optind = 3;
    for (int option; (option = getopt_long(argc, argv, "", apply_options, NULL)) != -1;) {
        int status = take_apply_option(option, optarg, r);
        if (status != keep_going)
            return status;
    }
    if (optind != argc) {
        fprintf(stderr, "kcs apply: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (r->input_count == 0) {
        fprintf(stderr, "kcs apply: give the op's inputs with --input NAME=FILE.npy\n");
        return 2;
    }
    return keep_going;
}

/* The arrays read from the given files, in the order given. */
typedef struct {
    kcs_npy_array inputs[KCS_MAX_INPUTS], expected[KCS_MAX_OUTPUTS];
} given_arrays;

/* Reads every given array: the dtype may come from the first input. */
static kcs_status read_given(const apply_request *r, given_arrays *arrays, kcs_error *err)
{
    for (int i = 0; i < r->input_count; i++)
        if (kcs_npy_read(r->inputs[i].file, &arrays->inputs[i], err) != KCS_OK)
            return KCS_ERROR;
    for (int o = 0; o < r->expected_count; o++)
        if (kcs_npy_read(r->expected[o].file, &arrays->expected[o], err) != KCS_OK)
            return KCS_ERROR;
    return KCS_OK;
}

/* Completes the case from the given inputs (dtype, input names) and works
 * out its layout. */
static kcs_status complete_case(apply_request *r, const given_arrays *arrays, kcs_prepared_case *p,
                                 kcs_error *err)
{
    kcs_case *c = &r->c;
    c->dtype = r->dtype_name ? kcs_dtype_from_name(r->dtype_name) : arrays->inputs[0].dtype;
    if (c->dtype == KCS_DTYPE_NONE)
        return kcs_fail(err, KCS_ERROR, "unknown dtype '%s'", r->dtype_name);
    for (int i = 0; i < r->input_count; i++) {
        snprintf(c->inputs[i].name, sizeof c->inputs[i].name, "%s", r->inputs[i].name);
        snprintf(c->inputs[i].distribution.name, sizeof c->inputs[i].distribution.name, "constant");
    }
    c->input_count = r->input_count;
    return kcs_prepare_layout(c, p, err);
}

/* The index of the given file called name, or -1. */
static int given_index(const named_file *files, int count, const char *name)
{
    int given = -1;
    for (int j = 0; j < count; j++)
        if (strcmp(files[j].name, name) == 0)
            given = j;
    return given;
}

/* Checks each given input against the op's layout and hands its data to the case. */
static kcs_status take_inputs(const apply_request *r, given_arrays *arrays, kcs_prepared_case *p, kcs_error *err)
{
    for (int i = 0; i < p->layout.input_count; i++) {
        const kcs_array_spec *spec = &p->layout.inputs[i];
        int given = given_index(r->inputs, r->input_count, spec->name);
        kcs_npy_array *array = &arrays->inputs[given];
        char need[64], have[64];
        format_shape(spec->ndim, spec->shape, need, sizeof need);
        format_shape(array->ndim, array->shape, have, sizeof have);
        if (array->dtype != spec->dtype || !same_shape(array, spec))
            return kcs_fail(err, KCS_ERROR,
                            "input %s: %s holds %s of shape %s, but %s with these sizes needs %s of shape %s",
                            spec->name, r->inputs[given].file, kcs_dtype_name(array->dtype), have, r->c.op,
                            kcs_dtype_name(spec->dtype), need);
        p->inputs[i] = array->data;
        array->data = NULL;
    }
    return KCS_OK;
}

/* Fills output o's expected values from its given file, widened to double. */
static kcs_status take_expected_output(const apply_request *r, const given_arrays *arrays, kcs_prepared_case *p,
                                       int o, kcs_error *err)
{
    const kcs_array_spec *spec = &p->layout.outputs[o];
    int given = given_index(r->expected, r->expected_count, spec->name);
    if (given < 0)
        return kcs_fail(err, KCS_ERROR, "no --expected for output %s", spec->name);
    const kcs_npy_array *e = &arrays->expected[given];
    char need[64], have[64];
    format_shape(spec->ndim, spec->shape, need, sizeof need);
    format_shape(e->ndim, e->shape, have, sizeof have);
    if (!kcs_dtype_is_float(e->dtype) || !same_shape(e, spec))
        return kcs_fail(err, KCS_ERROR, "expected %s: %s holds %s of shape %s; it must be floating point of shape %s",
                        spec->name, r->expected[given].file, kcs_dtype_name(e->dtype), have, need);
    size_t count = p->sizes.outputs[o].elements;
    for (size_t k = 0; k < count; k++)
        p->expected[o].values[k] = kcs_load_element(e->data, e->dtype, k);
    p->expected[o].count = count;
    return KCS_OK;
}

/* Allocates every output's expected values and bounds and, when expected
 * files were given (for every output or none), fills them and the bounds. */
static kcs_status take_expected(const apply_request *r, const given_arrays *arrays, kcs_prepared_case *p,
                                kcs_error *err)
{
    if (r->expected_count && r->expected_count != p->layout.output_count)
        return kcs_fail(err, KCS_ERROR, "give --expected for every output of %s or for none", r->c.op);
    for (int o = 0; o < p->layout.output_count; o++) {
        size_t count = p->sizes.outputs[o].elements;
        p->expected[o].values = calloc(count ? count : 1, sizeof(double));
        p->expected[o].bounds = calloc(count ? count : 1, sizeof(double));
        if (!p->expected[o].values || !p->expected[o].bounds)
            return kcs_fail(err, KCS_ERROR, "out of memory");
        if (r->expected_count && take_expected_output(r, arrays, p, o, err) != KCS_OK)
            return KCS_ERROR;
    }
    if (r->expected_count && p->op->bounds(&p->args, p->inputs, p->expected, err) != KCS_OK)
        return KCS_ERROR;
    snprintf(p->expected_from, sizeof p->expected_from, "%s", r->expected_count ? "files" : "none");
    return KCS_OK;
}

int kcs_command_apply(int argc, char **argv)
{
    apply_request r;
    int status = parse_apply(argc, argv, &r);
    if (status != keep_going)
        return status;
    given_arrays arrays;
    memset(&arrays, 0, sizeof arrays);
    kcs_prepared_case p;
    memset(&p, 0, sizeof p);
    kcs_error err = {{0}};
    status = 2;
    if (read_given(&r, &arrays, &err) == KCS_OK && complete_case(&r, &arrays, &p, &err) == KCS_OK &&
        take_inputs(&r, &arrays, &p, &err) == KCS_OK && take_expected(&r, &arrays, &p, &err) == KCS_OK)
        status = kcs_apply_prepared(&p, r.backend_name, r.device_index, r.kernel_name, r.output_dir,
                                    r.expected_count > 0);
    if (status == 2 && err.message[0])
        fprintf(stderr, "kcs apply: %s\n", err.message);
    for (int i = 0; i < KCS_MAX_INPUTS; i++)
        kcs_npy_free(&arrays.inputs[i]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++)
        kcs_npy_free(&arrays.expected[o]);
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

/* Prints the worst element and the verdict of the check; returns whether it passed. */
static int print_check(const kcs_prepared_case *p, const kcs_run_result *result)
{
    const kcs_check_result *r = &result->check;
    if (r->worst_output >= 0)
        printf("worst element: %s[%zu] expected %.17g, got %.17g, error %.3g, bound %.3g\n",
               p->layout.outputs[r->worst_output].name, r->worst_index, r->worst_expected, r->worst_actual,
               r->worst_error, r->worst_bound);
    printf("%s: %zu elements checked, %.3g of the bound used%s%s\n", r->passed ? "PASS" : "FAIL", r->checked,
           r->fraction, r->passed ? "" : "; ", r->passed ? "" : result->message);
    return r->passed;
}

int kcs_apply_prepared(const kcs_prepared_case *p, const char *backend_name, int device_index,
                       const char *kernel_name, const char *output_dir, int check)
{
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
    else if (!print_check(p, &result) && status == 0)
        status = 1;
    kcs_run_result_free(&result);
    return status;
}
