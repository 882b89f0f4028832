/* device_limits_test.c: a case larger than the device's memory is skipped
 * with "needs X bytes, device has Y", before anything is allocated. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "saboteur_support.h"

static void a_case_beyond_device_memory_is_skipped_with_the_sizes(void **state)
{
    (void)state;
    const char text[] = "```kcs-case\ncase: big\nop: sumsq\ndtype: f64\nsizes: n=1000000\ninput x: normal\n"
                        "expect: oracle\n```\n";
    kcs_case_list list = {0};
    kcs_error err;
    assert_int_equal(kcs_parse_case_text(text, "limits.md", &list, &err), KCS_OK);
    kcs_prepared_case p;
    assert_int_equal(kcs_prepare_case(&list.cases[0], NULL, &p, &err), KCS_OK);
    kcs_device *device;
    kcs_device_info info;
    assert_int_equal(kcs_reference_backend.open(0, &device, &info, &err), KCS_OK);
    info.memory_bytes = 1 << 20; /* pretend the device has 1 MiB */
    kcs_run_options options = {0};
    const kcs_kernel *sumsq = kcs_backend_find_kernel(&kcs_reference_backend, "sumsq", KCS_F64, NULL);
    assert_non_null(sumsq);
    kcs_run_result result;
    kcs_run_on_device(&p, &kcs_reference_backend, device, &info, sumsq, &options,
                      &result);
    assert_int_equal(result.outcome, KCS_OUTCOME_SKIP);
    assert_non_null(strstr(result.message, "needs 8000008 bytes, device has 1048576"));
    info.memory_bytes = 1ull << 34; /* with room, the same case passes */
    kcs_run_on_device(&p, &kcs_reference_backend, device, &info, sumsq, &options,
                      &result);
    assert_int_equal(result.outcome, KCS_OUTCOME_PASS);
    kcs_reference_backend.close(device);
    kcs_prepared_case_free(&p);
    kcs_case_list_free(&list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_case_beyond_device_memory_is_skipped_with_the_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
