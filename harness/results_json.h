/* results_json.h: the results' JSON document itself, for the code that
 * reads a whole run's results once it is over (agreement.c); everything
 * else goes through results.h. */
#ifndef KCS_RESULTS_JSON_H
#define KCS_RESULTS_JSON_H

#include <jansson.h>

#include "results.h"

/* The document the results file is written from (borrowed). */
json_t *kcs_results_root(kcs_results *results);

/* Finds where a disagreeing group's outputs differ (runner/rerun.c): given
 * the run's document and one "disagree" verdict of its "agreement", locate
 * adds to each entry of the verdict's "differing" what it found. */
typedef struct kcs_difference_locator {
    void (*locate)(void *context, json_t *root, json_t *verdict);
    void *context; /* handed to locate */
} kcs_difference_locator;

#endif
