/* zero_then_store.c: canary 1 of docs/canaries.md in plain C, so that any
 * x86-64 machine with clang shows whether that compiler has the bug, without
 * POCL or an AVX-512 CPU (tests/compiler_canary_test.sh builds and runs it).
 *
 * The loop is marked safe to vectorize, as POCL 3 marks its work-item loops
 * parallel; each iteration (a work-item) stores a default of 0 to four
 * elements and then, where the element is in use, the value loaded from src,
 * as opencl/canaries.cl and the sorted-welford reduce of opencl/anneal.cl once
 * did. clang 14 and 15 at -O3 vectorize it with the zero stores merged into
 * one wide store placed after the masked stores of the values: "19 wrong".
 *
 * Built with -DKCS_CANARY_STORE_ONCE it is the form kcs's kernels use instead,
 * the value formed in a variable and stored once, which every compiler must
 * get right. Exit status: 0 when every element is right, 1 otherwise.
 */
#include <stdio.h>

enum { slots = 1024, used = 25, each = 4 };

__attribute__((noinline)) static void fill(unsigned *restrict slot, const unsigned *restrict src, unsigned in_use,
                                           unsigned work_items)
{
#pragma clang loop vectorize(assume_safety)
    for (unsigned id = 0; id < work_items; id++)
#pragma unroll
        for (unsigned e = 0; e < each; e++) {
            unsigned i = each * id + e;
#ifdef KCS_CANARY_STORE_ONCE
            unsigned value = 0;
            if (i < in_use)
                value = src[i];
            slot[i] = value;
#else
            slot[i] = 0;
            if (i < in_use)
                slot[i] = src[i];
#endif
        }
}

int main(void)
{
    static unsigned slot[slots], src[slots];
    for (unsigned i = 0; i < slots; i++)
        src[i] = 1000 + i;
    fill(slot, src, used, slots / each);
    int wrong = 0;
    for (unsigned i = 0; i < slots; i++)
        wrong += slot[i] != (i < used ? src[i] : 0u);
    printf("%d wrong\n", wrong);
    return wrong != 0;
}
