/* A CPU emulation of the small part of CUDA that PerfDojo's generated .cu files use, to
 * check the generator's logic (thread mapping, guards, barriers, shared versus per-thread
 * memory, the host sequence) where no GPU exists. It is NOT a GPU: it says nothing about
 * nvcc, the memory model of real hardware, CUDA's math library or performance.
 *
 * Build: the generated file, with its kernel launches `k<<<g, b>>>(args);` rewritten to
 * `DOJO_EMU_LAUNCH(g, b, k(args));` (bench/gpu_check.py does it), compiled as C++17 with
 * `-I bench/cuda_emu` so that this file stands in for <cuda_runtime.h>.
 *
 * Execution: the blocks of a grid run one after the other; the threads of a block are
 * fibers (ucontext) on one OS thread. Every fiber runs until its next __syncthreads() or
 * its end, one after the other, in an order set by DOJO_EMU_ORDER: "reverse" (default:
 * thread 0 last, so a missing barrier after a single-thread part shows), "forward", or
 * "shuffle" (seeded by DOJO_EMU_SEED). A barrier that some threads of a block reach while
 * others have returned (divergence, undefined on a GPU) aborts with a message. Launch
 * configurations past CUDA's limits (1024 threads per block, x/y <= 1024, z <= 64 threads,
 * grid y/z <= 65535) fail with cudaErrorInvalidConfiguration, as on a GPU. Device memory is
 * host memory filled with 0xFF bytes (NaN for floats) by cudaMalloc.
 */
#ifndef DOJO_CUDA_EMU_H
#define DOJO_CUDA_EMU_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <functional>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static

struct dim3 {
  unsigned int x, y, z;
  dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};
typedef dim3 uint3;

typedef enum {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorLaunchFailure = 719
} cudaError_t;
typedef enum {
  cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
} cudaMemcpyKind;
typedef struct dojo_emu_event { double t; } *cudaEvent_t;

static dim3 threadIdx, blockIdx, blockDim, gridDim;
static cudaError_t dojo_emu_last_error = cudaSuccess;

static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }

static inline const char *cudaGetErrorString(cudaError_t e)
{
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidConfiguration: return "invalid configuration argument";
  default: return "unspecified launch failure";
  }
}
static inline cudaError_t cudaGetLastError(void)
{
  cudaError_t e = dojo_emu_last_error;
  dojo_emu_last_error = cudaSuccess;
  return e;
}
static inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
  *p = malloc(bytes ? bytes : 1);
  if (!*p) return cudaErrorMemoryAllocation;
  memset(*p, 0xFF, bytes);
  return cudaSuccess;
}
static inline cudaError_t cudaFree(void *p) { free(p); return cudaSuccess; }
static inline cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind)
{
  memmove(dst, src, bytes);
  return cudaSuccess;
}
static inline cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
static inline double dojo_emu_now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *e)
{
  *e = (cudaEvent_t)calloc(1, sizeof(struct dojo_emu_event));
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
static inline cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
static inline cudaError_t cudaEventRecord(cudaEvent_t e, int stream = 0)
{
  (void)stream;
  e->t = dojo_emu_now();
  return cudaSuccess;
}
static inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
static inline cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
  *ms = (float)(b->t - a->t);
  return cudaSuccess;
}

/* ------------------------------------------------------------------ blocks as fibers */

struct dojo_emu_fiber {
  ucontext_t ctx;
  char *stack;
  dim3 tid;
  int done;
};
static ucontext_t dojo_emu_sched;
static dojo_emu_fiber *dojo_emu_current;
static const std::function<void()> *dojo_emu_body;

static inline void __syncthreads(void)
{
  swapcontext(&dojo_emu_current->ctx, &dojo_emu_sched);
  threadIdx = dojo_emu_current->tid;
}

static void dojo_emu_entry(void)
{
  (*dojo_emu_body)();
  dojo_emu_current->done = 1;
  /* returning resumes uc_link, the scheduler */
}

static inline unsigned long long dojo_emu_rand(unsigned long long *s)
{
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static void dojo_emu_block(const std::function<void()> &body, unsigned long long *seed, int order)
{
  int n = (int)(blockDim.x * blockDim.y * blockDim.z), live, k;
  size_t stack = n == 1 ? (size_t)64 << 20 : (size_t)1 << 20;
  std::vector<dojo_emu_fiber> fibers(n);
  std::vector<int> perm(n);
  dojo_emu_body = &body;
  for (k = 0; k < n; k++) {
    dojo_emu_fiber &f = fibers[k];
    f.tid = dim3(k % blockDim.x, (k / blockDim.x) % blockDim.y, k / (blockDim.x * blockDim.y));
    f.done = 0;
    f.stack = (char *)malloc(stack);
    if (!f.stack) { fprintf(stderr, "emulator: out of memory for fiber stacks\n"); exit(3); }
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = stack;
    f.ctx.uc_link = &dojo_emu_sched;
    makecontext(&f.ctx, dojo_emu_entry, 0);
    perm[k] = k;
  }
  live = n;
  while (live > 0) {
    int arrived = 0, finished = 0;
    if (order == 0) {
      for (k = 0; k < n; k++) perm[k] = n - 1 - k;
    } else if (order == 1) {
      for (k = 0; k < n; k++) perm[k] = k;
    } else {
      for (k = n - 1; k > 0; k--) {
        int j = (int)(dojo_emu_rand(seed) % (unsigned long long)(k + 1)), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
      }
    }
    for (k = 0; k < n; k++) {
      dojo_emu_fiber &f = fibers[perm[k]];
      if (f.done) continue;
      dojo_emu_current = &f;
      threadIdx = f.tid;
      swapcontext(&dojo_emu_sched, &f.ctx);
      if (f.done) finished++;
      else arrived++;
    }
    if (arrived && finished) {
      fprintf(stderr, "emulator: barrier divergence in block (%u, %u, %u): %d threads wait at "
              "__syncthreads() while %d returned\n", blockIdx.x, blockIdx.y, blockIdx.z,
              arrived, finished);
      exit(4);
    }
    live = arrived;
  }
  for (k = 0; k < n; k++) free(fibers[k].stack);
}

static void dojo_emu_launch(dim3 grid, dim3 block, const std::function<void()> &body)
{
  static unsigned long long seed = 0;
  static int order = -1;
  unsigned int bx, by, bz;
  if (order < 0) {
    const char *o = getenv("DOJO_EMU_ORDER"), *s = getenv("DOJO_EMU_SEED");
    order = (!o || !strcmp(o, "reverse")) ? 0 : (!strcmp(o, "forward") ? 1 : 2);
    seed = s ? strtoull(s, NULL, 10) : 1;
  }
  if (block.x * block.y * block.z > 1024 || block.x > 1024 || block.y > 1024 || block.z > 64 ||
      grid.y > 65535 || grid.z > 65535 || !grid.x || !grid.y || !grid.z || !block.x ||
      !block.y || !block.z) {
    dojo_emu_last_error = cudaErrorInvalidConfiguration;
    return;
  }
  gridDim = grid;
  blockDim = block;
  for (bz = 0; bz < grid.z; bz++)
    for (by = 0; by < grid.y; by++)
      for (bx = 0; bx < grid.x; bx++) {
        blockIdx = dim3(bx, by, bz);
        dojo_emu_block(body, &seed, order);
      }
}

#define DOJO_EMU_LAUNCH(grid, block, call) dojo_emu_launch((grid), (block), [&]() { call; })

#endif /* DOJO_CUDA_EMU_H */
