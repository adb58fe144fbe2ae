/* PerfDojo kernel matmul(N = 512, M = 512, K = 512), target x86-avx512: void dojo_kernel(A, B, C) */
#include <math.h>
#include <stdint.h>

void dojo_kernel(const float *restrict A, const float *restrict B, float *restrict C)
{
  const int64_t N = 512, M = 512, K = 512;
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t j = 0; j < M; ++j) {
      C[i * M + j] = 0.0f;
      for (int64_t k = 0; k < K; ++k) {
        C[i * M + j] += A[i * K + k] * B[k * M + j];
      }
    }
  }
}
