/* backend.h: the one interface every backend implements.
 *
 * A backend (the scalar reference, OpenCL, CUDA, the saboteurs used by the
 * tests) is a versioned struct of function pointers, in the manner of
 * sqlite3_io_methods, so that several backends can be compared in one run and
 * the harness never needs to know how a device works. Its kernels are rows in
 * a table: adding a kernel is adding a file and a row.
 *
 * Buffers live on the device and stay there between calls (library users
 * upload once and call many times); the harness moves data only through
 * upload and download, so transfers never hide inside kernel timings.
 */
#ifndef KCS_BACKEND_H
#define KCS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "op_args.h"
#include "status.h"

#define KCS_BACKEND_INTERFACE_VERSION 7 /* 4: measure_ceilings takes the mask of ceilings wanted; 5: a buffer
                                         * begins with its size (kcs_check_buffers); 6: probe;
                                         * 7: time_back_to_back */

typedef struct kcs_device kcs_device; /* an opened device; each backend defines it */
/* Device memory; each backend defines it, beginning with its size as a
 * member `size_t bytes` (the size allocate() was asked for), which
 * kcs_check_buffers (op.h) reads to check a call's buffers against the op's
 * layout: a backend's definition asserts offsetof(kcs_buffer, bytes) == 0. */
typedef struct kcs_buffer kcs_buffer;

/* What a device is, for the results file and the report. */
typedef struct {
    char name[256];            /* as the driver names it */
    char platform[256];        /* OpenCL platform name; "CUDA"; "host" for the reference */
    char vendor[128];          /* vendor string */
    char driver_version[128];  /* driver version */
    char runtime_version[128]; /* OpenCL version, CUDA runtime version, C compiler */
    char details[1024];        /* further "key=value" pairs separated by "; " */
    uint64_t memory_bytes;     /* global memory; 0 when unknown */
    int flushes_f32_subnormals; /* 1: its f32 arithmetic may flush subnormal inputs and results
                                   to zero (OpenCL: CL_DEVICE_SINGLE_FP_CONFIG without
                                   CL_FP_DENORM; CUDA: kernels built with -ftz=true), so ops
                                   that allow it use kcs_op.flushing_bounds */
    int shares_host_cores;     /* 1: its kernels run on the host's CPU cores (the reference, an
                                  OpenCL CPU device such as POCL), so the runner does not run
                                  two such devices' workers at once by default (docs/runner.md) */
} kcs_device_info;

/* Which of a device's ceilings a run asks measure_ceilings for: one bit per
 * rate of kcs_ceilings. A run asks only for those its timed cases are judged
 * against (harness/speed.h, kcs_ceilings_judging; runner/devices.c), since
 * measuring every GEMM mode's rate takes seconds that a run of one
 * copy-bound kernel does not need; --all-ceilings and `kcs devices
 * --ceilings` ask for KCS_CEILINGS_ALL. */
typedef unsigned kcs_ceiling_mask;
#define KCS_CEILING_BIT_COPY (1u << 0)            /* copy_bytes_per_s */
#define KCS_CEILING_BIT_HOST_TO_DEVICE (1u << 1)  /* host_to_device_bytes_per_s */
#define KCS_CEILING_BIT_FMA (1u << 2)             /* fma_flops_per_s */
#define KCS_CEILING_BIT_GEMM (1u << 3)            /* gemm_flops_per_s */
#define KCS_CEILING_BIT_GEMM_TF32 (1u << 4)       /* gemm_tf32_flops_per_s */
#define KCS_CEILING_BIT_GEMM_F16 (1u << 5)        /* gemm_f16_flops_per_s */
#define KCS_CEILING_BIT_GEMM_BF16 (1u << 6)       /* gemm_bf16_flops_per_s */
#define KCS_CEILING_BIT_GEMM_F64 (1u << 7)        /* gemm_f64_flops_per_s */
#define KCS_CEILING_BIT_GEMM_FP8_E4M3 (1u << 8)   /* gemm_fp8_e4m3_flops_per_s */
#define KCS_CEILINGS_ALL ((1u << 9) - 1)          /* every rate above */

/* The device's own limits, measured in the same run as the cases so that
 * kernels can be given as fractions of them (0: not measured). */
typedef struct {
    double copy_bytes_per_s;           /* device-to-device copy, bytes read + bytes written */
    double host_to_device_bytes_per_s; /* upload from staging (pinned where there is) memory */
    double fma_flops_per_s;            /* f32 fused multiply-adds in registers, 2 flops each */
    double gemm_flops_per_s;           /* f32 GEMM (no tensor cores), 2mnk/s: cuBLAS's on CUDA, kcs's
                                        * own tuned kernel on OpenCL (method says which and how) */
    /* The GEMM rate of each other mode, 2mnk/s (CUDA: cuBLAS and cuBLASLt; docs/results.md): a
     * GEMM kernel is judged against its own mode's (harness/speed.c, kcs_ceiling_of). */
    double gemm_tf32_flops_per_s;      /* f32 inputs as TF32 on tensor cores, f32 accumulation */
    double gemm_f16_flops_per_s;       /* f16 inputs, f32 accumulation, tensor cores allowed */
    double gemm_bf16_flops_per_s;      /* bf16 inputs, f32 accumulation, tensor cores allowed */
    double gemm_f64_flops_per_s;       /* f64 (FP64 tensor cores where the card has them) */
    double gemm_fp8_e4m3_flops_per_s;  /* FP8 e4m3 inputs, f32 accumulation (compute capability 8.9 and up) */
    char method[1024];                 /* how each was measured: sizes, repeats, library */
    /* The rates this run asked for (set by the runner, not the backend): a
     * rate outside it that is 0 was not measured in this run, where one
     * inside it that is 0 could not be measured on this device. */
    kcs_ceiling_mask asked;
} kcs_ceilings;

/* The signature of every kernel: runs one op on device buffers, inputs and
 * outputs in the op's order (each backend's call path checks them against
 * the op's layout first, kcs_check_buffers), and sets *kernel_seconds to
 * the device time of the kernels alone. On a backend with a synchronize function, kernel_seconds
 * may be NULL: the run then enqueues its kernels on the device's stream or
 * queue and returns without waiting for them (the library's asynchronous
 * call, docs/library.md). Declare a kernel as `kcs_kernel_run name;` and define
 * it with KCS_KERNEL_RUN(name). */
typedef kcs_status kcs_kernel_run(kcs_device *device, const kcs_op_args *args,
                                  kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                  double *kernel_seconds, kcs_error *err);

/* Whether a kernel can run these args on this device: KCS_UNSUPPORTED with
 * a reason when it cannot (no fp64, work-group too small, ...). */
typedef kcs_status kcs_kernel_supports(kcs_device *device, const kcs_op_args *args, kcs_error *err);

/* The head of a kernel's definition, parameters named as in kcs_kernel_run. */
#define KCS_KERNEL_RUN(name)                                                                       \
    kcs_status name(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],      \
                    kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err)

/* The head of a supports() definition. */
#define KCS_KERNEL_SUPPORTS(name) kcs_status name(kcs_device *device, const kcs_op_args *args, kcs_error *err)

/* One kernel: an implementation of one op for one dtype, a row of a table. */
typedef struct {
    const char *op;          /* operation name, as in the op table */
    kcs_dtype dtype;         /* the case dtype it handles */
    const char *variant;     /* short name, unique per (op, dtype) in a backend */
    const char *description; /* one line: how it works */
    kcs_kernel_run *run;     /* runs it */
    kcs_kernel_supports *supports; /* optional: NULL means always */
    /* Optional: the vendor library whose routine the row is ("cuBLAS", "CUB"),
     * so that a report compares kcs's own kernels with it as their peer; NULL
     * for kcs's own kernels (even one that calls a library for a step). */
    const char *library;
    /* Optional: why no case of cases/ or tests/cases/ selects this row, for a
     * row kept on purpose where none can (`kcs rows` then lists it with the
     * reason rather than failing it as unreachable; harness/kernel_rows.h).
     * NULL: some case of its op and dtype must run on it. */
    const char *unreachable;
} kcs_kernel;

/* The kernel rows one file of a backend exports. Each op file of a backend
 * defines one, named kcs_<backend>_<op>_kernels, with KCS_KERNEL_TABLE;
 * configure.py finds them and generates the backend's list of tables, so
 * adding a file adds its kernels without editing anything shared. */
typedef struct {
    const kcs_kernel *rows;
    size_t count;
} kcs_kernel_table;

/* A table's initializer from a local array of rows. */
#define KCS_KERNEL_TABLE(rows) {rows, sizeof rows / sizeof rows[0]}

/* A backend. Every member must be set unless its comment says optional. */
typedef struct {
    int interface_version; /* KCS_BACKEND_INTERFACE_VERSION */
    const char *name;      /* "reference", "opencl", "cuda" */
    /* Number of devices; KCS_UNSUPPORTED with the reason when there are none
     * (no driver, no platform), which the runner reports as skips. */
    kcs_status (*device_count)(int *count, kcs_error *err);
    /* Opens device index (0 <= index < count) and describes it. */
    kcs_status (*open)(int index, kcs_device **device, kcs_device_info *info, kcs_error *err);
    /* Releases everything open() acquired. */
    void (*close)(kcs_device *device);
    /* Device memory of bytes bytes (bytes may be 0). */
    kcs_status (*allocate)(kcs_device *device, size_t bytes, kcs_buffer **buffer, kcs_error *err);
    /* Frees a buffer from allocate(); NULL is ignored. */
    void (*release)(kcs_device *device, kcs_buffer *buffer);
    /* Copies bytes from host memory into the buffer and waits for it. */
    kcs_status (*upload)(kcs_device *device, kcs_buffer *buffer, const void *host, size_t bytes,
                         kcs_error *err);
    /* Copies bytes from the buffer into host memory and waits for it. */
    kcs_status (*download)(kcs_device *device, kcs_buffer *buffer, void *host, size_t bytes,
                           kcs_error *err);
    /* Optional: page-locked host memory for staging transfers (NULL: malloc). */
    void *(*host_allocate)(kcs_device *device, size_t bytes);
    /* Optional: frees memory from host_allocate (NULL: free). */
    void (*host_release)(kcs_device *device, void *host);
    /* Optional: measures the device's ceilings (medians of repeated runs):
     * those of wanted (KCS_CEILING_BIT_*) it can, leaving the others 0. It
     * may measure more than wanted where one rate needs another (it says
     * so where it does); every rate it fills is a real measurement. */
    kcs_status (*measure_ceilings)(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                   kcs_error *err);
    /* Optional: times one call of a fixed workload, on the clock the device's
     * kernel times use, into *seconds. The runner times it after every timed
     * repeat of a kernel, so that a comparison of two runs can tell a machine
     * that got busier from a kernel that got slower (docs/comparing.md). For
     * a device that shares its cores with the machine's other work (the
     * reference); NULL where kernels run on hardware of their own. */
    kcs_status (*pace)(kcs_device *device, double *seconds, kcs_error *err);
    /* The backend's kernel tables, NULL-terminated (generated by configure.py
     * from its files' exports; see kcs_backend_kernel to walk them). */
    const kcs_kernel_table *const *kernel_tables;
    /* Optional: waits for everything enqueued on the device's stream or queue.
     * NULL: the backend is synchronous (every call returns finished) and its
     * runs need kernel_seconds. A backend that sets it accepts kernel_seconds
     * == NULL in every run (enqueue and return). */
    kcs_status (*synchronize)(kcs_device *device, kcs_error *err);
    /* Optional: the device's own stream or queue (cudaStream_t, cl_command_queue),
     * for programs that mix kcs with their own kernels; NULL: none. */
    void *(*native_queue)(kcs_device *device);
    /* Optional: the in-production probe's kernels (harness/probe.h; docs/fleet.md,
     * "The probe"); NULL: the backend has no probe. */
    const struct kcs_probe_methods *probe;
    /* Optional: times count repeats of one kernel queued back to back
     * (docs/runner.md, "Back to back"): the device goes from one repeat to
     * the next without waiting for the host, and each repeat is timed on the
     * device into seconds[repeat]. run(context, repeat, err) makes repeat
     * number `repeat` (0 to count - 1, in order) with the kernel row's run,
     * kernel_seconds non-NULL; the backend decides what the row's timer does
     * meanwhile. KCS_UNSUPPORTED, with the reason, when a repeat cannot be
     * timed so (a run that waits for the device while the repeats are being
     * queued): nothing it wrote counts, and the runner times that kernel one
     * repeat at a time. NULL: the runner always times one repeat at a time,
     * as it does for every backend with a pace (above). */
    kcs_status (*time_back_to_back)(kcs_device *device, int count,
                                    kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                    double *seconds, kcs_error *err);
} kcs_backend;

/* The order of a backend's time_back_to_back, in one place (docs/runner.md,
 * "Back to back"): the repeats go in chunks of at most repeats_a_chunk, held
 * in `slots` slots taken in turn (a slot: one chunk's events, and its hold
 * where the backend holds its queue). A chunk is queued whole and closed (its
 * hold released, or the queue flushed) before the chunk queued before it is
 * waited for and read, so that while the device runs one chunk the host
 * queues the next. Every repeat must record exactly one timed run into its
 * chunk: none would leave a repeat without a time, two would time the wrong
 * runs. */
typedef struct kcs_back_to_back {
    int repeats_a_chunk; /* at least 1 */
    int slots;           /* at least 2: one chunk queued while the one before is read */
    void *backend;       /* handed to each call below */
    /* Readies the slot for repeats first .. first + count - 1 before they are
     * queued: the timer's target, and a hold where the backend holds. */
    kcs_status (*open)(void *backend, int slot, int first, int count, kcs_error *err);
    /* Timed runs the slot's chunk has recorded since it was opened. */
    int (*recorded)(void *backend, int slot);
    /* Called after every open, when the chunk's repeats are queued or one of
     * them failed (status): lets the device start them. Returns status, or its
     * own failure where status was KCS_OK. */
    kcs_status (*close)(void *backend, int slot, kcs_status status, kcs_error *err);
    /* Waits for a closed slot's repeats and writes seconds[first + r]. */
    kcs_status (*read)(void *backend, int slot, double *seconds, kcs_error *err);
} kcs_back_to_back;

/* Times count repeats (at least 1) made by run(context, repeat, err), in
 * that order; the first failure ends the walk and is returned, leaving the
 * backend to drain what it had queued. */
kcs_status kcs_back_to_back_walk(const kcs_back_to_back *walk, int count,
                                 kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                 double *seconds, kcs_error *err);

/* Number of kernels of a backend, over all its tables. */
size_t kcs_backend_kernel_count(const kcs_backend *backend);

/* Kernel index (< kcs_backend_kernel_count) of a backend, tables in order. */
const kcs_kernel *kcs_backend_kernel(const kcs_backend *backend, size_t index);

/* The first kernel of a backend for op and dtype (and variant, unless NULL), or NULL. */
const kcs_kernel *kcs_backend_find_kernel(const kcs_backend *backend, const char *op, kcs_dtype dtype,
                                          const char *variant);

/* The backends this binary was built with, in a fixed order, and their count. */
extern const kcs_backend *const kcs_builtin_backends[];
extern const size_t kcs_builtin_backend_count;

#endif
