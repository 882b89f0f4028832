/* agreement.c: the results of one run compared with each other, once every
 * worker has finished (docs/runner.md, "Identical devices must agree" and
 * "Stragglers"):
 *
 *   agreement    devices of one identity (backend, model, driver, runtime)
 *                that ran a case with one kernel must return the same output
 *                bits (the results' "output_hashes") where the kernel was
 *                proved deterministic (--determinism); the devices outside
 *                the majority are named. A fleet looks for exactly this:
 *                silent data corruption passes every bound. Where each
 *                differs is asked of a locator (the runner's rerun of the
 *                case on both devices, runner/rerun.c) before the lines are
 *                printed, since only hashes are kept here.
 *   odd_one_out  among three or more results of a case (any backends): the
 *                one that fails where the others pass (bits alone may differ
 *                between kernels, so they single out nothing here).
 *   stragglers   a device whose kernel median is slower than the median of
 *                its identical peers' by more than the measured noise (the
 *                largest relative interquartile range among them) and a
 *                minimum effect of 10%.
 *
 * It reads the results as written (JSON), so it holds nothing but hashes
 * and timings, whatever the size of the outputs.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"
#include "results_json.h"

/* The smallest slowdown called a straggler, whatever the noise. */
#define KCS_STRAGGLER_MINIMUM_EFFECT 0.10

static const char *text(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value ? value : "";
}

/* "backend | name | driver | runtime" of a device id: devices alike in all four must agree. */
static void device_identity(json_t *devices, const char *id, char *identity, size_t size)
{
    snprintf(identity, size, "%s", id);
    size_t index;
    json_t *device;
    json_array_foreach(devices, index, device) {
        if (strcmp(text(device, "id"), id) == 0) {
            snprintf(identity, size, "%s | %s | %s | %s", text(device, "backend"), text(device, "name"),
                     text(device, "driver_version"), text(device, "runtime_version"));
            return;
        }
    }
}

/* Every output's hash in one string ("name=hex;..."), in the order written; "" without hashes. */
static void hash_key(json_t *result, char *key, size_t size)
{
    key[0] = '\0';
    json_t *hashes = json_object_get(result, "output_hashes");
    const char *name;
    json_t *hash;
    size_t used = 0;
    json_object_foreach(hashes, name, hash) {
        int wrote = snprintf(key + used, size - used, "%s=%s;", name, json_string_value(hash));
        if (wrote < 0 || (size_t)wrote >= size - used)
            break;
        used += (size_t)wrote;
    }
}

/* The names of the outputs whose hashes differ between two results, "a, b". */
static void differing_outputs(json_t *a, json_t *b, char *names, size_t size)
{
    names[0] = '\0';
    json_t *hashes = json_object_get(a, "output_hashes");
    const char *name;
    json_t *hash;
    json_object_foreach(hashes, name, hash) {
        const char *other = json_string_value(json_object_get(json_object_get(b, "output_hashes"), name));
        if (!other || strcmp(other, json_string_value(hash)) != 0) {
            size_t used = strlen(names);
            snprintf(names + used, size - used, "%s%s", used ? ", " : "", name);
        }
    }
}

static int has_outputs(json_t *result)
{
    const char *status = text(result, "status");
    return (strcmp(status, "pass") == 0 || strcmp(status, "fail") == 0) &&
           json_object_size(json_object_get(result, "output_hashes")) > 0;
}

/* The results indexed once, so that each comparison looks only at its own
 * case's results: scanning every result for every result took seconds on
 * a run of a few thousand (2 GPUs: 6 s of a 25 s check). */
typedef struct {
    json_t *entries;
    json_t *by_case;    /* case name -> array of the indices of its results, in order */
    json_t *identities; /* device id -> its identity (device_identity) */
} result_index;

static void index_results(json_t *entries, json_t *devices, result_index *x)
{
    x->entries = entries;
    x->by_case = json_object();
    x->identities = json_object();
    size_t index;
    json_t *item;
    json_array_foreach(entries, index, item) {
        json_t *list = json_object_get(x->by_case, text(item, "case"));
        if (!list) {
            list = json_array();
            json_object_set_new(x->by_case, text(item, "case"), list);
        }
        json_array_append_new(list, json_integer((json_int_t)index));
    }
    json_array_foreach(devices, index, item) {
        char identity[1200];
        device_identity(devices, text(item, "id"), identity, sizeof identity);
        json_object_set_new(x->identities, text(item, "id"), json_string(identity));
    }
}

static void free_index(result_index *x)
{
    json_decref(x->by_case);
    json_decref(x->identities);
}

/* A device's identity from the index; the id itself for a device not listed. */
static const char *identity_of(const result_index *x, const char *id)
{
    const char *identity = json_string_value(json_object_get(x->identities, id));
    return identity ? identity : id;
}

/* The indices of the results of result's case. */
static json_t *same_case(const result_index *x, json_t *result)
{
    return json_object_get(x->by_case, text(result, "case"));
}

/* Results that belong together: same case, kernel and device identity. */
typedef struct {
    json_t *members[64];
    int count;
} result_group;

/* Collects into group the results of result's case and kernel on devices of its identity. */
static void gather(const result_index *x, size_t first, int timed, result_group *group)
{
    json_t *lead = json_array_get(x->entries, first);
    const char *identity = identity_of(x, text(lead, "device"));
    group->count = 0;
    size_t position;
    json_t *at;
    json_array_foreach(same_case(x, lead), position, at) {
        size_t index = (size_t)json_integer_value(at);
        json_t *result = json_array_get(x->entries, index);
        if (index < first || group->count == 64 || strcmp(text(result, "kernel"), text(lead, "kernel")) != 0)
            continue;
        if (timed ? !json_object_get(json_object_get(result, "timing"), "kernel") : !has_outputs(result))
            continue;
        if (strcmp(identity, identity_of(x, text(result, "device"))) == 0)
            group->members[group->count++] = result;
    }
}

static json_t *device_list(const result_group *group)
{
    json_t *list = json_array();
    for (int m = 0; m < group->count; m++)
        json_array_append_new(list, json_string(text(group->members[m], "device")));
    return list;
}

/* Why a group's kernel is not compared bit for bit, "" when it is. */
static void not_compared_reason(json_t *root, const result_group *group, char *reason, size_t size)
{
    reason[0] = '\0';
    if (!json_is_true(json_object_get(json_object_get(root, "options"), "determinism"))) {
        snprintf(reason, size, "not proved deterministic: the run was made without --determinism");
        return;
    }
    for (int m = 0; m < group->count; m++)
        if (strstr(text(group->members[m], "message"), "nondeterministic")) {
            snprintf(reason, size, "nondeterministic: its two runs on %s differed", text(group->members[m], "device"));
            return;
        }
}

/* The line under a DISAGREE line: the first differing element and whether
 * the rerun reproduced the deviation (runner/rerun.c), or why it is not known. */
static void print_located(json_t *entry)
{
    json_t *found = json_object_get(entry, "first_difference");
    const char *rerun = text(entry, "rerun");
    if (!rerun[0])
        return;
    if (strcmp(rerun, "not run") == 0) {
        printf("    first differing element not sought: %s\n", text(entry, "rerun_reason"));
        return;
    }
    const char *how = strcmp(rerun, "reproduced") == 0
                          ? "the rerun reproduced its bits"
                          : "intermittent: its rerun did not reproduce the bits of the run";
    if (!found) {
        printf("    first differing element not found: %s (%s)\n", text(entry, "first_difference_reason"), how);
        return;
    }
    char where[200] = "";
    json_t *coordinates = json_object_get(found, "coordinates");
    size_t index;
    json_t *coordinate;
    json_array_foreach(coordinates, index, coordinate) {
        size_t used = strlen(where);
        snprintf(where + used, sizeof where - used, "%s%lld", index ? ", " : " (", (long long)json_integer_value(coordinate));
    }
    if (coordinates)
        snprintf(where + strlen(where), sizeof where - strlen(where), ")");
    printf("    first differing element: %s[%lld]%s %s: %s has %s (%s), %s has %s (%s); %s\n", text(found, "output"),
           (long long)json_integer_value(json_object_get(found, "index")), where, text(found, "dtype"),
           text(entry, "peer"), text(found, "peer_value"), text(found, "peer_bits"), text(entry, "device"),
           text(found, "value"), text(found, "bits"), how);
}

/* Judges one group of identical devices' results; returns 1 on a disagreement. */
static int judge_agreement(json_t *root, const result_group *group, json_t *verdicts, int quiet,
                           const kcs_difference_locator *locator)
{
    json_t *lead = group->members[0];
    char identity[1200];
    device_identity(json_object_get(root, "devices"), text(lead, "device"), identity, sizeof identity);
    json_t *verdict = json_pack("{s:s, s:s, s:s, s:o}", "case", text(lead, "case"), "kernel", text(lead, "kernel"),
                                "identity", identity, "devices", device_list(group));
    char reason[300];
    not_compared_reason(root, group, reason, sizeof reason);
    if (reason[0]) {
        json_object_set_new(verdict, "verdict", json_string("not compared"));
        json_object_set_new(verdict, "reason", json_string(reason));
        json_array_append_new(verdicts, verdict);
        return 0;
    }
    /* the largest set of equal hashes is the majority when no other is as large */
    static char keys[64][2048];
    int sizes[64] = {0}, largest = 0, tied = 0;
    for (int m = 0; m < group->count; m++)
        hash_key(group->members[m], keys[m], sizeof keys[m]);
    for (int m = 0; m < group->count; m++)
        for (int n = 0; n < group->count; n++)
            sizes[m] += strcmp(keys[m], keys[n]) == 0;
    for (int m = 0; m < group->count; m++)
        largest = sizes[m] > sizes[largest] ? m : largest;
    for (int m = 0; m < group->count; m++)
        tied |= sizes[m] == sizes[largest] && strcmp(keys[m], keys[largest]) != 0;
    if (sizes[largest] == group->count) {
        json_object_set_new(verdict, "verdict", json_string("agree"));
        json_array_append_new(verdicts, verdict);
        return 0;
    }
    json_object_set_new(verdict, "verdict", json_string("disagree"));
    json_t *differing = json_array();
    for (int m = 0; m < group->count; m++) {
        if (!tied && strcmp(keys[m], keys[largest]) == 0)
            continue;
        json_t *peer = group->members[m == largest ? (largest + 1) % group->count : largest];
        char outputs[300];
        differing_outputs(group->members[m], peer, outputs, sizeof outputs);
        json_array_append_new(differing, json_pack("{s:s, s:s, s:s, s:b}", "device", text(group->members[m], "device"),
                                                   "outputs", outputs, "peer", text(peer, "device"), "majority",
                                                   !tied));
    }
    json_object_set_new(verdict, "differing", differing);
    if (tied)
        json_object_set_new(verdict, "reason", json_string("no majority: as many devices on each side"));
    if (locator)
        locator->locate(locator->context, root, verdict);
    size_t index;
    json_t *entry;
    json_array_foreach(differing, index, entry) {
        if (quiet)
            break;
        printf("DISAGREE %s %s: %s computed other bits than %s%s in %s (devices %s)\n", text(lead, "case"),
               text(lead, "kernel"), text(entry, "device"), tied ? "" : "the majority of its identical peers, e.g. ",
               text(entry, "peer"), text(entry, "outputs"), identity);
        print_located(entry);
    }
    json_array_append_new(verdicts, verdict);
    return 1;
}

static int compare_numbers(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double kernel_figure(json_t *result, const char *key)
{
    return json_number_value(json_object_get(json_object_get(json_object_get(result, "timing"), "kernel"), key));
}

/* Flags the members of a timed group slower than their peers' median by more than noise and minimum effect. */
static int judge_speed(const result_group *group, json_t *stragglers, int quiet)
{
    double noise = 0.0;
    for (int m = 0; m < group->count; m++) {
        double median = kernel_figure(group->members[m], "median_s");
        double spread = median > 0 ? (kernel_figure(group->members[m], "upper_quartile_s") -
                                      kernel_figure(group->members[m], "lower_quartile_s")) / median
                                   : 0.0;
        noise = spread > noise ? spread : noise;
    }
    double threshold = noise > KCS_STRAGGLER_MINIMUM_EFFECT ? noise : KCS_STRAGGLER_MINIMUM_EFFECT;
    int flagged = 0;
    for (int m = 0; m < group->count; m++) {
        double peers[64];
        int count = 0;
        json_t *names = json_array();
        for (int n = 0; n < group->count; n++)
            if (n != m) {
                peers[count++] = kernel_figure(group->members[n], "median_s");
                json_array_append_new(names, json_string(text(group->members[n], "device")));
            }
        qsort(peers, (size_t)count, sizeof *peers, compare_numbers);
        double peer_median = count % 2 ? peers[count / 2] : 0.5 * (peers[count / 2 - 1] + peers[count / 2]);
        double median = kernel_figure(group->members[m], "median_s");
        if (!(peer_median > 0) || median <= peer_median * (1.0 + threshold)) {
            json_decref(names);
            continue;
        }
        json_t *lead = group->members[m];
        json_array_append_new(stragglers,
                              json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:o}", "case", text(lead, "case"), "kernel",
                                        text(lead, "kernel"), "device", text(lead, "device"), "median_s", median,
                                        "peer_median_s", peer_median, "ratio", median / peer_median, "threshold",
                                        threshold, "peers", names));
        if (!quiet)
            printf("STRAGGLER %s %s: %s took %.4g ms, %.2fx the median of its identical peers (%.4g ms; noise and "
                   "minimum effect %.0f%%)\n", text(lead, "case"), text(lead, "kernel"), text(lead, "device"),
                   1e3 * median, median / peer_median, 1e3 * peer_median, 100 * threshold);
        flagged++;
    }
    return flagged;
}

/* Names the one result of a case (of three or more) that fails where the others pass. */
static void judge_case(const result_index *x, size_t first, json_t *odd, int quiet)
{
    json_t *lead = json_array_get(x->entries, first);
    json_t *members[256];
    int count = 0, failing = 0, odd_fail = -1;
    size_t position;
    json_t *at;
    json_array_foreach(same_case(x, lead), position, at) {
        size_t index = (size_t)json_integer_value(at);
        json_t *result = json_array_get(x->entries, index);
        if (index < first || count == 256 || !has_outputs(result))
            continue;
        if (strcmp(text(result, "status"), "fail") == 0) {
            failing++;
            odd_fail = count;
        }
        members[count++] = result;
    }
    if (count < 3)
        return;
    /* Only a failure isolates one result: across backends and kernels the
     * bits may differ legitimately (another summation order, another NaN
     * payload), so differing hashes alone would name a kernel in most cases. */
    json_t *deviant = failing == 1 ? members[odd_fail] : NULL;
    const char *why = "fails where every other result of the case passes";
    if (!deviant)
        return;
    json_array_append_new(odd, json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "case", text(lead, "case"), "backend",
                                         text(deviant, "backend"), "device", text(deviant, "device"), "kernel",
                                         text(deviant, "kernel"), "others", count - 1, "reason", why));
    if (!quiet)
        printf("ODD ONE OUT %s: %s %s %s (of %d results)\n", text(lead, "case"), text(deviant, "device"),
               text(deviant, "kernel"), why, count);
}

/* Whether an earlier entry has the same case (and, when kernel_too, kernel and device identity). */
static int seen_before(const result_index *x, size_t at, int kernel_too)
{
    json_t *lead = json_array_get(x->entries, at);
    const char *identity = identity_of(x, text(lead, "device"));
    size_t position;
    json_t *earlier;
    json_array_foreach(same_case(x, lead), position, earlier) {
        size_t index = (size_t)json_integer_value(earlier);
        if (index >= at)
            break;
        if (!kernel_too)
            return 1;
        json_t *result = json_array_get(x->entries, index);
        if (strcmp(text(result, "kernel"), text(lead, "kernel")) == 0 &&
            strcmp(identity, identity_of(x, text(result, "device"))) == 0)
            return 1;
    }
    return 0;
}

int kcs_results_compare_devices(kcs_results *results, int quiet, const kcs_difference_locator *locator)
{
    json_t *root = kcs_results_root(results);
    json_t *entries = json_object_get(root, "results"), *devices = json_object_get(root, "devices");
    json_t *agreement = json_array(), *odd = json_array(), *stragglers = json_array();
    int findings = 0;
    result_index x;
    index_results(entries, devices, &x);
    for (size_t i = 0; i < json_array_size(entries); i++) {
        json_t *result = json_array_get(entries, i);
        if (!json_string_value(json_object_get(result, "device")) || seen_before(&x, i, 1))
            continue;
        result_group group;
        gather(&x, i, 0, &group);
        if (group.count >= 2)
            findings += judge_agreement(root, &group, agreement, quiet, locator);
        gather(&x, i, 1, &group);
        if (group.count >= 2)
            judge_speed(&group, stragglers, quiet);
    }
    for (size_t i = 0; i < json_array_size(entries); i++)
        if (!seen_before(&x, i, 0))
            judge_case(&x, i, odd, quiet);
    free_index(&x);
    size_t agreeing = 0, compared = 0, index;
    json_t *verdict;
    json_array_foreach(agreement, index, verdict) {
        agreeing += strcmp(text(verdict, "verdict"), "agree") == 0;
        compared += strcmp(text(verdict, "verdict"), "not compared") != 0;
    }
    if (!quiet && json_array_size(agreement))
        printf("agreement of identical devices: %zu of %zu case-kernel groups agree bit for bit, %zu not compared "
               "(only kernels --determinism proved deterministic are)\n",
               agreeing, compared, json_array_size(agreement) - compared);
    json_object_set_new(root, "agreement", agreement);
    json_object_set_new(root, "odd_one_out", odd);
    json_object_set_new(root, "stragglers", stragglers);
    return findings;
}
