/* device.c: the calls of kcs_device.h over any backend (docs/library.md).
 *
 * Each call checks what the backend cannot (the op exists for the dtype, the
 * device supports the case) and that every buffer is as large as the op's
 * layout says (kcs_check_buffers, harness/op.h: the one check that every
 * backend's call path makes too, from the same descriptor the runner checks
 * cases with, in ops/), before anything runs, and then calls the backend's
 * own function or kernel row, so a program runs exactly the kernels `ninja
 * check` verifies. Asynchronous calls pass no
 * kernel_seconds to the run (harness/backend.h); on a synchronous backend
 * (the reference) they are timed and finished, the backend having no queue.
 */
#include <stdio.h>
#include <stdlib.h>

#include "context.h"
#include "op.h"

extern const kcs_backend kcs_reference_backend; /* ref/backend.c */

const char *kcs_library_version(void)
{
    return KCS_LIBRARY_VERSION; /* from configure.py's LIBRARY_VERSION */
}

kcs_status kcs_open_reference(kcs_context **context, kcs_error *err)
{
    return kcs_context_open(&kcs_reference_backend, 0, context, err);
}

void kcs_close(kcs_context *context)
{
    if (!context)
        return;
    if (context->backend->synchronize)
        (void)context->backend->synchronize(context->device, NULL);
    while (context->buffers)
        kcs_release(context, context->buffers);
    context->backend->close(context->device);
    free(context);
}

const char *kcs_context_backend(const kcs_context *context)
{
    return context->backend->name;
}

const char *kcs_context_device_name(const kcs_context *context)
{
    return context->info.name;
}

void *kcs_context_queue(const kcs_context *context)
{
    return context->backend->native_queue ? context->backend->native_queue(context->device) : NULL;
}

kcs_status kcs_allocate(kcs_context *context, size_t bytes, kcs_device_buffer **buffer, kcs_error *err)
{
    *buffer = calloc(1, sizeof **buffer);
    if (!*buffer)
        return kcs_fail(err, KCS_ERROR, "kcs_allocate: out of host memory");
    kcs_status status = context->backend->allocate(context->device, bytes, &(*buffer)->buffer, err);
    if (status != KCS_OK) {
        kcs_error_prefix(err, "kcs_allocate of %zu bytes on %s", bytes, context->info.name);
        free(*buffer);
        *buffer = NULL;
        return status;
    }
    (*buffer)->bytes = bytes;
    (*buffer)->next = context->buffers;
    context->buffers = *buffer;
    return KCS_OK;
}

void kcs_release(kcs_context *context, kcs_device_buffer *buffer)
{
    if (!buffer)
        return;
    for (kcs_device_buffer **at = &context->buffers; *at; at = &(*at)->next) {
        if (*at == buffer) {
            *at = buffer->next;
            break;
        }
    }
    context->backend->release(context->device, buffer->buffer);
    free(buffer);
}

size_t kcs_buffer_bytes(const kcs_device_buffer *buffer)
{
    return buffer->bytes;
}

kcs_status kcs_upload(kcs_context *context, kcs_device_buffer *buffer, const void *host, size_t bytes,
                      kcs_error *err)
{
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "kcs_upload: %zu bytes into a buffer of %zu", bytes, buffer->bytes);
    kcs_status status = context->backend->upload(context->device, buffer->buffer, host, bytes, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_upload");
    return status;
}

kcs_status kcs_download(kcs_context *context, kcs_device_buffer *buffer, void *host, size_t bytes,
                        kcs_error *err)
{
    if (bytes > buffer->bytes)
        return kcs_fail(err, KCS_ERROR, "kcs_download: %zu bytes from a buffer of %zu", bytes, buffer->bytes);
    kcs_status status = context->backend->download(context->device, buffer->buffer, host, bytes, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_download");
    return status;
}

void *kcs_host_allocate(kcs_context *context, size_t bytes)
{
    if (context->backend->host_allocate)
        return context->backend->host_allocate(context->device, bytes);
    return malloc(bytes);
}

void kcs_host_release(kcs_context *context, void *host)
{
    if (!host)
        return;
    if (context->backend->host_release)
        context->backend->host_release(context->device, host);
    else
        free(host);
}

/* The backend's buffers of one array of the op's (count of them; NULL for a NULL one). */
static void unwrap(int count, kcs_device_buffer *const given[], kcs_buffer *unwrapped[])
{
    for (int i = 0; i < count; i++)
        unwrapped[i] = given && given[i] ? given[i]->buffer : NULL;
}

/* The kernel row for args on the context's backend, with the buffers checked and unwrapped. */
static kcs_status prepare(kcs_context *context, const kcs_op_args *args, const char *variant,
                          kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[],
                          kcs_buffer *in[], kcs_buffer *out[], const kcs_kernel **kernel, kcs_error *err)
{
    if (!context || !args || !args->op)
        return kcs_fail(err, KCS_ERROR, "kcs_call: %s is NULL", !context ? "the context" : !args ? "args" : "args->op");
    const kcs_op *op = kcs_find_op(args->op);
    if (!op)
        return kcs_fail(err, KCS_ERROR, "kcs_call: there is no op '%s'", args->op);
    const char *dtype = kcs_dtype_name(args->dtype);
    *kernel = kcs_backend_find_kernel(context->backend, args->op, args->dtype, variant);
    if (!*kernel)
        return kcs_fail(err, KCS_UNSUPPORTED, "kcs_call %s %s: the %s backend has no kernel %s%s%s", args->op,
                        dtype, context->backend->name, variant ? "'" : "for it", variant ? variant : "",
                        variant ? "'" : "");
    kcs_layout layout;
    kcs_status status = op->layout(args, &layout, err);
    if (status == KCS_OK) {
        unwrap(layout.input_count, inputs, in);
        unwrap(layout.output_count, outputs, out);
        status = kcs_check_buffers(op, args, in, out, err); /* the backend's sizes: those allocated */
    }
    if (status == KCS_OK && (*kernel)->supports)
        status = (*kernel)->supports(context->device, args, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_call %s %s (%s)", args->op, dtype, (*kernel)->variant);
    return status;
}

/* Runs the kernel; seconds NULL asks for an asynchronous run where the backend has a queue. */
static kcs_status run(kcs_context *context, const kcs_op_args *args, const char *variant,
                      kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[], double *seconds,
                      kcs_error *err)
{
    kcs_buffer *in[KCS_MAX_INPUTS] = {NULL}, *out[KCS_MAX_OUTPUTS] = {NULL};
    const kcs_kernel *kernel = NULL;
    kcs_status status = prepare(context, args, variant, inputs, outputs, in, out, &kernel, err);
    if (status != KCS_OK)
        return status;
    double ignored = 0.0;
    if (!seconds && !context->backend->synchronize)
        seconds = &ignored; /* a synchronous backend's runs always time themselves */
    status = kernel->run(context->device, args, in, out, seconds, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_call %s %s (%s) on %s", args->op, kcs_dtype_name(args->dtype), kernel->variant,
                         context->info.name);
    return status;
}

kcs_status kcs_call(kcs_context *context, const kcs_op_args *args, const char *variant,
                    kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[], kcs_error *err)
{
    return run(context, args, variant, inputs, outputs, NULL, err);
}

kcs_status kcs_call_timed(kcs_context *context, const kcs_op_args *args, const char *variant,
                          kcs_device_buffer *const inputs[], kcs_device_buffer *const outputs[],
                          double *kernel_seconds, kcs_error *err)
{
    double seconds = 0.0;
    kcs_status status = run(context, args, variant, inputs, outputs, &seconds, err);
    if (kernel_seconds)
        *kernel_seconds = seconds;
    return status;
}

kcs_status kcs_finish(kcs_context *context, kcs_error *err)
{
    if (!context->backend->synchronize)
        return KCS_OK;
    kcs_status status = context->backend->synchronize(context->device, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_finish on %s", context->info.name);
    return status;
}
