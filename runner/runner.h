/* runner.h: the commands of the kcs runner that live in their own files. */
#ifndef KCS_RUNNER_H
#define KCS_RUNNER_H

#include "suite.h"

/* `kcs apply OP ...`: argv as main's; returns the exit status. */
int kcs_command_apply(int argc, char **argv);

/* Runs a prepared case's kernel and writes its outputs to output_dir;
 * checks them when check is set. Returns 0, 1 (outside the bound) or 2. */
int kcs_apply_prepared(const kcs_prepared_case *prepared, const char *backend, int device_index,
                       const char *kernel, const char *output_dir, int check);

#endif
