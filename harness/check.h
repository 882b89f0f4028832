/* check.h: comparing a backend's outputs with the expected values, element
 * by element, within the op's derived bound.
 *
 * Rules (docs/checking.md): an expected NaN needs a NaN; an expected
 * infinity needs the same infinity; a finite expected value e with bound b
 * needs |actual - e| <= b, except that an infinity of the right sign is
 * accepted when e + b reaches the type's overflow threshold. An element that
 * still holds the poison written before the run was never written.
 */
#ifndef KCS_CHECK_H
#define KCS_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "op.h"

/* The histogram of the fraction of its bound each checked element used
 * (error / bound), in powers of two, so that a report can tell a case with
 * room from one at its bound (docs/results.md, "fraction_histogram"). */
#define KCS_FRACTION_BINS 21           /* upper edges 2^-20, 2^-19, ..., 2^0 */
#define KCS_FRACTION_LOWEST_LOG2 (-20) /* log2 of the first bin's upper edge */

typedef struct {
    /* counts[i]: elements with 2^(u-1) < f <= 2^u, u = KCS_FRACTION_LOWEST_LOG2 + i;
     * counts[0] also holds every f <= 2^-20, exact elements (f = 0) included. */
    size_t counts[KCS_FRACTION_BINS];
    size_t above; /* elements outside their bound: f > 1, or f NaN */
} kcs_fraction_histogram;

/* Counts one element that used fraction of its bound (0 when exact; inf
 * for a wrong class, an unwritten element or any error against a zero bound). */
void kcs_fraction_histogram_add(kcs_fraction_histogram *histogram, double fraction);

/* What one comparison found. */
typedef struct kcs_check_result {
    int passed;             /* every checked element within its bound */
    size_t checked;         /* elements compared */
    size_t failures;        /* elements outside their bound */
    size_t unwritten;       /* elements still holding the poison */
    int worst_output;       /* output of the worst element (by fraction of bound) */
    size_t worst_index;     /* its flat index */
    double worst_expected;  /* expected value there */
    double worst_actual;    /* actual value there */
    double worst_error;     /* |actual - expected| (inf for a class mismatch) */
    double worst_bound;     /* bound there */
    double fraction;        /* worst error / bound; 0 when all exact, inf when b = 0 < error */
    kcs_fraction_histogram histogram; /* every checked element's fraction; its total is checked */
    char diagnosis[768];    /* on failure: the first bad element and what is wrong */
} kcs_check_result;

/* The coordinates of element index (flat, row-major as the layout's arrays
 * are stored) of an array of spec's shape: coordinates[spec->ndim]. */
void kcs_element_coordinates(const kcs_array_spec *spec, size_t index, size_t coordinates[]);

/* How every message names an element: by its coordinates in an array of two
 * or more dimensions ("c_out[13, 644]"), else by its index ("y[17]", "s[0]"). */
void kcs_element_name(const kcs_array_spec *spec, size_t index, char *text, size_t size);

/* The poison bit pattern of dtype, written into outputs before each run. */
void kcs_poison(void *data, kcs_dtype dtype, size_t count);

/* Whether element index of data still holds the poison of dtype. */
int kcs_is_poison(const void *data, kcs_dtype dtype, size_t index);

/* One element's error as a fraction of its bound, by the rules above: above
 * 1 (inf for a wrong class of value) when it is outside. */
double kcs_check_element(kcs_dtype dtype, double expected, double bound, double actual);

/* Compares actual outputs (host copies, in the layout's order) with expected. */
void kcs_check_outputs(const kcs_layout *layout, void *const actual[], const kcs_expected expected[],
                       kcs_check_result *result);

/* Adds to a failed result's diagnosis when the output is a trivial answer:
 * all zeros, or a copy of an input of the same size. */
void kcs_diagnose_trivial(const kcs_layout *layout, void *const inputs[], void *const actual[],
                          kcs_check_result *result);

#endif
