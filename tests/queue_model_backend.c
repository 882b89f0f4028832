/* queue_model_backend.c: a device that can queue a kernel's repeats back to
 * back, for the tests of the runner's timing (tests/back_to_back_test.sh,
 * docs/runner.md "Back to back"). Built into build/kcs-saboteur only, as
 * backend "queue-model".
 *
 * It is the reference backend (its device, buffers and f64 GEMM) with no
 * pace and with time_back_to_back, which makes the repeats one after another
 * and writes, as each repeat's time, the time its run reported. Its clock is
 * a model, not measured, so that a busy host changes nothing a test reads:
 *
 *   cooler-when-idle      reports 1 ms a run timed on its own and 1.25 ms a
 *                         run queued back to back: a card held at its power
 *                         limit, whose clocks drop when it never idles
 *   waits-for-the-device  the same, but each run waits for the device (as a
 *                         run whose plan synchronizes does): queued back to
 *                         back, its first run makes time_back_to_back give up
 *                         (KCS_UNSUPPORTED), as the CUDA backend's held chunk
 *                         does, and the runner must time it one at a time
 *
 * With KCS_QUEUE_MODEL_LOG=FILE each call of time_back_to_back appends its
 * count of repeats to FILE, a line each, so that a test can see which runs
 * (warm-up, timed) were queued and how many at once.
 *
 * Run only it: build/kcs-saboteur run --backend queue-model --cases tests/compare-cases --benchmark
 */
#include <stdio.h>
#include <stdlib.h>

#include "backend.h"

extern const kcs_backend kcs_reference_backend;

static const double ALONE_SECONDS = 1e-3, BACK_TO_BACK_SECONDS = 1.25e-3;

/* While time_back_to_back makes its repeats: whether a run waited for the device. */
static int queueing, waited_for_the_device;

static kcs_status reference_gemm(kcs_device *device, const kcs_op_args *args, kcs_buffer *const inputs[],
                                 kcs_buffer *const outputs[], double *kernel_seconds, kcs_error *err)
{
    const kcs_kernel *reference = kcs_backend_find_kernel(&kcs_reference_backend, "gemm", KCS_F64, NULL);
    if (!reference)
        return kcs_fail(err, KCS_ERROR, "the reference has no kernel for gemm f64");
    kcs_status status = reference->run(device, args, inputs, outputs, kernel_seconds, err);
    *kernel_seconds = queueing ? BACK_TO_BACK_SECONDS : ALONE_SECONDS;
    return status;
}

static KCS_KERNEL_RUN(cooler_when_idle)
{
    return reference_gemm(device, args, inputs, outputs, kernel_seconds, err);
}

static KCS_KERNEL_RUN(waits_for_the_device)
{
    waited_for_the_device |= queueing;
    return reference_gemm(device, args, inputs, outputs, kernel_seconds, err);
}

static kcs_status time_back_to_back(kcs_device *device, int count,
                                    kcs_status (*run)(void *context, int repeat, kcs_error *err), void *context,
                                    double *seconds, kcs_error *err)
{
    (void)device;
    const char *log = getenv("KCS_QUEUE_MODEL_LOG");
    FILE *file = log ? fopen(log, "a") : NULL;
    if (log && !file)
        return kcs_fail(err, KCS_ERROR, "cannot append to %s", log);
    if (file) {
        fprintf(file, "%d\n", count);
        fclose(file);
    }
    kcs_status status = KCS_OK;
    queueing = 1;
    waited_for_the_device = 0;
    for (int r = 0; r < count && status == KCS_OK && !waited_for_the_device; r++) {
        status = run(context, r, err);
        seconds[r] = BACK_TO_BACK_SECONDS;
    }
    queueing = 0;
    if (status == KCS_OK && waited_for_the_device)
        return kcs_fail(err, KCS_UNSUPPORTED, "a run waited for the device while its repeats were held (the "
                        "queue model's stand-in for the hold giving up)");
    return status;
}

static const kcs_kernel rows[] = {
    {"gemm", KCS_F64, "cooler-when-idle",
     "the reference; 1 ms a run on its own, 1.25 ms back to back (a power-limited card)", cooler_when_idle, NULL},
    {"gemm", KCS_F64, "waits-for-the-device",
     "the reference; waits for the device in each run, which back to back cannot hold", waits_for_the_device,
     NULL},
};
static const kcs_kernel_table table = KCS_KERNEL_TABLE(rows);
static const kcs_kernel_table *const tables[] = {&table, NULL};

kcs_backend kcs_queue_model_backend;

/* Assembled before main(), as the saboteur runner's backend is: it borrows
 * the reference backend's functions, which another file defines. */
__attribute__((constructor)) static void fill_queue_model_backend(void)
{
    kcs_queue_model_backend = kcs_reference_backend;
    kcs_queue_model_backend.name = "queue-model";
    kcs_queue_model_backend.pace = NULL;
    kcs_queue_model_backend.time_back_to_back = time_back_to_back;
    kcs_queue_model_backend.kernel_tables = tables;
}
