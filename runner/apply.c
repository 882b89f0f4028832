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

typedef struct {
    char *name, *file;
} named_file;

int kcs_command_apply(int argc, char **argv)
{
    if (argc < 3 || argv[2][0] == '-') {
        fputs(apply_usage, argc >= 3 && strcmp(argv[2], "--help") == 0 ? stdout : stderr);
        return argc >= 3 && strcmp(argv[2], "--help") == 0 ? 0 : 2;
    }
    kcs_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.op, sizeof c.op, "%s", argv[2]);
    snprintf(c.name, sizeof c.name, "apply/%s", argv[2]);
    snprintf(c.file, sizeof c.file, "(command line)");
    c.expect = KCS_EXPECT_GOLDEN;
    named_file inputs[KCS_MAX_INPUTS], expected[KCS_MAX_OUTPUTS];
    int input_count = 0, expected_count = 0, device_index = 0;
    const char *backend_name = "reference", *kernel_name = NULL, *output_dir = "kcs-apply";
    const char *dtype_name = NULL;
    static const struct option options[] = {
        {"dtype", required_argument, 0, 't'},  {"size", required_argument, 0, 's'},
        {"param", required_argument, 0, 'p'},  {"input", required_argument, 0, 'i'},
        {"expected", required_argument, 0, 'e'}, {"backend", required_argument, 0, 'b'},
        {"device", required_argument, 0, 'd'}, {"kernel", required_argument, 0, 'k'},
        {"output-dir", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0}};
    optind = 3;
    for (int option; (option = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        char *name, *value, *end;
        switch (option) {
        case 't': dtype_name = optarg; break;
        case 's':
            if (!split_pair(optarg, &name, &value) || c.size_count == KCS_MAX_SIZES) {
                fprintf(stderr, "kcs apply: --size needs NAME=VALUE\n");
                return 2;
            }
            snprintf(c.sizes[c.size_count].name, sizeof c.sizes[0].name, "%s", name);
            c.sizes[c.size_count].value = strtod(value, &end);
            if (*end || c.sizes[c.size_count].value < 0) {
                fprintf(stderr, "kcs apply: size %s=%s is not a whole number >= 0\n", name, value);
                return 2;
            }
            c.size_count++;
            break;
        case 'p':
            if (!split_pair(optarg, &name, &value) || c.param_count == KCS_MAX_PARAMS) {
                fprintf(stderr, "kcs apply: --param needs NAME=VALUE\n");
                return 2;
            }
            snprintf(c.params[c.param_count].name, sizeof c.params[0].name, "%s", name);
            snprintf(c.params[c.param_count].text, sizeof c.params[0].text, "%s", value);
            c.param_count++;
            break;
        case 'i':
        case 'e': {
            named_file *list = option == 'i' ? inputs : expected;
            int *count = option == 'i' ? &input_count : &expected_count;
            if (!split_pair(optarg, &name, &value) || *count == (option == 'i' ? KCS_MAX_INPUTS : KCS_MAX_OUTPUTS)) {
                fprintf(stderr, "kcs apply: --%s needs NAME=FILE.npy\n", option == 'i' ? "input" : "expected");
                return 2;
            }
            list[*count].name = name;
            list[*count].file = value;
            (*count)++;
            break;
        }
        case 'b': backend_name = optarg; break;
        case 'd':
            device_index = (int)strtol(optarg, &end, 10);
            if (*end || device_index < 0) {
                fprintf(stderr, "kcs apply: --device needs an index >= 0\n");
                return 2;
            }
            break;
        case 'k': kernel_name = optarg; break;
        case 'o': output_dir = optarg; break;
        case 'h': fputs(apply_usage, stdout); return 0;
        default: fputs(apply_usage, stderr); return 2;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "kcs apply: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (input_count == 0) {
        fprintf(stderr, "kcs apply: give the op's inputs with --input NAME=FILE.npy\n");
        return 2;
    }

    /* Read every array first: the dtype may come from the first input. */
    kcs_npy_array input_arrays[KCS_MAX_INPUTS], expected_arrays[KCS_MAX_OUTPUTS];
    memset(input_arrays, 0, sizeof input_arrays);
    memset(expected_arrays, 0, sizeof expected_arrays);
    kcs_prepared_case p;
    memset(&p, 0, sizeof p);
    kcs_error err = {{0}};
    int status = 2;
    for (int i = 0; i < input_count; i++)
        if (kcs_npy_read(inputs[i].file, &input_arrays[i], &err) != KCS_OK)
            goto done;
    for (int o = 0; o < expected_count; o++)
        if (kcs_npy_read(expected[o].file, &expected_arrays[o], &err) != KCS_OK)
            goto done;
    c.dtype = dtype_name ? kcs_dtype_from_name(dtype_name) : input_arrays[0].dtype;
    if (c.dtype == KCS_DTYPE_NONE) {
        kcs_fail(&err, KCS_ERROR, "unknown dtype '%s'", dtype_name);
        goto done;
    }
    for (int i = 0; i < input_count; i++) {
        snprintf(c.inputs[i].name, sizeof c.inputs[i].name, "%s", inputs[i].name);
        snprintf(c.inputs[i].distribution.name, sizeof c.inputs[i].distribution.name, "constant");
    }
    c.input_count = input_count;
    if (kcs_prepare_layout(&c, &p, &err) != KCS_OK)
        goto done;
    for (int i = 0; i < p.layout.input_count; i++) {
        const kcs_array_spec *spec = &p.layout.inputs[i];
        int given = -1;
        for (int j = 0; j < input_count; j++)
            if (strcmp(inputs[j].name, spec->name) == 0)
                given = j;
        char need[64], have[64];
        format_shape(spec->ndim, spec->shape, need, sizeof need);
        format_shape(input_arrays[given].ndim, input_arrays[given].shape, have, sizeof have);
        if (input_arrays[given].dtype != spec->dtype || !same_shape(&input_arrays[given], spec)) {
            kcs_fail(&err, KCS_ERROR, "input %s: %s holds %s of shape %s, but %s with these sizes needs %s of shape %s",
                     spec->name, inputs[given].file, kcs_dtype_name(input_arrays[given].dtype), have, c.op,
                     kcs_dtype_name(spec->dtype), need);
            goto done;
        }
        p.inputs[i] = input_arrays[given].data;
        input_arrays[given].data = NULL;
    }
    if (expected_count && expected_count != p.layout.output_count) {
        kcs_fail(&err, KCS_ERROR, "give --expected for every output of %s or for none", c.op);
        goto done;
    }
    for (int o = 0; o < p.layout.output_count; o++) {
        const kcs_array_spec *spec = &p.layout.outputs[o];
        size_t count = p.sizes.outputs[o].elements;
        p.expected[o].values = calloc(count ? count : 1, sizeof(double));
        p.expected[o].bounds = calloc(count ? count : 1, sizeof(double));
        if (!p.expected[o].values || !p.expected[o].bounds) {
            kcs_fail(&err, KCS_ERROR, "out of memory");
            goto done;
        }
        if (!expected_count)
            continue;
        int given = -1;
        for (int j = 0; j < expected_count; j++)
            if (strcmp(expected[j].name, spec->name) == 0)
                given = j;
        if (given < 0) {
            kcs_fail(&err, KCS_ERROR, "no --expected for output %s", spec->name);
            goto done;
        }
        const kcs_npy_array *e = &expected_arrays[given];
        char need[64], have[64];
        format_shape(spec->ndim, spec->shape, need, sizeof need);
        format_shape(e->ndim, e->shape, have, sizeof have);
        if (!kcs_dtype_is_float(e->dtype) || !same_shape(e, spec)) {
            kcs_fail(&err, KCS_ERROR, "expected %s: %s holds %s of shape %s; it must be floating point of shape %s",
                     spec->name, expected[given].file, kcs_dtype_name(e->dtype), have, need);
            goto done;
        }
        for (size_t k = 0; k < count; k++)
            p.expected[o].values[k] = kcs_load_element(e->data, e->dtype, k);
        p.expected[o].count = count;
    }
    if (expected_count && p.op->bounds(&p.args, p.inputs, p.expected, &err) != KCS_OK)
        goto done;
    snprintf(p.expected_from, sizeof p.expected_from, "%s", expected_count ? "files" : "none");

    status = kcs_apply_prepared(&p, backend_name, device_index, kernel_name, output_dir, expected_count > 0);
done:
    if (status == 2 && err.message[0])
        fprintf(stderr, "kcs apply: %s\n", err.message);
    for (int i = 0; i < KCS_MAX_INPUTS; i++)
        kcs_npy_free(&input_arrays[i]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++)
        kcs_npy_free(&expected_arrays[o]);
    kcs_prepared_case_free(&p);
    return status;
}

int kcs_apply_prepared(const kcs_prepared_case *p, const char *backend_name, int device_index,
                       const char *kernel_name, const char *output_dir, int check)
{
    const kcs_backend *backend = NULL;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++)
        if (strcmp(kcs_builtin_backends[b]->name, backend_name) == 0)
            backend = kcs_builtin_backends[b];
    if (!backend) {
        fprintf(stderr, "kcs apply: no backend '%s' in this build\n", backend_name);
        return 2;
    }
    const kcs_kernel *kernel = kcs_backend_find_kernel(backend, p->c->op, p->c->dtype, kernel_name);
    if (!kernel) {
        fprintf(stderr, "kcs apply: %s has no kernel %s for %s %s\n", backend_name,
                kernel_name ? kernel_name : "", p->c->op, kcs_dtype_name(p->c->dtype));
        return 2;
    }
    kcs_error err = {{0}};
    int count = 0;
    kcs_device *device;
    kcs_device_info info;
    if (backend->device_count(&count, &err) != KCS_OK || device_index >= count ||
        backend->open(device_index, &device, &info, &err) != KCS_OK) {
        fprintf(stderr, "kcs apply: %s device %d: %s\n", backend_name, device_index,
                err.message[0] ? err.message : "no such device");
        return 2;
    }
    kcs_run_options options = {.keep_outputs = 1};
    kcs_run_result result;
    kcs_run_on_device(p, backend, device, &info, kernel, &options, &result);
    backend->close(device);
    int status = 0;
    if (result.outcome == KCS_OUTCOME_ERROR || result.outcome == KCS_OUTCOME_SKIP) {
        fprintf(stderr, "kcs apply: %s %s on %s: %s\n", kcs_outcome_name(result.outcome), kernel->variant,
                info.name, result.message);
        kcs_run_result_free(&result);
        return 2;
    }
    for (int o = 0; o < p->layout.output_count; o++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s.npy", output_dir, p->layout.outputs[o].name);
        if (kcs_make_directories(output_dir, &err) != KCS_OK ||
            kcs_npy_write(path, p->layout.outputs[o].dtype, p->layout.outputs[o].ndim,
                          p->layout.outputs[o].shape, result.actual[o], &err) != KCS_OK) {
            fprintf(stderr, "kcs apply: %s\n", err.message);
            status = 2;
        } else {
            printf("wrote %s\n", path);
        }
    }
    printf("ran %s %s on %s:%d (%s), kernel %s\n", p->c->op, kcs_dtype_name(p->c->dtype), backend_name,
           device_index, info.name, kernel->variant);
    if (check) {
        const kcs_check_result *r = &result.check;
        if (r->worst_output >= 0)
            printf("worst element: %s[%zu] expected %.17g, got %.17g, error %.3g, bound %.3g\n",
                   p->layout.outputs[r->worst_output].name, r->worst_index, r->worst_expected,
                   r->worst_actual, r->worst_error, r->worst_bound);
        printf("%s: %zu elements checked, %.3g of the bound used%s%s\n", r->passed ? "PASS" : "FAIL",
               r->checked, r->fraction, r->passed ? "" : "; ", r->passed ? "" : result.message);
        if (!r->passed && status == 0)
            status = 1;
    } else {
        printf("no expected values given: nothing checked\n");
    }
    kcs_run_result_free(&result);
    return status;
}
