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

#endif
