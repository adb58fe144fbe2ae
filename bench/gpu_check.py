"""Build the CUDA of library kernels and GPU schedules, run it, compare with the interpreter.

    python bench/gpu_check.py                  # on a machine with a GPU and nvcc
    python bench/gpu_check.py --emulate        # anywhere with g++: the CPU emulation
    python bench/gpu_check.py --kernel matmul --schedules-only --keep /tmp/cuda_check
    python bench/gpu_check.py --emulate --file k.dojo --steps k.steps --size N=40

Cases: every library kernel untransformed (the single-thread fallback) at its test and alt
sizes, and every GPU schedule ``tests/core/cuda_schedules/KERNEL.steps`` at each size its
``# sizes: N=.. M=..`` lines name (and, on a GPU, at the kernel's default sizes, timed).
For each case: ``dojo_core.codegen.cuda.generate_cuda`` writes ``KERNEL.cu``; the inputs are
``kernels.random_inputs(program, 0)``, written as raw ``NAME.bin`` files for the standalone
binary and as an .npz for ``python -m dojo_core run ... --backend interp``, which computes
the expected outputs of the same (transformed) program; the binary
(``nvcc -O3 -arch=ARCH -DDOJO_STANDALONE``) runs with ``--in``/``--out`` and its outputs are
compared with a tolerance per dtype (f32: rtol 2e-4, atol 2e-5; bf16: 1e-2; f64: 1e-9).

``--emulate`` builds with g++ against ``bench/cuda_emu/cuda_runtime.h`` instead (kernel
launches rewritten to ``DOJO_EMU_LAUNCH``) and runs every case three times, with the threads
of each block scheduled in reverse, forward and shuffled order between barriers, so that a
missing ``__syncthreads()`` changes the results. It checks the generator's logic, not nvcc
or a GPU (see the header's comment). Default sizes are skipped in emulation (too slow).

Prints one line per case and run (``ok``/``FAIL``, the largest error, the median time of
``--reps`` runs) and a JSON summary with ``--json``; exits 1 if any case fails.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dojo_core.codegen.cuda import generate_cuda  # noqa: E402
from dojo_core.kernels import (info, kernel_path, list_kernels, load_kernel,  # noqa: E402
                               random_inputs)
from dojo_core.source import load_file  # noqa: E402
from dojo_core.steps import read_steps, replay  # noqa: E402

SCHEDULES = ROOT / "tests" / "core" / "cuda_schedules"
EMU_DIR = ROOT / "bench" / "cuda_emu"
EMU_ORDERS = ("reverse", "forward", "shuffle")
TOLERANCE = {"f32": (2e-4, 2e-5), "f64": (1e-9, 1e-12), "bf16": (1e-2, 1e-2),
             "i32": (0, 0), "i64": (0, 0), "i8": (0, 0)}


@dataclass
class Case:
    kernel: str
    steps: Path | None
    sizes: dict
    label: str
    verify: bool = True
    source: Path | None = None       # a .dojo file; None: the library kernel's
    results: list = field(default_factory=list)

    @property
    def path(self) -> Path:
        return self.source or kernel_path(self.kernel)

    @property
    def name(self) -> str:
        sched = self.steps.stem if self.steps else "untransformed"
        return f"{self.kernel}[{sched}, {self.label}]"

    @property
    def slug(self) -> str:
        s = "_".join(f"{k}{v}" for k, v in self.sizes.items()) or "default"
        return f"{self.kernel}_{self.steps.stem if self.steps else 'plain'}_{s}"


def schedule_sizes(path: Path) -> list:
    """The size sets of a schedule's `# sizes: N=64 M=96` lines."""
    out = []
    for line in path.read_text().splitlines():
        m = re.match(r"\s*#\s*sizes:\s*(.*)", line)
        if m:
            out.append({k: int(v) for k, v in (w.split("=") for w in m.group(1).split())})
    return out


def cases(kernels=None, schedules_only=False, default_sizes=True) -> list:
    found = []
    names = kernels or list_kernels()
    if not schedules_only:
        for name in names:
            entry = info(name)
            for label, sizes in (("test", entry.test_sizes), ("alt", entry.alt_sizes)):
                found.append(Case(name, None, dict(sizes), f"{label} sizes"))
    for path in sorted(SCHEDULES.glob("*.steps")):
        if path.stem not in names:
            continue
        for sizes in schedule_sizes(path):
            found.append(Case(path.stem, path, sizes, " ".join(f"{k}={v}" for k, v in sizes.items())))
        if default_sizes:
            found.append(Case(path.stem, path, {}, "default sizes"))
    return found


def program_of(case: Case):
    if case.source:
        program = load_file(case.source, case.sizes or None)
    else:
        program = load_kernel(case.kernel, case.sizes or None)
    if case.steps:
        program = replay(program, read_steps(case.steps), str(case.steps))
    return program


def emulation_source(src: str) -> str:
    """The generated source with `k<<<g, b>>>(args);` as `DOJO_EMU_LAUNCH(g, b, k(args));`."""
    def launch(m):
        config, depth, cut = m.group(2), 0, None
        for i, ch in enumerate(config):
            depth += ch == "("
            depth -= ch == ")"
            if ch == "," and depth == 0:
                cut = i
                break
        grid, block = config[:cut].strip(), config[cut + 1:].strip()
        return f"DOJO_EMU_LAUNCH({grid}, {block}, {m.group(1)}({m.group(3)}));"
    return re.sub(r"(\w+)<<<(.*?)>>>\((.*?)\);", launch, src)


def prepare(case: Case, work: Path):
    """Write the source, inputs and (if verifying) expected outputs of a case."""
    d = work / case.slug
    (d / "in").mkdir(parents=True, exist_ok=True)
    (d / "out").mkdir(exist_ok=True)
    program = program_of(case)
    src = generate_cuda(program)
    (d / "kernel.cu").write_text(src)
    (d / "emu.cu").write_text(emulation_source(src))
    inputs = random_inputs(program, 0)
    for name, value in inputs.items():
        np.ascontiguousarray(value).tofile(d / "in" / f"{name}.bin")
    np.savez(d / "inputs.npz", **inputs)
    if case.verify:
        cmd = [sys.executable, "-m", "dojo_core", "run", str(case.path),
               "--inputs", str(d / "inputs.npz"), "--out", str(d / "expected.npz"),
               "--backend", "interp"]
        if case.steps:
            cmd += ["--steps", str(case.steps)]
        for k, v in case.sizes.items():
            cmd += ["--size", f"{k}={v}"]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(f"interpreter failed: {r.stderr.strip()}")
    return d, program


def build(d: Path, emulate: bool, arch: str) -> None:
    if emulate:
        cmd = ["g++", "-std=c++17", "-O1", "-w", "-DDOJO_STANDALONE", f"-I{EMU_DIR}", "-x", "c++",
               str(d / "emu.cu"), "-o", str(d / "emu"), "-lm"]
    else:
        cmd = ["nvcc", "-O3", f"-arch={arch}", "-DDOJO_STANDALONE", str(d / "kernel.cu"),
               "-o", str(d / "gpu")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"build failed: {' '.join(cmd)}\n{r.stderr.strip()}")


def run_case(case: Case, d: Path, program, emulate: bool, reps: int, order: str | None):
    exe = d / ("emu" if emulate else "gpu")
    out = d / "out"
    for f in out.glob("*.bin"):
        f.unlink()
    env = dict(os.environ)
    if order:
        env["DOJO_EMU_ORDER"], env["DOJO_EMU_SEED"] = order, "7"
    r = subprocess.run([str(exe), "--reps", str(reps), "--in", str(d / "in"), "--out", str(out)],
                       capture_output=True, text=True, timeout=900, env=env)
    tag = f"{case.name}{f' ({order} order)' if order else ''}"
    if r.returncode:
        return {"case": tag, "ok": False, "error": (r.stderr or r.stdout).strip()[-2000:]}
    report = json.loads(r.stdout.strip().splitlines()[-1])
    result = {"case": tag, "ok": True, "median_ms": report["median_ms"], "max_error": 0.0}
    if not case.verify:
        return result
    expected = np.load(d / "expected.npz")
    for decl in program.arrays:
        if decl.kind not in ("out", "inout"):
            continue
        want = expected[decl.name]
        got = np.fromfile(out / f"{decl.name}.bin", dtype=want.dtype).reshape(want.shape)
        rtol, atol = TOLERANCE[decl.dtype]
        err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0.0))
        result["max_error"] = max(result["max_error"], err)
        if not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            bad = np.argwhere(~np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
            first = tuple(int(x) for x in bad[0])
            result["ok"] = False
            result["error"] = (f"{decl.name}: {len(bad)} of {want.size} elements differ; first at "
                               f"{first}: got {got[first]!r}, expected {want[first]!r}")
    return result


def check(case: Case, work: Path, emulate: bool, arch: str, reps: int) -> list:
    try:
        d, program = prepare(case, work)
        build(d, emulate, arch)
    except Exception as exc:       # reported, not raised: the other cases still run
        return [{"case": case.name, "ok": False, "error": str(exc)}]
    orders = EMU_ORDERS if emulate else (None,)
    out = []
    for o in orders:
        try:
            out.append(run_case(case, d, program, emulate, reps, o))
        except Exception as exc:   # a timeout, unreadable output: reported like a mismatch
            out.append({"case": f"{case.name} ({o} order)" if o else case.name, "ok": False,
                        "error": f"{type(exc).__name__}: {exc}"})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--emulate", action="store_true", help="CPU emulation (g++), no GPU needed")
    ap.add_argument("--kernel", action="append", help="only these kernels (repeatable)")
    ap.add_argument("--file", help="check this .dojo file instead (with --steps, --size)")
    ap.add_argument("--steps", help="steps file for --file")
    ap.add_argument("--size", action="append", default=[], help="N=V for --file (repeatable)")
    ap.add_argument("--schedules-only", action="store_true", help="skip the untransformed kernels")
    ap.add_argument("--arch", default=os.environ.get("DOJO_CUDA_ARCH", "sm_90"))
    ap.add_argument("--reps", type=int, default=None, help="timed runs (default 20; 1 emulated)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    args = ap.parse_args(argv)
    tool = "g++" if args.emulate else "nvcc"
    if shutil.which(tool) is None:
        print(f"{tool} is not on PATH", file=sys.stderr)
        return 2
    reps = args.reps if args.reps is not None else (1 if args.emulate else 20)
    if args.file:
        sizes = {k: int(v) for k, v in (w.split("=") for w in args.size)}
        path = Path(args.file).resolve()
        todo = [Case(path.stem, Path(args.steps).resolve() if args.steps else None, sizes,
                     " ".join(args.size) or "its sizes", source=path)]
    else:
        todo = cases(args.kernel, args.schedules_only, default_sizes=not args.emulate)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="dojo_cuda_check_"))
    work.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = [r for rs in pool.map(lambda c: check(c, work, args.emulate, args.arch, reps),
                                         todo) for r in rs]
    failed = 0
    for r in results:
        if r["ok"]:
            print(f"ok    {r['case']}: max error {r.get('max_error', 0):.3g}, "
                  f"median {r.get('median_ms', 0):.4f} ms")
        else:
            failed += 1
            print(f"FAIL  {r['case']}: {r['error']}")
    print(f"{len(results) - failed} passed, {failed} failed ({'emulated' if args.emulate else 'GPU'})")
    if args.json:
        print(json.dumps({"mode": "emulate" if args.emulate else "gpu", "results": results}))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
