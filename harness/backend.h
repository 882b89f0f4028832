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

#define KCS_BACKEND_INTERFACE_VERSION 1

typedef struct kcs_device kcs_device; /* an opened device; each backend defines it */
typedef struct kcs_buffer kcs_buffer; /* device memory; each backend defines it */

/* What a device is, for the results file and the report. */
typedef struct {
    char name[256];            /* as the driver names it */
    char platform[256];        /* OpenCL platform name; "CUDA"; "host" for the reference */
    char vendor[128];          /* vendor string */
    char driver_version[128];  /* driver version */
    char runtime_version[128]; /* OpenCL version, CUDA runtime version, C compiler */
    char details[1024];        /* further "key=value" pairs separated by "; " */
    uint64_t memory_bytes;     /* global memory; 0 when unknown */
} kcs_device_info;

/* The device's own limits, measured in the same run as the cases so that
 * kernels can be given as fractions of them (0: not measured). */
typedef struct {
    double copy_bytes_per_s;           /* device-to-device copy, bytes read + bytes written */
    double host_to_device_bytes_per_s; /* upload from staging (pinned where there is) memory */
    double fma_flops_per_s;            /* f32 fused multiply-adds in registers, 2 flops each */
    double gemm_flops_per_s;           /* the vendor library's f32 GEMM (no tensor cores), 2mnk/s */
    char method[512];                  /* how each was measured: sizes, repeats, library */
} kcs_ceilings;

/* One kernel: an implementation of one op for one dtype. */
typedef struct {
    const char *op;          /* operation name, as in the op table */
    kcs_dtype dtype;         /* the case dtype it handles */
    const char *variant;     /* short name, unique per (op, dtype) in a backend */
    const char *description; /* one line: how it works */
    /* Runs the op on device buffers; inputs and outputs in the op's order.
     * Sets *kernel_seconds to the device time of the kernels alone. */
    kcs_status (*run)(kcs_device *device, const kcs_op_args *args,
                      kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                      double *kernel_seconds, kcs_error *err);
    /* Optional: KCS_UNSUPPORTED with a reason when this device cannot run
     * these args (no fp64, work-group too small, ...); NULL means always. */
    kcs_status (*supports)(kcs_device *device, const kcs_op_args *args, kcs_error *err);
} kcs_kernel;

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
    /* Optional: measures the device's ceilings (medians of repeated runs). */
    kcs_status (*measure_ceilings)(kcs_device *device, kcs_ceilings *ceilings, kcs_error *err);
    /* The kernel table and its length. */
    const kcs_kernel *kernels;
    size_t kernel_count;
} kcs_backend;

/* The backends this binary was built with, in a fixed order, and their count. */
extern const kcs_backend *const kcs_builtin_backends[];
extern const size_t kcs_builtin_backend_count;

#endif
