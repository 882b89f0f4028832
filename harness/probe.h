/* probe.h: the probe's set, what a backend implements to run it, and the
 * probe over a backend's device (the public calls are lib/kcs_probe.h;
 * docs/fleet.md, "The probe").
 *
 * The set is fixed here, once, for every backend: four kernels, each run in
 * KCS_PROBE_CHUNKS launches a cycle, each launch a grid of `blocks` blocks
 * (a multiple of the device's SM count), each block one output slice of
 * slice = chunk * blocks + block. A slice's inputs are tiles of seeded pools
 * (probe.c makes them with the generator, docs/inputs.md), chosen by the
 * slice number, so that a cycle covers many input patterns with pools of a
 * few megabytes:
 *
 *   gemm-tensor  C = A B, a 64 x 64 tile, k = 256, bf16 in, f32 accumulated
 *                and out (gemm's mode=tensor, c_dtype=f32): A tile s mod 64,
 *                B tile s mod 61 of pools of 64 tiles of 64 x 256 and 61 of 256 x 64
 *   gemm-fma     the same in f32 on the FMA units (SIMT), one fma per term in k order
 *   softmax      8 rows of 1024 f32, row i of slice s the pool's row (8 s + i) mod 509
 *   sumsq        the sum of squares of 4096 f64, segment s mod 61 of the pool
 *
 * Each block hashes its own output slice as 32-bit words (an f64 is two, low
 * word first): the sum, modulo 2^64, of mix(word_index << 32 | word) over its
 * words, mix being splitmix64's finaliser, a bijection: one flipped bit
 * changes exactly one term, so it always changes the hash, and the order the
 * threads add in does not matter. The block writes its record (hash, SM,
 * flags) and, where an expected hash is set for its slice, compares it and
 * appends an entry to the step's summary when it differs.
 */
#ifndef KCS_PROBE_INTERNAL_H
#define KCS_PROBE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/kcs_probe.h"
#include "backend.h"
#include "status.h"

#ifdef __CUDACC__
#define KCS_PROBE_HOST_DEVICE __host__ __device__
#else
#define KCS_PROBE_HOST_DEVICE
#endif

/* The kernels of the set, in cycle order. */
enum { KCS_PROBE_GEMM_TENSOR, KCS_PROBE_GEMM_FMA, KCS_PROBE_SOFTMAX, KCS_PROBE_SUMSQ };

#define KCS_PROBE_CHUNKS 8              /* launches of each kernel in a cycle */
#define KCS_PROBE_TILE 64               /* a GEMM block's output: TILE x TILE */
#define KCS_PROBE_GEMM_K 256            /* the GEMMs' k */
#define KCS_PROBE_A_TILES 64            /* A tiles (TILE x K) in a GEMM's pool */
#define KCS_PROBE_B_TILES 61            /* B tiles (K x TILE) */
#define KCS_PROBE_SOFTMAX_ROWS 8        /* rows of a softmax block */
#define KCS_PROBE_SOFTMAX_COLS 1024
#define KCS_PROBE_SOFTMAX_POOL_ROWS 509
#define KCS_PROBE_SUMSQ_N 4096          /* elements of a sum-of-squares block */
#define KCS_PROBE_SUMSQ_SEGMENTS 61
#define KCS_PROBE_MAX_SMS 512           /* SMs the summary's bitmap can name */
#define KCS_PROBE_SUMMARY_ENTRIES 16    /* blocks a step's summary names */

/* 32-bit words of one block's output slice, per kernel. */
#define KCS_PROBE_GEMM_WORDS (KCS_PROBE_TILE * KCS_PROBE_TILE)
#define KCS_PROBE_SOFTMAX_WORDS (KCS_PROBE_SOFTMAX_ROWS * KCS_PROBE_SOFTMAX_COLS)
#define KCS_PROBE_SUMSQ_WORDS 2

/* Flags of a record and of a summary entry. */
#define KCS_PROBE_FLAG_INJECTED 1u /* the block flipped a bit of its output on purpose */
#define KCS_PROBE_FLAG_MISMATCH 2u /* its hash differed from the expected one */

/* What one block of one launch leaves: records[kernel * slices + slice]. */
typedef struct {
    uint64_t hash;
    uint32_t sm;
    uint32_t flags;
} kcs_probe_record;

/* An expected hash; valid 0: none (not compared). */
typedef struct {
    uint64_t hash;
    uint32_t valid;
    uint32_t unused;
} kcs_probe_expected;

/* A block that mismatched or was flipped on purpose, in a step's summary. */
typedef struct {
    uint32_t kernel, slice, sm, flags;
    uint64_t hash, expected;
} kcs_probe_entry;

/* What a step brings back to the host: a few hundred bytes. */
typedef struct {
    uint32_t mismatches;  /* blocks whose hash differed from a valid expected one */
    uint32_t injected;    /* blocks that flipped a bit on purpose */
    uint32_t entries;     /* entries claimed (may exceed KCS_PROBE_SUMMARY_ENTRIES: the rest dropped) */
    uint32_t unused;
    uint32_t kernel_mismatches[KCS_PROBE_KERNELS]; /* mismatches, by kernel */
    uint32_t sms_seen[KCS_PROBE_MAX_SMS / 32]; /* bit s: SM s ran a block */
    kcs_probe_entry entry[KCS_PROBE_SUMMARY_ENTRIES];
} kcs_probe_summary;

/* One launch of a step: which kernel and chunk, and the bit it flips (testing). */
typedef struct {
    int kernel;
    int chunk;
    int flip_block;     /* the block that flips a bit; -1: none */
    uint32_t flip_word; /* which word of that block's slice */
    uint32_t flip_bit;  /* which bit of it */
} kcs_probe_launch;

/* The set's input pools on the host, as probe.c generates them (uploaded once). */
typedef struct {
    const uint16_t *tensor_a, *tensor_b; /* bf16 bits: [A_TILES][TILE][K], [B_TILES][K][TILE] */
    const float *fma_a, *fma_b;          /* the same shapes, f32 */
    const float *softmax_x;              /* [POOL_ROWS][COLS] */
    const double *sumsq_x;               /* [SEGMENTS][N] */
} kcs_probe_inputs;

/* A backend's probe state (each backend defines it). */
typedef struct kcs_probe_state kcs_probe_state;

/* What a backend implements to run the set (kcs_backend.probe). */
typedef struct kcs_probe_methods {
    /* The device's SM count (at most KCS_PROBE_MAX_SMS) and the blocks of one launch. */
    kcs_status (*geometry)(kcs_device *device, int *sms, int *blocks, kcs_error *err);
    /* Allocates everything once: the inputs (copied from inputs), one
     * launch's outputs per kernel, the records of a cycle, the expected
     * hashes (none valid), the summary, its own stream and events. */
    kcs_status (*open)(kcs_device *device, int blocks, const kcs_probe_inputs *inputs, kcs_probe_state **state,
                       kcs_error *err);
    /* Copies count expected hashes (records' layout) to the device; waits. */
    kcs_status (*set_expected)(kcs_probe_state *state, const kcs_probe_expected *expected, size_t count,
                               kcs_error *err);
    /* Enqueues a step: the summary zeroed, the launches in order, the summary
     * copied back, an event; returns without waiting. At most one launch per kernel. */
    kcs_status (*launch)(kcs_probe_state *state, const kcs_probe_launch launches[], int count, kcs_error *err);
    /* Whether the step enqueued last has finished (wait: waits for it, its
     * own event only); when it has, fills summary and seconds[i], the device
     * time of launch i. */
    kcs_status (*collect)(kcs_probe_state *state, int wait, int *finished, kcs_probe_summary *summary,
                          double seconds[], kcs_error *err);
    /* Copies every record of the cycle to the host; waits for the step in flight first. */
    kcs_status (*download_records)(kcs_probe_state *state, kcs_probe_record *records, kcs_error *err);
    /* Copies the output slice of block of kernel's last launch to host; waits first. */
    kcs_status (*download_slice)(kcs_probe_state *state, int kernel, int block, uint32_t *host, kcs_error *err);
    /* Waits for the step in flight and frees everything; NULL is ignored. */
    void (*close)(kcs_probe_state *state);
} kcs_probe_methods;

/* splitmix64's finaliser: a bijection of 64-bit words. */
static inline KCS_PROBE_HOST_DEVICE uint64_t kcs_probe_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* One word's term of a slice's hash. */
static inline KCS_PROBE_HOST_DEVICE uint64_t kcs_probe_word_term(uint32_t index, uint32_t word)
{
    return kcs_probe_mix(((uint64_t)index << 32) | word);
}

/* The words of kernel's slice, and how many elements of its dtype they are. */
size_t kcs_probe_slice_words(int kernel);

/* The hash of a slice's words (the same sum the blocks compute). */
uint64_t kcs_probe_hash_words(const uint32_t *words, size_t count);

/* The launch a cycle's unit index (0 .. KERNELS * CHUNKS - 1) is: the chunks
 * in order, each kernel of the set once per chunk. */
void kcs_probe_unit(int unit, int *kernel, int *chunk);

/* The bit a probe with injection flips in the launch of kernel and chunk in
 * cycle (from 1): flip_block -1 when none. The host decides, the kernel flips. */
void kcs_probe_injection(int block, double probability, uint64_t seed, long long cycle, int kernel, int chunk,
                         kcs_probe_launch *launch);

/* The set's pools, generated from their fixed seeds (kcs_probe_inputs_free frees them). */
kcs_status kcs_probe_inputs_make(kcs_probe_inputs *inputs, kcs_error *err);
void kcs_probe_inputs_free(kcs_probe_inputs *inputs);

/* The device's identity a record belongs to: name, platform, driver and build. */
typedef struct {
    char device[256];
    char platform[256];
    char driver[128];
    char build[512];
} kcs_probe_identity;

/* A record file as read (docs/fleet.md, "The probe's record file"). */
typedef struct {
    int version;           /* KCS_PROBE_VERSION it was made with */
    kcs_probe_identity identity;
    int sms, blocks;       /* the geometry it was recorded with */
    uint64_t *hashes;      /* [KERNELS][CHUNKS * blocks] */
} kcs_probe_record_file;

/* Reads a record file; errors name the file, its line and the cause. */
kcs_status kcs_probe_record_read(const char *path, kcs_probe_record_file *record, kcs_error *err);

/* Writes one (hashes in the layout above); errors name the file. */
kcs_status kcs_probe_record_write(const char *path, const kcs_probe_record_file *record, kcs_error *err);

/* Frees what kcs_probe_record_read allocated. */
void kcs_probe_record_file_free(kcs_probe_record_file *record);

/* Why record cannot be compared on a device of identity and geometry, or
 * NULL when it can (same version, device, platform, driver, build, geometry). */
const char *kcs_probe_record_mismatch(const kcs_probe_record_file *record, const kcs_probe_identity *identity,
                                      int sms, int blocks, char *why, size_t size);

/* One block's hashes on several peers: which peers hold the strict
 * majority's hash (1 in agree[i]) and that hash; 0 when no hash has more
 * than half of the count votes (then agree is all 0). */
int kcs_probe_majority(const uint64_t hashes[], int count, int agree[], uint64_t *majority);

/* Opens a probe on an opened device of backend (the public kcs_probe_open
 * over a context calls it; so does `kcs probe`). KCS_UNSUPPORTED when the
 * backend has no probe. */
kcs_status kcs_probe_open_device(const kcs_backend *backend, kcs_device *device, const kcs_device_info *info,
                                 const kcs_probe_options *options, kcs_probe **probe, kcs_error *err);

/* The probe's device identity (for messages and peers). */
const kcs_probe_identity *kcs_probe_identity_of(const kcs_probe *probe);

/* Whether every block of a cycle has a valid expected hash. */
int kcs_probe_has_expected(const kcs_probe *probe);

/* The hashes of the last cycle's records as one SHA-256-able block: the
 * records' hashes of kernel (CHUNKS * blocks of them), downloaded (waits). */
kcs_status kcs_probe_cycle_hashes(kcs_probe *probe, int kernel, uint64_t *hashes, kcs_error *err);

#endif
