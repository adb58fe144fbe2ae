/* PerfDojo kernel matmul(N = 64, M = 64, K = 48), target x86-avx512: void dojo_kernel(A, B, C) */
#include <math.h>
#include <stdint.h>

typedef float dojo_f32x16 __attribute__((vector_size(64)));
static inline dojo_f32x16 dojo_load_f32x16(const float *p) { dojo_f32x16 v; __builtin_memcpy(&v, p, 64); return v; }
static inline dojo_f32x16 dojo_splat_f32x16(float x) { return (dojo_f32x16){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline void dojo_store_f32x16(float *p, dojo_f32x16 v) { __builtin_memcpy(p, &v, 64); }

void dojo_kernel(const float *restrict A, const float *restrict B, float *restrict C)
{
  const int64_t N = 64, M = 64, K = 48;
  for (int64_t i0 = 0; i0 < N / 8; ++i0) {
    for (int64_t i1 = 0; i1 < 8; ++i1) {
      for (int64_t j = 0; j < M; ++j) {
        C[(8*i0 + i1) * M + j] = 0.0f;
      }
    }
  }
  #pragma omp parallel for
  for (int64_t j20 = 0; j20 < M / 32; ++j20) {
    float Bt[1536] __attribute__((aligned(64)));
    for (int64_t k1 = 0; k1 < K; ++k1) {
      for (int64_t j3 = 0; j3 < 32; ++j3) {
        Bt[k1 * 32 + j3] = B[k1 * M + 32*j20 + j3];
      }
    }
    for (int64_t i3 = 0; i3 < N / 8; ++i3) {
      float acc[256] __attribute__((aligned(64)));
      #pragma GCC unroll 8
      for (int64_t i4 = 0; i4 < 8; ++i4) {
        #pragma GCC unroll 32
        for (int64_t j1 = 0; j1 < 32; ++j1) {
          acc[i4 * 32 + j1] = C[(8*i3 + i4) * M + 32*j20 + j1];
        }
      }
      for (int64_t k = 0; k < K; ++k) {
        #pragma GCC unroll 8
        for (int64_t i2 = 0; i2 < 8; ++i2) {
          #pragma GCC unroll 2
          for (int64_t j21 = 0; j21 < 32; j21 += 16) {
            dojo_store_f32x16(&acc[i2 * 32 + j21], dojo_load_f32x16(&acc[i2 * 32 + j21]) + dojo_splat_f32x16(A[(8*i3 + i2) * K + k]) * dojo_load_f32x16(&Bt[k * 32 + j21]));
          }
        }
      }
      #pragma GCC unroll 8
      for (int64_t i5 = 0; i5 < 8; ++i5) {
        #pragma GCC unroll 32
        for (int64_t j2 = 0; j2 < 32; ++j2) {
          C[(8*i3 + i5) * M + 32*j20 + j2] = acc[i5 * 32 + j2];
        }
      }
    }
  }
}
