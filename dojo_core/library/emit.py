"""Writing a library directory from the chosen functions.

    DIR/perfdojo.h              one header: every function with its documented signature
    DIR/src/NAME.c              the generated C of each function (one translation unit each)
    DIR/src/perfdojo_common.c   perfdojo_set_threads (OpenMP thread count)
    DIR/test/perfdojo_test.c    the C test program (testprog.py)
    DIR/Makefile, CMakeLists.txt  static + shared library + test program (buildfiles.py)
    DIR/provenance/NAME.json    where each function comes from (``source``: ``measured``,
                                ``steps`` (a library .steps file, not measured) or
                                ``untransformed``; history, steps, runner, toolchain, time)
    DIR/library.json            the manifest the Python view reads (pyview.py)

Guarantees: function names are ``perfdojo_KERNEL_S1xS2...`` (sizes in the kernel's header
order), unique per kernel and size; every public function takes one pointer per ``in``,
``inout`` and ``out`` array of the untransformed kernel, in declaration order (scalars are
pointers to one element); a kernel with ``temp`` arrays also exports ``NAME_scratch``,
which takes them too (in declaration order), while ``NAME`` allocates them itself.  The
C of a tuned function is exactly what was measured (``generate_c`` of the replayed steps for
the record's target), renamed.  A library for a foreign ISA (``Target.cross``) is built with
the target's cross toolchain and ``make check`` runs its test program under the emulator.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .. import ir
from ..codegen import generate_c
from ..codegen.c_expr import CTYPES
from ..kernels import array_shape, info
from . import buildfiles, testprog

FORMAT = "perfdojo-library"
VERSION = 1
_SAFE_FLAG = re.compile(r"[-A-Za-z0-9_=.,+/:]+\Z")


@dataclass
class FunctionSpec:
    """One exported function: a kernel at some sizes, tuned (a record) or untransformed."""
    name: str
    kernel: str
    sizes: dict
    root: ir.Program            # the untransformed kernel at these sizes
    program: ir.Program         # after the steps (== root for a fallback)
    steps: list
    target: object              # codegen.targets.Target
    record: Optional[dict] = None         # the measurement; None: untransformed fallback
    baseline_s: Optional[float] = None    # the untransformed kernel's median, same machines
    cflags: tuple = ()
    ldflags: tuple = ()
    notes: list = field(default_factory=list)
    reference: Optional[dict] = None      # numpy reference outputs on the test inputs, if computed
    schedule: Optional[str] = None        # the .steps file the steps come from (not measured)

    @property
    def tuned(self) -> bool:
        """Transformed by a measured record or by the library's .steps file for the target."""
        return bool(self.steps) and (self.record is not None or self.schedule is not None)

    @property
    def source(self) -> str:
        """Where the function comes from: ``measured`` (a record), ``steps`` (the target's
        .steps file of the kernel library, not measured) or ``untransformed``."""
        if self.record is not None:
            return "measured"
        return "steps" if self.schedule and self.steps else "untransformed"

    @property
    def speedup(self) -> Optional[float]:
        med = (self.record or {}).get("median_s")
        return self.baseline_s / med if self.baseline_s and med else None

    @property
    def scratch(self) -> list:
        return [d for d in self.program.arrays if d.kind == "temp"]


def function_name(kernel: str, root: ir.Program) -> str:
    return f"perfdojo_{kernel}_" + "x".join(str(v) for _, v in root.sizes)


def split_flags(flags, target) -> tuple:
    """(cflags, ldflags) of recorded flags; the target's when none are recorded or any is
    not a plain compiler flag (records from a server are never pasted into a Makefile)."""
    flags = [f for f in (flags or ()) if f not in ("-shared", "-fPIC")]
    if not flags or not all(isinstance(f, str) and _SAFE_FLAG.match(f) for f in flags):
        return tuple(target.cflags), tuple(target.ldflags)
    ld = tuple(f for f in flags if f.startswith(("-l", "-L", "-Wl,")))
    return tuple(f for f in flags if f not in ld), ld


def _params(decls) -> str:
    out = []
    for d in decls:
        const = "const " if d.kind == "in" else ""
        out.append(f"{const}{CTYPES[d.dtype]} *PERFDOJO_RESTRICT {d.name}")
    return ", ".join(out) or "void"


def _shape(program, decl) -> str:
    shape = array_shape(program, decl)
    return f"{decl.dtype}[{', '.join(map(str, shape))}]" if shape else f"{decl.dtype} (one element)"


def public_arrays(fn: FunctionSpec) -> list:
    return [d for d in fn.root.arrays if d.kind != "temp"]


def function_source(fn: FunctionSpec) -> str:
    """The translation unit of one function (and its scratch-allocating wrapper)."""
    inner = f"{fn.name}_scratch" if fn.scratch else fn.name
    text = '#include "perfdojo.h"   /* the prototypes, checked against the definitions */\n' + \
        generate_c(fn.program, fn.target, function_name=inner)
    if not fn.scratch:
        return text
    lines = ["", "#include <stdlib.h>", "",
             f"void {fn.name}({_params(public_arrays(fn)).replace('PERFDOJO_RESTRICT', 'restrict')})",
             "{"]
    args = []
    for d in fn.program.arrays:
        if d.kind == "temp":
            shape = array_shape(fn.program, d)
            count = 1
            for n in shape:
                count *= n
            ctype = CTYPES[d.dtype]
            lines.append(f"  {ctype} *{d.name} = aligned_alloc(64, ({count} * sizeof({ctype}) + 63) & ~(size_t)63);")
            lines.append(f"  if (!{d.name}) __builtin_trap();")
        args.append(d.name)
    lines.append(f"  {inner}({', '.join(args)});")
    lines += [f"  free({d.name});" for d in fn.scratch]
    lines += ["}", ""]
    return text + "\n".join(lines)


def _doc(fn: FunctionSpec) -> list:
    entry = info(fn.kernel)
    sizes = ", ".join(f"{k}={v}" for k, v in fn.root.sizes)
    lines = [f"/* {fn.name}: {entry.title} ({fn.kernel} at {sizes})."]
    for d in public_arrays(fn):
        lines.append(f" *   {d.kind:5s} {d.name}: {_shape(fn.root, d)}")
    r = fn.record
    if fn.source == "steps":
        lines.append(f" * Schedule: {fn.schedule} ({len(fn.steps)} steps), the kernel library's known "
                     f"schedule for {fn.target.name}; not measured for this library.")
    elif fn.tuned:
        med = f"{r['median_s'] * 1e3:.4g} ms"
        sp = f", {fn.speedup:.2f}x the untransformed kernel" if fn.speedup else ""
        lines.append(f" * Tuned: {len(fn.steps)} steps, measured {med}{sp} on {r.get('runner') or '?'} "
                     f"({r.get('fingerprint') or '?'}).")
    elif r is not None:
        lines.append(f" * Untransformed kernel (measured {r['median_s'] * 1e3:.4g} ms on "
                     f"{r.get('runner') or '?'}; no faster verified schedule).")
    else:
        lines.append(" * Untransformed kernel: no tuned kernel for these sizes on this target.")
    if fn.scratch:
        names = ", ".join(f"{d.name}: {_shape(fn.program, d)}" for d in fn.scratch)
        lines.append(f" * Allocates its scratch ({names}); {fn.name}_scratch takes it instead.")
    lines.append(f" * Provenance: provenance/{fn.name}.json */")
    return lines


def header(functions, target_label: str) -> str:
    out = ["/* perfdojo.h: the PerfDojo kernel library for target " + target_label + ".",
           " * Arrays are dense, row-major, 64-byte alignment recommended; pointers must not alias",
           " * (restrict); scalars are pointers to one element.  Generated: do not edit. */",
           "#ifndef PERFDOJO_H", "#define PERFDOJO_H", "", "#include <stdint.h>", "",
           "#ifdef __cplusplus", "#define PERFDOJO_RESTRICT __restrict", 'extern "C" {', "#else",
           "#define PERFDOJO_RESTRICT restrict", "#endif", "",
           "/* Sets the OpenMP thread count of the parallel kernels (n > 0); returns the count in use. */",
           "int perfdojo_set_threads(int n);", ""]
    for fn in functions:
        out += _doc(fn)
        out.append(f"void {fn.name}({_params(public_arrays(fn))});")
        if fn.scratch:
            out.append(f"void {fn.name}_scratch({_params(fn.program.arrays)});")
        out.append("")
    out += ["#ifdef __cplusplus", "}", "#endif", "#endif", ""]
    return "\n".join(out)


COMMON_C = """/* PerfDojo library: shared entry points. */
#ifdef _OPENMP
#include <omp.h>
#endif

int perfdojo_set_threads(int n)
{
#ifdef _OPENMP
  if (n > 0) omp_set_num_threads(n);
  return omp_get_max_threads();
#else
  (void)n;
  return 1;
#endif
}
"""


def provenance(fn: FunctionSpec) -> dict:
    r = fn.record or {}
    return {
        "function": fn.name, "kernel": fn.kernel, "sizes": fn.root.size_values,
        "source": fn.source, "schedule": fn.schedule,
        "tuned": fn.tuned, "measured": fn.record is not None, "steps": list(fn.steps),
        "history_url": r.get("history_url"), "runner": r.get("runner"),
        "fingerprint": r.get("fingerprint"), "hardware": r.get("hardware"),
        "compiler": r.get("compiler"), "flags": r.get("flags"), "threads": r.get("threads"),
        "median_s": r.get("median_s"), "min_s": r.get("min_s"), "max_s": r.get("max_s"),
        "baseline_median_s": fn.baseline_s, "speedup": fn.speedup, "measured_at": r.get("time"),
        "agent": r.get("agent"), "job": r.get("job"), "replayed_from": r.get("replayed_from"),
        "target": fn.target.name, "build_cflags": list(fn.cflags), "build_ldflags": list(fn.ldflags),
        "notes": list(fn.notes),
    }


def manifest_entry(fn: FunctionSpec) -> dict:
    def arrays(program, decls):
        return [{"name": d.name, "kind": d.kind, "dtype": d.dtype,
                 "shape": list(array_shape(program, d))} for d in decls]
    return {"name": fn.name, "kernel": fn.kernel, "sizes": fn.root.size_values,
            "source": fn.source, "schedule": fn.schedule,
            "tuned": fn.tuned, "measured": fn.record is not None, "steps": len(fn.steps),
            "median_s": (fn.record or {}).get("median_s"), "speedup": fn.speedup,
            "arrays": arrays(fn.root, public_arrays(fn)),
            "scratch": arrays(fn.program, fn.scratch),
            "provenance": f"provenance/{fn.name}.json"}


def write_library(out: Path, functions: list, target_label: str, fingerprints, extra=None) -> dict:
    """Write every file of the library into ``out`` (created; existing files replaced);
    the manifest (also written as library.json)."""
    out = Path(out)
    for sub in ("src", "test", "provenance"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    functions = sorted(functions, key=lambda f: f.name)
    for fn in functions:
        (out / "src" / f"{fn.name}.c").write_text(function_source(fn))
        (out / "provenance" / f"{fn.name}.json").write_text(json.dumps(provenance(fn), indent=1) + "\n")
    (out / "src" / "perfdojo_common.c").write_text(COMMON_C)
    isa = buildfiles.library_isa(functions)
    shim = out / "src" / "perfdojo_kmpc.c"
    if isa is not None and isa.cross is not None and isa.cross.openmp == "kmpc-shim":
        from ..cross import KMPC_SHIM
        shim.write_text(KMPC_SHIM)
    elif shim.exists():
        shim.unlink()
    (out / "perfdojo.h").write_text(header(functions, target_label))
    (out / "test" / "perfdojo_test.c").write_text(testprog.c_test_program(functions))
    (out / "Makefile").write_text(buildfiles.makefile(functions))
    (out / "CMakeLists.txt").write_text(buildfiles.cmakelists(functions))
    (out / "README.md").write_text(buildfiles.readme(functions, target_label))
    manifest = {"format": FORMAT, "version": VERSION, "target": target_label,
                "fingerprints": sorted(fingerprints), "shared_library": "libperfdojo.so",
                "isa": isa.name if isa is not None else None,
                "arch": isa.arch if isa is not None else None,
                "cross": buildfiles.cross_info(isa),
                "functions": [manifest_entry(fn) for fn in functions], **(extra or {})}
    (out / "library.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest
