/* ceilings.cl: the kernel behind the OpenCL FMA ceiling (opencl/ceilings.c).
 *
 * kcs_ceilings_fma runs `iterations` rounds of KCS_CEILINGS_CHAINS
 * independent f32 fused multiply-add chains per work-item, each chain a
 * float8 (64 fma per round): enough independent work to hide the fma
 * latency on a GPU (where the vectors become scalar registers) and to keep
 * a CPU's vector units full (where they stay vectors). The chains converge
 * to a fixed point well inside the normal range, so no subnormal or
 * overflow slows them. The total is stored only when it equals a value it
 * never reaches, which the compiler cannot know, so the loop stays.
 *
 * Run only it: build/kcs devices --ceilings
 */
#ifndef KCS_CEILINGS_CHAINS
/* float8 chains per work-item (8 fma each per round) */
#define KCS_CEILINGS_CHAINS 8
#endif

kernel void kcs_ceilings_fma(global float *sink, uint iterations, float seed)
{
    float8 chain[KCS_CEILINGS_CHAINS];
    const float start = seed + (float)(get_local_id(0) % 64) * 0x1.0p-10f;
    for (int c = 0; c < KCS_CEILINGS_CHAINS; c++)
        chain[c] = (float8)(start) + (float8)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f) * (float)(c + 1);
    for (uint i = 0; i < iterations; i++) {
#pragma unroll
        for (int c = 0; c < KCS_CEILINGS_CHAINS; c++)
            chain[c] = fma(chain[c], (float8)(0.999999f), (float8)(1e-7f));
    }
    float8 total = chain[0];
    for (int c = 1; c < KCS_CEILINGS_CHAINS; c++)
        total += chain[c];
    const float all = total.s0 + total.s1 + total.s2 + total.s3 + total.s4 + total.s5 + total.s6 + total.s7;
    if (all == 12345.678f)
        sink[0] = all;
}
