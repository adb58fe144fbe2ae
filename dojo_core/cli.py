"""The command line: ``python -m dojo_core COMMAND ...`` (DESIGN.md section 9).

Commands
    check   FILE [--size N=V ...]                     exit 0 silently if the kernel is valid
    print   FILE [--steps S] [--size ...]             the canonical IR after the steps
    actions FILE [--steps S] [--json] [--size ...]    the legal actions, one step text a line
    apply   FILE --steps S [--size ...]               like print; the steps must all be legal
    run     FILE [--steps S] --inputs IN.npz --out OUT.npz [--backend interp|c] [--size ...]
    codegen FILE [--steps S] --target c|cuda [--isa NAME] [--size ...]   the generated source
    bench   FILE [--steps S] [--size ...] [--threads T] [--min-time S] [--flush] [--baseline] [--isa NAME]
            compile, verify against the untransformed kernel, time; one JSON object
    bench   ... --record [FILE.jsonl]                 also append the measurement to a record store
    library build --target T --out DIR [--records FILE.jsonl | --server URL]
            [--sizes-from SIZES.json] [--kernels a,b] [--no-replay]
            the best verified kernels of T as a C library (dojo_core/library)
    search  FILE --agent NAME --budget N [--seed S] [--server URL --runner NAME ...]
            [--min-time S] [--threads T] [--records F.jsonl] [--history OUT.json] [--size ...]
            run a search agent (dojo_core/agents/cli.py); one JSON object

Guarantees (tests and outside tools rely on them)
  * Exit 0 on success, 1 on any refusal, 2 on a usage error.
  * Every refusal is one line per error on stderr.  Errors in the kernel read
    ``FILE:LINE:COL: message``; errors in a steps file read
    ``S:LINE:1: step 'TEXT': REASON``; errors in .npz files read ``PATH: message``.
    Refusals are told apart by type only: every one is a ``DojoError`` (errors.py), printed
    as its str(); C back-end errors get their kind's prefix (``c_errors``), library
    errors ``library build: ``.
  * Never a traceback: an unexpected exception (a bug) prints
    ``FILE:1:1: internal error: TYPE: message`` and exits 1
    (set DOJO_TRACEBACK=1 to see the traceback as well).
  * ``--size N=V`` (repeatable, or several after one flag) instantiates the
    kernel at other sizes before it is checked; V must be a positive integer
    and N a size of the kernel.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from .errors import DojoError
from .npz import read_inputs, write_outputs
from .source import parse_size_args


def _eprint(text: str) -> None:
    print(text, file=sys.stderr)


# --------------------------------------------------------------------------- arguments

def load_state(args):
    """The checked kernel of args.file at args.size, after the steps of args.steps (if any)."""
    from .source import load_file
    from .steps import read_steps, replay

    program = load_file(args.file, parse_size_args(args.size, args.file))
    if getattr(args, "steps", None):
        program = replay(program, read_steps(args.steps), args.steps)
    return program


def _write(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


# --------------------------------------------------------------------------- commands

def cmd_check(args) -> int:
    load_state(args)
    return 0


def cmd_print(args) -> int:
    from .printer import print_program

    _write(print_program(load_state(args)))
    return 0


def cmd_actions(args) -> int:
    from .transforms import actions

    found = actions(load_state(args))
    if args.json:
        _write(json.dumps([{"text": a.text, "kind": a.kind} for a in found], indent=1))
    else:
        for a in found:
            _write(a.text)
    return 0


def c_errors(filename: str):
    """A context turning C back-end failures into located one-line DojoErrors, named by
    the failure's type (a refused cross target, compile, run, code generation)."""
    from contextlib import contextmanager

    from .codegen import CodegenError
    from .compile import CompileError
    from .cross import TargetUnavailable
    from .harness import RunError
    kinds = ((TargetUnavailable, "C target refused"), (CompileError, "C compile failed"),
             (RunError, "C run failed"), (CodegenError, "C code generation failed"))

    @contextmanager
    def ctx():
        try:
            yield
        except (CompileError, RunError, CodegenError) as exc:
            lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
            kind = next(k for t, k in kinds if isinstance(exc, t))
            raise DojoError(f"{kind}: " + " | ".join(lines[:4]), 1, 1, filename) from None
    return ctx()


def cmd_run(args) -> int:
    program = load_state(args)
    inputs = read_inputs(program, args.inputs)
    if args.backend == "c":
        from .harness import run_c
        with c_errors(args.file):
            outputs = run_c(program, inputs, isa_target(args))
    else:
        from . import interp
        outputs = interp.run(program, inputs)
    write_outputs(program, outputs, args.out)
    return 0


def isa_target(args):
    """The codegen.targets Target named by --isa (default: this machine's)."""
    from .codegen.targets import TARGETS, detect_host_target, get_target
    name = getattr(args, "isa", None)
    if not name:
        return detect_host_target()
    if name not in TARGETS:
        raise DojoError(f"--isa '{name}': unknown target (known: {', '.join(TARGETS)})",
                        1, 1, args.file)
    return get_target(name)


def cmd_codegen(args) -> int:
    program = load_state(args)
    if args.target == "cuda":
        from .codegen.cuda import generate_cuda
        _write(generate_cuda(program))   # a CudaCodegenError is a located DojoError
        return 0
    from .codegen import generate_c
    with c_errors(args.file):
        _write(generate_c(program, isa_target(args)))
    return 0


def _library_info(path: str):
    """The kernels.catalog entry when path is a library kernel file, else None."""
    from pathlib import Path
    from .kernels import info, kernel_path
    p = Path(path)
    try:
        if p.resolve() == kernel_path(p.stem).resolve():
            return info(p.stem)
    except (KeyError, OSError):
        pass
    return None


def cmd_bench(args) -> int:
    from . import harness
    from .kernels import random_inputs
    from .source import load_file

    if args.threads is not None and args.threads < 1:
        raise DojoError(f"--threads {args.threads}: expected a positive integer", 1, 1, args.file)
    program = load_state(args)
    reference = load_file(args.file, parse_size_args(args.size, args.file))
    target = isa_target(args)
    from .codegen.targets import host_arch, is_foreign
    if is_foreign(target):
        raise DojoError(f"--isa {target.name}: {target.arch} code runs only under emulation on "
                        f"this {host_arch()} machine, and an emulator's time is not a "
                        f"measurement (check correctness with `run --backend c --isa "
                        f"{target.name}`)", 1, 1, args.file)
    inputs = random_inputs(reference, 0)
    with c_errors(args.file):
        lib = harness.build(program, target)
        check = harness.verify(program, reference, inputs, target=target, library=lib)
        timing = harness.measure(program, inputs, min_time=args.min_time, threads=args.threads,
                                 flush_cache=args.flush, library=lib, timeout=args.timeout)
    entry = _library_info(args.file)
    sizes = program.size_values
    flops = entry.flops(sizes) if entry is not None and entry.flops is not None else None
    nbytes = entry.bytes(sizes) if entry is not None else None
    med = timing["median_s"]
    result = {
        "kernel": program.name, "sizes": sizes, "steps": args.steps,
        "median_s": med, "min_s": timing["min_s"], "max_s": timing["max_s"],
        "q1_s": timing.get("q1_s"), "q3_s": timing.get("q3_s"), "reps": timing["reps"],
        "gflops": flops / med / 1e9 if flops is not None and med > 0 else None,
        "gbytes_per_s": nbytes / med / 1e9 if nbytes is not None and med > 0 else None,
        "verified": check["verified"], "verified_against": check["reference"],
        "max_error": max(check["errors"].values(), default=0.0),
        "target": target.name, "compiler": lib.compiled.compiler,
        "flags": list(lib.compiled.flags), "threads": timing["threads"],
        "compile_s": lib.compiled.seconds, "cached": lib.compiled.cached,
    }
    if result["max_error"] == float("inf"):
        result["max_error"] = None          # NaN/inf mismatch or wrong shape
    if args.baseline:
        with c_errors(args.file):
            base = harness.measure(reference, inputs, min_time=args.min_time, threads=args.threads,
                                   flush_cache=args.flush, target=target, timeout=args.timeout)
        result["baseline"] = {k: base.get(k) for k in ("median_s", "min_s", "max_s", "q1_s", "q3_s",
                                                        "reps", "threads")}
    if args.record is not None:
        _append_record(args, reference, program, entry, timing, check, lib, target)
    _write(json.dumps(result))
    if not check["verified"]:
        _eprint(f"{args.file}:1:1: outputs differ from the untransformed kernel "
                f"(worst error {result['max_error']} x the tolerance)")
        return 1
    return 0


def _append_record(args, root, program, entry, timing, check, lib, target) -> None:
    """bench --record: the measurement as a records.py record, appended to the store."""
    from .records import RecordStore, bench_record
    from .steps import read_steps
    steps = [text for _, text in read_steps(args.steps)] if args.steps else []
    record = bench_record(root, program, steps, timing, check["verified"], lib.compiled.compiler,
                          lib.compiled.flags, target.name,
                          kernel=entry.name if entry is not None else None)
    store = RecordStore(args.record or None)
    try:
        store.append(record)
    except OSError as exc:
        raise DojoError(f"--record {store.path}: cannot append ({exc.strerror or exc})",
                        1, 1, args.file) from None


def cmd_library(args) -> int:
    from .library import LibraryError
    from .library.cli import library_build
    try:
        return library_build(args, _write, _eprint)
    except LibraryError as exc:
        _eprint(f"library build: {exc}")
        return 1


# --------------------------------------------------------------------------- parser and main

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dojo_core",
        description="PerfDojo: check, transform and run Dojo IR kernels.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name, help_text, func, steps=None):
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("file", metavar="FILE", help="a .dojo kernel file")
        if steps == "optional":
            p.add_argument("--steps", metavar="S", help="a steps file to replay first")
        elif steps == "required":
            p.add_argument("--steps", metavar="S", required=True, help="a steps file to replay")
        p.add_argument("--size", metavar="N=V", action="extend", nargs="+", default=[],
                       help="instantiate the kernel with size N = V (repeatable)")
        p.set_defaults(func=func)
        return p

    command("check", "exit 0 if the kernel is valid, else FILE:LINE:COL: message lines", cmd_check)
    command("print", "the canonical IR after the steps", cmd_print, "optional")
    p = command("actions", "the legal actions, one step text a line", cmd_actions, "optional")
    p.add_argument("--json", action="store_true", help='a JSON array of {"text", "kind"} objects')
    command("apply", "the canonical IR after the steps, which must all be legal", cmd_print, "required")
    p = command("run", "run the kernel once on arrays from an .npz file", cmd_run, "optional")
    p.add_argument("--inputs", metavar="IN.npz", required=True, help="the in and inout arrays")
    p.add_argument("--out", metavar="OUT.npz", required=True, help="where the out and inout arrays go")
    p.add_argument("--backend", choices=("interp", "c"), default="interp")
    p.add_argument("--isa", metavar="NAME", help="C target ISA (default: this machine's)")
    p = command("codegen", "the generated C or CUDA source on stdout", cmd_codegen, "optional")
    p.add_argument("--target", choices=("c", "cuda"), required=True)
    p.add_argument("--isa", metavar="NAME", help="C target ISA (default: this machine's)")
    p = command("bench", "compile, verify against the untransformed kernel and time locally; "
                "one JSON object", cmd_bench, "optional")
    p.add_argument("--threads", metavar="T", type=int, default=None,
                   help="OpenMP threads (default: all)")
    p.add_argument("--min-time", metavar="S", type=float, default=0.2,
                   help="time at least this many seconds (default 0.2)")
    p.add_argument("--flush", action="store_true", help="flush the caches before every call")
    p.add_argument("--baseline", action="store_true",
                   help="also time the untransformed kernel in this run (the result's \"baseline\")")
    p.add_argument("--timeout", metavar="S", type=float, default=300,
                   help="give up a measurement after S seconds (default 300)")
    p.add_argument("--isa", metavar="NAME", help="C target ISA (default: this machine's)")
    p.add_argument("--record", metavar="FILE.jsonl", nargs="?", const="", default=None,
                   help="append the measurement to a record store (default: the default store)")
    from .library.cli import add_library_parser
    add_library_parser(sub, cmd_library)
    from .agents.cli import add_search_parser, cmd_search
    add_search_parser(command, cmd_search)
    return parser


def internal_error(filename: str, exc: BaseException) -> str:
    """The one-line report of an unexpected exception (a bug): FILE:1:1: internal error: ..."""
    detail = " ".join(str(exc).split()) or "(no message)"
    return f"{filename}:1:1: internal error: {type(exc).__name__}: {detail}"


def main(argv=None) -> int:
    """Run one command; the exit status (see the module docstring), never an exception."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:            # usage errors (2) and --help (0)
        return exc.code if isinstance(exc.code, int) else 2
    filename = getattr(args, "file", None) or "<command line>"
    try:
        return args.func(args)
    except DojoError as exc:              # every refusal; an unlocated one prints as it is
        if exc.filename == "<input>":     # raised by a layer that does not know the file
            exc = exc.located(filename)
        _eprint(str(exc))
        return 1
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as exc:                                        # noqa: BLE001 - a bug, reported
        _eprint(internal_error(filename, exc))
        if os.environ.get("DOJO_TRACEBACK"):
            import traceback
            traceback.print_exc()
        return 1


def entry() -> int:
    """The process entry point: main() plus quiet handling of Ctrl-C and closed pipes."""
    try:
        status = main()
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # e.g. `python -m dojo_core actions k.dojo | head -1`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
