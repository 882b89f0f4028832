/* backend.c: the scalar reference as a kcs backend (see harness/backend.h).
 *
 * Its one device is the host: buffers are host memory, upload and download
 * are memcpy, and kernel time is the host's monotonic clock around the call.
 * Each ref/<op>.c exports its kernel rows (kcs_reference_<op>_kernels), each
 * naming an adapter beside it that runs a typed function of kcs_ref.h on the
 * buffers; configure.py lists those tables for this backend.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "kcs_ref.h"
#include "op.h"
#include "reference_backend.h"

struct kcs_device {
    int unused;
};

struct kcs_buffer {
    size_t bytes; /* first, as harness/backend.h asks */
    unsigned char data[];
};
_Static_assert(offsetof(kcs_buffer, bytes) == 0, "a buffer begins with its size (harness/backend.h)");

double kcs_reference_cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void *kcs_reference_buffer_data(kcs_buffer *buffer)
{
    return buffer->data;
}

kcs_status kcs_reference_timed(kcs_reference_step *check, kcs_reference_step *compute, kcs_device *device,
                               const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                               double *kernel_seconds, kcs_error *err)
{
    (void)device;
    kcs_status status = kcs_check_buffers(kcs_find_op(args->op), args, inputs, outputs, err);
    if (status == KCS_OK && check)
        status = check(args, inputs, outputs, err);
    if (status != KCS_OK)
        return status;
    double start = kcs_reference_cpu_seconds();
    status = compute(args, inputs, outputs, err);
    *kernel_seconds = kcs_reference_cpu_seconds() - start;
    return status;
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
    info->shares_host_cores = 1;
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
 * median of 10 after a warm-up, when wanted. No FMA or GEMM ceiling: the
 * reference is scalar C on one core, so a vector peak would say nothing
 * about it. */
static kcs_status measure_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                   kcs_error *err)
{
    (void)device;
    memset(ceilings, 0, sizeof *ceilings);
    if (!(wanted & KCS_CEILING_BIT_COPY))
        return KCS_OK;
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
        double start = kcs_reference_cpu_seconds();
        memcpy(to, from, bytes);
        if (r >= 0)
            samples[r] = kcs_reference_cpu_seconds() - start;
    }
    qsort(samples, 10, sizeof samples[0], compare_doubles);
    ceilings->copy_bytes_per_s = 2.0 * (double)bytes / (0.5 * (samples[4] + samples[5]));
    snprintf(ceilings->method, sizeof ceilings->method,
             "copy: memcpy of %zu MiB on one thread, its CPU time, median of 10", bytes >> 20);
    free(from);
    free(to);
    return KCS_OK;
}

/* The pace: the reference's own f64 GEMM of 48^3 (110,592 multiply-adds, 55
 * KiB of operands held in the core's caches), timed in CPU time like every
 * reference kernel. The reference's times are CPU time because a shared
 * host's other processes would otherwise count in them; what CPU time still
 * counts is a busier core: here a co-runner on the same physical core (or
 * evicting its caches) made a 160^3 GEMM take 1.75x the cycles, and this
 * workload 1.5 to 1.7x, within the same seconds. So when the pace of two
 * runs differs, so did the machine, and their kernel times cannot show a
 * change of the kernels (report/kcs_compare.py). */
enum { pace_size = 48 };

static kcs_status pace(kcs_device *device, double *seconds, kcs_error *err)
{
    (void)device, (void)err;
    static double a[pace_size * pace_size], b[pace_size * pace_size], c[pace_size * pace_size],
        c_out[pace_size * pace_size];
    if (a[1] == 0.0)
        for (int i = 0; i < pace_size * pace_size; i++) {
            a[i] = (double)(i % 7) - 3.0;
            b[i] = (double)(i % 5) - 2.0;
        }
    double start = kcs_reference_cpu_seconds();
    kcs_ref_gemm_f64(0, 0, pace_size, pace_size, pace_size, 1.0, a, b, 0.0, c, c_out);
    *seconds = kcs_reference_cpu_seconds() - start;
    return KCS_OK;
}

extern const kcs_kernel_table *const kcs_reference_kernel_tables[]; /* generated by configure.py */
extern const struct kcs_probe_methods kcs_reference_probe_methods; /* ref/probe.c */

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
    .pace = pace,
    .kernel_tables = kcs_reference_kernel_tables,
    .probe = &kcs_reference_probe_methods,
};
