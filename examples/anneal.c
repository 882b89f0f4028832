/* anneal.c: the vector compressor's anneal loop with its points resident on the device.
 *
 *   build/examples/anneal [--backend cuda|opencl|reference] [--platform P] [--device D]
 *                         [--n 1000000] [--d 128] [--m 1024] [--iterations 10]
 *                         [--compare K] [--async] [--seed S] [--probe BUDGET]
 *
 * Built by `ninja`; outside the tree, beside example_device.h, with the
 * device libraries installed (docs/library.md, "The examples"):
 *
 *   cc -O2 -o anneal anneal.c $(pkg-config --cflags --libs kcs_opencl kcs_cuda) -lm
 *
 * Uploads n points (f32, n x d) and m anchors once; then each iteration runs
 * assign, reduce, update and energy (docs/anneal.md) on device buffers, the
 * anchors and velocities swapping between two buffers each (no copy), and
 * reads back only the energy, one float. Per iteration it prints the energy,
 * the wall time of the whole iteration (the four calls and the read-back) and
 * the sum of the four kernels' device times, whose ratio shows any time spent
 * outside the kernels (copies, synchronisation, launches): the library's
 * 1.05x target (docs/library.md). --async enqueues the four calls without
 * timing each (kcs_call) and prints the wall time only.
 *
 * The first K iterations (--compare, default 2) are also run by the
 * reference library on the CPU, in lockstep: from the device's state at the
 * start of the iteration (anchors, velocities, downloaded outside the timed
 * region) the host runs kcs_ref_assign/reduce/update/energy and every output
 * of the device's iteration must lie within the one-step bounds of
 * docs/anneal.md (derived in docs/library.md, "The anneal example"); the
 * host's time per iteration is printed beside the device's. Exits 1 when an
 * output is outside its bound, 2 on a bad argument, 3 on a library error.
 * At the full size one CPU iteration is minutes of work: time with
 * --compare 0, compare at a smaller n.
 *
 * --probe BUDGET runs the probe for silent data corruption beside the loop
 * (lib/kcs_probe.h, docs/fleet.md "The probe"): opened once, one whole cycle
 * checked before the loop (by each op's oracle: one device, no record), then
 * kcs_probe_step once per iteration, after the iteration's four calls are
 * enqueued, with BUDGET seconds of device time a step. The probe runs on a
 * stream of its own and never waits for the loop's: its cost is the time its
 * blocks take from the loop's kernels, which the wall times show against a
 * run without it. Every result it returns is counted; a mismatch exits 1.
 *
 * The data: m well-separated cluster centres in [-1, 1)^d and n points, point
 * i a member of cluster i mod m displaced by up to 0.05 per coordinate; the
 * anchors start at the first m points. Deterministic (splitmix64 of --seed).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_device.h"
#include <kcs/kcs_probe.h>
#include <kcs/kcs_ref.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A uniform float in [-1, 1) from counter i of seed (splitmix64's finalizer). */
static float uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) * 0x1p-23 - 1.0);
}

/* Higham's gamma(k) = k u / (1 - k u). */
static double gamma_of(double k, double u)
{
    return k * u / (1.0 - k * u);
}

/* The loop's parameters: temperature T_k = 0.9^k, learning rate and momentum. */
#define LEARNING_RATE 0.5f
#define MOMENTUM 0.5f

/* The device's state and one iteration's outputs, downloaded for the lockstep comparison. */
typedef struct {
    float *a, *v, *a_next, *v_next, *mean, *var, *dist;
    int32_t *idx, *count;
} host_step;

static int host_step_allocate(host_step *h, size_t n, size_t d, size_t m)
{
    h->a = malloc(m * d * sizeof(float));
    h->v = malloc(m * d * sizeof(float));
    h->a_next = malloc(m * d * sizeof(float));
    h->v_next = malloc(m * d * sizeof(float));
    h->mean = malloc(m * d * sizeof(float));
    h->var = malloc(m * d * sizeof(float));
    h->dist = malloc(n * sizeof(float));
    h->idx = malloc(n * sizeof(int32_t));
    h->count = malloc(m * sizeof(int32_t));
    return h->a && h->v && h->a_next && h->v_next && h->mean && h->var && h->dist && h->idx && h->count;
}

static void host_step_free(host_step *h)
{
    free(h->a), free(h->v), free(h->a_next), free(h->v_next), free(h->mean), free(h->var), free(h->dist);
    free(h->idx), free(h->count);
}

/* Compares the device's iteration (dev) with the reference's from the same
 * state (ref: a and v are the state, the rest its outputs); prints what it
 * found and returns the number of outputs outside their bounds. */
static size_t compare_step(const host_step *dev, const host_step *ref, float e_dev, float e_ref, const float *x,
                           size_t n, size_t d, size_t m, float temperature)
{
    const double u = 0x1p-24, u64 = 0x1p-53, lambda = 0x1p-126;
    double max_abs_x = 0.0;
    for (size_t i = 0; i < n * d; i++)
        max_abs_x = fmax(max_abs_x, fabs((double)x[i]));
    /* assign: each dist within b(g) = gamma(d + 2) g + 2 d lambda of the exact one, so two within the sum;
     * an idx may differ only where both anchors' distances are that close (a near tie). */
    size_t outside = 0, near_ties = 0, dist_outside = 0;
    double dist_difference_sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double g_dev = dev->dist[i], g_ref = ref->dist[i];
        double allowed = gamma_of((double)d + 2, u) * (g_dev + g_ref) / (1 - 2 * u64) + 4 * (double)d * lambda;
        double difference = fabs(g_dev - g_ref);
        dist_difference_sum += difference;
        if (!(difference <= allowed))
            dist_outside++;
        else if (dev->idx[i] != ref->idx[i])
            near_ties++;
    }
    outside += dist_outside;
    /* energy: each within b_E of the mean of its own distances (the sum in f64 of any depth up to n,
     * one rounding to f32),
     * and the two means differ by at most the mean difference of the distances. */
    double allowed_e = 2 * (gamma_of((double)n + 2, u64) * (1 + u) + u / (1 - 2 * u64) +
                            2 * u64) * fmax(fabs(e_dev), fabs(e_ref)) + 2 * lambda + dist_difference_sum / (double)n;
    int energy_outside = !(fabs((double)e_dev - (double)e_ref) <= allowed_e);
    outside += (size_t)energy_outside;
    /* reduce and update, where every idx agrees: counts exact; each mean within
     * e_m = gamma(count + 2) max|x| + 2 lambda of the exact one (docs/anneal.md, the
     * depth taken as its largest, count); v_next = mu v + (mean - a), three roundings on
     * top of the mean's error; a_next = a + fl(lr T) v_next, three more and r times v_next's. */
    size_t count_outside = 0, anchor_outside = 0;
    if (near_ties == 0 && dist_outside == 0) {
        float r = LEARNING_RATE * temperature;
        for (size_t j = 0; j < m; j++) {
            if (dev->count[j] != ref->count[j]) {
                count_outside++;
                continue;
            }
            double e_m = ref->count[j] > 0 ? gamma_of((double)ref->count[j] + 2, u) * max_abs_x + 2 * lambda : 0.0;
            for (size_t k = 0; k < d; k++) {
                size_t at = j * d + k;
                double mu_v = fabs((double)MOMENTUM * ref->v[at]), gap = fabs((double)ref->mean[at] - ref->a[at]) + e_m;
                double b_v = e_m + gamma_of(3, u) * (mu_v + gap);
                double r_v = fabs((double)r * ref->v_next[at]) + r * b_v;
                double b_a = r * b_v + gamma_of(3, u) * (fabs((double)ref->a[at]) + r_v);
                if (!(fabs((double)dev->v_next[at] - ref->v_next[at]) <= 2 * b_v + lambda) ||
                    !(fabs((double)dev->a_next[at] - ref->a_next[at]) <= 2 * b_a + lambda))
                    anchor_outside++;
            }
        }
    }
    outside += count_outside + anchor_outside;
    printf("    compared with the reference from the same state: %zu dist outside the bound, %zu near ties "
           "(idx may differ), energy %.9g vs %.9g (%s, allowed %.3g), %s\n", dist_outside, near_ties,
           (double)e_dev, (double)e_ref, energy_outside ? "OUTSIDE" : "within", allowed_e,
           near_ties || dist_outside ? "counts and anchors not compared (assignments differ)"
           : count_outside || anchor_outside ? "counts or anchors OUTSIDE their bounds"
                                             : "counts equal, anchors and velocities within their bounds");
    return outside;
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    int platform = 0, device = 0, iterations = 10, compare = 2, asynchronous = 0;
    size_t n = 1000000, d = 128, m = 1024;
    uint64_t seed = 1;
    double probe_budget = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--backend") == 0 && value)
            backend = argv[++i];
        else if (strcmp(argv[i], "--platform") == 0 && value)
            platform = atoi(argv[++i]);
        else if (strcmp(argv[i], "--device") == 0 && value)
            device = atoi(argv[++i]);
        else if (strcmp(argv[i], "--n") == 0 && value)
            n = (size_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--d") == 0 && value)
            d = (size_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--m") == 0 && value)
            m = (size_t)strtod(argv[++i], NULL);
        else if (strcmp(argv[i], "--iterations") == 0 && value)
            iterations = atoi(argv[++i]);
        else if (strcmp(argv[i], "--compare") == 0 && value)
            compare = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && value)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--async") == 0)
            asynchronous = 1;
        else if (strcmp(argv[i], "--probe") == 0 && value)
            probe_budget = strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "anneal: unknown argument '%s' (see the comment at the top of examples/anneal.c)\n",
                    argv[i]);
            return 2;
        }
    }
    if (m == 0 || m > n || d == 0 || iterations < 1 || compare < 0 || probe_budget < 0) {
        fprintf(stderr, "anneal: needs 1 <= m <= n, d >= 1, --iterations >= 1, --compare >= 0, --probe > 0\n");
        return 2;
    }
    kcs_error err = {{0}};
    kcs_context *context = NULL;
    kcs_probe *probe = NULL;
    long probe_results[5] = {0}, probe_launches = 0; /* results by kcs_probe_verdict */
    double probe_device_seconds = 0;
    int result = 3;
    size_t outside = 0;
    host_step dev = {0}, ref = {0};
    float *x = malloc(n * d * sizeof *x), *anchors = malloc(m * d * sizeof *anchors);
    float *zeros = calloc(m * d, sizeof *zeros);
    double *walls = calloc((size_t)iterations, sizeof *walls), *kernels = calloc((size_t)iterations, sizeof *kernels);
    if (!x || !anchors || !zeros || !walls || !kernels || !host_step_allocate(&dev, n, d, m) ||
        !host_step_allocate(&ref, n, d, m)) {
        kcs_fail(&err, KCS_ERROR, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < d; k++)
            x[i * d + k] = uniform(seed, (i % m) * d + k) + 0.05f * uniform(seed ^ 0x5eedull, i * d + k);
    memcpy(anchors, x, m * d * sizeof *x);

    if (example_open(backend, platform, device, &context, &err) != KCS_OK)
        goto done;
    printf("anneal: n=%zu d=%zu m=%zu, f32 points on %s (%s), %s\n", n, d, m, kcs_context_device_name(context),
           kcs_context_backend(context), asynchronous ? "asynchronous calls, wall time only"
                                                      : "each call timed on the device");
    kcs_device_buffer *bx, *ba[2], *bv[2], *bidx, *bdist, *bcount, *bmean, *bvar, *benergy;
    if (kcs_allocate(context, n * d * sizeof(float), &bx, &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &ba[0], &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &ba[1], &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &bv[0], &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &bv[1], &err) != KCS_OK ||
        kcs_allocate(context, n * sizeof(int32_t), &bidx, &err) != KCS_OK ||
        kcs_allocate(context, n * sizeof(float), &bdist, &err) != KCS_OK ||
        kcs_allocate(context, m * sizeof(int32_t), &bcount, &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &bmean, &err) != KCS_OK ||
        kcs_allocate(context, m * d * sizeof(float), &bvar, &err) != KCS_OK ||
        kcs_allocate(context, sizeof(float), &benergy, &err) != KCS_OK ||
        kcs_upload(context, bx, x, n * d * sizeof(float), &err) != KCS_OK ||
        kcs_upload(context, ba[0], anchors, m * d * sizeof(float), &err) != KCS_OK ||
        kcs_upload(context, bv[0], zeros, m * d * sizeof(float), &err) != KCS_OK)
        goto done;
    if (probe_budget > 0) {
        kcs_probe_options options = {.budget_seconds = probe_budget};
        kcs_probe_result first;
        if (kcs_probe_open(context, &options, &probe, &err) != KCS_OK ||
            kcs_probe_calibrate(&probe, 1, 8, &first, &err) != KCS_OK)
            goto done;
        printf("probe: first cycle %s by %s, %.3f ms on the device; then a step of %.3f ms a budget each iteration\n",
               kcs_probe_verdict_name(first.verdict), kcs_probe_decider_name(first.decider),
               1e3 * first.device_seconds, 1e3 * probe_budget);
    }

    float temperature = 1.0f;
    for (int it = 0; it < iterations; it++, temperature *= 0.9f) {
        int cur = it % 2, next = 1 - cur;
        kcs_op_args assign = {.op = "assign", .dtype = KCS_F32, .assign = {n, d, m}};
        kcs_op_args reduce = {.op = "reduce", .dtype = KCS_F32, .reduce = {n, d, m}};
        kcs_op_args update = {.op = "update", .dtype = KCS_F32,
                              .update = {m, d, temperature, LEARNING_RATE, MOMENTUM}};
        kcs_op_args energy = {.op = "energy", .dtype = KCS_F32, .energy = {n}};
        const kcs_op_args *steps[4] = {&assign, &reduce, &update, &energy};
        kcs_device_buffer *const *inputs[4] = {(kcs_device_buffer *[]){bx, ba[cur]}, (kcs_device_buffer *[]){bx, bidx},
                                               (kcs_device_buffer *[]){ba[cur], bv[cur], bmean, bcount},
                                               (kcs_device_buffer *[]){bdist}};
        kcs_device_buffer *const *outputs[4] = {(kcs_device_buffer *[]){bidx, bdist},
                                                (kcs_device_buffer *[]){bcount, bmean, bvar},
                                                (kcs_device_buffer *[]){ba[next], bv[next]},
                                                (kcs_device_buffer *[]){benergy}};
        double seconds[4] = {0, 0, 0, 0}, start = now();
        float e = 0.0f;
        for (int s = 0; s < 4; s++) {
            kcs_status status = asynchronous ? kcs_call(context, steps[s], NULL, inputs[s], outputs[s], &err)
                                             : kcs_call_timed(context, steps[s], NULL, inputs[s], outputs[s],
                                                              &seconds[s], &err);
            if (status != KCS_OK)
                goto done;
        }
        if (probe) { /* enqueued on the probe's own stream; the result is the previous step's */
            kcs_probe_result step;
            if (kcs_probe_step(probe, &step, &err) != KCS_OK)
                goto done;
            probe_results[step.verdict]++;
            probe_launches += step.launches;
            probe_device_seconds += step.device_seconds;
        }
        if (kcs_download(context, benergy, &e, sizeof e, &err) != KCS_OK)
            goto done;
        walls[it] = now() - start;
        kernels[it] = seconds[0] + seconds[1] + seconds[2] + seconds[3];
        if (asynchronous)
            printf("iteration %d: T %.4f energy %.9g wall %.3f ms\n", it, (double)temperature, (double)e,
                   1e3 * walls[it]);
        else
            printf("iteration %d: T %.4f energy %.9g wall %.3f ms kernels %.3f ms (assign %.3f reduce %.3f "
                   "update %.3f energy %.3f) wall/kernels %.3f\n", it, (double)temperature, (double)e,
                   1e3 * walls[it], 1e3 * kernels[it], 1e3 * seconds[0], 1e3 * seconds[1], 1e3 * seconds[2],
                   1e3 * seconds[3], walls[it] / kernels[it]);
        if (it >= compare)
            continue;
        /* The lockstep comparison, outside the timed region. */
        if (kcs_download(context, ba[cur], dev.a, m * d * sizeof(float), &err) != KCS_OK ||
            kcs_download(context, bv[cur], dev.v, m * d * sizeof(float), &err) != KCS_OK ||
            kcs_download(context, ba[next], dev.a_next, m * d * sizeof(float), &err) != KCS_OK ||
            kcs_download(context, bv[next], dev.v_next, m * d * sizeof(float), &err) != KCS_OK ||
            kcs_download(context, bidx, dev.idx, n * sizeof(int32_t), &err) != KCS_OK ||
            kcs_download(context, bdist, dev.dist, n * sizeof(float), &err) != KCS_OK ||
            kcs_download(context, bcount, dev.count, m * sizeof(int32_t), &err) != KCS_OK)
            goto done;
        memcpy(ref.a, dev.a, m * d * sizeof(float));
        memcpy(ref.v, dev.v, m * d * sizeof(float));
        double cpu_start = now();
        kcs_ref_assign_f32(x, ref.a, n, d, m, ref.idx, ref.dist);
        if (kcs_ref_reduce_f32(x, ref.idx, n, d, m, ref.count, ref.mean, ref.var) != 0) {
            kcs_fail(&err, KCS_ERROR, "kcs_ref_reduce_f32: out of memory");
            goto done;
        }
        kcs_ref_update_f32(ref.a, ref.v, ref.mean, ref.count, m, d, temperature, LEARNING_RATE, MOMENTUM, ref.a_next,
                           ref.v_next);
        float e_ref = kcs_ref_energy_f32(ref.dist, n);
        printf("    the reference library on the CPU: %.3f ms for the same iteration\n", 1e3 * (now() - cpu_start));
        outside += compare_step(&dev, &ref, e, e_ref, x, n, d, m, temperature);
    }
    if (iterations > 1) { /* the first iteration builds programs and grows scratch memory: left out */
        double wall = 0, kernel = 0;
        for (int it = 1; it < iterations; it++)
            wall += walls[it], kernel += kernels[it];
        wall /= iterations - 1, kernel /= iterations - 1;
        if (asynchronous)
            printf("iterations 1..%d: mean wall %.3f ms\n", iterations - 1, 1e3 * wall);
        else
            printf("iterations 1..%d: mean wall %.3f ms, mean kernels %.3f ms, wall/kernels %.3f\n", iterations - 1,
                   1e3 * wall, 1e3 * kernel, wall / kernel);
    }
    if (probe) {
        kcs_probe_result last;
        if (kcs_probe_wait(probe, &last, &err) != KCS_OK)
            goto done;
        probe_results[last.verdict]++;
        probe_launches += last.launches;
        probe_device_seconds += last.device_seconds;
        printf("probe: %ld steps passed, %ld mismatched, %ld undecided, %ld calls found the last still running; "
               "%ld launches, %.3f ms between their events on the device in all\n", probe_results[KCS_PROBE_PASS],
               probe_results[KCS_PROBE_MISMATCH], probe_results[KCS_PROBE_UNDECIDED],
               probe_results[KCS_PROBE_PENDING] - 1, probe_launches, 1e3 * probe_device_seconds);
    }
    result = outside || probe_results[KCS_PROBE_MISMATCH] ? 1 : 0;
    if (outside)
        fprintf(stderr, "anneal: %zu outputs outside their bounds against the reference library\n", outside);
done:
    if (result == 3)
        fprintf(stderr, "anneal: %s\n", err.message);
    kcs_probe_close(probe);
    kcs_close(context); /* releases every buffer */
    host_step_free(&dev);
    host_step_free(&ref);
    free(x), free(anchors), free(zeros), free(walls), free(kernels);
    return result;
}
