/* golden.c: reading and writing golden files (see golden.h). */
#include "golden.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "manifest.h"
#include "npy.h"
#include "take_away.h"

struct kcs_golden {
    char directory[2048];
    char manifest_path[2100];
    kcs_manifest manifest;
};

/* A golden handle for directory with an empty manifest, or NULL. */
static kcs_golden *golden_create(const char *directory)
{
    kcs_golden *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    snprintf(g->directory, sizeof g->directory, "%s", directory);
    snprintf(g->manifest_path, sizeof g->manifest_path, "%s/MANIFEST", directory);
    return g;
}

/* Opens directory, reading its manifest unless it is optional and absent. */
static kcs_status golden_open(const char *directory, int manifest_optional, kcs_golden **golden,
                              kcs_error *err)
{
    kcs_golden *g = golden_create(directory);
    if (!g)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    struct stat info;
    int absent = stat(g->manifest_path, &info) != 0;
    if (!(manifest_optional && absent) && kcs_manifest_read(g->manifest_path, &g->manifest, err) != KCS_OK) {
        kcs_golden_close(g);
        return KCS_ERROR;
    }
    *golden = g;
    return KCS_OK;
}

kcs_status kcs_golden_open(const char *directory, kcs_golden **golden, kcs_error *err)
{
    return golden_open(directory, 0, golden, err);
}

kcs_status kcs_golden_open_to_write(const char *directory, kcs_golden **golden, kcs_error *err)
{
    return golden_open(directory, 1, golden, err);
}

void kcs_golden_close(kcs_golden *golden)
{
    if (!golden)
        return;
    kcs_manifest_free(&golden->manifest);
    free(golden);
}

void kcs_golden_relative_path(const kcs_case *c, const kcs_array_spec *output, char *path, size_t size)
{
    snprintf(path, size, "%s.%s.npy", c->name, output->name);
}

kcs_status kcs_golden_read(const kcs_golden *golden, const kcs_case *c, const kcs_array_spec *output,
                           kcs_expected *expected, kcs_error *err)
{
    char relative[512], path[2600];
    kcs_golden_relative_path(c, output, relative, sizeof relative);
    snprintf(path, sizeof path, "%s/%s", golden->directory, relative);
    if (kcs_manifest_verify_file(&golden->manifest, golden->directory, relative, err) != KCS_OK)
        return KCS_ERROR;
    kcs_npy_array array;
    if (kcs_npy_read(path, &array, err) != KCS_OK)
        return KCS_ERROR;
    int same_shape = array.ndim == output->ndim &&
                     memcmp(array.shape, output->shape, (size_t)output->ndim * sizeof *array.shape) == 0;
    if (array.dtype != KCS_F64 || !same_shape) {
        kcs_npy_free(&array);
        return kcs_fail(err, KCS_ERROR,
                        "%s: golden files hold f64 values in the output's shape; this one does not "
                        "match output %s (run `ninja golden`)",
                        path, output->name);
    }
    memcpy(expected->values, array.data, expected->count * sizeof(double));
    kcs_npy_free(&array);
    return KCS_OK;
}

kcs_status kcs_golden_write(kcs_golden *golden, const kcs_case *c, const kcs_array_spec *output,
                            const double *values, char *path, size_t path_size, kcs_error *err)
{
    char relative[512], folder[2600], hex[65];
    kcs_golden_relative_path(c, output, relative, sizeof relative);
    snprintf(path, path_size, "%s/%s", golden->directory, relative);
    snprintf(folder, sizeof folder, "%s", path);
    *strrchr(folder, '/') = '\0';
    if (kcs_make_directories(folder, err) != KCS_OK ||
        kcs_npy_write(path, KCS_F64, output->ndim, output->shape, values, err) != KCS_OK ||
        kcs_sha256_file(path, hex, err) != KCS_OK)
        return KCS_ERROR;
    return kcs_manifest_set(&golden->manifest, relative, hex, err);
}

kcs_status kcs_golden_write_manifest(const kcs_golden *golden, kcs_error *err)
{
    return kcs_manifest_write(&golden->manifest, golden->manifest_path, err);
}
