/* anneal.c: reference anneal steps of the vector compressor (docs/anneal.md):
 * assign, reduce, update and energy.
 *
 * assign: for each point, the squared distance to every anchor as a sum of
 *   squared differences in f32, dimension by dimension (d - 1 additions, the
 *   order the spec's gamma(d + 2) bound covers in any case), keeping the
 *   first anchor with the smallest: a strict < gives ties to the smallest
 *   index. f16 points are widened to f32 once per point (exactly).
 * reduce: counts, then means and variances by two passes with sums carried
 *   in f64, rounded once to f32: more accurate than the f32 the spec allows,
 *   and the two-pass form never forms E[x^2] - E[x]^2.
 * update: the formula in f32 with the parameters rounded to f32, (mean - a)
 *   formed first, then lr * T, then the addition to a: the roundings the
 *   spec's bound counts.
 * energy: the distances summed in f64 in blocks of 1024, blocks pairwise,
 *   as ref/sumsq.c does, divided by n in f64 and rounded once to f32.
 * Plain scalar C in strict IEEE arithmetic (-ffp-contract=off, no fast-math).
 *
 * Run only them: build/kcs run --backend reference anneal
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kcs_ref.h"
#include "reference_backend.h"

/* The nearest anchor to one f32 point, ties to the smallest index. */
static void nearest_anchor(const float *point, const float *a, size_t d, size_t m, int32_t *index,
                           float *distance)
{
    int32_t best = 0;
    float best_distance = INFINITY;
    for (size_t j = 0; j < m; j++) {
        const float *anchor = a + j * d;
        float sum = 0.0f;
        for (size_t k = 0; k < d; k++) {
            float difference = point[k] - anchor[k];
            sum += difference * difference;
        }
        if (j == 0 || sum < best_distance) {
            best_distance = sum;
            best = (int32_t)j;
        }
    }
    *index = best;
    *distance = best_distance;
}

void kcs_ref_assign_f32(const float *x, const float *a, size_t n, size_t d, size_t m, int32_t *idx,
                        float *dist)
{
    for (size_t i = 0; i < n; i++)
        nearest_anchor(x + i * d, a, d, m, &idx[i], &dist[i]);
}

int kcs_ref_assign_f16(const kcs_f16 *x, const float *a, size_t n, size_t d, size_t m,
                       int32_t *idx, float *dist)
{
    float *point = malloc((d ? d : 1) * sizeof *point);
    if (!point)
        return -1;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < d; k++)
            point[k] = kcs_f16_to_float(x[i * d + k]);
        nearest_anchor(point, a, d, m, &idx[i], &dist[i]);
    }
    free(point);
    return 0;
}

/* Element p of the points, f16 (half != NULL) or f32, as a double. */
static double point_value(const float *single, const kcs_f16 *half, size_t p)
{
    return half ? (double)kcs_f16_to_float(half[p]) : (double)single[p];
}

static int reduce(const float *single, const kcs_f16 *half, const int32_t *idx, size_t n, size_t d,
                  size_t m, int32_t *count, float *mean, float *var)
{
    size_t cells = m * d > 0 ? m * d : 1;
    double *sum = calloc(cells, sizeof *sum), *squares = calloc(cells, sizeof *squares);
    if (!sum || !squares) {
        free(sum);
        free(squares);
        return -1;
    }
    for (size_t j = 0; j < m; j++)
        count[j] = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= m)
            continue; /* outside the precondition: counted nowhere */
        count[idx[i]]++;
        for (size_t k = 0; k < d; k++)
            sum[(size_t)idx[i] * d + k] += point_value(single, half, i * d + k);
    }
    for (size_t p = 0; p < m * d; p++)
        sum[p] = count[p / d] > 0 ? sum[p] / count[p / d] : 0.0; /* now the mean */
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= m)
            continue;
        for (size_t k = 0; k < d; k++) {
            size_t p = (size_t)idx[i] * d + k;
            double deviation = point_value(single, half, i * d + k) - sum[p];
            squares[p] += deviation * deviation;
        }
    }
    for (size_t p = 0; p < m * d; p++) {
        mean[p] = (float)sum[p];
        var[p] = count[p / d] > 0 ? (float)(squares[p] / count[p / d]) : 0.0f;
    }
    free(sum);
    free(squares);
    return 0;
}

int kcs_ref_reduce_f32(const float *x, const int32_t *idx, size_t n, size_t d, size_t m,
                       int32_t *count, float *mean, float *var)
{
    return reduce(x, NULL, idx, n, d, m, count, mean, var);
}

int kcs_ref_reduce_f16(const kcs_f16 *x, const int32_t *idx, size_t n, size_t d, size_t m,
                       int32_t *count, float *mean, float *var)
{
    return reduce(NULL, x, idx, n, d, m, count, mean, var);
}

void kcs_ref_update_f32(const float *a, const float *v, const float *mean, const int32_t *count,
                        size_t m, size_t d, float temperature, float learning_rate, float momentum,
                        float *a_next, float *v_next)
{
    float rate = learning_rate * temperature;
    for (size_t j = 0; j < m; j++)
        for (size_t k = 0; k < d; k++) {
            size_t p = j * d + k;
            float velocity = count[j] > 0 ? momentum * v[p] + (mean[p] - a[p]) : momentum * v[p];
            v_next[p] = velocity;
            a_next[p] = a[p] + rate * velocity;
        }
}

enum { block_length = 1024 };

static double blocked_sum(const float *x, size_t n)
{
    if (n > block_length) {
        size_t blocks = (n + block_length - 1) / block_length, half = blocks / 2 * block_length;
        return blocked_sum(x, half) + blocked_sum(x + half, n - half);
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return sum;
}

float kcs_ref_energy_f32(const float *dist, size_t n)
{
    return (float)(blocked_sum(dist, n) / (double)n);
}

/* The adapters that run the functions above on the reference backend's buffers, and their rows. */

static KCS_REFERENCE_STEP(assign_f32)
{
    (void)err;
    const kcs_anneal_args *s = &args->assign;
    kcs_ref_assign_f32(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(inputs[1]),
                       s->n, s->d, s->m, kcs_reference_buffer_data(outputs[0]),
                       kcs_reference_buffer_data(outputs[1]));
    return KCS_OK;
}
KCS_REFERENCE_RUN(kcs_reference_assign_f32, NULL, assign_f32)

static KCS_REFERENCE_STEP(assign_f16)
{
    const kcs_anneal_args *s = &args->assign;
    int status = kcs_ref_assign_f16(
        kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(inputs[1]), s->n, s->d,
        s->m, kcs_reference_buffer_data(outputs[0]), kcs_reference_buffer_data(outputs[1]));
    return status == 0 ? KCS_OK : kcs_fail(err, KCS_ERROR, "out of memory");
}
KCS_REFERENCE_RUN(kcs_reference_assign_f16, NULL, assign_f16)

/* The precondition of reduce, checked before the clock starts so that the error names the point. */
static KCS_REFERENCE_STEP(check_indices)
{
    (void)outputs;
    const kcs_anneal_args *s = &args->reduce;
    const int32_t *idx = kcs_reference_buffer_data(inputs[1]);
    for (size_t i = 0; i < s->n; i++)
        if (idx[i] < 0 || (size_t)idx[i] >= s->m)
            return kcs_fail(err, KCS_ERROR, "idx[%zu] = %d is not an anchor index in [0, %zu)", i,
                            (int)idx[i], s->m);
    return KCS_OK;
}

/* The reduce adapter of one storage type of the points (KCS_ANNEAL_POINT_TYPES). */
#define DEFINE_REDUCE_ADAPTER(suffix, T, dtype)                                                    \
    static KCS_REFERENCE_STEP(reduce_##suffix)                                                     \
    {                                                                                              \
        const kcs_anneal_args *s = &args->reduce;                                                  \
        int status = kcs_ref_reduce_##suffix(kcs_reference_buffer_data(inputs[0]),                 \
                                             kcs_reference_buffer_data(inputs[1]), s->n, s->d, s->m, \
                                             kcs_reference_buffer_data(outputs[0]),                \
                                             kcs_reference_buffer_data(outputs[1]),                \
                                             kcs_reference_buffer_data(outputs[2]));               \
        return status == 0 ? KCS_OK : kcs_fail(err, KCS_ERROR, "out of memory");                   \
    }                                                                                              \
    KCS_REFERENCE_RUN(kcs_reference_reduce_##suffix, check_indices, reduce_##suffix)
KCS_ANNEAL_POINT_TYPES(DEFINE_REDUCE_ADAPTER)

static KCS_REFERENCE_STEP(update_f32)
{
    (void)err;
    const kcs_anneal_update_args *s = &args->update;
    kcs_ref_update_f32(kcs_reference_buffer_data(inputs[0]), kcs_reference_buffer_data(inputs[1]),
                       kcs_reference_buffer_data(inputs[2]), kcs_reference_buffer_data(inputs[3]),
                       s->m, s->d, (float)s->temperature, (float)s->learning_rate,
                       (float)s->momentum, kcs_reference_buffer_data(outputs[0]),
                       kcs_reference_buffer_data(outputs[1]));
    return KCS_OK;
}
KCS_REFERENCE_RUN(kcs_reference_update_f32, NULL, update_f32)

static KCS_REFERENCE_STEP(energy_f32)
{
    (void)err;
    float result = kcs_ref_energy_f32(kcs_reference_buffer_data(inputs[0]), args->energy.n);
    memcpy(kcs_reference_buffer_data(outputs[0]), &result, sizeof result);
    return KCS_OK;
}
KCS_REFERENCE_RUN(kcs_reference_energy_f32, NULL, energy_f32)

static const kcs_kernel rows[] = {
    {"assign", KCS_F32, "direct-difference", "sum of squared differences in float, strict < keeps the first",
     kcs_reference_assign_f32, NULL},
    {"assign", KCS_F16, "direct-difference", "points widened to float, then as f32", kcs_reference_assign_f16,
     NULL},
    {"reduce", KCS_F32, "two-pass-f64", "counts, then means and variances by two passes in double",
     kcs_reference_reduce_f32, NULL},
    {"reduce", KCS_F16, "two-pass-f64", "points widened exactly, then as f32", kcs_reference_reduce_f16, NULL},
    {"update", KCS_F32, "elementwise", "the formula in float, (mean - a) first", kcs_reference_update_f32,
     NULL},
    {"energy", KCS_F32, "blocked-pairwise-f64", "sum in double in blocks of 1024, divide, round to float",
     kcs_reference_energy_f32, NULL},
};

const kcs_kernel_table kcs_reference_anneal_kernels = KCS_KERNEL_TABLE(rows);
