/* take_away.c: writing failing cases as .npy files and the command that
 * replays them (see take_away.h). */
#include "take_away.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "npy.h"

kcs_status kcs_make_directories(const char *path, kcs_error *err)
{
    char partial[4096];
    snprintf(partial, sizeof partial, "%s", path);
    for (char *slash = partial + 1;; slash++) {
        char saved = *slash;
        if (saved != '/' && saved != '\0')
            continue;
        *slash = '\0';
        if (mkdir(partial, 0777) != 0 && errno != EEXIST)
            return kcs_fail(err, KCS_ERROR, "%s: cannot create folder: %s", partial, strerror(errno));
        *slash = saved;
        if (saved == '\0')
            return KCS_OK;
    }
}

static kcs_status write_array(const char *dir, const char *prefix, const kcs_array_spec *spec,
                              kcs_dtype dtype, const void *data, kcs_error *err)
{
    char path[4600];
    snprintf(path, sizeof path, "%s/%s%s.npy", dir, prefix, spec->name);
    return kcs_npy_write(path, dtype, spec->ndim, spec->shape, data, err);
}

kcs_status kcs_save_case(const char *root, const kcs_prepared_case *p, char *case_dir,
                         size_t case_dir_size, kcs_error *err)
{
    snprintf(case_dir, case_dir_size, "%s/%s", root, p->c->name);
    if (kcs_make_directories(case_dir, err) != KCS_OK)
        return KCS_ERROR;
    for (int i = 0; i < p->layout.input_count; i++)
        if (write_array(case_dir, "", &p->layout.inputs[i], p->layout.inputs[i].dtype, p->inputs[i], err) !=
            KCS_OK)
            return KCS_ERROR;
    for (int o = 0; o < p->layout.output_count; o++) {
        const kcs_expected *e = &p->expected[o];
        if (e->indices || e->count != kcs_array_element_count(&p->layout.outputs[o]))
            continue; /* a sample is no array; `kcs apply` then writes outputs without checking */
        if (write_array(case_dir, "expected.", &p->layout.outputs[o], KCS_F64, e->values, err) != KCS_OK ||
            write_array(case_dir, "bound.", &p->layout.outputs[o], KCS_F64, e->bounds, err) != KCS_OK)
            return KCS_ERROR;
    }
    return KCS_OK;
}

kcs_status kcs_save_actual(const char *case_dir, const char *label, const kcs_layout *layout,
                           void *const actual[], char *run_dir, size_t run_dir_size, kcs_error *err)
{
    snprintf(run_dir, run_dir_size, "%s/%s", case_dir, label);
    if (kcs_make_directories(run_dir, err) != KCS_OK)
        return KCS_ERROR;
    for (int o = 0; o < layout->output_count; o++)
        if (actual[o] && write_array(run_dir, "", &layout->outputs[o], layout->outputs[o].dtype, actual[o],
                                     err) != KCS_OK)
            return KCS_ERROR;
    return KCS_OK;
}

/* Appends formatted text to a command line being built. */
static void append(char *command, size_t size, const char *format, const char *a, const char *b)
{
    size_t length = strlen(command);
    snprintf(command + length, size - length, format, a, b);
}

void kcs_replay_command(const char *program, const kcs_prepared_case *p, const char *case_dir,
                        const char *backend, int device, const char *kernel, const char *output_dir,
                        char *command, size_t size)
{
    const kcs_case *c = p->c;
    snprintf(command, size, "%s apply %s --dtype %s", program, c->op, kcs_dtype_name(c->dtype));
    for (int s = 0; s < c->size_count; s++) {
        char value[32];
        snprintf(value, sizeof value, "%.0f", c->sizes[s].value);
        append(command, size, " --size %s=%s", c->sizes[s].name, value);
    }
    for (int q = 0; q < c->param_count; q++)
        append(command, size, " --param %s=%s", c->params[q].name, c->params[q].text);
    char device_text[16];
    snprintf(device_text, sizeof device_text, "%d", device);
    append(command, size, " --backend %s --device %s", backend, device_text);
    append(command, size, " --kernel %s%s", kernel, "");
    for (int i = 0; i < p->layout.input_count; i++) {
        char file[4200];
        snprintf(file, sizeof file, "%s/%s.npy", case_dir, p->layout.inputs[i].name);
        append(command, size, " --input %s=%s", p->layout.inputs[i].name, file);
    }
    for (int o = 0; o < p->layout.output_count; o++) {
        if (p->expected[o].indices || p->expected[o].count != kcs_array_element_count(&p->layout.outputs[o]))
            continue;
        char file[4200];
        snprintf(file, sizeof file, "%s/expected.%s.npy", case_dir, p->layout.outputs[o].name);
        append(command, size, " --expected %s=%s", p->layout.outputs[o].name, file);
    }
    append(command, size, " --output-dir %s%s", output_dir, "");
}
