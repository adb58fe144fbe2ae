"""The CUDA generator (dojo_core.codegen.cuda): text, compilation, emulated and GPU runs.

What runs where (nothing here is mocked):
* always: the generated text - a golden .cu for a small bound matmul (update with
  pytest tests/core/test_codegen_cuda.py -k golden --update-goldens), the structure of the
  GPU schedules in tests/core/cuda_schedules/ (grid, per-thread accumulator, shared tiles, the
  barriers and only those), the host sequence and the refusals.
* where nvcc is on PATH: the CUDA of every library kernel untransformed (the single-thread
  fallback), of the GPU schedules (matmul tiled with shared-memory staging and a register
  accumulator, softmax and layernorm rows to blocks) and of the hand-written programs below
  compiles with ``nvcc -O3 -arch=sm_90 -Werror all-warnings``: one translation unit that
  includes every file in a namespace of its own (one front end instead of thirty), and in
  parallel one file built as is, with its DOJO_STANDALONE main, into an executable.
* where g++ is on PATH: bench/gpu_check.py --emulate runs the standalone binaries on the
  CPU emulation of bench/cuda_emu (threads as fibers, barriers as scheduling points, three
  thread orders) and compares their outputs with the interpreter. That checks the
  generator's logic (mapping, guards, barriers, memory spaces, host code), not nvcc or a GPU.
* the one part skipped here: running the binaries on a GPU (bench/gpu_check.sh) needs a
  CUDA device; without ``nvidia-smi`` the test skips with "no CUDA device here".
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from dojo_core.codegen.cuda import CudaCodegenError, generate_cuda
from dojo_core.kernels import info, list_kernels, load_kernel
from dojo_core.parser import parse
from dojo_core.source import load_source
from dojo_core.steps import read_steps, replay
from dojo_core.transforms import apply_step
from dojo_core.walks import random_walk

from kernels_text import MATMUL_MN_LOOPS, kernel_text as dojo_text, matmul_text

ROOT = Path(__file__).resolve().parents[2]
SCHEDULES = Path(__file__).parent / "cuda_schedules"
NVCC = shutil.which("nvcc")
GXX = shutil.which("g++")
NVCC_FLAGS = ["-O3", "-arch=sm_90", "-Werror", "all-warnings"]

MATMUL = matmul_text(64, 48, 40)
BOUND_STEPS = ["split i by 16", "split j by 32", "interchange i1 j0", "bind i0 gpu.block.y",
               "bind j0 gpu.block.x", "bind i1 gpu.thread.y", "bind j1 gpu.thread.x"]

# hand-written programs for the rarer mappings
HOST_LOOP = """\
kernel hostloop(T = 4, N = 70)
inout X: f32[T, N]
out   Y: f32[N]

for t in 1..T:
  for i in 0..N gpu.block.x:
    X[t, i] = X[t - 1, i] * 2 + t
for u in 0..T:
  for j in 0..u + 1 gpu.block.y:
    for l in 0..8 gpu.thread.x:
      X[u, 8*j + l] = X[u, 8*j + l] + 1
for m in 0..N:
  Y[m] = X[T - 1, m]
"""
STRIDES = """\
kernel strides(N = 70000, Z = 100, W = 2)
in  A: f32[N]
out B: f32[N]
out C: f32[W, Z]

for i in 0..N gpu.block.y:
  B[i] = A[i] * 2
for w in 0..W gpu.block.x:
  for z in 0..Z gpu.thread.z:
    C[w, z] = w + z
"""
MIXED = """\
kernel mixed(N = 37)
in  A: bf16[N]
in  I: i32[N]
in  K: i64[N]
in  D: f64[N]
out B: bf16[N]
out J: i32[N]
out L: i64[N]
out E: f64[N]

for i in 0..N gpu.thread.x:
  B[i] = A[i] * A[i] + 0.3
  B[i] += A[i] / 7
  J[i] = I[i] // 3 + I[i] % 3 + i * i + (i - 18) // 4
  L[i] = K[i] * 1000000 + (i - 18) % 5 + max(K[i], 2) + abs(K[i])
  E[i] = exp(D[i]) + select(D[i] > 0.5, sqrt(abs(D[i])), D[i]) + pow(D[i], 2) + tanh(D[i]) + erf(D[i]) + rsqrt(D[i] + 2)
  E[i] max= log(D[i] + 3)
"""
BIG_LOCAL = """\
kernel big(N = 8, M = 8192)
in  X: f32[N, M]
out Y: f32[N, M]

for i in 0..N:
  local t: f32[M]
  for j in 0..M:
    t[j] = X[i, j] * 2
  for k in 0..M:
    Y[i, k] = t[M - 1 - k]
"""
HAND_WRITTEN = {"hostloop": HOST_LOOP, "strides": STRIDES, "mixed": MIXED, "big": BIG_LOCAL}


def _gpu_check():
    """bench/gpu_check.py as a module (bench/ is not a package)."""
    if "dojo_bench_gpu_check" not in sys.modules:
        spec = importlib.util.spec_from_file_location("dojo_bench_gpu_check",
                                                      ROOT / "bench" / "gpu_check.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
    return sys.modules["dojo_bench_gpu_check"]


def bound_matmul():
    p = parse(MATMUL)
    for s in BOUND_STEPS:
        p = apply_step(p, s)
    return p


def schedule(name, sizes=None):
    path = SCHEDULES / f"{name}.steps"
    return replay(load_kernel(name, sizes), read_steps(path), str(path))


def schedule_sizes(name):
    return _gpu_check().schedule_sizes(SCHEDULES / f"{name}.steps")


def kernel_text(src: str, index: int = 0) -> str:
    """The text of one __global__ kernel (its comment line to its closing brace)."""
    start = src.index(f"/* kernel {index} (")
    return src[start:src.index("\n}\n", start) + 3]


# --------------------------------------------------------------------------- text

def test_golden_bound_matmul(golden):
    got = generate_cuda(bound_matmul())
    golden("cuda/matmul_bound.cu", got)


def test_generation_is_deterministic():
    assert generate_cuda(schedule("matmul")) == generate_cuda(schedule("matmul"))


def test_tiled_matmul_structure():
    src = generate_cuda(schedule("matmul"))
    k = kernel_text(src)
    assert "grid i0 -> blockIdx.y (16), j0 -> blockIdx.x (16); block 32 x 32 threads" in k
    assert "dojo_matmul_k0<<<dim3(16, 16), dim3(32, 32)>>>(A, B, C);" in src
    # the accumulator is indexed by the thread iterators only: one value per thread
    assert "  float acc;  /* acc[32, 32]: each thread holds its own element */" in k
    assert "acc += As[i3][k1] * Bs[k1][j3];" in k
    assert "__shared__ float As[32][32];" in k and "__shared__ float Bs[32][32];" in k
    # exactly the two barriers of the classic tiled kernel, both in the k0 loop: after
    # the cooperative copies, and before the next iteration overwrites the tiles
    body = k[k.index("for (int k0"):]
    loop = body[:body.index("\n  }\n")]
    assert k.count("__syncthreads();") == 2 and loop.count("__syncthreads();") == 2
    assert loop.index("__syncthreads();") > loop.index("As[i4][k2] = ")
    assert loop.rstrip().endswith("__syncthreads();")
    assert "__launch_bounds__(1024)" in k


def test_tails_are_guarded():
    sizes = schedule_sizes("matmul")[1]
    assert sizes == {"N": 70, "M": 45, "K": 50}
    k = kernel_text(generate_cuda(schedule("matmul", sizes)))
    assert "if (i3 < dojo_imin(32, N - 32 * i0) && j3 < dojo_imin(32, M - 32 * j0)) {" in k
    assert "for (int k0 = 0; k0 < (K + 31) / 32; k0++) {" in k
    assert "for (int k1 = 0; k1 < dojo_imin(32, K - 32 * k0); k1++) {" in k


def test_softmax_rows_to_blocks():
    k = kernel_text(generate_cuda(schedule("softmax")))
    assert "const int i = blockIdx.x;" in k and "block 1024 threads (x)" in k
    # m and s are written by one thread and read by all: shared, with the barriers
    assert "__shared__ float m;  /* local m: several threads use it, so it is shared */" in k
    assert "__shared__ float s;" in k
    assert k.count("if (threadIdx.x == 0) {") == 2
    assert k.count("__syncthreads();") == 3


def test_layernorm_needs_no_barrier_inside_its_loop():
    k = kernel_text(generate_cuda(schedule("layernorm")))
    loop = k[k.index("for (int l0"):]
    assert k.count("__syncthreads();") == 1          # after mu and var, before the loop
    assert "__syncthreads();" not in loop          # each thread writes its own elements
    assert "const int l1 = threadIdx.x;" in loop


def test_untransformed_kernels_run_on_one_thread():
    for name in list_kernels():
        src = generate_cuda(load_kernel(name))
        assert "runs on a single thread, <<<1, 1>>> (correct, slow)" in src, name
        assert "<<<1, 1>>>" in src and "threadIdx" not in src.split("/* ----")[0], name
        assert 'extern "C" int dojo_run(' in src and "#ifdef DOJO_STANDALONE" in src, name


def test_host_entry_and_error_handling():
    src = generate_cuda(load_kernel("layernorm"))
    assert ('extern "C" int dojo_run(const float *X, const float *gamma, const float *beta, '
            'const float *eps, float *Y, int dojo_reps, float *dojo_times_ms)') in src
    run = src[src.index('extern "C" int dojo_run'):src.index("dojo_done:")]
    calls = re.findall(r"\b(cuda[A-Z]\w*)\(", run)
    assert calls and all(re.search(rf"DOJO_CHECK\({c}\(", run) for c in calls)
    assert "exit(" not in src.split("#ifdef DOJO_STANDALONE")[0]
    assert "dojo_v_eps = *eps;" in src       # an `in` scalar goes to the kernels by value


def test_host_loops_launch_kernels_per_iteration():
    src = generate_cuda(load_source(HOST_LOOP))
    launch = src[src.index("static cudaError_t dojo_launch"):]
    assert "for (int t = 1; t < T; t++) {\n    dojo_hostloop_k0<<<dim3(70), dim3(1)>>>(X, t);" in launch
    assert "const int dojo_gy = dojo_imin(dojo_imax(0, u + 1), 65535);" in launch
    assert "dojo_hostloop_k2<<<1, 1>>>(X, Y);" in launch


def test_grid_and_thread_limits_become_strides():
    src = generate_cuda(load_source(STRIDES))
    assert "for (int i = blockIdx.y; i < N; i += gridDim.y) {" in src
    assert "<<<dim3(1, 65535), dim3(1)>>>" in src
    assert "for (int z = threadIdx.z; z < Z; z += 64) {" in src


def test_large_locals_of_single_thread_kernels_go_to_global_memory():
    src = generate_cuda(load_source(BIG_LOCAL))
    assert "/* local t[8192]: global scratch memory (too large for a thread's local memory) */" in src
    assert "dojo_big_k0<<<1, 1>>>(X, Y, t);" in src and "cudaMalloc((void **)&dojo_d_t" in src


def test_dtypes():
    src = generate_cuda(load_source(MIXED))
    assert "B[i] = dojo_round_bf16(B[i] + A[i] / 7.0f);" in src
    assert "dojo_floordiv(i - 18, 4)" in src and "dojo_floordiv_i64(I[i], 3)" in src
    assert "E[i] = dojo_max_f64(E[i], log(D[i] + 3.0));" in src
    assert "long long *__restrict__ L" in src and "const double *__restrict__ D" in src


@pytest.mark.parametrize("source, message", [
    ("kernel r(N = 64)\nin A: f32[N]\nout B: f32[N]\n\nfor i in 0..N gpu.thread.x:\n"
     "  local t: f32[4] in shared\n  t[0] = A[i]\n  B[i] = t[0]\n",
     "6:3: local 't' is in shared memory but sits inside a gpu.thread loop"),
    ("kernel r(N = 64)\nin A: f32[N]\nout B: f32[N]\n\nlocal t: f32[64] in shared\n"
     "for i in 0..N:\n  t[i] = A[i]\nfor j in 0..N gpu.block.x:\n  B[j] = t[j]\n",
     "5:1: local 't' is in shared memory but sits outside every gpu.block loop"),
    ("kernel r(N = 64)\nin A: f16[N]\nout B: f16[N]\n\nfor i in 0..N:\n  B[i] = A[i]\n",
     "array 'A' is f16: the CUDA generator has no __half lowering yet"),
    ("kernel r(N = 8)\nin A: f32[N, 8192]\nout B: f32[N, 8192]\n\nfor i in 0..N gpu.block.x:\n"
     "  local t: f32[8192] in shared\n  local u: f32[8192] in shared\n  for j in 0..8192:\n"
     "    t[j] = A[i, j]\n    u[j] = t[j]\n  for k in 0..8192:\n    B[i, k] = u[k]\n",
     "kernel 0 needs 65536 bytes of shared memory; the static limit is 49152"),
    ("kernel r(N = 8)\nin A: f32[N, 262144]\nout B: f32[N, 262144]\n\nfor i in 0..N gpu.block.x:\n"
     "  for j in 0..2 gpu.thread.x:\n    local t: f32[262144]\n    for k in 0..262144:\n"
     "      t[k] = A[i, k]\n    for l in 131072*j..131072*j + 131072:\n      B[i, l] = t[l]\n",
     "kernel 0 needs more than 524288 bytes of local memory per thread (local 't'"),
])
def test_refusals(source, message):
    with pytest.raises(CudaCodegenError) as exc:
        generate_cuda(load_source(source))
    assert message in str(exc.value)


# --------------------------------------------------------------------------- nvcc

def _compile_sources() -> dict:
    """name -> CUDA source of everything the compile test builds."""
    out = {f"{n}_plain": generate_cuda(load_kernel(n)) for n in list_kernels()}
    for path in sorted(SCHEDULES.glob("*.steps")):
        out[f"{path.stem}_sched"] = generate_cuda(schedule(path.stem))
        for k, sizes in enumerate(schedule_sizes(path.stem)):
            out[f"{path.stem}_sched{k}"] = generate_cuda(schedule(path.stem, sizes))
    for name, text in HAND_WRITTEN.items():
        out[name] = generate_cuda(load_source(text))
    out["golden"] = generate_cuda(bound_matmul())
    return out


def _nvcc(args, cwd):
    r = subprocess.run(["nvcc"] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"nvcc {' '.join(args)} failed:\n{r.stderr[-4000:]}"


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
def test_nvcc_compiles_everything(tmp_path):
    sources = _compile_sources()
    unit = ["#include <cuda_runtime.h>", "#include <math.h>", "#include <string.h>"]
    for k, (name, text) in enumerate(sorted(sources.items())):
        (tmp_path / f"{name}.cu").write_text(text)
        unit += [f"#define dojo_run dojo_run_{k}",
                 f"#define dojo_error_string dojo_error_string_{k}",
                 f"namespace dojo_unit_{k} {{", f'#include "{name}.cu"', "}",
                 "#undef dojo_run", "#undef dojo_error_string"]
    (tmp_path / "all.cu").write_text("\n".join(unit) + "\n")
    jobs = [NVCC_FLAGS + ["-c", "all.cu", "-o", "all.o"],
            NVCC_FLAGS + ["-DDOJO_STANDALONE", "matmul_sched.cu", "-o", "matmul_tiled"]]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda a: _nvcc(a, tmp_path), jobs))
    assert (tmp_path / "all.o").stat().st_size > 0
    assert os.access(tmp_path / "matmul_tiled", os.X_OK)


# --------------------------------------------------------------------------- runs

def _emulate(cases, tmp_path):
    gc = _gpu_check()
    with ThreadPoolExecutor(2) as pool:
        results = [r for rs in pool.map(lambda c: gc.check(c, tmp_path, True, "sm_90", 1), cases)
                   for r in rs]
    failed = [f"{r['case']}: {r['error']}" for r in results if not r["ok"]]
    assert not failed, "\n".join(failed)
    return results


@pytest.mark.skipif(GXX is None, reason="g++ is not on PATH (needed by the CUDA emulation)")
def test_emulated_schedules_match_the_interpreter(tmp_path):
    gc = _gpu_check()
    cases = gc.cases(["matmul", "softmax", "layernorm"], schedules_only=True, default_sizes=False)
    cases += [c for c in gc.cases(["attention", "conv2d"], default_sizes=False)
              if c.label == "test sizes"]          # the single-thread fallback
    assert len(cases) == 8
    results = _emulate(cases, tmp_path)
    assert len(results) == 3 * len(cases)


@pytest.mark.skipif(GXX is None, reason="g++ is not on PATH (needed by the CUDA emulation)")
def test_emulated_hand_written_programs_match_the_interpreter(tmp_path):
    gc = _gpu_check()
    cases = []
    for name, text in HAND_WRITTEN.items():
        path = tmp_path / f"{name}.dojo"
        path.write_text(text)
        cases.append(gc.Case(name, None, {}, "its sizes", source=path))
    _emulate(cases, tmp_path)


@pytest.mark.skipif(GXX is None, reason="g++ is not on PATH (needed by the CUDA emulation)")
def test_emulated_random_walks_with_bindings_match_the_interpreter(tmp_path):
    """Random legal walks biased to GPU moves (bind, split, stage, expand) on a few kernels."""
    gc = _gpu_check()
    kinds = {"bind", "split", "stage", "accumulate", "fission", "interchange", "expand"}
    cases = []
    for name, seed in (("matmul", 1), ("softmax", 2), ("transpose", 3), ("rmsnorm", 4)):
        program = load_kernel(name, info(name).test_sizes)
        texts, _ = random_walk(program, 8, seed, kinds=kinds)
        steps = tmp_path / f"{name}_{seed}.steps"
        steps.write_text("\n".join(texts) + "\n")
        cases.append(gc.Case(name, steps, dict(info(name).test_sizes), f"walk {seed}"))
    assert any("bind" in c.steps.read_text() for c in cases)
    _emulate(cases, tmp_path)


INT8_MATMUL = dojo_text("int8_matmul(M = 48, N = 64, K = 40)",
                        "in A: i8[M, K]; in B: i8[K, N]; out C: i32[M, N]; out D: i8[M, N]",
                        MATMUL_MN_LOOPS + """\
    D[i, j] = A[i, 0] * B[0, j] * 100 + 100 + j
""")


def bound_int8_matmul():
    p = parse(INT8_MATMUL)
    for s in BOUND_STEPS:
        p = apply_step(p, s)
    return p


def test_i8_types_and_promotion():
    """i8 is signed char; products of i8 values are computed in int (C's promotion, exact),
    the store into D converts back to signed char (wraps modulo 256)."""
    src = generate_cuda(bound_int8_matmul())
    assert "const signed char *__restrict__ A" in src and "int *__restrict__ C" in src
    assert "signed char *__restrict__ D" in src
    assert ("C[(16 * i0 + i1) * N + (32 * j0 + j1)] += A[(16 * i0 + i1) * K + k] * "
            "B[k * N + (32 * j0 + j1)];") in src
    assert "(size_t)3072 * sizeof(signed char)" in src


@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
def test_nvcc_compiles_int8_matmul(tmp_path):
    (tmp_path / "int8.cu").write_text(generate_cuda(bound_int8_matmul()))
    (tmp_path / "int8_plain.cu").write_text(generate_cuda(parse(INT8_MATMUL)))
    jobs = [NVCC_FLAGS + ["-DDOJO_STANDALONE", "int8.cu", "-o", "int8"],
            NVCC_FLAGS + ["-c", "int8_plain.cu", "-o", "int8_plain.o"]]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda a: _nvcc(a, tmp_path), jobs))
    assert os.access(tmp_path / "int8", os.X_OK)


@pytest.mark.skipif(GXX is None, reason="g++ is not on PATH (needed by the CUDA emulation)")
def test_emulated_int8_matmul_matches_the_interpreter(tmp_path):
    gc = _gpu_check()
    source, steps = tmp_path / "int8_matmul.dojo", tmp_path / "int8_matmul.steps"
    source.write_text(INT8_MATMUL)
    steps.write_text("\n".join(BOUND_STEPS) + "\n")
    _emulate([gc.Case("int8_matmul", steps, {}, "its sizes", source=source)], tmp_path)


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


@pytest.mark.skipif(not _has_gpu(), reason="no CUDA device here")
@pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
def test_gpu_runs_match_the_interpreter():
    r = subprocess.run([str(ROOT / "bench" / "gpu_check.sh"), "--reps", "5"], cwd=ROOT,
                       capture_output=True, text=True, timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
