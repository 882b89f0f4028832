/* backend.c: the scalar reference as a kcs backend (see harness/backend.h).
 *
 * Its one device is the host: buffers are host memory, upload and download
 * are memcpy, and kernel time is the host's monotonic clock around the call.
 * Each kernel row names an adapter, kept beside its op in ref/<op>.c, that
 * runs a typed function of kcs_ref.h on the buffers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "reference_backend.h"

struct kcs_device {
    int unused;
};

struct kcs_buffer {
    size_t bytes;
    unsigned char data[];
};

double kcs_reference_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void *kcs_reference_buffer_data(kcs_buffer *buffer)
{
    return buffer->data;
}

static kcs_status device_count(int *count, kcs_error *err)
{
    (void)err;
    *count = 1;
    return KCS_OK;
}

static kcs_status open_device(int index, kcs_device **device, kcs_device_info *info, kcs_error *err)
{
    if (index != 0)
        return kcs_fail(err, KCS_ERROR, "the reference backend has one device, not %d", index + 1);
    *device = calloc(1, sizeof **device);
    if (!*device)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    memset(info, 0, sizeof *info);
    struct utsname machine;
    uname(&machine);
    snprintf(info->name, sizeof info->name, "host %s (%ld cores)", machine.machine,
             sysconf(_SC_NPROCESSORS_ONLN));
    snprintf(info->platform, sizeof info->platform, "host");
    snprintf(info->vendor, sizeof info->vendor, "%s", machine.sysname);
    snprintf(info->driver_version, sizeof info->driver_version, "%s", machine.release);
    snprintf(info->runtime_version, sizeof info->runtime_version, "C compiler %s", __VERSION__);
    snprintf(info->details, sizeof info->details, "strict IEEE: -ffp-contract=off, no fast-math");
    info->memory_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    return KCS_OK;
}

static void close_device(kcs_device *device)
{
    free(device);
}

static kcs_status allocate(kcs_device *device, size_t bytes, kcs_buffer **buffer, kcs_error *err)
{
    (void)device;
    *buffer = malloc(sizeof **buffer + bytes);
    if (!*buffer)
        return kcs_fail(err, KCS_ERROR, "cannot allocate %zu bytes of host memory", bytes);
    (*buffer)->bytes = bytes;
    return KCS_OK;
}

static void release(kcs_device *device, kcs_buffer *buffer)
{
    (void)device;
    free(buffer);
}

static kcs_status upload(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                         kcs_error *err)
{
    (void)device;
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "upload of %zu bytes into a buffer of %zu", bytes, buffer->bytes);
    memcpy(buffer->data, host, bytes);
    return KCS_OK;
}

static kcs_status download(kcs_device *device, kcs_buffer *buffer, void *host, size_t bytes,
                           kcs_error *err)
{
    (void)device;
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "download of %zu bytes from a buffer of %zu", bytes,
                        buffer->bytes);
    memcpy(host, buffer->data, bytes);
    return KCS_OK;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The host's copy bandwidth: memcpy of 256 MiB, bytes read + written, the
 * median of 10 after a warm-up. No FMA or GEMM ceiling: the reference is
 * scalar C on one core, so a vector peak would say nothing about it. */
static kcs_status measure_ceilings(kcs_device *device, kcs_ceilings *ceilings, kcs_error *err)
{
    (void)device;
    memset(ceilings, 0, sizeof *ceilings);
    size_t bytes = (size_t)256 << 20;
    char *from = malloc(bytes), *to = malloc(bytes);
    if (!from || !to) {
        free(from);
        free(to);
        return kcs_fail(err, KCS_ERROR, "cannot allocate 2 x %zu bytes to measure copy bandwidth", bytes);
    }
    memset(from, 1, bytes);
    memset(to, 2, bytes);
    double samples[10];
    for (int r = -1; r < 10; r++) {
        double start = kcs_reference_now();
        memcpy(to, from, bytes);
        if (r >= 0)
            samples[r] = kcs_reference_now() - start;
    }
    qsort(samples, 10, sizeof samples[0], compare_doubles);
    ceilings->copy_bytes_per_s = 2.0 * (double)bytes / (0.5 * (samples[4] + samples[5]));
    snprintf(ceilings->method, sizeof ceilings->method,
             "copy: memcpy of %zu MiB on one thread, median of 10", bytes >> 20);
    free(from);
    free(to);
    return KCS_OK;
}

static const kcs_kernel kernels[] = {
    {"sumsq", KCS_F64, "blocked-pairwise", "blocks of 1024 in four running sums, blocks pairwise",
     kcs_reference_sumsq_f64, NULL},
    {"sumsq", KCS_F32, "blocked-pairwise", "as f64: squares and sums in double",
     kcs_reference_sumsq_f32, NULL},
    {"gemm", KCS_F64, "plain-k-order", "each element accumulated in double in k order",
     kcs_reference_gemm_f64, NULL},
    {"gemm", KCS_F32, "plain-k-order", "each element accumulated in float in k order; tf32 mode too",
     kcs_reference_gemm_f32, NULL},
    {"add", KCS_F64, "loop", "one IEEE add per element", kcs_reference_add_f64, NULL},
    {"add", KCS_F32, "loop", "one IEEE add per element", kcs_reference_add_f32, NULL},
    {"mul", KCS_F64, "loop", "one IEEE multiply per element", kcs_reference_mul_f64, NULL},
    {"mul", KCS_F32, "loop", "one IEEE multiply per element", kcs_reference_mul_f32, NULL},
    {"relu", KCS_F64, "loop", "x < 0 ? 0 : x", kcs_reference_relu_f64, NULL},
    {"relu", KCS_F32, "loop", "x < 0 ? 0 : x", kcs_reference_relu_f32, NULL},
    {"sigmoid", KCS_F64, "loop", "1 / (1 + exp(-x)) with libm exp", kcs_reference_sigmoid_f64, NULL},
    {"sigmoid", KCS_F32, "loop", "1 / (1 + expf(-x)) with libm expf", kcs_reference_sigmoid_f32, NULL},
    {"softmax", KCS_F64, "three-pass", "max, exp(x - max) and a blocked sum, divide; in double",
     kcs_reference_softmax_f64, NULL},
    {"softmax", KCS_F32, "three-pass", "max, expf(x - max) and a blocked sum, divide; in float",
     kcs_reference_softmax_f32, NULL},
    {"assign", KCS_F32, "direct-difference", "sum of squared differences in float, strict < keeps the first",
     kcs_reference_assign_f32, NULL},
    {"assign", KCS_F16, "direct-difference", "points widened to float, then as f32", kcs_reference_assign_f16,
     NULL},
    {"reduce", KCS_F32, "two-pass-f64", "counts, then means and variances by two passes in double",
     kcs_reference_reduce_f32, NULL},
    {"reduce", KCS_F16, "two-pass-f64", "points widened exactly, then as f32", kcs_reference_reduce_f16, NULL},
    {"update", KCS_F32, "elementwise", "the formula in float, (mean - a) first", kcs_reference_update_f32,
     NULL},
    {"energy", KCS_F32, "blocked-pairwise-f64", "sum in double in blocks of 1024, divide, round to float",
     kcs_reference_energy_f32, NULL},
};

const kcs_backend kcs_reference_backend = {
    .interface_version = KCS_BACKEND_INTERFACE_VERSION,
    .name = "reference",
    .device_count = device_count,
    .open = open_device,
    .close = close_device,
    .allocate = allocate,
    .release = release,
    .upload = upload,
    .download = download,
    .measure_ceilings = measure_ceilings,
    .kernels = kernels,
    .kernel_count = sizeof kernels / sizeof kernels[0],
};
