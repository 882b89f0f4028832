/* manifest.c: the SHA-256 manifest of the golden files (see manifest.h).
 *
 * The reader is strict about the line format, because a line that
 * `sha256sum -c` would read differently from kcs (uppercase hex, one space,
 * an escaped name) would let the two checks disagree about the same file.
 * Paths are kept in one spelling (no '.', '..', empty components or leading
 * '/') so that a file cannot be listed twice under two names, and cannot
 * point outside the golden directory.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "manifest.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/sha2.h>

enum { HASH_HEX_LENGTH = 64 };

static void digest_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 0xf];
    }
    hex[HASH_HEX_LENGTH] = '\0';
}

void kcs_sha256_bytes(const void *data, size_t length, char hex[65])
{
    struct sha256_ctx context;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_init(&context);
    if (length > 0)
        sha256_update(&context, length, data);
    sha256_digest(&context, SHA256_DIGEST_SIZE, digest);
    digest_to_hex(digest, hex);
}

/* Hashes a file; on failure returns the errno so callers can tell a missing
 * file (a golden file nobody generated) from an unreadable one. */
static int hash_file(const char *path, char hex[65])
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return errno;
    struct sha256_ctx context;
    sha256_init(&context);
    unsigned char buffer[65536];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, file)) > 0)
        sha256_update(&context, got, buffer);
    int error_number = ferror(file) ? (errno ? errno : EIO) : 0;
    fclose(file);
    if (error_number != 0)
        return error_number;
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_digest(&context, SHA256_DIGEST_SIZE, digest);
    digest_to_hex(digest, hex);
    return 0;
}

kcs_status kcs_sha256_file(const char *path, char hex[65], kcs_error *err)
{
    int error_number = hash_file(path, hex);
    if (error_number != 0) {
        hex[0] = '\0';
        return kcs_fail(err, KCS_ERROR, "%s: cannot read to hash: %s", path, strerror(error_number));
    }
    return KCS_OK;
}

/* Why a path cannot be in the manifest, or NULL if it can. */
static const char *path_problem(const char *path)
{
    if (path[0] == '\0')
        return "empty path";
    if (path[0] == '/')
        return "absolute path (paths are relative to the golden directory)";
    if (strchr(path, '\n') || strchr(path, '\r') || strchr(path, '\\'))
        return "newline, carriage return or backslash in path (sha256sum would escape it)";
    const char *component = path;
    for (;;) {
        const char *slash = strchr(component, '/');
        size_t length = slash ? (size_t)(slash - component) : strlen(component);
        if (length == 2 && component[0] == '.' && component[1] == '.')
            return "'..' in path (paths must stay inside the golden directory)";
        if (length == 0 || (length == 1 && component[0] == '.'))
            return "'.' or empty component in path (each file must have one spelling)";
        if (!slash)
            return NULL;
        component = slash + 1;
    }
}

static int is_hash_hex(const char *hex)
{
    for (size_t i = 0; i < HASH_HEX_LENGTH; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f')))
            return 0;
    return hex[HASH_HEX_LENGTH] == '\0';
}

/* Entries stay in an array whose capacity is the next power of two of count,
 * so the capacity need not be stored and adding n entries copies O(n). */
static int reserve_one_more(kcs_manifest *manifest)
{
    size_t count = manifest->count;
    if (count != 0 && (count & (count - 1)) != 0)
        return 1;
    size_t capacity = count == 0 ? 1 : count * 2;
    if (capacity > SIZE_MAX / sizeof *manifest->entries)
        return 0;
    kcs_manifest_entry *larger = realloc(manifest->entries, capacity * sizeof *larger);
    if (larger == NULL)
        return 0;
    manifest->entries = larger;
    return 1;
}

/* Index of the first entry whose path is not less than path. */
static size_t lower_bound(const kcs_manifest *manifest, const char *path)
{
    size_t low = 0, high = manifest->count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (strcmp(manifest->entries[middle].path, path) < 0)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

const kcs_manifest_entry *kcs_manifest_find(const kcs_manifest *manifest, const char *relative_path)
{
    size_t index = lower_bound(manifest, relative_path);
    if (index < manifest->count && strcmp(manifest->entries[index].path, relative_path) == 0)
        return &manifest->entries[index];
    return NULL;
}

kcs_status kcs_manifest_set(kcs_manifest *manifest, const char *relative_path, const char hex[65], kcs_error *err)
{
    const char *name = manifest->source ? manifest->source : "manifest";
    const char *problem = path_problem(relative_path);
    if (problem)
        return kcs_fail(err, KCS_ERROR, "%s: cannot add '%s': %s", name, relative_path, problem);
    if (!is_hash_hex(hex))
        return kcs_fail(err, KCS_ERROR, "%s: cannot add '%s': the hash is not 64 lowercase hex digits", name,
                        relative_path);
    size_t index = lower_bound(manifest, relative_path);
    if (index < manifest->count && strcmp(manifest->entries[index].path, relative_path) == 0) {
        memcpy(manifest->entries[index].hex, hex, sizeof manifest->entries[index].hex);
        return KCS_OK;
    }
    char *path = strdup(relative_path);
    if (path == NULL || !reserve_one_more(manifest)) {
        free(path);
        return kcs_fail(err, KCS_ERROR, "%s: out of memory adding '%s'", name, relative_path);
    }
    memmove(&manifest->entries[index + 1], &manifest->entries[index],
            (manifest->count - index) * sizeof *manifest->entries);
    manifest->entries[index].path = path;
    memcpy(manifest->entries[index].hex, hex, sizeof manifest->entries[index].hex);
    manifest->count++;
    return KCS_OK;
}

void kcs_manifest_free(kcs_manifest *manifest)
{
    if (manifest == NULL)
        return;
    for (size_t i = 0; i < manifest->count; i++)
        free(manifest->entries[i].path);
    free(manifest->entries);
    free(manifest->source);
    memset(manifest, 0, sizeof *manifest);
}

/* Reads all of a file; errno is left for the caller on failure. */
static int read_whole_file(const char *path, char **contents, size_t *length)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return errno;
    size_t capacity = 4096, used = 0;
    char *buffer = malloc(capacity);
    while (buffer != NULL) {
        used += fread(buffer + used, 1, capacity - used, file);
        if (used < capacity)
            break;
        char *larger = capacity <= SIZE_MAX / 2 ? realloc(buffer, capacity * 2) : NULL;
        if (larger == NULL) {
            free(buffer);
            buffer = NULL;
            break;
        }
        buffer = larger;
        capacity *= 2;
    }
    int error_number = buffer == NULL ? ENOMEM : ferror(file) ? (errno ? errno : EIO) : 0;
    fclose(file);
    if (error_number != 0) {
        free(buffer);
        return error_number;
    }
    *contents = buffer;
    *length = used;
    return 0;
}

/* An entry while reading, with the line it came from for duplicate messages. */
typedef struct {
    kcs_manifest_entry entry;
    size_t line;
} numbered_entry;

static int compare_numbered(const void *left, const void *right)
{
    const numbered_entry *a = left, *b = right;
    int order = strcmp(a->entry.path, b->entry.path);
    if (order != 0)
        return order;
    return (a->line > b->line) - (a->line < b->line);
}

/* Checks one line (without its '\n') and fills entry; path is malloc'd. */
static kcs_status parse_line(const char *source, size_t line_number, const char *line, size_t length,
                             kcs_manifest_entry *entry, kcs_error *err)
{
    if (memchr(line, '\0', length))
        return kcs_fail(err, KCS_ERROR, "%s:%zu: line contains a NUL byte", source, line_number);
    if (line[length - 1] == '\r')
        return kcs_fail(err, KCS_ERROR,
                        "%s:%zu: line ends with a carriage return (the manifest uses \\n line endings)", source,
                        line_number);
    if (line[0] == '\\')
        return kcs_fail(err, KCS_ERROR, "%s:%zu: escaped file names (a leading backslash) are not supported", source,
                        line_number);
    size_t hex_digits = 0;
    while (hex_digits < length && ((line[hex_digits] >= '0' && line[hex_digits] <= '9') ||
                                   (line[hex_digits] >= 'a' && line[hex_digits] <= 'f')))
        hex_digits++;
    int hex_continues = hex_digits < length && ((line[hex_digits] >= 'A' && line[hex_digits] <= 'F') ||
                                                (line[hex_digits] >= 'g' && line[hex_digits] <= 'z'));
    if (hex_digits != HASH_HEX_LENGTH || hex_continues)
        return kcs_fail(err, KCS_ERROR,
                        "%s:%zu: malformed hash: expected 64 lowercase hex digits at the start of the line", source,
                        line_number);
    if (length < HASH_HEX_LENGTH + 2 || line[HASH_HEX_LENGTH] != ' ' || line[HASH_HEX_LENGTH + 1] != ' ')
        return kcs_fail(err, KCS_ERROR, "%s:%zu: missing two spaces between the hash and the path", source,
                        line_number);
    size_t path_length = length - HASH_HEX_LENGTH - 2;
    char *path = malloc(path_length + 1);
    if (path == NULL)
        return kcs_fail(err, KCS_ERROR, "%s:%zu: out of memory", source, line_number);
    memcpy(path, line + HASH_HEX_LENGTH + 2, path_length);
    path[path_length] = '\0';
    const char *problem = path_problem(path);
    if (problem) {
        kcs_status status = kcs_fail(err, KCS_ERROR, "%s:%zu: %s: '%s'", source, line_number, problem, path);
        free(path);
        return status;
    }
    entry->path = path;
    memcpy(entry->hex, line, HASH_HEX_LENGTH);
    entry->hex[HASH_HEX_LENGTH] = '\0';
    return KCS_OK;
}

static void free_numbered(numbered_entry *parsed, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(parsed[i].entry.path);
    free(parsed);
}

kcs_status kcs_manifest_read(const char *manifest_path, kcs_manifest *manifest, kcs_error *err)
{
    memset(manifest, 0, sizeof *manifest);
    char *contents = NULL;
    size_t length = 0;
    int error_number = read_whole_file(manifest_path, &contents, &length);
    if (error_number == ENOENT)
        return kcs_fail(err, KCS_ERROR, "%s: not found: run `ninja golden` to generate the golden files and write it",
                        manifest_path);
    if (error_number != 0)
        return kcs_fail(err, KCS_ERROR, "%s: cannot read: %s", manifest_path, strerror(error_number));

    numbered_entry *parsed = NULL;
    size_t count = 0, capacity = 0, line_number = 0;
    kcs_status status = KCS_OK;
    for (size_t start = 0; start < length && status == KCS_OK;) {
        const char *newline = memchr(contents + start, '\n', length - start);
        size_t line_length = newline ? (size_t)(newline - (contents + start)) : length - start;
        const char *line = contents + start;
        start += line_length + 1;
        line_number++;
        if (line_length == 0 || line[0] == '#')
            continue;
        if (count == capacity) {
            size_t grown = capacity ? capacity * 2 : 64;
            numbered_entry *larger =
                grown <= SIZE_MAX / sizeof *parsed ? realloc(parsed, grown * sizeof *parsed) : NULL;
            if (larger == NULL) {
                status = kcs_fail(err, KCS_ERROR, "%s: out of memory", manifest_path);
                break;
            }
            parsed = larger;
            capacity = grown;
        }
        status = parse_line(manifest_path, line_number, line, line_length, &parsed[count].entry, err);
        if (status == KCS_OK)
            parsed[count++].line = line_number;
    }
    free(contents);
    if (status != KCS_OK) {
        free_numbered(parsed, count);
        return status;
    }

    /* Sorting puts duplicates next to each other, earlier line first. */
    if (count > 1)
        qsort(parsed, count, sizeof *parsed, compare_numbered);
    for (size_t i = 1; i < count; i++) {
        if (strcmp(parsed[i - 1].entry.path, parsed[i].entry.path) == 0) {
            status = kcs_fail(err, KCS_ERROR, "%s:%zu: duplicate path '%s' (first listed on line %zu)", manifest_path,
                              parsed[i].line, parsed[i].entry.path, parsed[i - 1].line);
            free_numbered(parsed, count);
            return status;
        }
    }

    manifest->source = strdup(manifest_path);
    size_t entry_capacity = 1;
    while (entry_capacity < count)
        entry_capacity *= 2;
    manifest->entries = count ? malloc(entry_capacity * sizeof *manifest->entries) : NULL;
    if (manifest->source == NULL || (count && manifest->entries == NULL)) {
        free(manifest->source);
        free(manifest->entries);
        memset(manifest, 0, sizeof *manifest);
        free_numbered(parsed, count);
        return kcs_fail(err, KCS_ERROR, "%s: out of memory", manifest_path);
    }
    for (size_t i = 0; i < count; i++)
        manifest->entries[i] = parsed[i].entry;
    manifest->count = count;
    free(parsed); /* the paths now belong to the manifest */
    return KCS_OK;
}

kcs_status kcs_manifest_verify_file(const kcs_manifest *manifest, const char *golden_dir, const char *relative_path,
                                    kcs_error *err)
{
    const char *source = manifest->source ? manifest->source : "MANIFEST";
    char *full_path = NULL;
    if (golden_dir && golden_dir[0]) {
        size_t size = strlen(golden_dir) + 1 + strlen(relative_path) + 1;
        full_path = malloc(size);
        if (full_path == NULL)
            return kcs_fail(err, KCS_ERROR, "%s: out of memory", relative_path);
        snprintf(full_path, size, "%s/%s", golden_dir, relative_path);
    }
    const char *path = full_path ? full_path : relative_path;
    kcs_status status = KCS_OK;
    const kcs_manifest_entry *entry = kcs_manifest_find(manifest, relative_path);
    char hex[65];
    int error_number;
    if (entry == NULL) {
        status = kcs_fail(err, KCS_ERROR,
                          "%s: not listed in %s: run `ninja golden` to regenerate the golden files and the manifest",
                          path, source);
    } else if ((error_number = hash_file(path, hex)) != 0) {
        if (error_number == ENOENT)
            status = kcs_fail(err, KCS_ERROR, "%s: missing, but %s lists it with sha256 %s: run `ninja golden`", path,
                              source, entry->hex);
        else
            status = kcs_fail(err, KCS_ERROR, "%s: cannot read to hash: %s", path, strerror(error_number));
    } else if (strcmp(hex, entry->hex) != 0) {
        status = kcs_fail(err, KCS_ERROR,
                          "%s has sha256 %s but %s says %s: the file changed since `ninja golden` wrote it", path, hex,
                          source, entry->hex);
    }
    free(full_path);
    return status;
}

static int compare_entry_pointers(const void *left, const void *right)
{
    const kcs_manifest_entry *const *a = left, *const *b = right;
    return strcmp((*a)->path, (*b)->path);
}

kcs_status kcs_manifest_write(const kcs_manifest *manifest, const char *manifest_path, kcs_error *err)
{
    /* Sort (and check) a copy of the order rather than trusting the caller's
     * array, since a bad path here would corrupt every later read. */
    const kcs_manifest_entry **sorted = malloc((manifest->count ? manifest->count : 1) * sizeof *sorted);
    if (sorted == NULL)
        return kcs_fail(err, KCS_ERROR, "%s: out of memory", manifest_path);
    for (size_t i = 0; i < manifest->count; i++) {
        const kcs_manifest_entry *entry = &manifest->entries[i];
        const char *problem = entry->path ? path_problem(entry->path) : "no path";
        if (problem || !is_hash_hex(entry->hex)) {
            kcs_status status = kcs_fail(err, KCS_ERROR, "%s: not written: entry '%s': %s", manifest_path,
                                         entry->path ? entry->path : "(null)",
                                         problem ? problem : "the hash is not 64 lowercase hex digits");
            free(sorted);
            return status;
        }
        sorted[i] = entry;
    }
    if (manifest->count > 1)
        qsort(sorted, manifest->count, sizeof *sorted, compare_entry_pointers);
    for (size_t i = 1; i < manifest->count; i++) {
        if (strcmp(sorted[i - 1]->path, sorted[i]->path) == 0) {
            kcs_status status = kcs_fail(err, KCS_ERROR, "%s: not written: duplicate path '%s'", manifest_path,
                                         sorted[i]->path);
            free(sorted);
            return status;
        }
    }

    /* The temporary file sits next to the target so rename() stays within one
     * file system and is atomic; the pid keeps two writers apart. */
    size_t temp_size = strlen(manifest_path) + 32;
    char *temp_path = malloc(temp_size);
    if (temp_path == NULL) {
        free(sorted);
        return kcs_fail(err, KCS_ERROR, "%s: out of memory", manifest_path);
    }
    snprintf(temp_path, temp_size, "%s.tmp.%ld", manifest_path, (long)getpid());
    FILE *file = fopen(temp_path, "w");
    if (file == NULL) {
        kcs_status status = kcs_fail(err, KCS_ERROR, "%s: cannot create: %s", temp_path, strerror(errno));
        free(temp_path);
        free(sorted);
        return status;
    }
    int ok = fputs("# SHA-256 of every golden file. Written by `ninja golden`; do not edit by hand.\n"
                   "# Checked by `ninja check` (or by hand: cd golden && sha256sum -c MANIFEST).\n",
                   file) >= 0;
    for (size_t i = 0; ok && i < manifest->count; i++)
        ok = fprintf(file, "%s  %s\n", sorted[i]->hex, sorted[i]->path) > 0;
    ok = ok && fflush(file) == 0 && fsync(fileno(file)) == 0;
    int saved_errno = errno;
    if (fclose(file) != 0 && ok) {
        ok = 0;
        saved_errno = errno;
    }
    if (ok && rename(temp_path, manifest_path) != 0) {
        ok = 0;
        saved_errno = errno;
    }
    kcs_status status = KCS_OK;
    if (!ok) {
        remove(temp_path);
        status = kcs_fail(err, KCS_ERROR, "%s: write error: %s", manifest_path, strerror(saved_errno));
    }
    free(temp_path);
    free(sorted);
    return status;
}
