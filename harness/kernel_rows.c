/* kernel_rows.c: a backend's kernel rows checked against the op table (see
 * kernel_rows.h). */
#include "kernel_rows.h"

#include <stdio.h>
#include <string.h>

#include "op.h"

/* Appends the names of the op table's ops, or of op's dtypes, to text. */
static void list_ops(char *text, size_t size)
{
    for (size_t i = 0; kcs_ops[i]; i++)
        snprintf(text + strlen(text), size - strlen(text), "%s%s", i ? ", " : "", kcs_ops[i]->name);
}

static void list_dtypes(const kcs_op *op, char *text, size_t size)
{
    for (const kcs_dtype *d = op->dtypes; *d != KCS_DTYPE_NONE; d++)
        snprintf(text + strlen(text), size - strlen(text), "%s%s", d == op->dtypes ? "" : ", ",
                 kcs_dtype_name(*d));
}

int kcs_kernel_row_problem(const kcs_backend *backend, size_t index, char *message, size_t size)
{
    const kcs_kernel *row = kcs_backend_kernel(backend, index);
    const char *op_name = row->op ? row->op : "(none)", *variant = row->variant ? row->variant : "(none)";
    const char *dtype_name = kcs_dtype_name(row->dtype); /* "none" for no dtype of the type list */
    int head = snprintf(message, size, "%s: kernel row %s %s %s: ", backend->name, op_name, dtype_name, variant);
    char *cause = message + (head > 0 && (size_t)head < size ? (size_t)head : 0);
    size_t room = size - (size_t)(cause - message);
    const kcs_op *op = row->op ? kcs_find_op(row->op) : NULL;
    if (!op) {
        char known[512] = "";
        list_ops(known, sizeof known);
        snprintf(cause, room, "no op '%s' in the op table (known: %s)", op_name, known);
        return 1;
    }
    const kcs_dtype *d = op->dtypes;
    while (*d != KCS_DTYPE_NONE && *d != row->dtype)
        d++;
    if (*d == KCS_DTYPE_NONE) {
        char known[256] = "";
        list_dtypes(op, known, sizeof known);
        snprintf(cause, room, "op %s has no dtype %s (it has: %s)", op->name, dtype_name, known);
        return 1;
    }
    if (!row->variant || !row->variant[0]) {
        snprintf(cause, room, "no variant name");
        return 1;
    }
    for (size_t k = 0; k < index; k++) {
        const kcs_kernel *earlier = kcs_backend_kernel(backend, k);
        if (earlier->op && strcmp(earlier->op, row->op) == 0 && earlier->dtype == row->dtype && earlier->variant &&
            strcmp(earlier->variant, row->variant) == 0) {
            snprintf(cause, room, "an earlier row of %s %s has the variant name %s too (a variant names one row)",
                     op->name, dtype_name, variant);
            return 1;
        }
    }
    if (!row->run) {
        snprintf(cause, room, "no run function");
        return 1;
    }
    return 0;
}
