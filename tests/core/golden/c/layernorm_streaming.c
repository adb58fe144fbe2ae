/* PerfDojo kernel layernorm(N = 4096, M = 1024), target x86-avx2: void dojo_kernel(X, gamma, beta, eps, Y) */
#include <math.h>
#include <stdint.h>

static inline int64_t dojo_clamp(int64_t v, int64_t n) { return v < 0 ? 0 : v >= n ? n - 1 : v; }
typedef float dojo_f32x4 __attribute__((vector_size(16)));
typedef float dojo_f32x8 __attribute__((vector_size(32)));
#if (defined(__x86_64__) || defined(__i386__)) && !defined(DOJO_PORTABLE)
#include <immintrin.h>
#endif
static inline void dojo_sfence(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && !defined(DOJO_PORTABLE)
  _mm_sfence();
#endif
}
static inline dojo_f32x8 dojo_load_f32x8(const float *p) { dojo_f32x8 v; __builtin_memcpy(&v, p, 32); return v; }
static inline dojo_f32x8 dojo_splat_f32x8(float x) { return (dojo_f32x8){x, x, x, x, x, x, x, x}; }
static inline void dojo_stream_f32x8(float *p, dojo_f32x8 v)
{
#if defined(__AVX__) && !defined(DOJO_PORTABLE)
  if (!((uintptr_t)p & 31)) { _mm256_stream_ps((float *)p, (__m256)v); return; }
#endif
  __builtin_memcpy(p, &v, 32);
}
static inline float dojo_hsum_f32x4(dojo_f32x4 a) { return (a[0] + a[2]) + (a[1] + a[3]); }
static inline float dojo_hsum_f32x8(dojo_f32x8 a) { dojo_f32x4 h[2]; __builtin_memcpy(h, &a, 32); return dojo_hsum_f32x4(h[0] + h[1]); }

void dojo_kernel(const float *restrict X, const float *restrict gamma, const float *restrict beta, const float *restrict eps, float *restrict Y)
{
  const int64_t N = 4096, M = 1024;
  #pragma omp parallel
  {
    #pragma omp for nowait
    for (int64_t i = 0; i < N; ++i) {
      float mu;
      float var;
      mu = 0.0f;
      {
        dojo_f32x8 dojo_acc1 = dojo_splat_f32x8(0.0f), dojo_acc2 = dojo_splat_f32x8(0.0f), dojo_acc3 = dojo_splat_f32x8(0.0f), dojo_acc4 = dojo_splat_f32x8(0.0f);
        for (int64_t j = 0; j < 1024; j += 32) {
          dojo_acc1 = dojo_acc1 + dojo_load_f32x8(&X[i * M + j]);
          dojo_acc2 = dojo_acc2 + dojo_load_f32x8(&X[i * M + j + 8]);
          dojo_acc3 = dojo_acc3 + dojo_load_f32x8(&X[i * M + j + 16]);
          dojo_acc4 = dojo_acc4 + dojo_load_f32x8(&X[i * M + j + 24]);
        }
        dojo_acc1 = dojo_acc1 + dojo_acc2;
        dojo_acc3 = dojo_acc3 + dojo_acc4;
        dojo_acc1 = dojo_acc1 + dojo_acc3;
        mu += dojo_hsum_f32x8(dojo_acc1);
      }
      mu = mu / 1024.0f;
      var = 0.0f;
      {
        dojo_f32x8 dojo_acc5 = dojo_splat_f32x8(0.0f), dojo_acc6 = dojo_splat_f32x8(0.0f), dojo_acc7 = dojo_splat_f32x8(0.0f), dojo_acc8 = dojo_splat_f32x8(0.0f);
        for (int64_t k = 0; k < 1024; k += 32) {
          __builtin_prefetch(&X[(dojo_clamp(i + 1, 4096)) * 1024 + dojo_clamp(k, 1024)], 0, 3);
          dojo_acc5 = dojo_acc5 + (dojo_load_f32x8(&X[i * M + k]) - dojo_splat_f32x8(mu)) * (dojo_load_f32x8(&X[i * M + k]) - dojo_splat_f32x8(mu));
          dojo_acc6 = dojo_acc6 + (dojo_load_f32x8(&X[i * M + k + 8]) - dojo_splat_f32x8(mu)) * (dojo_load_f32x8(&X[i * M + k + 8]) - dojo_splat_f32x8(mu));
          __builtin_prefetch(&X[(dojo_clamp(i + 1, 4096)) * 1024 + dojo_clamp(k + 16, 1024)], 0, 3);
          dojo_acc7 = dojo_acc7 + (dojo_load_f32x8(&X[i * M + k + 16]) - dojo_splat_f32x8(mu)) * (dojo_load_f32x8(&X[i * M + k + 16]) - dojo_splat_f32x8(mu));
          dojo_acc8 = dojo_acc8 + (dojo_load_f32x8(&X[i * M + k + 24]) - dojo_splat_f32x8(mu)) * (dojo_load_f32x8(&X[i * M + k + 24]) - dojo_splat_f32x8(mu));
        }
        dojo_acc5 = dojo_acc5 + dojo_acc6;
        dojo_acc7 = dojo_acc7 + dojo_acc8;
        dojo_acc5 = dojo_acc5 + dojo_acc7;
        var += dojo_hsum_f32x8(dojo_acc5);
      }
      var = var / 1024.0f;
      {
        const float dojo_inv9 = 1.0f / sqrtf(var + eps[0]);
        for (int64_t l = 0; l < 1024; l += 8) {
          dojo_stream_f32x8(&Y[i * M + l], (dojo_load_f32x8(&X[i * M + l]) - dojo_splat_f32x8(mu)) * dojo_splat_f32x8(dojo_inv9) * dojo_load_f32x8(&gamma[l]) + dojo_load_f32x8(&beta[l]));
        }
      }
    }
    dojo_sfence();
  }
  dojo_sfence();
}
