/* sumsq.c: the sum-of-squares seed's benchmark with its data resident on the device.
 *
 *   build/examples/sumsq [--backend cuda|opencl|reference] [--platform P] [--device D]
 *                        [--n N] [--calls C]
 *
 * Built by `ninja`; outside the tree, beside example_device.h, with the
 * device libraries installed (docs/library.md, "The examples"):
 *
 *   cc -O2 -o sumsq sumsq.c $(pkg-config --cflags --libs kcs_opencl kcs_cuda) -lm
 *
 * Uploads n doubles (default 1e8, 800 MB) once, then sums their squares C
 * times on the device (kcs_call_timed: the kernel's device time, no
 * transfer). The first call is timed apart (it may build an OpenCL program or
 * grow scratch memory); the rest give the median kernel time and its
 * bandwidth. The result is checked against the reference library's
 * kcs_ref_sumsq_f64 on the host: both sum n non-negative terms, each within
 * gamma(n + 1) of the exact sum whatever the order (docs/sumsq.md), so they
 * may differ by 2 gamma(n + 1) times it. Exits 1 when they differ by more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "example_device.h"
#include <kcs/kcs_ref.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *backend = "cuda";
    int platform = 0, device = 0, calls = 20;
    size_t n = 100000000;
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
        else if (strcmp(argv[i], "--calls") == 0 && value)
            calls = atoi(argv[++i]);
        else {
            fprintf(stderr, "sumsq: unknown argument '%s' (see the comment at the top of examples/sumsq.c)\n",
                    argv[i]);
            return 2;
        }
    }
    if (calls < 2) {
        fprintf(stderr, "sumsq: --calls must be at least 2 (the first is timed apart)\n");
        return 2;
    }
    kcs_error err = {{0}};
    kcs_context *context = NULL;
    kcs_device_buffer *x = NULL, *s = NULL;
    double *host = NULL, *seconds = calloc((size_t)calls, sizeof *seconds);
    int failed = 1;
    if (example_open(backend, platform, device, &context, &err) != KCS_OK)
        goto done;
    printf("sumsq of %zu doubles on %s (%s)\n", n, kcs_context_device_name(context), kcs_context_backend(context));
    host = kcs_host_allocate(context, n * sizeof *host); /* pinned where the backend has it */
    if (!host || !seconds) {
        kcs_fail(&err, KCS_ERROR, "out of host memory for %zu doubles", n);
        goto done;
    }
    for (size_t i = 0; i < n; i++) /* 0.000, 0.001, ..., 0.999, again: exact squares need not matter */
        host[i] = (double)(i % 1000) * 0.001;
    double start = now();
    if (kcs_allocate(context, n * sizeof *host, &x, &err) != KCS_OK ||
        kcs_allocate(context, sizeof(double), &s, &err) != KCS_OK ||
        kcs_upload(context, x, host, n * sizeof *host, &err) != KCS_OK)
        goto done;
    printf("upload, once: %.3f ms\n", 1e3 * (now() - start));
    kcs_op_args args = {.op = "sumsq", .dtype = KCS_F64, .sumsq = {.n = n}};
    double first_wall = now(), result = 0.0;
    for (int c = 0; c < calls; c++) {
        if (c == 1)
            first_wall = now() - first_wall;
        if (kcs_call_timed(context, &args, NULL, (kcs_device_buffer *[]){x}, (kcs_device_buffer *[]){s},
                           &seconds[c], &err) != KCS_OK)
            goto done;
    }
    if (kcs_download(context, s, &result, sizeof result, &err) != KCS_OK)
        goto done;
    printf("first call: %.3f ms (kernel %.3f ms)\n", 1e3 * first_wall, 1e3 * seconds[0]);
    qsort(seconds + 1, (size_t)calls - 1, sizeof *seconds, compare_doubles);
    double median = seconds[1 + (calls - 1) / 2];
    printf("calls 2..%d: kernel time median %.3f ms (min %.3f, max %.3f), %.1f GB/s, no transfer\n", calls,
           1e3 * median, 1e3 * seconds[1], 1e3 * seconds[calls - 1], 8.0 * (double)n / median * 1e-9);
    double expected = kcs_ref_sumsq_f64(host, n);
    double u = 0x1p-53, gamma = (double)(n + 1) * u / (1.0 - (double)(n + 1) * u);
    double difference = result > expected ? result - expected : expected - result;
    printf("sum %.17g, reference library %.17g: difference %.3g, allowed %.3g\n", result, expected, difference,
           2.0 * gamma * expected);
    failed = !(difference <= 2.0 * gamma * expected);
    if (failed)
        kcs_fail(&err, KCS_ERROR, "the device's sum is outside the bound");
done:
    if (failed)
        fprintf(stderr, "sumsq: %s\n", err.message);
    if (context) {
        kcs_host_release(context, host);
        kcs_close(context); /* releases x and s too */
    }
    free(seconds);
    return failed;
}
