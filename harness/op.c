/* op.c: the op table and what is common to every op (see op.h). */
#include "op.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* The bytes of an array, or SIZE_MAX where they do not fit a size_t (no buffer holds them then). */
static size_t bytes_needed(const kcs_array_spec *spec)
{
    size_t bytes = kcs_dtype_size(spec->dtype);
    int too_many = 0;
    for (int d = 0; d < spec->ndim; d++) {
        if (spec->shape[d] == 0)
            return 0;
        if (bytes > SIZE_MAX / spec->shape[d])
            too_many = 1;
        else
            bytes *= spec->shape[d];
    }
    return too_many ? SIZE_MAX : bytes;
}

/* The size of a backend's buffer: the first member of every backend's struct kcs_buffer (backend.h). */
static size_t buffer_bytes(const struct kcs_buffer *buffer)
{
    return *(const size_t *)(const void *)buffer;
}

/* Checks one role's buffers ("input", "output") against their arrays. */
static kcs_status check_role(const char *role, const kcs_array_spec *specs, int count,
                             struct kcs_buffer *const buffers[], kcs_error *err)
{
    for (int i = 0; i < count; i++) {
        size_t needed = bytes_needed(&specs[i]);
        if (!buffers || !buffers[i])
            return kcs_fail(err, KCS_ERROR, "%s %d (%s, %zu bytes) is NULL", role, i, specs[i].name, needed);
        if (needed == SIZE_MAX)
            return kcs_fail(err, KCS_ERROR, "%s %d (%s) has more bytes than a size_t counts", role, i,
                            specs[i].name);
        if (buffer_bytes(buffers[i]) < needed)
            return kcs_fail(err, KCS_ERROR, "%s %d (%s) needs %zu bytes, its buffer has %zu", role, i,
                            specs[i].name, needed, buffer_bytes(buffers[i]));
    }
    return KCS_OK;
}

kcs_status kcs_check_buffers(const kcs_op *op, const kcs_op_args *args, struct kcs_buffer *const inputs[],
                             struct kcs_buffer *const outputs[], kcs_error *err)
{
    if (!op)
        return kcs_fail(err, KCS_ERROR, "there is no op '%s'", args->op ? args->op : "(NULL)");
    kcs_layout layout;
    kcs_status status = op->layout(args, &layout, err);
    if (status == KCS_OK)
        status = check_role("input", layout.inputs, layout.input_count, inputs, err);
    if (status == KCS_OK)
        status = check_role("output", layout.outputs, layout.output_count, outputs, err);
    return status;
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

void kcs_vector_spec(kcs_array_spec *spec, const char *name, kcs_dtype dtype, size_t n)
{
    memset(spec, 0, sizeof *spec);
    snprintf(spec->name, sizeof spec->name, "%s", name);
    spec->dtype = dtype;
    spec->ndim = 1;
    spec->shape[0] = n;
}

void kcs_matrix_spec(kcs_array_spec *spec, const char *name, kcs_dtype dtype, size_t rows, size_t cols)
{
    kcs_vector_spec(spec, name, dtype, rows);
    spec->ndim = 2;
    spec->shape[1] = cols;
}

kcs_status kcs_case_number(const kcs_case *c, const char *name, double fallback, kcs_dtype dtype,
                           double *value, kcs_error *err)
{
    const char *text = kcs_case_param(c, name);
    *value = fallback;
    if (!text && isnan(fallback))
        return kcs_fail(err, KCS_ERROR, "%s needs the parameter %s", c->op, name);
    if (text) {
        char *end;
        errno = 0;
        *value = strtod(text, &end);
        if (end == text || *end != '\0' || errno || !isfinite(*value) ||
            (dtype == KCS_F32 && !isfinite((float)*value)))
            return kcs_fail(err, KCS_ERROR, "%s parameter %s=%s is not a finite %s number", c->op,
                            name, text, kcs_dtype_name(dtype));
    }
    return KCS_OK;
}

/* Fails unless the case's dtype is one of the op's. */
static kcs_status check_dtype(const kcs_op *op, const kcs_case *c, kcs_error *err)
{
    char names[128] = "";
    size_t count = 0;
    for (const kcs_dtype *d = op->dtypes; *d != KCS_DTYPE_NONE; d++, count++) {
        if (*d == c->dtype)
            return KCS_OK;
    }
    for (size_t i = 0; i < count; i++) {
        const char *separator = i == 0 ? "" : i + 1 == count ? " and " : ", ";
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", separator,
                 kcs_dtype_name(op->dtypes[i]));
    }
    if (count == 1)
        return kcs_fail(err, KCS_ERROR, "%s has an %s variant only, not %s", op->name, names,
                        kcs_dtype_name(c->dtype));
    return kcs_fail(err, KCS_ERROR, "%s has %s variants, not %s", op->name, names, kcs_dtype_name(c->dtype));
}

/* Fails when an array's element count or byte size does not fit in size_t
 * (gemm with m = n = k = 2^32 wrapped to a small product and crashed). */
static kcs_status check_array_sizes(const kcs_op *op, const kcs_array_spec *specs, int count, kcs_error *err)
{
    for (int a = 0; a < count; a++) {
        size_t elements = 1;
        for (int d = 0; d < specs[a].ndim; d++) {
            if (specs[a].shape[d] != 0 && elements > SIZE_MAX / specs[a].shape[d])
                return kcs_fail(err, KCS_ERROR, "op %s: array %s has more elements than size_t can count",
                                op->name, specs[a].name);
            elements *= specs[a].shape[d];
        }
        if (elements > SIZE_MAX / 16)
            return kcs_fail(err, KCS_ERROR, "op %s: array %s of %zu elements is too large to hold in memory",
                            op->name, specs[a].name, elements);
    }
    return KCS_OK;
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
    if (check_dtype(op, c, err) != KCS_OK)
        return KCS_ERROR;
    memset(args, 0, sizeof *args);
    args->op = op->name;
    args->dtype = c->dtype;
    if (op->parse_args(c, args, err) != KCS_OK || op->layout(args, layout, err) != KCS_OK ||
        check_array_sizes(op, layout->inputs, layout->input_count, err) != KCS_OK ||
        check_array_sizes(op, layout->outputs, layout->output_count, err) != KCS_OK)
        return KCS_ERROR;
    *op_out = op;
    return KCS_OK;
}
