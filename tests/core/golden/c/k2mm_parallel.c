/* PerfDojo kernel k2mm(NI = 6, NJ = 7, NK = 9, NL = 10), target x86-avx2: void dojo_kernel(alpha, beta, tmp, A, B, C, D) */
#include <math.h>
#include <stdint.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define DOJO_PARALLEL_BODY __attribute__((optimize("no-predictive-commoning")))
#else
#define DOJO_PARALLEL_BODY
#endif

DOJO_PARALLEL_BODY static void dojo_kernel_par1(int64_t dojo_lo, int64_t dojo_hi, const float *restrict alpha, float *restrict tmp, const float *restrict A, const float *restrict B)
{
  const int64_t NI = 6, NJ = 7, NK = 9, NL = 10;
  (void)NI; (void)NJ; (void)NK; (void)NL;
  if (dojo_lo < 0 || dojo_hi > NI) __builtin_unreachable();
  for (int64_t i = dojo_lo; i < dojo_hi; ++i) {
    for (int64_t j = 0; j < NJ; ++j) {
      tmp[i * NJ + j] = 0.0f;
      for (int64_t k = 0; k < NK; ++k) {
        tmp[i * NJ + j] += alpha[0] * A[i * NK + k] * B[k * NJ + j];
      }
    }
  }
}

DOJO_PARALLEL_BODY static void dojo_kernel_par2(int64_t dojo_lo, int64_t dojo_hi, const float *restrict beta, const float *restrict tmp, const float *restrict C, float *restrict D)
{
  const int64_t NI = 6, NJ = 7, NK = 9, NL = 10;
  (void)NI; (void)NJ; (void)NK; (void)NL;
  if (dojo_lo < 0 || dojo_hi > NI) __builtin_unreachable();
  for (int64_t i2 = dojo_lo; i2 < dojo_hi; ++i2) {
    for (int64_t j2 = 0; j2 < NL; ++j2) {
      D[i2 * NL + j2] *= beta[0];
      for (int64_t k2 = 0; k2 < NJ; ++k2) {
        D[i2 * NL + j2] += tmp[i2 * NJ + k2] * C[k2 * NL + j2];
      }
    }
  }
}

void dojo_kernel(const float *restrict alpha, const float *restrict beta, float *restrict tmp, const float *restrict A, const float *restrict B, const float *restrict C, float *restrict D)
{
  const int64_t NI = 6, NJ = 7, NK = 9, NL = 10;
  {
    const int64_t dojo_lo = 0, dojo_hi = NI;
    #ifdef _OPENMP
    #pragma omp parallel
    {
      const int64_t dojo_n = dojo_hi > dojo_lo ? dojo_hi - dojo_lo : 0;
      const int64_t dojo_t = omp_get_thread_num(), dojo_nt = omp_get_num_threads();
      const int64_t dojo_q = dojo_n / dojo_nt, dojo_r = dojo_n % dojo_nt;
      const int64_t dojo_b = dojo_lo + dojo_t * dojo_q + (dojo_t < dojo_r ? dojo_t : dojo_r);
      const int64_t dojo_e = dojo_b + dojo_q + (dojo_t < dojo_r);
      if (dojo_b < dojo_e) dojo_kernel_par1(dojo_b, dojo_e, alpha, tmp, A, B);
    }
    #else
    if (dojo_lo < dojo_hi) dojo_kernel_par1(dojo_lo, dojo_hi, alpha, tmp, A, B);
    #endif
  }
  {
    const int64_t dojo_lo = 0, dojo_hi = NI;
    #ifdef _OPENMP
    #pragma omp parallel
    {
      const int64_t dojo_n = dojo_hi > dojo_lo ? dojo_hi - dojo_lo : 0;
      const int64_t dojo_t = omp_get_thread_num(), dojo_nt = omp_get_num_threads();
      const int64_t dojo_q = dojo_n / dojo_nt, dojo_r = dojo_n % dojo_nt;
      const int64_t dojo_b = dojo_lo + dojo_t * dojo_q + (dojo_t < dojo_r ? dojo_t : dojo_r);
      const int64_t dojo_e = dojo_b + dojo_q + (dojo_t < dojo_r);
      if (dojo_b < dojo_e) dojo_kernel_par2(dojo_b, dojo_e, beta, tmp, C, D);
    }
    #else
    if (dojo_lo < dojo_hi) dojo_kernel_par2(dojo_lo, dojo_hi, beta, tmp, C, D);
    #endif
  }
}
