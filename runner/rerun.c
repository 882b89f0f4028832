/* rerun.c: where a disagreeing device's outputs differ from its peer's
 * (docs/runner.md, "Identical devices must agree").
 *
 * A run keeps only the hashes of its outputs (agreement.c), so a
 * disagreement names a device, a case, a kernel and an output, but not the
 * element. Once the run is over, for each disagreeing group of identical
 * devices, the runner reruns that case and kernel on the peer (the majority
 * device) and on each deviant device, with the outputs kept in a temporary
 * folder inside the folder of the results file, compares them element by
 * element, and removes the folder. Each entry of the verdict's "differing"
 * then says:
 *
 *   rerun             "reproduced": the deviant's rerun gave the bits it gave
 *                     in the run; "intermittent": other bits (the deviation
 *                     did not reproduce, and is still a disagreement); "not
 *                     run": no rerun, for rerun_reason
 *   first_difference  the first element (in memory order) where the reruns
 *                     of the device and its peer differ: output, flat index,
 *                     coordinates (arrays of two or more dimensions), dtype,
 *                     both values as text in the output's dtype (enough
 *                     digits to tell any two apart) and their bit patterns
 *
 * Bounded: at most KCS_MAX_RERUNS kernel runs per run (a card that fails
 * every case would otherwise run the suite twice; the groups past the limit
 * say so), and one group's outputs on disk at a time. Each rerun runs in a
 * child process under a time limit, as a worker would (a kernel that hangs
 * or crashes costs its rerun only); with --in-process, in this process.
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "manifest.h"
#include "results_json.h"
#include "runner.h"

/* Kernel runs that one run may spend on locating differences. */
#define KCS_MAX_RERUNS 8

/* What every rerun of a run shares. */
typedef struct {
    const kcs_runner_options *o;
    const kcs_case_list *cases;
    int reruns_left;
} rerun_context;

static const char *text(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value ? value : "";
}

/* "replica:2" -> its backend and index; 0 when the id names no backend of this build. */
static int parse_device(const char *id, const kcs_backend **backend, int *index)
{
    const char *colon = strrchr(id, ':');
    if (!colon)
        return 0;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++) {
        const char *name = kcs_builtin_backends[b]->name;
        if (strlen(name) == (size_t)(colon - id) && strncmp(id, name, strlen(name)) == 0) {
            *backend = kcs_builtin_backends[b];
            *index = atoi(colon + 1);
            return 1;
        }
    }
    return 0;
}

static const kcs_case *find_case(const kcs_case_list *cases, const char *name)
{
    for (size_t i = 0; i < cases->count; i++)
        if (strcmp(cases->cases[i].name, name) == 0)
            return &cases->cases[i];
    return NULL;
}

/* The file of one output of one device's rerun. */
static void output_path(const char *folder, const char *device, const char *output, char *path, size_t size)
{
    char label[64];
    snprintf(label, sizeof label, "%s", device);
    for (char *c = label; *c; c++)
        if (*c == ':')
            *c = '-';
    snprintf(path, size, "%s/%s.%s", folder, label, output);
}

/* Runs case c's kernel on device once and writes each output's bytes into
 * folder; returns 0, or 1 with the reason in err. */
static int rerun_here(const kcs_runner_options *o, const kcs_case *c, const char *kernel_name, const char *device_id,
                      const char *folder, kcs_error *err)
{
    const kcs_backend *backend;
    int index;
    if (!parse_device(device_id, &backend, &index)) {
        kcs_fail(err, KCS_ERROR, "this runner has no backend for device %s", device_id);
        return 1;
    }
    const kcs_kernel *kernel = kcs_backend_find_kernel(backend, c->op, c->dtype, kernel_name);
    if (!kernel) {
        kcs_fail(err, KCS_ERROR, "%s has no kernel %s for %s %s", backend->name, kernel_name, c->op,
                 kcs_dtype_name(c->dtype));
        return 1;
    }
    kcs_golden *golden = NULL;
    kcs_error golden_error = {{0}};
    if (kcs_golden_open(o->golden_dir, &golden, &golden_error) != KCS_OK)
        golden = NULL;
    kcs_prepared_case p;
    if (kcs_prepare_case(c, golden, &p, err) != KCS_OK) {
        kcs_prepared_case_free(&p);
        kcs_golden_close(golden);
        return 1;
    }
    kcs_device *device = NULL;
    kcs_device_info info;
    memset(&info, 0, sizeof info);
    int failed = 1;
    if (backend->open(index, &device, &info, err) == KCS_OK) {
        kcs_run_options options = {.keep_outputs = 1, .min_repeats = 1, .max_repeats = 1};
        kcs_run_result run;
        kcs_run_on_device(&p, backend, device, &info, kernel, &options, &run);
        if (!run.actual[0]) {
            kcs_fail(err, KCS_ERROR, "the rerun returned no outputs (%s: %s)", kcs_outcome_name(run.outcome),
                     run.message);
        } else {
            failed = 0;
            for (int out = 0; out < p.layout.output_count && !failed; out++) {
                char path[4400];
                output_path(folder, device_id, p.layout.outputs[out].name, path, sizeof path);
                FILE *file = fopen(path, "wb");
                size_t bytes = p.sizes.outputs[out].bytes;
                if (!file || fwrite(run.actual[out], 1, bytes, file) != bytes) {
                    kcs_fail(err, KCS_ERROR, "cannot write %s: %s", path, strerror(errno));
                    failed = 1;
                }
                if (file && fclose(file) != 0 && !failed) {
                    kcs_fail(err, KCS_ERROR, "cannot write %s: %s", path, strerror(errno));
                    failed = 1;
                }
            }
        }
        kcs_run_result_free(&run);
        backend->close(device);
    }
    kcs_prepared_case_free(&p);
    kcs_golden_close(golden);
    return failed;
}

/* Reruns in a child process under the time limit (in this one with
 * --in-process); returns 0, or 1 with the reason in reason. */
static int rerun(const rerun_context *context, const kcs_case *c, const char *kernel, const char *device,
                 const char *folder, char *reason, size_t size)
{
    const kcs_runner_options *o = context->o;
    kcs_error err = {{0}};
    if (o->in_process) {
        int failed = rerun_here(o, c, kernel, device, folder, &err);
        snprintf(reason, size, "%s", err.message);
        return failed;
    }
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) {
        snprintf(reason, size, "cannot make a pipe: %s", strerror(errno));
        return 1;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t child = fork();
    if (child == 0) {
        close(pipe_ends[0]);
        int failed = rerun_here(o, c, kernel, device, folder, &err);
        if (failed && write(pipe_ends[1], err.message, strlen(err.message)) < 0)
            failed = 2;
        fflush(stdout);
        _exit(failed);
    }
    close(pipe_ends[1]);
    if (child < 0) {
        close(pipe_ends[0]);
        snprintf(reason, size, "cannot start a process: %s", strerror(errno));
        return 1;
    }
    /* The rerun prepares the case and runs one kernel: two units' time (device unknown here: the slowest rate). */
    double limit = o->time_limit != KCS_TIME_LIMIT_DERIVED
                       ? o->time_limit
                       : kcs_unit_time_limit(o, c, 0, NULL) + kcs_unit_time_limit(o, c, 1, NULL);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int wait_status = 0, hung = 0;
    for (;;) {
        pid_t done = waitpid(child, &wait_status, WNOHANG);
        if (done == child || (done < 0 && errno != EINTR))
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double seconds = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
        if (limit > 0 && seconds > limit) {
            kill(child, SIGKILL);
            while (waitpid(child, &wait_status, 0) < 0 && errno == EINTR)
                ;
            hung = 1;
            break;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    char message[sizeof err.message] = "";
    ssize_t got = read(pipe_ends[0], message, sizeof message - 1);
    message[got > 0 ? got : 0] = '\0';
    close(pipe_ends[0]);
    if (hung)
        snprintf(reason, size, "the rerun made no progress for %.0f s (%s) and was killed", limit,
                 o->time_limit != KCS_TIME_LIMIT_DERIVED ? "--time-limit" : "its time limit, from the case's size");
    else if (WIFSIGNALED(wait_status))
        snprintf(reason, size, "the rerun died of signal %d (%s)", WTERMSIG(wait_status),
                 strsignal(WTERMSIG(wait_status)));
    else if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0)
        snprintf(reason, size, "%s", message[0] ? message : "the rerun failed");
    else
        return 0;
    return 1;
}

/* An output's bytes as a rerun wrote them (NULL, with the reason, when it cannot be read). */
static unsigned char *read_output(const char *folder, const char *device, const char *output, size_t bytes,
                                  char *reason, size_t size)
{
    char path[4400];
    output_path(folder, device, output, path, sizeof path);
    FILE *file = fopen(path, "rb");
    unsigned char *data = malloc(bytes ? bytes : 1);
    if (!file || !data || fread(data, 1, bytes, file) != bytes) {
        snprintf(reason, size, "cannot read the rerun's %s: %s", path, file ? "too short" : strerror(errno));
        free(data);
        data = NULL;
    }
    if (file)
        fclose(file);
    return data;
}

/* An element as text in its dtype: as many significant digits as tell any
 * two values of the dtype apart (17 for f64, 9 for f32, 5 for f16, 4 for bf16). */
static void element_text(const void *data, kcs_dtype dtype, size_t index, char *value, size_t size)
{
    double x = kcs_load_element(data, dtype, index);
    if (!kcs_dtype_is_float(dtype)) {
        snprintf(value, size, "%.0f", x);
        return;
    }
    int significand_bits = (int)lround(-log2(kcs_unit_roundoff(dtype)));
    int digits = (int)ceil(significand_bits * log10(2.0)) + 1;
    snprintf(value, size, "%.*g", digits, x);
}

/* An element's bit pattern, "0x3ff0000000000000" (little-endian storage). */
static void element_bits(const unsigned char *data, size_t element_size, size_t index, char *bits, size_t size)
{
    unsigned long long pattern = 0;
    for (size_t b = 0; b < element_size && b < sizeof pattern; b++)
        pattern |= (unsigned long long)data[index * element_size + b] << (8 * b);
    snprintf(bits, size, "0x%0*llx", (int)(2 * element_size), pattern);
}

/* The first element where two reruns' outputs differ, as JSON; NULL when
 * they are equal in every output (reason says so, or why they could not be read). */
static json_t *first_difference(const kcs_layout *layout, const kcs_layout_sizes *sizes, const char *folder,
                                const char *device, const char *peer, char *reason, size_t size)
{
    snprintf(reason, size, "the reruns of %s and %s computed the same bits", device, peer);
    for (int out = 0; out < layout->output_count; out++) {
        const kcs_array_spec *spec = &layout->outputs[out];
        size_t bytes = sizes->outputs[out].bytes, element_size = kcs_dtype_size(spec->dtype);
        unsigned char *mine = read_output(folder, device, spec->name, bytes, reason, size);
        unsigned char *theirs = mine ? read_output(folder, peer, spec->name, bytes, reason, size) : NULL;
        json_t *found = NULL;
        for (size_t i = 0; theirs && element_size && i < sizes->outputs[out].elements && !found; i++) {
            if (memcmp(mine + i * element_size, theirs + i * element_size, element_size) == 0)
                continue;
            char value[64], peer_value[64], bits[40], peer_bits[40];
            element_text(mine, spec->dtype, i, value, sizeof value);
            element_text(theirs, spec->dtype, i, peer_value, sizeof peer_value);
            element_bits(mine, element_size, i, bits, sizeof bits);
            element_bits(theirs, element_size, i, peer_bits, sizeof peer_bits);
            found = json_pack("{s:s, s:I, s:s, s:s, s:s, s:s, s:s}", "output", spec->name, "index", (json_int_t)i,
                              "dtype", kcs_dtype_name(spec->dtype), "value", value, "peer_value", peer_value, "bits",
                              bits, "peer_bits", peer_bits);
            if (spec->ndim >= 2) {
                size_t at[KCS_MAX_DIMS];
                kcs_element_coordinates(spec, i, at);
                json_t *coordinates = json_array();
                for (int d = 0; d < spec->ndim; d++)
                    json_array_append_new(coordinates, json_integer((json_int_t)at[d]));
                json_object_set_new(found, "coordinates", coordinates);
            }
        }
        int unreadable = !theirs;
        free(mine);
        free(theirs);
        if (found || unreadable)
            return found;
    }
    return NULL;
}

/* Whether a rerun's outputs hash as a result recorded in the run. */
static int same_bits(const kcs_layout *layout, const kcs_layout_sizes *sizes, const char *folder, const char *device,
                     json_t *hashes)
{
    for (int out = 0; out < layout->output_count; out++) {
        char reason[300], hex[65];
        unsigned char *data =
            read_output(folder, device, layout->outputs[out].name, sizes->outputs[out].bytes, reason, sizeof reason);
        if (!data)
            return 0;
        kcs_sha256_bytes(data, sizes->outputs[out].bytes, hex);
        free(data);
        if (strcmp(hex, text(hashes, layout->outputs[out].name)) != 0)
            return 0;
    }
    return 1;
}

/* The output hashes a device recorded for the verdict's case and kernel. */
static json_t *recorded_hashes(json_t *root, json_t *verdict, const char *device)
{
    size_t index;
    json_t *result;
    json_array_foreach(json_object_get(root, "results"), index, result) {
        if (strcmp(text(result, "case"), text(verdict, "case")) == 0 &&
            strcmp(text(result, "kernel"), text(verdict, "kernel")) == 0 && strcmp(text(result, "device"), device) == 0)
            return json_object_get(result, "output_hashes");
    }
    return NULL;
}

static void not_run(json_t *differing, const char *reason)
{
    size_t index;
    json_t *entry;
    json_array_foreach(differing, index, entry) {
        json_object_set_new(entry, "rerun", json_string("not run"));
        json_object_set_new(entry, "rerun_reason", json_string(reason));
    }
}

static int remove_entry(const char *path, const struct stat *status, int flag, struct FTW *walk)
{
    (void)status, (void)flag, (void)walk;
    return remove(path);
}

/* Reruns the verdict's case and kernel on every device its "differing"
 * names and on their peers, then fills each entry (see the banner). */
static void locate(void *context_pointer, json_t *root, json_t *verdict)
{
    rerun_context *context = context_pointer;
    json_t *differing = json_object_get(verdict, "differing");
    const kcs_case *c = find_case(context->cases, text(verdict, "case"));
    kcs_prepared_case shapes;
    kcs_error err = {{0}};
    if (!c || kcs_prepare_layout(c, &shapes, &err) != KCS_OK) {
        not_run(differing, c ? err.message : "the case is not in this run's case files");
        return;
    }
    /* the devices to rerun, each once: every peer and every deviant */
    const char *devices[130];
    int count = 0;
    size_t index;
    json_t *entry;
    json_array_foreach(differing, index, entry) {
        const char *pair[2] = {text(entry, "peer"), text(entry, "device")};
        for (int p = 0; p < 2; p++) {
            int known = 0;
            for (int d = 0; d < count; d++)
                known |= strcmp(devices[d], pair[p]) == 0;
            if (!known && count < 130)
                devices[count++] = pair[p];
        }
    }
    if (count > context->reruns_left) {
        char reason[200];
        snprintf(reason, sizeof reason,
                 "it needs %d kernel runs and %d of the run's %d for locating differences are left", count,
                 context->reruns_left, KCS_MAX_RERUNS);
        not_run(differing, reason);
        kcs_prepared_case_free(&shapes);
        return;
    }
    context->reruns_left -= count;
    const char *results_path = context->o->results_path;
    const char *slash = strrchr(results_path, '/');
    char folder[4096];
    snprintf(folder, sizeof folder, "%.*skcs-rerun.XXXXXX", slash ? (int)(slash - results_path + 1) : 0, results_path);
    if (!mkdtemp(folder)) {
        char reason[4300];
        snprintf(reason, sizeof reason, "cannot make a folder %s: %s", folder, strerror(errno));
        not_run(differing, reason);
        kcs_prepared_case_free(&shapes);
        return;
    }
    char failures[130][600];
    for (int d = 0; d < count; d++) {
        failures[d][0] = '\0';
        if (rerun(context, c, text(verdict, "kernel"), devices[d], folder, failures[d], sizeof failures[d]) != 0 &&
            !failures[d][0])
            snprintf(failures[d], sizeof failures[d], "the rerun failed");
    }
    json_array_foreach(differing, index, entry) {
        const char *device = text(entry, "device"), *peer = text(entry, "peer");
        const char *failure = NULL;
        for (int d = 0; d < count; d++)
            if ((strcmp(devices[d], device) == 0 || strcmp(devices[d], peer) == 0) && failures[d][0])
                failure = failures[d];
        if (failure) {
            char reason[800];
            snprintf(reason, sizeof reason, "%s", failure);
            json_object_set_new(entry, "rerun", json_string("not run"));
            json_object_set_new(entry, "rerun_reason", json_string(reason));
            continue;
        }
        int reproduced = same_bits(&shapes.layout, &shapes.sizes, folder, device,
                                   recorded_hashes(root, verdict, device));
        json_object_set_new(entry, "rerun", json_string(reproduced ? "reproduced" : "intermittent"));
        json_object_set_new(entry, "peer_reproduced",
                            json_boolean(same_bits(&shapes.layout, &shapes.sizes, folder, peer,
                                                   recorded_hashes(root, verdict, peer))));
        char reason[600];
        json_t *found = first_difference(&shapes.layout, &shapes.sizes, folder, device, peer, reason, sizeof reason);
        if (found)
            json_object_set_new(entry, "first_difference", found);
        else
            json_object_set_new(entry, "first_difference_reason", json_string(reason));
    }
    nftw(folder, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    kcs_prepared_case_free(&shapes);
}

int kcs_compare_and_locate(const kcs_runner_options *o, const kcs_case_list *cases, kcs_results *results)
{
    rerun_context context = {.o = o, .cases = cases, .reruns_left = KCS_MAX_RERUNS};
    kcs_difference_locator locator = {.locate = locate, .context = &context};
    return kcs_results_compare_devices(results, o->quiet, &locator);
}
