/* check.c: `kcs check`, outputs computed anywhere (PyTorch, Triton, JAX,
 * another repository's kernel) checked against kcs's oracle and the op's
 * derived bound, for inputs given as .npy files, without running a kernel
 * (docs/take-away.md shows it on a PyTorch softmax and a NumPy matmul).
 *
 * It is a command of its own rather than `kcs apply --actual`: apply runs a
 * kernel, and its --backend, --device, --kernel and --output-dir would mean
 * nothing here, while check needs what apply does not (the oracle as the
 * default source of expected values, --flush-to-zero). The arrays are read
 * and checked by given_arrays.c, which apply shares; the comparison is the
 * one every run makes (kcs_compare_outputs: assign's near-tie rule for its
 * indices, the trivial-answer notes).
 *
 * Exit status as `kcs run`'s: 0 passed, 1 failed, 2 usage or bad input.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

static const char check_usage[] =
    "usage: kcs check OP --input NAME=FILE.npy ... --actual NAME=FILE.npy ... [options]\n"
    "\n"
    "Checks outputs computed elsewhere against the op's oracle (or given expected\n"
    "values) within its derived bound, and prints the worst element; no kernel runs.\n"
    "\n"
    "  --input NAME=FILE    an input of the op, as .npy (repeat for each input)\n"
    "  --actual NAME=FILE   an output to check, as .npy (repeat for each output): the\n"
    "                       output's dtype (int32 or int64 for an integer output)\n"
    "  --size NAME=VALUE    a size of the op; needed only where no given array's\n"
    "                       shape says it, and checked against them\n"
    "  --param NAME=VALUE   a parameter of the op (--param transa=T)\n"
    "  --dtype T            the case dtype (default: the dtype of the op's first input)\n"
    "  --expected NAME=FILE expected values of an output instead of the oracle's (for\n"
    "                       every output or none; any float dtype, int32 or int64 for\n"
    "                       an integer output)\n"
    "  --errors DIR         write each output's per-element error and bound as\n"
    "                       DIR/error.<output>.npy and DIR/bound.<output>.npy (float64)\n"
    "  --overwrite          replace --errors files that exist (never a file given)\n"
    "  --flush-to-zero      the outputs come from f32 arithmetic that flushes subnormals\n"
    "                       (-ftz, an OpenCL device without CL_FP_DENORM): ops that\n"
    "                       allow it (gemm) use their flushing bounds\n"
    "  --explain            list how every arithmetic model of the op fits the outputs\n"
    "                       (a failure is always explained in one line; a pass never:\n"
    "                       docs/explaining.md)\n"
    "  --model NAME         judge against the model NAME (its values and its own bound)\n"
    "                       instead of the op's definition: `--model list` lists them\n"
    "\n"
    "exit status: 0 passed, 1 outside the bound, 2 bad input or usage\n";

/* What `kcs check` was asked to do. */
typedef struct {
    kcs_given given;
    int flushing;      /* --flush-to-zero */
    int explain;       /* --explain */
    const char *model; /* --model NAME, or NULL */
} check_request;

static const struct option check_options[] = {
    {"dtype", required_argument, 0, KCS_GIVEN_DTYPE},       {"size", required_argument, 0, KCS_GIVEN_SIZE},
    {"param", required_argument, 0, KCS_GIVEN_PARAM},       {"input", required_argument, 0, KCS_GIVEN_INPUT},
    {"expected", required_argument, 0, KCS_GIVEN_EXPECTED}, {"actual", required_argument, 0, KCS_GIVEN_ACTUAL},
    {"errors", required_argument, 0, KCS_GIVEN_ERRORS},     {"flush-to-zero", no_argument, 0, 'f'},
    {"overwrite", no_argument, 0, KCS_GIVEN_OVERWRITE},     {"help", no_argument, 0, 'h'},
    {"explain", no_argument, 0, 'x'},                       {"model", required_argument, 0, 'm'},
    {0, 0, 0, 0}};

/* Parses `kcs check OP [options]` into r; returns KCS_GIVEN_KEEP_GOING or the exit status. */
static int parse_check(int argc, char **argv, check_request *r)
{
    if (argc < 3 || argv[2][0] == '-') {
        int help = argc >= 3 && strcmp(argv[2], "--help") == 0;
        fputs(check_usage, help ? stdout : stderr);
        return help ? KCS_EXIT_PASSED : KCS_EXIT_USAGE;
    }
    memset(r, 0, sizeof *r);
    kcs_given_init(&r->given, "check", argv[2]);
    optind = 3;
    for (int option; (option = getopt_long(argc, argv, "", check_options, NULL)) != -1;) {
        int status = KCS_GIVEN_KEEP_GOING;
        if (option == 'f')
            r->flushing = 1;
        else if (option == 'x')
            r->explain = 1;
        else if (option == 'm')
            r->model = optarg;
        else if (option == 'h') {
            fputs(check_usage, stdout);
            fputc('\n', stdout);
            kcs_print_op_arrays("check", argv[2], stdout);
            status = KCS_EXIT_PASSED;
        }
        else if (option == '?')
            status = (fputs(check_usage, stderr), KCS_EXIT_USAGE);
        else
            status = kcs_take_given_option(option, optarg, &r->given);
        if (status != KCS_GIVEN_KEEP_GOING)
            return status;
    }
    if (optind != argc) {
        fprintf(stderr, "kcs check: unexpected argument '%s'\n", argv[optind]);
        return KCS_EXIT_USAGE;
    }
    if (r->model && strcmp(r->model, "list") == 0) {
        const kcs_op *op = kcs_find_op(argv[2]);
        if (!op) {
            fprintf(stderr, "kcs check: no op '%s'\n", argv[2]);
            return KCS_EXIT_USAGE;
        }
        for (int m = 0; op->models && op->models[m]; m++)
            printf("%-40s %s\n", op->models[m]->name, op->models[m]->description);
        if (!op->models || !op->models[0])
            printf("%s has no arithmetic models\n", op->name);
        return KCS_EXIT_PASSED;
    }
    if (r->model && r->given.expected_count) {
        fprintf(stderr, "kcs check: --model and --expected both say what to judge against: give one\n");
        return KCS_EXIT_USAGE;
    }
    if (r->given.input_count == 0 || r->given.actual_count == 0) {
        fprintf(stderr, "kcs check: give the op's inputs with --input NAME=FILE.npy and the outputs to check "
                        "with --actual NAME=FILE.npy\n");
        kcs_print_op_arrays("check", argv[2], stderr);
        return KCS_EXIT_USAGE;
    }
    return KCS_GIVEN_KEEP_GOING;
}

/* The sizes, as "m=7 n=5 k=3", for the line that says what was checked. */
static void format_sizes(const kcs_case *c, char *text, size_t size)
{
    text[0] = '\0';
    for (int s = 0; s < c->size_count; s++) {
        size_t length = strlen(text);
        snprintf(text + length, size - length, "%s%s=%.0f", s ? " " : "", c->sizes[s].name, c->sizes[s].value);
    }
}

/* Prints every model tried, as --explain asks: whether it fits, and how much of its bound the worst element used. */
static void print_models(const kcs_explanation *x)
{
    printf("models tried on %zu elements:\n", x->elements);
    for (int f = 0; f < x->tried; f++)
        printf("  %-4s %-38s %.3g of its bound, %zu elements outside: %s\n", x->fits[f].fits ? "fits" : "no",
               x->fits[f].model->name, x->fits[f].fraction, x->fits[f].outside, x->fits[f].model->description);
}

/* Judges the outputs against --model's values and bound instead of the op's; returns the exit status. */
static int check_against_model(const check_request *r, const kcs_prepared_case *p, void *const actual[])
{
    const kcs_model *model = kcs_find_model(p->op, r->model);
    if (!model) {
        char names[1024];
        kcs_model_names(p->op, names, sizeof names);
        fprintf(stderr, "kcs check: %s has no model '%s' (its models: %s)\n", p->op->name, r->model, names);
        return KCS_EXIT_USAGE;
    }
    if (model->applies && !model->applies(&p->args)) {
        fprintf(stderr, "kcs check: model %s does not apply to %s %s: it departs from nothing there\n",
                model->name, p->op->name, kcs_dtype_name(p->args.dtype));
        return KCS_EXIT_USAGE;
    }
    kcs_expected expected[KCS_MAX_OUTPUTS];
    kcs_error err = {{0}};
    if (kcs_model_expected(p, model, actual, p->expected, expected, &err) != KCS_OK) {
        fprintf(stderr, "kcs check: %s\n", err.message);
        return KCS_EXIT_USAGE;
    }
    kcs_check_result result;
    kcs_check_outputs(&p->layout, actual, expected, &result);
    char sizes[256];
    format_sizes(p->c, sizes, sizeof sizes);
    printf("checked %s %s (%s) against model %s: %s, within that model's own bound\n", p->c->op,
           kcs_dtype_name(p->c->dtype), sizes, model->name, model->description);
    int status = kcs_print_check(&r->given, p, &result, result.diagnosis) ? KCS_EXIT_PASSED : KCS_EXIT_FAILED;
    kcs_free_model_expected(expected);
    return status;
}

/* Compares, prints the verdict and writes the errors; returns the exit status. */
static int check_prepared(const check_request *r, const kcs_prepared_case *p, void *const actual[])
{
    if (r->model)
        return check_against_model(r, p, actual);
    kcs_check_result result;
    kcs_compare_outputs(p, p->expected, r->flushing, actual, &result);
    char sizes[256];
    format_sizes(p->c, sizes, sizeof sizes);
    printf("checked %s %s (%s) against %s%s\n", p->c->op, kcs_dtype_name(p->c->dtype), sizes,
           p->expected_given ? "the expected values given" : "the oracle",
           r->flushing && p->op->flushing_bounds ? ", with bounds that allow flush to zero" : "");
    int status = kcs_print_check(&r->given, p, &result, result.diagnosis) ? KCS_EXIT_PASSED : KCS_EXIT_FAILED;
    if (status == KCS_EXIT_FAILED && result.checked > 0) {
        kcs_explanation explanation;
        kcs_explain_failure(p, actual, p->expected, &explanation);
        printf("explained: %s\n", explanation.text);
        if (r->explain)
            print_models(&explanation);
    } else if (r->explain && status == KCS_EXIT_PASSED) {
        printf("not explained: the outputs are within the op's own bound, a pass whatever models they also fit\n");
    }
    if (r->given.errors_dir) {
        int written = kcs_write_errors(p, actual, r->given.errors_dir, "check");
        status = written != KCS_EXIT_PASSED ? written : status;
    }
    return status;
}

int kcs_command_check(int argc, char **argv)
{
    check_request r;
    int status = parse_check(argc, argv, &r);
    if (status != KCS_GIVEN_KEEP_GOING)
        return status;
    kcs_prepared_case p;
    kcs_error err = {{0}};
    void *actual[KCS_MAX_OUTPUTS] = {0};
    status = KCS_EXIT_USAGE;
    if (kcs_given_prepare(&r.given, &p, &err) == KCS_OK && kcs_given_actual(&r.given, &p, actual, &err) == KCS_OK &&
        kcs_given_expected(&r.given, &p, r.flushing, &err) == KCS_OK &&
        kcs_given_writes_allowed(&r.given, &p, NULL, &err) == KCS_OK)
        status = check_prepared(&r, &p, actual);
    else
        fprintf(stderr, "kcs check: %s\n", err.message);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++)
        free(actual[o]);
    kcs_given_free(&r.given);
    kcs_prepared_case_free(&p);
    return status;
}
