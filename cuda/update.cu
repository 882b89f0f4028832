/* update.cu: anneal's update step on CUDA (docs/anneal.md): the anchors a
 * and velocities v (m x d, f32) moved towards the means of reduce (f32),
 * where an anchor's count (i32) is not 0.
 *
 * update: one thread an element of m x d: v' = fma(mu, v, mean - a) where
 * count > 0 (mean - a first, exact near convergence), mu * v otherwise;
 * a' = fma(lr * T, v', a), lr * T one f32 product of the f32 parameters.
 *
 * Precision: a handful of f32 roundings, as its bound counts them. A few
 * microseconds at the perf case's sizes (launch-bound).
 *
 * Run only it: ./build/kcs run --backend cuda 'anneal/update-*'
 */
#include <cstdint>

#include "common.cuh"
#include "anneal.cuh"

namespace {

__global__ void __launch_bounds__(256)
kcs_update_elements(const float *__restrict__ a, const float *__restrict__ v, const float *__restrict__ mean,
                    const int *__restrict__ count, size_t cells, size_t d, float momentum, float rate,
                    float *__restrict__ a_next, float *__restrict__ v_next)
{
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < cells; i += stride) {
        const float anchor = a[i], velocity = v[i];
        /* (mean - a) first: exact near convergence (Sterbenz) */
        const float next =
            count[i / d] > 0 ? fmaf(momentum, velocity, mean[i] - anchor) : momentum * velocity;
        v_next[i] = next;
        a_next[i] = fmaf(rate, next, anchor);
    }
}

KCS_KERNEL_RUN(run_update)
{
    const kcs_anneal_update_args *a = &args->update;
    const size_t m = a->m, d = a->d;
    const size_t cells = m * d; /* its bytes were checked against the layout: no overflow where it is used */
    /* The parameters rounded once to f32, and lr * T as one f32 product of those. */
    const float momentum = (float)a->momentum;
    const float learning_rate = (float)a->learning_rate, temperature = (float)a->temperature;
    const float rate = learning_rate * temperature;
    size_t blocks = 0;
    auto plan = [&]() -> kcs_status {
        int per_sm = 0;
        KCS_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kcs_update_elements, 256, 0));
        const size_t resident = wave_blocks(device, per_sm);
        blocks = (cells + 255) / 256;
        blocks = blocks < resident ? blocks : resident;
        return KCS_OK;
    };
    auto launch = [&]() -> kcs_status {
        if (cells > 0) {
            kcs_update_elements<<<(unsigned int)blocks, 256, 0, device->stream>>>(
                (const float *)inputs[0]->data, (const float *)inputs[1]->data, (const float *)inputs[2]->data,
                (const int *)inputs[3]->data, cells, d, momentum, rate, (float *)outputs[0]->data,
                (float *)outputs[1]->data);
            KCS_CUDA_CHECK_LAUNCH("kcs_update_elements");
        }
        return KCS_OK;
    };
    return kcs_cuda_timed(device, args, inputs, outputs, kernel_seconds, err, plan, launch);
}

} // namespace

static const kcs_kernel rows[] = {
    {"update", KCS_F32, "elementwise", "v' = fma(mu, v, mean - a) or mu v; a' = fma(lr T, v', a)", run_update, NULL},
};

extern "C" const kcs_kernel_table kcs_cuda_update_kernels = KCS_KERNEL_TABLE(rows);
