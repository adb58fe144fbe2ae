/* PerfDojo kernel tile(N = 12, M = 32, K = 8), target x86-avx2: void dojo_kernel(A, B, C) */
#include <math.h>
#include <stdint.h>

static inline int64_t dojo_clamp(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }

void dojo_kernel(const float *restrict A, const float *restrict B, float *restrict C)
{
  const int64_t N = 12, M = 32, K = 8;
  for (int64_t j0 = 0; j0 < M / 16; ++j0) {
    for (int64_t i0 = 0; i0 < N / 3; ++i0) {
      /* prefetch C[3*i0 + 3..3*i0 + 6, 16*j0..16*j0 + 16] */
      {
        #pragma GCC unroll 3
        for (int64_t dojo_pf2 = 3*i0 + 3; dojo_pf2 < 3*i0 + 6; ++dojo_pf2) {
          const int64_t dojo_pr1 = dojo_clamp(dojo_pf2, 12);
          if (16*j0 < 16*j0 + 16) {
            const int64_t dojo_pb3 = dojo_pr1 * 32 + dojo_clamp(16*j0, 32), dojo_pe4 = dojo_pr1 * 32 + dojo_clamp(16*j0 + 16 - 1, 32);
            for (int64_t dojo_po5 = dojo_pb3; dojo_po5 < dojo_pe4; dojo_po5 += 16)
              __builtin_prefetch(&C[dojo_po5], 1, 3);
            __builtin_prefetch(&C[dojo_pe4], 1, 3);
          }
        }
      }
      for (int64_t i1 = 0; i1 < 3; ++i1) {
        for (int64_t j1 = 0; j1 < 16; ++j1) {
          C[(3*i0 + i1) * M + 16*j0 + j1] = 0.0f;
        }
      }
      for (int64_t k = 0; k < K; ++k) {
        for (int64_t i2 = 0; i2 < 3; ++i2) {
          for (int64_t j2 = 0; j2 < 16; ++j2) {
            C[(3*i0 + i2) * M + 16*j0 + j2] += A[(3*i0 + i2) * K + k] * B[k * M + 16*j0 + j2];
          }
        }
      }
    }
  }
}
