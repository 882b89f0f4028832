/* run.c: every selected case on every wanted device with each of the
 * backend's kernels for the case's op and dtype, sending what happens to a
 * sink (sink.c): in the runner's own process, or in a worker (worker.c).
 * `kcs run` itself (the checks before a run, the results and JUnit files,
 * the summary) is run_command.c, which calls this directly (--in-process) or
 * through the workers.
 *
 * A case is prepared once (unit 0: inputs, expected values, bounds) and
 * then run by each kernel (one unit each); kcs_sink_begin announces each
 * unit so that a worker that hangs or dies there costs that unit only
 * (worker.c). Failing kernels' data is saved for taking away
 * (--save-failures, harness/take_away.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner.h"
#include "take_away.h"

/* What every case of a run shares. */
typedef struct {
    const kcs_runner_options *o;
    kcs_device_set devices;
    const kcs_golden *golden; /* NULL when the golden directory could not be opened */
    kcs_error golden_error;   /* why not */
    kcs_sink *out;
} run_context;

/* A prepared case as it runs: its index in the case list, the unit it is
 * at, and the folder its files were saved in (once some were). */
typedef struct {
    const kcs_prepared_case *p;
    int case_index;
    int unit;
    char case_dir[4096];
} case_in_progress;

/* Decides, once, what the expectations say of a result: the results file
 * and the console both take the verdict from the entry. */
static void judge(const kcs_runner_options *o, const kcs_open_device *device, kcs_result_entry *entry)
{
    kcs_expectation_subject subject = {.backend = entry->backend,
                                       .device = device ? device->info.name : "",
                                       .device_id = device ? device->id : NULL,
                                       .platform = device ? device->info.platform : NULL,
                                       .driver = device ? device->info.driver_version : "",
                                       .case_name = entry->case_name,
                                       .kernel = entry->kernel,
                                       .explanation = &entry->run->explanation};
    entry->verdict = kcs_expectations_verdict(&o->expectations, &subject, kcs_outcome_name(entry->run->outcome));
}

/* A result of a prepared case on a backend, a device (NULL: the backend has
 * none) and a kernel (NULL: none ran), with its verdict. */
static kcs_result_entry result_of(const kcs_runner_options *o, const kcs_prepared_case *p,
                                  const kcs_backend *backend, const kcs_open_device *device,
                                  const kcs_kernel *kernel, const kcs_run_result *run)
{
    const kcs_case *c = p->c;
    kcs_result_entry entry = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                              .backend = backend->name, .device_id = device ? device->id : NULL,
                              .kernel = kernel ? kernel->variant : NULL,
                              .kernel_library = kernel ? kernel->library : NULL, .expected_from = p->expected_from,
                              .op = p->op, .args = &p->args, .run = run,
                              .ceilings = device ? kcs_device_ceilings(device) : NULL};
    judge(o, device, &entry);
    return entry;
}

/* Records and prints a result for a case that never reached a device (no
 * backend, so no expectation lists it: the verdict is none). */
static void record_case_problem(kcs_sink *out, const kcs_runner_options *o, const kcs_case *c,
                                const char *case_name, const char *file, int line, kcs_outcome outcome,
                                const char *message)
{
    kcs_run_result run = {.outcome = outcome};
    snprintf(run.message, sizeof run.message, "%s", message);
    kcs_result_entry entry = {.c = c, .case_name = case_name, .file = file, .line = line, .run = &run};
    kcs_sink_result(out, &entry);
    kcs_print_result(o, case_name, "-", &run, NULL, NULL);
}

/* Records and prints a skip of a case on a backend or device. */
static void record_skip(const run_context *run, const kcs_prepared_case *p, const kcs_backend *backend,
                        const kcs_open_device *device, const char *reason)
{
    kcs_run_result skip = {.outcome = KCS_OUTCOME_SKIP};
    snprintf(skip.message, sizeof skip.message, "%s", reason);
    kcs_result_entry entry = result_of(run->o, p, backend, device, NULL, &skip);
    kcs_sink_result(run->out, &entry);
    /* shown without its verdict, as the console always has (the results file has it) */
    kcs_print_result(run->o, p->c->name, device ? device->id : backend->name, &skip, NULL, NULL);
}

/* Writes a case's inputs and expected values (once) and a kernel's outputs
 * as .npy, with the command that replays the run; returns 0, with the
 * reason printed, when it cannot. */
static int take_away(const kcs_runner_options *o, case_in_progress *now, const kcs_open_device *device,
                     const kcs_kernel *kernel, const kcs_run_result *run, kcs_take_away *saved)
{
    kcs_error err = {{0}};
    if (!now->case_dir[0] && kcs_save_case(o->save_dir, now->p, now->case_dir, sizeof now->case_dir, &err) != KCS_OK) {
        now->case_dir[0] = '\0';
        printf("      could not save the case: %s\n", err.message);
        return 0;
    }
    char label[256], replay_dir[4500];
    snprintf(label, sizeof label, "%s-%d-%s", device->backend->name, device->index, kernel->variant);
    if (kcs_save_actual(now->case_dir, label, &now->p->layout, run->actual, saved->outputs_folder,
                        sizeof saved->outputs_folder, &err) != KCS_OK) {
        printf("      could not save the outputs: %s\n", err.message);
        return 0;
    }
    snprintf(saved->case_folder, sizeof saved->case_folder, "%s", now->case_dir);
    snprintf(replay_dir, sizeof replay_dir, "%s/replay", saved->outputs_folder);
    kcs_replay_command(o->program, now->p, now->case_dir, device->backend->name, device->index, kernel->variant,
                       replay_dir, saved->replay, sizeof saved->replay);
    saved->paths = (kcs_saved_paths){saved->case_folder, saved->outputs_folder, saved->replay};
    return 1;
}

void kcs_print_take_away(const kcs_take_away *saved)
{
    if (saved->paths.outputs_folder)
        printf("      saved: %s (inputs and expected in %s)\n", saved->outputs_folder, saved->case_folder);
    else
        printf("      saved: inputs and expected in %s\n", saved->case_folder);
    printf("      replay: %s\n", saved->replay);
}

/* Runs a kernel, unless its backend leaves the case out (kcs_case_left_out: too slow for the reference). */
static void run_kernel(const kcs_runner_options *o, const kcs_prepared_case *p, const kcs_open_device *device,
                       const kcs_kernel *kernel, kcs_run_result *run)
{
    const char *left_out = kcs_case_left_out(o, p->c, device->backend);
    if (left_out) {
        memset(run, 0, sizeof *run);
        run->outcome = KCS_OUTCOME_SKIP;
        snprintf(run->message, sizeof run->message, "%s", left_out);
        return;
    }
    kcs_run_options run_options = o->run;
    run_options.keep_outputs = o->save_dir != NULL;
    kcs_run_on_device(p, device->backend, device->device, &device->info, kernel, &run_options, run);
}

/* Prints a kernel's result, with its speed when timed and its verdict. */
static void print_kernel_result(const kcs_runner_options *o, const kcs_open_device *device,
                                const kcs_result_entry *entry)
{
    char where[160];
    snprintf(where, sizeof where, "%s %s", device->id, entry->kernel);
    const kcs_run_result *run = entry->run;
    kcs_speed speed = {0};
    if (run->timed && run->kernel.median > 0)
        speed = kcs_kernel_speed(entry->op, entry->args, kcs_device_ceilings(device), run->kernel.median);
    kcs_print_result(o, entry->case_name, where, run, speed.name ? &speed : NULL, &entry->verdict);
}

/* One unit: a kernel on a device, recorded, printed and taken away when it failed. */
static void run_unit(const run_context *context, case_in_progress *now, const kcs_open_device *device,
                     const kcs_kernel *kernel)
{
    const kcs_runner_options *o = context->o;
    kcs_run_result unfinished = {.outcome = KCS_OUTCOME_ERROR};
    kcs_result_entry identity = result_of(o, now->p, device->backend, device, kernel, &unfinished);
    if (!kcs_sink_begin(context->out, now->case_index, now->unit++, &identity))
        return; /* done by an earlier worker, or where it hung or died */
    kcs_run_result run;
    run_kernel(o, now->p, device, kernel, &run);
    kcs_result_entry entry = result_of(o, now->p, device->backend, device, kernel, &run);
    kcs_take_away saved = {.case_folder = ""};
    if (o->save_dir && (run.outcome == KCS_OUTCOME_FAIL || (o->save_all && run.actual[0])) &&
        take_away(o, now, device, kernel, &run, &saved))
        entry.saved = &saved.paths;
    kcs_sink_result(context->out, &entry);
    print_kernel_result(o, device, &entry);
    if (entry.saved)
        kcs_print_take_away(&saved);
    kcs_run_result_free(&run);
}

/* Runs each of the device's kernels for the case's op and dtype; without one, a skip. */
static void run_on_device(const run_context *context, case_in_progress *now, const kcs_open_device *device)
{
    const kcs_case *c = now->p->c;
    int kernels_found = 0;
    for (size_t k = 0; k < kcs_backend_kernel_count(device->backend); k++) {
        const kcs_kernel *kernel = kcs_backend_kernel(device->backend, k);
        if (!kcs_kernel_selected(context->o, kernel, c))
            continue;
        kernels_found++;
        run_unit(context, now, device, kernel);
    }
    if (!kernels_found) {
        char reason[1024];
        if (context->o->kernel_pattern) {
            snprintf(reason, sizeof reason, "no kernel of %s for %s %s matches --kernel %s (its kernels:",
                     device->backend->name, c->op, kcs_dtype_name(c->dtype), context->o->kernel_pattern);
            for (size_t k = 0; k < kcs_backend_kernel_count(device->backend); k++) {
                const kcs_kernel *kernel = kcs_backend_kernel(device->backend, k);
                size_t length = strlen(reason);
                if (strcmp(kernel->op, c->op) == 0 && kernel->dtype == c->dtype)
                    snprintf(reason + length, sizeof reason - length, " %s", kernel->variant);
            }
            size_t length = strlen(reason);
            snprintf(reason + length, sizeof reason - length, "%s)",
                     reason[length - 1] == ':' ? " none" : "");
        } else
                snprintf(reason, sizeof reason, "%s has no kernel for %s %s", device->backend->name, c->op,
                     kcs_dtype_name(c->dtype));
        record_skip(context, now->p, device->backend, device, reason);
    }
}

/* Prepares a case, from the golden directory if it needs one. */
static kcs_status prepare(const run_context *context, const kcs_case *c, kcs_prepared_case *p, kcs_error *err)
{
    if (c->expect == KCS_EXPECT_GOLDEN && !context->golden) {
        memset(p, 0, sizeof *p);
        *err = context->golden_error;
        return KCS_ERROR;
    }
    return kcs_prepare_case(c, context->golden, p, err);
}

int kcs_save_unfinished_unit(const kcs_runner_options *o, const kcs_case *c, const char *backend,
                             int device_index, const char *kernel, kcs_take_away *saved)
{
    kcs_golden *golden = NULL;
    run_context context = {.o = o};
    if (kcs_golden_open(o->golden_dir, &golden, &context.golden_error) == KCS_OK)
        context.golden = golden;
    kcs_prepared_case p;
    kcs_error err = {{0}};
    int done = 0;
    if (prepare(&context, c, &p, &err) != KCS_OK)
        printf("      could not save the case: %s\n", err.message);
    else if (kcs_save_case(o->save_dir, &p, saved->case_folder, sizeof saved->case_folder, &err) != KCS_OK)
        printf("      could not save the case: %s\n", err.message);
    else {
        char replay_dir[4500];
        snprintf(replay_dir, sizeof replay_dir, "%s/%s-%d-%s/replay", saved->case_folder, backend, device_index,
                 kernel);
        kcs_replay_command(o->program, &p, saved->case_folder, backend, device_index, kernel, replay_dir,
                           saved->replay, sizeof saved->replay);
        saved->paths = (kcs_saved_paths){saved->case_folder, NULL, saved->replay};
        done = 1;
    }
    kcs_prepared_case_free(&p);
    kcs_golden_close(golden);
    return done;
}

/* Runs one case: prepares it, then reports backends without devices and
 * runs it on every device. */
static void run_case(const run_context *context, const kcs_case *c, int case_index)
{
    const kcs_runner_options *o = context->o;
    kcs_run_result unfinished = {.outcome = KCS_OUTCOME_ERROR};
    kcs_result_entry identity = {.c = c, .case_name = c->name, .file = c->file, .line = c->line,
                                 .run = &unfinished};
    if (!kcs_sink_begin(context->out, case_index, 0, &identity))
        return; /* a worker before this one hung or died preparing this case */
    /* A skip or error of the case itself belongs to no device: every lane
     * meets it, and lane 0 alone records it, as it does the backends without
     * a device (devices.c), so that the results hold it once. */
    int records_case = !context->out->plan || context->out->lane == 0;
    const char *left_out = kcs_case_left_out(o, c, NULL);
    if (left_out) {
        if (records_case)
            record_case_problem(context->out, o, c, c->name, c->file, c->line, KCS_OUTCOME_SKIP, left_out);
        return;
    }
    kcs_prepared_case p;
    kcs_error err = {{0}};
    if (prepare(context, c, &p, &err) != KCS_OK) {
        char message[1200];
        snprintf(message, sizeof message, "%s:%d: case %s: %s", c->file, c->line, c->name, err.message);
        if (records_case)
            record_case_problem(context->out, o, c, c->name, c->file, c->line, KCS_OUTCOME_ERROR, message);
        kcs_prepared_case_free(&p);
        return;
    }
    case_in_progress now = {.p = &p, .case_index = case_index, .unit = 1};
    for (int a = 0; a < context->devices.absent_count; a++)
        record_skip(context, &p, context->devices.absent[a].backend, NULL, context->devices.absent[a].reason);
    for (int d = 0; d < context->devices.device_count; d++)
        run_on_device(context, &now, &context->devices.devices[d]);
    kcs_prepared_case_free(&p);
}

/* When the run began (kcs_start_run_clock: before any worker starts, so
 * that workers started after a crash estimate from the same start). */
static double run_started;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void kcs_start_run_clock(void)
{
    run_started = now_seconds();
}

/* "[i/N] case" before a case's lines, with the time so far and, once a case
 * has finished, an estimate of the time left (by units done: coarse, since
 * cases differ, but a person watching a long run sees it move). With several
 * lanes, i and N count the units of every lane (a case on a lane) and the
 * line names the lane. */
static void print_progress(const kcs_runner_options *o, const kcs_case *c, long position, long total,
                           const char *lane)
{
    if (o->quiet)
        return;
    double elapsed = now_seconds() - run_started;
    printf("[%ld/%ld] %s", position, total, c->name);
    if (lane)
        printf(" on %s", lane);
    printf(" (%.0f s", elapsed);
    if (position > 1)
        printf(", about %.0f s left", elapsed / (double)(position - 1) * (double)(total - position + 1));
    printf(")\n");
    fflush(stdout);
}

/* The first worker of a lane run: plans the lanes from the devices it
 * opened (the runner plans the same from their D lines), says so ("P"),
 * and keeps lane 0's devices. */
static void plan_from_first_worker(const kcs_runner_options *o, run_context *context, size_t selected)
{
    static kcs_lane_plan plan;
    memset(&plan, 0, sizeof plan);
    for (int d = 0; d < context->devices.device_count && d < KCS_MAX_LANE_DEVICES; d++) {
        const kcs_open_device *device = &context->devices.devices[d];
        kcs_lane_device *planned = &plan.devices[plan.device_count++];
        snprintf(planned->id, sizeof planned->id, "%s", device->id);
        planned->shares_host_cores = device->info.shares_host_cores;
        kcs_pci_bus_id(device->info.details, planned->pci_bus_id, sizeof planned->pci_bus_id);
    }
    kcs_plan_lanes(o, &plan);
    kcs_sink *out = context->out;
    if (out->progress)
        out->progress->total = (long)selected * plan.lane_count;
    kcs_sink_plan_ready(out);
    kcs_keep_lane_devices(&plan, 0, &context->devices);
    out->plan = &plan;
    out->lane = 0;
    out->first = 0;
}

void kcs_run_cases(const kcs_runner_options *o, const kcs_case_list *cases, kcs_sink *out)
{
    run_context context = {.o = o, .out = out};
    int planned_lane = out->plan && !out->first;
    if (planned_lane)
        kcs_open_lane_devices(o, out->plan, out->lane, &context.devices);
    else
        kcs_open_devices(o, &context.devices);
    /* a lane's devices were measured by the first worker, one at a time,
     * each only as far as the selected cases need (kcs_ceilings_wanted) */
    for (int d = 0; o->ceilings && !planned_lane && d < context.devices.device_count; d++) {
        kcs_open_device *device = &context.devices.devices[d];
        kcs_sink_measuring(out, device);
        kcs_measure_device_ceilings(device, kcs_ceilings_wanted(o, cases, device->backend));
    }
    for (int d = 0; d < context.devices.device_count; d++) {
        kcs_sink_device(out, &context.devices.devices[d]);
        kcs_print_device(o, &context.devices.devices[d]);
    }
    size_t total = 0;
    for (size_t i = 0; i < cases->count; i++)
        total += kcs_case_selected(o, &cases->cases[i]) != 0;
    if (out->first)
        plan_from_first_worker(o, &context, total);
    char label[64] = "";
    int lanes = out->plan ? out->plan->lane_count : 1;
    if (lanes > 1)
        kcs_lane_label(out->plan, out->lane, label, sizeof label);
    kcs_golden *golden = NULL;
    if (kcs_golden_open(o->golden_dir, &golden, &context.golden_error) == KCS_OK)
        context.golden = golden;
    if (run_started == 0.0)
        run_started = now_seconds();
    long position = 0;
    for (size_t i = 0; i < cases->count; i++) {
        if (!kcs_case_selected(o, &cases->cases[i]))
            continue;
        ++position;
        if (kcs_sink_resumes_after(out, (int)i)) {
            if (out->progress && lanes > 1)
                print_progress(o, &cases->cases[i], __atomic_add_fetch(&out->progress->begun, 1, __ATOMIC_SEQ_CST),
                               out->progress->total, label);
            else
                print_progress(o, &cases->cases[i], position, (long)total, NULL);
        }
        run_case(&context, &cases->cases[i], (int)i);
    }
    kcs_golden_close(golden);
    kcs_close_devices(&context.devices);
}

void kcs_record_file_problems(const kcs_runner_options *o, const kcs_case_list *cases, kcs_sink *out)
{
    for (size_t i = 0; i < cases->problem_count; i++) {
        const kcs_case_problem *problem = &cases->problems[i];
        char message[1024];
        snprintf(message, sizeof message, "%s:%d: %s", problem->file, problem->line, problem->message);
        record_case_problem(out, o, NULL, problem->case_name, problem->file, problem->line,
                            KCS_OUTCOME_ERROR, message);
    }
}
