/* take_away.h: a failure that can be taken away and looked at.
 *
 * For a failing case (or any case, on request) the runner writes the case's
 * inputs, its expected outputs with their bounds, and each backend's actual
 * outputs as .npy files, and prints the one command (`kcs apply`) that
 * replays the run outside the suite, e.g. to file a driver bug or to look
 * at it in numpy (docs/take-away.md).
 *
 *     <root>/<case name>/<input>.npy                      the inputs
 *     <root>/<case name>/expected.<output>.npy            expected values (f64)
 *     <root>/<case name>/bound.<output>.npy               allowed error per element (f64)
 *     <root>/<case name>/<backend>-<device>-<kernel>/<output>.npy   what that kernel wrote
 */
#ifndef KCS_TAKE_AWAY_H
#define KCS_TAKE_AWAY_H

#include "suite.h"

/* Writes the inputs, expected values and bounds of a prepared case under
 * root and puts the case's folder in case_dir. Expected values and bounds
 * are written only when every element was checked (not for sampled cases). */
kcs_status kcs_save_case(const char *root, const kcs_prepared_case *prepared, char *case_dir,
                         size_t case_dir_size, kcs_error *err);

/* Writes one kernel's actual outputs into case_dir/<label>/ and puts that
 * folder in run_dir. */
kcs_status kcs_save_actual(const char *case_dir, const char *label, const kcs_layout *layout,
                           void *const actual[], char *run_dir, size_t run_dir_size, kcs_error *err);

/* The `kcs apply` command line that reruns the case's kernel on the saved
 * files, checks it against the saved expected values and writes its outputs
 * into output_dir. program is the runner's path. */
void kcs_replay_command(const char *program, const kcs_prepared_case *prepared, const char *case_dir,
                        const char *backend, int device, const char *kernel, const char *output_dir,
                        char *command, size_t size);

/* Creates a folder and its parents (like mkdir -p). */
kcs_status kcs_make_directories(const char *path, kcs_error *err);

#endif
