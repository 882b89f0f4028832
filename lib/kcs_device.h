/* kcs_device.h: every kcs op on buffers that stay on a device (docs/library.md).
 *
 * A program opens a context on one device of one backend (kcs_open_reference
 * here; kcs_open_opencl in kcs_device_opencl.h, kcs_open_cuda in
 * kcs_device_cuda.h), allocates buffers on it, uploads its data once, then
 * calls ops on the buffers as often as it likes: kcs_call enqueues on the
 * context's one in-order stream (CUDA) or command queue (OpenCL) and returns
 * without waiting, so a loop of calls runs back to back on the device and
 * only what the program downloads comes back. The kernels are the runner's
 * own rows (harness/backend.h), so what `ninja check` verifies is what a
 * program links.
 *
 * Errors: every call that can fail returns a kcs_status (status.h) and, when
 * err is not NULL, a message naming the call, the op and the cause. The
 * library never prints and never exits. A fault inside an asynchronous
 * kernel is reported by the next call that waits (kcs_download, kcs_finish).
 *
 * A context is used by one host thread at a time. Part of libkcs_ref.
 */
#ifndef KCS_DEVICE_H
#define KCS_DEVICE_H

#include <stddef.h>

#include "kcs_export.h"
#include "op_args.h" /* kcs_op_args: an op's name, dtype and sizes, as the kernels read them */
#include "status.h"  /* kcs_status, kcs_error */

#ifdef __cplusplus
extern "C" {
#endif

/* One opened device of one backend, with its stream or command queue. */
typedef struct kcs_context kcs_context;

/* Memory on a context's device (the size it was allocated with is kept, and
 * every call checks its buffers against the op's shapes). */
typedef struct kcs_device_buffer kcs_device_buffer;

/* The version of the library this header belongs to: "MAJOR.MINOR.PATCH";
 * the shared library's soname carries MAJOR (docs/library.md, "Versions"). */
KCS_API const char *kcs_library_version(void);

/* Opens the scalar reference's one device, the host: buffers are host
 * memory and every call is finished when it returns. */
KCS_API kcs_status kcs_open_reference(kcs_context **context, kcs_error *err);

/* Waits for the context's work, then releases everything it holds (buffers
 * still allocated included). NULL is ignored. */
KCS_API void kcs_close(kcs_context *context);

/* The backend's name ("reference", "opencl", "cuda"). */
KCS_API const char *kcs_context_backend(const kcs_context *context);

/* The device's name, as its driver gives it. */
KCS_API const char *kcs_context_device_name(const kcs_context *context);

/* The device's own stream or queue (a cudaStream_t, a cl_command_queue), to
 * order a program's own kernels with kcs's; NULL for the reference. */
KCS_API void *kcs_context_queue(const kcs_context *context);

/* bytes bytes of device memory (0 is allowed). */
KCS_API kcs_status kcs_allocate(kcs_context *context, size_t bytes, kcs_device_buffer **buffer,
                                kcs_error *err);

/* Frees a buffer, after the work enqueued before it. NULL is ignored. */
KCS_API void kcs_release(kcs_context *context, kcs_device_buffer *buffer);

/* The size a buffer was allocated with. */
KCS_API size_t kcs_buffer_bytes(const kcs_device_buffer *buffer);

/* Copies bytes (at most the buffer's size) from host into the buffer, after
 * the work already enqueued, and waits for the copy. */
KCS_API kcs_status kcs_upload(kcs_context *context, kcs_device_buffer *buffer, const void *host,
                              size_t bytes, kcs_error *err);

/* Copies bytes from the buffer into host once the work enqueued before has
 * finished, and waits for the copy. */
KCS_API kcs_status kcs_download(kcs_context *context, kcs_device_buffer *buffer, void *host,
                                size_t bytes, kcs_error *err);

/* Host memory for staging transfers: page-locked where the backend has it
 * (CUDA: cudaMallocHost; OpenCL: a mapped host buffer), else malloc; NULL
 * when out of memory. Free it with kcs_host_release. */
KCS_API void *kcs_host_allocate(kcs_context *context, size_t bytes);

/* Frees memory from kcs_host_allocate; NULL is ignored. */
KCS_API void kcs_host_release(kcs_context *context, void *host);

/* Runs one op: args names the op ("assign"), its dtype and sizes (op_args.h;
 * its member of the union is the op's), inputs and outputs are in the op's
 * order (docs/<op>.md, docs/library.md's table), variant picks one of the
 * backend's kernels for it (`kcs list`), or NULL for the first. Enqueues and
 * returns without waiting (the reference: runs and returns). Checks first,
 * with an error naming the cause, that the backend has the op and dtype,
 * that the device can run it (an unsupported case is KCS_UNSUPPORTED) and
 * that every buffer is as large as the op's shapes need. */
KCS_API kcs_status kcs_call(kcs_context *context, const kcs_op_args *args, const char *variant,
                            kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[],
                            kcs_error *err);

/* The same, waiting for it, and sets *kernel_seconds to the device time of
 * its kernels alone (device events or OpenCL profiling; the reference: the
 * thread's CPU time), as the runner measures it. */
KCS_API kcs_status kcs_call_timed(kcs_context *context, const kcs_op_args *args, const char *variant,
                                  kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[],
                                  double *kernel_seconds, kcs_error *err);

/* Waits until everything enqueued on the context has finished; reports a
 * fault of an asynchronous kernel. */
KCS_API kcs_status kcs_finish(kcs_context *context, kcs_error *err);

#ifdef __cplusplus
}
#endif

#endif
