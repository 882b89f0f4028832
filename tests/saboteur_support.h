/* saboteur_support.h: what the saboteur tests share (cmocka assertions). */
#ifndef KCS_SABOTEUR_SUPPORT_H
#define KCS_SABOTEUR_SUPPORT_H

#include "saboteur_backend.h"
#include "suite.h"

/* cmocka group setup and teardown: reads cases/ and golden/ of the source tree. */
int kcs_test_load_cases(void **state);
int kcs_test_free_cases(void **state);

/* The saboteur variant must fail case_name with a diagnosis containing
 * words, and the reference must pass the same case. */
void kcs_test_expect_caught(const char *case_name, const char *saboteur, const char *words);

/* Every case of cases/, and golden/, as the group setup read them. */
const kcs_case_list *kcs_test_cases(void);
const kcs_golden *kcs_test_golden(void);

/* The case called name in cases/ (the test fails when there is none). */
const kcs_case *kcs_test_find_case(const char *name);

/* Runs kernel on a prepared case on the reference backend's device (through
 * the saboteur backend's buffers), described as a device whose f32
 * arithmetic flushes subnormals to zero when flushing is set. */
void kcs_test_run(const kcs_prepared_case *prepared, const kcs_kernel *kernel, int flushing,
                  kcs_run_result *result);

/* The same as kcs_test_expect_caught, on a device that says it flushes f32
 * subnormals (kcs_device_info.flushes_f32_subnormals): with the op's
 * flushing bounds the saboteur must still fail. */
void kcs_test_expect_caught_flushing(const char *case_name, const char *saboteur, const char *words);

/* The saboteur variant must pass case_name, on a device that says it flushes
 * f32 subnormals when flushing is set. */
void kcs_test_expect_passes(const char *case_name, const char *saboteur, int flushing);

/* The saboteur variant must fail case_name, and the op's arithmetic models
 * must explain the failure (explain.h): by model alone, or by model and
 * others the case cannot tell from it (their outputs within each other's
 * bounds); model NULL: by none ("unexplained"). */
void kcs_test_expect_explained(const char *case_name, const char *saboteur, const char *model);
#endif
