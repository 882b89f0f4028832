/* gemm.cuh: what the CUDA GEMM rows share (docs/gemm.md).
 *
 * The rows of the one op come in six families, a file each in cuda/gemm/:
 * simt.cu (kcs's tiled kernel on the CUDA cores, and the cuBLAS peers of
 * every mode but FP8), tensor_mma.cu (mma.sync on tensor cores, every card
 * from sm_80), tensor_wgmma.cu (Hopper's wgmma, built for sm_90a alone),
 * tensor_f64.cu (the FP64 tensor cores), fp8_cublaslt.cu (FP8 through
 * cuBLASLt) and fp8_wgmma.cu (kcs's own FP8 GEMM on Hopper, sm_90a alone;
 * hopper.cuh holds what it shares with tensor_wgmma.cu). configure.py lists
 * their tables in the order of their paths, which keeps simt.cu's rows
 * first for f32, f64, f16 and bf16, and cuBLASLt's for FP8: the first row
 * of an op and dtype is the one the library runs where a call names no
 * variant (docs/library.md).
 *
 * Here: the sizes the int-indexed kernels and cuBLAS take, and the one
 * choice of the storage type of c and c_out. The buffers are checked
 * against ops/gemm.c's layout by every row's run (kcs_cuda_timed).
 */
#ifndef KCS_CUDA_GEMM_CUH
#define KCS_CUDA_GEMM_CUH

#include <climits>

#include "../common.cuh"

/* The largest m, n and k a CUDA GEMM row takes: cuBLAS takes int sizes, and
 * kcs's kernels index rows, columns and k in int, a tile past the end
 * included. */
constexpr size_t kcs_gemm_most_size = (size_t)INT_MAX - 1024;

/* KCS_UNSUPPORTED, with the limits, where m, n or k is above
 * kcs_gemm_most_size or m above most_m (a row's own limit: a grid's 65535
 * rows of blocks times a block's rows, for the rows whose grid is that
 * shape; kcs_gemm_most_size for the others). */
inline kcs_status kcs_gemm_sizes_fit(const kcs_gemm_args *g, size_t most_m, kcs_error *err)
{
    if (g->m > most_m || g->m > kcs_gemm_most_size || g->n > kcs_gemm_most_size || g->k > kcs_gemm_most_size)
        return kcs_fail(err, KCS_UNSUPPORTED, "gemm: m at most %zu, n and k at most %zu here (m=%zu n=%zu k=%zu)",
                        most_m < kcs_gemm_most_size ? most_m : kcs_gemm_most_size, kcs_gemm_most_size, g->m,
                        g->n, g->k);
    return KCS_OK;
}

/* A type passed as a value, for kcs_gemm_with_output's body. */
template <typename T> struct kcs_type_tag {
    using type = T;
};

/* The one choice of a GEMM row's output type: body(kcs_type_tag<Out>()),
 * Out the storage type of c and c_out: In itself, or float where In is 16
 * bits (f16, bf16) and the case says c_dtype=f32 (kcs_gemm_c_dtype); for
 * FP8 (In of 1 byte, never an output) the case's c_dtype: float,
 * __nv_bfloat16 or __half. */
template <typename In, typename Body> kcs_status kcs_gemm_with_output(const kcs_op_args *args, Body &&body)
{
    if constexpr (sizeof(In) == 1) {
        switch (kcs_gemm_c_dtype(args)) {
        case KCS_BF16:
            return body(kcs_type_tag<__nv_bfloat16>());
        case KCS_F16:
            return body(kcs_type_tag<__half>());
        default: /* f32: ops/gemm.c admits no other c_dtype for FP8 */
            return body(kcs_type_tag<float>());
        }
    } else {
        if constexpr (sizeof(In) == 2) {
            if (kcs_gemm_c_dtype(args) == KCS_F32)
                return body(kcs_type_tag<float>());
        }
        return body(kcs_type_tag<In>());
    }
}

#endif
