/* kcs_ref.h: the scalar C reference of every kcs operation, as a library.
 *
 * Plain loops in strict IEEE arithmetic (built with -ffp-contract=off and no
 * fast-math), written for clarity before speed; each follows the normative
 * definition in docs/<op>.md and stays within the bound derived there. The
 * runner reaches these through the "reference" backend (ref/backend.c);
 * programs may call them directly on host arrays.
 */
#ifndef KCS_REF_H
#define KCS_REF_H

#include <stddef.h>
#include <stdint.h>

/* Sum of squares of n doubles, accumulated in double (docs/sumsq.md). */
double kcs_ref_sumsq_f64(const double *x, size_t n);

/* Sum of squares of n floats, accumulated in double, rounded once to float. */
float kcs_ref_sumsq_f32(const float *x, size_t n);

/* c_out = alpha * op(a) * op(b) + beta * c, row-major, op(a) m x k (a stored
 * k x m when transpose_a), op(b) k x n (b stored n x k when transpose_b);
 * accumulated in float in plain k order; c is not read when beta = 0, a and
 * b not when alpha = 0 (docs/gemm.md). */
void kcs_ref_gemm_f32(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, float alpha,
                      const float *a, const float *b, float beta, const float *c, float *c_out);

/* The same in double, accumulated in double. */
void kcs_ref_gemm_f64(int transpose_a, int transpose_b, size_t m, size_t n, size_t k, double alpha,
                      const double *a, const double *b, double beta, const double *c, double *c_out);

/* out[i] = x[i] + y[i], correctly rounded (docs/elementwise.md). */
void kcs_ref_add_f32(const float *x, const float *y, float *out, size_t n);

/* out[i] = x[i] + y[i] in double. */
void kcs_ref_add_f64(const double *x, const double *y, double *out, size_t n);

/* out[i] = x[i] * y[i], correctly rounded. */
void kcs_ref_mul_f32(const float *x, const float *y, float *out, size_t n);

/* out[i] = x[i] * y[i] in double. */
void kcs_ref_mul_f64(const double *x, const double *y, double *out, size_t n);

/* out[i] = x[i] < 0 ? 0 : x[i] (NaN stays NaN). */
void kcs_ref_relu_f32(const float *x, float *out, size_t n);

/* The same in double. */
void kcs_ref_relu_f64(const double *x, double *out, size_t n);

/* out[i] = 1 / (1 + expf(-x[i])) in float. */
void kcs_ref_sigmoid_f32(const float *x, float *out, size_t n);

/* out[i] = 1 / (1 + exp(-x[i])) in double. */
void kcs_ref_sigmoid_f64(const double *x, double *out, size_t n);

/* Row-wise softmax of a rows x cols matrix into y: max-subtracted, in
 * float, -inf entries masked to 0; a row with a NaN or +inf, or of nothing
 * but -inf, is NaN throughout (docs/softmax.md). */
void kcs_ref_softmax_f32(const float *x, float *y, size_t rows, size_t cols);

/* The same in double. */
void kcs_ref_softmax_f64(const double *x, double *y, size_t rows, size_t cols);

/* For each of n points (n x d, f32) the nearest of m >= 1 anchors (m x d):
 * idx[i] (ties to the smallest index) and dist[i], the squared distance as a
 * sum of squared differences in float (docs/anneal.md). */
void kcs_ref_assign_f32(const float *x, const float *a, size_t n, size_t d, size_t m, int32_t *idx,
                        float *dist);

/* The same for points stored as IEEE binary16 bit patterns, widened to
 * float; 0, or -1 when out of memory. */
int kcs_ref_assign_f16(const uint16_t *x, const float *a, size_t n, size_t d, size_t m, int32_t *idx,
                       float *dist);

/* Per anchor j < m: count[j], mean[j][k] and population variance var[j][k]
 * of the points i with idx[i] = j (every idx[i] in [0, m)); empty anchors
 * get 0, 0, 0. Two passes, sums in double; 0, or -1 when out of memory. */
int kcs_ref_reduce_f32(const float *x, const int32_t *idx, size_t n, size_t d, size_t m, int32_t *count,
                       float *mean, float *var);

/* The same for points stored as IEEE binary16 bit patterns. */
int kcs_ref_reduce_f16(const uint16_t *x, const int32_t *idx, size_t n, size_t d, size_t m,
                       int32_t *count, float *mean, float *var);

/* v_next = momentum v + (mean - a) where count > 0, momentum v elsewhere;
 * a_next = a + learning_rate * temperature * v_next; m x d floats. */
void kcs_ref_update_f32(const float *a, const float *v, const float *mean, const int32_t *count, size_t m,
                        size_t d, float temperature, float learning_rate, float momentum, float *a_next,
                        float *v_next);

/* The mean of n distances, summed in double, rounded once to float (NaN for n = 0). */
float kcs_ref_energy_f32(const float *dist, size_t n);

#endif
