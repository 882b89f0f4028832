/* common.cuh: what the CUDA backend's files share (see backend.cu).
 *
 * The device and buffer structs, one checking macro per API (CUDA runtime,
 * cuBLAS) that returns KCS_ERROR with the expression, file, line and the
 * error's name and text, reusable scratch memory, event timing, device
 * selection, the ceilings' measurement, and the one path every row's run
 * takes (kcs_cuda_timed, cuda/timed.cuh). Kernel rows are not declared
 * here: each op file defines its run functions and exports its own table.
 * The harness headers are C without extern "C" guards, so they are included
 * inside one here.
 */
#ifndef KCS_CUDA_COMMON_CUH
#define KCS_CUDA_COMMON_CUH

#include <cstddef>
#include <cstdint>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "half.cuh" /* the 16-bit storage types: kcs_widen, kcs_compute, kcs_narrow */

extern "C" {
#include "backend.h"
#include "op.h"
}

/* Device memory that grows on demand and is kept between runs, so that no
 * cudaMalloc (which synchronizes the device) lands inside a timed region. */
struct kcs_cuda_scratch {
    void *data;   /* NULL until first reserved */
    size_t bytes; /* capacity of data */
};

/* Holds a device's stream can have queued at once: one for a run timed on
 * its own, two for chunks of repeats timed back to back (backend.cu). */
#define KCS_CUDA_HOLDS 3

/* An opened CUDA device: everything open() acquired, released by close(). */
struct kcs_device {
    int ordinal;                  /* CUDA device index */
    int sm_count;                 /* streaming multiprocessors, for grid sizing */
    cudaStream_t stream;          /* every copy and launch goes here */
    cublasHandle_t blas;          /* bound to stream */
    cublasLtHandle_t blas_lt;     /* cuBLASLt (FP8 GEMMs, cuda/gemm/fp8_cublaslt.cu); streams are per call */
    int compute_capability;       /* 10 * major + minor: 90 for sm_90 */
    cudaEvent_t start, stop;      /* recorded around the launches of one run */
    /* Holding the stream while a timed run's launches are queued (backend.cu, "Timing"). */
    /* Pinned and mapped, KCS_CUDA_HOLDS pairs of [0] release, [1] gave up: pair 0
     * for a run timed on its own, the others for the chunks of repeats timed
     * back to back (backend.cu, "Back to back"); NULL: no holds. */
    int *hold_flags;
    int *hold_flags_on_device;    /* the same ints as the device addresses them */
    int held;                     /* the pair whose hold is queued and not yet released; -1: none */
    int hold_give_ups;            /* holds in a row that gave up; at 3 the device stops holding */
    struct kcs_cuda_chunk *queueing; /* non-NULL while repeats are queued back to back: the timer's events */
    struct kcs_cuda_chunk *chunks;   /* KCS_CUDA_HOLDS - 1 of them, made at the first use; NULL: none yet */
    unsigned int *blocks_done;    /* last-block-done counter; zero between launches */
    kcs_cuda_scratch partials;    /* per-block partial results of reductions */
    kcs_cuda_scratch cub_storage; /* CUB's temporary storage */
    kcs_cuda_scratch lt_workspace; /* cuBLASLt's workspace and the FP8 scales it reads on the device */
    /* The FP8 scales in lt_workspace, so that the repeats of a case copy them
     * once (cuda/gemm/fp8_cublaslt.cu); valid: they are there. */
    float lt_scales[2];
    bool lt_scales_valid;
};

/* Device memory from cudaMalloc; data is NULL when bytes is 0. */
struct kcs_buffer {
    size_t bytes; /* first, as harness/backend.h asks */
    void *data;
};

/* Fills err from a failed CUDA runtime call, clears the runtime's last
 * error (so that a later launch check does not report it again) and
 * returns KCS_ERROR. */
kcs_status kcs_cuda_failure(kcs_error *err, cudaError_t result, const char *expression,
                            const char *file, int line);

/* The same for a failed cuBLAS call. */
kcs_status kcs_cublas_failure(kcs_error *err, cublasStatus_t result, const char *expression,
                              const char *file, int line);

/* Returns KCS_ERROR from the enclosing function (which has a kcs_error *err)
 * when a CUDA runtime call fails. */
#define KCS_CUDA_CHECK(expression)                                                              \
    do {                                                                                        \
        cudaError_t kcs_cuda_result_ = (expression);                                            \
        if (kcs_cuda_result_ != cudaSuccess)                                                    \
            return kcs_cuda_failure(err, kcs_cuda_result_, #expression, __FILE__, __LINE__);    \
    } while (0)

/* Checks a kernel launch just made (launches return no status of their own). */
#define KCS_CUDA_CHECK_LAUNCH(kernel_name)                                                      \
    do {                                                                                        \
        cudaError_t kcs_cuda_result_ = cudaGetLastError();                                      \
        if (kcs_cuda_result_ != cudaSuccess)                                                    \
            return kcs_cuda_failure(err, kcs_cuda_result_, "launch of " kernel_name, __FILE__,  \
                                    __LINE__);                                                  \
    } while (0)

/* Returns KCS_ERROR from the enclosing function when a cuBLAS call fails. */
#define KCS_CUBLAS_CHECK(expression)                                                            \
    do {                                                                                        \
        cublasStatus_t kcs_cublas_result_ = (expression);                                       \
        if (kcs_cublas_result_ != CUBLAS_STATUS_SUCCESS)                                        \
            return kcs_cublas_failure(err, kcs_cublas_result_, #expression, __FILE__, __LINE__); \
    } while (0)

/* Makes device the calling thread's current CUDA device (several may be open). */
kcs_status kcs_cuda_select(kcs_device *device, kcs_error *err);

/* What every run does first (kcs_cuda_timed): checks its buffers against
 * the op's layout (kcs_check_buffers) and selects the device. */
kcs_status kcs_cuda_begin(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                          kcs_buffer *const outputs[], kcs_error *err);

/* Ends a run whose launches failed (kcs_cuda_timed): releases its hold and
 * waits for the stream, whatever that wait reports; returns status. */
kcs_status kcs_cuda_drain(kcs_device *device, kcs_status status);

/* Ensures scratch holds at least bytes; never shrinks. Call it before the
 * timer starts: growing frees and allocates, which synchronize the device. */
kcs_status kcs_cuda_reserve(kcs_cuda_scratch *scratch, size_t bytes, kcs_error *err);

/* Starts timing a run: records the start event on the device's stream,
 * behind a hold when the run is timed (kernel_seconds, the run's own
 * parameter, not NULL), so that the launches that follow are all queued
 * before the clock starts (backend.cu, "Timing"). */
kcs_status kcs_cuda_timer_start(kcs_device *device, const double *kernel_seconds, kcs_error *err);

/* Releases the hold, records the stop event, waits for it and sets *seconds
 * to the time between; with seconds NULL (an asynchronous run) it does
 * nothing and returns. */
kcs_status kcs_cuda_timer_stop(kcs_device *device, double *seconds, kcs_error *err);

/* Measures those of the copy, upload, FMA and every GEMM mode's rates that wanted asks for (ceilings.cu). */
kcs_status kcs_cuda_measure_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                     kcs_error *err);

#include "timed.cuh" /* kcs_cuda_timed: the one path of every row's run */

#endif
