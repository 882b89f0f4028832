/* replica_backend.c: four identical devices, for the tests of a run over
 * several devices at once (tests/multi_device_test.sh, docs/runner.md "All
 * devices at once"). Built into build/kcs-saboteur only, as backend
 * "replica" beside "saboteur".
 *
 * Each replica is the reference backend under one name, model and driver, so
 * the runner must hold their outputs to the same bits. Its kernels are the
 * reference's scale rows and its f32 gemm row (an output with rows and
 * columns), wrapped, and a second f32 gemm row, `wide`, that computes in f64
 * and rounds once: within the bound, but other bits than `loop`'s, so that
 * pooling two kernels of one case into one agreement group would be called a
 * disagreement. Two devices misbehave on purpose:
 *
 *   replica:0, replica:1  honest
 *   replica:2             flips the lowest bit of the middle element of its
 *                         first output (y[n/2]; C_out[(m n)/2]): silent data
 *                         corruption, at most one unit in the last place
 *   replica:3             does each kernel's work eight times and reports the
 *                         time of all eight: a straggler
 *
 * A replica's clock counts the work it did: one nanosecond per element
 * processed, in every run it made. The tests judge stragglers on it, since
 * the CPU time of the machine that runs ninja check (two cores, shared with
 * every other test and build) varies several times over from run to run,
 * while a GPU's clock does not; the runner's straggler rule is what is under
 * test, not this machine's load.
 *
 * With KCS_REPLICA_RENDEZVOUS=DIR each kernel first leaves a file DIR/<index>
 * and waits (10 s at most) until another replica's file is there: two
 * replicas' kernels pass only when their workers run at the same time, and a
 * run of one after the other fails with an error that says so. It proves
 * the workers overlap by construction, not by timing.
 *
 * With KCS_REPLICA_FLIPS=FILE, FILE holds how many more kernel runs
 * replica:2 corrupts (each run that flips writes it one lower; 0: none): a
 * deviation that stops, which the runner's rerun of a disagreeing device
 * must call intermittent.
 *
 * Lanes (docs/runner.md, "All devices at once"): KCS_REPLICA_PCI=A,B,... gives
 * replica i the PCI address in place i of the list ("pci_bus_id=" in its
 * details, as CUDA and OpenCL write it; an empty place, none), so that two
 * replicas can be one card seen twice; KCS_REPLICA_HOST=i,... makes those
 * replicas share the host's cores, and the others not (as GPUs); without it
 * every replica shares them, as the reference it is.
 *
 * With KCS_REPLICA_CEILINGS=FILE the replicas have ceilings: each call of
 * measure_ceilings appends "replica:<i> <key> <key> ..." to FILE, naming the
 * rates the runner asked for (tests/ceiling_selection_test.sh), and "measures"
 * each of them as a fixed rate, 1e12 per second, taking no time. Without it
 * they have none, as before.
 *
 * Run only it: build/kcs-saboteur run --backend replica --jobs 4 --cases tests/cases scale
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "kcs_ref.h"
#include "reference_backend.h"
#include "speed.h"

extern const kcs_backend kcs_reference_backend;

enum { replica_count = 4, flipping_replica = 2, slow_replica = 3, slow_factor = 8 };

/* The reference devices behind each replica, to tell which replica a kernel runs on. */
static kcs_device *replicas[replica_count];

static kcs_status count_replicas(int *count, kcs_error *err)
{
    (void)err;
    *count = replica_count;
    return KCS_OK;
}

static kcs_status open_replica(int index, kcs_device **device, kcs_device_info *info, kcs_error *err)
{
    if (index < 0 || index >= replica_count)
        return kcs_fail(err, KCS_ERROR, "the replica backend has %d devices, not %d", replica_count, index + 1);
    if (kcs_reference_backend.open(0, device, info, err) != KCS_OK)
        return KCS_ERROR;
    replicas[index] = *device;
    snprintf(info->name, sizeof info->name, "replica card");
    snprintf(info->platform, sizeof info->platform, "replica");
    const char *addresses = getenv("KCS_REPLICA_PCI"), *hosts = getenv("KCS_REPLICA_HOST");
    for (int place = 0; addresses && place < index; place++)
        addresses = strchr(addresses, ',') ? strchr(addresses, ',') + 1 : NULL;
    if (addresses && *addresses && *addresses != ',') {
        size_t used = strlen(info->details);
        snprintf(info->details + used, sizeof info->details - used, "; pci_bus_id=%.*s",
                 (int)strcspn(addresses, ","), addresses);
    }
    if (hosts) {
        info->shares_host_cores = 0;
        for (const char *at = hosts; at; at = strchr(at, ',') ? strchr(at, ',') + 1 : NULL)
            info->shares_host_cores |= atoi(at) == index && *at >= '0' && *at <= '9';
    }
    return KCS_OK;
}

static int replica_index(kcs_device *device)
{
    for (int i = 0; i < replica_count; i++)
        if (replicas[i] == device)
            return i;
    return -1;
}

/* With KCS_REPLICA_RENDEZVOUS: leaves this replica's file and waits for another's. */
static kcs_status meet_another_replica(int index, kcs_error *err)
{
    const char *folder = getenv("KCS_REPLICA_RENDEZVOUS");
    if (!folder)
        return KCS_OK;
    char path[4096];
    snprintf(path, sizeof path, "%s/%d", folder, index);
    FILE *mark = fopen(path, "w");
    if (!mark)
        return kcs_fail(err, KCS_ERROR, "cannot write %s", path);
    fclose(mark);
    for (int tries = 0; tries < 1000; tries++) {
        for (int other = 0; other < replica_count; other++) {
            snprintf(path, sizeof path, "%s/%d", folder, other);
            if (other != index && access(path, F_OK) == 0)
                return KCS_OK;
        }
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
    return kcs_fail(err, KCS_ERROR, "no other replica ran a kernel at the same time (10 s)");
}

/* Whether replica:2 corrupts this run: always, or while KCS_REPLICA_FLIPS's count lasts. */
static int flips_this_run(void)
{
    const char *path = getenv("KCS_REPLICA_FLIPS");
    if (!path)
        return 1;
    FILE *file = fopen(path, "r+");
    int left = 0;
    if (!file || fscanf(file, "%d", &left) != 1 || left <= 0) {
        if (file)
            fclose(file);
        return 0;
    }
    rewind(file);
    fprintf(file, "%d\n", left - 1);
    fclose(file);
    return 1;
}

/* The reference's row of op and dtype. */
static kcs_kernel_run *reference_row(const char *op, kcs_dtype dtype)
{
    const kcs_kernel *row = kcs_backend_find_kernel(&kcs_reference_backend, op, dtype, NULL);
    return row ? row->run : NULL;
}

/* The `wide` row's work: the f32 gemm computed by the reference's f64 gemm
 * and rounded once to f32. */
static KCS_KERNEL_RUN(gemm_f32_in_f64)
{
    (void)device, (void)kernel_seconds;
    const kcs_gemm_args *g = &args->gemm;
    size_t sizes[3] = {g->m * g->k, g->k * g->n, g->m * g->n};
    double *wide[4] = {NULL, NULL, NULL, NULL};
    for (int i = 0; i < 4; i++)
        wide[i] = calloc(sizes[i < 3 ? i : 2] + 1, sizeof(double));
    kcs_status status = KCS_OK;
    if (!wide[0] || !wide[1] || !wide[2] || !wide[3])
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (int i = 0; i < (g->beta != 0.0 ? 3 : 2) && status == KCS_OK; i++) { /* c unread when beta = 0 */
        const float *narrow = kcs_reference_buffer_data(inputs[i]);
        for (size_t e = 0; e < sizes[i]; e++)
            wide[i][e] = narrow[e];
    }
    if (status == KCS_OK) {
        kcs_ref_gemm_f64(g->transpose_a, g->transpose_b, g->m, g->n, g->k, g->alpha, wide[0], wide[1], g->beta,
                         wide[2], wide[3]);
        float *c_out = kcs_reference_buffer_data(outputs[0]);
        for (size_t e = 0; e < sizes[2]; e++)
            c_out[e] = (float)wide[3][e];
    }
    for (int i = 0; i < 4; i++)
        free(wide[i]);
    return status;
}

/* run (a reference row, or gemm_f32_in_f64) as this replica runs it. */
static kcs_status run_as_replica(const char *op, kcs_dtype dtype, kcs_kernel_run *run, kcs_device *device,
                                 const kcs_op_args *args, kcs_buffer *const inputs[], kcs_buffer *const outputs[],
                                 double *kernel_seconds, kcs_error *err)
{
    if (!run)
        return kcs_fail(err, KCS_ERROR, "the reference has no %s %s kernel", op, kcs_dtype_name(dtype));
    int index = replica_index(device), runs = index == slow_replica ? slow_factor : 1;
    if (meet_another_replica(index, err) != KCS_OK)
        return KCS_ERROR;
    for (int r = 0; r < runs; r++) {
        double seconds = 0.0;
        if (run(device, args, inputs, outputs, &seconds, err) != KCS_OK)
            return KCS_ERROR;
    }
    int gemm = strcmp(op, "gemm") == 0;
    size_t elements = gemm ? args->gemm.m * args->gemm.n : args->scale.n;
    if (kernel_seconds)
        *kernel_seconds = 1e-9 * (double)(gemm ? elements * args->gemm.k : elements) * runs;
    if (index == flipping_replica && elements > 0 && flips_this_run()) {
        unsigned char *y = kcs_reference_buffer_data(outputs[0]);
        y[(elements / 2) * kcs_dtype_size(dtype)] ^= 1; /* little-endian: the lowest mantissa bit */
    }
    return KCS_OK;
}

static KCS_KERNEL_RUN(replica_scale_f32)
{
    return run_as_replica("scale", KCS_F32, reference_row("scale", KCS_F32), device, args, inputs, outputs,
                          kernel_seconds, err);
}

static KCS_KERNEL_RUN(replica_scale_f64)
{
    return run_as_replica("scale", KCS_F64, reference_row("scale", KCS_F64), device, args, inputs, outputs,
                          kernel_seconds, err);
}

static KCS_KERNEL_RUN(replica_gemm_f32)
{
    return run_as_replica("gemm", KCS_F32, reference_row("gemm", KCS_F32), device, args, inputs, outputs,
                          kernel_seconds, err);
}

static KCS_KERNEL_RUN(replica_gemm_f32_wide)
{
    return run_as_replica("gemm", KCS_F32, gemm_f32_in_f64, device, args, inputs, outputs, kernel_seconds, err);
}

static const kcs_kernel rows[] = {
    {"scale", KCS_F32, "loop", "the reference's loop, on a replica", replica_scale_f32, NULL},
    {"scale", KCS_F64, "loop", "the reference's loop, on a replica", replica_scale_f64, NULL},
    {"gemm", KCS_F32, "loop", "the reference's gemm, on a replica", replica_gemm_f32, NULL},
    {"gemm", KCS_F32, "wide", "the reference's f64 gemm rounded once to f32, on a replica", replica_gemm_f32_wide,
     NULL},
};
/* Records which rates were asked for (see the header) and fills them. */
static kcs_status record_ceilings(kcs_device *device, kcs_ceiling_mask wanted, kcs_ceilings *ceilings,
                                  kcs_error *err)
{
    memset(ceilings, 0, sizeof *ceilings);
    const char *path = getenv("KCS_REPLICA_CEILINGS");
    FILE *log = path ? fopen(path, "a") : NULL;
    if (!log)
        return kcs_fail(err, KCS_ERROR, "cannot append to KCS_REPLICA_CEILINGS=%s", path ? path : "");
    fprintf(log, "replica:%d", replica_index(device));
    for (const kcs_ceiling_rate *rate = kcs_ceiling_rates; rate->key; rate++)
        if (wanted & rate->bit) {
            fprintf(log, " %s", rate->key);
            *kcs_ceiling_rate_slot(ceilings, rate) = 1e12;
        }
    fprintf(log, "\n");
    snprintf(ceilings->method, sizeof ceilings->method, "replica: a fixed 1e12 per second for each rate asked for");
    return fclose(log) == 0 ? KCS_OK : kcs_fail(err, KCS_ERROR, "cannot write KCS_REPLICA_CEILINGS=%s", path);
}

static const kcs_kernel_table table = KCS_KERNEL_TABLE(rows);
static const kcs_kernel_table *const tables[] = {&table, NULL};

kcs_backend kcs_replica_backend;

/* Assembled before main(), as the saboteur runner's backend is: it borrows
 * the reference backend's functions, which another file defines. */
__attribute__((constructor)) static void fill_replica_backend(void)
{
    kcs_replica_backend = kcs_reference_backend;
    kcs_replica_backend.name = "replica";
    kcs_replica_backend.device_count = count_replicas;
    kcs_replica_backend.open = open_replica;
    kcs_replica_backend.measure_ceilings = getenv("KCS_REPLICA_CEILINGS") ? record_ceilings : NULL;
    kcs_replica_backend.pace = NULL;
    kcs_replica_backend.kernel_tables = tables;
}
