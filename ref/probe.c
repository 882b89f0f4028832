/* probe.c: the probe's set on the reference backend (harness/probe.h), so
 * that the probe's logic (the budget, the records, the comparison with a
 * record, with peers and with the oracle, the injected flips and their
 * naming) runs and is tested on a machine without a GPU.
 *
 * Each kernel of the set is the reference's own function, called as-is on
 * one block's tiles: kcs_ref_gemm_bf16_f32_out for gemm-tensor (the host has
 * no tensor cores: f32 accumulation in k order, well inside the tensor
 * mode's bound), kcs_ref_gemm_f32 for gemm-fma, kcs_ref_softmax_f32 on the
 * block's 8 rows gathered from the pool, kcs_ref_sumsq_f64 on its segment.
 * The host is one "SM" (cpu 0) and a launch has 4 blocks, run one after
 * another on the calling thread; a step is finished when launch returns.
 * Each block flips its bit (testing), hashes its slice, records it and
 * compares it with its expected hash exactly as the CUDA kernels do.
 */
#include <stdlib.h>
#include <string.h>

#include "kcs_ref.h"
#include "probe.h"
#include "reference_backend.h"

enum { host_blocks = 4 };

struct kcs_probe_state {
    int blocks;
    size_t slices;
    kcs_probe_inputs inputs;               /* the probe's own copies */
    uint32_t *outputs[KCS_PROBE_KERNELS];  /* one launch: [blocks][words] */
    kcs_probe_record *records;             /* [KERNELS][slices] */
    kcs_probe_expected *expected;          /* likewise */
    float *rows;                           /* a softmax block's rows, gathered */
    float *zeros;                          /* C of the GEMMs (beta = 0: unread) */
    kcs_probe_summary summary;
    double seconds[KCS_PROBE_KERNELS];
    int launched;                          /* a step ran and was not collected */
};

static kcs_status geometry(kcs_device *device, int *sms, int *blocks, kcs_error *err)
{
    (void)device, (void)err;
    *sms = 1;
    *blocks = host_blocks;
    return KCS_OK;
}

static void close_state(kcs_probe_state *state)
{
    if (!state)
        return;
    kcs_probe_inputs_free(&state->inputs);
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        free(state->outputs[k]);
    free(state->records);
    free(state->expected);
    free(state->rows);
    free(state->zeros);
    free(state);
}

static void *copy_of(const void *from, size_t bytes)
{
    void *to = malloc(bytes);
    return to ? memcpy(to, from, bytes) : NULL;
}

static kcs_status open_state(kcs_device *device, int blocks, const kcs_probe_inputs *inputs,
                             kcs_probe_state **opened, kcs_error *err)
{
    (void)device;
    kcs_probe_state *state = calloc(1, sizeof *state);
    *opened = NULL;
    if (!state)
        return kcs_fail(err, KCS_ERROR, "the reference probe: out of memory");
    state->blocks = blocks;
    state->slices = (size_t)KCS_PROBE_CHUNKS * (size_t)blocks;
    const size_t a = (size_t)KCS_PROBE_A_TILES * KCS_PROBE_TILE * KCS_PROBE_GEMM_K;
    const size_t b = (size_t)KCS_PROBE_B_TILES * KCS_PROBE_GEMM_K * KCS_PROBE_TILE;
    state->inputs.tensor_a = copy_of(inputs->tensor_a, a * sizeof(uint16_t));
    state->inputs.tensor_b = copy_of(inputs->tensor_b, b * sizeof(uint16_t));
    state->inputs.fma_a = copy_of(inputs->fma_a, a * sizeof(float));
    state->inputs.fma_b = copy_of(inputs->fma_b, b * sizeof(float));
    state->inputs.softmax_x =
        copy_of(inputs->softmax_x, sizeof(float) * KCS_PROBE_SOFTMAX_POOL_ROWS * KCS_PROBE_SOFTMAX_COLS);
    state->inputs.sumsq_x = copy_of(inputs->sumsq_x, sizeof(double) * KCS_PROBE_SUMSQ_SEGMENTS * KCS_PROBE_SUMSQ_N);
    int ok = state->inputs.tensor_a && state->inputs.tensor_b && state->inputs.fma_a && state->inputs.fma_b &&
             state->inputs.softmax_x && state->inputs.sumsq_x;
    for (int k = 0; k < KCS_PROBE_KERNELS; k++)
        ok &= (state->outputs[k] = calloc((size_t)blocks * kcs_probe_slice_words(k), sizeof(uint32_t))) != NULL;
    ok &= (state->records = calloc(KCS_PROBE_KERNELS * state->slices, sizeof *state->records)) != NULL;
    ok &= (state->expected = calloc(KCS_PROBE_KERNELS * state->slices, sizeof *state->expected)) != NULL;
    ok &= (state->rows = malloc(sizeof(float) * KCS_PROBE_SOFTMAX_WORDS)) != NULL;
    ok &= (state->zeros = calloc(KCS_PROBE_GEMM_WORDS, sizeof(float))) != NULL;
    if (!ok) {
        close_state(state);
        return kcs_fail(err, KCS_ERROR, "the reference probe: out of memory");
    }
    *opened = state;
    return KCS_OK;
}

static kcs_status set_expected(kcs_probe_state *state, const kcs_probe_expected *expected, size_t count,
                               kcs_error *err)
{
    if (count != KCS_PROBE_KERNELS * state->slices)
        return kcs_fail(err, KCS_ERROR, "%zu expected hashes for %zu blocks", count, KCS_PROBE_KERNELS * state->slices);
    memcpy(state->expected, expected, count * sizeof *expected);
    return KCS_OK;
}

/* One block's output slice of kernel, computed into out by the reference's own function. */
static void run_block(kcs_probe_state *state, int kernel, size_t slice, uint32_t *out)
{
    const size_t tile = (size_t)KCS_PROBE_TILE * KCS_PROBE_GEMM_K;
    const size_t a = (slice % KCS_PROBE_A_TILES) * tile, b = (slice % KCS_PROBE_B_TILES) * tile;
    switch (kernel) {
    case KCS_PROBE_GEMM_TENSOR:
        kcs_ref_gemm_bf16_f32_out(0, 0, KCS_PROBE_TILE, KCS_PROBE_TILE, KCS_PROBE_GEMM_K, 1.0f,
                                  (const kcs_bf16 *)state->inputs.tensor_a + a,
                                  (const kcs_bf16 *)state->inputs.tensor_b + b, 0.0f, state->zeros, (float *)out);
        break;
    case KCS_PROBE_GEMM_FMA:
        kcs_ref_gemm_f32(0, 0, KCS_PROBE_TILE, KCS_PROBE_TILE, KCS_PROBE_GEMM_K, 1.0f, state->inputs.fma_a + a,
                         state->inputs.fma_b + b, 0.0f, state->zeros, (float *)out);
        break;
    case KCS_PROBE_SOFTMAX:
        for (size_t i = 0; i < KCS_PROBE_SOFTMAX_ROWS; i++) {
            size_t row = (slice * KCS_PROBE_SOFTMAX_ROWS + i) % KCS_PROBE_SOFTMAX_POOL_ROWS;
            memcpy(state->rows + i * KCS_PROBE_SOFTMAX_COLS, state->inputs.softmax_x + row * KCS_PROBE_SOFTMAX_COLS,
                   sizeof(float) * KCS_PROBE_SOFTMAX_COLS);
        }
        kcs_ref_softmax_f32(state->rows, (float *)out, KCS_PROBE_SOFTMAX_ROWS, KCS_PROBE_SOFTMAX_COLS);
        break;
    default: {
        double s = kcs_ref_sumsq_f64(state->inputs.sumsq_x + (slice % KCS_PROBE_SUMSQ_SEGMENTS) * KCS_PROBE_SUMSQ_N,
                                     KCS_PROBE_SUMSQ_N);
        memcpy(out, &s, sizeof s); /* low word first on a little-endian host, as on the GPU */
        break;
    }
    }
}

/* What a block does after computing: flip (testing), hash, record, compare, report. */
static void finish_block(kcs_probe_state *state, const kcs_probe_launch *launch, int block, uint32_t *out)
{
    const int kernel = launch->kernel;
    const size_t slice = (size_t)launch->chunk * state->blocks + block, index = kernel * state->slices + slice;
    uint32_t flags = 0;
    if (launch->flip_block == block) {
        out[launch->flip_word] ^= 1u << launch->flip_bit;
        flags |= KCS_PROBE_FLAG_INJECTED;
    }
    const uint64_t hash = kcs_probe_hash_words(out, kcs_probe_slice_words(kernel));
    const kcs_probe_expected *expected = &state->expected[index];
    if (expected->valid && expected->hash != hash)
        flags |= KCS_PROBE_FLAG_MISMATCH;
    state->records[index] = (kcs_probe_record){.hash = hash, .sm = 0, .flags = flags};
    kcs_probe_summary *summary = &state->summary;
    summary->sms_seen[0] |= 1u;
    summary->mismatches += (flags & KCS_PROBE_FLAG_MISMATCH) != 0;
    summary->kernel_mismatches[kernel] += (flags & KCS_PROBE_FLAG_MISMATCH) != 0;
    summary->injected += (flags & KCS_PROBE_FLAG_INJECTED) != 0;
    if (flags) {
        if (summary->entries < KCS_PROBE_SUMMARY_ENTRIES)
            summary->entry[summary->entries] = (kcs_probe_entry){.kernel = (uint32_t)kernel, .slice = (uint32_t)slice,
                                                                 .sm = 0, .flags = flags, .hash = hash,
                                                                 .expected = expected->hash};
        summary->entries++;
    }
}

static kcs_status launch(kcs_probe_state *state, const kcs_probe_launch launches[], int count, kcs_error *err)
{
    (void)err;
    memset(&state->summary, 0, sizeof state->summary);
    for (int i = 0; i < count; i++) {
        const kcs_probe_launch *l = &launches[i];
        const size_t words = kcs_probe_slice_words(l->kernel);
        double start = kcs_reference_cpu_seconds();
        for (int block = 0; block < state->blocks; block++) {
            uint32_t *out = state->outputs[l->kernel] + (size_t)block * words;
            run_block(state, l->kernel, (size_t)l->chunk * state->blocks + block, out);
            finish_block(state, l, block, out);
        }
        state->seconds[i] = kcs_reference_cpu_seconds() - start;
    }
    state->launched = count;
    return KCS_OK;
}

static kcs_status collect(kcs_probe_state *state, int wait, int *finished, kcs_probe_summary *summary,
                          double seconds[], kcs_error *err)
{
    (void)wait, (void)err;
    *finished = 1; /* the host ran it in launch */
    *summary = state->summary;
    for (int i = 0; i < state->launched; i++)
        seconds[i] = state->seconds[i];
    state->launched = 0;
    return KCS_OK;
}

static kcs_status download_records(kcs_probe_state *state, kcs_probe_record *records, kcs_error *err)
{
    (void)err;
    memcpy(records, state->records, sizeof *records * KCS_PROBE_KERNELS * state->slices);
    return KCS_OK;
}

static kcs_status download_slice(kcs_probe_state *state, int kernel, int block, uint32_t *host, kcs_error *err)
{
    if (kernel < 0 || kernel >= KCS_PROBE_KERNELS || block < 0 || block >= state->blocks)
        return kcs_fail(err, KCS_ERROR, "no block %d of probe kernel %d", block, kernel);
    const size_t words = kcs_probe_slice_words(kernel);
    memcpy(host, state->outputs[kernel] + (size_t)block * words, words * sizeof(uint32_t));
    return KCS_OK;
}

const kcs_probe_methods kcs_reference_probe_methods = {
    .geometry = geometry,
    .open = open_state,
    .set_expected = set_expected,
    .launch = launch,
    .collect = collect,
    .download_records = download_records,
    .download_slice = download_slice,
    .close = close_state,
};
