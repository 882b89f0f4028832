/* probe.c: kcs_probe_open over a context (lib/kcs_probe.h). The probe itself
 * is harness/probe.c, over the context's backend and device, which `kcs probe`
 * uses too: this is only its opening on a library context. Part of libkcs_ref. */
#include "context.h"
#include "kcs_probe.h"
#include "probe.h"

kcs_status kcs_probe_open(kcs_context *context, const kcs_probe_options *options, kcs_probe **probe, kcs_error *err)
{
    *probe = NULL;
    if (!context)
        return kcs_fail(err, KCS_ERROR, "kcs_probe_open: the context is NULL");
    return kcs_probe_open_device(context->backend, context->device, &context->info, options, probe, err);
}
