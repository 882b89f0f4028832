/* canaries.cl: compiler and driver bugs kcs has found, kept as kernels that
 * trip them (docs/canaries.md). Each canary is a correct implementation of an
 * op, written in the one pattern a known compiler miscompiles, and is checked
 * like any kernel row: it passes where the compiler is right and fails where
 * the bug is. kcs's own kernels avoid every pattern here.
 *
 * Canary 1, zero-then-store: LLVM 14 and 15's loop vectorizer, given a loop
 * it may assume parallel (POCL 3's work-item loops are marked so), moves the
 * unconditional stores of a default to an array past the conditional stores
 * of the values to the same elements, when it vectorizes the loop (POCL 3.1
 * does on CPUs where it takes its avx512 kernel library). Found in the
 * sorted-welford reduce of opencl/anneal.cl, whose run starts came out zero;
 * tests/canaries/zero_then_store.c is the same bug in plain C.
 *
 * The kernel computes relu in f32, so no accumulation arises: each output is
 * one select of its input. A work-group of KCS_CANARY_GROUP work-items stages
 * its 4 KCS_CANARY_GROUP inputs in local memory in the pattern (a store of 0,
 * then, where the element exists, a store of the input loaded from global
 * memory: the load must be in the condition for LLVM 15 to vectorize it as a
 * masked load and misplace the stores), then each output is read back from
 * its stage. The stage holds the input's bits XOR KCS_CANARY_KEY, a NaN
 * pattern, so a 0 left by the misplaced default reads back as a NaN and fails
 * the element whatever the input's sign (a plain 0 would pass as relu of a
 * negative input).
 */
#pragma OPENCL FP_CONTRACT OFF

#define KCS_CANARY_GROUP 64
#define KCS_CANARY_EACH 4
#define KCS_CANARY_KEY 0x7fa00000u

__attribute__((reqd_work_group_size(KCS_CANARY_GROUP, 1, 1)))
kernel void kcs_canary_zero_then_store_relu(global const float *x, global float *out, ulong n)
{
    local uint staged[KCS_CANARY_EACH * KCS_CANARY_GROUP];
    const uint id = get_local_id(0);
    const ulong first = (ulong)get_group_id(0) * (KCS_CANARY_EACH * KCS_CANARY_GROUP);
    const uint used = (uint)min((ulong)(KCS_CANARY_EACH * KCS_CANARY_GROUP), n - first);
#pragma unroll
    for (int e = 0; e < KCS_CANARY_EACH; e++) {
        uint slot = KCS_CANARY_EACH * id + e;
        staged[slot] = 0; /* the default ... */
        if (slot < used)  /* ... then the value, to the same element, no barrier between */
            staged[slot] = as_uint(x[first + slot]) ^ KCS_CANARY_KEY;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint slot = id; slot < used; slot += KCS_CANARY_GROUP) {
        float value = as_float(staged[slot] ^ KCS_CANARY_KEY);
        out[first + slot] = value < 0.0f ? 0.0f : value;
    }
}
