/* backend.cu: the CUDA backend, host side (see harness/backend.h).
 *
 * Every CUDA device is a kcs device. open() makes a non-blocking stream and
 * a cuBLAS handle bound to it; every copy and launch goes to that stream, so
 * the events recorded on it around a run time that run's kernels alone.
 * Buffers are cudaMalloc memory (never managed memory, whose page migration
 * would land in the timings); uploads and downloads are cudaMemcpyAsync on
 * the stream followed by a wait; staging memory for end-to-end timing is
 * pinned (cudaMallocHost), as the fastest transfers need.
 *
 * With no driver or no device, device_count says so and the runner reports
 * every CUDA case skipped with that reason: nothing here touches CUDA before
 * device_count, so a machine without a GPU never crashes here.
 *
 * The kernels live one op per file (sumsq.cu, ...; the anneal steps'
 * assign.cu, reduce.cu, update.cu and energy.cu share anneal.cuh), GEMM's
 * five families of rows in gemm/, each file ending with its rows, exported
 * as kcs_cuda_<name>_kernels; configure.py lists those tables in
 * kcs_cuda_kernel_tables, which the backend below points at.
 */
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cub/version.cuh>

#include "common.cuh"

kcs_status kcs_cuda_failure(kcs_error *err, cudaError_t result, const char *expression,
                            const char *file, int line)
{
    (void)cudaGetLastError();
    return kcs_fail(err, KCS_ERROR, "%s failed at %s:%d: %s: %s", expression, file, line,
                    cudaGetErrorName(result), cudaGetErrorString(result));
}

kcs_status kcs_cublas_failure(kcs_error *err, cublasStatus_t result, const char *expression,
                              const char *file, int line)
{
    (void)cudaGetLastError();
    return kcs_fail(err, KCS_ERROR, "%s failed at %s:%d: %s: %s", expression, file, line,
                    cublasGetStatusName(result), cublasGetStatusString(result));
}

kcs_status kcs_cuda_select(kcs_device *device, kcs_error *err)
{
    KCS_CUDA_CHECK(cudaSetDevice(device->ordinal));
    return KCS_OK;
}

static_assert(offsetof(kcs_buffer, bytes) == 0, "a buffer begins with its size (harness/backend.h)");

kcs_status kcs_cuda_begin(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                          kcs_buffer *const outputs[], kcs_error *err)
{
    kcs_status status = kcs_check_buffers(kcs_find_op(args->op), args, inputs, outputs, err);
    return status == KCS_OK ? kcs_cuda_select(device, err) : status;
}

kcs_status kcs_cuda_reserve(kcs_cuda_scratch *scratch, size_t bytes, kcs_error *err)
{
    if (bytes <= scratch->bytes && scratch->data)
        return KCS_OK;
    if (scratch->data)
        KCS_CUDA_CHECK(cudaFree(scratch->data));
    scratch->data = NULL;
    scratch->bytes = 0;
    /* Some headroom, so that a run of slowly growing sizes does not reallocate every time. */
    size_t capacity = bytes + bytes / 4 + 256;
    KCS_CUDA_CHECK(cudaMalloc(&scratch->data, capacity));
    scratch->bytes = capacity;
    return KCS_OK;
}

/* ---- Timing -----------------------------------------------------------------
 *
 * A run's time is the span between two events on the device's stream. On an
 * idle stream a start event is stamped the moment it is queued, while the
 * run's first kernel starts only once the host has finished launching it:
 * the host's and the driver's work would count as kernel time. Measured on
 * an H100 (same call, medians), without and with the hold: bf16 softmax
 * 32768 x 1024 0.0527 and 0.0484 ms, 16-bit sumsq of 10^8 0.0742 and 0.0706
 * ms, and cuBLAS's f16 GEMM at 4096^3 0.2140 and 0.1862 ms (cuBLAS chooses
 * its kernel on the host before it launches).
 * OpenCL's profiling events (COMMAND_START to COMMAND_END, opencl/backend.c)
 * never counted it. So a timed run queues a hold first: a one-thread kernel
 * that waits until the host releases it through pinned memory, which
 * timer_stop does after the run's last launch. The start event sits behind
 * the hold, so the clock starts with every launch of the run already queued,
 * and the kernels run back to back: the time is the device's alone, as NVIDIA's
 * nvbench measures with its blocking kernel.
 *
 * A hold gives up after hold_limit_ns: a run that waits for the device
 * inside its timed region would otherwise wait forever, and a tool that
 * serializes launches (compute-sanitizer) never lets the host release it in
 * time. The run is then timed as if no hold were there (its start event
 * stamped when the hold gave up), and after 3 give-ups in a row the device
 * stops holding for the rest of the process. The asynchronous library call
 * (kernel_seconds NULL) never holds.
 */
static const unsigned long long hold_limit_ns = 100ull * 1000 * 1000;
static const int hold_give_ups_allowed = 3;

/* Waits until flags[0] is set, or gives up after limit_ns and sets flags[1]. */
__global__ void kcs_hold_stream(volatile int *flags, unsigned long long limit_ns)
{
    unsigned long long start = 0, now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (flags[0] == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > limit_ns) {
            flags[1] = 1;
            return;
        }
        __nanosleep(1000);
    }
}

/* Queues a hold on flag pair `pair`, its flags cleared first. */
static kcs_status queue_hold(kcs_device *device, int pair, kcs_error *err)
{
    int *flags = device->hold_flags + 2 * pair;
    __atomic_store_n(&flags[1], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&flags[0], 0, __ATOMIC_RELEASE);
    kcs_hold_stream<<<1, 1, 0, device->stream>>>(device->hold_flags_on_device + 2 * pair, hold_limit_ns);
    KCS_CUDA_CHECK_LAUNCH("kcs_hold_stream");
    device->held = pair;
    return KCS_OK;
}

/* Lets the queued hold end (the device reads the flag through the mapping). */
static void release_hold(kcs_device *device)
{
    if (device->held < 0)
        return;
    __atomic_store_n(&device->hold_flags[2 * device->held], 1, __ATOMIC_RELEASE);
    device->held = -1;
}

/* Whether the hold on pair `pair` gave up (read once the stream is past it). */
static bool hold_gave_up(const kcs_device *device, int pair)
{
    return __atomic_load_n(&device->hold_flags[2 * pair + 1], __ATOMIC_ACQUIRE) != 0;
}

kcs_status kcs_cuda_drain(kcs_device *device, kcs_status status)
{
    release_hold(device);
    (void)cudaStreamSynchronize(device->stream);
    (void)cudaGetLastError();
    return status;
}

/* ---- Back to back -------------------------------------------------------------
 *
 * Timed one at a time (above), a repeat's device time is exact, but between
 * two repeats the device idles while the host waits for the stop event and
 * queues the next run: a few microseconds for kcs's C loop, tens for
 * PyTorch's Python one. A card held at its power limit keeps higher clocks
 * the more it idles, so two loops of different pace time the same kernel
 * differently (docs/runner.md, "Back to back"). kcs_cuda_time_back_to_back
 * (the backend's time_back_to_back) takes the host's pace out: it queues
 * the repeats in chunks of back_to_back_chunk (in the order of
 * kcs_back_to_back_walk, harness/backend.h), each chunk behind a hold of
 * its own, each repeat between two events of the chunk's, and releases the
 * chunk's hold once all its repeats are queued; only then does it wait for
 * the chunk before, read its times and reuse its events. So while the device
 * runs one chunk the host queues the next, and where the host queues a
 * repeat faster than the device runs one the next chunk's hold is released
 * before the device reaches it: the device goes from repeat to repeat
 * without idling. Where the host is slower, the device waits on a hold,
 * between chunks and never between a repeat's two events: every repeat is
 * queued before its chunk's hold lets the device start it, so no host work
 * counts as a repeat's time, as with one at a time.
 *
 * A run that waits for the device while its chunk is held (a plan that
 * synchronizes, a tool that serializes launches) stalls until the hold gives
 * up: the timing then answers KCS_UNSUPPORTED and the runner times that
 * kernel one repeat at a time. Two chunks of 16 repeats queued at most keep
 * the launches in flight far below what the driver queues without blocking.
 */
enum { back_to_back_chunk = 16, chunks_in_flight = KCS_CUDA_HOLDS - 1 };

struct kcs_cuda_chunk {
    cudaEvent_t start[back_to_back_chunk], stop[back_to_back_chunk];
    int pair;     /* its hold's flag pair */
    int first;    /* the repeat its first event pair times */
    int count;    /* repeats queued in it */
    int recorded; /* event pairs recorded by the timer; started: a start recorded without its stop */
    bool started;
};

static void destroy_chunks(kcs_device *device)
{
    if (!device->chunks)
        return;
    for (int c = 0; c < chunks_in_flight; c++)
        for (int r = 0; r < back_to_back_chunk; r++) {
            if (device->chunks[c].start[r])
                (void)cudaEventDestroy(device->chunks[c].start[r]);
            if (device->chunks[c].stop[r])
                (void)cudaEventDestroy(device->chunks[c].stop[r]);
        }
    free(device->chunks);
    device->chunks = NULL;
}

static kcs_status make_chunks(kcs_device *device, kcs_error *err)
{
    if (device->chunks)
        return KCS_OK;
    device->chunks = (kcs_cuda_chunk *)calloc(chunks_in_flight, sizeof *device->chunks);
    if (!device->chunks)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    for (int c = 0; c < chunks_in_flight; c++) {
        device->chunks[c].pair = 1 + c;
        for (int r = 0; r < back_to_back_chunk; r++) {
            cudaError_t made = cudaEventCreate(&device->chunks[c].start[r]);
            if (made == cudaSuccess)
                made = cudaEventCreate(&device->chunks[c].stop[r]);
            if (made != cudaSuccess) {
                destroy_chunks(device);
                return kcs_cuda_failure(err, made, "cudaEventCreate", __FILE__, __LINE__);
            }
        }
    }
    return KCS_OK;
}

/* Waits for a queued chunk and writes its repeats' times; KCS_UNSUPPORTED
 * when its hold gave up. */
static kcs_status read_chunk(kcs_device *device, kcs_cuda_chunk *chunk, double *seconds, kcs_error *err)
{
    KCS_CUDA_CHECK(cudaEventSynchronize(chunk->stop[chunk->count - 1]));
    if (hold_gave_up(device, chunk->pair)) {
        device->hold_give_ups++;
        return kcs_fail(err, KCS_UNSUPPORTED, "a run waited for the device while its repeats were held "
                        "(the hold gave up after %llu ms)", hold_limit_ns / 1000000ull);
    }
    device->hold_give_ups = 0;
    for (int r = 0; r < chunk->count; r++) {
        float milliseconds = 0.0f;
        KCS_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, chunk->start[r], chunk->stop[r]));
        seconds[chunk->first + r] = 1e-3 * (double)milliseconds;
    }
    return KCS_OK;
}

/* The slot callbacks of kcs_back_to_back_walk (harness/backend.h): a slot is
 * one of device->chunks, behind a hold of its own. */
static kcs_status open_chunk(void *backend, int slot, int first, int count, kcs_error *err)
{
    kcs_device *device = (kcs_device *)backend;
    kcs_cuda_chunk *chunk = &device->chunks[slot];
    chunk->first = first;
    chunk->count = count;
    chunk->recorded = 0;
    chunk->started = false;
    device->queueing = chunk;
    return queue_hold(device, chunk->pair, err);
}

static int chunk_recorded(void *backend, int slot)
{
    return ((kcs_device *)backend)->chunks[slot].recorded;
}

static kcs_status close_chunk(void *backend, int slot, kcs_status status, kcs_error *err)
{
    (void)slot;
    (void)err;
    kcs_device *device = (kcs_device *)backend;
    device->queueing = NULL;
    release_hold(device);
    return status;
}

static kcs_status read_slot(void *backend, int slot, double *seconds, kcs_error *err)
{
    kcs_device *device = (kcs_device *)backend;
    return read_chunk(device, &device->chunks[slot], seconds, err);
}

static kcs_status time_back_to_back(kcs_device *device, int count,
                                    kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                    double *seconds, kcs_error *err)
{
    KCS_CUDA_CHECK(cudaSetDevice(device->ordinal));
    if (!device->hold_flags || device->hold_give_ups >= hold_give_ups_allowed)
        return kcs_fail(err, KCS_UNSUPPORTED, "this device has stopped holding its stream (%d holds in a row "
                        "gave up)", device->hold_give_ups);
    if (device->held >= 0) /* a run that failed and was not drained left its hold queued */
        return kcs_fail(err, KCS_ERROR, "a hold is still queued");
    const kcs_back_to_back walk = {back_to_back_chunk, chunks_in_flight, device,
                                   open_chunk, chunk_recorded, close_chunk, read_slot};
    kcs_status status = make_chunks(device, err);
    if (status == KCS_OK)
        status = kcs_back_to_back_walk(&walk, count, run, context, seconds, err);
    return status == KCS_OK ? KCS_OK : kcs_cuda_drain(device, status);
}

/* ---- One at a time ----------------------------------------------------------- */

kcs_status kcs_cuda_timer_start(kcs_device *device, const double *kernel_seconds, kcs_error *err)
{
    kcs_cuda_chunk *chunk = device->queueing;
    if (kernel_seconds && chunk) { /* back to back: the chunk's hold is queued */
        if (chunk->started || chunk->recorded >= chunk->count)
            return kcs_fail(err, KCS_ERROR, "a timed launch started inside another");
        KCS_CUDA_CHECK(cudaEventRecord(chunk->start[chunk->recorded], device->stream));
        chunk->started = true;
        return KCS_OK;
    }
    if (device->held >= 0) {
        /* A run that failed between start and stop, and was not drained
         * (kcs_cuda_drain), left its hold queued: end it first. */
        release_hold(device);
        KCS_CUDA_CHECK(cudaStreamSynchronize(device->stream));
    }
    if (kernel_seconds && device->hold_flags && device->hold_give_ups < hold_give_ups_allowed) {
        kcs_status status = queue_hold(device, 0, err);
        if (status != KCS_OK)
            return status;
    }
    KCS_CUDA_CHECK(cudaEventRecord(device->start, device->stream));
    return KCS_OK;
}

kcs_status kcs_cuda_timer_stop(kcs_device *device, double *seconds, kcs_error *err)
{
    if (!seconds) /* asynchronous (the library's kcs_call): leave the launches on the stream */
        return KCS_OK;
    kcs_cuda_chunk *chunk = device->queueing;
    if (chunk) { /* back to back: read when the chunk is (time_back_to_back) */
        if (!chunk->started)
            return kcs_fail(err, KCS_ERROR, "a timed launch stopped without starting");
        KCS_CUDA_CHECK(cudaEventRecord(chunk->stop[chunk->recorded++], device->stream));
        chunk->started = false;
        *seconds = 0.0;
        return KCS_OK;
    }
    const bool held = device->held == 0;
    release_hold(device);
    KCS_CUDA_CHECK(cudaEventRecord(device->stop, device->stream));
    KCS_CUDA_CHECK(cudaEventSynchronize(device->stop));
    if (held)
        device->hold_give_ups = hold_gave_up(device, 0) ? device->hold_give_ups + 1 : 0;
    float milliseconds = 0.0f;
    KCS_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, device->start, device->stop));
    *seconds = 1e-3 * (double)milliseconds;
    return KCS_OK;
}

/* The errors that mean "this machine has no usable CUDA device" (a skip);
 * any other failure of cudaGetDeviceCount is a broken installation (an error). */
static bool means_no_device(cudaError_t result)
{
    return result == cudaErrorNoDevice || result == cudaErrorInsufficientDriver ||
           result == cudaErrorStubLibrary || result == cudaErrorDevicesUnavailable;
}

/* The runner puts "no cuda device: " in front of a reason, so reasons do not repeat it. */
static kcs_status device_count(int *count, kcs_error *err)
{
    *count = 0;
    cudaError_t result = cudaGetDeviceCount(count);
    if (result != cudaSuccess) {
        (void)cudaGetLastError();
        *count = 0;
        return kcs_fail(err, means_no_device(result) ? KCS_UNSUPPORTED : KCS_ERROR,
                        "cudaGetDeviceCount: %s (%s)", cudaGetErrorString(result),
                        cudaGetErrorName(result));
    }
    if (*count == 0)
        return kcs_fail(err, KCS_UNSUPPORTED, "cudaGetDeviceCount found none");
    return KCS_OK;
}

static void close_device(kcs_device *device)
{
    if (!device)
        return;
    /* Nothing to report to from here: release what can be released. */
    if (cudaSetDevice(device->ordinal) == cudaSuccess) {
        release_hold(device);
        if (device->stream)
            (void)cudaStreamSynchronize(device->stream);
        if (device->blas)
            (void)cublasDestroy(device->blas);
        if (device->blas_lt)
            (void)cublasLtDestroy(device->blas_lt);
        if (device->start)
            (void)cudaEventDestroy(device->start);
        if (device->stop)
            (void)cudaEventDestroy(device->stop);
        if (device->blocks_done)
            (void)cudaFree(device->blocks_done);
        destroy_chunks(device);
        if (device->hold_flags)
            (void)cudaFreeHost(device->hold_flags);
        if (device->partials.data)
            (void)cudaFree(device->partials.data);
        if (device->cub_storage.data)
            (void)cudaFree(device->cub_storage.data);
        if (device->lt_workspace.data)
            (void)cudaFree(device->lt_workspace.data);
        if (device->stream)
            (void)cudaStreamDestroy(device->stream);
    }
    (void)cudaGetLastError();
    free(device);
}

/* Appends formatted text to text (of size bytes), cutting it short if it must. */
static void appendf(char *text, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void appendf(char *text, size_t size, const char *format, ...)
{
    size_t used = strlen(text);
    if (used + 1 >= size)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(text + used, size - used, format, args);
    va_end(args);
}

/* "13.0" from the CUDA encoding 1000 * major + 10 * minor. */
static void append_cuda_version(char *text, size_t size, int version)
{
    appendf(text, size, "%d.%d", version / 1000, version % 1000 / 10);
}

/* Appends the kernel module's version ("580.159, ") where Linux exposes it. */
static void append_kernel_module_version(char *text, size_t size)
{
    FILE *file = fopen("/proc/driver/nvidia/version", "r");
    if (!file)
        return;
    char line[512];
    /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Tue ..." or
     * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
     * the version is the first word after "Module" made of digits and dots. */
    const char *marker = fgets(line, sizeof line, file) ? strstr(line, "Module") : NULL;
    for (char *save = NULL, *word = marker ? strtok_r(line + (marker - line) + 6, " \t\n", &save) : NULL;
         word; word = strtok_r(NULL, " \t\n", &save)) {
        if (strspn(word, "0123456789.") == strlen(word) && strchr(word, '.')) {
            appendf(text, size, "%s, ", word);
            break;
        }
    }
    fclose(file);
}

static void describe(const cudaDeviceProp *properties, int memory_clock_khz, int bus_width_bits,
                     int blas_version, int driver_version, int runtime_version,
                     kcs_device_info *info)
{
    memset(info, 0, sizeof *info);
    appendf(info->name, sizeof info->name, "%s", properties->name);
    appendf(info->platform, sizeof info->platform, "CUDA");
    appendf(info->vendor, sizeof info->vendor, "NVIDIA");

    /* The kernel module's version names the driver; the CUDA version is what it supports. */
    append_kernel_module_version(info->driver_version, sizeof info->driver_version);
    appendf(info->driver_version, sizeof info->driver_version, "CUDA ");
    append_cuda_version(info->driver_version, sizeof info->driver_version, driver_version);

    char *runtime = info->runtime_version;
    const size_t runtime_size = sizeof info->runtime_version;
    appendf(runtime, runtime_size, "CUDA runtime ");
    append_cuda_version(runtime, runtime_size, runtime_version);
    appendf(runtime, runtime_size, ", cuBLAS %d.%d.%d, CUB %d.%d.%d, built with CUDA ",
            blas_version / 10000, blas_version % 10000 / 100, blas_version % 100,
            CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
    append_cuda_version(runtime, runtime_size, CUDART_VERSION);

    const unsigned char *id = (const unsigned char *)properties->uuid.bytes;
    char *details = info->details;
    const size_t details_size = sizeof info->details;
    appendf(details, details_size, "compute_capability=%d.%d; sm_count=%d; ", properties->major,
            properties->minor, properties->multiProcessorCount);
    appendf(details, details_size,
            "uuid=GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x; ",
            id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7], id[8], id[9], id[10], id[11],
            id[12], id[13], id[14], id[15]);
    appendf(details, details_size, "pci_bus_id=%04x:%02x:%02x.0; ", properties->pciDomainID,
            properties->pciBusID, properties->pciDeviceID);
    appendf(details, details_size, "l2_bytes=%d; memory_clock_khz=%d; bus_width_bits=%d; ecc=%s",
            properties->l2CacheSize, memory_clock_khz, bus_width_bits,
            properties->ECCEnabled ? "on" : "off");
    info->memory_bytes = (uint64_t)properties->totalGlobalMem;
}

/* Multiplies two f32 numbers whose product is subnormal (2^-70 * 2^-70 =
 * 2^-140). Compiled with the same nvcc flags as every kernel of the build
 * and given its operands at run time, so the product is 0 exactly when the
 * build flushes f32 subnormals (-ftz=true, or --use_fast_math, which implies it). */
namespace {
__global__ void subnormal_product_probe(float a, float b, float *product)
{
    *product = a * b;
}
} // namespace

/* Whether this build's kernels flush f32 subnormals to zero: ops that allow
 * it then check with their flushing bounds (docs/gemm.md, "Flush to zero"). */
static kcs_status probe_flushing(kcs_device *device, int *flushes, kcs_error *err)
{
    float *product = NULL, result = 1.0f;
    KCS_CUDA_CHECK(cudaMalloc(&product, sizeof *product));
    subnormal_product_probe<<<1, 1, 0, device->stream>>>(0x1.0p-70f, 0x1.0p-70f, product);
    cudaError_t launched = cudaGetLastError();
    cudaError_t copied = launched == cudaSuccess
                             ? cudaMemcpyAsync(&result, product, sizeof result, cudaMemcpyDeviceToHost, device->stream)
                             : launched;
    cudaError_t waited = copied == cudaSuccess ? cudaStreamSynchronize(device->stream) : copied;
    (void)cudaFree(product);
    if (waited != cudaSuccess)
        return kcs_cuda_failure(err, waited, "subnormal_product_probe (launch, copy back, wait)", __FILE__,
                                __LINE__);
    *flushes = result == 0.0f;
    return KCS_OK;
}

/* Acquires everything a device needs; on failure close_device releases what was made. */
static kcs_status open_resources(kcs_device *device, kcs_device_info *info, kcs_error *err)
{
    int ordinal = device->ordinal;
    KCS_CUDA_CHECK(cudaSetDevice(ordinal));
    cudaDeviceProp properties;
    KCS_CUDA_CHECK(cudaGetDeviceProperties(&properties, ordinal));
    int memory_clock_khz = 0, bus_width_bits = 0, driver_version = 0, runtime_version = 0;
    KCS_CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, ordinal));
    KCS_CUDA_CHECK(cudaDeviceGetAttribute(&bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal));
    KCS_CUDA_CHECK(cudaDriverGetVersion(&driver_version));
    KCS_CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));
    device->sm_count = properties.multiProcessorCount;

    /* Non-blocking: work on the legacy default stream (a library user's, say)
     * must not serialize with ours and land inside our timings. */
    KCS_CUDA_CHECK(cudaStreamCreateWithFlags(&device->stream, cudaStreamNonBlocking));
    KCS_CUBLAS_CHECK(cublasCreate(&device->blas));
    KCS_CUBLAS_CHECK(cublasSetStream(device->blas, device->stream));
    KCS_CUBLAS_CHECK(cublasLtCreate(&device->blas_lt));
    device->compute_capability = 10 * properties.major + properties.minor;
    int blas_version = 0;
    KCS_CUBLAS_CHECK(cublasGetVersion(device->blas, &blas_version));
    KCS_CUDA_CHECK(cudaEventCreate(&device->start));
    KCS_CUDA_CHECK(cudaEventCreate(&device->stop));
    KCS_CUDA_CHECK(cudaMalloc(&device->blocks_done, sizeof *device->blocks_done));
    KCS_CUDA_CHECK(cudaHostAlloc(&device->hold_flags, 2 * KCS_CUDA_HOLDS * sizeof *device->hold_flags,
                                 cudaHostAllocMapped));
    KCS_CUDA_CHECK(cudaHostGetDevicePointer(&device->hold_flags_on_device, device->hold_flags, 0));
    KCS_CUDA_CHECK(cudaMemsetAsync(device->blocks_done, 0, sizeof *device->blocks_done,
                                   device->stream));
    KCS_CUDA_CHECK(cudaStreamSynchronize(device->stream));

    int flushes = 0;
    kcs_status probed = probe_flushing(device, &flushes, err);
    if (probed != KCS_OK)
        return probed;

    describe(&properties, memory_clock_khz, bus_width_bits, blas_version, driver_version,
             runtime_version, info);
    info->flushes_f32_subnormals = flushes;
    appendf(info->details, sizeof info->details, "; f32_subnormals=%s", flushes ? "flushed" : "kept");
    return KCS_OK;
}

static kcs_status open_device(int index, kcs_device **device, kcs_device_info *info, kcs_error *err)
{
    *device = NULL;
    kcs_device *opened = (kcs_device *)calloc(1, sizeof *opened);
    if (!opened)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    opened->ordinal = index;
    opened->held = -1;
    kcs_status status = open_resources(opened, info, err);
    if (status != KCS_OK) {
        close_device(opened);
        return status;
    }
    *device = opened;
    return KCS_OK;
}

static kcs_status allocate(kcs_device *device, size_t bytes, kcs_buffer **buffer, kcs_error *err)
{
    *buffer = NULL;
    kcs_buffer *made = (kcs_buffer *)calloc(1, sizeof *made);
    if (!made)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = kcs_cuda_select(device, err);
    if (status == KCS_OK && bytes > 0) {
        cudaError_t result = cudaMalloc(&made->data, bytes);
        if (result != cudaSuccess)
            status = kcs_cuda_failure(err, result, "cudaMalloc of a buffer", __FILE__, __LINE__);
    }
    if (status != KCS_OK) {
        free(made);
        return status;
    }
    made->bytes = bytes;
    *buffer = made;
    return KCS_OK;
}

static void release(kcs_device *device, kcs_buffer *buffer)
{
    if (!buffer)
        return;
    if (buffer->data && cudaSetDevice(device->ordinal) == cudaSuccess)
        (void)cudaFree(buffer->data);
    (void)cudaGetLastError();
    free(buffer);
}

/* Copies bytes between host memory and the buffer, host to device when
 * uploading, and waits for it: upload() and download(). */
static kcs_status transfer(kcs_device *device, kcs_buffer *buffer, void *host, size_t bytes, bool uploading,
                           kcs_error *err)
{
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "%s of %zu bytes %s a buffer of %zu", uploading ? "upload" : "download",
                        bytes, uploading ? "into" : "from", buffer->bytes);
    if (bytes == 0)
        return KCS_OK;
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;
    KCS_CUDA_CHECK(cudaMemcpyAsync(uploading ? buffer->data : host, uploading ? host : buffer->data, bytes,
                                   uploading ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, device->stream));
    KCS_CUDA_CHECK(cudaStreamSynchronize(device->stream));
    return KCS_OK;
}

static kcs_status upload(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                         kcs_error *err)
{
    return transfer(device, buffer, const_cast<void *>(host), bytes, true, err);
}

static kcs_status download(kcs_device *device, kcs_buffer *buffer, void *host, size_t bytes,
                           kcs_error *err)
{
    return transfer(device, buffer, host, bytes, false, err);
}

/* Pinned host memory: the harness falls back to an error message on NULL. */
static void *host_allocate(kcs_device *device, size_t bytes)
{
    void *host = NULL;
    if (cudaSetDevice(device->ordinal) != cudaSuccess || cudaMallocHost(&host, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return host;
}

static void host_release(kcs_device *device, void *host)
{
    if (!host)
        return;
    if (cudaSetDevice(device->ordinal) == cudaSuccess)
        (void)cudaFreeHost(host);
    (void)cudaGetLastError();
}

static kcs_status synchronize(kcs_device *device, kcs_error *err)
{
    kcs_status status = kcs_cuda_select(device, err);
    if (status != KCS_OK)
        return status;
    KCS_CUDA_CHECK(cudaStreamSynchronize(device->stream));
    return KCS_OK;
}

static void *native_queue(kcs_device *device)
{
    return device->stream;
}

extern "C" const kcs_kernel_table *const kcs_cuda_kernel_tables[]; /* generated by configure.py */
extern "C" const struct kcs_probe_methods kcs_cuda_probe_methods;   /* probe.cu */

/* Positional: C++17 has no designated initializers; the order is backend.h's. */
extern "C" const kcs_backend kcs_cuda_backend = {
    KCS_BACKEND_INTERFACE_VERSION, /* interface_version */
    "cuda",                        /* name */
    device_count,                  /* device_count */
    open_device,                   /* open */
    close_device,                  /* close */
    allocate,                      /* allocate */
    release,                       /* release */
    upload,                        /* upload */
    download,                      /* download */
    host_allocate,                 /* host_allocate */
    host_release,                  /* host_release */
    kcs_cuda_measure_ceilings,     /* measure_ceilings */
    nullptr,                       /* pace: the GPU's kernels run on hardware of their own */
    kcs_cuda_kernel_tables,        /* kernel_tables */
    synchronize,                   /* synchronize */
    native_queue,                  /* native_queue */
    &kcs_cuda_probe_methods,       /* probe */
    time_back_to_back,             /* time_back_to_back */
};
