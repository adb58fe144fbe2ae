"""``build_library``: records in, a library directory out (the CLI and the web app call it).

    build_library(out, target, records, runners=(), sizes_wanted=None, kernels=None,
                  replay=True, store=None, log=None, transfers=None, complete=False) -> manifest

1. ``target`` is resolved to fingerprints (select.resolve_target; unknown: LibraryError).
   An ISA name (``codegen.targets.TARGETS``: x86-avx2, arm-sve, riscv-rvv, ...) is a target
   too: the records measured for that ISA (their ``target``), every function generated for
   it; a foreign ISA is built with its cross toolchain and checked under its emulator
   (``cross``), and one that cannot be built here is refused (LibraryError, the reason).
2. Each (kernel, sizes) with usable records on them gets its fastest record whose steps
   still replay, check and generate C (others are skipped with a note); an untransformed
   measurement is a valid entry (the header says so).
3. ``local`` without records here: with ``replay``, the best sequences of the other
   fingerprints are replayed and measured here (replay.replay_here); the new records are
   appended to ``store`` when given; the transfers go into the manifest (``transfers``).
4. No usable entry at all and not ``complete``: LibraryError("no verified entries ...").
   When the library's code runs here (``local``, this machine's ISA, or a foreign ISA under
   emulation), each candidate also runs here on the test inputs against the numpy
   reference (``reference_error``), and one that differs gives way to the next; when none
   passes, the size is left out (the manifest's ``excluded`` says why).
4b. ``complete``: every library kernel (of ``kernels``) without a function at its default
   sizes gets the target's own ``.steps`` schedule, else the untransformed kernel
   (fill.py); each function's ``source`` says which (``measured``, ``steps``,
   ``untransformed``).
5. ``sizes_wanted`` ({kernel: [sizes, ...]}) adds sizes without a tuned entry as the
   untransformed kernel (``tuned`` and ``measured`` false).
6. The directory is written by emit.write_library.
"""
from __future__ import annotations

from pathlib import Path

from ..codegen.targets import TARGETS, detect_host_target, is_foreign
from ..errors import DojoError
from ..kernels import list_kernels
from ..records import machine_fingerprint
from . import emit
from .fill import fill_function
from .specs import make_spec, reference_error
from .select import (LibraryError, baseline_s, candidates, fingerprints_with_records, full_sizes,
                     resolve_target, size_key)


def isa_of(target: str):
    """The codegen Target a library target names: this machine's for ``local``, the ISA
    for an ISA name, None for a machine (runner, label, fingerprint)."""
    name = target.strip() if isinstance(target, str) else ""
    if name == "local":
        return detect_host_target()
    if name in TARGETS:
        host = detect_host_target()
        return host if host.name == name else TARGETS[name]
    return None


def runs_here(isa) -> bool:
    """Whether code for this ISA runs on this machine: natively, or under its emulator."""
    if is_foreign(isa):
        from ..cross import TargetUnavailable, check_route
        try:
            check_route(isa)
        except TargetUnavailable:
            return False
        return True
    return isa.name == detect_host_target().name


def _resolve(target: str, records, runners):
    """(records, fingerprints, isa, check) of a library target (see the module docstring)."""
    isa = isa_of(target)
    if isa is not None and target.strip() != "local":
        if is_foreign(isa):
            from ..cross import TargetUnavailable, check_route
            try:
                check_route(isa)
            except TargetUnavailable as exc:
                raise LibraryError(f"--target {isa.name}: {exc}") from None
        records = [r for r in records if r.get("target") == isa.name]
        return records, fingerprints_with_records(records), isa, runs_here(isa)
    fingerprints = resolve_target(target, records, runners)
    return records, fingerprints, isa, fingerprints == {machine_fingerprint()}


def build_library(out, target: str, records, runners=(), sizes_wanted=None, kernels=None,
                  replay: bool = True, store=None, log=None, transfers=None,
                  complete: bool = False) -> dict:
    """See the module docstring (``transfers``: of a replay done elsewhere, for the manifest)."""
    from ..codegen import CodegenError
    records = [r for r in records if isinstance(r, dict)]
    if kernels is not None:
        unknown = sorted(set(kernels) - set(list_kernels()))
        if unknown:
            raise LibraryError(f"unknown kernel(s): {', '.join(unknown)}")
    records, fingerprints, isa, here = _resolve(target, records, runners)
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
    if not chosen and not complete:
        scope = f" of kernel(s) {', '.join(sorted(kernels))}" if kernels else ""
        raise LibraryError(f"no verified entries{scope} for target '{target.strip()}' "
                           f"(fingerprint {', '.join(sorted(fingerprints)) or 'none'}); measure with "
                           f"`bench ... --record` or benchmark jobs first")
    functions, excluded = {}, []
    for (kernel, skey), rows in sorted(chosen.items()):
        baseline, failed = baseline_s(rows), None
        for record in rows:
            try:
                fn = make_spec(kernel, dict(skey), record, baseline,
                               target=isa if isa is not None and target.strip() != "local" else None)
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
    fill_isa = isa if isa is not None else next((fn.target for fn in functions.values()), None)
    if complete:
        _complete(functions, excluded, kernels, fill_isa, here, log)
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
                functions[key] = make_spec(kernel, full, None, None, target=fill_isa)
            except DojoError as exc:
                raise LibraryError(f"--sizes-from: {kernel} {sizes}: {exc.message}") from None
    if not functions:
        raise LibraryError(f"no entry for target '{target.strip()}' replays with this engine "
                           f"and matches the numpy reference")
    return emit.write_library(Path(out), list(functions.values()), target.strip(), fingerprints, extra)


def _complete(functions: dict, excluded: list, kernels, isa, check: bool, log) -> None:
    """Every library kernel (of ``kernels``) without a function at its default sizes gets
    one (fill.fill_function); LibraryError when the target's ISA is unknown."""
    from ..kernels import load_kernel
    missing = []
    for kernel in sorted(kernels if kernels is not None else list_kernels()):
        key = (kernel, size_key(load_kernel(kernel).size_values))
        if key not in functions and not any(e["kernel"] == kernel and e["sizes"] == dict(key[1])
                                            for e in excluded):
            missing.append((kernel, key))
    if missing and isa is None:
        raise LibraryError("the target's ISA is unknown (no record says it): the kernels without "
                           "measurements cannot be generated for it; build with --measured-only")
    for kernel, key in missing:
        fn, gone = fill_function(kernel, isa, check, log)
        if fn is not None:
            functions[key] = fn
        else:
            excluded.append(gone)


def _chosen(records, fingerprints, kernels) -> dict:
    found = candidates(records, fingerprints)
    return {k: v for k, v in found.items() if kernels is None or k[0] in kernels}
