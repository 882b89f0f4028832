/* kcs_export.h: which functions the kcs libraries export (docs/library.md, "Exports").
 *
 * Every object of kcs is compiled with -fvisibility=hidden, so the shared
 * libraries export nothing by default: the runner's internals (backends,
 * kernel tables, descriptors) stay private and can change freely. A function
 * a public header declares is marked KCS_API, or declared between
 * KCS_API_BEGIN and KCS_API_END (for headers that declare many, such as the
 * reference's X-macro lists), and only those are the ABI.
 */
#ifndef KCS_EXPORT_H
#define KCS_EXPORT_H

/* Marks one declaration as exported from the shared library. */
#define KCS_API __attribute__((visibility("default")))

/* Exports every declaration up to KCS_API_END. */
#define KCS_API_BEGIN _Pragma("GCC visibility push(default)")

/* Ends a KCS_API_BEGIN region. */
#define KCS_API_END _Pragma("GCC visibility pop")

#endif
