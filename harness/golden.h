/* golden.h: golden data, the expected outputs that `kcs golden` writes and
 * a check run reads (docs/golden.md).
 *
 * One file per output of a case whose block says `expect: golden`:
 * <golden directory>/<case name>.<output>.npy, f64 values in the output's
 * shape, each listed with its SHA-256 in <golden directory>/MANIFEST
 * (manifest.h). A file is verified against the manifest before it is read,
 * so a changed, truncated or unlisted file is an error naming it; writing
 * records the new hash in the manifest in memory, which is written once at
 * the end.
 */
#ifndef KCS_GOLDEN_H
#define KCS_GOLDEN_H

#include <stddef.h>

#include "case_file.h"
#include "op.h"
#include "status.h"

/* A golden directory and its manifest. */
typedef struct kcs_golden kcs_golden;

/* Opens a golden directory to read from: its MANIFEST must be there; an
 * unreadable or malformed manifest is an error naming it. */
kcs_status kcs_golden_open(const char *directory, kcs_golden **golden, kcs_error *err);

/* Opens a golden directory to write into: reads its MANIFEST where there is
 * one (a malformed one is an error), else starts from an empty manifest. */
kcs_status kcs_golden_open_to_write(const char *directory, kcs_golden **golden, kcs_error *err);

/* Frees what kcs_golden_open or kcs_golden_open_to_write made; writes nothing. */
void kcs_golden_close(kcs_golden *golden);

/* Path of an output's golden file relative to the golden directory:
 * "<case name>.<output name>.npy". */
void kcs_golden_relative_path(const kcs_case *c, const kcs_array_spec *output, char *path, size_t size);

/* Reads expected->count values (every element, in order) of one output from
 * its golden file, once the manifest vouches for the file; errors name the
 * file and the cause. */
kcs_status kcs_golden_read(const kcs_golden *golden, const kcs_case *c, const kcs_array_spec *output,
                           kcs_expected *expected, kcs_error *err);

/* Writes values (every element of the output, in order) as the output's
 * golden file, f64 in its shape, creating folders as needed; records the
 * file's hash in the manifest in memory and puts the file's path in path. */
kcs_status kcs_golden_write(kcs_golden *golden, const kcs_case *c, const kcs_array_spec *output,
                            const double *values, char *path, size_t path_size, kcs_error *err);

/* Writes the manifest in memory to <directory>/MANIFEST. */
kcs_status kcs_golden_write_manifest(const kcs_golden *golden, kcs_error *err);

#endif
