/* load_streaming.cuh: a load of input that a kernel reads once, for
 * cuda/softmax.cu's rows and cuda/reduce.cu, which gathers whole
 * point rows.
 *
 * 16- and 8-byte vectors go through the non-coherent path, allocating
 * nothing in L1 and asking L2 to fetch the 256-byte block around them
 * (ld.global.nc.L1::no_allocate.L2::256B); other sizes __ldcs. The caller
 * promises that nothing writes the data while the kernel runs. Measured on
 * an H100: softmax's warp groups 1.4% faster than with __ldcs at 32768 x 1024
 * f32 (docs/softmax.md, Speed); the reduce's statistics pass, which reads
 * each point's 512-byte row at a random place, 0.1915 -> 0.1860 ms against
 * __ldg (docs/anneal.md). On an H200 plain ld.global measured 1.9% slower
 * in the reduce, and 3% faster in the warp groups, but only in a process
 * that had run no block-kernel case before them; after one, level
 * (docs/softmax.md, "The hinted loads alone and after other rows"). So the
 * hint stays for both.
 *
 * Device code only, included by .cu files after common.cuh; the host
 * emulation (no __CUDA_ARCH__) reads plainly. tests/cuda_kernels_emulation.sh
 * inlines it like the other device headers.
 */
#ifndef KCS_CUDA_LOAD_STREAMING_CUH
#define KCS_CUDA_LOAD_STREAMING_CUH

#include <cstring>

template <typename V> __device__ __forceinline__ V load_streaming(const V *p)
{
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(V) == 16) {
        uint4 r;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                     : "l"(p));
        V v;
        memcpy(&v, &r, sizeof v);
        return v;
    } else if constexpr (sizeof(V) == 8) {
        uint2 r;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];"
                     : "=r"(r.x), "=r"(r.y)
                     : "l"(p));
        V v;
        memcpy(&v, &r, sizeof v);
        return v;
    }
#endif
    return __ldcs(p);
}

#endif
