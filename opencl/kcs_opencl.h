/* kcs_opencl.h: what the OpenCL backend's host files share (not a public header).
 *
 * opencl/backend.c owns devices, buffers and program builds; each op file
 * (opencl/sumsq.c, ...) describes its programs (kcs_opencl_program: the
 * embedded .cl source and its build options), launches their kernels with
 * the helpers below and exports its rows of the kernel table as
 * kcs_opencl_<op>_kernels, which configure.py finds and lists (so adding an
 * op or a dtype is an edit of that op's files only). Programs are built once
 * per device, on first use, and the outcome (including a failed build and
 * its log) is kept for the device's lifetime, so a broken kernel file costs
 * one build and every case that needs it reports the same log.
 */
#ifndef KCS_OPENCL_H
#define KCS_OPENCL_H

#include <stddef.h>

#include <CL/cl.h>

#include "backend.h"

/* One program: a kernel source the build embeds from opencl/<stem>.cl
 * (tools/embed.py) and the options it is built with. Each op file defines its
 * own, static (one per precision where one source is built for several), and
 * passes it by pointer to kcs_opencl_kernel; the device keeps one build per
 * descriptor. Initialize one with KCS_OPENCL_PROGRAM. */
typedef struct {
    const char *file;     /* "opencl/<stem>.cl", for messages */
    const char *source;   /* the embedded text, kcs_opencl_<stem>_source */
    const size_t *length; /* its length, &kcs_opencl_<stem>_source_length */
    const char *options;  /* -D options giving the source's tunables the host's values */
    /* Added where the device's compiler is NVIDIA's (cl_nv_compiler_options), or NULL:
     * e.g. a register cap, which only that compiler takes (see KCS_OPENCL_PROGRAM_NVIDIA). */
    const char *nvidia_options;
} kcs_opencl_program;

/* Declares the text the build embeds from opencl/<stem>.cl, for KCS_OPENCL_PROGRAM. */
#define KCS_OPENCL_EMBEDDED_SOURCE(stem)                                                         \
    extern const char kcs_opencl_##stem##_source[];                                              \
    extern const size_t kcs_opencl_##stem##_source_length

/* A kcs_opencl_program's initializer: opencl/<stem>.cl built with options (a string literal). */
#define KCS_OPENCL_PROGRAM(stem, build_options)                                                   \
    {"opencl/" #stem ".cl", kcs_opencl_##stem##_source, &kcs_opencl_##stem##_source_length,       \
     build_options, NULL}

/* The same, with nvidia_build_options added where the device takes NVIDIA's compiler options. */
#define KCS_OPENCL_PROGRAM_NVIDIA(stem, build_options, nvidia_build_options)                      \
    {"opencl/" #stem ".cl", kcs_opencl_##stem##_source, &kcs_opencl_##stem##_source_length,       \
     build_options, nvidia_build_options}

/* A macro's value as a string literal, for build options ("-DX=" KCS_OPENCL_STRINGIFY(X)). */
#define KCS_OPENCL_STRINGIFY_(x) #x
#define KCS_OPENCL_STRINGIFY(x) KCS_OPENCL_STRINGIFY_(x)

/* The most programs one device builds (descriptors, across all op files). */
#define KCS_OPENCL_MAX_PROGRAMS 64

/* The most kernel objects one device keeps (across all programs). */
#define KCS_OPENCL_MAX_KERNELS 256

/* The most scratch buffers one launcher may hold at once. */
#define KCS_OPENCL_SCRATCH_SLOTS 2

/* One program's build on one device: built, or failed with a message. */
typedef struct {
    const kcs_opencl_program *program; /* the descriptor it was built from */
    cl_program built;                  /* the built program, or NULL */
    char *failure;                     /* why the build failed (with its log), or NULL */
} kcs_opencl_build;

/* A kernel object created from a built program, found again by name. */
typedef struct {
    const kcs_opencl_program *program; /* the program it came from */
    const char *name;                  /* its kernel function's name (a string literal) */
    cl_kernel kernel;                  /* the kernel object */
} kcs_opencl_kernel_entry;

/* Host memory handed out by host_allocate, kept in a list to be found again. */
typedef struct kcs_opencl_staging {
    void *host;                      /* the pointer the harness holds */
    cl_mem memory;                   /* the mapped buffer behind it, or NULL when malloc'd */
    struct kcs_opencl_staging *next; /* the next allocation */
} kcs_opencl_staging;

/* An opened OpenCL device. */
struct kcs_device {
    cl_platform_id platform;        /* its platform */
    cl_device_id id;                /* the device */
    cl_context context;             /* a context holding only this device */
    cl_command_queue queue;         /* in order, with profiling enabled */
    cl_device_type type;            /* CL_DEVICE_TYPE_GPU, _CPU, ... */
    cl_uint compute_units;          /* CL_DEVICE_MAX_COMPUTE_UNITS */
    size_t max_work_group_size;     /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    cl_ulong max_allocation;        /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    cl_ulong local_memory;          /* CL_DEVICE_LOCAL_MEM_SIZE, bytes a work-group may use */
    size_t plan_group_limit;        /* KCS_OPENCL_PLAN_AS's max_work_group, or 0: the most work-items
                                       a launcher may put in a work-group, below what a kernel allows */
    int has_fp64;                   /* whether cl_khr_fp64 is offered */
    int has_fp16;                   /* whether cl_khr_fp16 is offered */
    int has_nv_compiler_options;    /* whether cl_nv_compiler_options is offered (-cl-nv-*) */
    char nvidia_option[32];         /* "-DKCS_OPENCL_NVIDIA_SM=90" on NVIDIA, else "" (backend.c) */
    char name[256];                 /* CL_DEVICE_NAME, for messages */
    kcs_opencl_build builds[KCS_OPENCL_MAX_PROGRAMS]; /* programs built (or tried) so far */
    int build_count;                /* entries of builds in use */
    kcs_opencl_kernel_entry kernels[KCS_OPENCL_MAX_KERNELS]; /* kernel objects made so far */
    int kernel_count;               /* entries of kernels in use */
    cl_mem scratch[KCS_OPENCL_SCRATCH_SLOTS];        /* reusable scratch buffers, or NULL */
    size_t scratch_bytes[KCS_OPENCL_SCRATCH_SLOTS];  /* their sizes */
    cl_mem groups_done;             /* kcs_opencl_groups_done's buffer, or NULL before its first use */
    size_t groups_done_bytes;       /* its size */
    kcs_opencl_staging *staging;    /* live host_allocate allocations */
    struct kcs_opencl_chunk *queueing; /* non-NULL while repeats are queued back to back: their events
                                          (backend.c, "Back to back") */
};

/* Device memory from allocate(). */
struct kcs_buffer {
    size_t bytes;  /* the size the harness asked for; first, as harness/backend.h asks */
    cl_mem memory; /* the buffer (at least one byte, even for an empty array) */
};

/* The first and last launch of one kernel run, whose profiling times give its device time. */
typedef struct {
    cl_event first; /* the first launch's event, or NULL before any */
    cl_event last;  /* the latest launch's event (may be first) */
} kcs_opencl_events;

/* Returns KCS_ERROR through err, naming the expression, file, line and CL_* code,
 * when an OpenCL call does not return CL_SUCCESS. For calls that report through
 * an errcode_ret argument, check a comma expression: (object = clCreate...(..., &code), code). */
#define KCS_OPENCL_CHECK(expression, err)                                                   \
    do {                                                                                    \
        cl_int kcs_opencl_code_ = (expression);                                             \
        if (kcs_opencl_code_ != CL_SUCCESS)                                                 \
            return kcs_opencl_fail((err), kcs_opencl_code_, #expression, __FILE__, __LINE__); \
    } while (0)

/* The name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "unknown OpenCL error". */
const char *kcs_opencl_error_name(cl_int code);

/* Fills err with "file:line: expression failed with NAME (code)" and returns KCS_ERROR. */
kcs_status kcs_opencl_fail(kcs_error *err, cl_int code, const char *expression, const char *file,
                           int line);

/* The named kernel of a program, building the program on its first use on this device. */
kcs_status kcs_opencl_kernel(kcs_device *device, const kcs_opencl_program *program, const char *name,
                             cl_kernel *kernel, kcs_error *err);

/* The most work-items the device takes in a work-group of kernel
 * (CL_KERNEL_WORK_GROUP_SIZE), lowered to KCS_OPENCL_PLAN_AS's max_work_group
 * where it is set: every launcher asks this, never the device directly. */
kcs_status kcs_opencl_kernel_group_limit(kcs_device *device, cl_kernel kernel, size_t *allowed, kcs_error *err);

/* The largest power of two that is at most limit and at most what the device allows
 * for this kernel as one work-group. */
kcs_status kcs_opencl_group_size(kcs_device *device, cl_kernel kernel, size_t limit, size_t *size,
                                 kcs_error *err);

/* A scratch buffer of at least bytes bytes in slot (< KCS_OPENCL_SCRATCH_SLOTS), kept
 * by the device and grown when a larger one is asked for. */
kcs_status kcs_opencl_scratch(kcs_device *device, int slot, size_t bytes, cl_mem *memory,
                              kcs_error *err);

/* A buffer for a kernel whose last work-group to finish completes the work in
 * the same launch: its first cl_uint counts the work-groups done, and at least
 * bytes bytes follow it for the groups' partials. Kept by the device, made
 * zero-filled and made again (zero-filled) when a larger one is asked for.
 * Promise: the counter is zero whenever no kernel that uses it runs; every
 * such kernel sets it back to zero before it ends (its last work-group, once
 * every other has counted itself). Kernels of one in-order queue run one
 * after another, so they may share it. */
kcs_status kcs_opencl_groups_done(kcs_device *device, size_t bytes, cl_mem *buffer, kcs_error *err);

/* Enqueues kernel over global work-items in work-groups of local, recording its event. */
kcs_status kcs_opencl_launch(kcs_device *device, cl_kernel kernel, size_t global, size_t local,
                             kcs_opencl_events *events, kcs_error *err);

/* Waits for the launches, sets *seconds from the start of the first to the end of
 * the last (profiling times), and releases the events. */
kcs_status kcs_opencl_elapsed(kcs_opencl_events *events, double *seconds, kcs_error *err);

/* The launches of one kernel run, added to events (the signature of every
 * op file's enqueue functions, in the op's order of inputs and outputs). */
typedef kcs_status kcs_opencl_enqueue(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                      kcs_buffer *const outputs[], kcs_opencl_events *events, kcs_error *err);

/* Checks the buffers against the op's layout (kcs_check_buffers), runs
 * enqueue and sets *kernel_seconds from its events (0 when it launched
 * nothing, for an empty input); on a failure the queue is drained and the
 * events released before the error is returned. Every kernel row's run is
 * this around its enqueue function. */
kcs_status kcs_opencl_timed(kcs_opencl_enqueue *enqueue, kcs_device *device, const kcs_op_args *args,
                            kcs_buffer *const inputs[], kcs_buffer *const outputs[], double *kernel_seconds,
                            kcs_error *err);

/* Releases the events without waiting for them (on a failure path). */
void kcs_opencl_events_release(kcs_opencl_events *events);

/* Those of the device's copy, upload and f32 FMA rates, and the rate of
 * kcs's own tuned f32 GEMM, that wanted asks for (opencl/ceilings.c). */
kcs_status kcs_opencl_measure_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                       kcs_error *err);

/* The backend (opencl/backend.c), whose kernel rows the ceilings run. */
extern const kcs_backend kcs_opencl_backend;

#endif
