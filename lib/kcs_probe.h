/* kcs_probe.h: a probe for silent data corruption, run beside a workload
 * (docs/fleet.md, "The probe"). Part of libkcs_ref; the CUDA probe is in
 * libkcs_cuda and reached through a context opened by kcs_open_cuda.
 *
 * A probe is opened once on a context. Open allocates everything it will use
 * (its inputs, made from a fixed seed and uploaded once; one launch's outputs
 * per kernel; a record per block of a cycle; the expected hashes) and never
 * allocates again. Each kcs_probe_step runs a slice of a fixed set of small
 * deterministic kernels (a tensor-core GEMM, bf16 in and f32 accumulated; an
 * FMA-unit GEMM in f32; a row softmax in f32; a sum of squares in f64), as
 * much of it as fits a stated budget of device time, and moves on, so that
 * coverage accumulates over calls: a cycle is every kernel over every chunk of
 * its inputs. Each launch has a grid of a multiple of the device's SM count;
 * each block records the SM that ran it and a hash of the bits of its own
 * output slice, and compares that hash with the expected one on the device.
 * Only a summary of a few hundred bytes comes back per step.
 *
 * What a result is compared with, in this order, and the verdict says which
 * (kcs_probe_decider): the hashes recorded for the same device model, driver,
 * kcs build and probe version (kcs_probe_options.expected_path, a file
 * written by kcs_probe_write_record or `kcs probe --record`); failing that,
 * the majority of identical devices (kcs_probe_calibrate over several
 * probes); failing that, the op's oracle within the op's derived bound
 * (kcs_probe_calibrate over one probe, or over peers with no majority).
 * Calibration establishes the expected hashes the later steps compare with
 * on the device.
 *
 * Ordering with the application (CUDA). The probe makes its own non-blocking
 * stream, of the lowest priority, on the context's device: it is neither the
 * application's stream nor the context's (kcs_context_queue). The probe's
 * launches do not wait for any work of the application or of the context,
 * and no work of theirs waits for the probe's: no event, stream or device is
 * synchronized with them. The probe reads and writes its own buffers only.
 * kcs_probe_step enqueues and returns; it does not block on the GPU. The
 * result of a step is read by the next kcs_probe_step, when the event
 * recorded after that step's copy-back has completed (cudaEventQuery; until
 * then the call returns KCS_PROBE_PENDING and launches nothing, so steps
 * never pile up), or by kcs_probe_wait, which waits on that event alone
 * (cudaEventSynchronize: the probe's own step, not the device). The probe
 * restores the calling thread's current CUDA device before returning. Open
 * and close allocate and free device memory, which may synchronize the
 * device: call them outside the loop. The probe's blocks share the SMs with
 * the application's kernels while they run: that is its cost to the
 * application (docs/fleet.md quotes it).
 *
 * On the reference backend the same set runs on the host, in the calling
 * thread, one "SM" (cpu 0), each block a slice: every step is finished when
 * it returns.
 *
 * A probe belongs to one host thread at a time, as its context does.
 */
#ifndef KCS_PROBE_H
#define KCS_PROBE_H

#include <stdint.h>

#include "kcs_device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the probe's set: its kernels, shapes, inputs and hash. A
 * record file holds it; a record of another version is not compared. */
#define KCS_PROBE_VERSION 1

/* Mismatches a result lists (kcs_probe_result.mismatch_count counts all). */
#define KCS_PROBE_MAX_MISMATCHES 16

/* The kernels of the set (kcs_probe_kernel_name gives their names). */
#define KCS_PROBE_KERNELS 4

/* An open probe on one context. */
typedef struct kcs_probe kcs_probe;

/* What a step or a calibration found. */
typedef enum {
    KCS_PROBE_PENDING = 0, /* no result yet: the step in flight has not finished, or none ran */
    KCS_PROBE_PASS,        /* every block's hash equalled the one it was compared with */
    KCS_PROBE_MISMATCH,    /* a block's output differed: mismatches names card, kernel, slice and SM */
    KCS_PROBE_UNDECIDED,   /* nothing to compare with: no record, and not calibrated yet */
} kcs_probe_verdict;

/* What a result was compared with (the first that applied, in this order). */
typedef enum {
    KCS_PROBE_BY_NOTHING = 0,
    KCS_PROBE_BY_RECORD,   /* the hashes of a record file of the same model, driver, build, probe */
    KCS_PROBE_BY_MAJORITY, /* the majority of identical devices, block by block */
    KCS_PROBE_BY_ORACLE,   /* the op's oracle within its bound: no record, no majority */
} kcs_probe_decider;

/* One block whose output slice did not match. */
typedef struct {
    int kernel;          /* index in the set (kcs_probe_kernel_name) */
    unsigned chunk;      /* the launch of the cycle (its inputs' chunk) */
    unsigned block;      /* the block within that launch's grid */
    unsigned slice;      /* chunk * blocks + block: the output slice, as the record file numbers them */
    unsigned sm;         /* the SM that ran the block (%smid; 0 on the reference, "cpu 0") */
    uint64_t hash;       /* the block's hash of its output slice */
    uint64_t expected;   /* what it was compared with (0 where the oracle decided) */
    kcs_probe_decider decider;
    int injected;        /* the probe flipped a bit of this block itself (kcs_probe_options.inject_*) */
    char detail[192];    /* the oracle's element and error, or the peers' count */
} kcs_probe_mismatch;

/* The result of one step, or of a calibration's cycle. */
typedef struct {
    kcs_probe_verdict verdict;
    kcs_probe_decider decider; /* what decided it: for a mismatch, its first mismatch's decider */
    long long step;            /* the step this is the result of, from 1 (0: none) */
    long long cycle;           /* the cycle its first launch belonged to, from 1 */
    int launches;              /* kernel launches in the step */
    unsigned kernels;          /* bit k set: kernel k of the set ran in it */
    int mismatch_count;        /* every mismatching block; the first KCS_PROBE_MAX_MISMATCHES listed */
    int kernel_mismatches[KCS_PROBE_KERNELS]; /* mismatch_count by kernel */
    kcs_probe_mismatch mismatches[KCS_PROBE_MAX_MISMATCHES];
    int injected_count;        /* flips the probe injected in the step (testing only) */
    double device_seconds;     /* the step's launches on the device (events on the probe's stream:
                                  beside a busy application, also the time its blocks waited) */
    double launch_seconds[KCS_PROBE_KERNELS]; /* each kernel's launches in it, 0 where it did not run */
    double chunk_seconds[KCS_PROBE_KERNELS][8]; /* each launch of it on the device, by kernel and chunk
                                                   (8 = the set's chunks; 0 where it did not run) */
    double host_seconds;       /* the wall time of the kcs_probe_step call that enqueued it */
    int sms_seen;              /* distinct SMs that ran a block of the step */
    char message[256];         /* one line: what was compared, or why nothing was */
} kcs_probe_result;

/* How to open a probe; all zero is a valid choice (1 ms budget, no record, no injection). */
typedef struct {
    double budget_seconds;      /* device time a step may take, predicted from each kernel's
                                   fastest launch so far (its own work; a launch beside a busy
                                   application also waits for SMs); 0: 1 ms. A step launches at
                                   least one kernel and at most one of each. */
    const char *expected_path;  /* a record file to compare with (kcs_probe_write_record);
                                   NULL: none. One of another model, driver, build or probe
                                   version is not used: the probe says so in its message. */
    /* Fault injection, for tests: with inject_probability > 0, each launch flips one bit of
     * one output element of block inject_block (chosen from inject_seed, the kernel, chunk
     * and cycle), with that probability, inside the kernel before the block hashes it. */
    int inject_block;
    double inject_probability;
    uint64_t inject_seed;
} kcs_probe_options;

/* Opens a probe on context (docs above); fails with a message naming the
 * cause (a record file that cannot be read names its file and line). A
 * backend without a probe is KCS_UNSUPPORTED. */
KCS_API kcs_status kcs_probe_open(kcs_context *context, const kcs_probe_options *options, kcs_probe **probe,
                                  kcs_error *err);

/* Reads the result of the step in flight if it has finished (else result's
 * verdict is KCS_PROBE_PENDING and nothing is launched), then enqueues the
 * next slice of the set and returns without waiting. result may be NULL. */
KCS_API kcs_status kcs_probe_step(kcs_probe *probe, kcs_probe_result *result, kcs_error *err);

/* Waits for the step in flight (its own event only) and gives its result;
 * KCS_PROBE_PENDING when no step is in flight. */
KCS_API kcs_status kcs_probe_wait(kcs_probe *probe, kcs_probe_result *result, kcs_error *err);

/* Runs one whole cycle on each probe now, in step with each other, waiting
 * for it, and compares it: with the record where a probe has one; else
 * block by block with the strict majority of the probes of identical
 * devices (same name, platform, driver, build); else, for a device with no
 * such peers or a block with no majority, with the op's oracle within its
 * bound (at most oracle_blocks blocks per launch, spread over the grid; 0:
 * every block). The hashes it establishes become the expected ones of the
 * later steps. results[i] is probe i's verdict on that cycle. */
KCS_API kcs_status kcs_probe_calibrate(kcs_probe *const probes[], int count, int oracle_blocks,
                                       kcs_probe_result results[], kcs_error *err);

/* Writes the probe's expected hashes (from its record or its calibration) as
 * a record file (docs/fleet.md, "The probe's record file"); fails when some
 * block has none (calibration found it wrong, or none ran). */
KCS_API kcs_status kcs_probe_write_record(const kcs_probe *probe, const char *path, kcs_error *err);

/* Waits for the step in flight, then frees everything the probe holds. NULL is ignored. */
KCS_API void kcs_probe_close(kcs_probe *probe);

/* The name of kernel k of the set ("gemm-tensor", "gemm-fma", "softmax", "sumsq"), or NULL. */
KCS_API const char *kcs_probe_kernel_name(int kernel);

/* "pending", "pass", "mismatch", "undecided". */
KCS_API const char *kcs_probe_verdict_name(kcs_probe_verdict verdict);

/* "nothing", "record", "majority", "oracle". */
KCS_API const char *kcs_probe_decider_name(kcs_probe_decider decider);

/* The device's SMs, the blocks of one launch and the launches of a cycle. */
KCS_API void kcs_probe_geometry(const kcs_probe *probe, int *sms, int *blocks, int *cycle_launches);

#ifdef __cplusplus
}
#endif

#endif
