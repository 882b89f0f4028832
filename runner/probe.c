/* probe.c: `kcs probe`, the in-production probe (lib/kcs_probe.h,
 * harness/probe.c) on this host's devices: a whole cycle compared with a
 * record, with the majority of identical devices or with each op's oracle,
 * then as many further steps, cycles or seconds as asked, each step
 * compared on the device with what the first cycle established. One line
 * per device; the results as an ordinary results file, a result per device
 * and kernel of the set (case probe/<kernel>), so that the fleet report
 * shows them like any other (docs/fleet.md, "The probe").
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "manifest.h"
#include "probe.h"
#include "results.h"
#include "runner.h"

static const char probe_usage[] =
    "usage: kcs probe [options]\n"
    "\n"
    "Runs the probe for silent data corruption (docs/fleet.md, \"The probe\") on this\n"
    "host's devices: a fixed set of small deterministic kernels (a tensor-core GEMM,\n"
    "an FMA GEMM, softmax, sum of squares) whose every block records its SM and a hash\n"
    "of its output slice. The first cycle is compared with the record (--expected)\n"
    "where it is of the same device, driver, build and probe version; else block by\n"
    "block with the majority of identical devices; else with each op's oracle within\n"
    "its bound. Later steps compare on the device with what that cycle established.\n"
    "\n"
    "  --backend NAME       cuda or reference (default: cuda where it has a device, else reference)\n"
    "  --device LIST        all (default), or device indices: 0,1 (repeatable)\n"
    "  --expected FILE      compare with this record (written by --record)\n"
    "  --record FILE        write the hashes the first cycle established (all devices\n"
    "                       of one model, which must agree; a lone device: the oracle)\n"
    "  --cycles N           whole cycles to run, the first one included (default 1)\n"
    "  --steps N            after the first cycle, N steps of --budget each\n"
    "  --duration S         after the first cycle, steps of --budget for S seconds\n"
    "  --budget S           device time a step may take (default 0.001)\n"
    "  --oracle-blocks N    blocks per launch the oracle checks where it decides\n"
    "                       (default 8; 0: every block)\n"
    "  --inject-flip BLOCK:PROBABILITY:SEED[:DEVICE]\n"
    "                       testing: each launch flips one bit of one output element of\n"
    "                       block BLOCK with PROBABILITY (on DEVICE, e.g. cuda:1, or all)\n"
    "  --results FILE       write the results here (default: kcs-probe-results.json)\n"
    "  --quiet              print only devices that did not pass\n"
    "  --help               this text\n"
    "\n"
    "exit status: 0 every device passed, 1 a mismatch or an error, 2 bad input or usage\n";

enum { max_devices = 64, listed_mismatches = 64 };

/* The command line. */
typedef struct {
    const char *backend;
    int devices[max_devices];
    int device_count; /* 0: all */
    const char *expected_path, *record_path, *results_path;
    long cycles, steps;
    double duration, budget;
    int oracle_blocks;
    int inject_block;
    double inject_probability;
    uint64_t inject_seed;
    char inject_device[64]; /* "" : every device */
    int quiet;
} probe_request;

/* One device's probe and what its results came to. */
typedef struct {
    char id[64];
    int index;
    kcs_device *device;
    kcs_device_info info;
    kcs_probe *probe;
    kcs_probe_verdict verdict; /* the worst so far: mismatch, then undecided, then pass */
    kcs_probe_decider decider;
    char first_message[256];
    int mismatch_count;                 /* every mismatching block */
    int listed;                         /* those of them in mismatches */
    int kernel_mismatches[KCS_PROBE_KERNELS];
    kcs_probe_mismatch mismatches[listed_mismatches];
    int injected;
    long long steps, launches;
    int sms, blocks, sms_seen;
    double *samples[KCS_PROBE_KERNELS]; /* each launch's device seconds, by kernel */
    int sample_count[KCS_PROBE_KERNELS], sample_capacity[KCS_PROBE_KERNELS];
    double *calls;                      /* the host seconds of each step call that launched */
    int call_count, call_capacity;
    double *step_seconds;               /* each result's launches on the device (the first: a cycle) */
    int step_count, step_capacity;
    double cycle_device_seconds;        /* the first cycle's launches on the device */
    double steps_wall_seconds;          /* the steps after it, first call to last result */
    char error[1024];                   /* an error that ended its probing */
} probe_device;

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Prints a usage error and returns 0. */
static int usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "kcs probe: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, " (kcs probe --help)\n");
    va_end(args);
    return 0;
}

static int take_devices(const char *text, probe_request *r)
{
    if (strcmp(text, "all") == 0)
        return 1;
    char list[512];
    snprintf(list, sizeof list, "%s", text);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *end;
        long index = strtol(item, &end, 10);
        if (*end || end == item || index < 0 || index > 1000 || r->device_count == max_devices)
            return usage_error("--device needs 'all' or device indices such as 0,1, not '%s'", text);
        r->devices[r->device_count++] = (int)index;
    }
    return 1;
}

static int take_count(const char *text, const char *name, long *count)
{
    char *end;
    *count = strtol(text, &end, 10);
    if (*end || end == text || *count < 1 || *count > 100000000) {
        fprintf(stderr, "kcs probe: %s needs a count from 1, not '%s'\n", name, text);
        return 0;
    }
    return 1;
}

static int take_seconds(const char *text, const char *name, double *seconds)
{
    char *end;
    *seconds = strtod(text, &end);
    if (*end || end == text || !(*seconds > 0.0 && *seconds <= 86400.0)) {
        fprintf(stderr, "kcs probe: %s needs seconds above 0 (at most a day), not '%s'\n", name, text);
        return 0;
    }
    return 1;
}

/* BLOCK:PROBABILITY:SEED[:DEVICE] */
static int take_injection(const char *text, probe_request *r)
{
    char copy[256], *fields[4] = {NULL};
    snprintf(copy, sizeof copy, "%s", text);
    int count = 0;
    for (char *save = NULL, *f = strtok_r(copy, ":", &save); f && count < 4; f = strtok_r(NULL, ":", &save))
        fields[count++] = f;
    /* A DEVICE id holds a colon of its own (cuda:1): the rest of the text is it. */
    const char *device = NULL;
    if (count == 4) {
        const char *second = strchr(strchr(text, ':') + 1, ':');
        device = strchr(second + 1, ':') + 1;
    }
    char *end1 = NULL, *end2 = NULL, *end3 = NULL;
    long block = count >= 3 ? strtol(fields[0], &end1, 10) : -1;
    double probability = count >= 3 ? strtod(fields[1], &end2) : -1.0;
    unsigned long long seed = count >= 3 ? strtoull(fields[2], &end3, 10) : 0;
    if (count < 3 || *end1 || *end2 || *end3 || block < 0 || block > 1000000 || !(probability > 0.0) ||
        probability > 1.0)
        return usage_error("--inject-flip needs BLOCK:PROBABILITY:SEED[:DEVICE] (a block >= 0, a probability in "
                           "(0, 1], a seed), not '%s'", text);
    r->inject_block = (int)block;
    r->inject_probability = probability;
    r->inject_seed = seed;
    snprintf(r->inject_device, sizeof r->inject_device, "%s", device ? device : "");
    return 1;
}

/* Parses the command line; 0 on a usage error (printed), -1 after --help. */
static int parse(int argc, char **argv, probe_request *r)
{
    static const struct option options[] = {
        {"backend", required_argument, 0, 'b'},  {"device", required_argument, 0, 'd'},
        {"expected", required_argument, 0, 'e'}, {"record", required_argument, 0, 'r'},
        {"cycles", required_argument, 0, 'c'},   {"steps", required_argument, 0, 's'},
        {"duration", required_argument, 0, 'D'}, {"budget", required_argument, 0, 'B'},
        {"oracle-blocks", required_argument, 0, 'o'}, {"inject-flip", required_argument, 0, 'i'},
        {"results", required_argument, 0, 'R'},  {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    memset(r, 0, sizeof *r);
    r->results_path = "kcs-probe-results.json";
    r->cycles = 1;
    r->budget = 1e-3;
    r->oracle_blocks = 8;
    unsigned char given[128] = {0};
    optind = 2; /* after "probe" */
    for (int option; (option = getopt_long(argc, argv, "", options, NULL)) != -1;) {
        if (option > 0 && option < 128 && given[option]++ && option != 'd') {
            fprintf(stderr, "kcs probe: %s was given twice\n", argv[optind - 1 - (optarg && optarg == argv[optind - 1])]);
            return 0;
        }
        int ok = 1;
        long count = 0;
        switch (option) {
        case 'b': r->backend = optarg; break;
        case 'd': ok = take_devices(optarg, r); break;
        case 'e': r->expected_path = optarg; break;
        case 'r': r->record_path = optarg; break;
        case 'c': ok = take_count(optarg, "--cycles", &r->cycles); break;
        case 's': ok = take_count(optarg, "--steps", &r->steps); break;
        case 'D': ok = take_seconds(optarg, "--duration", &r->duration); break;
        case 'B': ok = take_seconds(optarg, "--budget", &r->budget); break;
        case 'o':
            ok = strcmp(optarg, "0") == 0 || take_count(optarg, "--oracle-blocks", &count);
            r->oracle_blocks = (int)count;
            break;
        case 'i': ok = take_injection(optarg, r); break;
        case 'R': r->results_path = optarg; break;
        case 'q': r->quiet = 1; break;
        case 'h': fputs(probe_usage, stdout); return -1;
        default: fputs(probe_usage, stderr); return 0;
        }
        if (!ok)
            return 0;
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
    if ((given['s'] != 0) + (given['D'] != 0) + (given['c'] != 0) > 1) {
        fprintf(stderr, "kcs probe: give one of --cycles, --steps and --duration\n");
        return 0;
    }
    if (r->expected_path && r->record_path && strcmp(r->expected_path, r->record_path) == 0) {
        fprintf(stderr, "kcs probe: --record would write over the --expected file %s\n", r->record_path);
        return 0;
    }
    return 1;
}

/* The backend to probe: the one named, else cuda where it has a device, else the reference. */
static const kcs_backend *choose_backend(const probe_request *r)
{
    const kcs_backend *reference = NULL, *cuda = NULL;
    for (size_t b = 0; b < kcs_builtin_backend_count; b++) {
        const kcs_backend *backend = kcs_builtin_backends[b];
        if (r->backend && strcmp(backend->name, r->backend) == 0)
            return backend;
        if (strcmp(backend->name, "reference") == 0)
            reference = backend;
        if (strcmp(backend->name, "cuda") == 0)
            cuda = backend;
    }
    if (r->backend)
        return NULL;
    int count = 0;
    kcs_error err = {{0}};
    if (cuda && cuda->device_count(&count, &err) == KCS_OK && count > 0)
        return cuda;
    return reference;
}

/* Samples kept of each kind: the first 2^20 (8 MB), so that a run of hours stays bounded; the
 * medians printed and written are of those. */
enum { max_samples = 1 << 20 };

static void add_sample(double **samples, int *count, int *capacity, double value)
{
    if (*count == max_samples)
        return;
    if (*count == *capacity) {
        int grown = *capacity ? 2 * *capacity : 256;
        double *more = realloc(*samples, sizeof *more * (size_t)grown);
        if (!more)
            return;
        *samples = more;
        *capacity = grown;
    }
    (*samples)[(*count)++] = value;
}

/* Takes one result (of the first cycle or a step) into the device's account. */
static void account(probe_device *d, const kcs_probe_result *result)
{
    if (result->verdict == KCS_PROBE_PENDING)
        return;
    d->steps++;
    d->launches += result->launches;
    if (result->host_seconds > 0.0) /* the kcs_probe_step call that launched this step */
        add_sample(&d->calls, &d->call_count, &d->call_capacity, result->host_seconds);
    add_sample(&d->step_seconds, &d->step_count, &d->step_capacity, result->device_seconds);
    d->injected += result->injected_count;
    if (result->sms_seen > d->sms_seen)
        d->sms_seen = result->sms_seen;
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        for (int chunk = 0; chunk < KCS_PROBE_CHUNKS; chunk++)
            if (result->chunk_seconds[k][chunk] > 0.0)
                add_sample(&d->samples[k], &d->sample_count[k], &d->sample_capacity[k], result->chunk_seconds[k][chunk]);
    int listed = result->mismatch_count < KCS_PROBE_MAX_MISMATCHES ? result->mismatch_count : KCS_PROBE_MAX_MISMATCHES;
    for (int m = 0; m < listed && d->listed < listed_mismatches; m++)
        d->mismatches[d->listed++] = result->mismatches[m];
    d->mismatch_count += result->mismatch_count;
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        d->kernel_mismatches[k] += result->kernel_mismatches[k];
    int rank[] = {[KCS_PROBE_PENDING] = 0, [KCS_PROBE_PASS] = 1, [KCS_PROBE_UNDECIDED] = 2, [KCS_PROBE_MISMATCH] = 3};
    if (rank[result->verdict] > rank[d->verdict]) {
        d->verdict = result->verdict;
        d->decider = result->decider;
        snprintf(d->first_message, sizeof d->first_message, "%s", result->message);
    } else if (d->verdict == KCS_PROBE_PASS && result->verdict == KCS_PROBE_PASS) {
        d->decider = result->decider;
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *values, int count)
{
    if (count == 0)
        return 0.0;
    double *sorted = malloc(sizeof *sorted * (size_t)count);
    if (!sorted)
        return 0.0;
    memcpy(sorted, values, sizeof *sorted * (size_t)count);
    qsort(sorted, (size_t)count, sizeof *sorted, compare_doubles);
    double m = count % 2 ? sorted[count / 2] : 0.5 * (sorted[count / 2 - 1] + sorted[count / 2]);
    free(sorted);
    return m;
}

static double maximum(const double *values, int count)
{
    double m = 0.0;
    for (int i = 0; i < count; i++)
        m = values[i] > m ? values[i] : m;
    return m;
}

/* "gemm-fma chunk 3 block 17 (slice 413) on SM 8" and what decided it. */
static void describe_mismatch(const probe_device *d, const kcs_probe_mismatch *m, char *text, size_t size)
{
    char sm[32];
    if (strcmp(d->info.platform, "CUDA") == 0)
        snprintf(sm, sizeof sm, "SM %u", m->sm);
    else
        snprintf(sm, sizeof sm, "cpu %u", m->sm);
    char expected[64] = "";
    if (m->decider == KCS_PROBE_BY_RECORD || (m->decider == KCS_PROBE_BY_MAJORITY && m->expected))
        snprintf(expected, sizeof expected, " not %016" PRIx64, m->expected);
    snprintf(text, size, "%s: %s slice %u (chunk %u, block %u) on %s, hash %016" PRIx64 "%s (%s)%s%s%s", d->id,
             kcs_probe_kernel_name(m->kernel), m->slice, m->chunk, m->block, sm, m->hash, expected,
             kcs_probe_decider_name(m->decider), m->injected ? " [injected]" : "", m->detail[0] ? ": " : "",
             m->detail);
}

/* The device's one line, and a line per mismatching block. */
static void print_device(const probe_device *d, int quiet)
{
    if (d->error[0]) {
        printf("%s (%s): ERROR %s\n", d->id, d->info.name, d->error);
        return;
    }
    if (quiet && d->verdict == KCS_PROBE_PASS)
        return;
    const char *verdict = d->verdict == KCS_PROBE_PASS       ? "pass"
                          : d->verdict == KCS_PROBE_MISMATCH ? "MISMATCH"
                                                             : "UNDECIDED";
    int cuda = strcmp(d->info.platform, "CUDA") == 0;
    printf("%s (%s): %s by %s: %lld launches, %d of %d %s ran blocks; first cycle %.3f ms on the device", d->id,
           d->info.name, verdict, kcs_probe_decider_name(d->decider), d->launches, d->sms_seen, d->sms,
           cuda ? "SMs" : "cpus", 1e3 * d->cycle_device_seconds);
    if (d->step_count > 1)
        printf("; %d steps after it in %.3f s, each %.3f ms on the device (median, max %.3f)", d->step_count - 1,
               d->steps_wall_seconds, 1e3 * median(d->step_seconds + 1, d->step_count - 1),
               1e3 * maximum(d->step_seconds + 1, d->step_count - 1));
    if (d->call_count)
        printf(", a step call %.3f ms (median, max %.3f)", 1e3 * median(d->calls, d->call_count),
               1e3 * maximum(d->calls, d->call_count));
    if (d->injected)
        printf("; %d flips injected", d->injected);
    printf("\n");
    if (d->verdict == KCS_PROBE_UNDECIDED)
        printf("  %s\n", d->first_message);
    for (int m = 0; m < d->listed; m++) {
        char text[512];
        describe_mismatch(d, &d->mismatches[m], text, sizeof text);
        printf("  MISMATCH %s\n", text);
    }
    if (d->mismatch_count > d->listed)
        printf("  and %d more mismatching blocks (the first %d of each step are named)\n",
               d->mismatch_count - d->listed, KCS_PROBE_MAX_MISMATCHES);
}

/* After the first cycle: steps on every device at once (each step launched
 * as soon as its device's previous one has finished) until --steps, --cycles
 * or --duration is reached (a cycle count at least: the step in flight then
 * is finished too), each result accounted. */
static void run_steps(probe_device devices[], int count, const probe_request *r)
{
    long long launches_before[max_devices], launched[max_devices] = {0};
    int done[max_devices] = {0}, finished = 0;
    const long long cycle_launches = KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS;
    double started = now_seconds();
    for (int i = 0; i < count; i++) {
        launches_before[i] = devices[i].launches;
        done[i] = devices[i].error[0] || !devices[i].probe;
        finished += done[i];
    }
    while (finished < count) {
        for (int i = 0; i < count; i++) {
            if (done[i])
                continue;
            probe_device *d = &devices[i];
            int enough = r->steps          ? launched[i] >= r->steps
                         : r->duration > 0 ? now_seconds() - started >= r->duration
                                           : d->launches - launches_before[i] >= (r->cycles - 1) * cycle_launches;
            kcs_probe_result result;
            kcs_error err = {{0}};
            kcs_status status = enough ? kcs_probe_wait(d->probe, &result, &err)
                                       : kcs_probe_step(d->probe, &result, &err);
            if (enough || status != KCS_OK) {
                done[i] = 1;
                finished++;
                d->steps_wall_seconds = now_seconds() - started;
            }
            if (status != KCS_OK) {
                snprintf(d->error, sizeof d->error, "%s", err.message);
                continue;
            }
            /* A step call launched unless it found the step before still running. */
            launched[i] += !enough && (result.verdict != KCS_PROBE_PENDING || result.step == 0);
            account(d, &result);
        }
    }
}

/* One result per device and kernel of the set, for the fleet report. */
static void add_results(kcs_results *results, const probe_device *d, const char *backend_name)
{
    uint64_t *hashes = malloc(sizeof *hashes * KCS_PROBE_CHUNKS * (size_t)d->blocks);
    kcs_run_result *run = calloc(1, sizeof *run);
    for (int k = 0; k < KCS_PROBE_KERNELS && run; k++) {
        memset(run, 0, sizeof *run);
        char case_name[64];
        snprintf(case_name, sizeof case_name, "probe/%s", kcs_probe_kernel_name(k));
        int mismatches = d->kernel_mismatches[k];
        char first[512] = "";
        for (int m = 0; m < d->listed && !first[0]; m++)
            if (d->mismatches[m].kernel == k)
                describe_mismatch(d, &d->mismatches[m], first, sizeof first);
        if (d->error[0]) {
            run->outcome = KCS_OUTCOME_ERROR;
            snprintf(run->message, sizeof run->message, "%s", d->error);
        } else if (mismatches || d->verdict == KCS_PROBE_UNDECIDED) {
            run->outcome = KCS_OUTCOME_FAIL;
            if (mismatches)
                snprintf(run->message, sizeof run->message, "%d block%s differed%s%s", mismatches,
                         mismatches == 1 ? "" : "s", first[0] ? ", the first: " : "", first);
            else
                snprintf(run->message, sizeof run->message, "undecided: %s", d->first_message);
        } else {
            run->outcome = KCS_OUTCOME_PASS;
            snprintf(run->message, sizeof run->message, "%lld launches equal to the %s's hashes; %d of %d SMs",
                     d->launches / KCS_PROBE_KERNELS, kcs_probe_decider_name(d->decider), d->sms_seen, d->sms);
        }
        run->check.passed = run->outcome == KCS_OUTCOME_PASS;
        run->check.checked = (size_t)d->sample_count[k] * (size_t)d->blocks; /* blocks compared */
        if (!d->probe) /* it never opened: d->error says why */
            run->check.checked = 0;
        run->check.failures = (size_t)mismatches;
        run->check.worst_output = -1;
        if (d->sample_count[k] > 0) {
            run->timed = 1;
            double *samples = malloc(sizeof *samples * (size_t)d->sample_count[k]);
            if (samples) {
                memcpy(samples, d->samples[k], sizeof *samples * (size_t)d->sample_count[k]);
                kcs_timing_from_samples(samples, d->sample_count[k], &run->kernel);
                free(samples);
            }
        }
        /* The blocks' hashes of the last cycle: what identical devices must share bit for bit. */
        kcs_error err = {{0}};
        if (hashes && d->probe && !d->error[0] && kcs_probe_cycle_hashes(d->probe, k, hashes, &err) == KCS_OK) {
            run->hashed_outputs = 1;
            snprintf(run->output_names[0], sizeof run->output_names[0], "slices");
            kcs_sha256_bytes(hashes, sizeof *hashes * KCS_PROBE_CHUNKS * (size_t)d->blocks, run->output_hashes[0]);
        }
        kcs_result_entry entry = {.case_name = case_name, .file = "", .backend = backend_name, .device_id = d->id,
                                  .kernel = "probe", .expected_from = kcs_probe_decider_name(d->decider), .run = run};
        kcs_results_add(results, &entry);
    }
    free(run);
    free(hashes);
}

/* Opens the devices asked for and a probe on each; returns how many, or -1 (printed). */
static int open_devices(const kcs_backend *backend, const probe_request *r, probe_device devices[], int *bad_input)
{
    int available = 0;
    kcs_error err = {{0}};
    if (backend->device_count(&available, &err) != KCS_OK || available == 0) {
        fprintf(stderr, "kcs probe: no %s device: %s\n", backend->name, err.message);
        return -1;
    }
    int count = r->device_count ? r->device_count : available;
    if (count > max_devices)
        count = max_devices;
    for (int i = 0; i < count; i++) {
        probe_device *d = &devices[i];
        d->index = r->device_count ? r->devices[i] : i;
        snprintf(d->id, sizeof d->id, "%s:%d", backend->name, d->index);
        if (d->index >= available) {
            fprintf(stderr, "kcs probe: there is no %s (the %s backend has %d devices)\n", d->id, backend->name,
                    available);
            *bad_input = 1;
            return -1;
        }
        if (backend->open(d->index, &d->device, &d->info, &err) != KCS_OK) {
            snprintf(d->error, sizeof d->error, "cannot open it: %s", err.message);
            continue;
        }
        int injects = r->inject_probability > 0.0 && (!r->inject_device[0] || strcmp(r->inject_device, d->id) == 0);
        kcs_probe_options options = {.budget_seconds = r->budget, .expected_path = r->expected_path,
                                     .inject_block = injects ? r->inject_block : 0,
                                     .inject_probability = injects ? r->inject_probability : 0.0,
                                     .inject_seed = r->inject_seed};
        if (kcs_probe_open_device(backend, d->device, &d->info, &options, &d->probe, &err) != KCS_OK) {
            snprintf(d->error, sizeof d->error, "%s", err.message);
            continue;
        }
        kcs_probe_geometry(d->probe, &d->sms, &d->blocks, NULL);
        if (injects && r->inject_block >= d->blocks) {
            fprintf(stderr, "kcs probe: --inject-flip block %d: %s has %d blocks a launch (0 to %d)\n",
                    r->inject_block, d->id, d->blocks, d->blocks - 1);
            *bad_input = 1;
            return -1;
        }
    }
    return count;
}

static void close_devices(const kcs_backend *backend, probe_device devices[], int count)
{
    for (int i = 0; i < count; i++) {
        kcs_probe_close(devices[i].probe);
        if (devices[i].device)
            backend->close(devices[i].device);
        for (int k = 0; k < KCS_PROBE_KERNELS; k++)
            free(devices[i].samples[k]);
        free(devices[i].calls);
        free(devices[i].step_seconds);
    }
}

/* The first cycle on every device at once (kcs_probe_calibrate: the record,
 * the majority of identical devices, the oracle), then the record where
 * asked; returns 0 when a record was asked for and not written. */
static int first_cycle(probe_device devices[], int count, const probe_request *r)
{
    kcs_probe *probes[max_devices];
    int probed[max_devices], probe_count = 0;
    for (int i = 0; i < count; i++)
        if (devices[i].probe) {
            probed[probe_count] = i;
            probes[probe_count++] = devices[i].probe;
        }
    if (!probe_count)
        return !r->record_path;
    kcs_error err = {{0}};
    kcs_probe_result *first = calloc(max_devices, sizeof *first);
    if (!first || kcs_probe_calibrate(probes, probe_count, r->oracle_blocks, first, &err) != KCS_OK) {
        for (int p = 0; p < probe_count; p++)
            snprintf(devices[probed[p]].error, sizeof devices[probed[p]].error, "%s",
                     first ? err.message : "out of memory");
        free(first);
        return !r->record_path;
    }
    for (int p = 0; p < probe_count; p++) {
        account(&devices[probed[p]], &first[p]);
        devices[probed[p]].cycle_device_seconds = first[p].device_seconds;
    }
    free(first);
    if (!r->record_path)
        return 1;
    const probe_device *d = &devices[probed[0]];
    if (d->verdict != KCS_PROBE_PASS || kcs_probe_write_record(d->probe, r->record_path, &err) != KCS_OK) {
        fprintf(stderr, "kcs probe: no record written to %s: %s\n", r->record_path,
                d->verdict != KCS_PROBE_PASS ? "the first cycle did not pass on the device it records" : err.message);
        return 0;
    }
    if (!r->quiet)
        printf("kcs probe: wrote %s from %s (%s), by %s\n", r->record_path, d->id, d->info.name,
               kcs_probe_decider_name(d->decider));
    return 1;
}

/* Prints each device's line and writes the results file; returns the exit status. */
static int report(const kcs_backend *backend, probe_device devices[], int count, const probe_request *r, int argc,
                  char **argv)
{
    kcs_results *results = kcs_results_create();
    if (!results) {
        fprintf(stderr, "kcs probe: out of memory\n");
        return KCS_EXIT_USAGE;
    }
    char revision[128];
    kcs_read_revision(revision, sizeof revision);
    /* The probe's set is deterministic by construction (fixed grids, each block's
     * slice computed in one fixed order, no atomics: docs/fleet.md, "The probe"),
     * and every later step compares each block with the cycle before bit for bit,
     * so its hashes are written as a run with --determinism writes them: the
     * fleet report compares identical cards' bits (docs/runner.md, "Peers: one rule"). */
    kcs_run_options run_options = {.determinism = 1};
    kcs_results_set_run(results, revision, argc, argv, &run_options);
    int exit_status = KCS_EXIT_PASSED;
    for (int i = 0; i < count; i++) {
        probe_device *d = &devices[i];
        if (d->device)
            kcs_results_add_device(results, d->id, backend->name, d->index, &d->info, NULL);
        print_device(d, r->quiet);
        add_results(results, d, backend->name);
        if (d->error[0] || d->verdict != KCS_PROBE_PASS)
            exit_status = KCS_EXIT_FAILED;
    }
    kcs_error err = {{0}};
    if (kcs_results_write_json(results, r->results_path, &err) != KCS_OK) {
        fprintf(stderr, "kcs probe: %s\n", err.message);
        exit_status = KCS_EXIT_USAGE;
    }
    kcs_results_free(results);
    return exit_status;
}

int kcs_command_probe(int argc, char **argv)
{
    probe_request r;
    int parsed = parse(argc, argv, &r);
    if (parsed <= 0)
        return parsed < 0 ? KCS_EXIT_PASSED : KCS_EXIT_USAGE;
    const kcs_backend *backend = choose_backend(&r);
    if (!backend) {
        fprintf(stderr, "kcs probe: no backend '%s' in this build\n", r.backend);
        return KCS_EXIT_USAGE;
    }
    if (!backend->probe) {
        fprintf(stderr, "kcs probe: the %s backend has no probe (cuda and reference have)\n", backend->name);
        return KCS_EXIT_USAGE;
    }
    kcs_error err = {{0}};
    if (r.expected_path) { /* a bad record is bad input: read it once before any device opens */
        kcs_probe_record_file record;
        if (kcs_probe_record_read(r.expected_path, &record, &err) != KCS_OK) {
            fprintf(stderr, "kcs probe: %s\n", err.message);
            return KCS_EXIT_USAGE;
        }
        kcs_probe_record_file_free(&record);
    }
    probe_device *devices = calloc(max_devices, sizeof *devices);
    if (!devices) {
        fprintf(stderr, "kcs probe: out of memory\n");
        return KCS_EXIT_USAGE;
    }
    int bad_input = 0, count = open_devices(backend, &r, devices, &bad_input);
    int exit_status = KCS_EXIT_PASSED;
    if (count < 0) { /* printed: a device that is not there (usage), or none at all (nothing checked) */
        exit_status = bad_input ? KCS_EXIT_USAGE : KCS_EXIT_FAILED;
    } else {
        if (!first_cycle(devices, count, &r) && r.record_path)
            exit_status = KCS_EXIT_FAILED;
        if (r.steps || r.duration > 0.0 || r.cycles > 1)
            run_steps(devices, count, &r);
        int reported = report(backend, devices, count, &r, argc, argv);
        exit_status = exit_status == KCS_EXIT_PASSED ? reported : exit_status;
    }
    close_devices(backend, devices, max_devices);
    free(devices);
    return exit_status;
}
