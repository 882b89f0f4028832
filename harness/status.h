/* status.h: how kcs functions report failure.
 *
 * Functions that can fail return a kcs_status and fill a kcs_error with a
 * message that names the file, case and cause. Only main() decides to exit;
 * the runner records the message against the case and goes on.
 */
#ifndef KCS_STATUS_H
#define KCS_STATUS_H

#include <stddef.h>

#include "kcs_export.h"

KCS_API_BEGIN /* public: installed with the libraries (docs/library.md) */

/* Outcome of a call. */
typedef enum {
    KCS_OK = 0,          /* it worked */
    KCS_ERROR = 1,       /* it failed; the kcs_error says why */
    KCS_UNSUPPORTED = 2, /* this device or build cannot do it; a skip, not a failure */
} kcs_status;

/* A human-readable explanation of the last failure. */
typedef struct {
    char message[1024];
} kcs_error;

/* Formats a message into err (if err is not NULL) and returns status. */
kcs_status kcs_fail(kcs_error *err, kcs_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Puts "prefix: " in front of the message already in err. */
void kcs_error_prefix(kcs_error *err, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

KCS_API_END

#endif
