/* context.h: what a kcs_context and a kcs_device_buffer are (not a public header).
 *
 * A context is one device opened through a backend of harness/backend.h, the
 * very struct the runner drives; the generic calls of kcs_device.h (device.c,
 * in libkcs_ref) reach the device only through that backend's functions. The
 * opening is inline here because each library opens its own backend (its
 * kcs_open_<backend> in lib/<backend>_device.c) while only public symbols
 * cross between the libraries.
 */
#ifndef KCS_LIB_CONTEXT_H
#define KCS_LIB_CONTEXT_H

#include <stdlib.h>

#include "backend.h"
#include "kcs_device.h"

/* A buffer: the backend's, and the size asked for (checked against each op's shapes). */
struct kcs_device_buffer {
    kcs_buffer *buffer;              /* the backend's device memory */
    size_t bytes;                    /* the size it was allocated with */
    struct kcs_device_buffer *next;  /* the context's next live buffer, freed by kcs_close */
};

struct kcs_context {
    const kcs_backend *backend; /* the backend whose device this is */
    kcs_device *device;         /* the opened device */
    kcs_device_info info;       /* its description, from open() */
    kcs_device_buffer *buffers; /* live buffers, released by kcs_close */
};

/* Opens device index of backend into a new context; errors say which backend and device. */
static inline kcs_status kcs_context_open(const kcs_backend *backend, int index, kcs_context **context,
                                          kcs_error *err)
{
    *context = calloc(1, sizeof **context);
    if (!*context)
        return kcs_fail(err, KCS_ERROR, "kcs_open_%s: out of memory", backend->name);
    (*context)->backend = backend;
    kcs_status status = backend->open(index, &(*context)->device, &(*context)->info, err);
    if (status != KCS_OK) {
        kcs_error_prefix(err, "kcs_open_%s: device %d", backend->name, index);
        free(*context);
        *context = NULL;
    }
    return status;
}

#endif
