/* probe.c: the probe over any backend that has one (probe.h, lib/kcs_probe.h;
 * docs/fleet.md, "The probe").
 *
 * Everything here is the backend-independent part: the set's inputs, made
 * once from fixed seeds with the generator; which launches a step takes
 * within its budget; which bit a test's injection flips; turning a step's
 * summary into a verdict; the calibration that compares a cycle block by
 * block with identical peers (a strict majority) or with each op's oracle
 * within its bound, through the same descriptors the runner checks cases
 * with (the descriptors in ops/); and the record file. The kernels are the backend's
 * (ref/probe.c, cuda/probe.cu), reached through kcs_backend.probe.
 */
#include "probe.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "dtype.h"
#include "generator.h"
#include "op.h"

_Static_assert(sizeof ((kcs_probe_result *)0)->chunk_seconds[0] / sizeof(double) == KCS_PROBE_CHUNKS,
               "kcs_probe_result.chunk_seconds holds the set's chunks");

struct kcs_probe {
    const kcs_backend *backend;
    kcs_device *device;
    kcs_device_info info;
    const kcs_probe_methods *methods;
    kcs_probe_state *state;
    kcs_probe_identity identity;
    int sms, blocks;
    size_t slices;                 /* per kernel: KCS_PROBE_CHUNKS * blocks */
    kcs_probe_options options;
    kcs_probe_expected *expected;  /* [KERNELS * slices], the device's copy's source */
    kcs_probe_decider expected_by; /* where the valid ones came from */
    char note[512];                /* why there is nothing to compare with (a record that did not apply) */
    int next_unit;                 /* the cycle's next launch (kcs_probe_unit) */
    long long cycle;               /* the cycle next_unit belongs to, from 1 */
    long long steps;               /* steps enqueued */
    double predicted[KCS_PROBE_KERNELS]; /* each kernel's fastest launch so far, seconds; 0: unknown */
    /* The step in flight. */
    int in_flight;
    kcs_probe_launch launches[KCS_PROBE_KERNELS];
    int launch_count;
    long long in_flight_cycle;
    double in_flight_host_seconds;
};

static const char *const kernel_names[KCS_PROBE_KERNELS] = {"gemm-tensor", "gemm-fma", "softmax", "sumsq"};

const char *kcs_probe_kernel_name(int kernel)
{
    return kernel >= 0 && kernel < KCS_PROBE_KERNELS ? kernel_names[kernel] : NULL;
}

const char *kcs_probe_verdict_name(kcs_probe_verdict verdict)
{
    switch (verdict) {
    case KCS_PROBE_PENDING: return "pending";
    case KCS_PROBE_PASS: return "pass";
    case KCS_PROBE_MISMATCH: return "mismatch";
    case KCS_PROBE_UNDECIDED: return "undecided";
    }
    return "unknown";
}

const char *kcs_probe_decider_name(kcs_probe_decider decider)
{
    switch (decider) {
    case KCS_PROBE_BY_NOTHING: return "nothing";
    case KCS_PROBE_BY_RECORD: return "record";
    case KCS_PROBE_BY_MAJORITY: return "majority";
    case KCS_PROBE_BY_ORACLE: return "oracle";
    }
    return "unknown";
}

void kcs_probe_geometry(const kcs_probe *probe, int *sms, int *blocks, int *cycle_launches)
{
    if (sms)
        *sms = probe->sms;
    if (blocks)
        *blocks = probe->blocks;
    if (cycle_launches)
        *cycle_launches = KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS;
}

const kcs_probe_identity *kcs_probe_identity_of(const kcs_probe *probe)
{
    return &probe->identity;
}

size_t kcs_probe_slice_words(int kernel)
{
    switch (kernel) {
    case KCS_PROBE_GEMM_TENSOR:
    case KCS_PROBE_GEMM_FMA: return KCS_PROBE_GEMM_WORDS;
    case KCS_PROBE_SOFTMAX: return KCS_PROBE_SOFTMAX_WORDS;
    case KCS_PROBE_SUMSQ: return KCS_PROBE_SUMSQ_WORDS;
    }
    return 0;
}

uint64_t kcs_probe_hash_words(const uint32_t *words, size_t count)
{
    uint64_t hash = 0;
    for (size_t w = 0; w < count; w++)
        hash += kcs_probe_word_term((uint32_t)w, words[w]);
    return hash;
}

void kcs_probe_unit(int unit, int *kernel, int *chunk)
{
    *kernel = unit % KCS_PROBE_KERNELS;
    *chunk = unit / KCS_PROBE_KERNELS;
}

void kcs_probe_injection(int block, double probability, uint64_t seed, long long cycle, int kernel, int chunk,
                         kcs_probe_launch *launch)
{
    launch->flip_block = -1;
    launch->flip_word = launch->flip_bit = 0;
    if (!(probability > 0.0) || block < 0)
        return;
    /* One counter per launch of the probe's life: the cycle, the kernel, the chunk. */
    uint64_t counter = ((uint64_t)cycle * KCS_PROBE_KERNELS + (uint64_t)kernel) * KCS_PROBE_CHUNKS + (uint64_t)chunk;
    if (kcs_unit_interval(kcs_random_bits(seed, 2 * counter)) >= probability)
        return;
    uint64_t where = kcs_random_bits(seed, 2 * counter + 1);
    launch->flip_block = block;
    launch->flip_word = (uint32_t)((where >> 5) % kcs_probe_slice_words(kernel));
    launch->flip_bit = (uint32_t)(where & 31);
}

/* ---- The inputs --------------------------------------------------------- */

/* A pool's seed: fixed by the probe's version and the pool's name. */
static kcs_distribution pool_distribution(const char *pool, double lo, double hi)
{
    kcs_distribution d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "uniform");
    snprintf(d.params[0].name, sizeof d.params[0].name, "lo");
    d.params[0].value = lo;
    snprintf(d.params[1].name, sizeof d.params[1].name, "hi");
    d.params[1].value = hi;
    d.param_count = 2;
    char name[64];
    snprintf(name, sizeof name, "kcs probe %d:%s", KCS_PROBE_VERSION, pool);
    d.seed = kcs_string_hash(name);
    return d;
}

/* The pools: their names, distributions, dtypes and sizes. */
typedef struct {
    const char *name;
    kcs_dtype dtype;
    size_t elements;
    double lo, hi;
} pool_spec;

enum { pool_tensor_a, pool_tensor_b, pool_fma_a, pool_fma_b, pool_softmax_x, pool_sumsq_x, pool_count };

static const pool_spec pools[pool_count] = {
    {"gemm-tensor:a", KCS_BF16, (size_t)KCS_PROBE_A_TILES * KCS_PROBE_TILE * KCS_PROBE_GEMM_K, -1.0, 1.0},
    {"gemm-tensor:b", KCS_BF16, (size_t)KCS_PROBE_B_TILES * KCS_PROBE_GEMM_K * KCS_PROBE_TILE, -1.0, 1.0},
    {"gemm-fma:a", KCS_F32, (size_t)KCS_PROBE_A_TILES * KCS_PROBE_TILE * KCS_PROBE_GEMM_K, -1.0, 1.0},
    {"gemm-fma:b", KCS_F32, (size_t)KCS_PROBE_B_TILES * KCS_PROBE_GEMM_K * KCS_PROBE_TILE, -1.0, 1.0},
    {"softmax:x", KCS_F32, (size_t)KCS_PROBE_SOFTMAX_POOL_ROWS * KCS_PROBE_SOFTMAX_COLS, -8.0, 8.0},
    {"sumsq:x", KCS_F64, (size_t)KCS_PROBE_SUMSQ_SEGMENTS * KCS_PROBE_SUMSQ_N, -1.0, 1.0},
};

/* Elements first .. first + count - 1 of a pool into data. */
static kcs_status generate_pool(int pool, void *data, size_t first, size_t count, kcs_error *err)
{
    const pool_spec *p = &pools[pool];
    kcs_distribution d = pool_distribution(p->name, p->lo, p->hi);
    kcs_status status = kcs_generate(&d, p->dtype, data, first, count, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "the probe's input %s", p->name);
    return status;
}

kcs_status kcs_probe_inputs_make(kcs_probe_inputs *inputs, kcs_error *err)
{
    memset(inputs, 0, sizeof *inputs);
    void *made[pool_count] = {NULL};
    for (int p = 0; p < pool_count; p++) {
        made[p] = malloc(pools[p].elements * kcs_dtype_size(pools[p].dtype));
        kcs_status status = made[p] ? generate_pool(p, made[p], 0, pools[p].elements, err)
                                    : kcs_fail(err, KCS_ERROR, "the probe's input %s: out of memory", pools[p].name);
        if (status != KCS_OK) {
            for (int q = 0; q <= p; q++)
                free(made[q]);
            return status;
        }
    }
    inputs->tensor_a = made[pool_tensor_a];
    inputs->tensor_b = made[pool_tensor_b];
    inputs->fma_a = made[pool_fma_a];
    inputs->fma_b = made[pool_fma_b];
    inputs->softmax_x = made[pool_softmax_x];
    inputs->sumsq_x = made[pool_sumsq_x];
    return KCS_OK;
}

void kcs_probe_inputs_free(kcs_probe_inputs *inputs)
{
    free((void *)inputs->tensor_a);
    free((void *)inputs->tensor_b);
    free((void *)inputs->fma_a);
    free((void *)inputs->fma_b);
    free((void *)inputs->softmax_x);
    free((void *)inputs->sumsq_x);
    memset(inputs, 0, sizeof *inputs);
}

/* ---- The oracle: one block's slice checked as a case of its op ---------- */

/* One slice as a call of its op: the args, and its inputs regenerated from
 * the pools (gathered where a slice's rows are not contiguous). */
typedef struct {
    kcs_op_args args;
    void *inputs[KCS_MAX_INPUTS];
    int input_count;
} slice_case;

static void slice_case_free(slice_case *c)
{
    for (int i = 0; i < c->input_count; i++)
        free(c->inputs[i]);
    memset(c, 0, sizeof *c);
}

static kcs_status slice_case_make(int kernel, size_t slice, slice_case *c, kcs_error *err)
{
    memset(c, 0, sizeof *c);
    const size_t tile_elements = (size_t)KCS_PROBE_TILE * KCS_PROBE_GEMM_K;
    kcs_status status = KCS_OK;
    if (kernel == KCS_PROBE_GEMM_TENSOR || kernel == KCS_PROBE_GEMM_FMA) {
        int tensor = kernel == KCS_PROBE_GEMM_TENSOR;
        kcs_dtype in = tensor ? KCS_BF16 : KCS_F32;
        c->args = (kcs_op_args){.op = "gemm", .dtype = in};
        c->args.gemm = (kcs_gemm_args){.m = KCS_PROBE_TILE, .n = KCS_PROBE_TILE, .k = KCS_PROBE_GEMM_K,
                                       .alpha = 1.0, .beta = 0.0, .tensor_cores = tensor, .c_dtype = KCS_F32,
                                       .a_scale = 1.0, .b_scale = 1.0};
        c->input_count = 3;
        c->inputs[0] = malloc(tile_elements * kcs_dtype_size(in));
        c->inputs[1] = malloc(tile_elements * kcs_dtype_size(in));
        c->inputs[2] = calloc((size_t)KCS_PROBE_TILE * KCS_PROBE_TILE, sizeof(float));
        if (!c->inputs[0] || !c->inputs[1] || !c->inputs[2])
            return kcs_fail(err, KCS_ERROR, "the probe's oracle: out of memory");
        status = generate_pool(tensor ? pool_tensor_a : pool_fma_a, c->inputs[0],
                               (slice % KCS_PROBE_A_TILES) * tile_elements, tile_elements, err);
        if (status == KCS_OK)
            status = generate_pool(tensor ? pool_tensor_b : pool_fma_b, c->inputs[1],
                                   (slice % KCS_PROBE_B_TILES) * tile_elements, tile_elements, err);
    } else if (kernel == KCS_PROBE_SOFTMAX) {
        c->args = (kcs_op_args){.op = "softmax", .dtype = KCS_F32};
        c->args.softmax = (kcs_softmax_args){.rows = KCS_PROBE_SOFTMAX_ROWS, .cols = KCS_PROBE_SOFTMAX_COLS};
        c->input_count = 1;
        float *x = malloc(sizeof(float) * KCS_PROBE_SOFTMAX_WORDS);
        c->inputs[0] = x;
        if (!x)
            return kcs_fail(err, KCS_ERROR, "the probe's oracle: out of memory");
        for (size_t i = 0; i < KCS_PROBE_SOFTMAX_ROWS && status == KCS_OK; i++) {
            size_t row = (slice * KCS_PROBE_SOFTMAX_ROWS + i) % KCS_PROBE_SOFTMAX_POOL_ROWS;
            status = generate_pool(pool_softmax_x, x + i * KCS_PROBE_SOFTMAX_COLS, row * KCS_PROBE_SOFTMAX_COLS,
                                   KCS_PROBE_SOFTMAX_COLS, err);
        }
    } else {
        c->args = (kcs_op_args){.op = "sumsq", .dtype = KCS_F64};
        c->args.sumsq = (kcs_sumsq_args){.n = KCS_PROBE_SUMSQ_N};
        c->input_count = 1;
        c->inputs[0] = malloc(sizeof(double) * KCS_PROBE_SUMSQ_N);
        if (!c->inputs[0])
            return kcs_fail(err, KCS_ERROR, "the probe's oracle: out of memory");
        status = generate_pool(pool_sumsq_x, c->inputs[0], (slice % KCS_PROBE_SUMSQ_SEGMENTS) * KCS_PROBE_SUMSQ_N,
                               KCS_PROBE_SUMSQ_N, err);
    }
    return status;
}

/* Checks one block's output words with its op's oracle and bound: *passed,
 * and on failure the checker's diagnosis in detail. */
static kcs_status oracle_check(const kcs_probe *probe, int kernel, size_t slice, const uint32_t *words, int *passed,
                               char *detail, size_t detail_size, kcs_error *err)
{
    slice_case c;
    kcs_status status = slice_case_make(kernel, slice, &c, err);
    const kcs_op *op = status == KCS_OK ? kcs_find_op(c.args.op) : NULL;
    if (status == KCS_OK && !op)
        status = kcs_fail(err, KCS_ERROR, "the probe's oracle: this build has no op '%s'", c.args.op);
    kcs_layout layout;
    if (status == KCS_OK)
        status = op->layout(&c.args, &layout, err);
    kcs_expected expected[KCS_MAX_OUTPUTS];
    memset(expected, 0, sizeof expected);
    for (int o = 0; status == KCS_OK && o < layout.output_count; o++) {
        expected[o].count = kcs_array_element_count(&layout.outputs[o]);
        expected[o].values = calloc(expected[o].count, sizeof(double));
        expected[o].bounds = calloc(expected[o].count, sizeof(double));
        if (!expected[o].values || !expected[o].bounds)
            status = kcs_fail(err, KCS_ERROR, "the probe's oracle: out of memory");
    }
    int flushing = probe->info.flushes_f32_subnormals && op && op->flushing_bounds;
    if (status == KCS_OK)
        status = op->oracle(&c.args, c.inputs, expected, err);
    if (status == KCS_OK)
        status = (flushing ? op->flushing_bounds : op->bounds)(&c.args, c.inputs, expected, err);
    if (status == KCS_OK) {
        kcs_check_result check;
        memset(&check, 0, sizeof check);
        void *actual[KCS_MAX_OUTPUTS] = {(void *)words};
        if (op->check)
            op->check(&c.args, c.inputs, actual, expected, &check);
        else
            kcs_check_outputs(&layout, actual, expected, &check);
        *passed = check.passed;
        snprintf(detail, detail_size, "%s", check.passed ? "" : check.diagnosis);
    } else {
        kcs_error_prefix(err, "the probe's oracle for %s slice %zu", kernel_names[kernel], slice);
    }
    for (int o = 0; o < KCS_MAX_OUTPUTS; o++) {
        free(expected[o].values);
        free(expected[o].bounds);
    }
    slice_case_free(&c);
    return status;
}

/* ---- The record file ----------------------------------------------------- */

void kcs_probe_record_file_free(kcs_probe_record_file *record)
{
    free(record->hashes);
    memset(record, 0, sizeof *record);
}

/* Text for one line of the file: no newline, which would end it. */
static int one_line(const char *text)
{
    return strchr(text, '\n') == NULL;
}

kcs_status kcs_probe_record_write(const char *path, const kcs_probe_record_file *record, kcs_error *err)
{
    const kcs_probe_identity *id = &record->identity;
    if (!one_line(id->device) || !one_line(id->platform) || !one_line(id->driver) || !one_line(id->build))
        return kcs_fail(err, KCS_ERROR, "%s: the device's identity holds a newline", path);
    FILE *file = fopen(path, "w");
    if (!file)
        return kcs_fail(err, KCS_ERROR, "%s: cannot write: %s", path, strerror(errno));
    fprintf(file, "kcs-probe-record 1\n");
    fprintf(file, "# The probe's expected hashes for one device model (docs/fleet.md, \"The probe's record file\").\n");
    fprintf(file, "probe_version %d\n", record->version);
    fprintf(file, "device %s\nplatform %s\ndriver %s\nbuild %s\n", id->device, id->platform, id->driver, id->build);
    fprintf(file, "sms %d\nblocks %d\nchunks %d\n", record->sms, record->blocks, KCS_PROBE_CHUNKS);
    size_t slices = (size_t)KCS_PROBE_CHUNKS * (size_t)record->blocks;
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        for (int chunk = 0; chunk < KCS_PROBE_CHUNKS; chunk++) {
            fprintf(file, "launch %s %d", kernel_names[k], chunk);
            for (int b = 0; b < record->blocks; b++)
                fprintf(file, " %016" PRIx64, record->hashes[k * slices + (size_t)chunk * record->blocks + b]);
            fputc('\n', file);
        }
    fprintf(file, "end\n");
    if (ferror(file) | (fclose(file) != 0))
        return kcs_fail(err, KCS_ERROR, "%s: cannot write: %s", path, strerror(errno));
    return KCS_OK;
}

/* The value after "key " on a line, or NULL when the line is another key. */
static const char *value_of(const char *line, const char *key)
{
    size_t length = strlen(key);
    return strncmp(line, key, length) == 0 && line[length] == ' ' ? line + length + 1 : NULL;
}

/* A count in [1, limit] from text, or -1. */
static long count_of(const char *text, long limit)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && value >= 1 && value <= limit ? value : -1;
}

/* An index in [0, limit) from text, or -1. */
static long index_of(const char *text, long limit)
{
    char *end;
    errno = 0;
    long value = strtol(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && value >= 0 && value < limit ? value : -1;
}

/* Reads a "launch KERNEL CHUNK HASH..." line into record->hashes. */
static kcs_status read_launch(const char *path, int line_number, char *text, kcs_probe_record_file *record,
                              unsigned char seen[KCS_PROBE_KERNELS][KCS_PROBE_CHUNKS], kcs_error *err)
{
    char *save = NULL, *name = strtok_r(text, " ", &save), *chunk_text = strtok_r(NULL, " ", &save);
    int kernel = -1;
    for (int k = 0; name && k < KCS_PROBE_KERNELS; k++)
        if (strcmp(name, kernel_names[k]) == 0)
            kernel = k;
    if (kernel < 0)
        return kcs_fail(err, KCS_ERROR, "%s:%d: no probe kernel '%s' (gemm-tensor, gemm-fma, softmax, sumsq)", path,
                        line_number, name ? name : "");
    long chunk = chunk_text ? index_of(chunk_text, KCS_PROBE_CHUNKS) : -1;
    if (chunk < 0)
        return kcs_fail(err, KCS_ERROR, "%s:%d: the launch's chunk must be 0 to %d, not '%s'", path, line_number,
                        KCS_PROBE_CHUNKS - 1, chunk_text ? chunk_text : "");
    if (seen[kernel][chunk]++)
        return kcs_fail(err, KCS_ERROR, "%s:%d: a second line for %s chunk %ld", path, line_number, name, chunk);
    size_t slices = (size_t)KCS_PROBE_CHUNKS * (size_t)record->blocks;
    int b = 0;
    for (char *hash = strtok_r(NULL, " ", &save); hash; hash = strtok_r(NULL, " ", &save), b++) {
        char *end;
        errno = 0;
        unsigned long long value = strtoull(hash, &end, 16);
        if (strlen(hash) != 16 || *end || errno)
            return kcs_fail(err, KCS_ERROR, "%s:%d: hash %d of %s chunk %ld is not 16 hex digits: '%.40s'", path,
                            line_number, b + 1, name, chunk, hash);
        if (b < record->blocks)
            record->hashes[kernel * slices + (size_t)chunk * record->blocks + b] = value;
    }
    if (b != record->blocks)
        return kcs_fail(err, KCS_ERROR, "%s:%d: %s chunk %ld has %d hashes, the record's blocks say %d", path,
                        line_number, name, chunk, b, record->blocks);
    return KCS_OK;
}

kcs_status kcs_probe_record_read(const char *path, kcs_probe_record_file *record, kcs_error *err)
{
    memset(record, 0, sizeof *record);
    FILE *file = fopen(path, "r");
    if (!file)
        return kcs_fail(err, KCS_ERROR, "%s: cannot read the probe's record: %s", path, strerror(errno));
    size_t capacity = 0;
    char *line = NULL;
    int line_number = 0, ended = 0;
    kcs_status status = KCS_OK;
    unsigned char seen[KCS_PROBE_KERNELS][KCS_PROBE_CHUNKS];
    memset(seen, 0, sizeof seen);
    kcs_probe_identity *id = &record->identity;
    const char *value;
    for (ssize_t length; status == KCS_OK && (length = getline(&line, &capacity, file)) >= 0;) {
        line_number++;
        if (length > 0 && line[length - 1] == '\n')
            line[--length] = '\0';
        if (ended)
            status = kcs_fail(err, KCS_ERROR, "%s:%d: text after 'end'", path, line_number);
        else if (line_number == 1) {
            if (strcmp(line, "kcs-probe-record 1") != 0)
                status = kcs_fail(err, KCS_ERROR, "%s:1: not a probe record of format 1 (its first line must be "
                                  "'kcs-probe-record 1')", path);
        } else if (line[0] == '#' || line[0] == '\0')
            continue;
        else if ((value = value_of(line, "probe_version"))) {
            long version = count_of(value, 1000000);
            record->version = (int)version;
            if (version < 0)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: probe_version needs a number, not '%s'", path,
                                  line_number, value);
        } else if ((value = value_of(line, "device")))
            snprintf(id->device, sizeof id->device, "%s", value);
        else if ((value = value_of(line, "platform")))
            snprintf(id->platform, sizeof id->platform, "%s", value);
        else if ((value = value_of(line, "driver")))
            snprintf(id->driver, sizeof id->driver, "%s", value);
        else if ((value = value_of(line, "build")))
            snprintf(id->build, sizeof id->build, "%s", value);
        else if ((value = value_of(line, "sms"))) {
            record->sms = (int)count_of(value, KCS_PROBE_MAX_SMS);
            if (record->sms < 0)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: sms must be 1 to %d, not '%s'", path, line_number,
                                  KCS_PROBE_MAX_SMS, value);
        } else if ((value = value_of(line, "blocks"))) {
            record->blocks = (int)count_of(value, 1 << 20);
            if (record->blocks < 0 || record->hashes)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: blocks must be given once, 1 to %d, not '%s'", path,
                                  line_number, 1 << 20, value);
            else if (!(record->hashes = calloc((size_t)KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS * record->blocks,
                                               sizeof *record->hashes)))
                status = kcs_fail(err, KCS_ERROR, "%s: out of memory", path);
        } else if ((value = value_of(line, "chunks"))) {
            if (count_of(value, 1 << 20) != KCS_PROBE_CHUNKS)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: chunks is %d in this probe, not '%s'", path, line_number,
                                  KCS_PROBE_CHUNKS, value);
        } else if ((value = value_of(line, "launch"))) {
            if (!record->hashes)
                status = kcs_fail(err, KCS_ERROR, "%s:%d: a launch before the blocks line", path, line_number);
            else
                status = read_launch(path, line_number, line + 7, record, seen, err);
        } else if (strcmp(line, "end") == 0)
            ended = 1;
        else
            status = kcs_fail(err, KCS_ERROR, "%s:%d: unknown line '%.60s'", path, line_number, line);
    }
    free(line);
    fclose(file);
    if (status == KCS_OK && line_number == 0)
        status = kcs_fail(err, KCS_ERROR, "%s: empty: not a probe record", path);
    if (status == KCS_OK && !ended)
        status = kcs_fail(err, KCS_ERROR, "%s: no 'end' line: the record is cut short", path);
    if (status == KCS_OK && (!record->version || !id->device[0] || !id->driver[0] || !id->build[0] ||
                             record->sms <= 0 || !record->hashes))
        status = kcs_fail(err, KCS_ERROR, "%s: missing %s", path,
                          !record->version ? "probe_version" : !id->device[0] ? "device" : !id->driver[0] ? "driver"
                          : !id->build[0] ? "build" : record->sms <= 0 ? "sms" : "blocks");
    for (int k = 0; status == KCS_OK && k < KCS_PROBE_KERNELS; k++)
        for (int chunk = 0; status == KCS_OK && chunk < KCS_PROBE_CHUNKS; chunk++)
            if (!seen[k][chunk])
                status = kcs_fail(err, KCS_ERROR, "%s: no launch line for %s chunk %d", path, kernel_names[k], chunk);
    if (status != KCS_OK)
        kcs_probe_record_file_free(record);
    return status;
}

const char *kcs_probe_record_mismatch(const kcs_probe_record_file *record, const kcs_probe_identity *identity,
                                      int sms, int blocks, char *why, size_t size)
{
    const kcs_probe_identity *r = &record->identity;
    if (record->version != KCS_PROBE_VERSION)
        snprintf(why, size, "the record is of probe version %d, this probe is %d", record->version,
                 KCS_PROBE_VERSION);
    else if (strcmp(r->device, identity->device) != 0)
        snprintf(why, size, "the record is for '%s', this device is '%s'", r->device, identity->device);
    else if (strcmp(r->platform, identity->platform) != 0)
        snprintf(why, size, "the record is for platform '%s', this device's is '%s'", r->platform, identity->platform);
    else if (strcmp(r->driver, identity->driver) != 0)
        snprintf(why, size, "the record is for driver '%s', this device has '%s'", r->driver, identity->driver);
    else if (strcmp(r->build, identity->build) != 0)
        snprintf(why, size, "the record is of build '%s', this is '%s'", r->build, identity->build);
    else if (record->sms != sms || record->blocks != blocks)
        snprintf(why, size, "the record has %d SMs and %d blocks a launch, this device %d and %d", record->sms,
                 record->blocks, sms, blocks);
    else
        return NULL;
    return why;
}

/* ---- Peers ----------------------------------------------------------------- */

int kcs_probe_majority(const uint64_t hashes[], int count, int agree[], uint64_t *majority)
{
    for (int i = 0; i < count; i++)
        agree[i] = 0;
    for (int i = 0; i < count; i++) {
        int votes = 0;
        for (int j = 0; j < count; j++)
            votes += hashes[j] == hashes[i];
        if (2 * votes > count) {
            *majority = hashes[i];
            for (int j = 0; j < count; j++)
                agree[j] = hashes[j] == hashes[i];
            return 1;
        }
    }
    return 0;
}

/* ---- Opening --------------------------------------------------------------- */

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The build whose bits a record holds: the probe's version, the device's
 * runtime (for CUDA: the toolkit it was built with) and this build's flags. */
static void describe_identity(const kcs_device_info *info, kcs_probe_identity *id)
{
    snprintf(id->device, sizeof id->device, "%s", info->name);
    snprintf(id->platform, sizeof id->platform, "%s", info->platform);
    snprintf(id->driver, sizeof id->driver, "%s", info->driver_version);
    snprintf(id->build, sizeof id->build, "probe %d; %s; %s; cuda_arch %s", KCS_PROBE_VERSION, info->runtime_version,
             KCS_BUILD_OPTIMISE, KCS_BUILD_CUDA_ARCH);
    for (char *c = id->build; *c; c++)
        if (*c == '\n')
            *c = ' ';
}

static kcs_status upload_expected(kcs_probe *probe, kcs_error *err)
{
    kcs_status status =
        probe->methods->set_expected(probe->state, probe->expected, KCS_PROBE_KERNELS * probe->slices, err);
    if (status != KCS_OK)
        kcs_error_prefix(err, "the probe on %s: its expected hashes", probe->info.name);
    return status;
}

/* Takes the expected hashes from the record at path where it applies to this device. */
static kcs_status use_record(kcs_probe *probe, const char *path, kcs_error *err)
{
    kcs_probe_record_file record;
    kcs_status status = kcs_probe_record_read(path, &record, err);
    if (status != KCS_OK)
        return status;
    char why[600];
    if (kcs_probe_record_mismatch(&record, &probe->identity, probe->sms, probe->blocks, why, sizeof why)) {
        snprintf(probe->note, sizeof probe->note, "%s not used: %s", path, why);
    } else {
        for (size_t i = 0; i < KCS_PROBE_KERNELS * probe->slices; i++)
            probe->expected[i] = (kcs_probe_expected){.hash = record.hashes[i], .valid = 1};
        probe->expected_by = KCS_PROBE_BY_RECORD;
        status = upload_expected(probe, err);
    }
    kcs_probe_record_file_free(&record);
    return status;
}

kcs_status kcs_probe_open_device(const kcs_backend *backend, kcs_device *device, const kcs_device_info *info,
                                 const kcs_probe_options *options, kcs_probe **opened, kcs_error *err)
{
    *opened = NULL;
    if (!backend->probe)
        return kcs_fail(err, KCS_UNSUPPORTED, "kcs_probe_open: the %s backend has no probe", backend->name);
    kcs_probe *probe = calloc(1, sizeof *probe);
    if (!probe)
        return kcs_fail(err, KCS_ERROR, "kcs_probe_open: out of memory");
    probe->backend = backend;
    probe->device = device;
    probe->info = *info;
    probe->methods = backend->probe;
    probe->cycle = 1;
    if (options)
        probe->options = *options;
    if (!(probe->options.budget_seconds > 0.0))
        probe->options.budget_seconds = 1e-3;
    probe->options.expected_path = NULL; /* the caller's string is not kept */
    describe_identity(info, &probe->identity);
    kcs_status status = probe->methods->geometry(device, &probe->sms, &probe->blocks, err);
    if (status == KCS_OK && (probe->sms < 1 || probe->sms > KCS_PROBE_MAX_SMS || probe->blocks < 1))
        status = kcs_fail(err, KCS_UNSUPPORTED, "%d SMs and %d blocks a launch: the probe names at most %d SMs",
                          probe->sms, probe->blocks, KCS_PROBE_MAX_SMS);
    probe->slices = (size_t)KCS_PROBE_CHUNKS * (size_t)probe->blocks;
    if (status == KCS_OK && !(probe->expected = calloc(KCS_PROBE_KERNELS * probe->slices, sizeof *probe->expected)))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_probe_inputs inputs;
    memset(&inputs, 0, sizeof inputs);
    if (status == KCS_OK)
        status = kcs_probe_inputs_make(&inputs, err);
    if (status == KCS_OK)
        status = probe->methods->open(device, probe->blocks, &inputs, &probe->state, err);
    kcs_probe_inputs_free(&inputs); /* on the device now; the oracle regenerates what it needs */
    if (status == KCS_OK && options && options->expected_path)
        status = use_record(probe, options->expected_path, err);
    if (status != KCS_OK) {
        kcs_error_prefix(err, "kcs_probe_open on %s", info->name);
        kcs_probe_close(probe);
        return status;
    }
    *opened = probe;
    return KCS_OK;
}

int kcs_probe_has_expected(const kcs_probe *probe)
{
    for (size_t i = 0; i < KCS_PROBE_KERNELS * probe->slices; i++)
        if (!probe->expected[i].valid)
            return 0;
    return 1;
}

/* ---- Steps ----------------------------------------------------------------- */

/* Enqueues launches (kernels and chunks already set) with this probe's injection. */
static kcs_status enqueue(kcs_probe *probe, kcs_probe_launch launches[], int count, long long cycle, kcs_error *err)
{
    for (int i = 0; i < count; i++) {
        int kernel = launches[i].kernel, chunk = launches[i].chunk;
        kcs_probe_injection(probe->options.inject_block, probe->options.inject_probability,
                            probe->options.inject_seed, cycle, kernel, chunk, &launches[i]);
        launches[i].kernel = kernel;
        launches[i].chunk = chunk;
    }
    kcs_status status = probe->methods->launch(probe->state, launches, count, err);
    if (status != KCS_OK) {
        kcs_error_prefix(err, "kcs_probe_step on %s", probe->info.name);
        return status;
    }
    memcpy(probe->launches, launches, sizeof launches[0] * (size_t)count);
    probe->launch_count = count;
    probe->in_flight = 1;
    probe->in_flight_cycle = cycle;
    probe->steps++;
    return KCS_OK;
}

/* A summary entry as a mismatch of the result. */
static void entry_mismatch(const kcs_probe *probe, const kcs_probe_entry *e, kcs_probe_mismatch *m)
{
    memset(m, 0, sizeof *m);
    m->kernel = (int)e->kernel;
    m->slice = e->slice;
    m->chunk = e->slice / (unsigned)probe->blocks;
    m->block = e->slice % (unsigned)probe->blocks;
    m->sm = e->sm;
    m->hash = e->hash;
    m->expected = e->expected;
    m->decider = probe->expected_by;
    m->injected = (e->flags & KCS_PROBE_FLAG_INJECTED) != 0;
}

static int count_bits(const uint32_t *words, int count)
{
    int bits = 0;
    for (int i = 0; i < count; i++)
        bits += __builtin_popcount(words[i]);
    return bits;
}

/* The result of the step just collected, from its summary. */
static void step_result(kcs_probe *probe, const kcs_probe_summary *summary, const double seconds[],
                        kcs_probe_result *result)
{
    memset(result, 0, sizeof *result);
    result->step = probe->steps;
    result->cycle = probe->in_flight_cycle;
    result->launches = probe->launch_count;
    result->host_seconds = probe->in_flight_host_seconds;
    for (int i = 0; i < probe->launch_count; i++) {
        int kernel = probe->launches[i].kernel;
        result->kernels |= 1u << kernel;
        result->launch_seconds[kernel] = seconds[i];
        result->chunk_seconds[kernel][probe->launches[i].chunk] = seconds[i];
        result->device_seconds += seconds[i];
        /* The fastest launch seen is the kernel's own work: beside a busy application a
         * launch's events also span the time its blocks waited for SMs. */
        if (seconds[i] > 0.0 && (probe->predicted[kernel] <= 0.0 || seconds[i] < probe->predicted[kernel]))
            probe->predicted[kernel] = seconds[i];
    }
    result->sms_seen = count_bits(summary->sms_seen, KCS_PROBE_MAX_SMS / 32);
    result->injected_count = (int)summary->injected;
    result->mismatch_count = (int)summary->mismatches;
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        result->kernel_mismatches[k] = (int)summary->kernel_mismatches[k];
    uint32_t listed = summary->entries < KCS_PROBE_SUMMARY_ENTRIES ? summary->entries : KCS_PROBE_SUMMARY_ENTRIES;
    for (uint32_t i = 0, m = 0; i < listed && m < KCS_PROBE_MAX_MISMATCHES; i++)
        if (summary->entry[i].flags & KCS_PROBE_FLAG_MISMATCH)
            entry_mismatch(probe, &summary->entry[i], &result->mismatches[m++]);
    int compared = 1;
    for (int i = 0; i < probe->launch_count && compared; i++)
        for (int b = 0; b < probe->blocks && compared; b++)
            compared = probe->expected[probe->launches[i].kernel * probe->slices +
                                       (size_t)probe->launches[i].chunk * probe->blocks + b].valid;
    if (summary->mismatches > 0) {
        result->verdict = KCS_PROBE_MISMATCH;
        result->decider = probe->expected_by;
        snprintf(result->message, sizeof result->message, "%d block%s differed from the %s's hashes",
                 result->mismatch_count, result->mismatch_count == 1 ? "" : "s", kcs_probe_decider_name(probe->expected_by));
    } else if (compared && probe->expected_by != KCS_PROBE_BY_NOTHING) {
        result->verdict = KCS_PROBE_PASS;
        result->decider = probe->expected_by;
        snprintf(result->message, sizeof result->message, "every block equalled the %s's hashes",
                 kcs_probe_decider_name(probe->expected_by));
    } else {
        result->verdict = KCS_PROBE_UNDECIDED;
        snprintf(result->message, sizeof result->message, "%s",
                 probe->note[0] ? probe->note : "no record and not calibrated: nothing to compare with");
    }
}

/* Collects the step in flight (wait: waiting for it) into result. */
static kcs_status collect(kcs_probe *probe, int wait, kcs_probe_result *result, kcs_error *err)
{
    kcs_probe_result ignored;
    if (!result)
        result = &ignored;
    memset(result, 0, sizeof *result);
    if (!probe->in_flight) {
        snprintf(result->message, sizeof result->message, "no step in flight");
        return KCS_OK;
    }
    kcs_probe_summary summary;
    double seconds[KCS_PROBE_KERNELS] = {0};
    int finished = 0;
    kcs_status status = probe->methods->collect(probe->state, wait, &finished, &summary, seconds, err);
    if (status != KCS_OK) {
        probe->in_flight = 0;
        kcs_error_prefix(err, "kcs_probe on %s: step %lld", probe->info.name, probe->steps);
        return status;
    }
    if (!finished) {
        result->step = probe->steps;
        snprintf(result->message, sizeof result->message, "step %lld still running", probe->steps);
        return KCS_OK;
    }
    probe->in_flight = 0;
    step_result(probe, &summary, seconds, result);
    return KCS_OK;
}

kcs_status kcs_probe_step(kcs_probe *probe, kcs_probe_result *result, kcs_error *err)
{
    double start = now_seconds();
    kcs_probe_result collected;
    kcs_status status = collect(probe, 0, &collected, err);
    if (result)
        *result = collected;
    if (status != KCS_OK || probe->in_flight)
        return status; /* still running: launch nothing, so that steps never pile up */
    /* The next launches of the cycle while their predicted time fits the
     * budget: one at least, each kernel at most once (its output buffer holds
     * one launch), and a kernel never measured yet only as the step's first. */
    kcs_probe_launch launches[KCS_PROBE_KERNELS];
    int count = 0;
    double predicted = 0.0;
    long long cycle = probe->cycle;
    while (count < KCS_PROBE_KERNELS) {
        int kernel, chunk;
        kcs_probe_unit(probe->next_unit, &kernel, &chunk);
        double cost = probe->predicted[kernel];
        if (count > 0 && (cost <= 0.0 || predicted + cost > probe->options.budget_seconds))
            break;
        launches[count++] = (kcs_probe_launch){.kernel = kernel, .chunk = chunk};
        predicted += cost;
        if (++probe->next_unit == KCS_PROBE_KERNELS * KCS_PROBE_CHUNKS) {
            probe->next_unit = 0;
            probe->cycle++;
        }
    }
    status = enqueue(probe, launches, count, cycle, err);
    probe->in_flight_host_seconds = now_seconds() - start;
    return status;
}

kcs_status kcs_probe_wait(kcs_probe *probe, kcs_probe_result *result, kcs_error *err)
{
    return collect(probe, 1, result, err);
}

/* ---- Calibration ------------------------------------------------------------ */

static int same_identity(const kcs_probe *a, const kcs_probe *b)
{
    return strcmp(a->identity.device, b->identity.device) == 0 &&
           strcmp(a->identity.platform, b->identity.platform) == 0 &&
           strcmp(a->identity.driver, b->identity.driver) == 0 && strcmp(a->identity.build, b->identity.build) == 0 &&
           a->sms == b->sms && a->blocks == b->blocks;
}

/* Appends a mismatch to a calibration's result. */
static void add_mismatch(const kcs_probe *probe, kcs_probe_result *result, int kernel, size_t slice,
                         const kcs_probe_record *record, uint64_t expected, kcs_probe_decider decider,
                         const char *detail)
{
    if (result->mismatch_count == 0)
        result->decider = decider;
    if (result->mismatch_count < KCS_PROBE_MAX_MISMATCHES) {
        kcs_probe_mismatch *m = &result->mismatches[result->mismatch_count];
        memset(m, 0, sizeof *m);
        m->kernel = kernel;
        m->slice = (unsigned)slice;
        m->chunk = (unsigned)(slice / (size_t)probe->blocks);
        m->block = (unsigned)(slice % (size_t)probe->blocks);
        m->sm = record->sm;
        m->hash = record->hash;
        m->expected = expected;
        m->decider = decider;
        m->injected = (record->flags & KCS_PROBE_FLAG_INJECTED) != 0;
        snprintf(m->detail, sizeof m->detail, "%s", detail);
    }
    result->mismatch_count++;
    result->kernel_mismatches[kernel]++;
}

/* Whether the oracle checks block b of a launch of chunk: oracle_blocks of
 * the grid's blocks (0: all), a different part of the grid each chunk. */
static int oracle_samples(int blocks, int oracle_blocks, int chunk, int b)
{
    if (oracle_blocks <= 0 || oracle_blocks >= blocks)
        return 1;
    int stride = (blocks + oracle_blocks - 1) / oracle_blocks;
    return b % stride == chunk % stride;
}

/* The oracle's verdict on one block of probe's last launch of kernel. */
static kcs_status oracle_block(kcs_probe *probe, int kernel, int block, size_t slice, uint32_t *words, int *passed,
                               char *detail, size_t size, kcs_error *err)
{
    kcs_status status = probe->methods->download_slice(probe->state, kernel, block, words, err);
    if (status == KCS_OK)
        status = oracle_check(probe, kernel, slice, words, passed, detail, size, err);
    return status;
}

/* Decides one block of one kernel over a group of identical probes: the
 * strict majority's hash, else the oracle's. */
static kcs_status decide_block(kcs_probe *const group[], int members, kcs_probe_record *const records[],
                               kcs_probe_result *const results[], int kernel, int chunk, int block,
                               int oracle_blocks, uint32_t *words, kcs_error *err)
{
    kcs_probe *first = group[0];
    size_t slice = (size_t)chunk * first->blocks + block, index = kernel * first->slices + slice;
    uint64_t hashes[64];
    int agree[64], passed[64];
    for (int i = 0; i < members; i++)
        hashes[i] = records[i][index].hash;
    uint64_t majority = 0;
    char detail[192];
    if (members > 1 && kcs_probe_majority(hashes, members, agree, &majority)) {
        int votes = 0;
        for (int i = 0; i < members; i++)
            votes += agree[i];
        for (int i = 0; i < members; i++) {
            group[i]->expected[index] = (kcs_probe_expected){.hash = majority, .valid = 1};
            if (!agree[i]) {
                snprintf(detail, sizeof detail, "%d of %d identical devices agree on another hash", votes, members);
                add_mismatch(group[i], results[i], kernel, slice, &records[i][index], majority, KCS_PROBE_BY_MAJORITY,
                             detail);
            }
        }
        return KCS_OK;
    }
    /* No peers, or no majority: the oracle decides each member's output. */
    if (members == 1 && !oracle_samples(first->blocks, oracle_blocks, chunk, block)) {
        /* Not sampled: its own hash is what later steps compare with. */
        first->expected[index] = (kcs_probe_expected){.hash = hashes[0], .valid = 1};
        return KCS_OK;
    }
    uint64_t passing[64];
    int distinct = 0; /* distinct hashes among the outputs the oracle passed */
    for (int i = 0; i < members; i++) {
        kcs_status status = oracle_block(group[i], kernel, block, slice, words, &passed[i], detail, sizeof detail, err);
        if (status != KCS_OK)
            return status;
        if (!passed[i]) {
            add_mismatch(group[i], results[i], kernel, slice, &records[i][index], 0, KCS_PROBE_BY_ORACLE, detail);
            continue;
        }
        int known = 0;
        for (int d = 0; d < distinct; d++)
            known |= passing[d] == hashes[i];
        if (!known)
            passing[distinct++] = hashes[i];
    }
    /* Those the oracle passed must still agree bit for bit: of two identical
     * devices that differ, one is wrong, whichever it is. Only one passing
     * hash becomes the expected one. */
    for (int i = 0; i < members; i++) {
        group[i]->expected[index] = (kcs_probe_expected){.hash = distinct == 1 ? passing[0] : 0, .valid = distinct == 1};
        if (passed[i] && distinct > 1) {
            snprintf(detail, sizeof detail, "no majority of %d identical devices, and %d hashes within the oracle's "
                     "bound: one of them is wrong", members, distinct);
            add_mismatch(group[i], results[i], kernel, slice, &records[i][index], 0, KCS_PROBE_BY_MAJORITY, detail);
        }
    }
    return KCS_OK;
}

kcs_status kcs_probe_calibrate(kcs_probe *const probes[], int count, int oracle_blocks, kcs_probe_result results[],
                               kcs_error *err)
{
    if (count < 1 || count > 64)
        return kcs_fail(err, KCS_ERROR, "kcs_probe_calibrate: %d probes (1 to 64)", count);
    kcs_status status = KCS_OK;
    kcs_probe_record *records[64] = {NULL};
    uint32_t *words = malloc(sizeof(uint32_t) * KCS_PROBE_SOFTMAX_WORDS);
    if (!words)
        return kcs_fail(err, KCS_ERROR, "kcs_probe_calibrate: out of memory");
    for (int i = 0; i < count && status == KCS_OK; i++) {
        memset(&results[i], 0, sizeof results[i]);
        status = collect(probes[i], 1, NULL, err); /* nothing of an earlier step is left in flight */
        if (status == KCS_OK && !(records[i] = malloc(sizeof *records[i] * KCS_PROBE_KERNELS * probes[i]->slices)))
            status = kcs_fail(err, KCS_ERROR, "kcs_probe_calibrate: out of memory");
    }
    /* Probes without a record are compared with their identical peers: group[g] lists probe indices. */
    int group_of[64];
    for (int i = 0; i < count; i++) {
        group_of[i] = probes[i]->expected_by == KCS_PROBE_BY_RECORD ? -1 : i;
        for (int j = 0; j < i && group_of[i] == i; j++)
            if (group_of[j] >= 0 && same_identity(probes[i], probes[j]))
                group_of[i] = group_of[j];
    }
    /* A whole cycle, each chunk's four launches on every probe, then each probe waited for. */
    for (int chunk = 0; chunk < KCS_PROBE_CHUNKS && status == KCS_OK; chunk++) {
        for (int i = 0; i < count && status == KCS_OK; i++) {
            kcs_probe_launch launches[KCS_PROBE_KERNELS];
            for (int k = 0; k < KCS_PROBE_KERNELS; k++)
                launches[k] = (kcs_probe_launch){.kernel = k, .chunk = chunk};
            status = enqueue(probes[i], launches, KCS_PROBE_KERNELS, probes[i]->cycle, err);
        }
        for (int i = 0; i < count && status == KCS_OK; i++) {
            kcs_probe_result step;
            status = collect(probes[i], 1, &step, err);
            results[i].launches += step.launches;
            results[i].kernels |= step.kernels;
            results[i].injected_count += step.injected_count;
            results[i].device_seconds += step.device_seconds;
            for (int k = 0; k < KCS_PROBE_KERNELS; k++) {
                results[i].launch_seconds[k] += step.launch_seconds[k];
                results[i].chunk_seconds[k][chunk] = step.chunk_seconds[k][chunk];
            }
            results[i].sms_seen = step.sms_seen > results[i].sms_seen ? step.sms_seen : results[i].sms_seen;
            if (probes[i]->expected_by == KCS_PROBE_BY_RECORD) /* decided on the device */
                for (int m = 0; m < step.mismatch_count; m++) {
                    if (results[i].mismatch_count < KCS_PROBE_MAX_MISMATCHES && m < KCS_PROBE_MAX_MISMATCHES)
                        results[i].mismatches[results[i].mismatch_count] = step.mismatches[m];
                    results[i].mismatch_count++;
                    results[i].decider = KCS_PROBE_BY_RECORD;
                }
            for (int k = 0; k < KCS_PROBE_KERNELS && probes[i]->expected_by == KCS_PROBE_BY_RECORD; k++)
                results[i].kernel_mismatches[k] += step.kernel_mismatches[k];
            if (status == KCS_OK && group_of[i] >= 0)
                status = probes[i]->methods->download_records(probes[i]->state, records[i], err);
        }
        /* Each group decides its blocks of this chunk while the launches' outputs are there. */
        for (int g = 0; g < count && status == KCS_OK; g++) {
            kcs_probe *group[64];
            kcs_probe_record *group_records[64];
            kcs_probe_result *group_results[64];
            int members = 0;
            for (int i = 0; i < count; i++)
                if (group_of[i] == g) {
                    group[members] = probes[i];
                    group_records[members] = records[i];
                    group_results[members++] = &results[i];
                }
            for (int k = 0; k < KCS_PROBE_KERNELS && status == KCS_OK && members > 0; k++)
                for (int b = 0; b < group[0]->blocks && status == KCS_OK; b++)
                    status = decide_block(group, members, group_records, group_results, k, chunk, b, oracle_blocks,
                                          words, err);
        }
    }
    for (int i = 0; i < count && status == KCS_OK; i++) {
        kcs_probe *probe = probes[i];
        probe->next_unit = 0;
        probe->cycle++;
        results[i].step = probe->steps;
        results[i].cycle = probe->cycle - 1;
        int members = 0;
        for (int j = 0; j < count; j++)
            members += group_of[i] >= 0 && group_of[j] == group_of[i];
        kcs_probe_decider by = group_of[i] < 0 ? KCS_PROBE_BY_RECORD
                               : members > 1   ? KCS_PROBE_BY_MAJORITY
                                               : KCS_PROBE_BY_ORACLE;
        if (group_of[i] >= 0) {
            probe->expected_by = by;
            status = upload_expected(probe, err);
        }
        results[i].verdict = results[i].mismatch_count ? KCS_PROBE_MISMATCH : KCS_PROBE_PASS;
        if (!results[i].mismatch_count)
            results[i].decider = by;
        if (by == KCS_PROBE_BY_ORACLE)
            snprintf(results[i].message, sizeof results[i].message,
                     "a cycle checked by each op's oracle within its bound (%s)%s%s",
                     oracle_blocks > 0 ? "sampled blocks" : "every block", probe->note[0] ? "; " : "", probe->note);
        else if (by == KCS_PROBE_BY_MAJORITY)
            snprintf(results[i].message, sizeof results[i].message,
                     "a cycle compared block by block with %d identical devices%s%s", members,
                     probe->note[0] ? "; " : "", probe->note);
        else
            snprintf(results[i].message, sizeof results[i].message, "a cycle compared with the record on the device");
    }
    for (int i = 0; i < count; i++)
        free(records[i]);
    free(words);
    if (status != KCS_OK)
        kcs_error_prefix(err, "kcs_probe_calibrate");
    return status;
}

/* ---- Records and closing ------------------------------------------------------ */

kcs_status kcs_probe_write_record(const kcs_probe *probe, const char *path, kcs_error *err)
{
    if (!kcs_probe_has_expected(probe))
        return kcs_fail(err, KCS_ERROR, "kcs_probe_write_record %s: %s", path,
                        probe->expected_by == KCS_PROBE_BY_NOTHING
                            ? "the probe has no expected hashes (no record, not calibrated)"
                            : "some blocks have no expected hash (the calibration found them wrong)");
    kcs_probe_record_file record = {.version = KCS_PROBE_VERSION, .identity = probe->identity, .sms = probe->sms,
                                    .blocks = probe->blocks};
    record.hashes = malloc(sizeof *record.hashes * KCS_PROBE_KERNELS * probe->slices);
    if (!record.hashes)
        return kcs_fail(err, KCS_ERROR, "kcs_probe_write_record: out of memory");
    for (size_t i = 0; i < KCS_PROBE_KERNELS * probe->slices; i++)
        record.hashes[i] = probe->expected[i].hash;
    kcs_status status = kcs_probe_record_write(path, &record, err);
    free(record.hashes);
    return status;
}

kcs_status kcs_probe_cycle_hashes(kcs_probe *probe, int kernel, uint64_t *hashes, kcs_error *err)
{
    kcs_probe_record *records = malloc(sizeof *records * KCS_PROBE_KERNELS * probe->slices);
    if (!records)
        return kcs_fail(err, KCS_ERROR, "out of memory");
    kcs_status status = probe->methods->download_records(probe->state, records, err);
    for (size_t s = 0; status == KCS_OK && s < probe->slices; s++)
        hashes[s] = records[kernel * probe->slices + s].hash;
    free(records);
    return status;
}

void kcs_probe_close(kcs_probe *probe)
{
    if (!probe)
        return;
    if (probe->state)
        probe->methods->close(probe->state);
    free(probe->expected);
    free(probe);
}
