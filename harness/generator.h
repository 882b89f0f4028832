/* generator.h: the seeded, counter-based input generator.
 *
 * Element i of an input is a pure function of (distribution, parameters,
 * seed, i): no state, no rand(), no dependence on how many threads or in
 * which order elements are made. Any backend, machine or later run
 * regenerates any case bit for bit, so golden/ stores only expected outputs.
 * The arithmetic uses only IEEE basic operations and sqrt (log is computed
 * here, not taken from libm, whose last bit differs between versions).
 * docs/inputs.md is the normative description; generator_test.c pins values.
 */
#ifndef KCS_GENERATOR_H
#define KCS_GENERATOR_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "status.h"

#define KCS_MAX_DISTRIBUTION_PARAMS 8

/* A name with a numeric value, as written "name=value" in a case file. */
typedef struct {
    char name[32];
    double value;
} kcs_named_value;

/* A named distribution with its parameters and seed. */
typedef struct {
    char name[32];                                       /* "uniform", "normal", ... */
    kcs_named_value params[KCS_MAX_DISTRIBUTION_PARAMS]; /* as given in the case */
    int param_count;
    uint64_t seed;
} kcs_distribution;

/* 64 random bits: number counter of the stream seed. */
uint64_t kcs_random_bits(uint64_t seed, uint64_t counter);

/* A double uniform on [0, 1), a multiple of 2^-53, from 64 random bits. */
double kcs_unit_interval(uint64_t bits);

/* Natural logarithm from IEEE basic operations only (x > 0 finite). */
double kcs_portable_log(double x);

/* 64-bit FNV-1a hash of a string: the default seed of an input is the hash
 * of "<case name>:<input name>". */
uint64_t kcs_string_hash(const char *text);

/* Checks that the distribution exists and its parameters are known and valid. */
kcs_status kcs_distribution_check(const kcs_distribution *distribution, kcs_error *err);

/* Checks what the distribution assumes of the array it fills, given the
 * length of the array's rows (its last axis): `attention` lays its mask over
 * rows of cols elements, so cols must be that length. */
kcs_status kcs_distribution_check_rows(const kcs_distribution *distribution, size_t row_length,
                                       kcs_error *err);

/* Writes elements first .. first+count-1 of the distribution, each rounded
 * once to dtype, to data[0 .. count-1]. */
kcs_status kcs_generate(const kcs_distribution *distribution, kcs_dtype dtype, void *data,
                        size_t first, size_t count, kcs_error *err);

/* The value of the parameter called name, or fallback if it is not given. */
double kcs_distribution_param(const kcs_distribution *distribution, const char *name,
                              double fallback);

/* One line per distribution with its parameters, for --help and docs. */
extern const char *const kcs_distribution_help;

#endif
