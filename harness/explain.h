/* explain.h: saying why an output fails, by naming the arithmetic that
 * explains it (docs/explaining.md).
 *
 * Each op keeps a catalogue of named arithmetic models: the common ways a
 * production kernel or library departs from the op's definition (inputs
 * rounded to TF32, sums kept in the storage type, an epilogue that rounds
 * twice, flushed subnormals, a dropped slice). A model is an alternative
 * oracle with its own derived bound, written beside the op's in the op's
 * page. When an output fails the op's own bound, kcs tries every model of
 * the op that applies to the case and reports those under whose bound the
 * output falls: "consistent with: ...", or "unexplained". An output within
 * the op's own bound is a pass and is never explained, whatever models it
 * also fits.
 *
 * Cost. A model is judged on at most KCS_EXPLAIN_MOST_FAILING elements
 * outside the op's bound and KCS_EXPLAIN_MOST_OTHERS elements spread over
 * the rest, per output, so that explaining a failure of a 10^8-element
 * output costs what an oracle costs on 8192 elements, per model (a GEMM of
 * 4096^3: 8192 dot products of 4096 terms each).
 */
#ifndef KCS_EXPLAIN_H
#define KCS_EXPLAIN_H

#include "op.h"

struct kcs_prepared_case; /* suite.h */

/* Elements a model is judged on, per output: the first ones outside the
 * op's bound, in index order, then ones spread evenly over the rest. */
#define KCS_EXPLAIN_MOST_FAILING 4096
#define KCS_EXPLAIN_MOST_OTHERS 4096

/* The most models one op keeps. */
#define KCS_MAX_MODELS 16

/* One named arithmetic model of an op. */
typedef struct kcs_model {
    const char *name;        /* what --model takes: the op's name, then the deviation,
                                e.g. "gemm-epilogue-rounds-twice" */
    const char *description; /* what the arithmetic does, as a clause: "rounds alpha*AB to the
                                output type before adding beta*C" */
    /* Whether the model departs from the op's definition for this case
     * (TF32 inputs say nothing new about an f64 GEMM); NULL: always. */
    int (*applies)(const kcs_op_args *args);
    /* Fills expected[o].values and .bounds at expected[o].indices (NULL:
     * every element, in order) as the model computes the outputs and as
     * much as a kernel following the model may be off: its own bound,
     * derived in the op's page like the op's. NULL where expect_seeing is set. */
    kcs_status (*expect)(const kcs_op_args *args, void *const inputs[], kcs_expected expected[], kcs_error *err);
    /* Optional, in place of expect: for a model with a choice that its
     * arithmetic leaves open and only the output shows (which rows of a
     * softmax held a piece of nothing but -inf, as the kernel cut them), the
     * same given also the outputs being judged, whole, from which it takes
     * that choice and nothing else (docs/explaining.md). */
    kcs_status (*expect_seeing)(const kcs_op_args *args, void *const inputs[], void *const actual[],
                                kcs_expected expected[], kcs_error *err);
} kcs_model;

/* How well one model fits an output. */
typedef struct {
    const kcs_model *model;
    int fits;         /* every element tried lies within the model's bound */
    double fraction;  /* the worst element's error as a fraction of the model's bound */
    size_t outside;   /* elements outside it */
} kcs_model_fit;

/* What trying an op's models on a failed output found. */
typedef struct {
    int tried;                          /* models that apply to the case */
    size_t elements;                    /* elements each was judged on, over all outputs */
    int fitting;                        /* models that fit */
    kcs_model_fit fits[KCS_MAX_MODELS]; /* every model tried: those that fit first, then by fraction */
    int indistinguishable;              /* fitting models whose outputs lie within each other's
                                           bounds on every element tried: the case cannot tell
                                           them apart */
    char text[1024];                    /* one line: "consistent with ..." or "unexplained: ..." */
} kcs_explanation;

/* The model of op called name, or NULL. */
const kcs_model *kcs_find_model(const kcs_op *op, const char *name);

/* The names of op's models, separated by ", " (for messages), or "none". */
void kcs_model_names(const kcs_op *op, char *text, size_t size);

/* Tries every model of the case's op that applies on the outputs actual,
 * which failed against expected (the op's own values and bounds, with
 * their indices), and fills explanation. A case whose op has no models
 * applying is "unexplained: no model of OP applies to DTYPE". */
kcs_status kcs_explain(const struct kcs_prepared_case *p, void *const actual[], const kcs_expected expected[],
                       kcs_explanation *explanation, kcs_error *err);

/* kcs_explain for a failure found in a run: an error while explaining
 * (memory) becomes the text "not explained: CAUSE", never the run's error. */
void kcs_explain_failure(const struct kcs_prepared_case *p, void *const actual[], const kcs_expected expected[],
                         kcs_explanation *explanation);

/* The expected values and bounds of model at the elements the op's
 * expected values name (the same indices and counts), in place of the
 * op's, for the outputs actual: what `kcs check --model` judges against.
 * Free with kcs_free_model_expected. */
kcs_status kcs_model_expected(const struct kcs_prepared_case *p, const kcs_model *model, void *const actual[],
                              const kcs_expected op_expected[], kcs_expected expected[], kcs_error *err);

/* Frees what kcs_model_expected filled (values, bounds and indices). */
void kcs_free_model_expected(kcs_expected expected[]);

#endif
