"""``build_library``: records in, a library directory out (the CLI and the web app call it).

    build_library(out, target, records, runners=(), sizes_wanted=None, kernels=None,
                  replay=True, store=None, log=None, transfers=None) -> manifest dict

1. ``target`` is resolved to fingerprints (select.resolve_target; unknown: LibraryError).
2. Each (kernel, sizes) with usable records on them gets its fastest record whose steps
   still replay, check and generate C (others are skipped with a note); an untransformed
   measurement is a valid entry (the header says so).
3. ``local`` without records here: with ``replay``, the best sequences of the other
   fingerprints are replayed and measured here (replay.replay_here); the new records are
   appended to ``store`` when given; the transfers go into the manifest (``transfers``).
4. No usable entry at all: LibraryError("no verified entries ...").  When the library is
   for this machine, each candidate also runs here on the test inputs against the numpy
   reference (``reference_error``), and one that differs gives way to the next; when none
   passes, the size is left out (the manifest's ``excluded`` says why).
5. ``sizes_wanted`` ({kernel: [sizes, ...]}) adds sizes without a tuned entry as the
   untransformed kernel (``tuned`` and ``measured`` false).
6. The directory is written by emit.write_library.
"""
from __future__ import annotations

from pathlib import Path

from ..codegen.targets import TARGETS, detect_host_target
from ..errors import DojoError
from ..kernels import kernel_path, list_kernels
from ..records import machine_fingerprint
from . import emit
from .select import LibraryError, baseline_s, candidates, full_sizes, resolve_target, size_key


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


def _spec(kernel: str, sizes: dict, record, baseline) -> emit.FunctionSpec:
    """The FunctionSpec of a record (or of the untransformed kernel); DojoError or
    LibraryError when its steps no longer replay or its arrays changed."""
    from ..source import load_file
    from ..steps import replay
    root = load_file(kernel_path(kernel), sizes)
    steps = list((record or {}).get("steps") or [])
    program = replay(root, steps, f"<{kernel} steps>") if steps else root
    public = [(d.kind, d.name, d.dtype, d.dims) for d in root.arrays if d.kind != "temp"]
    if [(d.kind, d.name, d.dtype, d.dims) for d in program.arrays if d.kind != "temp"] != public:
        raise LibraryError(f"{kernel}: the steps change the kernel's arrays")
    target = target_of(record)
    cflags, ldflags = emit.split_flags((record or {}).get("flags"), target)
    fn = emit.FunctionSpec(emit.function_name(kernel, root), kernel, root.size_values, root, program,
                           steps, target, record, baseline, cflags, ldflags)
    recorded = [f for f in (record or {}).get("flags") or () if f not in ("-shared", "-fPIC")]
    if recorded and list(cflags + ldflags) != recorded:
        fn.notes.append("recorded flags were not plain compiler flags; the target's are used")
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
    return max(harness.compare(got, fn.reference, fn.root).values(), default=0.0)


def build_library(out, target: str, records, runners=(), sizes_wanted=None, kernels=None,
                  replay: bool = True, store=None, log=None, transfers=None) -> dict:
    """See the module docstring (``transfers``: of a replay done elsewhere, for the manifest)."""
    from ..codegen import CodegenError
    records = [r for r in records if isinstance(r, dict)]
    if kernels is not None:
        unknown = sorted(set(kernels) - set(list_kernels()))
        if unknown:
            raise LibraryError(f"unknown kernel(s): {', '.join(unknown)}")
    fingerprints = resolve_target(target, records, runners)
    chosen = _chosen(records, fingerprints, kernels)
    extra = {"transfers": transfers} if transfers is not None else {}
    if not chosen and target.strip() == "local" and replay:
        from .replay import replay_here
        new, transfers = replay_here(records, kernels=kernels, log=log)
        for r in new:
            if store is not None:
                store.append(r)
        extra["transfers"] = transfers
        chosen = _chosen(records + new, fingerprints, kernels)
    if not chosen:
        scope = f" of kernel(s) {', '.join(sorted(kernels))}" if kernels else ""
        raise LibraryError(f"no verified entries{scope} for target '{target.strip()}' "
                           f"(fingerprint {', '.join(sorted(fingerprints))}); measure with "
                           f"`bench ... --record` or benchmark jobs first")
    here = fingerprints == {machine_fingerprint()}
    functions, excluded = {}, []
    for (kernel, skey), rows in sorted(chosen.items()):
        baseline, failed = baseline_s(rows), None
        for record in rows:
            try:
                fn = _spec(kernel, dict(skey), record, baseline)
            except (DojoError, LibraryError, CodegenError) as exc:
                if log:
                    log(f"skipped a record of {kernel} {dict(skey)}: {exc}")
                continue
            if here:
                error = reference_error(fn)
                if not error <= 1.0:
                    fn.notes.append(f"differs from the numpy reference ({error:.3g} x the tolerance)")
                    if log:
                        log(f"skipped a record of {kernel} {dict(skey)} ({len(fn.steps)} steps): "
                            f"its outputs differ from the numpy reference ({error:.3g} x the tolerance)")
                    failed = failed or fn
                    continue
            functions[(kernel, skey)] = fn
            break
        else:
            if failed is not None:          # nothing passes: left out, never shipped wrong
                excluded.append({"kernel": kernel, "sizes": failed.sizes, "reason": failed.notes[-1]})
    if excluded:
        extra["excluded"] = excluded
    for kernel, size_list in (sizes_wanted or {}).items():
        if kernels is not None and kernel not in kernels:
            continue
        for sizes in size_list:
            full = full_sizes(kernel, sizes)
            if full is None:
                raise LibraryError(f"--sizes-from: {kernel} {sizes}: not a library kernel and its sizes")
            key = (kernel, size_key(full))
            if key in functions or any(e["kernel"] == kernel and e["sizes"] == full for e in excluded):
                continue
            try:
                functions[key] = _spec(kernel, full, None, None)
            except DojoError as exc:
                raise LibraryError(f"--sizes-from: {kernel} {sizes}: {exc.message}") from None
    if not functions:
        raise LibraryError(f"no entry for target '{target.strip()}' replays with this engine "
                           f"and matches the numpy reference")
    return emit.write_library(Path(out), list(functions.values()), target.strip(), fingerprints, extra)


def _chosen(records, fingerprints, kernels) -> dict:
    found = candidates(records, fingerprints)
    return {k: v for k, v in found.items() if kernels is None or k[0] in kernels}
