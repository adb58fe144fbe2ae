"""The Arm and RISC-V targets for real: cross compilers and qemu-user (dojo_core/cross.py).

Every library kernel, untransformed at its test sizes and after each of its schedules
(``NAME.steps``, the x86 ``NAME.TARGET.steps`` and the target's own ``NAME.TARGET.steps``,
not another cross target's; at the test sizes when the steps apply there, else at the
smallest scaled sizes where they do, as tests/core/test_library_steps.py picks them), is
compiled for arm-neon, arm-sve and riscv-rvv, run under qemu (3 OpenMP threads, so
the parallel loops split unevenly) and compared with the interpreter. Seeded random walks
run on every target too. The assembly of every schedule must hold the target's vector
instructions (SVE z registers, NEON v registers, RVV vle/vse), and fused multiply-adds for
the contractions, so a silently scalar or NEON-only build fails; the executables must be
ELF files of the target's machine (never a host build). A target that cannot be built
and run is refused with its reason.

Per target, every ``NAME.TARGET.steps`` replays at the kernel's default sizes (the sizes
``kernels.steps_path`` promises it for) and its C compiles for that target, with the
target's vector instructions in the assembly (x86 files with the host compiler, the others
with their cross compiler); a file naming an unknown target fails.

The toolchains are Debian packages (.ci/run installs them). Without them the tests skip,
except under CI (``CI`` set), where they fail.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from dojo_core import cross, harness, interp
from dojo_core.codegen import generate_c
from dojo_core.codegen.targets import TARGETS, is_foreign
from dojo_core.kernels import info, list_kernels, load_kernel, random_inputs, steps_files
from dojo_core.parser import parse
from dojo_core.steps import read_steps
from dojo_core.walks import random_walk, replay

from cross_support import require_cross_route
from transform_checks import replay_or_none, scaled

ROOT = Path(__file__).resolve().parents[2]
CROSS = ("arm-neon", "arm-sve", "riscv-rvv")
ELF_MACHINE = {"aarch64": 183, "riscv64": 243}
THREADS = 3
WALKS = {"arm-neon": (0, 1, 2), "arm-sve": (3, 4, 5), "riscv-rvv": (6, 7, 8)}
WALK_STEPS = 8
CONTRACTIONS = ("matmul", "bmm", "conv2d", "attention")


def _require(target: str) -> None:
    if not is_foreign(TARGETS[target]):
        pytest.skip(f"{target} is this machine's own ISA")
    require_cross_route(target)


# --------------------------------------------------------------------------- programs

def _texts(path) -> list:
    return [text for _, text in read_steps(path)]


@lru_cache(maxsize=None)
def _schedule(name: str, filename: str):
    """(small, scheduled) for one schedule file: at the test sizes when its steps apply
    there, else every default size divided by 8, 4 or 2, else one size at a time."""
    path = next(p for p in steps_files(name) if p.name == filename)
    texts = _texts(path)
    small = load_kernel(name, info(name).test_sizes)
    scheduled = replay_or_none(small, texts)
    if scheduled is not None:
        return small, scheduled
    default = load_kernel(name)
    found = scaled(default, texts)
    if found is not None:
        return found
    small = default.with_sizes(dict(default.sizes))
    return small, replay(small, texts)


def _schedule_target(filename: str):
    """The target a NAME.TARGET.steps file is for, None for NAME.steps."""
    parts = filename.split(".")
    return parts[1] if len(parts) == 3 else None


def _runs_on(filename: str, target: str) -> bool:
    """A schedule is checked on a cross target unless it is another cross target's own."""
    own = _schedule_target(filename)
    return own is None or own == target or own not in CROSS


def _programs(name: str, target: str) -> list:
    """[(label, original, program)]: the kernel at its test sizes, then its schedules."""
    test = load_kernel(name, info(name).test_sizes)
    out = [("untransformed", test, test)]
    for path in steps_files(name):
        if not _runs_on(path.name, target):
            continue
        small, scheduled = _schedule(name, path.name)
        out.append((path.name, small, scheduled))
    return out


@lru_cache(maxsize=None)
def _reference(program, seed: int):
    """(inputs, the interpreter's outputs) of a program (IR values are immutable)."""
    inputs = random_inputs(program, seed)
    return inputs, interp.run(program, inputs)


def _check(target: str, original, program, context: str, seed: int = 0):
    """Compile program for target, run it under qemu, compare with the interpreter's
    outputs of original; the Library."""
    inputs, want = _reference(original, seed)
    lib = harness.build(program, target)
    assert lib.emulated and lib.target.name == target
    got = harness.run_c(program, inputs, threads=THREADS, library=lib)
    errors = harness.compare(got, want, program, original)
    assert all(e <= 1.0 for e in errors.values()), f"{context} on {target}: {errors}"
    return lib


def _elf_machine(path: str) -> int:
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return int.from_bytes(head[18:20], "little")


# --------------------------------------------------------------------------- kernels

@pytest.mark.parametrize("name", list_kernels())
@pytest.mark.parametrize("target", CROSS)
def test_library_kernel_runs_on_target(target, name):
    """The kernel, untransformed and after each of its schedules, under qemu = interp."""
    _require(target)
    arch = TARGETS[target].arch
    for label, original, program in _programs(name, target):
        lib = _check(target, original, program, f"{name} ({label})")
        assert _elf_machine(lib.path) == ELF_MACHINE[arch], f"{lib.path} is not {arch} code"


@pytest.mark.parametrize("target", CROSS)
def test_seeded_random_walks_run_on_target(target):
    """A few seeded random walks (8 legal steps on a kernel picked by the seed)."""
    _require(target)
    kernels = list_kernels()
    for seed in WALKS[target]:
        name = kernels[(seed * 7) % len(kernels)]
        original = load_kernel(name, info(name).test_sizes)
        texts, final = random_walk(original, WALK_STEPS, seed)
        _check(target, original, final, f"{name} after {texts} (seed {seed})", seed)


# --------------------------------------------------------------------------- assembly

SCHEDULES = [(n, p.name) for n in list_kernels() for p in steps_files(n)]


@pytest.mark.parametrize("target", CROSS)
def test_schedules_compile_to_the_targets_vector_instructions(target):
    """Every schedule has a vector loop: its assembly holds the target's vector
    instructions, fused multiply-adds for the contractions."""
    _require(target)
    t = TARGETS[target]
    for name, filename in SCHEDULES:
        if not _runs_on(filename, target):
            continue
        _, program = _schedule(name, filename)
        source = generate_c(program, t)
        assert "vector_size(" in source, f"{filename}: no explicit vector loop to check"
        counts = cross.vector_instructions(cross.assembly(source, t), t)
        where = f"{filename} on {target}: {counts}"
        if target == "arm-sve":
            assert counts["sve"] > 0, where
        elif target == "arm-neon":
            assert counts["neon"] > 0 and counts["sve"] == 0, where
        else:
            assert counts["vle"] > 0 and counts["vse"] > 0, where
        if name in CONTRACTIONS:
            assert counts["fmla" if t.arch == "aarch64" else "vfmacc"] > 0, where


OWN_SCHEDULES = [(n, p.name) for n in list_kernels() for p in steps_files(n)
                 if _schedule_target(p.name) is not None]


@pytest.mark.parametrize("name,filename", OWN_SCHEDULES)
def test_target_schedule_replays_and_compiles_for_its_target(name, filename):
    """NAME.TARGET.steps at the default sizes, generated and compiled for TARGET."""
    tname = _schedule_target(filename)
    assert tname in TARGETS, f"{filename}: unknown target {tname!r} (known: {', '.join(TARGETS)})"
    t = TARGETS[tname]
    if is_foreign(t):
        _require(tname)
    path = next(p for p in steps_files(name) if p.name == filename)
    program = replay(load_kernel(name), _texts(path))
    source = generate_c(program, t)
    counts = cross.vector_instructions(cross.assembly(source, t), t)
    assert counts["total"] > 0, f"{filename}: no {tname} vector instructions: {counts}"
    if tname == "arm-sve":
        assert counts["sve"] > 0 and counts["neon"] == 0, counts
    if name in CONTRACTIONS and t.arch == "aarch64":
        assert counts["fmla"] > 0, counts


def test_vector_instruction_counter():
    sve = "\tld1w\tz0.s, p0/z, [x0, #1, mul vl]\n\tfmla\tz0.s, p0/m, z1.s, z2.s\n.L3:\n"
    neon = "\tldr\tq0, [x1]\n\tfmla\tv0.4s, v1.4s, v2.4s\n\tadd\tx0, x0, 16 // v9.4s\n"
    rvv = "\tvsetivli\tzero,4,e32,mf2,ta,ma\n\tvle32.v\tv8,(a0)\n\tvfmacc.vv\tv8,v9,v10\n" \
          "\tvse32.v\tv8,(a1)\n\tadd\ta0,a0,a1 # vle32.v\n"
    assert cross.vector_instructions(sve, "arm-sve") == {"sve": 2, "neon": 0, "fmla": 1, "total": 2}
    assert cross.vector_instructions(neon, "arm-neon") == {"sve": 0, "neon": 2, "fmla": 1, "total": 2}
    assert cross.vector_instructions(rvv, "riscv-rvv") == {"rvv": 4, "vle": 1, "vse": 1,
                                                           "vfmacc": 1, "total": 4}


# --------------------------------------------------------------------------- OpenMP

THREADS_PROBE = r"""
#include <stdio.h>
#include <omp.h>
int main(int argc, char **argv)
{
  int seen[64] = {0}, team = 0;
  long sum = 0;
  FILE *f;
  #pragma omp parallel
  {
    #pragma omp critical
    { seen[omp_get_thread_num() & 63] = 1; team = omp_get_num_threads(); }
  }
  #pragma omp parallel for reduction(+:sum)
  for (long i = 0; i < 1001; ++i) sum += i;
  if (argc < 3 || !(f = fopen(argv[2], "w"))) return 1;
  int distinct = 0;
  for (int k = 0; k < 64; ++k) distinct += seen[k];
  fprintf(f, "%d %d %ld", team, distinct, sum);
  return fclose(f) != 0;
}
"""


@pytest.mark.parametrize("target", CROSS)
def test_openmp_threads_under_emulation(target):
    """OpenMP teams really have the requested threads under qemu (libgomp, or clang's
    libomp calls through the shim)."""
    _require(target)
    exe = cross.compile_executable(THREADS_PROBE, target)
    out = cross.run_executable(exe, b"", threads=THREADS).decode().split()
    assert out == [str(THREADS), str(THREADS), str(sum(range(1001)))], out


PARALLEL = """\
kernel rows(N = 37, M = 20)
in  A: f32[N, M]
out B: f32[N, M]

for i in 0..N:
  for j in 0..M:
    B[i, j] = A[i, j] * 2 + i
"""


@pytest.mark.parametrize("target", CROSS)
def test_parallel_loops_split_unevenly(target):
    """37 rows on 1..5 threads: every static share of a parallel loop is right."""
    _require(target)
    from dojo_core.transforms import apply_step
    original = parse(PARALLEL)
    program = apply_step(apply_step(original, "parallelize i"), "vectorize j")
    inputs, want = _reference(original, 0)
    lib = harness.build(program, target)
    for threads in (1, 2, 5):
        got = harness.run_c(program, inputs, threads=threads, library=lib)
        np.testing.assert_allclose(got["B"], want["B"], rtol=1e-6)


# --------------------------------------------------------------------------- refusals

def test_missing_toolchain_is_refused(tmp_path):
    """A route whose compiler or emulator is not installed: TargetUnavailable, and the
    command line exits 1 with the reason (never a host build)."""
    program = parse(PARALLEL)
    for field, value, what in (("cc", ("no-such-cross-gcc",), "compiler"),
                               ("emulator", ("no-such-qemu",), "emulator")):
        route = dataclasses.replace(TARGETS["arm-sve"].cross, **{field: value})
        target = dataclasses.replace(TARGETS["arm-sve"], cross=route)
        with pytest.raises(cross.TargetUnavailable, match=f"{what} '{value[0]}' is not installed"):
            harness.build(program, target)
    no_route = dataclasses.replace(TARGETS["arm-neon"], arch="s390x", cross=None)
    with pytest.raises(cross.TargetUnavailable, match="no cross route"):
        harness.run_c(program, random_inputs(program, 0), target=no_route)

    (tmp_path / "k.dojo").write_text(PARALLEL)
    np.savez(tmp_path / "in.npz", **random_inputs(program, 0))
    env = {**os.environ, "PATH": str(tmp_path / "empty"),
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for isa in ("arm-sve", "riscv-rvv"):
        proc = subprocess.run([sys.executable, "-m", "dojo_core", "run", "k.dojo",
                               "--inputs", "in.npz", "--out", "out.npz", "--backend", "c",
                               "--isa", isa], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 1, proc.stderr
        assert "C target refused" in proc.stderr and "is not installed" in proc.stderr
        assert "apt-get install" in proc.stderr and "Traceback" not in proc.stderr
        assert not (tmp_path / "out.npz").exists()


def test_bench_and_measure_refuse_to_time_an_emulator(tmp_path):
    program = parse(PARALLEL)
    with pytest.raises(harness.RunError, match="not a measurement"):
        harness.measure(program, random_inputs(program, 0), target="arm-sve")
    (tmp_path / "k.dojo").write_text(PARALLEL)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "dojo_core", "bench", "k.dojo", "--isa",
                           "riscv-rvv"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "emulator's time is not a measurement" in proc.stderr


@pytest.mark.parametrize("target", CROSS)
def test_cli_run_on_target_matches_interp(tmp_path, target):
    """`run --backend c --isa TARGET` cross-compiles, runs under qemu, writes the outputs."""
    _require(target)
    kernel = ROOT / "dojo_core" / "kernels" / "softmax.dojo"
    steps = ROOT / "dojo_core" / "kernels" / "softmax.steps"
    program = load_kernel("softmax", info("softmax").test_sizes)
    np.savez(tmp_path / "in.npz", **random_inputs(program, 0))
    sizes = [f"{k}={v}" for k, v in info("softmax").test_sizes.items()]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "dojo_core", "run", str(kernel), "--steps",
                           str(steps), "--size", *sizes, "--inputs", "in.npz", "--out",
                           "out.npz", "--backend", "c", "--isa", target], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    want = interp.run(program, random_inputs(program, 0))
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["Y"], want["Y"], rtol=1e-4, atol=1e-6)
