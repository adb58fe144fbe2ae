"""One library function's spec: generated from a measured record, a .steps schedule or the
untransformed kernel (``make_spec``), and its error against the numpy reference
(``reference_error``). Used by ``build`` (records) and ``fill`` (schedules, untransformed)."""
from __future__ import annotations

from ..codegen.targets import TARGETS, detect_host_target, is_foreign
from ..kernels import kernel_path
from ..records import machine_fingerprint
from . import emit
from .select import LibraryError


def target_of(record) -> object:
    """The C target a record's code was generated for: its ``target`` name, else guessed
    from its hardware's ISA flags, else this machine's."""
    host = detect_host_target()
    name = (record or {}).get("target")
    if isinstance(name, str) and name in TARGETS:
        return host if host.name == name else TARGETS[name]
    if record and record.get("fingerprint") != machine_fingerprint():
        flags = set((((record.get("hardware") or {}).get("cpu") or {}).get("flags")) or ())
        for flag, tname in (("avx512f", "x86-avx512"), ("avx2", "x86-avx2"), ("sve", "arm-sve"),
                            ("asimd", "arm-neon"), ("v", "riscv-rvv")):
            if flag in flags and tname in TARGETS:
                return TARGETS[tname]
    return host


def make_spec(kernel: str, sizes: dict, record, baseline, target=None, steps=None,
              schedule=None) -> emit.FunctionSpec:
    """The FunctionSpec of a record, of a .steps schedule (``steps`` from the file named by
    ``schedule``) or of the untransformed kernel, generated for ``target`` (default: the
    record's); DojoError or LibraryError when the steps no longer replay or change the
    kernel's arrays.  A foreign target is compiled with its cross route's flags."""
    from ..source import load_file
    from ..steps import replay
    root = load_file(kernel_path(kernel), sizes)
    steps = list(steps if steps is not None else (record or {}).get("steps") or [])
    program = replay(root, steps, f"<{schedule or kernel + ' steps'}>") if steps else root
    public = [(d.kind, d.name, d.dtype, d.dims) for d in root.arrays if d.kind != "temp"]
    if [(d.kind, d.name, d.dtype, d.dims) for d in program.arrays if d.kind != "temp"] != public:
        raise LibraryError(f"{kernel}: the steps change the kernel's arrays")
    target = target if target is not None else target_of(record)
    recorded = [f for f in (record or {}).get("flags") or () if f not in ("-shared", "-fPIC")]
    if is_foreign(target) and target.cross is not None:
        cflags, ldflags = tuple(target.cross.cflags), tuple(target.cross.ldflags)
    else:
        cflags, ldflags = emit.split_flags((record or {}).get("flags"), target)
    fn = emit.FunctionSpec(emit.function_name(kernel, root), kernel, root.size_values, root, program,
                           steps, target, record, baseline, cflags, ldflags, schedule=schedule)
    if recorded and list(cflags + ldflags) != recorded:
        fn.notes.append(f"recorded flags were not plain compiler flags for {target.name} here; "
                        f"the target's are used")
    emit.function_source(fn)          # generates: a CodegenError surfaces here, not in make
    return fn


def reference_error(fn: emit.FunctionSpec) -> float:
    """The worst error (as a multiple of the harness tolerance) of the function's compiled
    code on the test inputs against the numpy reference; run in a child process."""
    from .. import harness
    from . import testprog
    if fn.reference is None:
        fn.reference = testprog.reference_outputs(fn.root, fn.kernel)
    try:
        got = harness.run_c(fn.program, testprog.test_inputs(fn.root, fn.kernel), target=fn.target,
                            timeout=600)
    except (harness.RunError, harness.CompileError):
        return float("inf")
    return max(harness.compare(got, fn.reference, fn.program).values(), default=0.0)
