/* kcs_ref_anneal.h: the reference anneal steps, assign, reduce, update and
 * energy (docs/anneal.md); part of kcs_ref.h. */
#ifndef KCS_REF_ANNEAL_H
#define KCS_REF_ANNEAL_H

#include <stddef.h>
#include <stdint.h>

#include "kcs_ref_half.h"

/* The storage dtypes of the points of assign and reduce (computed in f32):
 * X(suffix, C type, kcs dtype); update and energy are f32 only. */
#define KCS_ANNEAL_POINT_TYPES(X) X(f32, float, KCS_F32) X(f16, kcs_f16, KCS_F16)

/* For each of n points (n x d, f32) the nearest of m >= 1 anchors (m x d):
 * idx[i] (ties to the smallest index) and dist[i], the squared distance as a
 * sum of squared differences in float (docs/anneal.md). */
void kcs_ref_assign_f32(const float *x, const float *a, size_t n, size_t d, size_t m, int32_t *idx,
                        float *dist);

/* The same for points stored as f16 (kcs_ref_half.h), widened to float; 0, or -1 when out of memory. */
int kcs_ref_assign_f16(const kcs_f16 *x, const float *a, size_t n, size_t d, size_t m, int32_t *idx,
                       float *dist);

/* Per anchor j < m: count[j], mean[j][k] and population variance var[j][k]
 * of the points i with idx[i] = j (every idx[i] in [0, m)); empty anchors
 * get 0, 0, 0. Two passes, sums in double; 0, or -1 when out of memory. */
int kcs_ref_reduce_f32(const float *x, const int32_t *idx, size_t n, size_t d, size_t m, int32_t *count,
                       float *mean, float *var);

/* The same for points stored as f16 (kcs_ref_half.h). */
int kcs_ref_reduce_f16(const kcs_f16 *x, const int32_t *idx, size_t n, size_t d, size_t m,
                       int32_t *count, float *mean, float *var);

/* v_next = momentum v + (mean - a) where count > 0, momentum v elsewhere;
 * a_next = a + learning_rate * temperature * v_next; m x d floats. */
void kcs_ref_update_f32(const float *a, const float *v, const float *mean, const int32_t *count, size_t m,
                        size_t d, float temperature, float learning_rate, float momentum, float *a_next,
                        float *v_next);

/* The mean of n distances, summed in double, rounded once to float (NaN for n = 0). */
float kcs_ref_energy_f32(const float *dist, size_t n);

#endif
