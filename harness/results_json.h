/* results_json.h: the results' JSON document itself, for the code that
 * reads a whole run's results once it is over (agreement.c); everything
 * else goes through results.h. */
#ifndef KCS_RESULTS_JSON_H
#define KCS_RESULTS_JSON_H

#include <jansson.h>

#include "results.h"

/* The document the results file is written from (borrowed). */
json_t *kcs_results_root(kcs_results *results);

#endif
