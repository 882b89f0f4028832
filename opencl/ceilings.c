/* ceilings.c: the OpenCL device's own limits, measured in the same run as the
 * cases so that every kernel is reported as a fraction of them
 * (harness/backend.h, kcs_ceilings; the CUDA counterpart is cuda/ceilings.cu).
 *
 *   copy            clEnqueueCopyBuffer between two buffers of min(1 GiB,
 *                   max allocation / 2) bytes (256 MiB on a CPU device),
 *                   bytes read + bytes written over the command's
 *                   profiling-event time
 *   host to device  clEnqueueWriteBuffer of min(256 MiB, the copy size; 64
 *                   MiB on a CPU device) from a mapped CL_MEM_ALLOC_HOST_PTR
 *                   buffer, the page-locked memory of OpenCL (NVIDIA's
 *                   drivers pin it, as the backend's host_allocate does)
 *   FMA             kcs_ceilings_fma of opencl/ceilings.cl: 64 independent
 *                   f32 fma chains per work-item, 2048 work-items per
 *                   compute unit (256 on a CPU device), 2 flops per fma
 *   GEMM            kcs's own tuned f32 GEMM, the packed-128x128 row of
 *                   opencl/gemm.c run through its kernel row (packing
 *                   included, as its cases are timed), NN, alpha 1, beta 0,
 *                   n x n x n, 2 n^3 flops. OpenCL has no vendor GEMM to
 *                   measure, and kcs's best kernel is the rate the device
 *                   is known to reach. n is a whole number of 128 x 128
 *                   tiles, enough tiles for every compute unit (8 each on a
 *                   GPU, 2 on a CPU) and large enough to be compute-bound:
 *                   its arithmetic intensity n / 6 flop per byte at least 4
 *                   times the ridge point FMA / copy just measured; at most
 *                   2048 on a CPU (the row's own limit) and 8192 elsewhere.
 *                   It is also measured at the power of two nearest n, and
 *                   the faster rate kept: a whole number of tiles can still
 *                   end in a part-filled wave (on an H100, 4224^3 = 33^2
 *                   tiles over 132 compute units ran at 46.3 TFLOP/s and
 *                   the 4096^3 case at 48.9, 1.06 of that "ceiling").
 *                   Where the row cannot run (its build fails, the device
 *                   refuses its work-groups) the GEMM ceiling is left 0 and
 *                   method says why: the other ceilings stand.
 *
 * Each figure is the median of repeated runs after one warm-up, timed by
 * profiling events (device time, as the kernels are). CPU devices get
 * smaller sizes and fewer repeats, so that POCL measures in about a second.
 * Sources are filled and destinations written by the warm-up, so no
 * first-touch allocation is timed.
 *
 * Only the rates the run asks for are measured (harness/backend.h,
 * kcs_ceiling_mask), with what they need: the GEMM needs the copy and the FMA.
 *
 * Run only them: build/kcs devices --ceilings
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kcs_opencl.h"

KCS_OPENCL_EMBEDDED_SOURCE(ceilings);

/* opencl/ceilings.cl, which has no tunables to pass. */
static const kcs_opencl_program ceilings_program = KCS_OPENCL_PROGRAM(ceilings, "");

enum {
    fma_per_round = 64, /* eight float8 chains (KCS_CEILINGS_CHAINS in ceilings.cl) */
    most_repeats = 20,
    gemm_tile = 128,    /* the edge of the GEMM row's tiles of C */
};

/* The GEMM row the ceiling runs: kcs's fastest OpenCL f32 GEMM. */
static const char gemm_variant[] = "packed-128x128";

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *samples, int count)
{
    qsort(samples, (size_t)count, sizeof *samples, compare_doubles);
    return count % 2 ? samples[count / 2] : 0.5 * (samples[count / 2 - 1] + samples[count / 2]);
}

/* The device time of one finished command, releasing its event. */
static kcs_status event_seconds(cl_event event, double *seconds, kcs_error *err)
{
    cl_ulong start = 0, end = 0;
    cl_int code = clWaitForEvents(1, &event);
    if (code == CL_SUCCESS)
        code = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (code == CL_SUCCESS)
        code = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    clReleaseEvent(event);
    KCS_OPENCL_CHECK(code, err);
    *seconds = end > start ? 1e-9 * (double)(end - start) : 0.0;
    return KCS_OK;
}

/* What the measurements hold, so that one cleanup releases it on every path. */
typedef struct {
    cl_mem from, to;   /* the copy's two device buffers */
    cl_mem staging;    /* the page-locked host buffer */
    void *host;        /* staging, mapped */
    cl_mem gemm[4];    /* the GEMM's A, B, C and C_out */
} resources;

/* Releases the GEMM's buffers, between the sizes it is measured at. */
static void release_gemm_buffers(resources *r)
{
    for (int i = 0; i < 4; i++)
        if (r->gemm[i]) {
            clReleaseMemObject(r->gemm[i]);
            r->gemm[i] = NULL;
        }
}

static void release_resources(kcs_device *device, resources *r)
{
    if (r->host)
        clEnqueueUnmapMemObject(device->queue, r->staging, r->host, 0, NULL, NULL);
    clFinish(device->queue);
    release_gemm_buffers(r);
    if (r->staging)
        clReleaseMemObject(r->staging);
    if (r->to)
        clReleaseMemObject(r->to);
    if (r->from)
        clReleaseMemObject(r->from);
}

static kcs_status create_buffer(kcs_device *device, cl_mem_flags flags, size_t bytes, cl_mem *memory,
                                kcs_error *err)
{
    cl_int code;
    KCS_OPENCL_CHECK((*memory = clCreateBuffer(device->context, flags, bytes, NULL, &code), code), err);
    return KCS_OK;
}

static kcs_status measure_copy(kcs_device *device, resources *r, size_t bytes, int repeats, double *seconds,
                               kcs_error *err)
{
    double samples[most_repeats];
    for (int i = -1; i < repeats; i++) {
        cl_event event;
        KCS_OPENCL_CHECK(clEnqueueCopyBuffer(device->queue, r->from, r->to, 0, 0, bytes, 0, NULL, &event), err);
        double s;
        kcs_status status = event_seconds(event, &s, err);
        if (status != KCS_OK)
            return status;
        if (i >= 0)
            samples[i] = s;
    }
    *seconds = median(samples, repeats);
    return KCS_OK;
}

static kcs_status measure_upload(kcs_device *device, resources *r, size_t bytes, int repeats, double *seconds,
                                 kcs_error *err)
{
    cl_int code;
    KCS_OPENCL_CHECK((r->host = clEnqueueMapBuffer(device->queue, r->staging, CL_TRUE, CL_MAP_WRITE, 0, bytes, 0,
                                                   NULL, NULL, &code),
                      code), err);
    memset(r->host, 0x3c, bytes);
    double samples[most_repeats];
    for (int i = -1; i < repeats; i++) {
        cl_event event;
        KCS_OPENCL_CHECK(clEnqueueWriteBuffer(device->queue, r->to, CL_FALSE, 0, bytes, r->host, 0, NULL, &event),
                         err);
        double s;
        kcs_status status = event_seconds(event, &s, err);
        if (status != KCS_OK)
            return status;
        if (i >= 0)
            samples[i] = s;
    }
    *seconds = median(samples, repeats);
    return KCS_OK;
}

static kcs_status measure_fma(kcs_device *device, resources *r, size_t items, size_t local, cl_uint iterations,
                              int repeats, double *seconds, kcs_error *err)
{
    cl_kernel kernel;
    kcs_status status = kcs_opencl_kernel(device, &ceilings_program, "kcs_ceilings_fma", &kernel, err);
    if (status != KCS_OK)
        return status;
    cl_float seed = 1.0f;
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 0, sizeof r->to, &r->to), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 1, sizeof iterations, &iterations), err);
    KCS_OPENCL_CHECK(clSetKernelArg(kernel, 2, sizeof seed, &seed), err);
    double samples[most_repeats];
    for (int i = -1; i < repeats; i++) {
        cl_event event;
        KCS_OPENCL_CHECK(clEnqueueNDRangeKernel(device->queue, kernel, 1, NULL, &items, &local, 0, NULL, &event),
                         err);
        double s;
        status = event_seconds(event, &s, err);
        if (status != KCS_OK)
            return status;
        if (i >= 0)
            samples[i] = s;
    }
    *seconds = median(samples, repeats);
    return KCS_OK;
}

/* The GEMM size (see the header): whole tiles, at least 8 tiles per compute
 * unit of a GPU (2 of a CPU), intensity n / 6 at least 4 times the ridge point. */
static size_t gemm_size(const kcs_device *device, const kcs_ceilings *ceilings)
{
    int cpu = (device->type & CL_DEVICE_TYPE_CPU) != 0;
    double groups = (double)device->compute_units * (cpu ? 2 : 8);
    double n = gemm_tile * ceil(sqrt(groups));
    double ridge = ceilings->copy_bytes_per_s > 0 ? ceilings->fma_flops_per_s / ceilings->copy_bytes_per_s : 0;
    n = fmax(n, gemm_tile * ceil(24.0 * ridge / gemm_tile));
    return (size_t)fmin(n, cpu ? 2048 : 8192);
}

/* The median time of repeats runs (after a warm-up) of the GEMM row on n x n
 * x n; KCS_UNSUPPORTED or an error where the row cannot run. */
static kcs_status measure_gemm(kcs_device *device, resources *r, size_t n, int repeats, double *seconds,
                               kcs_error *err)
{
    const kcs_kernel *kernel = kcs_backend_find_kernel(&kcs_opencl_backend, "gemm", KCS_F32, gemm_variant);
    if (!kernel)
        return kcs_fail(err, KCS_UNSUPPORTED, "this build has no f32 gemm row named %s", gemm_variant);
    kcs_op_args args = {.op = "gemm", .dtype = KCS_F32,
                        .gemm = {.m = n, .n = n, .k = n, .alpha = 1.0, .beta = 0.0}};
    if (kernel->supports) {
        kcs_status status = kernel->supports(device, &args, err);
        if (status != KCS_OK)
            return status;
    }
    size_t bytes = n * n * sizeof(cl_float);
    if (bytes > device->max_allocation)
        return kcs_fail(err, KCS_UNSUPPORTED, "%zu x %zu f32 exceeds one allocation", n, n);
    const cl_float value = 0x1.8p-7f; /* sums of n products stay normal and finite */
    kcs_buffer buffers[4];
    for (int i = 0; i < 4; i++) {
        kcs_status status = create_buffer(device, CL_MEM_READ_WRITE, bytes, &r->gemm[i], err);
        if (status != KCS_OK)
            return status;
        KCS_OPENCL_CHECK(clEnqueueFillBuffer(device->queue, r->gemm[i], &value, sizeof value, 0, bytes, 0, NULL,
                                             NULL), err);
        buffers[i] = (kcs_buffer){.bytes = bytes, .memory = r->gemm[i]};
    }
    KCS_OPENCL_CHECK(clFinish(device->queue), err);
    kcs_buffer *const inputs[3] = {&buffers[0], &buffers[1], &buffers[2]}, *const outputs[1] = {&buffers[3]};
    double samples[most_repeats];
    for (int i = -1; i < repeats; i++) {
        double s;
        kcs_status status = kernel->run(device, &args, inputs, outputs, &s, err);
        if (status != KCS_OK)
            return status;
        if (i >= 0)
            samples[i] = s;
    }
    *seconds = median(samples, repeats);
    return KCS_OK;
}

/* Appends to the method text (cut short where it is full). */
static void append_method(kcs_ceilings *ceilings, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void append_method(kcs_ceilings *ceilings, const char *format, ...)
{
    size_t at = strlen(ceilings->method);
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(ceilings->method + at, sizeof ceilings->method - at, format, arguments);
    va_end(arguments);
}

static kcs_status measure(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings, resources *r,
                          kcs_error *err)
{
    int cpu = (device->type & CL_DEVICE_TYPE_CPU) != 0;
    size_t copy_bytes = cpu ? (size_t)256 << 20 : (size_t)1 << 30;
    if (copy_bytes > device->max_allocation / 2)
        copy_bytes = (size_t)(device->max_allocation / 2) & ~(size_t)4095;
    size_t upload_bytes = cpu ? (size_t)64 << 20 : (size_t)256 << 20;
    if (upload_bytes > copy_bytes)
        upload_bytes = copy_bytes;
    int copy_repeats = cpu ? 5 : 20, upload_repeats = cpu ? 5 : 10, fma_repeats = cpu ? 5 : 10;
    /* The GEMM's size needs the ridge point FMA / copy (gemm_size), so a
     * GEMM ceiling is measured with those two. The FMA kernel writes into
     * the copy's destination, so any of the three needs the copy buffers. */
    if (wanted & KCS_CEILING_BIT_GEMM)
        wanted |= KCS_CEILING_BIT_COPY | KCS_CEILING_BIT_FMA;
    if (!(wanted & (KCS_CEILING_BIT_COPY | KCS_CEILING_BIT_HOST_TO_DEVICE | KCS_CEILING_BIT_FMA))) {
        append_method(ceilings, "none: OpenCL measures the copy, upload, FMA and f32 GEMM rates, and none was asked for");
        return KCS_OK;
    }

    kcs_status status = create_buffer(device, CL_MEM_READ_WRITE, copy_bytes, &r->from, err);
    if (status == KCS_OK)
        status = create_buffer(device, CL_MEM_READ_WRITE, copy_bytes, &r->to, err);
    if (status == KCS_OK && (wanted & KCS_CEILING_BIT_HOST_TO_DEVICE))
        status = create_buffer(device, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, upload_bytes, &r->staging, err);
    if (status != KCS_OK)
        return status;
    /* The source only: the untimed warm-up copy is the first touch of the destination. */
    const cl_uint pattern = 0x3c3c3c3c;
    KCS_OPENCL_CHECK(clEnqueueFillBuffer(device->queue, r->from, &pattern, sizeof pattern, 0, copy_bytes, 0, NULL,
                                         NULL), err);
    KCS_OPENCL_CHECK(clFinish(device->queue), err);

    double seconds = 0.0;
    if (wanted & KCS_CEILING_BIT_COPY) {
        status = measure_copy(device, r, copy_bytes, copy_repeats, &seconds, err);
        if (status != KCS_OK)
            return status;
        ceilings->copy_bytes_per_s = seconds > 0 ? 2.0 * (double)copy_bytes / seconds : 0.0;
        append_method(ceilings, "copy: clEnqueueCopyBuffer of %zu MiB between two buffers, read + written, median "
                      "of %d; ", copy_bytes >> 20, copy_repeats);
    }

    if (wanted & KCS_CEILING_BIT_HOST_TO_DEVICE) {
        status = measure_upload(device, r, upload_bytes, upload_repeats, &seconds, err);
        if (status != KCS_OK)
            return status;
        ceilings->host_to_device_bytes_per_s = seconds > 0 ? (double)upload_bytes / seconds : 0.0;
        append_method(ceilings, "host to device: clEnqueueWriteBuffer of %zu MiB from a mapped CL_MEM_ALLOC_HOST_PTR "
                      "buffer, median of %d; ", upload_bytes >> 20, upload_repeats);
    }

    if (wanted & KCS_CEILING_BIT_FMA) {
        size_t local = 1;
        cl_kernel kernel;
        status = kcs_opencl_kernel(device, &ceilings_program, "kcs_ceilings_fma", &kernel, err);
        if (status == KCS_OK)
            status = kcs_opencl_group_size(device, kernel, 256, &local, err);
        if (status != KCS_OK)
            return status;
        size_t items = (size_t)device->compute_units * (cpu ? 256 : 2048);
        items = (items + local - 1) / local * local;
        cl_uint iterations = cpu ? 2048 : 4096;
        status = measure_fma(device, r, items, local, iterations, fma_repeats, &seconds, err);
        if (status != KCS_OK)
            return status;
        ceilings->fma_flops_per_s =
            seconds > 0 ? 2.0 * fma_per_round * (double)iterations * (double)items / seconds : 0.0;
        append_method(ceilings, "FMA: %zu work-items (groups of %zu) x %u rounds x %d f32 fma, median of %d; ", items,
                      local, (unsigned)iterations, (int)fma_per_round, fma_repeats);
    }

    if (!(wanted & KCS_CEILING_BIT_GEMM)) {
        append_method(ceilings, "all by profiling events");
        return KCS_OK;
    }
    /* The GEMM last: a row that cannot run leaves it 0, saying why, and the rest stands. */
    size_t n = 0, sizes[2] = {gemm_size(device, ceilings), gemm_tile};
    while (sizes[1] * 2 <= sizes[0])
        sizes[1] *= 2;
    if (sizes[0] - sizes[1] > 2 * sizes[1] - sizes[0] && 2 * sizes[1] <= (cpu ? 2048u : 8192u))
        sizes[1] *= 2;
    int gemm_repeats = cpu ? 3 : 10;
    kcs_error gemm_err = {{0}};
    ceilings->gemm_flops_per_s = 0.0;
    for (int i = 0; i < (sizes[1] == sizes[0] ? 1 : 2); i++) {
        status = measure_gemm(device, r, sizes[i], gemm_repeats, &seconds, &gemm_err);
        release_gemm_buffers(r);
        double rate = 2.0 * (double)sizes[i] * (double)sizes[i] * (double)sizes[i] / seconds;
        if (status == KCS_OK && seconds > 0 && rate > ceilings->gemm_flops_per_s) {
            ceilings->gemm_flops_per_s = rate;
            n = sizes[i];
        }
    }
    if (ceilings->gemm_flops_per_s > 0)
        append_method(ceilings,
                      "GEMM: kcs's own f32 %s (opencl/gemm.c, packing included), NN, alpha 1, beta 0, the faster of "
                      "%zu^3 and %zu^3 (%zu^3), median of %d each; all by profiling events",
                      gemm_variant, sizes[0], sizes[1], n, gemm_repeats);
    else
        append_method(ceilings, "all by profiling events; GEMM: not measured (0): kcs's f32 %s could not run %zu^3: %s",
                      gemm_variant, sizes[0], status == KCS_OK ? "it took no time" : gemm_err.message);
    return KCS_OK;
}

kcs_status kcs_opencl_measure_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                       kcs_error *err)
{
    memset(ceilings, 0, sizeof *ceilings);
    resources r = {NULL, NULL, NULL, NULL, {NULL, NULL, NULL, NULL}};
    kcs_status status = measure(device, wanted, ceilings, &r, err);
    release_resources(device, &r);
    return status;
}
