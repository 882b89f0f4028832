/* manifest.h: the SHA-256 manifest of the golden files.
 *
 * golden/MANIFEST records the hash of every golden file so that a check run
 * notices a file that changed (a bad merge, a stray edit, a regenerated file
 * nobody meant to commit) instead of silently comparing against it. It is in
 * sha256sum format, so `cd golden && sha256sum -c MANIFEST` verifies it with
 * no kcs code at all: one line per file, "<64 lowercase hex>  <path relative
 * to golden/>", sorted by path (bytewise, as LC_ALL=C sort), with '#' lines
 * as comments. Hashing uses nettle so no hand-written SHA-256 needs trusting.
 */
#ifndef KCS_MANIFEST_H
#define KCS_MANIFEST_H

#include <stddef.h>

#include "status.h"

/* SHA-256 of a file as 64 lowercase hex digits plus NUL. */
kcs_status kcs_sha256_file(const char *path, char hex[65], kcs_error *err);

/* SHA-256 of memory as 64 lowercase hex digits plus NUL. */
void kcs_sha256_bytes(const void *data, size_t length, char hex[65]);

/* One golden file and its hash. */
typedef struct {
    char *path;    /* relative to the golden directory; malloc'd */
    char hex[65];  /* SHA-256, 64 lowercase hex digits plus NUL */
} kcs_manifest_entry;

/* A whole manifest; start from a zeroed struct and change it only through kcs_manifest_set. */
typedef struct {
    kcs_manifest_entry *entries; /* sorted by path, malloc'd */
    size_t count;                /* number of entries */
    char *source;                /* the manifest file path it was read from (malloc'd), or NULL */
} kcs_manifest;

/* Parses a manifest; errors name the file and line. A missing file is an error saying to run `ninja golden`. */
kcs_status kcs_manifest_read(const char *manifest_path, kcs_manifest *manifest, kcs_error *err);

/* Entry for a relative path, or NULL. */
const kcs_manifest_entry *kcs_manifest_find(const kcs_manifest *manifest, const char *relative_path);

/* Checks golden_dir/relative_path against the manifest: not listed, missing file, or hash mismatch. */
kcs_status kcs_manifest_verify_file(const kcs_manifest *manifest, const char *golden_dir,
                                    const char *relative_path, kcs_error *err);

/* Sets (adds or replaces) an entry; the path must be relative, without '..', '.' or empty components. */
kcs_status kcs_manifest_set(kcs_manifest *manifest, const char *relative_path, const char hex[65], kcs_error *err);

/* Writes the manifest sorted by path, atomically (a temporary file renamed over manifest_path). */
kcs_status kcs_manifest_write(const kcs_manifest *manifest, const char *manifest_path, kcs_error *err);

/* Frees everything the manifest owns and zeroes it. */
void kcs_manifest_free(kcs_manifest *manifest);

#endif
