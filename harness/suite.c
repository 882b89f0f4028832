/* suite.c: preparing cases and running them on devices (see suite.h). */
#include "suite.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "generator.h"
#include "manifest.h"

/* Generates the inputs of a case into host arrays. */
static kcs_status generate_inputs(const kcs_case *c, kcs_prepared_case *p, kcs_error *err)
{
    for (int i = 0; i < p->layout.input_count; i++) {
        const kcs_array_spec *spec = &p->layout.inputs[i];
        const kcs_input_spec *input = kcs_case_input(c, spec->name);
        const kcs_array_size *size = &p->sizes.inputs[i];
        p->inputs[i] = malloc(size->bytes ? size->bytes : 1);
        if (!p->inputs[i])
            return kcs_fail(err, KCS_ERROR, "cannot allocate %zu bytes for input %s", size->bytes, spec->name);
        size_t row_length = spec->ndim > 0 ? spec->shape[spec->ndim - 1] : 1;
        if (kcs_distribution_check_rows(&input->distribution, row_length, err) != KCS_OK ||
            kcs_generate(&input->distribution, spec->dtype, p->inputs[i], 0, size->elements, err) != KCS_OK) {
            kcs_error_prefix(err, "input %s", spec->name);
            return KCS_ERROR;
        }
    }
    return KCS_OK;
}

static kcs_array_size size_of(const kcs_array_spec *spec)
{
    kcs_array_size size = {.elements = kcs_array_element_count(spec), .bytes = kcs_array_bytes(spec)};
    return size;
}

kcs_status kcs_prepare_layout(const kcs_case *c, kcs_prepared_case *p, kcs_error *err)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    if (kcs_op_prepare(c, &p->op, &p->args, &p->layout, err) != KCS_OK)
        return KCS_ERROR;
    for (int i = 0; i < p->layout.input_count; i++) {
        p->sizes.inputs[i] = size_of(&p->layout.inputs[i]);
        p->sizes.total_bytes += p->sizes.inputs[i].bytes;
    }
    for (int o = 0; o < p->layout.output_count; o++) {
        p->sizes.outputs[o] = size_of(&p->layout.outputs[o]);
        p->sizes.total_bytes += p->sizes.outputs[o].bytes;
    }
    return KCS_OK;
}

/* Chooses up to sample distinct flat indices below count, from a seed: a
 * seeded random sample, sorted, so a large case checks a reproducible subset. */
static size_t choose_sample(uint64_t seed, size_t count, uint64_t sample, size_t *indices)
{
    size_t chosen = 0;
    for (uint64_t k = 0; k < sample; k++)
        indices[chosen++] = (size_t)(((unsigned __int128)kcs_random_bits(seed, k) * count) >> 64);
    for (size_t i = 1; i < chosen; i++) /* insertion sort: samples are small */
        for (size_t j = i; j > 0 && indices[j - 1] > indices[j]; j--) {
            size_t swap = indices[j];
            indices[j] = indices[j - 1];
            indices[j - 1] = swap;
        }
    size_t unique = 0;
    for (size_t i = 0; i < chosen; i++)
        if (unique == 0 || indices[unique - 1] != indices[i])
            indices[unique++] = indices[i];
    return unique;
}

/* Allocates the expected values and bounds of every output: all of its
 * elements, or a seeded sample of them for an oracle case that asks for one. */
static kcs_status allocate_expected(const kcs_case *c, kcs_expect_source source, kcs_prepared_case *p,
                                    kcs_error *err)
{
    for (int o = 0; o < p->layout.output_count; o++) {
        kcs_expected *e = &p->expected[o];
        size_t count = p->sizes.outputs[o].elements;
        e->count = count;
        if (source == KCS_EXPECT_ORACLE && c->sample > 0 && c->sample < count) {
            e->indices = malloc(c->sample * sizeof *e->indices);
            if (!e->indices)
                return kcs_fail(err, KCS_ERROR, "out of memory");
            char seed_text[300];
            snprintf(seed_text, sizeof seed_text, "%s:sample:%d", c->name, o);
            e->count = choose_sample(kcs_string_hash(seed_text), count, c->sample, e->indices);
        }
        e->values = malloc((e->count ? e->count : 1) * sizeof *e->values);
        e->bounds = malloc((e->count ? e->count : 1) * sizeof *e->bounds);
        if (!e->values || !e->bounds)
            return kcs_fail(err, KCS_ERROR, "cannot allocate expected values of output %s",
                            p->layout.outputs[o].name);
    }
    return KCS_OK;
}

/* Fills the expected values from source and says where they came from. */
static kcs_status fill_expected(const kcs_case *c, kcs_expect_source source, const kcs_golden *golden,
                                kcs_prepared_case *p, kcs_error *err)
{
    kcs_status status = KCS_OK;
    switch (source) {
    case KCS_EXPECT_GOLDEN:
        if (!golden)
            return kcs_fail(err, KCS_ERROR, "case needs golden data but no golden directory is open");
        for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++)
            status = kcs_golden_read(golden, c, &p->layout.outputs[o], &p->expected[o], err);
        snprintf(p->expected_from, sizeof p->expected_from, "golden");
        break;
    case KCS_EXPECT_ORACLE:
        status = p->op->oracle(&p->args, p->inputs, p->expected, err);
        if (c->sample > 0)
            snprintf(p->expected_from, sizeof p->expected_from, "oracle, sample of %llu",
                     (unsigned long long)c->sample);
        else
            snprintf(p->expected_from, sizeof p->expected_from, "oracle");
        break;
    case KCS_EXPECT_CLOSED_FORM:
        status = p->op->closed_form(c, &p->args, p->expected, err);
        snprintf(p->expected_from, sizeof p->expected_from, "closed form");
        break;
    }
    return status;
}

kcs_status kcs_prepare_case_from(const kcs_case *c, kcs_expect_source source, const kcs_golden *golden,
                                 kcs_prepared_case *p, kcs_error *err)
{
    if (kcs_prepare_layout(c, p, err) != KCS_OK || generate_inputs(c, p, err) != KCS_OK ||
        allocate_expected(c, source, p, err) != KCS_OK || fill_expected(c, source, golden, p, err) != KCS_OK)
        return KCS_ERROR;
    return p->op->bounds(&p->args, p->inputs, p->expected, err);
}

kcs_status kcs_prepare_case(const kcs_case *c, const kcs_golden *golden, kcs_prepared_case *p,
                            kcs_error *err)
{
    return kcs_prepare_case_from(c, c->expect, golden, p, err);
}

void kcs_prepared_case_free(kcs_prepared_case *p)
{
    for (int i = 0; i < KCS_MAX_INPUTS; i++)
        free(p->inputs[i]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        free(p->expected[o].indices);
        free(p->expected[o].values);
        free(p->expected[o].bounds);
    }
    memset(p, 0, sizeof *p);
}

const char *kcs_outcome_name(kcs_outcome outcome)
{
    switch (outcome) {
    case KCS_OUTCOME_PASS: return "pass";
    case KCS_OUTCOME_FAIL: return "fail";
    case KCS_OUTCOME_SKIP: return "skip";
    case KCS_OUTCOME_ERROR: return "error";
    }
    return "error";
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted samples, linearly interpolated. */
static double quantile(const double *sorted, int count, double q)
{
    double position = q * (count - 1);
    int below = (int)floor(position);
    int above = below + 1 < count ? below + 1 : below;
    double weight = position - below;
    return sorted[below] * (1.0 - weight) + sorted[above] * weight;
}

void kcs_timing_from_samples(double *samples, int count, kcs_timing *timing)
{
    memset(timing, 0, sizeof *timing);
    if (count <= 0)
        return;
    timing->kept = count < KCS_TIMING_KEPT_SAMPLES ? count : KCS_TIMING_KEPT_SAMPLES;
    memcpy(timing->samples, samples, (size_t)timing->kept * sizeof *samples);
    qsort(samples, (size_t)count, sizeof *samples, compare_doubles);
    timing->repeats = count;
    timing->minimum = samples[0];
    timing->maximum = samples[count - 1];
    timing->median = quantile(samples, count, 0.5);
    timing->lower_quartile = quantile(samples, count, 0.25);
    timing->upper_quartile = quantile(samples, count, 0.75);
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Everything one run on a device holds, released together. */
typedef struct {
    const kcs_backend *backend;
    kcs_device *device;
    kcs_buffer *inputs[KCS_MAX_INPUTS];
    kcs_buffer *outputs[KCS_MAX_OUTPUTS];
    void *actual[KCS_MAX_OUTPUTS];
    void *inputs_after;
    void *staging[KCS_MAX_INPUTS + KCS_MAX_OUTPUTS];
} device_run;

static void release_run(device_run *run)
{
    for (int i = 0; i < KCS_MAX_INPUTS; i++)
        run->backend->release(run->device, run->inputs[i]);
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        run->backend->release(run->device, run->outputs[o]);
        free(run->actual[o]);
    }
    free(run->inputs_after);
    for (int s = 0; s < KCS_MAX_INPUTS + KCS_MAX_OUTPUTS; s++) {
        if (!run->staging[s])
            continue;
        if (run->backend->host_release)
            run->backend->host_release(run->device, run->staging[s]);
        else
            free(run->staging[s]);
    }
}

static kcs_outcome fail_with(kcs_run_result *result, kcs_outcome outcome, const char *message)
{
    result->outcome = outcome;
    snprintf(result->message, sizeof result->message, "%s", message);
    return outcome;
}

/* Bytes of array i of a case, counting its inputs first and then its
 * outputs, the order in which a kernel takes its buffers. */
static size_t array_bytes(const kcs_prepared_case *p, int i)
{
    int inputs = p->layout.input_count;
    return i < inputs ? p->sizes.inputs[i].bytes : p->sizes.outputs[i - inputs].bytes;
}

/* Whether timing has both the runs and the seconds it needs, or may take no more. */
static int timed_enough(int count, double total, int capacity, const kcs_run_options *options)
{
    return count >= capacity || (count >= options->min_repeats && total >= options->min_seconds);
}

static int timing_capacity(const kcs_run_options *options)
{
    return options->max_repeats > 0 ? options->max_repeats : 1000;
}

/* A case whose inputs and outputs together are smaller than this is timed
 * on copies in rotation, so that a repeat does not find its data in the
 * last-level cache left by the one before (an H200's L2 is 60 MB). */
#define KCS_ROTATION_BYTES ((size_t)512 << 20)
#define KCS_MAX_ROTATION_COPIES 64

/* How many sets of buffers the kernel timing rotates among. */
static int rotation_copies(const kcs_prepared_case *p)
{
    size_t set_bytes = p->sizes.total_bytes;
    if (set_bytes == 0 || set_bytes >= KCS_ROTATION_BYTES)
        return 1;
    size_t wanted = (KCS_ROTATION_BYTES + set_bytes - 1) / set_bytes;
    return wanted > KCS_MAX_ROTATION_COPIES ? KCS_MAX_ROTATION_COPIES : (int)wanted;
}

typedef kcs_buffer *buffer_set[KCS_MAX_INPUTS + KCS_MAX_OUTPUTS];

/* Fills sets[0] with the run's own buffers and the other sets with new
 * buffers holding the same inputs. */
static kcs_status make_rotation_sets(const kcs_prepared_case *p, device_run *run, buffer_set *sets, int copies,
                                     kcs_error *err)
{
    int inputs = p->layout.input_count, arrays = inputs + p->layout.output_count;
    for (int i = 0; i < arrays; i++)
        sets[0][i] = i < inputs ? run->inputs[i] : run->outputs[i - inputs];
    kcs_status status = KCS_OK;
    for (int c = 1; c < copies && status == KCS_OK; c++)
        for (int i = 0; i < arrays && status == KCS_OK; i++) {
            status = run->backend->allocate(run->device, array_bytes(p, i), &sets[c][i], err);
            if (status == KCS_OK && i < inputs)
                status = run->backend->upload(run->device, sets[c][i], p->inputs[i], array_bytes(p, i), err);
        }
    return status;
}

static void release_rotation_sets(const kcs_prepared_case *p, device_run *run, buffer_set *sets, int copies)
{
    for (int c = 1; c < copies; c++)
        for (int i = 0; i < p->layout.input_count + p->layout.output_count; i++)
            run->backend->release(run->device, sets[c][i]);
}

/* How a kernel's repeats are timed (time_kernel): back to back where the
 * backend can and may (kcs_backend.time_back_to_back; docs/runner.md, "Back
 * to back"), else one at a time; why not, where the backend could. */
typedef struct {
    int back_to_back;
    char one_by_one_because[sizeof(((kcs_error *)0)->message)];
} repeat_mode;

/* One run of the kernel on set index % copies, its time into *seconds. */
static kcs_status run_on_set(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                             buffer_set *sets, int copies, int index, double *seconds, kcs_error *err)
{
    kcs_buffer **set = sets[index % copies];
    return kernel->run(run->device, &p->args, set, set + p->layout.input_count, seconds, err);
}

/* The repeats of one call of time_back_to_back: repeat r runs on set
 * (first + r) % copies. */
typedef struct {
    const kcs_prepared_case *p;
    device_run *run;
    const kcs_kernel *kernel;
    buffer_set *sets;
    int copies, first;
} repeats_on_sets;

static kcs_status run_repeat_on_set(void *context, int repeat, kcs_error *err)
{
    const repeats_on_sets *r = context;
    double seconds; /* the backend's own events time it */
    return run_on_set(r->p, r->run, r->kernel, r->sets, r->copies, r->first + repeat, &seconds, err);
}

/* Times count repeats into seconds[0 .. count - 1] (and, one at a time on a
 * backend with a pace, the pace after each into paces), the first on set
 * first % copies. Back to back where mode says so; a backend that cannot
 * time these repeats so (KCS_UNSUPPORTED) turns mode to one at a time, with
 * its reason, and they are timed one at a time. */
static kcs_status time_repeats(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                               buffer_set *sets, int copies, int first, int count, repeat_mode *mode,
                               double *seconds, double *paces, kcs_error *err)
{
    if (mode->back_to_back) {
        repeats_on_sets repeats = {p, run, kernel, sets, copies, first};
        kcs_error why = {{0}};
        kcs_status status =
            run->backend->time_back_to_back(run->device, count, run_repeat_on_set, &repeats, seconds, &why);
        if (status != KCS_UNSUPPORTED) {
            if (status != KCS_OK)
                *err = why;
            return status;
        }
        mode->back_to_back = 0;
        snprintf(mode->one_by_one_because, sizeof mode->one_by_one_because, "%s", why.message);
    }
    kcs_status status = KCS_OK;
    for (int r = 0; r < count && status == KCS_OK; r++) {
        status = run_on_set(p, run, kernel, sets, copies, first + r, &seconds[r], err);
        if (status == KCS_OK && paces) /* right after the repeat, under the same load */
            status = run->backend->pace(run->device, &paces[r], err);
    }
    return status;
}

/* How many more repeats to time at once: enough, by estimate (seconds a
 * repeat), to reach both the count and the time, but at least one and at
 * most what capacity leaves. */
static int repeats_wanted(int count, double total, double estimate, int capacity, const kcs_run_options *options)
{
    double by_time = estimate > 0.0 ? ceil((options->min_seconds - total) / estimate) : 1.0;
    int left = capacity - count, wanted = options->min_repeats - count;
    if (by_time > wanted)
        wanted = by_time > left ? left : (int)by_time;
    if (wanted < 1)
        wanted = 1;
    return wanted > left ? left : wanted;
}

/* The untimed runs before a kernel's timed ones (time_kernel): one on its
 * own, then more on the rotated sets, as the timed ones will be (mode),
 * until seconds of kernel time or of wall time; scratch holds capacity
 * times. *estimate: their mean, seconds a repeat. */
static kcs_status warm_up(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel, buffer_set *sets,
                          int copies, double seconds, repeat_mode *mode, double *scratch, int capacity,
                          double *estimate, kcs_error *err)
{
    double kernel_seconds = 0.0, started = now_seconds();
    repeat_mode first_alone = {0, ""};
    kcs_status status = time_repeats(p, run, kernel, sets, copies, 0, 1, &first_alone, scratch, NULL, err);
    kernel_seconds = scratch[0];
    int runs = 1;
    while (status == KCS_OK && kernel_seconds < seconds && now_seconds() - started < seconds) {
        int count = mode->back_to_back ? (int)fmin(ceil((seconds - kernel_seconds) / (kernel_seconds / runs)),
                                                   (double)capacity)
                                       : 1;
        status = time_repeats(p, run, kernel, sets, copies, runs, count, mode, scratch, NULL, err);
        for (int r = 0; r < count && status == KCS_OK; r++)
            kernel_seconds += scratch[r];
        runs += count;
    }
    *estimate = kernel_seconds / runs;
    return status;
}

/* Times the kernel alone, repeating until both the count and the time are
 * reached; small cases rotate among copies of their buffers. Untimed runs
 * come first (warm_up): one at least, so that no timed run pays a first
 * run's costs (code loaded, caches cold), and then more until
 * options->warm_up_seconds of kernel time, or of wall time, has passed: a
 * GPU under sustained load lowers its clocks within a tenth of a second
 * (docs/runner.md, "Warm-up"), so that kernels timed one after another
 * from an idle card each start fast and end slow, in proportions that
 * depend on their length; warmed up, each is timed at the clocks the card
 * sustains. Where the backend can, the repeats (warm-up and timed) are
 * queued back to back (docs/runner.md, "Back to back"), so that the card
 * does not idle between them at the host's pace; a kernel whose repeats
 * cannot be (one that waits for the device) is timed one at a time. */
static kcs_status time_kernel(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                              const kcs_run_options *options, kcs_timing *timing, kcs_error *err)
{
    int copies = rotation_copies(p), capacity = timing_capacity(options);
    buffer_set *sets = calloc((size_t)copies, sizeof *sets);
    double *samples = malloc((size_t)capacity * sizeof *samples);
    double *paces = run->backend->pace ? malloc((size_t)capacity * sizeof *paces) : NULL;
    if (!samples || !sets || (run->backend->pace && !paces)) {
        free(samples);
        free(paces);
        free(sets);
        return kcs_fail(err, KCS_ERROR, "out of memory");
    }
    /* A backend with a pace times it after every repeat: one at a time. */
    repeat_mode mode = {run->backend->time_back_to_back && !run->backend->pace, ""};
    if (mode.back_to_back && options->one_by_one) {
        mode.back_to_back = 0;
        snprintf(mode.one_by_one_because, sizeof mode.one_by_one_because, "--one-by-one");
    }
    kcs_status status = make_rotation_sets(p, run, sets, copies, err);
    double total = 0.0, estimate = 0.0;
    int count = 0;
    if (status == KCS_OK)
        status = warm_up(p, run, kernel, sets, copies, options->warm_up_seconds, &mode, samples, capacity,
                         &estimate, err);
    double loop_started = now_seconds();
    while (status == KCS_OK && !timed_enough(count, total, capacity, options)) {
        int was_back_to_back = mode.back_to_back;
        int wanted = mode.back_to_back ? repeats_wanted(count, total, count ? total / count : estimate, capacity,
                                                        options)
                                       : 1;
        status = time_repeats(p, run, kernel, sets, copies, count + 1, wanted, &mode, samples + count,
                              paces ? paces + count : NULL, err);
        if (status == KCS_OK && was_back_to_back && !mode.back_to_back && count > 0) {
            /* Started back to back, went on one at a time: time them all one at a time. */
            count = 0;
            total = 0.0;
            loop_started = now_seconds();
            continue;
        }
        for (int r = 0; r < wanted && status == KCS_OK; r++)
            total += samples[count + r];
        count += wanted;
    }
    if (status == KCS_OK) {
        double loop_seconds = now_seconds() - loop_started;
        kcs_timing_from_samples(samples, count, timing);
        timing->rotated_copies = copies;
        /* How busy the repeats kept the device: what the host's pace between
         * them leaves idle (a power-limited GPU keeps higher clocks the more
         * it idles; docs/runner.md, "Warm-up"). */
        timing->busy_fraction = loop_seconds > 0.0 ? total / loop_seconds : 0.0;
        timing->back_to_back = mode.back_to_back;
        snprintf(timing->one_by_one_because, sizeof timing->one_by_one_because, "%s", mode.one_by_one_because);
        if (paces) {
            qsort(paces, (size_t)count, sizeof *paces, compare_doubles);
            timing->pace_median = quantile(paces, count, 0.5);
        }
    }
    release_rotation_sets(p, run, sets, copies);
    free(sets);
    free(samples);
    free(paces);
    return status;
}

/* Allocates staging memory (pinned where the backend has it) for every
 * array and copies the inputs into it. */
static kcs_status make_staging(const kcs_prepared_case *p, device_run *run, kcs_error *err)
{
    for (int i = 0; i < p->layout.input_count + p->layout.output_count; i++) {
        size_t bytes = array_bytes(p, i) ? array_bytes(p, i) : 1;
        run->staging[i] = run->backend->host_allocate ? run->backend->host_allocate(run->device, bytes)
                                                      : malloc(bytes);
        if (!run->staging[i])
            return kcs_fail(err, KCS_ERROR, "cannot allocate %zu bytes of staging memory", bytes);
        if (i < p->layout.input_count)
            memcpy(run->staging[i], p->inputs[i], array_bytes(p, i));
    }
    return KCS_OK;
}

/* One upload of the inputs from staging, the kernel and the download of the outputs. */
static kcs_status round_trip(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                             kcs_error *err)
{
    int inputs = p->layout.input_count;
    double kernel_seconds;
    kcs_status status = KCS_OK;
    for (int i = 0; i < inputs && status == KCS_OK; i++)
        status = run->backend->upload(run->device, run->inputs[i], run->staging[i], array_bytes(p, i), err);
    if (status == KCS_OK)
        status = kernel->run(run->device, &p->args, run->inputs, run->outputs, &kernel_seconds, err);
    for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++)
        status = run->backend->download(run->device, run->outputs[o], run->staging[inputs + o],
                                        p->sizes.outputs[o].bytes, err);
    return status;
}

/* Times upload from staging memory, the kernel and the download of the outputs. */
static kcs_status time_end_to_end(const kcs_prepared_case *p, device_run *run,
                                  const kcs_kernel *kernel, const kcs_run_options *options,
                                  kcs_timing *timing, kcs_error *err)
{
    if (make_staging(p, run, err) != KCS_OK)
        return KCS_ERROR;
    int capacity = timing_capacity(options);
    double *samples = malloc((size_t)capacity * sizeof *samples);
    if (!samples)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    double total = 0.0;
    int count = 0;
    kcs_status status = KCS_OK;
    for (int attempt = -1; status == KCS_OK && !timed_enough(count, total, capacity, options); attempt++) {
        double start = now_seconds();
        status = round_trip(p, run, kernel, err);
        double seconds = now_seconds() - start;
        if (attempt >= 0) { /* the first round warms up */
            samples[count++] = seconds;
            total += seconds;
        }
    }
    if (status == KCS_OK)
        kcs_timing_from_samples(samples, count, timing);
    free(samples);
    return status;
}

void kcs_run_result_free(kcs_run_result *result)
{
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        free(result->actual[o]);
        result->actual[o] = NULL;
    }
}

int kcs_run_times(const kcs_run_options *options, const kcs_case *c)
{
    return options->benchmark && (c->tags & KCS_TAG_PERF);
}

/* Every device buffer is followed by a guard of this many bytes holding the
 * dtype's poison (a signalling NaN for floats): a kernel that reads past the
 * end of an input pulls a NaN into its result and fails; one that writes
 * past the end of a buffer changes the guard, which is checked after the run. */
enum { guard_bytes = 256 };

/* Allocates a buffer for an array and its guard, and uploads the data and the guard. */
static kcs_status upload_guarded(const kcs_backend *backend, kcs_device *device, const kcs_array_spec *spec,
                                 size_t bytes, const void *data, kcs_buffer **buffer, kcs_error *err)
{
    unsigned char *staged = malloc(bytes + guard_bytes);
    if (!staged)
        return kcs_fail(err, KCS_ERROR, "cannot allocate %zu bytes for %s", bytes + guard_bytes, spec->name);
    memcpy(staged, data, bytes);
    kcs_poison(staged + bytes, spec->dtype, guard_bytes / kcs_dtype_size(spec->dtype));
    kcs_status status = backend->allocate(device, bytes + guard_bytes, buffer, err);
    if (status == KCS_OK)
        status = backend->upload(device, *buffer, staged, bytes + guard_bytes, err);
    free(staged);
    return status;
}

/* Downloads an array's guard and describes a change to it in why. */
static kcs_status check_guard(const kcs_backend *backend, kcs_device *device, const kcs_array_spec *spec,
                              size_t bytes, kcs_buffer *buffer, const char *role, char *why, size_t why_size,
                              kcs_error *err)
{
    size_t size = kcs_dtype_size(spec->dtype);
    unsigned char *whole = malloc(bytes + guard_bytes);
    if (!whole)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = backend->download(device, buffer, whole, bytes + guard_bytes, err);
    for (size_t k = 0; status == KCS_OK && k < guard_bytes / size; k++)
        if (!kcs_is_poison(whole + bytes, spec->dtype, k)) {
            snprintf(why, why_size, "wrote past the end of %s %s: element %zu beyond its %zu was changed", role,
                     spec->name, k, bytes / size);
            break;
        }
    free(whole);
    return status;
}

/* Whether the device can run the kernel on this case at all; if not, the
 * result says why (a skip, or an error of the kernel's own check). */
static int device_can_run(const kcs_prepared_case *p, kcs_device *device, const kcs_device_info *info,
                          const kcs_kernel *kernel, kcs_run_result *result)
{
    kcs_error err = {{0}};
    if (kernel->supports) {
        kcs_status support = kernel->supports(device, &p->args, &err);
        if (support != KCS_OK) {
            fail_with(result, support == KCS_UNSUPPORTED ? KCS_OUTCOME_SKIP : KCS_OUTCOME_ERROR, err.message);
            return 0;
        }
    }
    uint64_t needed = p->sizes.total_bytes;
    if (info->memory_bytes && needed > info->memory_bytes) {
        snprintf(result->message, sizeof result->message, "needs %llu bytes, device has %llu",
                 (unsigned long long)needed, (unsigned long long)info->memory_bytes);
        result->outcome = KCS_OUTCOME_SKIP;
        return 0;
    }
    return 1;
}

/* Fills host memory for an output with the dtype's poison, so that an
 * element the kernel never writes is told from any value it could write. */
static kcs_status poisoned_output(const kcs_prepared_case *p, int o, void **actual, kcs_error *err)
{
    const kcs_array_size *size = &p->sizes.outputs[o];
    *actual = malloc(size->bytes ? size->bytes : 1);
    if (!*actual)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_poison(*actual, p->layout.outputs[o].dtype, size->elements);
    return KCS_OK;
}

/* Uploads the inputs and the poisoned outputs, each followed by its guard. */
static kcs_status upload_poisoned(const kcs_prepared_case *p, device_run *run, kcs_error *err)
{
    const kcs_layout *layout = &p->layout;
    kcs_status status = KCS_OK;
    for (int i = 0; i < layout->input_count && status == KCS_OK; i++)
        status = upload_guarded(run->backend, run->device, &layout->inputs[i], p->sizes.inputs[i].bytes,
                                p->inputs[i], &run->inputs[i], err);
    for (int o = 0; o < layout->output_count && status == KCS_OK; o++) {
        status = poisoned_output(p, o, &run->actual[o], err);
        if (status == KCS_OK)
            status = upload_guarded(run->backend, run->device, &layout->outputs[o], p->sizes.outputs[o].bytes,
                                    run->actual[o], &run->outputs[o], err);
    }
    return status;
}

/* Runs the kernel once and downloads its outputs into run->actual. */
static kcs_status run_and_download(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                                   kcs_error *err)
{
    double seconds;
    kcs_status status = kernel->run(run->device, &p->args, run->inputs, run->outputs, &seconds, err);
    for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++)
        status = run->backend->download(run->device, run->outputs[o], run->actual[o], p->sizes.outputs[o].bytes,
                                        err);
    return status;
}

/* What a run showed besides its outputs' values, kept apart until
 * compose_diagnosis writes them into the check's diagnosis. */
typedef struct {
    char past_end[512];  /* the first guard found changed, "" if none */
    int past_end_input;  /* the input whose guard that was; -1 for an output's */
    char modified[KCS_MAX_INPUTS][160]; /* per input: how the kernel changed it, "" if it did not */
    char nondeterministic[512]; /* how a second run differed, "" if it did not (or was not made) */
} run_findings;

/* Checks the guards after every output; the first changed one goes to found. */
static kcs_status check_output_guards(const kcs_prepared_case *p, device_run *run, run_findings *found,
                                      kcs_error *err)
{
    kcs_status status = KCS_OK;
    for (int o = 0; o < p->layout.output_count && status == KCS_OK && !found->past_end[0]; o++)
        status = check_guard(run->backend, run->device, &p->layout.outputs[o], p->sizes.outputs[o].bytes,
                             run->outputs[o], "output", found->past_end, sizeof found->past_end, err);
    return status;
}

/* Runs the kernel a second time on freshly poisoned outputs and compares
 * bit for bit with the first run's; a difference is described in why. */
static kcs_status rerun_and_compare(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                                    char *why, size_t why_size, kcs_error *err)
{
    const kcs_layout *layout = &p->layout;
    kcs_status status = KCS_OK;
    void *second[KCS_MAX_OUTPUTS] = {0};
    for (int o = 0; o < layout->output_count && status == KCS_OK; o++) {
        status = poisoned_output(p, o, &second[o], err);
        if (status == KCS_OK)
            status = run->backend->upload(run->device, run->outputs[o], second[o], p->sizes.outputs[o].bytes, err);
    }
    double seconds;
    if (status == KCS_OK)
        status = kernel->run(run->device, &p->args, run->inputs, run->outputs, &seconds, err);
    for (int o = 0; o < layout->output_count && status == KCS_OK; o++)
        status = run->backend->download(run->device, run->outputs[o], second[o], p->sizes.outputs[o].bytes, err);
    for (int o = 0; o < layout->output_count && status == KCS_OK && !why[0]; o++) {
        const kcs_array_spec *spec = &layout->outputs[o];
        size_t size = kcs_dtype_size(spec->dtype);
        for (size_t i = 0; i < p->sizes.outputs[o].elements; i++)
            if (memcmp((char *)run->actual[o] + i * size, (char *)second[o] + i * size, size) != 0) {
                char element[128];
                kcs_element_name(spec, i, element, sizeof element);
                snprintf(why, why_size, "nondeterministic: %s was %.17g in the first run and %.17g in the second",
                         element, kcs_load_element(run->actual[o], spec->dtype, i),
                         kcs_load_element(second[o], spec->dtype, i));
                break;
            }
    }
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++)
        free(second[o]);
    return status;
}

/* The op's own comparison where it has one (assign's near-tie rule), else
 * the element-wise one. */
static void compare_values(const kcs_prepared_case *p, const kcs_expected expected[], void *const actual[],
                           kcs_check_result *check)
{
    if (p->op->check)
        p->op->check(&p->args, p->inputs, actual, expected, check);
    else
        kcs_check_outputs(&p->layout, actual, expected, check);
}

void kcs_free_expected(kcs_expected expected[])
{
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        free(expected[o].values);
        free(expected[o].bounds);
        expected[o].values = expected[o].bounds = NULL;
    }
}

kcs_status kcs_oracle_expected(const kcs_prepared_case *p, int flushing, kcs_expected expected[], kcs_error *err)
{
    memset(expected, 0, KCS_MAX_OUTPUTS * sizeof *expected);
    for (int o = 0; o < p->layout.output_count; o++) {
        size_t count = p->sizes.outputs[o].elements;
        expected[o].count = count;
        expected[o].values = malloc((count ? count : 1) * sizeof(double));
        expected[o].bounds = malloc((count ? count : 1) * sizeof(double));
        if (!expected[o].values || !expected[o].bounds)
            return kcs_fail(err, KCS_ERROR, "cannot allocate expected values of output %s",
                            p->layout.outputs[o].name);
    }
    if (p->op->oracle(&p->args, p->inputs, expected, err) != KCS_OK)
        return KCS_ERROR;
    return kcs_fill_bounds(p, flushing, expected, err);
}

kcs_status kcs_fill_bounds(const kcs_prepared_case *p, int flushing, kcs_expected expected[], kcs_error *err)
{
    if (flushing && p->op->flushing_bounds)
        return p->op->flushing_bounds(&p->args, p->inputs, expected, err);
    return p->op->bounds(&p->args, p->inputs, expected, err);
}

/* Whether the op's own oracle, at full precision, accepts the outputs: when
 * expected values given on the command line reject an output that is a copy
 * of an input, the copy may be the right answer (gemm with alpha = 0 and
 * beta = 1 is C) and the given values wrong. */
static int oracle_accepts(const kcs_prepared_case *p, int flushing, void *const actual[])
{
    kcs_expected oracle[KCS_MAX_OUTPUTS];
    kcs_error err = {{0}};
    kcs_check_result check;
    int accepted = 0;
    if (kcs_oracle_expected(p, flushing, oracle, &err) == KCS_OK) {
        compare_values(p, oracle, actual, &check);
        accepted = check.passed;
    }
    kcs_free_expected(oracle);
    return accepted;
}

void kcs_compare_outputs(const kcs_prepared_case *p, const kcs_expected expected[], int flushing,
                         void *const actual[], kcs_check_result *check)
{
    compare_values(p, expected, actual, check);
    if (check->passed)
        return;
    char before[sizeof check->diagnosis];
    memcpy(before, check->diagnosis, sizeof before);
    kcs_diagnose_trivial(&p->layout, p->inputs, actual, check);
    if (p->expected_given && strcmp(before, check->diagnosis) != 0 && oracle_accepts(p, flushing, actual)) {
        size_t length = strlen(before);
        snprintf(before + length, sizeof before - length,
                 "; the outputs are what the op defines for these inputs (its oracle accepts them): "
                 "the expected values given disagree with its definition");
        memcpy(check->diagnosis, before, sizeof before);
    }
}

/* Compares the outputs with the expected values within their bounds: the
 * case's bounds, or, on a device that flushes f32 subnormals, the op's
 * flushing bounds where it has them. */
static kcs_status compare_outputs(const kcs_prepared_case *p, const kcs_device_info *info, device_run *run,
                                  kcs_check_result *check, kcs_explanation *explanation, kcs_error *err)
{
    int flushing = info->flushes_f32_subnormals && p->op->flushing_bounds;
    if (!flushing) {
        kcs_compare_outputs(p, p->expected, 0, run->actual, check);
        if (!check->passed)
            kcs_explain_failure(p, run->actual, p->expected, explanation);
        return KCS_OK;
    }
    kcs_expected widened[KCS_MAX_OUTPUTS];
    memset(widened, 0, sizeof widened);
    kcs_status status = KCS_OK;
    for (int o = 0; o < p->layout.output_count && status == KCS_OK; o++) {
        const kcs_expected *e = &p->expected[o];
        widened[o] = *e;
        widened[o].values = malloc((e->count ? e->count : 1) * sizeof(double));
        widened[o].bounds = malloc((e->count ? e->count : 1) * sizeof(double));
        if (!widened[o].values || !widened[o].bounds)
            status = kcs_fail(err, KCS_ERROR, "out of memory");
        else
            memcpy(widened[o].values, e->values, e->count * sizeof(double));
    }
    if (status == KCS_OK)
        status = kcs_fill_bounds(p, 1, widened, err);
    if (status == KCS_OK) {
        kcs_compare_outputs(p, widened, 1, run->actual, check);
        if (!check->passed)
            kcs_explain_failure(p, run->actual, widened, explanation);
        if (!check->passed) {
            size_t length = strlen(check->diagnosis);
            snprintf(check->diagnosis + length, sizeof check->diagnosis - length,
                     " (the device flushes f32 subnormals: checked within the bounds that allow it)");
        }
    }
    kcs_free_expected(widened); /* not the indices: they are the case's own */
    return status;
}

static size_t largest_input_bytes(const kcs_prepared_case *p)
{
    size_t largest = 1;
    for (int i = 0; i < p->layout.input_count; i++)
        if (p->sizes.inputs[i].bytes + guard_bytes > largest)
            largest = p->sizes.inputs[i].bytes + guard_bytes;
    return largest;
}

/* The inputs must come back as they went in: a kernel that scribbles on its
 * inputs would corrupt the next call of a library user. Checks each input's
 * guard (until one is found changed) and contents. */
static kcs_status check_inputs(const kcs_prepared_case *p, device_run *run, run_findings *found, kcs_error *err)
{
    const kcs_layout *layout = &p->layout;
    run->inputs_after = malloc(largest_input_bytes(p));
    if (!run->inputs_after)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = KCS_OK;
    for (int i = 0; i < layout->input_count && status == KCS_OK; i++) {
        size_t bytes = p->sizes.inputs[i].bytes;
        if (!found->past_end[0]) {
            status = check_guard(run->backend, run->device, &layout->inputs[i], bytes, run->inputs[i], "input",
                                 found->past_end, sizeof found->past_end, err);
            if (found->past_end[0])
                found->past_end_input = i;
        }
        if (status == KCS_OK)
            status = run->backend->download(run->device, run->inputs[i], run->inputs_after, bytes, err);
        if (status == KCS_OK && memcmp(run->inputs_after, p->inputs[i], bytes) != 0) {
            size_t at = 0;
            while (((unsigned char *)run->inputs_after)[at] == ((unsigned char *)p->inputs[i])[at])
                at++;
            snprintf(found->modified[i], sizeof found->modified[i],
                     "input %s was modified by the kernel (first at element %zu)", layout->inputs[i].name,
                     at / kcs_dtype_size(layout->inputs[i].dtype));
        }
    }
    return status;
}

/* Appends "; finding" (or the finding alone) to the diagnosis and fails the check. */
static void add_finding(kcs_check_result *check, const char *finding)
{
    if (!finding[0])
        return;
    size_t length = strlen(check->diagnosis);
    snprintf(check->diagnosis + length, sizeof check->diagnosis - length, "%s%s", length ? "; " : "", finding);
    check->passed = 0;
}

/* Writes the findings after the comparison's own diagnosis, array by array
 * in the order they were checked: outputs' guards, then each input's guard
 * and contents, then a second run that differed. */
static void compose_diagnosis(const run_findings *found, int input_count, kcs_check_result *check)
{
    if (found->past_end_input < 0)
        add_finding(check, found->past_end);
    for (int i = 0; i < input_count; i++) {
        if (found->past_end_input == i)
            add_finding(check, found->past_end);
        add_finding(check, found->modified[i]);
    }
    add_finding(check, found->nondeterministic);
}

/* Checks what one run left: guards, a second run's bits (with
 * --determinism), the outputs and the inputs; sets the outcome. */
static kcs_status judge_run(const kcs_prepared_case *p, const kcs_device_info *info, device_run *run,
                            const kcs_kernel *kernel, const kcs_run_options *options, kcs_run_result *result,
                            kcs_error *err)
{
    run_findings found = {.past_end_input = -1};
    kcs_status status = check_output_guards(p, run, &found, err);
    if (status == KCS_OK && options->determinism)
        status = rerun_and_compare(p, run, kernel, found.nondeterministic, sizeof found.nondeterministic, err);
    if (status != KCS_OK)
        return status;
    if (compare_outputs(p, info, run, &result->check, &result->explanation, err) != KCS_OK)
        return KCS_ERROR;
    if (check_inputs(p, run, &found, err) != KCS_OK)
        return KCS_ERROR;
    compose_diagnosis(&found, p->layout.input_count, &result->check);
    result->outcome = result->check.passed ? KCS_OUTCOME_PASS : KCS_OUTCOME_FAIL;
    snprintf(result->message, sizeof result->message, "%s", result->check.diagnosis);
    return KCS_OK;
}

/* Times a passing perf case when benchmarking, kernel alone and end to end. */
static void time_run(const kcs_prepared_case *p, device_run *run, const kcs_kernel *kernel,
                     const kcs_run_options *options, kcs_run_result *result)
{
    kcs_error err = {{0}};
    kcs_status status = time_kernel(p, run, kernel, options, &result->kernel, &err);
    if (status == KCS_OK)
        status = time_end_to_end(p, run, kernel, options, &result->end_to_end, &err);
    if (status != KCS_OK)
        fail_with(result, KCS_OUTCOME_ERROR, err.message);
    else
        result->timed = 1;
}

/* Hashes the outputs the first run downloaded (kcs_run_result.output_hashes). */
static void hash_outputs(const kcs_prepared_case *p, const device_run *run, kcs_run_result *result)
{
    for (int o = 0; o < p->layout.output_count; o++) {
        snprintf(result->output_names[o], sizeof result->output_names[o], "%s", p->layout.outputs[o].name);
        kcs_sha256_bytes(run->actual[o], p->sizes.outputs[o].bytes, result->output_hashes[o]);
    }
    result->hashed_outputs = p->layout.output_count;
}

void kcs_run_on_device(const kcs_prepared_case *p, const kcs_backend *backend, kcs_device *device,
                       const kcs_device_info *info, const kcs_kernel *kernel,
                       const kcs_run_options *options, kcs_run_result *result)
{
    memset(result, 0, sizeof *result);
    if (!device_can_run(p, device, info, kernel, result))
        return;
    device_run run = {.backend = backend, .device = device};
    kcs_error err = {{0}};
    kcs_status status = upload_poisoned(p, &run, &err);
    if (status == KCS_OK)
        status = run_and_download(p, &run, kernel, &err);
    if (status == KCS_OK)
        hash_outputs(p, &run, result);
    if (status != KCS_OK) {
        fail_with(result, status == KCS_UNSUPPORTED ? KCS_OUTCOME_SKIP : KCS_OUTCOME_ERROR, err.message);
    } else if (judge_run(p, info, &run, kernel, options, result, &err) != KCS_OK) {
        fail_with(result, KCS_OUTCOME_ERROR, err.message);
    } else {
        if (options->keep_outputs)
            for (int o = 0; o < p->layout.output_count; o++) {
                result->actual[o] = run.actual[o];
                run.actual[o] = NULL;
            }
        if (result->outcome == KCS_OUTCOME_PASS && kcs_run_times(options, p->c))
            time_run(p, &run, kernel, options, result);
    }
    release_run(&run);
}
