/* fp8_cublaslt.cuh: one FP8 GEMM through cuBLASLt (cuda/gemm/fp8_cublaslt.cu), shared by the
 * FP8 peer row and the FP8 ceiling (cuda/ceilings.cu), so that both call
 * cuBLASLt the same way.
 *
 * In cuBLASLt's column-major terms: D = alpha * scale_a * scale_b * op(A)
 * op(B) + beta * C with op(A) = A^T and op(B) = B (the "TN" layout, the only
 * one cuBLASLt's FP8 kernels take on Ada and Hopper): A is stored depth x
 * rows and B depth x columns, both with leading dimension depth, C and D
 * rows x columns with leading dimension rows. The accumulation is f32, with
 * cuBLASLt's default periodic promotion (CUBLASLT_MATMUL_DESC_FAST_ACCUM
 * left off: docs/gemm.md, "FP8").
 */
#ifndef KCS_CUDA_GEMM_FP8_CUBLASLT_CUH
#define KCS_CUDA_GEMM_FP8_CUBLASLT_CUH

#include "../common.cuh"

/* One FP8 GEMM, prepared (kcs_lt_fp8_prepare), run, then released. */
struct kcs_lt_fp8_gemm {
    cudaDataType_t a_type, b_type; /* CUDA_R_8F_E4M3 or CUDA_R_8F_E5M2 (not both E5M2) */
    cudaDataType_t d_type;         /* C and D: CUDA_R_32F, CUDA_R_16BF or CUDA_R_16F */
    int rows, columns, depth;      /* of D, and the length of the dot products */
    const float *a_scale, *b_scale; /* device pointers to one float each; NULL: 1 */
    /* filled by kcs_lt_fp8_prepare, released by kcs_lt_fp8_release */
    cublasLtMatmulDesc_t operation;
    cublasLtMatrixLayout_t a_layout, b_layout, d_layout;
    cublasLtMatmulHeuristicResult_t algorithm;
};

/* Creates the descriptors and asks cuBLASLt for an algorithm within
 * workspace_bytes; KCS_UNSUPPORTED, with the reason, when it has none. Host
 * work only: call it before the timer starts. Release the gemm whatever it
 * returns. */
kcs_status kcs_lt_fp8_prepare(kcs_device *device, kcs_lt_fp8_gemm *gemm, size_t workspace_bytes, kcs_error *err);

/* Enqueues the prepared GEMM on the device's stream: D = alpha * scales *
 * A^T B + beta * C (C not read when beta = 0). */
kcs_status kcs_lt_fp8_run(kcs_device *device, const kcs_lt_fp8_gemm *gemm, float alpha, const void *a,
                          const void *b, float beta, const void *c, void *d, void *workspace,
                          size_t workspace_bytes, kcs_error *err);

/* Destroys what kcs_lt_fp8_prepare created. */
void kcs_lt_fp8_release(kcs_lt_fp8_gemm *gemm);

/* The workspace kcs asks cuBLASLt to work within (NVIDIA recommends 32 MiB on Hopper). */
constexpr size_t kcs_lt_workspace_bytes = size_t(32) << 20;

#endif
