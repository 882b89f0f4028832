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

static const kcs_case *find_case(const char *name)
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

static void run(const kcs_backend *backend, const kcs_prepared_case *p, const char *variant,
                kcs_run_result *result)
{
    kcs_device *device;
    kcs_device_info info;
    kcs_error err;
    assert_int_equal(backend->open(0, &device, &info, &err), KCS_OK);
    kcs_run_options options = {0};
    kcs_run_on_device(p, backend, device, &info, find_kernel(backend, p->c, variant), &options, result);
    backend->close(device);
}

void kcs_test_expect_caught(const char *case_name, const char *saboteur, const char *words)
{
    kcs_prepared_case p;
    kcs_error err;
    if (kcs_prepare_case(find_case(case_name), golden, &p, &err) != KCS_OK)
        fail_msg("%s: %s", case_name, err.message);
    kcs_backend saboteurs = kcs_saboteur_backend();
    kcs_run_result result;
    run(&kcs_reference_backend, &p, NULL, &result);
    if (result.outcome != KCS_OUTCOME_PASS)
        fail_msg("reference on %s: %s", case_name, result.message);
    run(&saboteurs, &p, saboteur, &result);
    if (result.outcome != KCS_OUTCOME_FAIL || !strstr(result.message, words))
        fail_msg("saboteur %s on %s: expected a failure mentioning '%s', got %s: %s", saboteur, case_name,
                 words, kcs_outcome_name(result.outcome), result.message);
    kcs_prepared_case_free(&p);
}

