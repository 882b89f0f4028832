/* status.c: formatting of error messages (see status.h). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

kcs_status kcs_fail(kcs_error *err, kcs_status status, const char *format, ...)
{
    if (err) {
        va_list args;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
    }
    return status;
}

void kcs_error_prefix(kcs_error *err, const char *format, ...)
{
    if (!err)
        return;
    char prefix[512];
    va_list args;
    va_start(args, format);
    vsnprintf(prefix, sizeof prefix, format, args);
    va_end(args);
    char joined[sizeof err->message];
    snprintf(joined, sizeof joined, "%s: %s", prefix, err->message);
    memcpy(err->message, joined, sizeof joined);
}
