/* PerfDojo: kernel matmul(N = 64, M = 48, K = 40) -- CUDA, generated; nvcc -O3 -arch=sm_90 [-DDOJO_STANDALONE] */
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

enum { N = 64, M = 48, K = 40 };  /* the sizes */

static __host__ __device__ __forceinline__ int dojo_imin(int a, int b) { return a < b ? a : b; }

/* kernel 0 (for i0): grid i0 -> blockIdx.y (4), j0 -> blockIdx.x (2); block 32 x 16 threads (x, y) */
__global__ void __launch_bounds__(512) dojo_matmul_k0(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C)
{
  const int i0 = blockIdx.y;
  const int j0 = blockIdx.x;
  {
    const int i1 = threadIdx.y;
    const int j1 = threadIdx.x;
    if (j1 < dojo_imin(32, M - 32 * j0)) {
      C[(16 * i0 + i1) * M + (32 * j0 + j1)] = 0.0f;
      for (int k = 0; k < K; k++) {
        C[(16 * i0 + i1) * M + (32 * j0 + j1)] += A[(16 * i0 + i1) * K + k] * B[k * M + (32 * j0 + j1)];
      }
    }
  }
}

/* ---------------------------------------------------------------- host */

#define DOJO_TRY(call) do { cudaError_t dojo_e = (call); if (dojo_e != cudaSuccess) return dojo_e; } while (0)
#define DOJO_CHECK(call) do { cudaError_t dojo_e = (call); if (dojo_e != cudaSuccess) { dojo_err = (int)dojo_e; goto dojo_done; } } while (0)

/* every kernel once, in program order (device pointers) */
static cudaError_t dojo_launch(const float *A, const float *B, float *C)
{
  dojo_matmul_k0<<<dim3(2, 4), dim3(32, 16)>>>(A, B, C);
  DOJO_TRY(cudaGetLastError());
  return cudaSuccess;
}

/* allocate, copy in, run once (the results), time `reps` more runs; 0 or a cudaError_t */
extern "C" int dojo_run(const float *A, const float *B, float *C, int dojo_reps, float *dojo_times_ms)
{
  int dojo_err = 0;
  int dojo_r;
  float *dojo_d_A = NULL;
  float *dojo_d_B = NULL;
  float *dojo_d_C = NULL;
  cudaEvent_t dojo_start = NULL, dojo_stop = NULL;

  DOJO_CHECK(cudaMalloc((void **)&dojo_d_A, (size_t)2560 * sizeof(float)));
  DOJO_CHECK(cudaMalloc((void **)&dojo_d_B, (size_t)1920 * sizeof(float)));
  DOJO_CHECK(cudaMalloc((void **)&dojo_d_C, (size_t)3072 * sizeof(float)));
  DOJO_CHECK(cudaMemcpy(dojo_d_A, A, (size_t)2560 * sizeof(float), cudaMemcpyHostToDevice));
  DOJO_CHECK(cudaMemcpy(dojo_d_B, B, (size_t)1920 * sizeof(float), cudaMemcpyHostToDevice));
  DOJO_CHECK(dojo_launch(dojo_d_A, dojo_d_B, dojo_d_C));
  DOJO_CHECK(cudaDeviceSynchronize());
  DOJO_CHECK(cudaMemcpy(C, dojo_d_C, (size_t)3072 * sizeof(float), cudaMemcpyDeviceToHost));
  if (dojo_reps > 0) {
    DOJO_CHECK(cudaEventCreate(&dojo_start));
    DOJO_CHECK(cudaEventCreate(&dojo_stop));
  }
  for (dojo_r = 0; dojo_r < dojo_reps; dojo_r++) {
    float dojo_ms = 0.0f;
    DOJO_CHECK(cudaEventRecord(dojo_start));
    DOJO_CHECK(dojo_launch(dojo_d_A, dojo_d_B, dojo_d_C));
    DOJO_CHECK(cudaEventRecord(dojo_stop));
    DOJO_CHECK(cudaEventSynchronize(dojo_stop));
    DOJO_CHECK(cudaEventElapsedTime(&dojo_ms, dojo_start, dojo_stop));
    if (dojo_times_ms) dojo_times_ms[dojo_r] = dojo_ms;
  }
dojo_done:
  if (dojo_start) cudaEventDestroy(dojo_start);
  if (dojo_stop) cudaEventDestroy(dojo_stop);
  cudaFree(dojo_d_A);
  cudaFree(dojo_d_B);
  cudaFree(dojo_d_C);
  return dojo_err;
}

extern "C" const char *dojo_error_string(int code)
{
  return cudaGetErrorString((cudaError_t)code);
}

#ifdef DOJO_STANDALONE
#include <stdio.h>
#include <stdlib.h>

static int dojo_cmp(const void *a, const void *b)
{
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int dojo_file(const char *dir, const char *name, void *data, size_t bytes, int writing)
{
  char path[4096];
  FILE *f;
  size_t n;
  snprintf(path, sizeof path, "%s/%s.bin", dir, name);
  f = fopen(path, writing ? "wb" : "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
  n = writing ? fwrite(data, 1, bytes, f) : fread(data, 1, bytes, f);
  fclose(f);
  if (n != bytes) { fprintf(stderr, "%s: expected %zu bytes, got %zu\n", path, bytes, n); return 1; }
  return 0;
}

int main(int argc, char **argv)
{
  int dojo_reps = 20, dojo_k, dojo_err;
  const char *dojo_in = NULL, *dojo_out = NULL;
  float *dojo_times;
  size_t dojo_i;
  float *A = (float *)malloc((size_t)2560 * sizeof(float));
  float *B = (float *)malloc((size_t)1920 * sizeof(float));
  float *C = (float *)malloc((size_t)3072 * sizeof(float));
  for (dojo_k = 1; dojo_k < argc; dojo_k++) {
    if (!strcmp(argv[dojo_k], "--reps") && dojo_k + 1 < argc) dojo_reps = atoi(argv[++dojo_k]);
    else if (!strcmp(argv[dojo_k], "--in") && dojo_k + 1 < argc) dojo_in = argv[++dojo_k];
    else if (!strcmp(argv[dojo_k], "--out") && dojo_k + 1 < argc) dojo_out = argv[++dojo_k];
    else { fprintf(stderr, "usage: %s [--reps N] [--in DIR] [--out DIR]\n", argv[0]); return 2; }
  }
  if (dojo_reps < 0) dojo_reps = 0;
  dojo_times = (float *)malloc((size_t)(dojo_reps > 0 ? dojo_reps : 1) * sizeof(float));
  if (!A || !B || !C || !dojo_times) { fprintf(stderr, "out of memory\n"); return 1; }
  if (dojo_in) {
    if (dojo_file(dojo_in, "A", A, (size_t)2560 * sizeof(float), 0)) return 1;
  } else {
    for (dojo_i = 0; dojo_i < (size_t)2560; dojo_i++) A[dojo_i] = (float)(-1.0 + 2.0 * (double)(((dojo_i + 7919ull) * 2654435761ull) % 1000003ull) / 1000002.0);
  }
  if (dojo_in) {
    if (dojo_file(dojo_in, "B", B, (size_t)1920 * sizeof(float), 0)) return 1;
  } else {
    for (dojo_i = 0; dojo_i < (size_t)1920; dojo_i++) B[dojo_i] = (float)(-1.0 + 2.0 * (double)(((dojo_i + 15838ull) * 2654435761ull) % 1000003ull) / 1000002.0);
  }
  dojo_err = dojo_run(A, B, C, dojo_reps, dojo_times);
  if (dojo_err) { fprintf(stderr, "dojo_run: CUDA error %d: %s\n", dojo_err, dojo_error_string(dojo_err)); return 1; }
  qsort(dojo_times, (size_t)dojo_reps, sizeof(float), dojo_cmp);
  printf("{\"kernel\": \"matmul\", \"reps\": %d, \"median_ms\": %.6f, \"min_ms\": %.6f, \"max_ms\": %.6f, \"checksum\": {", dojo_reps,
    dojo_reps ? (dojo_reps % 2 ? dojo_times[dojo_reps / 2] : 0.5f * (dojo_times[dojo_reps / 2 - 1] + dojo_times[dojo_reps / 2])) : 0.0f,
    dojo_reps ? dojo_times[0] : 0.0f, dojo_reps ? dojo_times[dojo_reps - 1] : 0.0f);
  {
    double dojo_sum = 0;
    for (dojo_i = 0; dojo_i < (size_t)3072; dojo_i++) dojo_sum += (double)C[dojo_i];
    printf("\"C\": %.17g", dojo_sum);
  }
  printf("}}\n");
  if (dojo_out && dojo_file(dojo_out, "C", C, (size_t)3072 * sizeof(float), 1)) return 1;
  free(A);
  free(B);
  free(C);
  free(dojo_times);
  return 0;
}
#endif /* DOJO_STANDALONE */
