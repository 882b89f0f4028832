/* probe_test.c: unit tests of the probe (probe.h, lib/kcs_probe.h) on the
 * reference backend, whose probe runs the same set on the host.
 *
 * What must hold: one flipped bit always changes a block's hash; the
 * injection flips exactly where and as often as asked, the same way every
 * time; the strict majority is the only majority; a record reads back bit
 * for bit, every malformed one is an error naming its file, line and cause,
 * and one of another device, driver, build or probe version is not used;
 * a probe compares with a record, with identical peers or with the oracle,
 * says which decided, names every injected flip with its kernel, chunk,
 * block, slice and SM, and never flags a block it did not flip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "generator.h"
#include "probe.h"

extern const kcs_backend kcs_reference_backend;

static char temp_dir[64];

static int make_temp_dir(void **state)
{
    (void)state;
    strcpy(temp_dir, "/tmp/kcs_probe_test.XXXXXX");
    return mkdtemp(temp_dir) ? 0 : -1;
}

static int remove_temp_dir(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", temp_dir);
    return system(command);
}

static void one_flipped_bit_always_changes_the_hash(void **state)
{
    (void)state;
    uint32_t words[KCS_PROBE_GEMM_WORDS];
    for (size_t w = 0; w < KCS_PROBE_GEMM_WORDS; w++)
        words[w] = (uint32_t)kcs_random_bits(7, w);
    const uint64_t hash = kcs_probe_hash_words(words, KCS_PROBE_GEMM_WORDS);
    for (size_t w = 0; w < KCS_PROBE_GEMM_WORDS; w += 97)
        for (int bit = 0; bit < 32; bit++) {
            words[w] ^= 1u << bit;
            assert_true(kcs_probe_hash_words(words, KCS_PROBE_GEMM_WORDS) != hash);
            words[w] ^= 1u << bit;
        }
    /* The same word in another place of the slice is another term: a swap of two words shows. */
    uint32_t swapped = words[3];
    words[3] = words[5], words[5] = swapped;
    assert_true(words[3] == words[5] || kcs_probe_hash_words(words, KCS_PROBE_GEMM_WORDS) != hash);
}

static void the_injection_flips_where_and_as_often_as_asked(void **state)
{
    (void)state;
    int flips = 0;
    for (long long cycle = 1; cycle <= 125; cycle++)
        for (int k = 0; k < KCS_PROBE_KERNELS; k++)
            for (int chunk = 0; chunk < KCS_PROBE_CHUNKS; chunk++) {
                kcs_probe_launch launch = {0}, again = {0}, never = {0}, always = {0};
                kcs_probe_injection(3, 0.25, 42, cycle, k, chunk, &launch);
                kcs_probe_injection(3, 0.25, 42, cycle, k, chunk, &again);
                kcs_probe_injection(3, 0.0, 42, cycle, k, chunk, &never);
                kcs_probe_injection(5, 1.0, 42, cycle, k, chunk, &always);
                assert_memory_equal(&launch, &again, sizeof launch);
                assert_int_equal(never.flip_block, -1);
                assert_int_equal(always.flip_block, 5);
                assert_true(always.flip_word < kcs_probe_slice_words(k) && always.flip_bit < 32);
                if (launch.flip_block >= 0) {
                    assert_int_equal(launch.flip_block, 3);
                    assert_true(launch.flip_word < kcs_probe_slice_words(k) && launch.flip_bit < 32);
                    flips++;
                }
            }
    /* 4000 launches at 1/4: 1000 expected, a standard deviation of 27. */
    assert_true(flips > 880 && flips < 1120);
}

static void only_a_strict_majority_decides(void **state)
{
    (void)state;
    int agree[4];
    uint64_t majority = 0;
    assert_int_equal(kcs_probe_majority((uint64_t[]){7, 7, 9}, 3, agree, &majority), 1);
    assert_true(majority == 7 && agree[0] && agree[1] && !agree[2]);
    assert_int_equal(kcs_probe_majority((uint64_t[]){9, 7, 7, 7}, 4, agree, &majority), 1);
    assert_true(majority == 7 && !agree[0] && agree[3]);
    assert_int_equal(kcs_probe_majority((uint64_t[]){7, 9}, 2, agree, &majority), 0);
    assert_true(!agree[0] && !agree[1]);
    assert_int_equal(kcs_probe_majority((uint64_t[]){7, 7, 9, 9}, 4, agree, &majority), 0);
    assert_int_equal(kcs_probe_majority((uint64_t[]){1, 2, 3}, 3, agree, &majority), 0);
    assert_int_equal(kcs_probe_majority((uint64_t[]){5}, 1, agree, &majority), 1);
    assert_true(majority == 5 && agree[0]);
}

/* ---- Record files ---- */

static kcs_probe_record_file sample_record(void)
{
    kcs_probe_record_file record = {.version = KCS_PROBE_VERSION, .sms = 2, .blocks = 3};
    snprintf(record.identity.device, sizeof record.identity.device, "Card X");
    snprintf(record.identity.platform, sizeof record.identity.platform, "CUDA");
    snprintf(record.identity.driver, sizeof record.identity.driver, "580.1, CUDA 13.0");
    snprintf(record.identity.build, sizeof record.identity.build, "probe 1; nvcc 13.0");
    size_t count = (size_t)KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS * 3;
    record.hashes = malloc(count * sizeof *record.hashes);
    for (size_t i = 0; i < count; i++)
        record.hashes[i] = kcs_random_bits(11, i);
    return record;
}

static void a_record_reads_back_bit_for_bit(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/round-trip.txt", temp_dir);
    kcs_probe_record_file written = sample_record(), read;
    kcs_error err = {{0}};
    assert_int_equal(kcs_probe_record_write(path, &written, &err), KCS_OK);
    assert_int_equal(kcs_probe_record_read(path, &read, &err), KCS_OK);
    assert_int_equal(read.version, written.version);
    assert_memory_equal(&read.identity, &written.identity, sizeof read.identity);
    assert_int_equal(read.sms, 2);
    assert_int_equal(read.blocks, 3);
    assert_memory_equal(read.hashes, written.hashes, sizeof *read.hashes * KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS * 3);
    char why[600];
    assert_null(kcs_probe_record_mismatch(&read, &written.identity, 2, 3, why, sizeof why));
    kcs_probe_identity other = written.identity;
    snprintf(other.driver, sizeof other.driver, "580.2, CUDA 13.0");
    assert_non_null(kcs_probe_record_mismatch(&read, &other, 2, 3, why, sizeof why));
    assert_non_null(strstr(why, "driver '580.1, CUDA 13.0'"));
    other = written.identity;
    snprintf(other.build, sizeof other.build, "probe 1; nvcc 12.8");
    assert_non_null(kcs_probe_record_mismatch(&read, &other, 2, 3, why, sizeof why));
    assert_non_null(strstr(why, "build"));
    assert_non_null(kcs_probe_record_mismatch(&read, &written.identity, 2, 4, why, sizeof why));
    read.version++;
    assert_non_null(kcs_probe_record_mismatch(&read, &written.identity, 2, 3, why, sizeof why));
    assert_non_null(strstr(why, "probe version"));
    kcs_probe_record_file_free(&read);
    kcs_probe_record_file_free(&written);
}

/* Writes the sample record, replaces its line `line` (from 1) with replacement
 * (NULL: drops it), and checks that reading it fails naming expected. */
static void assert_malformed(const char *name, int line, const char *replacement, const char *expected)
{
    char path[128], text_path[160];
    snprintf(path, sizeof path, "%s/%s.txt", temp_dir, name);
    snprintf(text_path, sizeof text_path, "%s.original", path);
    kcs_probe_record_file written = sample_record(), read;
    kcs_error err = {{0}};
    assert_int_equal(kcs_probe_record_write(text_path, &written, &err), KCS_OK);
    kcs_probe_record_file_free(&written);
    FILE *in = fopen(text_path, "r"), *out = fopen(path, "w");
    assert_non_null(in);
    assert_non_null(out);
    char buffer[4096];
    for (int number = 1; fgets(buffer, sizeof buffer, in); number++) {
        if (number != line)
            fputs(buffer, out);
        else if (replacement)
            fprintf(out, "%s\n", replacement);
    }
    fclose(in);
    fclose(out);
    assert_int_equal(kcs_probe_record_read(path, &read, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, path));
    if (!strstr(err.message, expected))
        fail_msg("reading %s: '%s' does not say '%s'", name, err.message, expected);
}

static void every_malformed_record_is_named(void **state)
{
    (void)state;
    /* The sample's lines: 1 format, 2 comment, 3 probe_version, 4-7 identity, 8 sms, 9 blocks,
     * 10 chunks, 11.. launches (gemm-tensor chunk 0 first), the last "end". */
    const int end = 10 + KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS + 1;
    assert_malformed("format", 1, "kcs-probe-record 2", ":1: not a probe record of format 1");
    assert_malformed("digits", 11, "launch gemm-tensor 0 0123456789abcdef 0123456789abcdeg 0000000000000000",
                     ":11: hash 2 of gemm-tensor chunk 0 is not 16 hex digits");
    assert_malformed("count", 11, "launch gemm-tensor 0 0123456789abcdef", ":11: gemm-tensor chunk 0 has 1 hashes");
    assert_malformed("kernel", 11, "launch gemm-fp4 0 0123456789abcdef", ":11: no probe kernel 'gemm-fp4'");
    assert_malformed("chunk", 11, "launch gemm-tensor 8 0 0 0", ":11: the launch's chunk must be 0 to 7, not '8'");
    assert_malformed("twice", 12, "launch gemm-tensor 0 0000000000000000 0000000000000000 0000000000000000",
                     ":12: a second line for gemm-tensor chunk 0");
    assert_malformed("missing-launch", 12, NULL, "no launch line for gemm-tensor chunk 1");
    assert_malformed("cut-short", end, NULL, "no 'end' line: the record is cut short");
    assert_malformed("unknown", 5, "color blue", ":5: unknown line 'color blue'");
    assert_malformed("no-driver", 6, NULL, "missing driver");
    assert_malformed("sms", 8, "sms many", ":8: sms must be 1 to 512, not 'many'");
    assert_malformed("chunks", 10, "chunks 4", ":10: chunks is 8 in this probe, not '4'");
    kcs_probe_record_file read;
    kcs_error err = {{0}};
    char path[128];
    snprintf(path, sizeof path, "%s/absent.txt", temp_dir);
    assert_int_equal(kcs_probe_record_read(path, &read, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "absent.txt: cannot read the probe's record"));
}

/* ---- Probes on the reference ---- */

typedef struct {
    kcs_device *device;
    kcs_probe *probe;
} opened_probe;

static opened_probe open_probe(const kcs_probe_options *options)
{
    opened_probe p = {0};
    kcs_device_info info;
    kcs_error err = {{0}};
    assert_int_equal(kcs_reference_backend.open(0, &p.device, &info, &err), KCS_OK);
    if (kcs_probe_open_device(&kcs_reference_backend, p.device, &info, options, &p.probe, &err) != KCS_OK)
        fail_msg("%s", err.message);
    return p;
}

static void close_probe(opened_probe *p)
{
    kcs_probe_close(p->probe);
    kcs_reference_backend.close(p->device);
}

/* Steps until launches launches have run, checking each result with check. */
static void step_through(kcs_probe *probe, int launches, void (*check)(const kcs_probe_result *, void *), void *data)
{
    kcs_error err = {{0}};
    int seen = 0;
    while (seen < launches) {
        kcs_probe_result result;
        assert_int_equal(kcs_probe_step(probe, &result, &err), KCS_OK);
        assert_int_equal(kcs_probe_wait(probe, &result, &err), KCS_OK); /* the reference: already finished */
        assert_int_not_equal(result.verdict, KCS_PROBE_PENDING);
        seen += result.launches;
        check(&result, data);
    }
}

static void passes_by(const kcs_probe_result *result, void *decider)
{
    if (result->verdict != KCS_PROBE_PASS || result->decider != *(kcs_probe_decider *)decider)
        fail_msg("step %lld: %s by %s: %s", result->step, kcs_probe_verdict_name(result->verdict),
                 kcs_probe_decider_name(result->decider), result->message);
    assert_int_equal(result->mismatch_count, 0);
    assert_int_equal(result->sms_seen, 1);
}

static void a_lone_device_is_decided_by_the_oracle_then_compared_with_itself(void **state)
{
    (void)state;
    opened_probe p = open_probe(NULL);
    kcs_error err = {{0}};
    kcs_probe_result result;
    assert_int_equal(kcs_probe_step(p.probe, &result, &err), KCS_OK);
    assert_int_equal(result.verdict, KCS_PROBE_PENDING); /* nothing ran before */
    assert_int_equal(kcs_probe_wait(p.probe, &result, &err), KCS_OK);
    assert_int_equal(result.verdict, KCS_PROBE_UNDECIDED);
    assert_non_null(strstr(result.message, "nothing to compare with"));
    char path[128];
    snprintf(path, sizeof path, "%s/nothing.txt", temp_dir);
    assert_int_equal(kcs_probe_write_record(p.probe, path, &err), KCS_ERROR);
    assert_non_null(strstr(err.message, "no expected hashes"));

    assert_int_equal(kcs_probe_calibrate(&p.probe, 1, 1, &result, &err), KCS_OK);
    assert_int_equal(result.verdict, KCS_PROBE_PASS);
    assert_int_equal(result.decider, KCS_PROBE_BY_ORACLE);
    assert_int_equal(result.launches, KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS);
    kcs_probe_decider oracle = KCS_PROBE_BY_ORACLE;
    step_through(p.probe, KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS, passes_by, &oracle);
    close_probe(&p);
}

static void a_record_decides_and_the_budget_sets_the_launches(void **state)
{
    (void)state;
    opened_probe p = open_probe(NULL);
    kcs_error err = {{0}};
    kcs_probe_result result;
    assert_int_equal(kcs_probe_calibrate(&p.probe, 1, 1, &result, &err), KCS_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/reference.txt", temp_dir);
    assert_int_equal(kcs_probe_write_record(p.probe, path, &err), KCS_OK);
    close_probe(&p);

    /* A budget of a day: once every kernel was measured, each step launches all four. */
    kcs_probe_options options = {.expected_path = path, .budget_seconds = 86400};
    p = open_probe(&options);
    kcs_probe_decider record = KCS_PROBE_BY_RECORD;
    step_through(p.probe, 2 * KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS, passes_by, &record);
    assert_int_equal(kcs_probe_step(p.probe, &result, &err), KCS_OK);
    assert_int_equal(kcs_probe_wait(p.probe, &result, &err), KCS_OK);
    assert_int_equal(result.launches, KCS_PROBE_KERNELS);
    close_probe(&p);

    /* A budget of a nanosecond: one launch a step. */
    options.budget_seconds = 1e-9;
    p = open_probe(&options);
    step_through(p.probe, 6, passes_by, &record);
    assert_int_equal(kcs_probe_step(p.probe, &result, &err), KCS_OK);
    assert_int_equal(kcs_probe_wait(p.probe, &result, &err), KCS_OK);
    assert_int_equal(result.launches, 1);
    close_probe(&p);

    /* A record of another device is not used, and the probe says why. */
    kcs_probe_record_file changed;
    assert_int_equal(kcs_probe_record_read(path, &changed, &err), KCS_OK);
    snprintf(changed.identity.device, sizeof changed.identity.device, "another card");
    snprintf(path, sizeof path, "%s/another.txt", temp_dir);
    assert_int_equal(kcs_probe_record_write(path, &changed, &err), KCS_OK);
    kcs_probe_record_file_free(&changed);
    p = open_probe(&options);
    assert_int_equal(kcs_probe_step(p.probe, &result, &err), KCS_OK);
    assert_int_equal(kcs_probe_wait(p.probe, &result, &err), KCS_OK);
    assert_int_equal(result.verdict, KCS_PROBE_UNDECIDED);
    assert_non_null(strstr(result.message, "not used: the record is for 'another card'"));
    close_probe(&p);
}

/* What injected flips a run named: every result's mismatches must be the injected blocks. */
typedef struct {
    int injected, named;
    int block;
} flips_seen;

static void names_every_flip(const kcs_probe_result *result, void *data)
{
    flips_seen *seen = data;
    seen->injected += result->injected_count;
    assert_int_equal(result->mismatch_count, result->injected_count);
    assert_int_equal(result->verdict, result->injected_count ? KCS_PROBE_MISMATCH : KCS_PROBE_PASS);
    assert_int_equal(result->decider, KCS_PROBE_BY_RECORD);
    for (int m = 0; m < result->mismatch_count; m++) {
        const kcs_probe_mismatch *x = &result->mismatches[m];
        assert_true(x->injected);
        assert_int_equal(x->block, seen->block);
        assert_int_equal(x->slice, x->chunk * 4 + x->block); /* 4 blocks a launch on the host */
        assert_int_equal(x->sm, 0);
        assert_true(x->hash != x->expected);
        assert_true(result->kernels & (1u << x->kernel));
        seen->named++;
    }
}

static void every_injected_flip_is_named_against_a_record(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/reference.txt", temp_dir); /* written by the test before */
    kcs_probe_options options = {.expected_path = path, .inject_block = 2, .inject_probability = 0.4,
                                 .inject_seed = 99};
    opened_probe p = open_probe(&options);
    flips_seen seen = {.block = 2};
    step_through(p.probe, 2 * KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS, names_every_flip, &seen);
    assert_true(seen.injected > 10); /* 64 launches at 0.4 */
    assert_int_equal(seen.named, seen.injected);
    close_probe(&p);
}

static void the_majority_names_the_odd_device_and_only_it(void **state)
{
    (void)state;
    kcs_probe_options odd = {.inject_block = 1, .inject_probability = 0.5, .inject_seed = 3};
    opened_probe p[3] = {open_probe(NULL), open_probe(&odd), open_probe(NULL)};
    kcs_probe *probes[3] = {p[0].probe, p[1].probe, p[2].probe};
    kcs_probe_result results[3];
    kcs_error err = {{0}};
    assert_int_equal(kcs_probe_calibrate(probes, 3, 1, results, &err), KCS_OK);
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(results[i].verdict, KCS_PROBE_PASS);
        assert_int_equal(results[i].decider, KCS_PROBE_BY_MAJORITY);
    }
    assert_int_equal(results[1].verdict, KCS_PROBE_MISMATCH);
    assert_int_equal(results[1].decider, KCS_PROBE_BY_MAJORITY);
    assert_true(results[1].injected_count > 0);
    assert_int_equal(results[1].mismatch_count, results[1].injected_count);
    for (int m = 0; m < results[1].mismatch_count && m < KCS_PROBE_MAX_MISMATCHES; m++) {
        assert_true(results[1].mismatches[m].injected);
        assert_int_equal(results[1].mismatches[m].block, 1);
        assert_int_equal(results[1].mismatches[m].decider, KCS_PROBE_BY_MAJORITY);
        assert_non_null(strstr(results[1].mismatches[m].detail, "2 of 3 identical devices"));
    }
    /* The majority's hashes are every probe's expected ones now: later steps compare on the device. */
    assert_true(kcs_probe_has_expected(probes[1]));
    kcs_probe_result result;
    assert_int_equal(kcs_probe_step(probes[1], &result, &err), KCS_OK);
    assert_int_equal(kcs_probe_wait(probes[1], &result, &err), KCS_OK);
    assert_int_equal(result.mismatch_count, result.injected_count);
    assert_int_equal(result.decider, KCS_PROBE_BY_MAJORITY);
    for (int i = 0; i < 3; i++)
        close_probe(&p[i]);
}

static void two_devices_that_differ_are_decided_by_the_oracle(void **state)
{
    (void)state;
    /* Launches of the second device flip a bit of block 0: no majority of two, so the oracle
     * judges both outputs. A flip outside the op's bound is the oracle's to name; one within
     * it leaves two hashes the oracle passes, and then both devices are named, since one of
     * two identical devices that differ is wrong. Few enough flips that every one is listed. */
    kcs_probe_options odd = {.inject_block = 0, .inject_probability = 0.3, .inject_seed = 8};
    opened_probe p[2] = {open_probe(NULL), open_probe(&odd)};
    kcs_probe *probes[2] = {p[0].probe, p[1].probe};
    kcs_probe_result results[2];
    kcs_error err = {{0}};
    assert_int_equal(kcs_probe_calibrate(probes, 2, 1, results, &err), KCS_OK);
    const int flips = results[1].injected_count;
    assert_true(flips > 0 && flips <= KCS_PROBE_MAX_MISMATCHES);
    assert_int_equal(results[1].verdict, KCS_PROBE_MISMATCH);
    assert_int_equal(results[1].mismatch_count, flips);
    int by_oracle = 0, within = 0;
    for (int m = 0; m < flips; m++) {
        const kcs_probe_mismatch *x = &results[1].mismatches[m];
        assert_true(x->injected);
        assert_int_equal(x->block, 0);
        if (x->decider == KCS_PROBE_BY_ORACLE) {
            by_oracle++;
            if (!strstr(x->detail, "times the bound"))
                fail_msg("the oracle's detail names no element: '%s'", x->detail);
            continue;
        }
        assert_int_equal(x->decider, KCS_PROBE_BY_MAJORITY);
        within++;
        int also_named = 0; /* the healthy device, at the same kernel and slice */
        for (int n = 0; n < results[0].mismatch_count; n++)
            also_named += results[0].mismatches[n].kernel == x->kernel && results[0].mismatches[n].slice == x->slice;
        assert_int_equal(also_named, 1);
    }
    assert_true(by_oracle > 0);
    assert_int_equal(results[0].mismatch_count, within);
    for (int m = 0; m < results[0].mismatch_count; m++) {
        assert_false(results[0].mismatches[m].injected);
        assert_non_null(strstr(results[0].mismatches[m].detail, "one of them is wrong"));
    }
    for (int i = 0; i < 2; i++)
        close_probe(&p[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_flipped_bit_always_changes_the_hash),
        cmocka_unit_test(the_injection_flips_where_and_as_often_as_asked),
        cmocka_unit_test(only_a_strict_majority_decides),
        cmocka_unit_test(a_record_reads_back_bit_for_bit),
        cmocka_unit_test(every_malformed_record_is_named),
        cmocka_unit_test(a_lone_device_is_decided_by_the_oracle_then_compared_with_itself),
        cmocka_unit_test(a_record_decides_and_the_budget_sets_the_launches),
        cmocka_unit_test(every_injected_flip_is_named_against_a_record),
        cmocka_unit_test(the_majority_names_the_odd_device_and_only_it),
        cmocka_unit_test(two_devices_that_differ_are_decided_by_the_oracle),
    };
    return cmocka_run_group_tests(tests, make_temp_dir, remove_temp_dir);
}
