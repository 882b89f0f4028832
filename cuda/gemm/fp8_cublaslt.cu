/* fp8_cublaslt.cu: FP8 GEMM on CUDA through cuBLASLt, the peer for kcs's FP8
 * cases (docs/gemm.md, "FP8"): C_out = alpha * a_scale * b_scale * op(A)
 * op(B) + beta * C, with A and B in OCP FP8 (e4m3 or e5m2), per-tensor
 * scales as cuBLASLt applies them (CUBLASLT_MATMUL_DESC_A_SCALE_POINTER and
 * B_SCALE_POINTER, f32 on the device), and C and C_out in f32, bf16 or f16
 * as the case's c_dtype says. Row:
 *
 *   cublaslt   cublasLtMatmul with CUBLAS_COMPUTE_32F (f32 accumulation,
 *              with cuBLASLt's periodic promotion of the tensor cores'
 *              partial sums: FAST_ACCUM is left off, as the bound of
 *              docs/gemm.md assumes), f32 scale type, the default epilogue.
 *
 * The row-major mapping is simt.cu's: the row-major C is the column-major
 * C^T = op(B)^T op(A)^T, so cuBLASLt's A is kcs's b and its B is kcs's a,
 * and its A scale is kcs's b_scale. cuBLASLt's FP8 kernels take only the
 * "TN" layout (its A transposed, its B not) on Ada and Hopper, which is
 * kcs's transa=N transb=T: both operands stored with k contiguous (a as m x
 * k, b as n x k: an activation times a weight stored output-major, as LLM
 * layers keep them). Other transposes are refused in supports() with that
 * reason rather than transposed here (a transpose would be a second kernel
 * inside the timing). cuBLASLt also wants 16-byte aligned leading
 * dimensions: k a multiple of 16, and m, n multiples of 16 (C_out's rows).
 * alpha = 0 and k = 0 (docs/gemm.md, "What is not read") are refused too:
 * cuBLASLt documents nothing for them, and the tiled rows that handle them
 * have no FP8 kernel. FP8 needs compute capability 8.9 (Ada) or later:
 * those cases are skipped with the reason. e5m2 has no row: a case's A and B
 * share its dtype, and cuBLASLt has no e5m2 x e5m2 kernel (one operand must
 * be e4m3), so such a row would refuse every case, and a fleet's merge
 * rightly names a row that ran nothing (docs/fleet.md).
 *
 * Run only it: ./build/kcs run --backend cuda 'gemm/fp8*'
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fp8_cublaslt.cuh"
#include "gemm.cuh"

kcs_status kcs_lt_fp8_prepare(kcs_device *device, kcs_lt_fp8_gemm *gemm, size_t workspace_bytes, kcs_error *err)
{
    gemm->operation = nullptr;
    gemm->a_layout = gemm->b_layout = gemm->d_layout = nullptr;
    KCS_CUBLAS_CHECK(cublasLtMatmulDescCreate(&gemm->operation, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t transposed = CUBLAS_OP_T, as_stored = CUBLAS_OP_N;
    KCS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(gemm->operation, CUBLASLT_MATMUL_DESC_TRANSA, &transposed,
                                                    sizeof transposed));
    KCS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(gemm->operation, CUBLASLT_MATMUL_DESC_TRANSB, &as_stored,
                                                    sizeof as_stored));
    if (gemm->a_scale)
        KCS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(gemm->operation, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                        &gemm->a_scale, sizeof gemm->a_scale));
    if (gemm->b_scale)
        KCS_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(gemm->operation, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                        &gemm->b_scale, sizeof gemm->b_scale));
    KCS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&gemm->a_layout, gemm->a_type, gemm->depth, gemm->rows, gemm->depth));
    KCS_CUBLAS_CHECK(
        cublasLtMatrixLayoutCreate(&gemm->b_layout, gemm->b_type, gemm->depth, gemm->columns, gemm->depth));
    KCS_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&gemm->d_layout, gemm->d_type, gemm->rows, gemm->columns, gemm->rows));

    cublasLtMatmulPreference_t preference = nullptr;
    KCS_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
    int found = 0;
    cublasStatus_t result = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof workspace_bytes);
    if (result == CUBLAS_STATUS_SUCCESS)
        result = cublasLtMatmulAlgoGetHeuristic(device->blas_lt, gemm->operation, gemm->a_layout, gemm->b_layout,
                                                gemm->d_layout, gemm->d_layout, preference, 1, &gemm->algorithm,
                                                &found);
    (void)cublasLtMatmulPreferenceDestroy(preference);
    if (result == CUBLAS_STATUS_NOT_SUPPORTED || (result == CUBLAS_STATUS_SUCCESS && found == 0))
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "cuBLASLt has no FP8 algorithm for %d x %d x %d with these types on this device", gemm->rows,
                        gemm->columns, gemm->depth);
    KCS_CUBLAS_CHECK(result);
    return KCS_OK;
}

kcs_status kcs_lt_fp8_run(kcs_device *device, const kcs_lt_fp8_gemm *gemm, float alpha, const void *a,
                          const void *b, float beta, const void *c, void *d, void *workspace,
                          size_t workspace_bytes, kcs_error *err)
{
    KCS_CUBLAS_CHECK(cublasLtMatmul(device->blas_lt, gemm->operation, &alpha, a, gemm->a_layout, b, gemm->b_layout,
                                    &beta, c, gemm->d_layout, d, gemm->d_layout, &gemm->algorithm.algo, workspace,
                                    workspace_bytes, device->stream));
    return KCS_OK;
}

void kcs_lt_fp8_release(kcs_lt_fp8_gemm *gemm)
{
    if (gemm->operation)
        (void)cublasLtMatmulDescDestroy(gemm->operation);
    if (gemm->a_layout)
        (void)cublasLtMatrixLayoutDestroy(gemm->a_layout);
    if (gemm->b_layout)
        (void)cublasLtMatrixLayoutDestroy(gemm->b_layout);
    if (gemm->d_layout)
        (void)cublasLtMatrixLayoutDestroy(gemm->d_layout);
    gemm->operation = nullptr;
    gemm->a_layout = gemm->b_layout = gemm->d_layout = nullptr;
}

namespace {

/* cuBLASLt's name of a storage type. */
cudaDataType_t fp8_type(kcs_dtype dtype) { return dtype == KCS_FP8_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3; }

cudaDataType_t output_type(kcs_dtype dtype)
{
    return dtype == KCS_BF16 ? CUDA_R_16BF : dtype == KCS_F16 ? CUDA_R_16F : CUDA_R_32F;
}

/* The scales live at the start of the workspace scratch, the workspace after them. */
constexpr size_t scales_bytes = 256;

KCS_KERNEL_SUPPORTS(supports_fp8)
{
    const kcs_gemm_args *g = &args->gemm;
    if (device->compute_capability < 89)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "FP8 GEMMs need compute capability 8.9 (Ada) or later; this device is %d.%d",
                        device->compute_capability / 10, device->compute_capability % 10);
    if (g->transpose_a || !g->transpose_b)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "cuBLASLt's FP8 GEMM takes only k-contiguous operands (its \"TN\" layout): transa=N "
                        "transb=T, not transa=%c transb=%c",
                        g->transpose_a ? 'T' : 'N', g->transpose_b ? 'T' : 'N');
    if (g->alpha == 0.0 || g->k == 0)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "alpha = 0 and k = 0 leave A and B unread (docs/gemm.md); cuBLASLt promises nothing "
                        "there (kcs's wgmma-fp8 runs these cases on Hopper)");
    if (g->m % 16 || g->n % 16 || g->k % 16)
        return kcs_fail(err, KCS_UNSUPPORTED,
                        "cuBLASLt's FP8 GEMM needs 16-byte aligned leading dimensions: m, n and k multiples of "
                        "16, not m=%zu n=%zu k=%zu",
                        g->m, g->n, g->k);
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX)
        return kcs_fail(err, KCS_UNSUPPORTED, "cuBLASLt takes int sizes: m=%zu n=%zu k=%zu", g->m, g->n, g->k);
    return KCS_OK;
}

KCS_KERNEL_RUN(run_cublaslt)
{
    const kcs_gemm_args *g = &args->gemm;
    void *workspace = nullptr;
    kcs_lt_fp8_gemm gemm = {};
    auto prepare = [&]() -> kcs_status {
        kcs_status status = supports_fp8(device, args, err);
        const kcs_cuda_scratch before = device->lt_workspace;
        if (status == KCS_OK)
            status = kcs_cuda_reserve(&device->lt_workspace, scales_bytes + kcs_lt_workspace_bytes, err);
        if (status != KCS_OK)
            return status;
        if (device->lt_workspace.data != before.data || device->lt_workspace.bytes != before.bytes)
            device->lt_scales_valid = false; /* new memory */
        /* The scales, on the device before the timer: cuBLASLt reads them there.
         * Copied only when they or their memory changed: the copy waits for the
         * device, which a run among repeats queued back to back must not
         * (cuda/backend.cu, "Back to back"), and a case's repeats share them. */
        float *scales = (float *)device->lt_workspace.data;
        if (!device->lt_scales_valid || device->lt_scales[0] != (float)g->a_scale ||
            device->lt_scales[1] != (float)g->b_scale) {
            /* Each scale 16-byte aligned: cuBLASLt (13.0, H100) answered
             * CUBLAS_STATUS_NOT_SUPPORTED for a scale 4 bytes past an aligned one. */
            const float host_scales[8] = {(float)g->a_scale, 0, 0, 0, (float)g->b_scale, 0, 0, 0};
            device->lt_scales_valid = false; /* until the copy is done */
            KCS_CUDA_CHECK(cudaMemcpyAsync(scales, host_scales, sizeof host_scales, cudaMemcpyHostToDevice,
                                           device->stream));
            KCS_CUDA_CHECK(cudaStreamSynchronize(device->stream)); /* host_scales goes out of scope */
            device->lt_scales[0] = (float)g->a_scale;
            device->lt_scales[1] = (float)g->b_scale;
            device->lt_scales_valid = true;
        }
        workspace = (char *)device->lt_workspace.data + scales_bytes;

        /* C^T = op(B)^T op(A)^T: cuBLASLt's A is b (n x k, k contiguous), its B is a (m x k). */
        gemm.a_type = fp8_type(args->dtype);
        gemm.b_type = fp8_type(args->dtype);
        gemm.d_type = output_type(kcs_gemm_c_dtype(args));
        gemm.rows = (int)g->n, gemm.columns = (int)g->m, gemm.depth = (int)g->k;
        gemm.a_scale = scales + 4; /* b_scale */
        gemm.b_scale = scales;     /* a_scale */
        return kcs_lt_fp8_prepare(device, &gemm, kcs_lt_workspace_bytes, err);
    };
    auto launch = [&]() -> kcs_status {
        if (g->m > 0 && g->n > 0)
            return kcs_lt_fp8_run(device, &gemm, (float)g->alpha, inputs[1]->data, inputs[0]->data, (float)g->beta,
                                  inputs[2]->data, outputs[0]->data, workspace, kcs_lt_workspace_bytes, err);
        return KCS_OK;
    };
    const kcs_status status = kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, prepare, launch);
    kcs_lt_fp8_release(&gemm); /* whatever prepare made, on every path */
    return status;
}

} // namespace

static const kcs_kernel rows[] = {
    {"gemm", KCS_FP8_E4M3, "cublaslt",
     "peer: cublasLtMatmul, e4m3 inputs, per-tensor scales, f32 accumulation (TN: transa=N transb=T)",
     run_cublaslt, supports_fp8, "cuBLASLt"},
};

extern "C" const kcs_kernel_table kcs_cuda_gemm_fp8_cublaslt_kernels = KCS_KERNEL_TABLE(rows);
