/* matrix_descriptor.cuh: the shared-memory matrix descriptors that wgmma
 * reads (PTX ISA, "Matrix Descriptor Format"), for kcs's Hopper GEMMs
 * (cuda/gemm/tensor_wgmma.cu, cuda/gemm/fp8_wgmma.cu, through hopper.cuh):
 * how one is made from an address, and how the one of the same layout some
 * bytes further on is made from it without the address.
 *
 * Plain arithmetic, host and device: tests/cuda_gemm_emulation.cpp checks on
 * the host that a descriptor stepped by descriptor_at is, bit for bit, the
 * one made at the address it steps to, for every 16-byte-aligned address and
 * step within a block's shared memory, in both layouts the kernels use; and
 * that past 2^18 bytes it is not, where the limit below says. The kernels
 * step every descriptor they issue, so a wrong step would otherwise show only
 * on a GPU, as wrong products.
 */
#ifndef KCS_CUDA_GEMM_MATRIX_DESCRIPTOR_CUH
#define KCS_CUDA_GEMM_MATRIX_DESCRIPTOR_CUH

#include <cstdint>

namespace kcs_hopper {

/* The widest box TMA swizzles, and so one k tile of one row in shared memory. */
constexpr int ROW_BYTES = 128;

/* Shared addresses a descriptor encodes: 18 bits, of which it keeps the top
 * 14 (the address >> 4). A block's shared memory (at most 227 KB on sm_90)
 * lies below this. */
constexpr uint32_t descriptor_address_limit = 1u << 18;

/* A shared-memory matrix descriptor: start address, leading and stride byte
 * offsets (each >> 4), 128-byte swizzle (mode 1 in bits 62-63), base offset
 * 0. */
__host__ __device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leading, uint32_t stride)
{
    return (uint64_t)((address & (descriptor_address_limit - 1)) >> 4) |
           (uint64_t)((leading & (descriptor_address_limit - 1)) >> 4) << 16 |
           (uint64_t)((stride & (descriptor_address_limit - 1)) >> 4) << 32 | (uint64_t)1 << 62;
}

/* The descriptor of a K-major operand whose 8-row groups are 1024 bytes
 * apart (rows of 128 bytes), starting at address (the leading offset is
 * unused in this layout; 16 is its smallest encodable value). */
__host__ __device__ __forceinline__ uint64_t k_major_descriptor(uint32_t address)
{
    return descriptor(address, 16, 8 * ROW_BYTES);
}

/* The descriptor of the same layout starting bytes further on (a multiple
 * of 16): the start address is the low field, address >> 4, and while the
 * new address stays below descriptor_address_limit the sum never carries
 * out of it. The wgmma loops build each stage's and each instruction's
 * descriptor from one made before the loop, so. Rebuilt from the address for
 * every wgmma (a mask, a shift and a move to uniform registers each), the
 * f16 k loop took 167 instructions for 8 wgmma, and the kernel executed 26.4
 * million at f16 4096^3 where cuBLAS's executed 16.9 (Nsight Compute, H200,
 * 2026-11-29). Now the loop takes 118 for 16 (nvcc 13.0, sm_90a), the kernel
 * 13.7 million, and the FP8 rows run 5 to 6% faster (docs/gemm.md,
 * "Descriptors made once"). */
__host__ __device__ __forceinline__ uint64_t descriptor_at(uint64_t descriptor, uint32_t bytes)
{
    return descriptor + (bytes >> 4);
}

} // namespace kcs_hopper

#endif
