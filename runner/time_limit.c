/* time_limit.c: how long a worker may go without progress in one unit of
 * work (preparing a case, or one kernel on one device) before the runner
 * kills it as hung (worker.c; docs/runner.md, "Isolation").
 *
 * --time-limit S sets it for every unit. Without it, each unit's limit is
 * derived from the case's size, so that a hanging kernel of a small case
 * costs a minute rather than ten: 60 s (starting a worker, building an
 * OpenCL program, a loaded machine) plus ten times an estimate that is
 * already slow:
 *
 *   every unit   the case's bytes at 10^8 bytes/s: generating the inputs,
 *                copying them to and from the device, checking the outputs
 *   preparing    the oracle: the op's flops at 10^9 flop/s, over the share
 *                of the outputs' rows it computes (expect: oracle sample=N)
 *   a kernel     its flops, once per run (twice with --determinism; with
 *                --benchmark and a perf case, 2 x --min-repeats more and
 *                2 x --min-time seconds: kernel and end-to-end timing), at
 *                the device's measured FMA rate where the run measured it,
 *                else 10^9 flop/s on a device that shares the host's cores
 *                (the scalar reference, POCL) or is not known, and 10^12 on
 *                any other (a GPU)
 *
 * The rates are an order of magnitude below what the suite's cases reach on
 * a loaded 2-core machine (the largest, 10^8 elements, take 10 to 20 s per
 * case with every unit); the factor of ten is the margin on top. Opening
 * the devices and measuring their ceilings is no unit: the worker may be
 * silent there for KCS_SETUP_TIME_LIMIT.
 */

#include "runner.h"

/* The parts of the rule above, in one place. */
static const double floor_seconds = 60;    /* every unit's, whatever its size */
static const double margin = 10;           /* the limit is the floor plus margin x the estimate */
static const double host_bytes_per_s = 1e8; /* generating, copying and checking data */
static const double host_flops_per_s = 1e9; /* the oracle; a kernel on a device sharing the host's cores */
static const double other_flops_per_s = 1e12; /* a kernel on any other device (a GPU) whose rates were not measured */

/* The share of the outputs' values the oracle computes: sample=N rows of the first output's. */
static double oracle_share(const kcs_case *c, const kcs_layout *layout)
{
    if (c->expect != KCS_EXPECT_ORACLE || c->sample == 0 || layout->output_count == 0 ||
        layout->outputs[0].ndim == 0 || layout->outputs[0].shape[0] == 0)
        return c->expect == KCS_EXPECT_ORACLE ? 1 : 0;
    double share = (double)c->sample / (double)layout->outputs[0].shape[0];
    return share < 1 ? share : 1;
}

double kcs_unit_time_limit(const kcs_runner_options *o, const kcs_case *c, int unit, const kcs_lane_device *device)
{
    if (o->time_limit != KCS_TIME_LIMIT_DERIVED)
        return o->time_limit;
    const kcs_op *op;
    kcs_op_args args;
    kcs_layout layout;
    kcs_error err = {{0}};
    if (kcs_op_prepare(c, &op, &args, &layout, &err) != KCS_OK)
        return floor_seconds; /* preparing it fails at once, with the reason */
    double bytes = op->bytes ? op->bytes(&args) : 0, flops = op->flops ? op->flops(&args) : 0;
    double estimate = bytes / host_bytes_per_s;
    if (unit == 0) {
        estimate += flops * oracle_share(c, &layout) / host_flops_per_s;
    } else {
        double rate = !device || device->shares_host_cores ? host_flops_per_s : other_flops_per_s;
        if (device && device->has_ceilings && device->ceilings.fma_flops_per_s > 0)
            rate = device->ceilings.fma_flops_per_s;
        double runs = 1 + (o->run.determinism ? 1 : 0);
        if (kcs_run_times(&o->run, c)) {
            runs += 2.0 * o->run.min_repeats;
            estimate += 2 * (o->run.min_seconds + o->run.warm_up_seconds);
        }
        estimate += runs * flops / rate;
    }
    return floor_seconds + margin * estimate;
}
