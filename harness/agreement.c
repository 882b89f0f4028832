/* agreement.c: the results of one run compared with each other, once every
 * worker has finished, by the one rule of agreement.h (docs/runner.md,
 * "Peers: one rule", "Identical devices must agree", "Stragglers"):
 *
 *   agreement    peers (devices of one identity: backend, name, platform,
 *                driver, runtime) that ran a case with one kernel must
 *                return the same output bits (the results' "output_hashes")
 *                where the kernel was proved deterministic (--determinism);
 *                the devices outside the majority are named. A fleet looks
 *                for exactly this: silent data corruption passes every
 *                bound. Where each differs is asked of a locator (the
 *                runner's rerun of the case on both devices, runner/rerun.c)
 *                before the lines are printed, since only hashes are kept here.
 *   odd_one_out  among three or more results of a case (any backends): the
 *                one that fails where the others pass (bits alone may differ
 *                between kernels, so they single out nothing here).
 *   speed        every group of two or more peers timed on a case and
 *                kernel: each device's kernel median against the median of
 *                its peers' medians; "stragglers" lists those slower by more
 *                than the group's noise and the minimum effect.
 *
 * The rule itself (kcs_judge_speed, kcs_judge_agreement) comes first, on
 * plain data: report/kcs_peers.py is its Python twin, and both are held to
 * tests/peers-fixture/. The rest gathers a run's results into it and writes
 * what it says. It reads the results as written (JSON), so it holds nothing
 * but hashes and timings, whatever the size of the outputs.
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agreement.h"
#include "results.h"
#include "results_json.h"

static const char *text(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value ? value : "";
}

void kcs_peer_identity(json_t *device, char *identity, size_t size)
{
    snprintf(identity, size, "%s | %s | %s | %s | %s", text(device, "backend"), text(device, "name"),
             text(device, "platform"), text(device, "driver_version"), text(device, "runtime_version"));
}

/* ---- the rule (docs/runner.md, "Peers: one rule") ------------------------ */

static int is_timed(const kcs_peer_timing *timing)
{
    return isfinite(timing->median_s) && timing->median_s > 0;
}

/* The interquartile range relative to the median; 0 where a quartile is not a number. */
static double relative_spread(const kcs_peer_timing *timing)
{
    if (!isfinite(timing->lower_quartile_s) || !isfinite(timing->upper_quartile_s))
        return 0.0;
    return (timing->upper_quartile_s - timing->lower_quartile_s) / timing->median_s;
}

static int compare_numbers(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of count (>= 1) numbers, which it sorts. */
static double median_of(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, compare_numbers);
    return count % 2 ? values[count / 2] : 0.5 * (values[count / 2 - 1] + values[count / 2]);
}

void kcs_judge_speed(const kcs_peer_timing *timings, int count, kcs_speed_verdict *verdicts)
{
    for (int m = 0; m < count; m++) {
        kcs_speed_verdict *verdict = &verdicts[m];
        memset(verdict, 0, sizeof *verdict);
        if (!is_timed(&timings[m]))
            continue;
        /* The noise is the group's, the judged device's own timing included:
         * one threshold for every member. */
        double noise = 0.0, *peers = malloc(sizeof *peers * (size_t)count);
        int others = 0;
        for (int n = 0; peers && n < count; n++) {
            if (!is_timed(&timings[n]) || strcmp(timings[n].identity, timings[m].identity) != 0)
                continue;
            double spread = relative_spread(&timings[n]);
            noise = spread > noise ? spread : noise;
            if (n != m)
                peers[others++] = timings[n].median_s;
        }
        if (others > 0) {
            verdict->peers = others;
            verdict->threshold = noise > KCS_STRAGGLER_MINIMUM_EFFECT ? noise : KCS_STRAGGLER_MINIMUM_EFFECT;
            verdict->peer_median_s = median_of(peers, others);
            verdict->ratio = timings[m].median_s / verdict->peer_median_s;
            verdict->straggler = timings[m].median_s > verdict->peer_median_s * (1.0 + verdict->threshold);
        }
        free(peers); /* out of memory: not judged, as a device without peers */
    }
}

/* How many answers of group g (from index g on) equal answers[m]'s. */
static int holders(const kcs_peer_answer *answers, const kcs_agreement_verdict *verdicts, int count, int g, int m)
{
    int found = 0;
    for (int n = g; n < count; n++)
        found += verdicts[n].group == g && strcmp(answers[n].answer, answers[m].answer) == 0;
    return found;
}

/* Judges the group whose first answer is g, once every answer knows its group. */
static void judge_group(const kcs_peer_answer *answers, kcs_agreement_verdict *verdicts, int count, int g)
{
    int members = 0, nondeterministic = -1, unproved = -1, all_equal = 1, majority = -1;
    for (int m = g; m < count; m++) {
        if (verdicts[m].group != g)
            continue;
        members++;
        if (answers[m].determinism == KCS_NONDETERMINISTIC && nondeterministic < 0)
            nondeterministic = m;
        if (answers[m].determinism == KCS_NOT_PROVED && unproved < 0)
            unproved = m;
        all_equal &= strcmp(answers[m].answer, answers[g].answer) == 0;
    }
    for (int m = g; m < count && majority < 0; m++)
        if (verdicts[m].group == g && 2 * holders(answers, verdicts, count, g, m) > members)
            majority = m;
    kcs_agreement_kind kind = members < 2                              ? KCS_ALONE
                              : nondeterministic >= 0 || unproved >= 0 ? KCS_NOT_COMPARED
                              : all_equal                              ? KCS_AGREE
                                                                       : KCS_DISAGREE;
    for (int m = g; m < count; m++) {
        if (verdicts[m].group != g)
            continue;
        verdicts[m].members = members;
        verdicts[m].verdict = kind;
        verdicts[m].because = kind == KCS_NOT_COMPARED ? (nondeterministic >= 0 ? nondeterministic : unproved) : -1;
        if (kind == KCS_DISAGREE) {
            verdicts[m].decided = majority >= 0;
            verdicts[m].differs = majority < 0 || strcmp(answers[m].answer, answers[majority].answer) != 0;
        }
    }
}

void kcs_judge_agreement(const kcs_peer_answer *answers, int count, kcs_agreement_verdict *verdicts)
{
    for (int m = 0; m < count; m++) {
        memset(&verdicts[m], 0, sizeof verdicts[m]);
        verdicts[m].group = m;
        verdicts[m].because = -1;
        for (int n = 0; n < m; n++)
            if (strcmp(answers[n].identity, answers[m].identity) == 0) {
                verdicts[m].group = verdicts[n].group;
                break;
            }
    }
    for (int g = 0; g < count; g++)
        if (verdicts[g].group == g)
            judge_group(answers, verdicts, count, g);
}

/* ---- a run's results, gathered into the rule ----------------------------- */

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
    json_t *identities; /* device id -> its identity (kcs_peer_identity) */
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
        kcs_peer_identity(item, identity, sizeof identity);
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

/* The results of one case and kernel on devices (any identity), in the order written. */
typedef struct {
    json_t **members;
    int count;
} case_kernel;

/* Collects the results of the case and kernel of the result at first; 0 when memory runs out. */
static int gather(const result_index *x, size_t first, case_kernel *found)
{
    json_t *lead = json_array_get(x->entries, first), *indices = same_case(x, lead);
    found->count = 0;
    found->members = malloc(sizeof *found->members * (json_array_size(indices) + 1));
    if (!found->members)
        return 0;
    size_t position;
    json_t *at;
    json_array_foreach(indices, position, at) {
        size_t index = (size_t)json_integer_value(at);
        json_t *result = json_array_get(x->entries, index);
        if (index >= first && json_string_value(json_object_get(result, "device")) &&
            strcmp(text(result, "kernel"), text(lead, "kernel")) == 0)
            found->members[found->count++] = result;
    }
    return 1;
}

/* What the run proved of a result's kernel (agreement.h). */
static kcs_determinism determinism_of(json_t *root, json_t *result)
{
    if (!json_is_true(json_object_get(json_object_get(root, "options"), "determinism")))
        return KCS_NOT_PROVED;
    return strstr(text(result, "message"), "nondeterministic") ? KCS_NONDETERMINISTIC : KCS_PROVED_DETERMINISTIC;
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

/* One case and kernel's answers, laid out for the rule. */
typedef struct {
    json_t **results;
    kcs_peer_answer *answers;
    kcs_agreement_verdict *verdicts;
    char (*keys)[2048];
    int count;
} answer_set;

/* The answer a peer of differing member m is named with: the first of the
 * majority, or without one the first member whose bits differ from m's. */
static int peer_of(const answer_set *set, int m)
{
    int g = set->verdicts[m].group;
    for (int n = g; n < set->count; n++)
        if (set->verdicts[n].group == g &&
            (set->verdicts[m].decided ? !set->verdicts[n].differs
                                      : strcmp(set->answers[n].answer, set->answers[m].answer) != 0))
            return n;
    return g;
}

/* Writes the verdict of the group whose first answer is g; returns 1 on a disagreement. */
static int write_agreement(json_t *root, const answer_set *set, int g, json_t *verdicts, int quiet,
                           const kcs_difference_locator *locator)
{
    const kcs_agreement_verdict *group = &set->verdicts[g];
    json_t *lead = set->results[g], *devices = json_array();
    for (int m = g; m < set->count; m++)
        if (set->verdicts[m].group == g)
            json_array_append_new(devices, json_string(text(set->results[m], "device")));
    const char *identity = set->answers[g].identity;
    json_t *verdict = json_pack("{s:s, s:s, s:s, s:o}", "case", text(lead, "case"), "kernel", text(lead, "kernel"),
                                "identity", identity, "devices", devices);
    if (group->verdict != KCS_DISAGREE) {
        json_object_set_new(verdict, "verdict", json_string(group->verdict == KCS_AGREE ? "agree" : "not compared"));
        if (group->verdict == KCS_NOT_COMPARED) {
            char reason[300];
            if (set->answers[group->because].determinism == KCS_NONDETERMINISTIC)
                snprintf(reason, sizeof reason, "nondeterministic: its two runs on %s differed",
                         text(set->results[group->because], "device"));
            else
                snprintf(reason, sizeof reason, "not proved deterministic: the run was made without --determinism");
            json_object_set_new(verdict, "reason", json_string(reason));
        }
        json_array_append_new(verdicts, verdict);
        return 0;
    }
    json_object_set_new(verdict, "verdict", json_string("disagree"));
    json_t *differing = json_array();
    for (int m = g; m < set->count; m++) {
        if (set->verdicts[m].group != g || !set->verdicts[m].differs)
            continue;
        json_t *peer = set->results[peer_of(set, m)];
        char outputs[300];
        differing_outputs(set->results[m], peer, outputs, sizeof outputs);
        json_array_append_new(differing, json_pack("{s:s, s:s, s:s, s:b}", "device", text(set->results[m], "device"),
                                                   "outputs", outputs, "peer", text(peer, "device"), "majority",
                                                   group->decided));
    }
    json_object_set_new(verdict, "differing", differing);
    if (!group->decided)
        json_object_set_new(verdict, "reason",
                            json_string("no majority: no one answer was computed by more than half of the devices"));
    if (locator)
        locator->locate(locator->context, root, verdict);
    size_t index;
    json_t *entry;
    json_array_foreach(differing, index, entry) {
        if (quiet)
            break;
        printf("DISAGREE %s %s: %s computed other bits than %s%s in %s (devices %s)\n", text(lead, "case"),
               text(lead, "kernel"), text(entry, "device"),
               group->decided ? "the majority of its identical peers, e.g. " : "", text(entry, "peer"),
               text(entry, "outputs"), identity);
        print_located(entry);
    }
    json_array_append_new(verdicts, verdict);
    return 1;
}

/* Judges the agreement of one case and kernel's results; returns the number of disagreeing groups. */
static int compare_answers(json_t *root, const result_index *x, const case_kernel *found, json_t *verdicts,
                           int quiet, const kcs_difference_locator *locator)
{
    size_t n = (size_t)found->count + 1;
    answer_set set = {malloc(n * sizeof *set.results), malloc(n * sizeof *set.answers),
                      malloc(n * sizeof *set.verdicts), malloc(n * sizeof *set.keys), 0};
    int disagreements = 0;
    if (set.results && set.answers && set.verdicts && set.keys) {
        for (int m = 0; m < found->count; m++) {
            json_t *result = found->members[m];
            if (!has_outputs(result))
                continue;
            hash_key(result, set.keys[set.count], sizeof set.keys[set.count]);
            set.answers[set.count] = (kcs_peer_answer){identity_of(x, text(result, "device")), set.keys[set.count],
                                                       determinism_of(root, result)};
            set.results[set.count++] = result;
        }
        kcs_judge_agreement(set.answers, set.count, set.verdicts);
        for (int g = 0; g < set.count; g++)
            if (set.verdicts[g].group == g && set.verdicts[g].verdict != KCS_ALONE)
                disagreements += write_agreement(root, &set, g, verdicts, quiet, locator);
    }
    free(set.results);
    free(set.answers);
    free(set.verdicts);
    free(set.keys);
    return disagreements;
}

/* A figure of a result's kernel timing; NaN where it is not a number. */
static double kernel_figure(json_t *result, const char *key)
{
    json_t *value = json_object_get(json_object_get(json_object_get(result, "timing"), "kernel"), key);
    return json_is_number(value) ? json_number_value(value) : NAN;
}

/* Writes the speed of the group of timings[g]'s identity ("speed"), and its stragglers. */
static void write_speed(const case_kernel *found, const kcs_peer_timing *timings, const kcs_speed_verdict *judged,
                        int g, json_t *speed, json_t *stragglers, int quiet)
{
    json_t *lead = found->members[g], *devices = json_array();
    for (int m = g; m < found->count; m++) {
        if (!judged[m].peers || strcmp(timings[m].identity, timings[g].identity) != 0)
            continue;
        json_t *member = found->members[m];
        const kcs_speed_verdict *v = &judged[m];
        json_array_append_new(devices, json_pack("{s:s, s:f, s:f, s:f, s:b}", "device", text(member, "device"),
                                                 "median_s", timings[m].median_s, "peer_median_s", v->peer_median_s,
                                                 "ratio", v->ratio, "straggler", v->straggler));
        if (!v->straggler)
            continue;
        json_t *names = json_array();
        for (int n = 0; n < found->count; n++)
            if (n != m && judged[n].peers && strcmp(timings[n].identity, timings[m].identity) == 0)
                json_array_append_new(names, json_string(text(found->members[n], "device")));
        json_array_append_new(stragglers,
                              json_pack("{s:s, s:s, s:s, s:f, s:f, s:f, s:f, s:o}", "case", text(member, "case"),
                                        "kernel", text(member, "kernel"), "device", text(member, "device"),
                                        "median_s", timings[m].median_s, "peer_median_s", v->peer_median_s, "ratio",
                                        v->ratio, "threshold", v->threshold, "peers", names));
        if (!quiet)
            printf("STRAGGLER %s %s: %s took %.4g ms, %.2fx the median of its identical peers (%.4g ms; noise and "
                   "minimum effect %.0f%%)\n", text(member, "case"), text(member, "kernel"), text(member, "device"),
                   1e3 * timings[m].median_s, v->ratio, 1e3 * v->peer_median_s, 100 * v->threshold);
    }
    json_array_append_new(speed, json_pack("{s:s, s:s, s:s, s:f, s:o}", "case", text(lead, "case"), "kernel",
                                           text(lead, "kernel"), "identity", timings[g].identity, "threshold",
                                           judged[g].threshold, "devices", devices));
}

/* Judges the speed of one case and kernel's timed results. */
static void compare_timings(const result_index *x, const case_kernel *found, json_t *speed, json_t *stragglers,
                            int quiet)
{
    size_t n = (size_t)found->count + 1;
    kcs_peer_timing *timings = malloc(n * sizeof *timings);
    kcs_speed_verdict *judged = malloc(n * sizeof *judged);
    if (timings && judged) {
        for (int m = 0; m < found->count; m++) {
            json_t *result = found->members[m];
            timings[m] = (kcs_peer_timing){identity_of(x, text(result, "device")), kernel_figure(result, "median_s"),
                                           kernel_figure(result, "lower_quartile_s"),
                                           kernel_figure(result, "upper_quartile_s")};
        }
        kcs_judge_speed(timings, found->count, judged);
        for (int g = 0; g < found->count; g++) {
            int first = judged[g].peers > 0;
            for (int m = 0; first && m < g; m++)
                first = !(judged[m].peers && strcmp(timings[m].identity, timings[g].identity) == 0);
            if (first)
                write_speed(found, timings, judged, g, speed, stragglers, quiet);
        }
    }
    free(timings);
    free(judged);
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

/* Whether an earlier entry has the same case (and, when kernel_too, is a device's result of the same kernel). */
static int seen_before(const result_index *x, size_t at, int kernel_too)
{
    json_t *lead = json_array_get(x->entries, at);
    size_t position;
    json_t *earlier;
    json_array_foreach(same_case(x, lead), position, earlier) {
        size_t index = (size_t)json_integer_value(earlier);
        if (index >= at)
            break;
        if (!kernel_too)
            return 1;
        json_t *result = json_array_get(x->entries, index);
        if (json_string_value(json_object_get(result, "device")) &&
            strcmp(text(result, "kernel"), text(lead, "kernel")) == 0)
            return 1;
    }
    return 0;
}

int kcs_results_compare_devices(kcs_results *results, int quiet, const kcs_difference_locator *locator)
{
    json_t *root = kcs_results_root(results);
    json_t *entries = json_object_get(root, "results"), *devices = json_object_get(root, "devices");
    json_t *agreement = json_array(), *odd = json_array(), *speed = json_array(), *stragglers = json_array();
    int findings = 0;
    result_index x;
    index_results(entries, devices, &x);
    for (size_t i = 0; i < json_array_size(entries); i++) {
        json_t *result = json_array_get(entries, i);
        case_kernel found;
        if (!json_string_value(json_object_get(result, "device")) || seen_before(&x, i, 1) || !gather(&x, i, &found))
            continue;
        findings += compare_answers(root, &x, &found, agreement, quiet, locator);
        compare_timings(&x, &found, speed, stragglers, quiet);
        free(found.members);
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
    json_object_set_new(root, "speed", speed);
    json_object_set_new(root, "stragglers", stragglers);
    return findings;
}
