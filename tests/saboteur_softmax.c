/* saboteur_softmax.c: broken softmaxes, each a mistake real kernels make:
 * no max subtraction (exp overflows near 1e4), the last row computed from
 * the row before it (an index clamped one short), and a row sum that stops
 * one element short. Computed in double and rounded to the case dtype, so
 * each error is the mistake alone. */
#include <math.h>
#include <stdlib.h>

#include "saboteur_backend.h"

/* What one saboteur gets wrong; all zero is a correct softmax. */
typedef struct {
    int no_max;           /* exp(x) / sum exp(x), without subtracting the max */
    int last_row_shifted; /* the last row reads the row before it */
    int sum_drops_last;   /* the row sum leaves out the last element */
} softmax_mistake;

static kcs_status broken_softmax(kcs_device *device, const kcs_op_args *args,
                                 kcs_buffer *const in[], kcs_buffer *const out[],
                                 const softmax_mistake *mistake, kcs_error *err)
{
    size_t rows = args->softmax.rows, cols = args->softmax.cols, count = rows * cols;
    size_t bytes = count * kcs_dtype_size(args->dtype);
    void *x = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &x, err);
    void *y = malloc(bytes ? bytes : 1);
    if (status == KCS_OK && !y)
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t r = 0; r < rows && status == KCS_OK; r++) {
        size_t source = mistake->last_row_shifted && r == rows - 1 && r > 0 ? r - 1 : r;
        double max = -INFINITY, sum = 0.0;
        for (size_t k = 0; k < cols; k++)
            max = fmax(max, kcs_load_element(x, args->dtype, source * cols + k));
        double shift = mistake->no_max ? 0.0 : max;
        size_t summed = mistake->sum_drops_last && cols > 1 ? cols - 1 : cols;
        for (size_t k = 0; k < summed; k++)
            sum += exp(kcs_load_element(x, args->dtype, source * cols + k) - shift);
        for (size_t k = 0; k < cols; k++)
            kcs_store_element(y, args->dtype, r * cols + k,
                              exp(kcs_load_element(x, args->dtype, source * cols + k) - shift) /
                                  sum);
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], y, bytes, err);
    free(x);
    free(y);
    return status;
}

#define SABOTEUR_FUNCTION(function, ...)                                                           \
    static kcs_status function(kcs_device *device, const kcs_op_args *args,                        \
                               kcs_buffer *const in[], kcs_buffer *const out[], double *seconds,   \
                               kcs_error *err)                                                     \
    {                                                                                              \
        static const softmax_mistake mistake = {__VA_ARGS__};                                      \
        *seconds = 0;                                                                              \
        return broken_softmax(device, args, in, out, &mistake, err);                               \
    }

SABOTEUR_FUNCTION(softmax_no_max, .no_max = 1)
SABOTEUR_FUNCTION(softmax_last_row_shifted, .last_row_shifted = 1)
SABOTEUR_FUNCTION(softmax_sum_drops_last, .sum_drops_last = 1)

#define SABOTEUR(name, description, function)                                                      \
    {"softmax", KCS_F64, name, description, function, NULL},                                       \
    {"softmax", KCS_F32, name, description, function, NULL}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/softmax.txt says which saboteur must fail where):
 * kcs-saboteur-cases: softmax/f32-near-1e4 softmax/f64-near-1e4 */
static const kcs_kernel rows[] = {
    SABOTEUR("no-max-subtraction", "exp(x) / sum exp(x): overflows for x near 1e4", softmax_no_max),
    SABOTEUR("last-row-off-by-one", "the last row is computed from the row before it",
             softmax_last_row_shifted),
    SABOTEUR("sum-one-element-short", "the row sum leaves out the last element",
             softmax_sum_drops_last),
};

const kcs_kernel_table kcs_saboteur_softmax_kernels = KCS_KERNEL_TABLE(rows);
