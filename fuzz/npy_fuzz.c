/* npy_fuzz.c: libFuzzer target for the .npy reader.
 *
 * Any bytes must be read as an array or refused with a message: never a
 * crash, an over-read, an overflow in the size arithmetic or a leak. Build
 * and run: ninja fuzz (then build/fuzz/npy_fuzz fuzz/corpus/npy
 * -max_total_time=600). docs/fuzzing.md says more.
 */
#include <stdint.h>
#include <string.h>

#include "npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kcs_npy_array array;
    kcs_error err;
    if (kcs_npy_parse(data, size, "fuzz.npy", &array, &err) == KCS_OK) {
        /* touch every byte the reader claims to have produced */
        size_t bytes = kcs_npy_element_count(&array) * kcs_dtype_size(array.dtype);
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < bytes; i++)
            sum += ((unsigned char *)array.data)[i];
        kcs_npy_free(&array);
    }
    return 0;
}
