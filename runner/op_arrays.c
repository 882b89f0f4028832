/* op_arrays.c: what `kcs check OP` and `kcs apply OP` say about the op when
 * it is asked for (--help) or its arrays are missing: the names its inputs
 * and outputs go by on the command line, their shapes in its sizes, its
 * parameters and dtypes, all read from the op's descriptor.
 *
 * The shapes come from the op's layout worked out with a distinct stand-in
 * value for each size (as given_arrays.c learns sizes from shapes), so each
 * dimension names the size it is; a dimension that is a product of sizes or
 * a constant is printed as a number only when it is a constant.
 */
#include <stdio.h>
#include <string.h>

#include "runner.h"

/* Stand-ins for the sizes: distinct primes, which no constant dimension equals. */
static const double stand_ins[KCS_MAX_SIZES] = {1000003, 1000033, 1000037, 1000039};

/* "x (rows, cols)" for one array of a layout worked out with the stand-ins. */
static void format_array(const kcs_op *op, const kcs_array_spec *spec, char *text, size_t size)
{
    snprintf(text, size, "%s (", spec->name);
    for (int d = 0; d < spec->ndim; d++) {
        const char *name = NULL;
        for (int s = 0; op->sizes[s] && s < KCS_MAX_SIZES; s++)
            if ((double)spec->shape[d] == stand_ins[s])
                name = op->sizes[s];
        size_t length = strlen(text);
        if (name)
            snprintf(text + length, size - length, "%s%s", d ? ", " : "", name);
        else if (spec->shape[d] < 1000000)
            snprintf(text + length, size - length, "%s%zu", d ? ", " : "", spec->shape[d]);
        else
            snprintf(text + length, size - length, "%s...", d ? ", " : "");
    }
    size_t length = strlen(text);
    snprintf(text + length, size - length, "%s)", spec->ndim == 1 ? "," : "");
}

/* The names of a NULL-terminated list, joined with ", ", or "none". */
static void join(const char *const *names, char *text, size_t size)
{
    snprintf(text, size, "%s", names && names[0] ? "" : "none");
    for (size_t i = 0; names && names[i]; i++) {
        size_t length = strlen(text);
        snprintf(text + length, size - length, "%s%s", i ? ", " : "", names[i]);
    }
}

void kcs_print_op_arrays(const char *command, const char *op_name, FILE *out)
{
    const kcs_op *op = kcs_find_op(op_name);
    if (!op)
        return; /* the error that follows names the ops there are */
    kcs_case c;
    memset(&c, 0, sizeof c);
    snprintf(c.op, sizeof c.op, "%s", op->name);
    c.dtype = op->dtypes[0];
    for (int s = 0; op->sizes[s] && s < KCS_MAX_SIZES; s++) {
        snprintf(c.sizes[s].name, sizeof c.sizes[s].name, "%s", op->sizes[s]);
        c.sizes[s].value = stand_ins[s];
        c.size_count++;
    }
    for (int i = 0; op->inputs[i] && i < KCS_MAX_INPUTS; i++)
        snprintf(c.inputs[c.input_count++].name, sizeof c.inputs[0].name, "%s", op->inputs[i]);
    const kcs_op *found;
    kcs_op_args args;
    kcs_layout layout;
    kcs_error err = {{0}};
    char list[512], array[128];
    fprintf(out, "%s: %s\n", op->name, op->summary);
    int prepared = kcs_op_prepare(&c, &found, &args, &layout, &err) == KCS_OK;
    if (!prepared) { /* a parameter without a default (update's temperature): each one 1 */
        for (int i = 0; op->params[i] && i < KCS_MAX_PARAMS; i++) {
            snprintf(c.params[i].name, sizeof c.params[i].name, "%s", op->params[i]);
            snprintf(c.params[i].text, sizeof c.params[i].text, "1");
            c.param_count++;
        }
        prepared = kcs_op_prepare(&c, &found, &args, &layout, &err) == KCS_OK;
    }
    if (prepared) {
        fprintf(out, "  inputs   ");
        for (int i = 0; i < layout.input_count; i++) {
            format_array(op, &layout.inputs[i], array, sizeof array);
            fprintf(out, "%s%s", i ? ", " : "", array);
        }
        fprintf(out, "   (--input NAME=FILE.npy)\n  outputs  ");
        for (int o = 0; o < layout.output_count; o++) {
            format_array(op, &layout.outputs[o], array, sizeof array);
            fprintf(out, "%s%s", o ? ", " : "", array);
        }
        fprintf(out, "   (%s)\n", strcmp(command, "check") == 0 ? "--actual NAME=FILE.npy" : "written as NAME.npy");
    } else {
        join(op->inputs, list, sizeof list);
        fprintf(out, "  inputs   %s   (--input NAME=FILE.npy)\n", list);
    }
    join(op->sizes, list, sizeof list);
    fprintf(out, "  sizes    %s   (from the shapes, or --size NAME=VALUE)\n", list);
    join(op->params, list, sizeof list);
    fprintf(out, "  params   %s%s\n", list, op->params && op->params[0] ? "   (--param NAME=VALUE)" : "");
    list[0] = '\0';
    for (size_t i = 0; op->dtypes[i] != KCS_DTYPE_NONE; i++) {
        size_t length = strlen(list);
        snprintf(list + length, sizeof list - length, "%s%s", i ? ", " : "", kcs_dtype_name(op->dtypes[i]));
    }
    fprintf(out, "  dtypes   %s   (--dtype T; default: the first input's)\n", list);
}
