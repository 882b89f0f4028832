/* op.c: the op table and what is common to every op (see op.h). */
#include "op.h"

#include <string.h>

const kcs_op *kcs_find_op(const char *name)
{
    for (size_t i = 0; kcs_ops[i]; i++)
        if (strcmp(kcs_ops[i]->name, name) == 0)
            return kcs_ops[i];
    return NULL;
}

size_t kcs_array_element_count(const kcs_array_spec *spec)
{
    size_t count = 1;
    for (int d = 0; d < spec->ndim; d++)
        count *= spec->shape[d];
    return count;
}

size_t kcs_array_bytes(const kcs_array_spec *spec)
{
    return kcs_array_element_count(spec) * kcs_dtype_size(spec->dtype);
}

static int in_list(const char *const *list, const char *name)
{
    for (size_t i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return 0;
}

static void join(const char *const *list, char *out, size_t size)
{
    out[0] = '\0';
    for (size_t i = 0; list[i]; i++) {
        strncat(out, i ? ", " : "", size - strlen(out) - 1);
        strncat(out, list[i], size - strlen(out) - 1);
    }
    if (!out[0])
        strncat(out, "none", size - 1);
}

kcs_status kcs_op_prepare(const kcs_case *c, const kcs_op **op_out, kcs_op_args *args,
                          kcs_layout *layout, kcs_error *err)
{
    const kcs_op *op = kcs_find_op(c->op);
    char known[256];
    if (!op) {
        known[0] = '\0';
        for (size_t i = 0; kcs_ops[i]; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, kcs_ops[i]->name, sizeof known - strlen(known) - 1);
        }
        return kcs_fail(err, KCS_ERROR, "unknown op '%s' (known: %s)", c->op, known);
    }
    for (int i = 0; i < c->size_count; i++)
        if (!in_list(op->sizes, c->sizes[i].name)) {
            join(op->sizes, known, sizeof known);
            return kcs_fail(err, KCS_ERROR, "op %s has no size '%s' (its sizes: %s)", op->name,
                            c->sizes[i].name, known);
        }
    for (size_t i = 0; op->sizes[i]; i++) {
        int given = 0;
        for (int j = 0; j < c->size_count; j++)
            given |= strcmp(c->sizes[j].name, op->sizes[i]) == 0;
        if (!given)
            return kcs_fail(err, KCS_ERROR, "op %s needs size '%s'", op->name, op->sizes[i]);
    }
    for (int i = 0; i < c->param_count; i++)
        if (!in_list(op->params, c->params[i].name)) {
            join(op->params, known, sizeof known);
            return kcs_fail(err, KCS_ERROR, "op %s has no parameter '%s' (its parameters: %s)",
                            op->name, c->params[i].name, known);
        }
    for (int i = 0; i < c->input_count; i++)
        if (!in_list(op->inputs, c->inputs[i].name)) {
            join(op->inputs, known, sizeof known);
            return kcs_fail(err, KCS_ERROR, "op %s has no input '%s' (its inputs: %s)", op->name,
                            c->inputs[i].name, known);
        }
    for (size_t i = 0; op->inputs[i]; i++)
        if (!kcs_case_input(c, op->inputs[i]))
            return kcs_fail(err, KCS_ERROR, "op %s needs a line 'input %s: ...'", op->name,
                            op->inputs[i]);
    if (c->expect == KCS_EXPECT_CLOSED_FORM && !op->closed_form)
        return kcs_fail(err, KCS_ERROR, "op %s has no closed form; use 'expect: golden' or 'oracle'",
                        op->name);
    memset(args, 0, sizeof *args);
    args->op = op->name;
    args->dtype = c->dtype;
    if (op->parse_args(c, args, err) != KCS_OK || op->layout(args, layout, err) != KCS_OK)
        return KCS_ERROR;
    *op_out = op;
    return KCS_OK;
}
