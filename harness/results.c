/* results.c: results as JSON through jansson, and as JUnit XML (see results.h). */
#include "results.h"
#include "speed.h"
#include "results_json.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

struct kcs_results {
    json_t *root;
    json_t *devices;
    json_t *entries;
    kcs_result_counts counts;
};

/* JSON has no NaN or infinity: those are written as the strings "nan", "inf", "-inf". */
static json_t *number(double value)
{
    if (isnan(value))
        return json_string("nan");
    if (isinf(value))
        return json_string(value > 0 ? "inf" : "-inf");
    return json_real(value);
}

static void read_cpu_model(char *model, size_t size)
{
    snprintf(model, size, "unknown");
    FILE *cpuinfo = fopen("/proc/cpuinfo", "r");
    if (!cpuinfo)
        return;
    char line[512];
    while (fgets(line, sizeof line, cpuinfo)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                snprintf(model, size, "%s", colon + 2);
                model[strcspn(model, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(cpuinfo);
}

/* What makes two runs' timings comparable besides the device: how this
 * binary was built and the options its kernels are built with at run time
 * (the comparison warns when they differ; docs/comparing.md). */
static json_t *comparability_json(void)
{
    const char *opencl_options = getenv("KCS_OPENCL_BUILD_OPTIONS");
    return json_pack("{s:s, s:s, s:s, s:s}", "compiler", __VERSION__, "cflags",
                     KCS_BUILD_OPTIMISE, "cuda_arch",
                     KCS_BUILD_CUDA_ARCH, "opencl_build_options", opencl_options ? opencl_options : "");
}

kcs_results *kcs_results_create(void)
{
    kcs_results *results = calloc(1, sizeof *results);
    if (!results)
        return NULL;
    struct utsname system;
    uname(&system);
    char hostname[256] = "unknown", cpu[256], created[64];
    gethostname(hostname, sizeof hostname - 1);
    read_cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    results->devices = json_array();
    results->entries = json_array();
    results->root = json_pack("{s:s, s:i, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:I}, s:O, s:O}",
                              "schema", "kcs-results", "version", KCS_RESULTS_SCHEMA_VERSION,
                              "created", created, "machine", "hostname", hostname, "os", system.sysname,
                              "kernel", system.release, "architecture", system.machine, "cpu", cpu,
                              "cores", (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "devices",
                              results->devices, "results", results->entries);
    if (!results->root) {
        kcs_results_free(results);
        return NULL;
    }
    json_object_set_new(results->root, "comparability", comparability_json());
    return results;
}

void kcs_results_free(kcs_results *results)
{
    if (!results)
        return;
    json_decref(results->root);
    json_decref(results->devices);
    json_decref(results->entries);
    free(results);
}

void kcs_results_set_run(kcs_results *results, const char *revision, int argc, char **argv,
                         const kcs_run_options *options)
{
    json_t *command = json_array();
    for (int i = 0; i < argc; i++)
        json_array_append_new(command, json_string(argv[i]));
    json_object_set_new(results->root, "kcs",
                        json_pack("{s:s, s:s}", "revision", revision, "compiler", "gcc " __VERSION__));
    json_object_set_new(results->root, "command", command);
    json_object_set_new(results->root, "options",
                        json_pack("{s:b, s:b, s:i, s:o, s:i, s:o}", "benchmark", options->benchmark,
                                  "determinism", options->determinism,
                                  "min_repeats", options->min_repeats, "min_seconds",
                                  number(options->min_seconds), "max_repeats", options->max_repeats,
                                  "warm_up_seconds", number(options->warm_up_seconds)));
    json_object_set_new(json_object_get(results->root, "options"), "one_by_one", json_boolean(options->one_by_one));
    /* A power-limited GPU times the same kernel differently either way (docs/runner.md, "Back to back"). */
    json_object_set_new(json_object_get(results->root, "comparability"), "kernel_repeats",
                        json_string(options->one_by_one ? "one at a time"
                                                        : "back to back where the backend can queue them"));
}

static json_t *text_json(const char *text); /* below, with the UTF-8 checks */

/* A device's ceilings: each rate measured, the method, and the rates this
 * run did not ask for (docs/results.md: "not measured in this run", which
 * the report shows as such rather than as a rate the device lacks). */
static json_t *ceilings_json(const kcs_ceilings *c)
{
    if (!c)
        return json_null();
    json_t *object = json_object(), *not_asked = json_array();
    for (const kcs_ceiling_rate *rate = kcs_ceiling_rates; rate->key; rate++) {
        if (kcs_ceiling_rate_value(c, rate) > 0)
            json_object_set_new(object, rate->key, number(kcs_ceiling_rate_value(c, rate)));
        else if (kcs_ceiling_rate_not_measured_in_run(c, rate))
            json_array_append_new(not_asked, json_string(rate->key));
    }
    json_object_set_new(object, "method", text_json(c->method)); /* may quote a build log */
    if (json_array_size(not_asked) > 0)
        json_object_set_new(object, "not_measured_in_this_run", not_asked);
    else
        json_decref(not_asked);
    return object;
}

static json_t *device_json(const char *id, const char *backend, int index, const kcs_device_info *info,
                           const kcs_ceilings *ceilings)
{
    json_t *device =
        json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "id", id, "backend", backend,
                  "index", index, "name", info->name, "platform", info->platform, "vendor",
                  info->vendor, "driver_version", info->driver_version, "runtime_version",
                  info->runtime_version, "details", info->details, "memory_bytes",
                  (json_int_t)info->memory_bytes);
    json_object_set_new(device, "shares_host_cores", json_boolean(info->shares_host_cores));
    json_object_set_new(device, "ceilings", ceilings_json(ceilings));
    return device;
}

void kcs_results_add_device(kcs_results *results, const char *id, const char *backend, int index,
                            const kcs_device_info *info, const kcs_ceilings *ceilings)
{
    json_array_append_new(results->devices, device_json(id, backend, index, info, ceilings));
}

static json_t *timing_json(const kcs_timing *t)
{
    json_t *samples = json_array();
    for (int i = 0; i < t->kept; i++)
        json_array_append_new(samples, number(t->samples[i]));
    json_t *timing = json_pack("{s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o}", "repeats", t->repeats,
                               "rotated_copies", t->rotated_copies > 0 ? t->rotated_copies : 1, "median_s",
                               number(t->median), "lower_quartile_s", number(t->lower_quartile),
                               "upper_quartile_s", number(t->upper_quartile), "min_s", number(t->minimum),
                               "max_s", number(t->maximum), "samples_s", samples);
    if (t->pace_median > 0.0)
        json_object_set_new(timing, "pace_median_s", number(t->pace_median));
    if (t->busy_fraction > 0.0)
        json_object_set_new(timing, "busy_fraction", number(t->busy_fraction));
    return timing;
}

/* What the case is: op, dtype, sizes, parameters, tags. */
static void add_case_fields(json_t *item, const kcs_case *c)
{
    json_t *sizes = json_object(), *params = json_object(), *tags = json_array();
    for (int i = 0; i < c->size_count; i++)
        json_object_set_new(sizes, c->sizes[i].name, json_integer((json_int_t)c->sizes[i].value));
    for (int i = 0; i < c->param_count; i++)
        json_object_set_new(params, c->params[i].name, json_string(c->params[i].text));
    for (int t = 0; t < kcs_tag_count; t++)
        if (c->tags & (1u << t))
            json_array_append_new(tags, json_string(kcs_tag_names[t]));
    json_object_set_new(item, "op", json_string(c->op));
    json_object_set_new(item, "dtype", json_string(kcs_dtype_name(c->dtype)));
    json_object_set_new(item, "sizes", sizes);
    json_object_set_new(item, "params", params);
    json_object_set_new(item, "tags", tags);
    if (c->bound_tight[0])
        json_object_set_new(item, "bound_tight", text_json(c->bound_tight));
}

/* How much of its bound each checked element used, in powers of two (check.h). */
static json_t *fraction_histogram_json(const kcs_fraction_histogram *histogram)
{
    json_t *upper = json_array(), *counts = json_array();
    for (int i = 0; i < KCS_FRACTION_BINS; i++) {
        json_array_append_new(upper, json_integer(KCS_FRACTION_LOWEST_LOG2 + i));
        json_array_append_new(counts, json_integer((json_int_t)histogram->counts[i]));
    }
    return json_pack("{s:o, s:o, s:I}", "log2_upper", upper, "counts", counts, "above",
                     (json_int_t)histogram->above);
}

static json_t *accuracy_json(const kcs_check_result *check)
{
    json_t *accuracy = json_pack("{s:I, s:I, s:I, s:o}", "checked", (json_int_t)check->checked, "failures",
                                 (json_int_t)check->failures, "unwritten", (json_int_t)check->unwritten,
                                 "fraction_of_bound", number(check->fraction));
    if (check->worst_output >= 0)
        json_object_set_new(accuracy, "worst",
                            json_pack("{s:i, s:I, s:o, s:o, s:o, s:o}", "output", check->worst_output, "index",
                                      (json_int_t)check->worst_index, "expected", number(check->worst_expected),
                                      "actual", number(check->worst_actual), "error", number(check->worst_error),
                                      "bound", number(check->worst_bound)));
    json_object_set_new(accuracy, "fraction_histogram", fraction_histogram_json(&check->histogram));
    return accuracy;
}

/* The ceiling the kernel is judged against and how close it came (speed.h). */
static json_t *ceiling_json(const kcs_speed *speed)
{
    json_t *ceiling = json_pack("{s:s, s:s, s:s, s:o}", "kind", speed->name, "ceiling_key", speed->ceiling_key,
                                "measure", speed->measure, "achieved_per_s", number(speed->achieved));
    if (speed->ceiling > 0) {
        json_object_set_new(ceiling, "ceiling_per_s", number(speed->ceiling));
        json_object_set_new(ceiling, "fraction", number(speed->fraction));
    }
    return ceiling;
}

/* Adds the rates a timed kernel reached to its timing. */
static void add_rates(json_t *timing, const kcs_result_entry *entry)
{
    const kcs_run_result *run = entry->run;
    double bytes = entry->op->bytes(entry->args), flops = entry->op->flops(entry->args);
    const kcs_ceilings *c = entry->ceilings;
    json_object_set_new(timing, "kernel_bytes_per_s", number(bytes / run->kernel.median));
    json_object_set_new(timing, "kernel_flops_per_s", number(flops / run->kernel.median));
    kcs_speed speed = kcs_kernel_speed(entry->op, entry->args, c, run->kernel.median);
    json_object_set_new(timing, "ceiling", ceiling_json(&speed));
    if (run->end_to_end.median > 0)
        json_object_set_new(timing, "end_to_end_bytes_per_s", number(bytes / run->end_to_end.median));
    if (c && c->host_to_device_bytes_per_s > 0 && run->end_to_end.median > 0)
        json_object_set_new(timing, "end_to_end_fraction_of_host_to_device",
                            number(bytes / run->end_to_end.median / c->host_to_device_bytes_per_s));
}

static json_t *run_timing_json(const kcs_result_entry *entry)
{
    const kcs_run_result *run = entry->run;
    json_t *kernel = timing_json(&run->kernel);
    /* How the kernel's repeats were timed (docs/runner.md, "Back to back"). */
    json_object_set_new(kernel, "back_to_back", json_boolean(run->kernel.back_to_back));
    if (run->kernel.one_by_one_because[0])
        json_object_set_new(kernel, "one_by_one_because", text_json(run->kernel.one_by_one_because));
    json_t *timing = json_pack("{s:o, s:o}", "kernel", kernel, "end_to_end", timing_json(&run->end_to_end));
    if (entry->op && entry->args && run->kernel.median > 0)
        add_rates(timing, entry);
    return timing;
}

/* The expectation that listed a result, and whether it was met. */
static json_t *expected_json(const kcs_verdict *verdict)
{
    const kcs_expectation *e = verdict->line;
    char where[300];
    snprintf(where, sizeof where, "%s:%d", e->file, e->line);
    return json_pack("{s:s, s:s, s:s, s:b, s:b}", "outcome", e->outcome, "reason", e->reason, "where", where, "met",
                     verdict->kind == KCS_VERDICT_MET, "unexpected_pass", verdict->kind == KCS_VERDICT_UNEXPECTED_PASS);
}

/* The status a result is written with: an unexpected pass is a failure. */
static const char *written_status(const kcs_result_entry *entry)
{
    if (entry->verdict.kind == KCS_VERDICT_UNEXPECTED_PASS)
        return "fail";
    return kcs_outcome_name(entry->run->outcome);
}

/* The message a result is written with: an unexpected pass says which line expected what. */
static void written_message(const kcs_result_entry *entry, char *message, size_t size)
{
    const kcs_expectation *e = entry->verdict.line;
    if (entry->verdict.kind == KCS_VERDICT_UNEXPECTED_PASS)
        snprintf(message, size, "unexpected pass: %s:%d expects %s (%s); remove or correct the expectation",
                 e->file, e->line, e->outcome, e->reason);
    else
        snprintf(message, size, "%s", entry->run->message);
}

/* Length of the valid UTF-8 sequence at text, or 0 when it is not one. */
static size_t utf8_sequence(const unsigned char *text)
{
    if (text[0] < 0x80)
        return 1;
    size_t length = text[0] >= 0xf0 && text[0] <= 0xf4 ? 4 : text[0] >= 0xe0 ? 3 : text[0] >= 0xc2 ? 2 : 0;
    if (text[0] >= 0xf5)
        length = 0;
    for (size_t i = 1; i < length; i++)
        if ((text[i] & 0xc0) != 0x80)
            return 0;
    if ((length == 3 && text[0] == 0xe0 && text[1] < 0xa0) || (length == 3 && text[0] == 0xed && text[1] >= 0xa0) ||
        (length == 4 && text[0] == 0xf0 && text[1] < 0x90) || (length == 4 && text[0] == 0xf4 && text[1] >= 0x90))
        return 0; /* overlong, a surrogate, or past U+10FFFF */
    return length;
}

/* A JSON string of text (NULL: null) with every byte that is not valid UTF-8
 * replaced by U+FFFD, so that a case name or message with such bytes is
 * still recorded (jansson refuses invalid UTF-8) and visibly damaged. */
static json_t *text_json(const char *text)
{
    if (!text)
        return json_null();
    size_t length = strlen(text);
    char *clean = malloc(3 * length + 1), *out = clean;
    if (!clean)
        return json_string("(out of memory)");
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t n = utf8_sequence(p);
        if (n == 0) {
            memcpy(out, "\xef\xbf\xbd", 3);
            out += 3;
            p++;
        } else {
            memcpy(out, p, n);
            out += n;
            p += n;
        }
    }
    *out = '\0';
    json_t *string = json_string(clean);
    free(clean);
    return string;
}

/* "saved": where the result's data went and the command that replays it. */
static json_t *saved_json(const kcs_saved_paths *saved)
{
    json_t *item = json_object();
    json_object_set_new(item, "case_folder", text_json(saved->case_folder));
    json_object_set_new(item, "outputs_folder", text_json(saved->outputs_folder));
    json_object_set_new(item, "replay", text_json(saved->replay));
    return item;
}

/* What the op's arithmetic models say of a failed output (docs/results.md,
 * "explanation"): the verdict line, then every model tried, those that fit first. */
static json_t *explanation_json(const kcs_explanation *x)
{
    json_t *models = json_array();
    for (int f = 0; f < x->tried; f++) {
        const kcs_model_fit *fit = &x->fits[f];
        json_array_append_new(models, json_pack("{s:s, s:s, s:b, s:o, s:I}", "model", fit->model->name,
                                                "description", fit->model->description, "fits", fit->fits,
                                                "fraction", number(fit->fraction), "outside",
                                                (json_int_t)fit->outside));
    }
    const char *verdict = x->fitting == 0 ? "unexplained" : x->fitting == 1 ? "consistent" : "several";
    return json_pack("{s:o, s:s, s:i, s:I, s:b, s:o}", "text", text_json(x->text), "verdict",
                     strncmp(x->text, "not explained", 13) == 0 ? "not explained" : verdict, "models_tried", x->tried, "elements",
                     (json_int_t)x->elements, "indistinguishable", x->indistinguishable, "models", models);
}

static json_t *entry_json(const kcs_result_entry *entry)
{
    const kcs_run_result *run = entry->run;
    char message[1024];
    written_message(entry, message, sizeof message);
    json_t *item = json_pack("{s:o, s:o, s:i, s:s, s:o}", "case", text_json(entry->case_name), "file",
                             text_json(entry->file ? entry->file : ""), "line", entry->line, "status",
                             written_status(entry), "message", text_json(message));
    json_object_set_new(item, "backend", text_json(entry->backend));
    json_object_set_new(item, "device", text_json(entry->device_id));
    json_object_set_new(item, "kernel", text_json(entry->kernel));
    if (entry->kernel_library)
        json_object_set_new(item, "kernel_library", text_json(entry->kernel_library));
    if (entry->c)
        add_case_fields(item, entry->c);
    if (entry->expected_from)
        json_object_set_new(item, "expected_from", text_json(entry->expected_from));
    if (entry->op && entry->args) {
        json_object_set_new(item, "bytes", number(entry->op->bytes(entry->args)));
        json_object_set_new(item, "flops", number(entry->op->flops(entry->args)));
    }
    if (run->outcome == KCS_OUTCOME_PASS || run->outcome == KCS_OUTCOME_FAIL)
        json_object_set_new(item, "accuracy", accuracy_json(&run->check));
    if ((run->outcome == KCS_OUTCOME_PASS || run->outcome == KCS_OUTCOME_FAIL) && run->hashed_outputs) {
        json_t *hashes = json_object();
        for (int o = 0; o < run->hashed_outputs; o++)
            json_object_set_new(hashes, run->output_names[o], json_string(run->output_hashes[o]));
        json_object_set_new(item, "output_hashes", hashes);
    }
    if (run->outcome == KCS_OUTCOME_FAIL && run->explanation.text[0])
        json_object_set_new(item, "explanation", explanation_json(&run->explanation));
    if (run->timed)
        json_object_set_new(item, "timing", run_timing_json(entry));
    if (entry->verdict.line)
        json_object_set_new(item, "expected", expected_json(&entry->verdict));
    if (entry->saved)
        json_object_set_new(item, "saved", saved_json(entry->saved));
    return item;
}

/* Counts a result by its written status and its verdict (see kcs_result_counts). */
static void count(kcs_result_counts *counts, const char *status, kcs_verdict_kind verdict)
{
    if (verdict == KCS_VERDICT_MET) {
        counts->expected++;
        status = strcmp(status, "skip") == 0 ? "skip" : "pass";
    } else if (verdict == KCS_VERDICT_UNEXPECTED_PASS) {
        counts->unexpected_passes++;
    }
    if (strcmp(status, "pass") == 0)
        counts->passed++;
    else if (strcmp(status, "fail") == 0)
        counts->failed++;
    else if (strcmp(status, "skip") == 0)
        counts->skipped++;
    else
        counts->errors++;
}

/* Whether a string member of two objects is the same (both null or absent counts as the same). */
static int same_text(json_t *a, json_t *b, const char *key)
{
    const char *x = json_string_value(json_object_get(a, key)), *y = json_string_value(json_object_get(b, key));
    return x && y ? strcmp(x, y) == 0 : x == y;
}

/* Whether item belongs to no device and the results hold one like it
 * already: the same named case and backend, no device, no kernel. */
static int repeats_a_case_result(const kcs_results *results, json_t *item)
{
    const char *name = json_string_value(json_object_get(item, "case"));
    if (!name || !name[0] || json_string_value(json_object_get(item, "device")) ||
        json_string_value(json_object_get(item, "kernel")))
        return 0;
    size_t index;
    json_t *known;
    json_array_foreach(results->entries, index, known) {
        if (!json_string_value(json_object_get(known, "device")) && !json_string_value(json_object_get(known, "kernel")) &&
            same_text(known, item, "case") && same_text(known, item, "backend"))
            return 1;
    }
    return 0;
}

/* Adds an entry's JSON (taking the reference) and counts it. A result that
 * belongs to no device is kept once per case and backend: each lane of a
 * run meets the case's own skip or error (a case left out, one that cannot
 * be prepared, a hang while preparing it), and a file with the same case,
 * backend, kernel and device twice is one its readers refuse. */
static void add_item(kcs_results *results, json_t *item, kcs_verdict_kind verdict)
{
    if (repeats_a_case_result(results, item)) {
        json_decref(item);
        return;
    }
    const char *status = json_string_value(json_object_get(item, "status"));
    count(&results->counts, status ? status : "error", verdict);
    json_array_append_new(results->entries, item);
}

void kcs_results_add(kcs_results *results, const kcs_result_entry *entry)
{
    add_item(results, entry_json(entry), entry->verdict.kind);
}

char *kcs_result_entry_serialize(const kcs_result_entry *entry)
{
    json_t *item = entry_json(entry);
    json_object_set_new(item, "verdict", json_string(kcs_verdict_name(entry->verdict.kind)));
    char *text = json_dumps(item, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(item);
    return text;
}

char *kcs_device_serialize(const char *id, const char *backend, int index, const kcs_device_info *info,
                           const kcs_ceilings *ceilings)
{
    json_t *device = device_json(id, backend, index, info, ceilings);
    char *text = json_dumps(device, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(device);
    return text;
}

/* Parses one serialized object, or names the problem. */
static json_t *parse_serialized(const char *text, kcs_error *err)
{
    json_error_t error;
    json_t *item = json_loads(text, 0, &error);
    if (!item || !json_is_object(item)) {
        json_decref(item);
        kcs_fail(err, KCS_ERROR, "malformed result from the worker: %s", item ? "not an object" : error.text);
        return NULL;
    }
    return item;
}

/* Takes the verdict a serialized result carries off it. */
static kcs_verdict_kind take_verdict(json_t *item)
{
    kcs_verdict_kind verdict = kcs_verdict_from_name(json_string_value(json_object_get(item, "verdict")));
    json_object_del(item, "verdict");
    return verdict;
}

kcs_status kcs_results_add_serialized(kcs_results *results, const char *text, kcs_error *err)
{
    json_t *item = parse_serialized(text, err);
    if (!item)
        return KCS_ERROR;
    kcs_verdict_kind verdict = take_verdict(item);
    add_item(results, item, verdict);
    return KCS_OK;
}

kcs_status kcs_results_add_serialized_error(kcs_results *results, const char *identity, const char *message,
                                           const kcs_saved_paths *saved, kcs_verdict_kind *verdict,
                                           kcs_error *err)
{
    json_t *item = parse_serialized(identity, err);
    if (!item)
        return KCS_ERROR;
    *verdict = take_verdict(item);
    json_object_set_new(item, "status", json_string("error"));
    json_object_set_new(item, "message", json_string(message));
    json_object_del(item, "accuracy");
    json_object_del(item, "timing");
    if (saved)
        json_object_set_new(item, "saved", saved_json(saved));
    add_item(results, item, *verdict);
    return KCS_OK;
}

kcs_status kcs_results_add_serialized_device(kcs_results *results, const char *text, kcs_error *err)
{
    json_t *device = parse_serialized(text, err);
    if (!device)
        return KCS_ERROR;
    const char *id = json_string_value(json_object_get(device, "id"));
    size_t index;
    json_t *known;
    json_array_foreach(results->devices, index, known) {
        const char *known_id = json_string_value(json_object_get(known, "id"));
        if (id && known_id && strcmp(id, known_id) == 0) { /* a restarted worker reopens its devices */
            json_decref(device);
            return KCS_OK;
        }
    }
    json_array_append_new(results->devices, device);
    return KCS_OK;
}

/* An entry with its sort key. */
typedef struct {
    long case_position, device_position;
    size_t arrival;
    json_t *item;
} sortable_entry;

static int compare_sortable(const void *a, const void *b)
{
    const sortable_entry *x = a, *y = b;
    if (x->case_position != y->case_position)
        return x->case_position < y->case_position ? -1 : 1;
    if (x->device_position != y->device_position)
        return x->device_position < y->device_position ? -1 : 1;
    return (x->arrival > y->arrival) - (x->arrival < y->arrival);
}

void kcs_results_sort(kcs_results *results, const kcs_case_list *cases)
{
    size_t count = json_array_size(results->entries);
    sortable_entry *order = calloc(count ? count : 1, sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < count; i++) {
        json_t *item = json_array_get(results->entries, i);
        const char *name = json_string_value(json_object_get(item, "case"));
        const char *device = json_string_value(json_object_get(item, "device"));
        order[i] = (sortable_entry){-1, -1, i, json_incref(item)};
        for (size_t c = 0; name && c < cases->count; c++)
            if (strcmp(cases->cases[c].name, name) == 0) {
                order[i].case_position = (long)c;
                break;
            }
        for (size_t d = 0; device && d < json_array_size(results->devices); d++)
            if (strcmp(device, json_string_value(json_object_get(json_array_get(results->devices, d), "id"))) == 0) {
                order[i].device_position = (long)d;
                break;
            }
    }
    qsort(order, count, sizeof *order, compare_sortable);
    json_array_clear(results->entries);
    for (size_t i = 0; i < count; i++)
        json_array_append_new(results->entries, order[i].item);
    free(order);
}

json_t *kcs_results_root(kcs_results *results)
{
    return results->root;
}

kcs_result_counts kcs_results_counts(const kcs_results *results)
{
    return results->counts;
}

kcs_status kcs_results_write_json(const kcs_results *results, const char *path, kcs_error *err)
{
    json_object_set_new(results->root, "summary",
                        json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "passed", results->counts.passed,
                                  "failed", results->counts.failed, "skipped", results->counts.skipped, "errors",
                                  results->counts.errors, "expected", results->counts.expected,
                                  "unexpected_passes", results->counts.unexpected_passes));
    if (json_dump_file(results->root, path, JSON_INDENT(1) | JSON_ENSURE_ASCII) != 0)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write the results file: %s", path, strerror(errno));
    return KCS_OK;
}

/* Writes text with the five XML special characters escaped. */
static void write_xml_text(FILE *out, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fputc(' ', out); /* control characters are not allowed in XML 1.0 */
            else
                fputc(*p, out);
        }
    }
}

static const char *text_of(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value ? value : "";
}

kcs_status kcs_results_write_junit(const kcs_results *results, const char *path, kcs_error *err)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write the JUnit file: %s", path, strerror(errno));
    const kcs_result_counts *counts = &results->counts;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<testsuites>\n<testsuite name=\"kcs\" tests=\"%zu\" failures=\"%d\" errors=\"%d\" skipped=\"%d\">\n",
            json_array_size(results->entries), counts->failed, counts->errors, counts->skipped);
    size_t index;
    json_t *item;
    json_array_foreach(results->entries, index, item) {
        const char *status = text_of(item, "status");
        json_t *expected = json_object_get(item, "expected");
        if (expected && json_is_true(json_object_get(expected, "met")))
            status = "pass"; /* an expected failure is no failure for CI */
        fputs("  <testcase classname=\"", out);
        const char *backend = text_of(item, "backend"), *device = text_of(item, "device");
        write_xml_text(out, *backend ? backend : "kcs");
        if (*device) {
            fputc('.', out);
            write_xml_text(out, device);
            fputc('.', out);
            write_xml_text(out, text_of(item, "kernel"));
        }
        fputs("\" name=\"", out);
        write_xml_text(out, text_of(item, "case"));
        fputs("\"", out);
        json_t *timing = json_object_get(item, "timing");
        if (timing)
            fprintf(out, " time=\"%.9f\"",
                    json_real_value(json_object_get(json_object_get(timing, "kernel"), "median_s")));
        const char *element = strcmp(status, "fail") == 0    ? "failure"
                              : strcmp(status, "error") == 0 ? "error"
                              : strcmp(status, "skip") == 0  ? "skipped"
                                                             : NULL;
        if (!element) {
            fputs("/>\n", out);
            continue;
        }
        fprintf(out, ">\n    <%s message=\"", element);
        write_xml_text(out, text_of(item, "message"));
        fprintf(out, "\"/>\n  </testcase>\n");
    }
    fputs("</testsuite>\n</testsuites>\n", out);
    if (fclose(out) != 0)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write the JUnit file: %s", path, strerror(errno));
    return KCS_OK;
}

size_t kcs_results_checked(const kcs_results *results, const char *backend)
{
    size_t checked = 0, index;
    json_t *item;
    json_array_foreach(results->entries, index, item) {
        const char *status = json_string_value(json_object_get(item, "status"));
        const char *from = json_string_value(json_object_get(item, "backend"));
        if (!status || (strcmp(status, "pass") != 0 && strcmp(status, "fail") != 0))
            continue;
        /* a pass that compared no element (an empty output) checked no value */
        json_t *compared = json_object_get(json_object_get(item, "accuracy"), "checked");
        if (strcmp(status, "pass") == 0 && json_is_integer(compared) && json_integer_value(compared) == 0)
            continue;
        if (!backend || (from && strcmp(from, backend) == 0))
            checked++;
    }
    return checked;
}

void kcs_results_print_reasons(const kcs_results *results, FILE *out, size_t limit)
{
    json_t *seen = json_object(); /* "status: message" -> count */
    size_t index;
    json_t *item;
    json_array_foreach(results->entries, index, item) {
        const char *status = json_string_value(json_object_get(item, "status"));
        const char *message = json_string_value(json_object_get(item, "message"));
        json_t *compared = json_object_get(json_object_get(item, "accuracy"), "checked");
        char key[1200];
        if (status && strcmp(status, "pass") == 0 && json_is_integer(compared) && json_integer_value(compared) == 0)
            snprintf(key, sizeof key, "pass: no output element to compare (the case's outputs are empty)");
        else
            snprintf(key, sizeof key, "%s: %s", status ? status : "?", message && message[0] ? message : "(no message)");
        json_object_set_new(seen, key, json_integer(json_integer_value(json_object_get(seen, key)) + 1));
    }
    for (size_t printed = 0; json_object_size(seen) > 0; printed++) {
        const char *most = NULL, *key;
        json_t *count;
        json_object_foreach(seen, key, count)
            if (!most || json_integer_value(count) > json_integer_value(json_object_get(seen, most)))
                most = key;
        if (printed == limit) {
            fprintf(out, "    ... and %zu more kinds of result\n", json_object_size(seen));
            break;
        }
        fprintf(out, "    %lld %s\n", (long long)json_integer_value(json_object_get(seen, most)), most);
        json_object_del(seen, most);
    }
    json_decref(seen);
}

int kcs_results_used_expectation(const kcs_results *results, const char *file, int line)
{
    char where[300];
    snprintf(where, sizeof where, "%s:%d", file, line);
    size_t index;
    json_t *item;
    json_array_foreach(results->entries, index, item) {
        const char *listed = json_string_value(json_object_get(json_object_get(item, "expected"), "where"));
        if (listed && strcmp(listed, where) == 0)
            return 1;
    }
    return 0;
}
