"""The job of an emulated runner: ``python -m runners.emulated kernel.dojo --isa TARGET ...``.

    python -m runners.emulated FILE --isa TARGET [--steps S] [--size N=V ...]
                               [--threads T] [--timeout S]

An emulated runner (``python -m runners --emulate TARGET``) checks correctness, it does not
measure: the kernel after its steps is generated for TARGET (arm-neon, arm-sve, riscv-rvv),
compiled with the target's cross toolchain, run once under qemu-user (``dojo_core.cross``)
on seeded inputs, and compared with the untransformed kernel (the interpreter where it is
cheap, else the untransformed kernel compiled natively here).  It prints one JSON object:

    {"verified", "verified_against", "max_error", "target", "emulated": true, "emulator",
     "compiler", "flags", "threads", "compile_s", "verdict", "median_s": null, ...}

``verdict`` is ``"correct on TARGET (emulated)"`` or ``"incorrect on TARGET (emulated)"``.
There is never a time: ``median_s``, ``min_s``, ``max_s`` and ``gflops`` are null, because an
emulator's time is not a measurement.  Exit 0 when the outputs match, 1 when they differ
(the JSON still printed) or on any refusal (one line on stderr, ``FILE:LINE:COL: message``,
e.g. a target without a cross route here, a compile error, a crash under the emulator).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from dojo_core import DojoError, cross, harness, load_file
from dojo_core.cli import c_errors, internal_error, load_state
from dojo_core.codegen import TARGETS, detect_host_target
from dojo_core.codegen.targets import host_arch, is_foreign
from dojo_core.kernels import random_inputs
from dojo_core.source import parse_size_args

CROSS_TARGETS = ("arm-neon", "arm-sve", "riscv-rvv")


def verdict(target: str, verified: bool) -> str:
    """The one-line verdict of an emulated check."""
    return f"{'correct' if verified else 'incorrect'} on {target} (emulated)"


def emulated_target(name: str):
    """The Target an emulated runner checks for: a foreign target with a working cross
    route here; ValueError (why) otherwise."""
    if name not in TARGETS:
        raise ValueError(f"--emulate {name}: unknown target (emulated: {', '.join(CROSS_TARGETS)})")
    target = TARGETS[name]
    if not is_foreign(target):
        raise ValueError(f"--emulate {name}: {target.arch} is this machine's own ISA "
                         f"({host_arch()}); run a native runner instead")
    try:
        cross.check_route(target)
    except cross.TargetUnavailable as exc:
        raise ValueError(f"--emulate {name}: {exc}") from None
    return target


def emulator_text(argv) -> str:
    """The emulator command without paths: ``qemu-aarch64 -cpu max,sve256=on``."""
    words, skip = [os.path.basename(argv[0])], False
    for arg in argv[1:]:
        if skip or arg == "-L":
            skip = arg == "-L"
            continue
        words.append(arg)
    return " ".join(words)


def check(program, reference, target, threads=None, timeout: float = 300) -> dict:
    """Compile ``program`` for ``target``, run it under the emulator, compare with
    ``reference`` (the untransformed kernel); the result dict of the module docstring."""
    inputs = random_inputs(reference, 0)
    lib = harness.build(program, target)
    outputs = harness.run_c(program, inputs, threads=threads, library=lib, timeout=timeout)
    # the reference runs natively (interpreter or host C), independent of the emulator
    result = harness.verify(program, reference, inputs, target=detect_host_target(),
                            outputs=outputs)
    worst = max(result["errors"].values(), default=0.0)
    return {
        "kernel": program.name, "sizes": program.size_values,
        "median_s": None, "min_s": None, "max_s": None, "gflops": None,
        "verified": result["verified"], "verified_against": result["reference"],
        "max_error": None if worst == float("inf") else worst,
        "target": target.name, "emulated": True,
        "emulator": emulator_text(lib.compiled.emulator),
        "compiler": lib.compiled.compiler, "flags": list(lib.compiled.flags),
        "threads": threads, "compile_s": lib.compiled.seconds, "cached": lib.compiled.cached,
        "verdict": verdict(target.name, result["verified"]),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m runners.emulated", description=__doc__.splitlines()[0])
    p.add_argument("file", metavar="FILE")
    p.add_argument("--isa", required=True, metavar="TARGET")
    p.add_argument("--steps", metavar="S")
    p.add_argument("--size", metavar="N=V", action="extend", nargs="+", default=[])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args(argv)
    try:
        try:
            target = emulated_target(args.isa)
        except ValueError as exc:
            raise DojoError(str(exc), 1, 1, args.file) from None
        program = load_state(args)
        reference = load_file(args.file, parse_size_args(args.size, args.file))
        with c_errors(args.file):
            result = check(program, reference, target, args.threads, args.timeout)
    except DojoError as exc:
        print(str(exc.located(args.file) if exc.filename == "<input>" else exc), file=sys.stderr)
        return 1
    except Exception as exc:                                     # noqa: BLE001 - a bug, reported
        print(internal_error(args.file, exc), file=sys.stderr)
        return 1
    print(json.dumps(result))
    if not result["verified"]:
        print(f"{args.file}:1:1: {result['verdict']}: outputs differ from the untransformed "
              f"kernel (worst error {result['max_error']} x the tolerance)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
