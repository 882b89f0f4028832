/* agreement_test.c: the peers rule (agreement.h, docs/runner.md "Peers: one
 * rule") held to its fixture, every JSON file of tests/peers-fixture/: every device's
 * identity text, every speed verdict (peers, peers' median, threshold and
 * straggler, exactly) and every agreement verdict (groups, majority, who is
 * named, why not compared). report/test_kcs_peers.py holds the Python twin
 * to the same files, so the runner and the fleet report cannot drift apart.
 *
 * Run only it: build/tests/agreement_test
 */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "agreement.h"

#ifndef KCS_SOURCE_DIR
#define KCS_SOURCE_DIR "."
#endif

#define FIXTURE_DIR KCS_SOURCE_DIR "/tests/peers-fixture"

static const char *text(json_t *object, const char *key)
{
    const char *value = json_string_value(json_object_get(object, key));
    return value ? value : "";
}

/* A number of the fixture; NaN for null or absent (not recorded). */
static double number(json_t *object, const char *key)
{
    json_t *value = json_object_get(object, key);
    return json_is_number(value) ? json_number_value(value) : NAN;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fixture's files, parsed, in name order (a JSON array of [path, document]). */
static json_t *fixture_files(void)
{
    DIR *folder = opendir(FIXTURE_DIR);
    if (!folder)
        fail_msg("%s: cannot open the fixture folder", FIXTURE_DIR);
    char *names[64];
    int count = 0;
    for (struct dirent *entry; (entry = readdir(folder)) != NULL && count < 64;) {
        size_t length = strlen(entry->d_name);
        if (length > 5 && strcmp(entry->d_name + length - 5, ".json") == 0)
            names[count++] = strdup(entry->d_name);
    }
    closedir(folder);
    qsort(names, (size_t)count, sizeof *names, compare_names);
    json_t *files = json_array();
    for (int i = 0; i < count; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", FIXTURE_DIR, names[i]);
        json_error_t error;
        json_t *document = json_load_file(path, 0, &error);
        if (!document)
            fail_msg("%s:%d: %s", path, error.line, error.text);
        json_array_append_new(files, json_pack("[s, o]", path, document));
        free(names[i]);
    }
    if (count == 0)
        fail_msg("%s: no *.json fixture", FIXTURE_DIR);
    return files;
}

/* The identity text of a fixture device, by name. */
static const char *identity_of(json_t *identities, const char *path, const char *device)
{
    const char *identity = json_string_value(json_object_get(identities, device));
    if (!identity)
        fail_msg("%s: device '%s' is not in the file's devices", path, device);
    return identity;
}

/* Each device's identity as kcs_peer_identity makes it, checked against the fixture's. */
static json_t *identities(const char *path, json_t *document)
{
    json_t *found = json_object();
    const char *name;
    json_t *device;
    json_object_foreach(json_object_get(document, "devices"), name, device) {
        char identity[1200];
        kcs_peer_identity(device, identity, sizeof identity);
        if (strcmp(identity, text(device, "identity")) != 0)
            fail_msg("%s: device %s: identity '%s', the fixture says '%s'", path, name, identity,
                     text(device, "identity"));
        json_object_set_new(found, name, json_string(identity));
    }
    return found;
}

static void check_number(const char *path, const char *about, const char *device, const char *what, double got,
                         double want)
{
    if (got != want)
        fail_msg("%s: %s: %s: %s is %.17g, the fixture says %.17g", path, about, device, what, got, want);
}

static void check_speed_case(const char *path, json_t *identities_by_name, json_t *item)
{
    const char *about = text(item, "about");
    json_t *timings = json_object_get(item, "timings"), *expected = json_object_get(item, "expected");
    int count = (int)json_array_size(timings);
    kcs_peer_timing given[64];
    kcs_speed_verdict verdicts[64];
    assert_true(count <= 64);
    for (int i = 0; i < count; i++) {
        json_t *timing = json_array_get(timings, i);
        given[i] = (kcs_peer_timing){identity_of(identities_by_name, path, text(timing, "device")),
                                     number(timing, "median_s"), number(timing, "lower_quartile_s"),
                                     number(timing, "upper_quartile_s")};
    }
    kcs_judge_speed(given, count, verdicts);
    for (int i = 0; i < count; i++) {
        const char *device = text(json_array_get(timings, i), "device");
        json_t *want = json_object_get(expected, device);
        if (!want)
            fail_msg("%s: %s: no expected verdict for device %s", path, about, device);
        if (json_is_null(want)) {
            if (verdicts[i].peers)
                fail_msg("%s: %s: %s was judged against %d peers; the fixture says it is not judged", path, about,
                         device, verdicts[i].peers);
            continue;
        }
        if (verdicts[i].peers != json_integer_value(json_object_get(want, "peers")))
            fail_msg("%s: %s: %s has %d peers, the fixture says %lld", path, about, device, verdicts[i].peers,
                     (long long)json_integer_value(json_object_get(want, "peers")));
        check_number(path, about, device, "peer_median_s", verdicts[i].peer_median_s, number(want, "peer_median_s"));
        check_number(path, about, device, "threshold", verdicts[i].threshold, number(want, "threshold"));
        if (verdicts[i].straggler != json_is_true(json_object_get(want, "straggler")))
            fail_msg("%s: %s: %s is %sa straggler; the fixture says the opposite", path, about, device,
                     verdicts[i].straggler ? "" : "not ");
    }
}

static kcs_determinism determinism(const char *path, const char *about, const char *word)
{
    if (strcmp(word, "proved") == 0)
        return KCS_PROVED_DETERMINISTIC;
    if (strcmp(word, "not proved") == 0)
        return KCS_NOT_PROVED;
    if (strcmp(word, "nondeterministic") == 0)
        return KCS_NONDETERMINISTIC;
    fail_msg("%s: %s: determinism '%s' is none of proved, not proved, nondeterministic", path, about, word);
    return KCS_NOT_PROVED;
}

static const char *verdict_word(kcs_agreement_kind kind)
{
    return kind == KCS_AGREE ? "agree" : kind == KCS_DISAGREE ? "disagree" : kind == KCS_NOT_COMPARED ? "not compared"
                                                                                                        : "alone";
}

/* The names of the answers that pass the test, as a JSON array. */
static json_t *names_where(json_t *answers, const kcs_agreement_verdict *verdicts, int count, int group,
                           int differs_only)
{
    json_t *names = json_array();
    for (int i = 0; i < count; i++)
        if (verdicts[i].group == group && (!differs_only || verdicts[i].differs))
            json_array_append_new(names, json_string(text(json_array_get(answers, i), "device")));
    return names;
}

static void check_same(const char *path, const char *about, const char *what, json_t *got, json_t *want)
{
    if (!json_equal(got, want)) {
        char *a = json_dumps(got, JSON_COMPACT), *b = json_dumps(want, JSON_COMPACT);
        fail_msg("%s: %s: %s %s, the fixture says %s", path, about, what, a, b);
    }
}

static void check_agreement_case(const char *path, json_t *identities_by_name, json_t *item)
{
    const char *about = text(item, "about");
    json_t *answers = json_object_get(item, "answers"), *expected = json_object_get(item, "expected");
    int count = (int)json_array_size(answers);
    kcs_peer_answer given[64];
    kcs_agreement_verdict verdicts[64];
    char keys[64][1024];
    assert_true(count <= 64);
    for (int i = 0; i < count; i++) {
        json_t *answer = json_array_get(answers, i);
        /* equal strings for equal hashes of every output, as the runner's hash_key makes them */
        keys[i][0] = '\0';
        const char *name;
        json_t *hash;
        json_object_foreach(json_object_get(answer, "hashes"), name, hash) {
            size_t used = strlen(keys[i]);
            snprintf(keys[i] + used, sizeof keys[i] - used, "%s=%s;", name, json_string_value(hash));
        }
        given[i] = (kcs_peer_answer){identity_of(identities_by_name, path, text(answer, "device")), keys[i],
                                     determinism(path, about, text(answer, "determinism"))};
    }
    kcs_judge_agreement(given, count, verdicts);
    json_t *groups = json_array(), *alone = json_array();
    for (int g = 0; g < count; g++) {
        if (verdicts[g].group != g)
            continue;
        if (verdicts[g].verdict == KCS_ALONE) {
            json_array_append_new(alone, json_string(text(json_array_get(answers, g), "device")));
            continue;
        }
        json_t *group = json_pack("{s:o, s:s}", "devices", names_where(answers, verdicts, count, g, 0), "verdict",
                                  verdict_word(verdicts[g].verdict));
        if (verdicts[g].verdict == KCS_DISAGREE) {
            json_object_set_new(group, "decided", json_boolean(verdicts[g].decided));
            json_object_set_new(group, "differs", names_where(answers, verdicts, count, g, 1));
        }
        if (verdicts[g].verdict == KCS_NOT_COMPARED)
            json_object_set_new(group, "because",
                                json_string(text(json_array_get(answers, verdicts[g].because), "device")));
        json_array_append_new(groups, group);
    }
    check_same(path, about, "groups", groups, json_object_get(expected, "groups"));
    check_same(path, about, "devices alone", alone, json_object_get(expected, "alone"));
    json_decref(groups);
    json_decref(alone);
}

/* Every case of every fixture file, both rules. */
static void the_rule_reaches_the_fixture_verdicts(void **state)
{
    (void)state;
    json_t *files = fixture_files();
    size_t index, item_index;
    json_t *file, *item;
    int speed_cases = 0, agreement_cases = 0;
    json_array_foreach(files, index, file) {
        const char *path = json_string_value(json_array_get(file, 0));
        json_t *document = json_array_get(file, 1);
        json_t *by_name = identities(path, document);
        json_array_foreach(json_object_get(document, "speed"), item_index, item) {
            check_speed_case(path, by_name, item);
            speed_cases++;
        }
        json_array_foreach(json_object_get(document, "agreement"), item_index, item) {
            check_agreement_case(path, by_name, item);
            agreement_cases++;
        }
        json_decref(by_name);
    }
    json_decref(files);
    /* A fixture that lost its cases would pass everything above. */
    assert_true(speed_cases >= 5);
    assert_true(agreement_cases >= 5);
}

/* A group's threshold is one for all its members, and none without a timed peer. */
static void a_device_alone_is_not_judged(void **state)
{
    (void)state;
    kcs_peer_timing alone[1] = {{"x", 1.0, 1.0, 1.0}};
    kcs_speed_verdict verdict[1];
    kcs_judge_speed(alone, 1, verdict);
    assert_int_equal(verdict[0].peers, 0);
    assert_false(verdict[0].straggler);
    kcs_peer_answer answer[1] = {{"x", "y=1;", KCS_PROVED_DETERMINISTIC}};
    kcs_agreement_verdict judged[1];
    kcs_judge_agreement(answer, 1, judged);
    assert_int_equal(judged[0].verdict, KCS_ALONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_rule_reaches_the_fixture_verdicts),
        cmocka_unit_test(a_device_alone_is_not_judged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
