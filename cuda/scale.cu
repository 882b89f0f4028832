/* scale.cu: y[i] = alpha * x[i] (docs/scale.md), the test-only op that proves
 * a new op takes new files only (docs/adding-an-op.md).
 *
 * One kernel template over the element type, a row per dtype of
 * KCS_SCALE_TYPES (ref/kcs_ref_scale.h): a grid-stride loop, one IEEE
 * multiply per element (a lone multiply: nothing for -fmad to fuse), in the
 * type, subnormals kept (no -ftz). It exists to be checked, not to be fast.
 *
 * Run only it: build/kcs run --backend cuda --cases tests/cases scale
 */
#include "common.cuh"

extern "C" {
#include "kcs_ref_scale.h"
}

namespace {

constexpr int threads_per_block = 256;

template <typename T> __global__ void kcs_scale(const T *x, T *y, T alpha, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = alpha * x[i];
}

template <typename T> KCS_KERNEL_RUN(run)
{
    const size_t n = args->scale.n;
    size_t blocks = 0;
    auto plan = [&]() -> kcs_status {
        /* Enough blocks to fill the device a few times over; the loop takes the rest. */
        blocks = (n + threads_per_block - 1) / threads_per_block;
        const size_t most = (size_t)device->sm_count * 8;
        blocks = blocks < 1 ? 1 : blocks > most ? most : blocks;
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        kcs_scale<T><<<(unsigned int)blocks, threads_per_block, 0, device->stream>>>(
            (const T *)inputs[0]->data, (T *)outputs[0]->data, (T)args->scale.alpha, n);
        KCS_CUDA_CHECK_LAUNCH("kcs_scale");
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

#define ROW(suffix, T, dtype) {"scale", dtype, "grid-stride", "one thread per element, grid-stride", run<T>, NULL},

const kcs_kernel rows[] = {KCS_SCALE_TYPES(ROW)};

} // namespace

extern "C" const kcs_kernel_table kcs_cuda_scale_kernels = KCS_KERNEL_TABLE(rows);
