/* saboteur_support.c: loading cases and running a saboteur against the
 * reference, for the saboteur tests of every op. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static kcs_case_list cases;
static kcs_golden *golden;

int kcs_test_load_cases(void **state)
{
    (void)state;
    kcs_error err;
    if (kcs_parse_case_directory(KCS_SOURCE_DIR "/cases", &cases, &err) != KCS_OK ||
        kcs_golden_open(KCS_SOURCE_DIR "/golden", &golden, &err) != KCS_OK) {
        fprintf(stderr, "%s\n", err.message);
        return -1;
    }
    return 0;
}

int kcs_test_free_cases(void **state)
{
    (void)state;
    kcs_golden_close(golden);
    kcs_case_list_free(&cases);
    return 0;
}

const kcs_case_list *kcs_test_cases(void)
{
    return &cases;
}

const kcs_golden *kcs_test_golden(void)
{
    return golden;
}

const kcs_case *kcs_test_find_case(const char *name)
{
    for (size_t i = 0; i < cases.count; i++)
        if (strcmp(cases.cases[i].name, name) == 0)
            return &cases.cases[i];
    fail_msg("no case %s in cases/", name);
    return NULL;
}

static const kcs_kernel *find_kernel(const kcs_backend *backend, const kcs_case *c, const char *variant)
{
    const kcs_kernel *kernel = kcs_backend_find_kernel(backend, c->op, c->dtype, variant);
    if (kernel)
        return kernel;
    fail_msg("%s has no kernel %s for %s", backend->name, variant ? variant : "", c->name);
    return NULL;
}

static void run_on(const kcs_backend *backend, const kcs_prepared_case *p, const kcs_kernel *kernel, int flushing,
                   kcs_run_result *result)
{
    kcs_device *device;
    kcs_device_info info;
    kcs_error err;
    assert_int_equal(backend->open(0, &device, &info, &err), KCS_OK);
    info.flushes_f32_subnormals = flushing;
    kcs_run_options options = {0};
    kcs_run_on_device(p, backend, device, &info, kernel, &options, result);
    backend->close(device);
}

void kcs_test_run(const kcs_prepared_case *p, const kcs_kernel *kernel, int flushing, kcs_run_result *result)
{
    kcs_backend saboteurs = kcs_saboteur_backend();
    run_on(&saboteurs, p, kernel, flushing, result);
}

static void prepare(const char *case_name, kcs_prepared_case *p)
{
    kcs_error err;
    if (kcs_prepare_case(kcs_test_find_case(case_name), golden, p, &err) != KCS_OK)
        fail_msg("%s: %s", case_name, err.message);
}

static void expect_caught(const char *case_name, const char *saboteur, const char *words, int flushing)
{
    kcs_prepared_case p;
    prepare(case_name, &p);
    kcs_backend saboteurs = kcs_saboteur_backend();
    kcs_run_result result;
    run_on(&kcs_reference_backend, &p, find_kernel(&kcs_reference_backend, p.c, NULL), flushing, &result);
    if (result.outcome != KCS_OUTCOME_PASS)
        fail_msg("reference on %s: %s", case_name, result.message);
    run_on(&saboteurs, &p, find_kernel(&saboteurs, p.c, saboteur), flushing, &result);
    if (result.outcome != KCS_OUTCOME_FAIL || !strstr(result.message, words))
        fail_msg("saboteur %s on %s%s: expected a failure mentioning '%s', got %s: %s", saboteur, case_name,
                 flushing ? " (device flushing)" : "", words, kcs_outcome_name(result.outcome), result.message);
    kcs_prepared_case_free(&p);
}

void kcs_test_expect_caught(const char *case_name, const char *saboteur, const char *words)
{
    expect_caught(case_name, saboteur, words, 0);
}

void kcs_test_expect_caught_flushing(const char *case_name, const char *saboteur, const char *words)
{
    expect_caught(case_name, saboteur, words, 1);
}

void kcs_test_expect_passes(const char *case_name, const char *saboteur, int flushing)
{
    kcs_prepared_case p;
    prepare(case_name, &p);
    kcs_backend saboteurs = kcs_saboteur_backend();
    kcs_run_result result;
    run_on(&saboteurs, &p, find_kernel(&saboteurs, p.c, saboteur), flushing, &result);
    if (result.outcome != KCS_OUTCOME_PASS)
        fail_msg("%s on %s%s: expected a pass, got %s: %s", saboteur, case_name,
                 flushing ? " (device flushing)" : "", kcs_outcome_name(result.outcome), result.message);
    kcs_prepared_case_free(&p);
}


void kcs_test_expect_explained(const char *case_name, const char *saboteur, const char *model)
{
    kcs_prepared_case p;
    prepare(case_name, &p);
    kcs_backend saboteurs = kcs_saboteur_backend();
    kcs_run_result result;
    run_on(&saboteurs, &p, find_kernel(&saboteurs, p.c, saboteur), 0, &result);
    const kcs_explanation *x = &result.explanation;
    if (result.outcome != KCS_OUTCOME_FAIL)
        fail_msg("saboteur %s on %s: expected a failure to explain, got %s: %s", saboteur, case_name,
                 kcs_outcome_name(result.outcome), result.message);
    if (!x->text[0])
        fail_msg("saboteur %s on %s failed (%s) but nothing was explained", saboteur, case_name, result.message);
    if (!model) {
        if (x->fitting != 0)
            fail_msg("saboteur %s on %s: expected 'unexplained', got: %s", saboteur, case_name, x->text);
    } else {
        int found = 0;
        for (int f = 0; f < x->fitting; f++)
            found |= strcmp(x->fits[f].model->name, model) == 0;
        if (!found || (x->fitting > 1 && !x->indistinguishable))
            fail_msg("saboteur %s on %s: expected to be explained by %s alone (or with models it cannot be "
                     "told from), got: %s", saboteur, case_name, model, x->text);
    }
    kcs_prepared_case_free(&p);
}
