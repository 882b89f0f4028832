/* saboteur_anneal.c: broken anneal steps, each a mistake real kernels make:
 * assign keeping the last of tied anchors (<= instead of <), comparing and
 * storing distances rounded to f16, or reading the wrong point for the last
 * one; reduce with the textbook variance E[x^2] - E[x]^2 in f32, or the
 * sample variance (divided by count - 1); update decaying no velocity of
 * empty anchors, or forgetting the temperature; energy dividing by n - 1. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "saboteur_backend.h"

/* Point element p of x as a float (f16 widened exactly). */
static float point(const void *x, kcs_dtype dtype, size_t p)
{
    return (float)kcs_load_element(x, dtype, p);
}

/* A distance rounded once to f16 (overflowing to inf), as a float. */
static float to_f16(float distance)
{
    unsigned char half[2];
    kcs_store_element(half, KCS_F16, 0, distance);
    return (float)kcs_load_element(half, KCS_F16, 0);
}

/* assign in f32 like the reference, with one of three mistakes. */
static kcs_status broken_assign(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                kcs_buffer *const out[], int ties_to_largest,
                                int last_point_shifted, int f16_distances, kcs_error *err)
{
    size_t n = args->assign.n, d = args->assign.d, m = args->assign.m;
    void *x = NULL, *a = NULL;
    kcs_status status =
        kcs_saboteur_fetch(device, in[0], n * d * kcs_dtype_size(args->dtype), &x, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[1], m * d * sizeof(float), &a, err);
    int32_t *idx = malloc((n ? n : 1) * sizeof *idx);
    float *dist = malloc((n ? n : 1) * sizeof *dist);
    if (status == KCS_OK && (!idx || !dist))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t i = 0; i < n && status == KCS_OK; i++) {
        size_t source = last_point_shifted && i == n - 1 && i > 0 ? i - 1 : i;
        float best = INFINITY;
        int32_t best_index = 0;
        for (size_t j = 0; j < m; j++) {
            float sum = 0.0f;
            for (size_t k = 0; k < d; k++) {
                float difference =
                    point(x, args->dtype, source * d + k) - ((const float *)a)[j * d + k];
                sum += difference * difference;
            }
            if (f16_distances)
                sum = to_f16(sum);
            if (sum < best || (ties_to_largest && sum == best)) {
                best = sum;
                best_index = (int32_t)j;
            }
        }
        idx[i] = best_index;
        dist[i] = best;
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], idx, n * sizeof *idx, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[1], dist, n * sizeof *dist, err);
    free(x);
    free(a);
    free(idx);
    free(dist);
    return status;
}

static kcs_status assign_ties_to_largest(kcs_device *device, const kcs_op_args *args,
                                         kcs_buffer *const in[], kcs_buffer *const out[],
                                         double *seconds, kcs_error *err)
{
    *seconds = 0;
    return broken_assign(device, args, in, out, 1, 0, 0, err);
}

static kcs_status assign_last_point_shifted(kcs_device *device, const kcs_op_args *args,
                                            kcs_buffer *const in[], kcs_buffer *const out[],
                                            double *seconds, kcs_error *err)
{
    *seconds = 0;
    return broken_assign(device, args, in, out, 0, 1, 0, err);
}

static kcs_status assign_f16_distances(kcs_device *device, const kcs_op_args *args,
                                       kcs_buffer *const in[], kcs_buffer *const out[],
                                       double *seconds, kcs_error *err)
{
    *seconds = 0;
    return broken_assign(device, args, in, out, 0, 0, 1, err);
}

/* reduce with sums of x and x^2 in f32 and var = E[x^2] - E[x]^2. */
static kcs_status reduce_cancelling_variance(kcs_device *device, const kcs_op_args *args,
                                             kcs_buffer *const in[], kcs_buffer *const out[],
                                             double *seconds, kcs_error *err)
{
    size_t n = args->reduce.n, d = args->reduce.d, m = args->reduce.m,
           cells = m * d > 0 ? m * d : 1;
    void *x = NULL, *idx_data = NULL;
    *seconds = 0;
    kcs_status status =
        kcs_saboteur_fetch(device, in[0], n * d * kcs_dtype_size(args->dtype), &x, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[1], n * sizeof(int32_t), &idx_data, err);
    const int32_t *idx = idx_data;
    int32_t *count = calloc(m ? m : 1, sizeof *count);
    float *sum = calloc(cells, sizeof *sum), *squares = calloc(cells, sizeof *squares);
    if (status == KCS_OK && (!count || !sum || !squares))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t i = 0; i < n && status == KCS_OK; i++) {
        if (idx[i] < 0 || (size_t)idx[i] >= m)
            continue;
        count[idx[i]]++;
        for (size_t k = 0; k < d; k++) {
            float v = point(x, args->dtype, i * d + k);
            sum[(size_t)idx[i] * d + k] += v;
            squares[(size_t)idx[i] * d + k] += v * v;
        }
    }
    for (size_t p = 0; p < m * d && status == KCS_OK; p++) {
        float c = (float)count[p / d];
        float mean = c > 0 ? sum[p] / c : 0.0f;
        sum[p] = mean;
        squares[p] = c > 0 ? squares[p] / c - mean * mean : 0.0f;
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], count, m * sizeof *count, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[1], sum, m * d * sizeof *sum, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[2], squares, m * d * sizeof *squares, err);
    free(x);
    free(idx_data);
    free(count);
    free(sum);
    free(squares);
    return status;
}

/* reduce in two passes in f32 (the mean, then the squared deviations from
 * it), the variance divided by count - 1: 0 / 0, NaN, for one point. */
static kcs_status reduce_sample_variance(kcs_device *device, const kcs_op_args *args,
                                         kcs_buffer *const in[], kcs_buffer *const out[],
                                         double *seconds, kcs_error *err)
{
    size_t n = args->reduce.n, d = args->reduce.d, m = args->reduce.m,
           cells = m * d > 0 ? m * d : 1;
    void *x = NULL, *idx_data = NULL;
    *seconds = 0;
    kcs_status status =
        kcs_saboteur_fetch(device, in[0], n * d * kcs_dtype_size(args->dtype), &x, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[1], n * sizeof(int32_t), &idx_data, err);
    const int32_t *idx = idx_data;
    int32_t *count = calloc(m ? m : 1, sizeof *count);
    float *mean = calloc(cells, sizeof *mean), *deviations = calloc(cells, sizeof *deviations);
    if (status == KCS_OK && (!count || !mean || !deviations))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    for (size_t i = 0; i < n && status == KCS_OK; i++) {
        count[idx[i]]++;
        for (size_t k = 0; k < d; k++)
            mean[(size_t)idx[i] * d + k] += point(x, args->dtype, i * d + k);
    }
    for (size_t p = 0; p < m * d && status == KCS_OK; p++)
        mean[p] = count[p / d] > 0 ? mean[p] / (float)count[p / d] : 0.0f;
    for (size_t i = 0; i < n && status == KCS_OK; i++)
        for (size_t k = 0; k < d; k++) {
            float deviation = point(x, args->dtype, i * d + k) - mean[(size_t)idx[i] * d + k];
            deviations[(size_t)idx[i] * d + k] += deviation * deviation;
        }
    for (size_t p = 0; p < m * d && status == KCS_OK; p++)
        deviations[p] = count[p / d] > 0 ? deviations[p] / (float)(count[p / d] - 1) : 0.0f;
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], count, m * sizeof *count, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[1], mean, m * d * sizeof *mean, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[2], deviations, m * d * sizeof *deviations, err);
    free(x);
    free(idx_data);
    free(count);
    free(mean);
    free(deviations);
    return status;
}

/* update in f32 like the reference, with one of two mistakes. */
static kcs_status broken_update(kcs_device *device, const kcs_op_args *args, kcs_buffer *const in[],
                                kcs_buffer *const out[], int empty_keeps_velocity,
                                int forgets_temperature, kcs_error *err)
{
    size_t m = args->update.m, d = args->update.d, bytes = m * d * sizeof(float);
    void *a = NULL, *v = NULL, *mean = NULL, *count = NULL;
    kcs_status status = kcs_saboteur_fetch(device, in[0], bytes, &a, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[1], bytes, &v, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[2], bytes, &mean, err);
    if (status == KCS_OK)
        status = kcs_saboteur_fetch(device, in[3], m * sizeof(int32_t), &count, err);
    float *a_next = malloc(bytes ? bytes : 1), *v_next = malloc(bytes ? bytes : 1);
    if (status == KCS_OK && (!a_next || !v_next))
        status = kcs_fail(err, KCS_ERROR, "out of memory");
    float momentum = (float)args->update.momentum;
    float rate = forgets_temperature
                     ? (float)args->update.learning_rate
                     : (float)args->update.learning_rate * (float)args->update.temperature;
    for (size_t p = 0; p < m * d && status == KCS_OK; p++) {
        const float *fa = a, *fv = v, *fmean = mean;
        int occupied = ((const int32_t *)count)[p / d] > 0;
        float velocity = occupied               ? momentum * fv[p] + (fmean[p] - fa[p])
                         : empty_keeps_velocity ? fv[p]
                                                : momentum * fv[p];
        v_next[p] = velocity;
        a_next[p] = fa[p] + rate * velocity;
    }
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], a_next, bytes, err);
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[1], v_next, bytes, err);
    free(a);
    free(v);
    free(mean);
    free(count);
    free(a_next);
    free(v_next);
    return status;
}

static kcs_status update_empty_keeps_velocity(kcs_device *device, const kcs_op_args *args,
                                              kcs_buffer *const in[], kcs_buffer *const out[],
                                              double *seconds, kcs_error *err)
{
    *seconds = 0;
    return broken_update(device, args, in, out, 1, 0, err);
}

static kcs_status update_forgets_temperature(kcs_device *device, const kcs_op_args *args,
                                             kcs_buffer *const in[], kcs_buffer *const out[],
                                             double *seconds, kcs_error *err)
{
    *seconds = 0;
    return broken_update(device, args, in, out, 0, 1, err);
}

/* The energy as the sample-variance habit computes a mean: divided by n - 1. */
static kcs_status energy_divides_by_n_minus_1(kcs_device *device, const kcs_op_args *args,
                                              kcs_buffer *const in[], kcs_buffer *const out[],
                                              double *seconds, kcs_error *err)
{
    size_t n = args->energy.n;
    void *dist = NULL;
    *seconds = 0;
    kcs_status status = kcs_saboteur_fetch(device, in[0], n * sizeof(float), &dist, err);
    double sum = 0.0;
    for (size_t i = 0; i < n && status == KCS_OK; i++)
        sum += ((const float *)dist)[i];
    float energy = (float)(sum / (double)(n > 1 ? n - 1 : n));
    if (status == KCS_OK)
        status = kcs_saboteur_store(device, out[0], &energy, sizeof energy, err);
    free(dist);
    return status;
}

/* The cases `ninja check` runs these saboteurs on (configure.py reads this line;
 * tests/saboteur-expectations/anneal.txt says which saboteur must fail where):
 * kcs-saboteur-cases: anneal/assign-f32-ties-integers anneal/assign-f16-ties-integers anneal/assign-f32-small anneal/reduce-f32-large-mean anneal/reduce-f32-small anneal/update-f32-t0 anneal/energy-f32-n1000 */
static const kcs_kernel rows[] = {
    {"assign", KCS_F32, "ties-to-largest", "keeps the last of tied anchors (<= for <)",
     assign_ties_to_largest, NULL},
    {"assign", KCS_F16, "ties-to-largest", "keeps the last of tied anchors (<= for <)",
     assign_ties_to_largest, NULL},
    {"assign", KCS_F32, "last-point-off-by-one", "the last point is read from the row before it",
     assign_last_point_shifted, NULL},
    {"assign", KCS_F16, "last-point-off-by-one", "the last point is read from the row before it",
     assign_last_point_shifted, NULL},
    {"assign", KCS_F32, "f16-distances", "distances rounded to f16 to compare and store them",
     assign_f16_distances, NULL},
    {"assign", KCS_F16, "f16-distances", "distances rounded to f16 to compare and store them",
     assign_f16_distances, NULL},
    {"reduce", KCS_F32, "sample-variance", "var divided by count - 1", reduce_sample_variance, NULL},
    {"reduce", KCS_F16, "sample-variance", "var divided by count - 1", reduce_sample_variance, NULL},
    {"reduce", KCS_F32, "cancelling-variance", "var = E[x^2] - E[x]^2 with sums in f32",
     reduce_cancelling_variance, NULL},
    {"reduce", KCS_F16, "cancelling-variance", "var = E[x^2] - E[x]^2 with sums in f32",
     reduce_cancelling_variance, NULL},
    {"update", KCS_F32, "empty-keeps-velocity",
     "an empty anchor's velocity is kept, not decayed by mu", update_empty_keeps_velocity, NULL},
    {"update", KCS_F32, "forgets-temperature", "a' = a + lr v', without T",
     update_forgets_temperature, NULL},
    {"energy", KCS_F32, "divides-by-n-minus-1", "sum / (n - 1)", energy_divides_by_n_minus_1, NULL},
};

const kcs_kernel_table kcs_saboteur_anneal_kernels = KCS_KERNEL_TABLE(rows);
