/* given_arrays.c: what `kcs apply` and `kcs check` share: an op's inputs,
 * expected values and actual outputs given on the command line as .npy
 * files (NAME=FILE.npy), turned into a prepared case (docs/take-away.md).
 *
 * Every given array is checked against the op before anything is computed:
 * its name must be one of the op's inputs or outputs, its dtype and shape
 * what the op needs. Sizes that are not given come from the shapes: the op's
 * layout is worked out once with a distinct stand-in value for every size,
 * so each dimension of each array names the size it is (a dimension that is
 * a product of sizes names none); a size given with --size that a shape
 * contradicts, or two shapes that disagree, are refused, naming the files.
 * Nothing is converted silently: expected values of floating outputs may be
 * any float dtype (widened to double, which is exact), and integer outputs
 * (assign's idx, reduce's count) take int32 or int64 (numpy's default
 * integer), within int32's range, for both expected and actual values.
 *
 * Messages use the command line's words (--input c=FILE.npy), not a case
 * file's ("input c: ...").
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"
#include "runner.h"
#include "take_away.h"

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

void kcs_given_init(kcs_given *g, const char *command, const char *op)
{
    memset(g, 0, sizeof *g);
    g->command = command;
    snprintf(g->c.op, sizeof g->c.op, "%s", op);
    snprintf(g->c.name, sizeof g->c.name, "%s/%s", command, op);
    snprintf(g->c.file, sizeof g->c.file, "(command line)");
    g->c.expect = KCS_EXPECT_GOLDEN;
}

static int take_size(kcs_given *g, char *text)
{
    kcs_case *c = &g->c;
    char *name, *value;
    if (!split_pair(text, &name, &value) || c->size_count == KCS_MAX_SIZES) {
        fprintf(stderr, "kcs %s: --size needs NAME=VALUE\n", g->command);
        return KCS_EXIT_USAGE;
    }
    for (int i = 0; i < c->size_count; i++)
        if (strcmp(c->sizes[i].name, name) == 0) {
            fprintf(stderr, "kcs %s: size %s was given twice\n", g->command, name);
            return KCS_EXIT_USAGE;
        }
    snprintf(c->sizes[c->size_count].name, sizeof c->sizes[0].name, "%s", name);
    char why[256];
    if (!kcs_parse_size(name, value, &c->sizes[c->size_count].value, why, sizeof why)) {
        fprintf(stderr, "kcs %s: --%s\n", g->command, why);
        return KCS_EXIT_USAGE;
    }
    c->size_count++;
    return KCS_GIVEN_KEEP_GOING;
}

static int take_param(kcs_given *g, char *text)
{
    kcs_case *c = &g->c;
    char *name, *value;
    if (!split_pair(text, &name, &value) || c->param_count == KCS_MAX_PARAMS) {
        fprintf(stderr, "kcs %s: --param needs NAME=VALUE\n", g->command);
        return KCS_EXIT_USAGE;
    }
    for (int i = 0; i < c->param_count; i++)
        if (strcmp(c->params[i].name, name) == 0) {
            fprintf(stderr, "kcs %s: parameter %s was given twice\n", g->command, name);
            return KCS_EXIT_USAGE;
        }
    snprintf(c->params[c->param_count].name, sizeof c->params[0].name, "%s", name);
    snprintf(c->params[c->param_count].text, sizeof c->params[0].text, "%s", value);
    c->param_count++;
    return KCS_GIVEN_KEEP_GOING;
}

/* --input, --expected or --actual: option is the option's name. */
static int take_named_file(kcs_given *g, const char *option, char *text, kcs_named_file *list, int *count,
                           int capacity)
{
    char *name, *value;
    if (!split_pair(text, &name, &value) || !value[0] || *count == capacity) {
        fprintf(stderr, "kcs %s: --%s needs NAME=FILE.npy%s\n", g->command, option,
                *count == capacity ? " (and no more of them than the op has)" : "");
        return KCS_EXIT_USAGE;
    }
    for (int i = 0; i < *count; i++)
        if (strcmp(list[i].name, name) == 0) {
            fprintf(stderr, "kcs %s: --%s %s was given twice\n", g->command, option, name);
            return KCS_EXIT_USAGE;
        }
    list[*count].name = name;
    list[*count].file = value;
    (*count)++;
    return KCS_GIVEN_KEEP_GOING;
}

int kcs_take_given_option(int option, char *value, kcs_given *g)
{
    switch (option) {
    case KCS_GIVEN_DTYPE: g->dtype_name = value; return KCS_GIVEN_KEEP_GOING;
    case KCS_GIVEN_SIZE: return take_size(g, value);
    case KCS_GIVEN_PARAM: return take_param(g, value);
    case KCS_GIVEN_INPUT:
        return take_named_file(g, "input", value, g->inputs, &g->input_count, KCS_MAX_INPUTS);
    case KCS_GIVEN_EXPECTED:
        return take_named_file(g, "expected", value, g->expected, &g->expected_count, KCS_MAX_OUTPUTS);
    case KCS_GIVEN_ACTUAL:
        return take_named_file(g, "actual", value, g->actual, &g->actual_count, KCS_MAX_OUTPUTS);
    case KCS_GIVEN_ERRORS: g->errors_dir = value; return KCS_GIVEN_KEEP_GOING;
    case KCS_GIVEN_OVERWRITE: g->overwrite = 1; return KCS_GIVEN_KEEP_GOING;
    default: return KCS_EXIT_USAGE;
    }
}

/* "(7, 5)", "(7,)" or "()". */
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

/* The index of the given file called name, or -1. */
static int given_index(const kcs_named_file *files, int count, const char *name)
{
    for (int j = 0; j < count; j++)
        if (strcmp(files[j].name, name) == 0)
            return j;
    return -1;
}

/* Reads every given array. */
static kcs_status read_given(kcs_given *g, kcs_error *err)
{
    for (int i = 0; i < g->input_count; i++)
        if (kcs_npy_read(g->inputs[i].file, &g->input_arrays[i], err) != KCS_OK)
            return KCS_ERROR;
    for (int o = 0; o < g->expected_count; o++)
        if (kcs_npy_read(g->expected[o].file, &g->expected_arrays[o], err) != KCS_OK)
            return KCS_ERROR;
    for (int o = 0; o < g->actual_count; o++)
        if (kcs_npy_read(g->actual[o].file, &g->actual_arrays[o], err) != KCS_OK)
            return KCS_ERROR;
    return KCS_OK;
}

/* names joined with ", " into text. */
static void join_names(const char *const *names, char *text, size_t size)
{
    text[0] = '\0';
    for (size_t i = 0; names[i]; i++) {
        size_t length = strlen(text);
        snprintf(text + length, size - length, "%s%s", i ? ", " : "", names[i]);
    }
}

static int in_list(const char *const *names, const char *name)
{
    for (size_t i = 0; names[i]; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

/* The op, and every given input named as the op names them, in its words. */
static kcs_status check_op_and_inputs(const kcs_given *g, const kcs_op **op, kcs_error *err)
{
    char known[512];
    *op = kcs_find_op(g->c.op);
    if (!*op) {
        known[0] = '\0';
        for (size_t i = 0; kcs_ops[i]; i++) {
            size_t length = strlen(known);
            snprintf(known + length, sizeof known - length, "%s%s", i ? ", " : "", kcs_ops[i]->name);
        }
        return kcs_fail(err, KCS_ERROR, "unknown op '%s' (known: %s)", g->c.op, known);
    }
    join_names((*op)->inputs, known, sizeof known);
    for (int i = 0; i < g->input_count; i++)
        if (!in_list((*op)->inputs, g->inputs[i].name))
            return kcs_fail(err, KCS_ERROR, "%s has no input '%s' (its inputs: %s)", (*op)->name,
                            g->inputs[i].name, known);
    for (size_t i = 0; (*op)->inputs[i]; i++)
        if (given_index(g->inputs, g->input_count, (*op)->inputs[i]) < 0)
            return kcs_fail(err, KCS_ERROR, "%s needs --input %s=FILE.npy (its inputs: %s)", (*op)->name,
                            (*op)->inputs[i], known);
    return KCS_OK;
}

/* A distinct stand-in for size s while the shapes are matched to sizes:
 * primes, so that no dimension equals one by accident. */
static double stand_in(int s)
{
    static const double primes[KCS_MAX_SIZES] = {1000003, 1000033, 1000037, 1000039};
    return primes[s];
}

/* The value of size s found so far, where it was found, and the text of
 * that shape, for the messages. */
typedef struct {
    int found;
    size_t value;
    const char *file;
    char shape[64];
} size_source;

/* Notes that array (a file given for spec) has a shape whose dimensions
 * stand for the sizes of the case c (c's sizes are stand-ins); a
 * disagreement with an earlier file is an error naming both. */
static kcs_status learn_sizes(const kcs_case *c, const kcs_array_spec *spec, const kcs_npy_array *array,
                              const char *file, size_source sources[], kcs_error *err)
{
    if (array->ndim != spec->ndim)
        return KCS_OK; /* the shape check names the file later */
    char shape[64];
    format_shape(array->ndim, array->shape, shape, sizeof shape);
    for (int d = 0; d < spec->ndim; d++)
        for (int s = 0; s < c->size_count; s++) {
            if ((double)spec->shape[d] != stand_in(s))
                continue;
            size_source *source = &sources[s];
            if (source->found && source->value != array->shape[d])
                return kcs_fail(err, KCS_ERROR, "%s has shape %s, so %s=%zu, but %s has shape %s, so %s=%zu",
                                source->file, source->shape, c->sizes[s].name, source->value, file, shape,
                                c->sizes[s].name, array->shape[d]);
            if (!source->found) {
                source->found = 1;
                source->value = array->shape[d];
                source->file = file;
                snprintf(source->shape, sizeof source->shape, "%s", shape);
            }
        }
    return KCS_OK;
}

/* Learns from every given array's shape. */
static kcs_status learn_all_sizes(const kcs_given *g, const kcs_case *stand_ins, const kcs_layout *layout,
                                  size_source sources[], kcs_error *err)
{
    for (int i = 0; i < layout->input_count; i++) {
        int given = given_index(g->inputs, g->input_count, layout->inputs[i].name);
        if (given >= 0 && learn_sizes(stand_ins, &layout->inputs[i], &g->input_arrays[given],
                                      g->inputs[given].file, sources, err) != KCS_OK)
            return KCS_ERROR;
    }
    for (int o = 0; o < layout->output_count; o++) {
        const kcs_array_spec *spec = &layout->outputs[o];
        int expected = given_index(g->expected, g->expected_count, spec->name);
        int actual = given_index(g->actual, g->actual_count, spec->name);
        if (expected >= 0 && learn_sizes(stand_ins, spec, &g->expected_arrays[expected], g->expected[expected].file,
                                         sources, err) != KCS_OK)
            return KCS_ERROR;
        if (actual >= 0 && learn_sizes(stand_ins, spec, &g->actual_arrays[actual], g->actual[actual].file, sources,
                                       err) != KCS_OK)
            return KCS_ERROR;
    }
    return KCS_OK;
}

/* The dimensions of spec by the sizes they stand for: "(rows, cols)". */
static void dimension_names(const kcs_case *stand_ins, const kcs_array_spec *spec, char *text, size_t size)
{
    snprintf(text, size, "(");
    for (int d = 0; d < spec->ndim; d++) {
        const char *name = NULL;
        for (int s = 0; s < stand_ins->size_count; s++)
            if ((double)spec->shape[d] == stand_in(s))
                name = stand_ins->sizes[s].name;
        size_t length = strlen(text);
        if (name)
            snprintf(text + length, size - length, "%s%s", d ? ", " : "", name);
        else
            snprintf(text + length, size - length, "%s%zu", d ? ", " : "", spec->shape[d]);
    }
    size_t length = strlen(text);
    snprintf(text + length, size - length, spec->ndim == 1 ? ",)" : ")");
}

/* A given file beside the op's array it was given for. */
typedef struct {
    const kcs_array_spec *spec;
    const kcs_npy_array *array;
    const char *option, *file;
} given_for;

/* Appends to list, at *count, the file of files (one of g's lists, with its
 * arrays) given for spec, if there is one. */
static void add_given_for(const kcs_named_file *files, const kcs_npy_array *arrays, int file_count,
                          const kcs_array_spec *spec, const char *option, given_for *list, int *count)
{
    int given = given_index(files, file_count, spec->name);
    if (given >= 0)
        list[(*count)++] = (given_for){spec, &arrays[given], option, files[given].file};
}

/* Where a size is missing because a file that would give it has another
 * number of dimensions than the op's array: fails naming it. */
static kcs_status explain_missing_size(const kcs_given *g, const kcs_case *stand_ins, const kcs_layout *layout,
                                       int s, kcs_error *err)
{
    given_for list[KCS_MAX_INPUTS + 2 * KCS_MAX_OUTPUTS];
    int count = 0;
    for (int i = 0; i < layout->input_count; i++)
        add_given_for(g->inputs, g->input_arrays, g->input_count, &layout->inputs[i], "input", list, &count);
    for (int o = 0; o < layout->output_count; o++) {
        add_given_for(g->expected, g->expected_arrays, g->expected_count, &layout->outputs[o], "expected", list,
                      &count);
        add_given_for(g->actual, g->actual_arrays, g->actual_count, &layout->outputs[o], "actual", list, &count);
    }
    for (int a = 0; a < count; a++) {
        const kcs_array_spec *spec = list[a].spec;
        const kcs_npy_array *array = list[a].array;
        int has_size = 0;
        for (int d = 0; d < spec->ndim; d++)
            has_size |= (double)spec->shape[d] == stand_in(s);
        if (!has_size || array->ndim == spec->ndim)
            continue;
        char have[64], need[128];
        format_shape(array->ndim, array->shape, have, sizeof have);
        dimension_names(stand_ins, spec, need, sizeof need);
        return kcs_fail(err, KCS_ERROR, "%s %s: %s has %d dimension%s, shape %s, but %s's %s has %d, %s: give a "
                        "%d-dimensional array", list[a].option, spec->name, list[a].file, array->ndim,
                        array->ndim == 1 ? "" : "s", have, g->c.op, spec->name, spec->ndim, need, spec->ndim);
    }
    return KCS_OK;
}

/* Fills the case's sizes: those given, checked against the shapes, and the
 * rest from the shapes. */
static kcs_status complete_sizes(kcs_given *g, const kcs_op *op, kcs_error *err)
{
    kcs_case *c = &g->c;
    char known[256];
    join_names(op->sizes, known, sizeof known);
    for (int i = 0; i < c->size_count; i++)
        if (!in_list(op->sizes, c->sizes[i].name))
            return kcs_fail(err, KCS_ERROR, "%s has no size '%s' (its sizes: %s)", op->name, c->sizes[i].name, known);
    kcs_case stand_ins = *c; /* every size of the op, each a distinct stand-in */
    stand_ins.size_count = 0;
    for (size_t s = 0; op->sizes[s] && s < KCS_MAX_SIZES; s++) {
        snprintf(stand_ins.sizes[s].name, sizeof stand_ins.sizes[s].name, "%s", op->sizes[s]);
        stand_ins.sizes[s].value = stand_in((int)s);
        stand_ins.size_count++;
    }
    kcs_op_args args;
    kcs_layout layout;
    const kcs_op *found;
    size_source sources[KCS_MAX_SIZES];
    memset(sources, 0, sizeof sources);
    if (kcs_op_prepare(&stand_ins, &found, &args, &layout, err) != KCS_OK ||
        learn_all_sizes(g, &stand_ins, &layout, sources, err) != KCS_OK)
        return KCS_ERROR;
    for (int s = 0; s < stand_ins.size_count; s++) {
        const char *name = stand_ins.sizes[s].name;
        int given = -1;
        for (int i = 0; i < c->size_count; i++)
            if (strcmp(c->sizes[i].name, name) == 0)
                given = i;
        if (given >= 0 && sources[s].found && (double)sources[s].value != c->sizes[given].value)
            return kcs_fail(err, KCS_ERROR, "--size %s=%.0f, but %s has shape %s, which makes %s=%zu", name,
                            c->sizes[given].value, sources[s].file, sources[s].shape, name, sources[s].value);
        if (given < 0 && !sources[s].found) {
            if (explain_missing_size(g, &stand_ins, &layout, s, err) != KCS_OK)
                return KCS_ERROR;
            return kcs_fail(err, KCS_ERROR, "%s needs size %s: give --size %s=VALUE (no given array's shape says it)",
                            op->name, name, name);
        }
        if (given < 0) {
            snprintf(c->sizes[c->size_count].name, sizeof c->sizes[0].name, "%s", name);
            c->sizes[c->size_count++].value = (double)sources[s].value;
        }
    }
    return KCS_OK;
}

/* The case's dtype: --dtype, or the dtype of the file given for the op's first input. */
static kcs_status choose_dtype(kcs_given *g, const kcs_op *op, kcs_error *err)
{
    if (g->dtype_name) {
        g->c.dtype = kcs_dtype_from_name(g->dtype_name);
        if (g->c.dtype == KCS_DTYPE_NONE)
            return kcs_fail(err, KCS_ERROR, "unknown dtype '%s' (known: %s)", g->dtype_name, kcs_dtype_names());
        return KCS_OK;
    }
    g->c.dtype = g->input_arrays[given_index(g->inputs, g->input_count, op->inputs[0])].dtype;
    return KCS_OK;
}

/* Whether a parameter of the case that names an array's type (such as
 * gemm's c_dtype, for C and C_out: bf16 with FP8 inputs) names this one. */
static int named_by_dtype_param(const kcs_case *c, kcs_dtype stored)
{
    for (int i = 0; i < c->param_count; i++) {
        size_t length = strlen(c->params[i].name);
        if (length >= 6 && strcmp(c->params[i].name + length - 6, "_dtype") == 0 &&
            kcs_npy_dtype_matches(stored, kcs_dtype_from_name(c->params[i].text)))
            return 1;
    }
    return 0;
}

/* numpy has no bf16 or FP8: their values are given as their bits, '<u2'
 * (uint16) and '|u1' (uint8), which the reader reads as bf16 and FP8. A
 * uint16 or uint8 array is as likely plain integers, so it is taken as such
 * bits only when --dtype asks for that type; otherwise it is refused, saying
 * how to ask. An array of another type than --dtype (C of an FP8 GEMM whose
 * c_dtype is bf16) is read as the type a *_dtype parameter names; the
 * layout then checks each array against its own type. */
static kcs_status check_bit_arrays(const kcs_given *g, kcs_error *err)
{
    const kcs_named_file *lists[] = {g->inputs, g->expected, g->actual};
    const kcs_npy_array *arrays[] = {g->input_arrays, g->expected_arrays, g->actual_arrays};
    const int counts[] = {g->input_count, g->expected_count, g->actual_count};
    const char *options[] = {"input", "expected", "actual"};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++) {
            kcs_dtype stored = arrays[l][i].dtype;
            int bf16 = stored == KCS_BF16, fp8 = stored == KCS_FP8_E4M3 || stored == KCS_FP8_E5M2;
            if (!bf16 && !fp8)
                continue;
            const char *held = bf16 ? "uint16 ('<u2')" : "uint8 ('|u1')";
            const char *ask = bf16 ? "--dtype bf16" : "--dtype fp8_e4m3 or --dtype fp8_e5m2";
            const char *as = bf16 ? "the bits of bf16 values (torch: t.view(torch.uint16).numpy())"
                                  : "the bytes of FP8 values (torch: t.view(torch.uint8).numpy())";
            if (!g->dtype_name)
                return kcs_fail(err, KCS_ERROR, "--%s %s=%s holds %s, which kcs reads as %s only when asked: give %s",
                                options[l], lists[l][i].name, lists[l][i].file, held, as, ask);
            if (!kcs_npy_dtype_matches(stored, g->c.dtype) && !named_by_dtype_param(&g->c, stored))
                return kcs_fail(err, KCS_ERROR, "--%s %s=%s holds %s, which kcs reads only as %s (%s), but --dtype "
                                "is %s", options[l], lists[l][i].name, lists[l][i].file, held, as, ask,
                                g->dtype_name);
        }
    return KCS_OK;
}

/* Checks each given input against the op's layout and hands its data to the case. */
static kcs_status take_inputs(kcs_given *g, kcs_prepared_case *p, kcs_error *err)
{
    for (int i = 0; i < p->layout.input_count; i++) {
        const kcs_array_spec *spec = &p->layout.inputs[i];
        int given = given_index(g->inputs, g->input_count, spec->name);
        kcs_npy_array *array = &g->input_arrays[given];
        char need[64], have[64];
        format_shape(spec->ndim, spec->shape, need, sizeof need);
        format_shape(array->ndim, array->shape, have, sizeof have);
        if (!kcs_npy_dtype_matches(array->dtype, spec->dtype) || !same_shape(array, spec))
            return kcs_fail(err, KCS_ERROR,
                            "input %s: %s holds %s of shape %s, but %s with these sizes needs %s of shape %s",
                            spec->name, g->inputs[given].file, kcs_dtype_name(array->dtype), have, g->c.op,
                            kcs_dtype_name(spec->dtype), need);
        p->inputs[i] = array->data;
        array->data = NULL;
    }
    return KCS_OK;
}

/* Every file given for an output (--expected or --actual) names one of the op's outputs. */
static kcs_status check_output_names(const kcs_given *g, const kcs_layout *layout, kcs_error *err)
{
    char known[256] = "";
    for (int o = 0; o < layout->output_count; o++) {
        size_t length = strlen(known);
        snprintf(known + length, sizeof known - length, "%s%s", o ? ", " : "", layout->outputs[o].name);
    }
    const kcs_named_file *lists[] = {g->expected, g->actual};
    const int counts[] = {g->expected_count, g->actual_count};
    const char *options[] = {"expected", "actual"};
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < counts[l]; i++) {
            int found = 0;
            for (int o = 0; o < layout->output_count; o++)
                found |= strcmp(layout->outputs[o].name, lists[l][i].name) == 0;
            if (!found)
                return kcs_fail(err, KCS_ERROR, "--%s %s: %s has no output '%s' (its outputs: %s)", options[l],
                                lists[l][i].name, g->c.op, lists[l][i].name, known);
        }
    return KCS_OK;
}

kcs_status kcs_given_prepare(kcs_given *g, kcs_prepared_case *p, kcs_error *err)
{
    const kcs_op *op;
    memset(p, 0, sizeof *p);
    if (check_op_and_inputs(g, &op, err) != KCS_OK || read_given(g, err) != KCS_OK ||
        choose_dtype(g, op, err) != KCS_OK || check_bit_arrays(g, err) != KCS_OK)
        return KCS_ERROR;
    kcs_case *c = &g->c;
    for (int i = 0; i < g->input_count; i++) {
        snprintf(c->inputs[i].name, sizeof c->inputs[i].name, "%s", g->inputs[i].name);
        snprintf(c->inputs[i].distribution.name, sizeof c->inputs[i].distribution.name, "constant");
    }
    c->input_count = g->input_count;
    if (complete_sizes(g, op, err) != KCS_OK || kcs_prepare_layout(c, p, err) != KCS_OK ||
        check_output_names(g, &p->layout, err) != KCS_OK)
        return KCS_ERROR;
    return take_inputs(g, p, err);
}

/* Whether an output holds integers (assign's idx, reduce's count). */
static int integer_output(const kcs_array_spec *spec)
{
    return spec->dtype == KCS_I32 || spec->dtype == KCS_I64;
}

/* Fills output o's expected values from its given file, widened to double. */
static kcs_status take_expected_output(const kcs_given *g, kcs_prepared_case *p, int o, kcs_error *err)
{
    const kcs_array_spec *spec = &p->layout.outputs[o];
    int given = given_index(g->expected, g->expected_count, spec->name);
    if (given < 0)
        return kcs_fail(err, KCS_ERROR, "no --expected for output %s", spec->name);
    const kcs_npy_array *e = &g->expected_arrays[given];
    char need[64], have[64];
    format_shape(spec->ndim, spec->shape, need, sizeof need);
    format_shape(e->ndim, e->shape, have, sizeof have);
    int integer = integer_output(spec) && (e->dtype == KCS_I32 || e->dtype == KCS_I64);
    if ((!kcs_dtype_is_float(e->dtype) && !integer) || !same_shape(e, spec))
        return kcs_fail(err, KCS_ERROR, "expected %s: %s holds %s of shape %s; it must be %s of shape %s",
                        spec->name, g->expected[given].file, kcs_dtype_name(e->dtype), have,
                        integer_output(spec) ? "int32, int64 or floating point" : "floating point", need);
    size_t count = p->sizes.outputs[o].elements, rounded = 0;
    int to_type = p->op->bound_from_rounded && p->op->bound_from_rounded(&p->args, o) && !integer_output(spec);
    for (size_t k = 0; k < count; k++) {
        double value = kcs_load_element(e->data, e->dtype, k);
        if (to_type) {
            unsigned char element[8];
            kcs_store_element(element, spec->dtype, 0, value);
            double in_type = kcs_load_element(element, spec->dtype, 0);
            rounded += in_type != value && !(isnan(in_type) && isnan(value));
            value = in_type;
        }
        p->expected[o].values[k] = value;
    }
    p->expected[o].count = count;
    if (rounded)
        printf("expected %s: %zu of the %zu values in %s are not %s values: rounded to %s (to nearest even), "
               "since %s's bound is measured from the result rounded to its type\n", spec->name, rounded, count,
               g->expected[given].file, kcs_dtype_name(spec->dtype), kcs_dtype_name(spec->dtype), g->c.op);
    return KCS_OK;
}

kcs_status kcs_given_expected(const kcs_given *g, kcs_prepared_case *p, int flushing, kcs_error *err)
{
    if (g->expected_count == 0) {
        snprintf(p->expected_from, sizeof p->expected_from, "oracle");
        return kcs_oracle_expected(p, flushing, p->expected, err);
    }
    if (g->expected_count != p->layout.output_count)
        return kcs_fail(err, KCS_ERROR, "give --expected for every output of %s or for none", g->c.op);
    for (int o = 0; o < p->layout.output_count; o++) {
        size_t count = p->sizes.outputs[o].elements;
        p->expected[o].values = calloc(count ? count : 1, sizeof(double));
        p->expected[o].bounds = calloc(count ? count : 1, sizeof(double));
        if (!p->expected[o].values || !p->expected[o].bounds)
            return kcs_fail(err, KCS_ERROR, "out of memory");
        if (take_expected_output(g, p, o, err) != KCS_OK)
            return KCS_ERROR;
    }
    p->expected_given = 1;
    snprintf(p->expected_from, sizeof p->expected_from, "files");
    return kcs_fill_bounds(p, flushing, p->expected, err);
}

/* Copies one given actual array into host memory of the output's dtype:
 * the same dtype as is, or int32 or int64 for an integer output, each
 * value checked to fit. */
static kcs_status convert_actual(const kcs_given *g, int given, const kcs_array_spec *spec, size_t count,
                                 void **actual, kcs_error *err)
{
    const kcs_npy_array *a = &g->actual_arrays[given];
    size_t bytes = count * kcs_dtype_size(spec->dtype);
    *actual = malloc(bytes ? bytes : 1);
    if (!*actual)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    if (a->dtype == spec->dtype) {
        memcpy(*actual, a->data, bytes);
        return KCS_OK;
    }
    for (size_t k = 0; k < count; k++) {
        double value = kcs_load_element(a->data, a->dtype, k);
        if (!(value >= INT32_MIN && value <= INT32_MAX))
            return kcs_fail(err, KCS_ERROR, "actual %s: %s[%zu] = %.17g does not fit in int32, which %s's %s is",
                            spec->name, g->actual[given].file, k, value, g->c.op, spec->name);
        kcs_store_element(*actual, spec->dtype, k, value);
    }
    return KCS_OK;
}

kcs_status kcs_given_actual(const kcs_given *g, const kcs_prepared_case *p, void *actual[], kcs_error *err)
{
    const kcs_layout *layout = &p->layout;
    char known[256] = "";
    for (int o = 0; o < layout->output_count; o++) {
        size_t length = strlen(known);
        snprintf(known + length, sizeof known - length, "%s%s", o ? ", " : "", layout->outputs[o].name);
    }
    for (int o = 0; o < layout->output_count; o++) {
        const kcs_array_spec *spec = &layout->outputs[o];
        int given = given_index(g->actual, g->actual_count, spec->name);
        if (given < 0)
            return kcs_fail(err, KCS_ERROR, "%s needs --actual %s=FILE.npy: give every output (%s)", g->c.op,
                            spec->name, known);
        const kcs_npy_array *a = &g->actual_arrays[given];
        char need[64], have[64];
        format_shape(spec->ndim, spec->shape, need, sizeof need);
        format_shape(a->ndim, a->shape, have, sizeof have);
        int widened = integer_output(spec) && (a->dtype == KCS_I32 || a->dtype == KCS_I64);
        if ((a->dtype != spec->dtype && !widened) || !same_shape(a, spec))
            return kcs_fail(err, KCS_ERROR, "actual %s: %s holds %s of shape %s, but %s with these sizes writes %s of shape %s%s",
                            spec->name, g->actual[given].file, kcs_dtype_name(a->dtype), have, g->c.op,
                            kcs_dtype_name(spec->dtype), need, integer_output(spec) ? " (int32 or int64)" : "");
        if (convert_actual(g, given, spec, p->sizes.outputs[o].elements, &actual[o], err) != KCS_OK)
            return KCS_ERROR;
    }
    return KCS_OK;
}

/* |actual - expected| of one element by the checker's rules: 0 where the
 * classes match (NaN and NaN, the same infinity), inf where they differ. */
static double element_error(double expected, double actual)
{
    if (isnan(expected) || isnan(actual))
        return isnan(expected) && isnan(actual) ? 0.0 : INFINITY;
    if (isinf(expected) || isinf(actual))
        return expected == actual ? 0.0 : INFINITY;
    return fabs(actual - expected);
}

int kcs_write_errors(const kcs_prepared_case *p, void *const actual[], const char *dir, const char *command)
{
    kcs_error err = {{0}};
    if (kcs_make_directories(dir, &err) != KCS_OK) {
        fprintf(stderr, "kcs %s: %s\n", command, err.message);
        return KCS_EXIT_USAGE;
    }
    for (int o = 0; o < p->layout.output_count; o++) {
        const kcs_array_spec *spec = &p->layout.outputs[o];
        const kcs_expected *e = &p->expected[o];
        size_t count = e->count;
        double *errors = malloc((count ? count : 1) * sizeof *errors);
        if (!errors) {
            fprintf(stderr, "kcs %s: out of memory\n", command);
            return KCS_EXIT_USAGE;
        }
        for (size_t k = 0; k < count; k++)
            errors[k] = element_error(e->values[k], kcs_load_element(actual[o], spec->dtype, k));
        char error_path[4200], bound_path[4200];
        snprintf(error_path, sizeof error_path, "%s/error.%s.npy", dir, spec->name);
        snprintf(bound_path, sizeof bound_path, "%s/bound.%s.npy", dir, spec->name);
        kcs_status status = kcs_npy_write(error_path, KCS_F64, spec->ndim, spec->shape, errors, &err);
        if (status == KCS_OK)
            status = kcs_npy_write(bound_path, KCS_F64, spec->ndim, spec->shape, e->bounds, &err);
        free(errors);
        if (status != KCS_OK) {
            fprintf(stderr, "kcs %s: %s\n", command, err.message);
            return KCS_EXIT_USAGE;
        }
        printf("wrote %s and %s\n", error_path, bound_path);
    }
    return KCS_EXIT_PASSED;
}

/* Appends ", NAME=FILE (shape)" to text for each of the given files that holds no element. */
static void append_empty_files(const kcs_named_file *files, const kcs_npy_array *arrays, int count, char *text,
                               size_t size)
{
    for (int i = 0; i < count; i++) {
        size_t elements = 1;
        for (int d = 0; d < arrays[i].ndim; d++)
            elements *= arrays[i].shape[d];
        if (elements)
            continue;
        char shape[64];
        format_shape(arrays[i].ndim, arrays[i].shape, shape, sizeof shape);
        size_t length = strlen(text);
        snprintf(text + length, size - length, "%s%s=%s %s", length ? ", " : "", files[i].name, files[i].file, shape);
    }
}

/* Why a check compared nothing: every output's shape, the sizes, and the given files that are empty. */
static void describe_nothing_compared(const kcs_given *g, const kcs_prepared_case *p, char *text, size_t size)
{
    char outputs[512] = "", sizes[256] = "", files[1024] = "";
    for (int o = 0; o < p->layout.output_count; o++) {
        char shape[64];
        format_shape(p->layout.outputs[o].ndim, p->layout.outputs[o].shape, shape, sizeof shape);
        size_t length = strlen(outputs);
        snprintf(outputs + length, sizeof outputs - length, "%s%s has shape %s", o ? ", " : "",
                 p->layout.outputs[o].name, shape);
    }
    for (int s = 0; s < p->c->size_count; s++) {
        size_t length = strlen(sizes);
        snprintf(sizes + length, sizeof sizes - length, "%s%s=%.0f", s ? " " : "", p->c->sizes[s].name,
                 p->c->sizes[s].value);
    }
    append_empty_files(g->inputs, g->input_arrays, g->input_count, files, sizeof files);
    append_empty_files(g->expected, g->expected_arrays, g->expected_count, files, sizeof files);
    append_empty_files(g->actual, g->actual_arrays, g->actual_count, files, sizeof files);
    snprintf(text, size, "nothing was compared: %s with %s has no output element (%s)%s%s; a check of nothing is "
             "no pass", p->c->op, sizes, outputs, files[0] ? "; the files with no element: " : "", files);
}

int kcs_print_check(const kcs_given *g, const kcs_prepared_case *p, const kcs_check_result *r, const char *message)
{
    if (r->checked == 0 && r->passed) {
        char why[2048];
        describe_nothing_compared(g, p, why, sizeof why);
        printf("FAIL: 0 elements checked: %s\n", why);
        return 0;
    }
    if (r->worst_output >= 0) {
        char element[128];
        kcs_element_name(&p->layout.outputs[r->worst_output], r->worst_index, element, sizeof element);
        printf("worst element: %s expected %.17g, got %.17g, error %.3g, bound %.3g\n", element, r->worst_expected,
               r->worst_actual, r->worst_error, r->worst_bound);
    }
    printf("%s: %zu elements checked, %.3g of the bound used%s%s\n", r->passed ? "PASS" : "FAIL", r->checked,
           r->fraction, r->passed ? "" : "; ", r->passed ? "" : message);
    return r->passed;
}

/* Whether path may be written: not a file given on the command line (by any
 * path to it), and, where it exists, a regular file and --overwrite given. */
static kcs_status may_write(const kcs_given *g, const char *path, const char *what, kcs_error *err)
{
    struct stat target;
    if (stat(path, &target) != 0)
        return KCS_OK; /* nothing there (or a folder not made yet): nothing lost */
    const kcs_named_file *lists[] = {g->inputs, g->expected, g->actual};
    const int counts[] = {g->input_count, g->expected_count, g->actual_count};
    const char *options[] = {"input", "expected", "actual"};
    for (int l = 0; l < 3; l++)
        for (int i = 0; i < counts[l]; i++) {
            struct stat given;
            if (stat(lists[l][i].file, &given) == 0 && given.st_dev == target.st_dev && given.st_ino == target.st_ino)
                return kcs_fail(err, KCS_ERROR, "%s %s is the file given as --%s %s=%s: kcs never writes over a "
                                "file it was given; choose another folder", what, path, options[l], lists[l][i].name,
                                lists[l][i].file);
        }
    if (!S_ISREG(target.st_mode))
        return kcs_fail(err, KCS_ERROR, "%s %s exists and is not a regular file", what, path);
    if (!g->overwrite)
        return kcs_fail(err, KCS_ERROR, "%s %s exists (an earlier result?): give --overwrite to replace it, or "
                        "choose another folder", what, path);
    return KCS_OK;
}

kcs_status kcs_given_writes_allowed(const kcs_given *g, const kcs_prepared_case *p, const char *output_dir,
                                    kcs_error *err)
{
    char path[4200];
    const char *folders[] = {output_dir, g->errors_dir}, *options[] = {"--output-dir", "--errors"};
    for (int f = 0; f < 2; f++) {
        struct stat folder;
        if (folders[f] && stat(folders[f], &folder) == 0 && !S_ISDIR(folder.st_mode))
            return kcs_fail(err, KCS_ERROR, "%s %s is a file, not a folder: nothing was written", options[f],
                            folders[f]);
    }
    for (int o = 0; o < p->layout.output_count; o++) {
        const char *name = p->layout.outputs[o].name;
        if (output_dir) {
            snprintf(path, sizeof path, "%s/%s.npy", output_dir, name);
            if (may_write(g, path, "the output", err) != KCS_OK)
                return KCS_ERROR;
        }
        if (g->errors_dir) {
            snprintf(path, sizeof path, "%s/error.%s.npy", g->errors_dir, name);
            if (may_write(g, path, "--errors: the error file", err) != KCS_OK)
                return KCS_ERROR;
            snprintf(path, sizeof path, "%s/bound.%s.npy", g->errors_dir, name);
            if (may_write(g, path, "--errors: the bound file", err) != KCS_OK)
                return KCS_ERROR;
        }
    }
    return KCS_OK;
}

void kcs_given_free(kcs_given *g)
{
    for (int i = 0; i < KCS_MAX_INPUTS; i++)
        kcs_npy_free(&g->input_arrays[i]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        kcs_npy_free(&g->expected_arrays[o]);
        kcs_npy_free(&g->actual_arrays[o]);
    }
}
