/* npy.h: reading and writing NumPy .npy files.
 *
 * Golden data and the "take a failure away" files are .npy so that anyone can
 * open them with numpy and look. The reader accepts format versions 1.0, 2.0
 * and 3.0 for the little-endian dtypes kcs knows ('<f2', '<f4', '<f8', '<i4',
 * '<i8', and '<u2' and '|u1' as the bits of bf16 and FP8 values), in C order, and turns
 * everything else (including damaged or hostile files) into a kcs_error that
 * names the file and the cause: it never crashes and never reads past the end
 * of its input. The writer produces files that np.load reads.
 */
#ifndef KCS_NPY_H
#define KCS_NPY_H

#include <stddef.h>

#include "dtype.h"
#include "status.h"

#define KCS_NPY_MAX_DIMS 4 /* the most dimensions any kcs case needs */

/* An array read from or to be written to a .npy file. */
typedef struct {
    kcs_dtype dtype;                /* element type */
    int ndim;                       /* 0 (a scalar) to KCS_NPY_MAX_DIMS */
    size_t shape[KCS_NPY_MAX_DIMS]; /* extent of each dimension; entries past ndim are 0 */
    void *data;                     /* malloc'd, C order, host byte order; never NULL after a successful read */
} kcs_npy_array;

/* Number of elements (1 for ndim 0, 0 if any extent is 0). */
size_t kcs_npy_element_count(const kcs_npy_array *array);

/* Reads path into array (caller frees with kcs_npy_free); array is zeroed on failure. */
kcs_status kcs_npy_read(const char *path, kcs_npy_array *array, kcs_error *err);

/* Whether an array read as stored holds what wanted needs: the same dtype, or
 * one with the same .npy spelling ('|u1': e4m3 and e5m2, told apart by use). */
int kcs_npy_dtype_matches(kcs_dtype stored, kcs_dtype wanted);

/* Parses a whole .npy file held in memory; name is used in messages; array is zeroed on failure. */
kcs_status kcs_npy_parse(const unsigned char *bytes, size_t length, const char *name,
                         kcs_npy_array *array, kcs_error *err);

/* Writes a version 1.0 file (2.0 if the header needs it), descr '<f2' '<f4' '<f8' '<i4' '<i8', fortran_order False. */
kcs_status kcs_npy_write(const char *path, kcs_dtype dtype, int ndim, const size_t *shape,
                         const void *data, kcs_error *err);

/* Frees array->data and zeroes the struct (safe on a zeroed struct). */
void kcs_npy_free(kcs_npy_array *array);

#endif
