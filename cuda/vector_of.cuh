/* vector_of.cuh: the 16-byte vector type of each element type, for the
 * kernels that move 16 bytes per access (cuda/elementwise.cu, cuda/sumsq.cu):
 * float4 for f32, double2 for f64, and a uint4 holding 8 of the 16-bit types.
 * tests/cuda_kernels_emulation.sh inlines it like the other device headers. */
#ifndef KCS_CUDA_VECTOR_OF_CUH
#define KCS_CUDA_VECTOR_OF_CUH

template <typename T> struct vector_of;
template <> struct vector_of<float> {
    using type = float4;
    static constexpr int width = 4;
};
template <> struct vector_of<double> {
    using type = double2;
    static constexpr int width = 2;
};
template <> struct vector_of<__half> {
    using type = uint4;
    static constexpr int width = 8;
};
template <> struct vector_of<__nv_bfloat16> {
    using type = uint4;
    static constexpr int width = 8;
};

#endif
