"""The Python view of a built library: its functions called on numpy arrays.

    lib = dojo_core.library.load(DIR)          # builds libperfdojo.so with make if missing
    C = lib.perfdojo_matmul_512x512x512(A, B)  # one function, by name
    C = lib.matmul(A, B)                       # the function whose shapes match the inputs
    lib.perfdojo_matmul_512x512x512(A, B, C=out)   # outputs written in place
    lib.set_threads(4)

Guarantees:

* Inputs (``in`` and ``inout`` arrays, positional in declaration order or by name) must be
  numpy arrays of exactly the declared shape and dtype, C-contiguous and writeable for
  ``inout``; a scalar may be a Python number.  Anything else raises ``ArgumentError`` (a
  ``TypeError`` and a ``ValueError``) naming the function, the argument, what it got and
  what it expected; nothing is converted silently.
* Outputs are fresh 64-byte aligned arrays unless given by name (then checked like inputs
  and written in place).  The result is the one output array, or a tuple of the ``out`` and
  ``inout`` arrays in declaration order.
* ``lib.KERNEL(...)`` picks the function of that kernel whose input shapes equal the
  arguments'; none: ``ArgumentError`` listing the shapes the library has.
* A directory that is not a library, or a library that cannot be built or loaded (one
  cross-compiled for another ISA among them), raises ``LibraryError`` with the reason.
"""
from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path

import numpy as np

from ..harness import aligned_empty
from ..kernels import NUMPY_DTYPES
from .emit import FORMAT
from .select import LibraryError


class ArgumentError(TypeError, ValueError):
    """A call with the wrong arguments; str() says which and why."""


class Function:
    """One exported function of a loaded library."""

    def __init__(self, entry: dict, dll):
        self.name, self.kernel = entry["name"], entry["kernel"]
        self.sizes, self.entry = dict(entry["sizes"]), entry
        self.arrays = [dict(a, shape=tuple(a["shape"])) for a in entry["arrays"]]
        self.inputs = [a for a in self.arrays if a["kind"] in ("in", "inout")]
        self.outputs = [a for a in self.arrays if a["kind"] in ("out", "inout")]
        self._c = getattr(dll, self.name)
        self._c.argtypes = [ctypes.c_void_p] * len(self.arrays)
        self._c.restype = None

    def __repr__(self):
        sig = ", ".join(f"{a['name']}: {a['dtype']}{list(a['shape'])}" for a in self.inputs)
        return f"<perfdojo function {self.name}({sig})>"

    def _fail(self, text: str):
        raise ArgumentError(f"{self.name}: {text}")

    def _check(self, spec: dict, value, writeable: bool):
        dtype = np.dtype(NUMPY_DTYPES[spec["dtype"]])
        if not spec["shape"] and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = np.array(value, dtype=dtype)
        if not isinstance(value, np.ndarray):
            self._fail(f"argument {spec['name']} must be a numpy array, got {type(value).__name__}")
        if value.shape != spec["shape"]:
            self._fail(f"argument {spec['name']} has shape {value.shape}, expected {spec['shape']}")
        if value.dtype != dtype:
            self._fail(f"argument {spec['name']} has dtype {value.dtype}, expected {dtype} ({spec['dtype']})")
        if not value.flags.c_contiguous:
            self._fail(f"argument {spec['name']} must be C-contiguous (use np.ascontiguousarray)")
        if writeable and not value.flags.writeable:
            self._fail(f"argument {spec['name']} must be writeable")
        return value

    def __call__(self, *args, **kwargs):
        if len(args) > len(self.inputs):
            self._fail(f"takes {len(self.inputs)} positional arguments "
                       f"({', '.join(a['name'] for a in self.inputs)}), got {len(args)}")
        given = {a["name"]: v for a, v in zip(self.inputs, args)}
        for name, value in kwargs.items():
            if name in given:
                self._fail(f"argument {name} given twice")
            if name not in {a["name"] for a in self.arrays}:
                self._fail(f"no argument named {name!r} (arrays: {', '.join(a['name'] for a in self.arrays)})")
            given[name] = value
        values = []
        for spec in self.arrays:
            if spec["name"] in given:
                values.append(self._check(spec, given[spec["name"]], spec["kind"] != "in"))
            elif spec["kind"] == "out":
                values.append(aligned_empty(spec["shape"], NUMPY_DTYPES[spec["dtype"]]))
            else:
                self._fail(f"missing argument {spec['name']} ({spec['kind']} {spec['dtype']}"
                           f"{list(spec['shape'])})")
        self._c(*[v.ctypes.data for v in values])
        outs = [v for spec, v in zip(self.arrays, values) if spec["kind"] in ("out", "inout")]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def matches(self, args, kwargs) -> bool:
        given = {a["name"]: v for a, v in zip(self.inputs, args)}
        given.update(kwargs)
        for spec in self.inputs:
            value = given.get(spec["name"])
            shape = np.shape(value) if value is not None else None
            if shape != spec["shape"]:
                return False
        return True


class KernelDispatch:
    """``lib.KERNEL``: the kernel's functions, chosen by the shapes of the arguments."""

    def __init__(self, kernel: str, functions: list):
        self.kernel, self.functions = kernel, functions

    def __call__(self, *args, **kwargs):
        for fn in self.functions:
            if fn.matches(args, kwargs):
                return fn(*args, **kwargs)
        have = "; ".join(", ".join(f"{a['name']}{list(a['shape'])}" for a in fn.inputs)
                         for fn in self.functions)
        got = ", ".join(str(np.shape(a)) for a in args)
        raise ArgumentError(f"{self.kernel}: no function for input shapes ({got}); the library has: {have}")


class Library:
    """A loaded library: its functions as attributes (by name and by kernel)."""

    def __init__(self, directory: Path, manifest: dict, dll):
        self.directory, self.manifest, self._dll = directory, manifest, dll
        self.functions = {e["name"]: Function(e, dll) for e in manifest["functions"]}
        self.kernels = {}
        for fn in self.functions.values():
            self.kernels.setdefault(fn.kernel, []).append(fn)
        dll.perfdojo_set_threads.argtypes = [ctypes.c_int]
        dll.perfdojo_set_threads.restype = ctypes.c_int

    def __getattr__(self, name):
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return KernelDispatch(name, kernels[name])
        raise AttributeError(f"the library has no function or kernel {name!r} "
                             f"(functions: {', '.join(sorted(functions)) or 'none'})")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.functions) | set(self.kernels))

    def set_threads(self, n: int) -> int:
        """Set the OpenMP thread count of the library's kernels; the count in use."""
        return int(self._dll.perfdojo_set_threads(int(n)))


def load(directory, build: bool = True, timeout: float = 900) -> Library:
    """The library in ``directory`` (see the module docstring); with ``build``, runs
    ``make libperfdojo.so`` there first when the shared library is missing."""
    directory = Path(directory)
    try:
        manifest = json.loads((directory / "library.json").read_text())
    except FileNotFoundError:
        raise LibraryError(f"{directory}: not a PerfDojo library (no library.json)") from None
    except (OSError, ValueError) as exc:
        raise LibraryError(f"{directory}/library.json: unreadable ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise LibraryError(f"{directory}/library.json: not a {FORMAT} manifest")
    cross = manifest.get("cross")
    if cross:
        from ..codegen.targets import host_arch
        raise LibraryError(f"{directory}: built for {manifest.get('isa')} ({manifest.get('arch')}), "
                           f"which cannot be loaded on this {host_arch()} machine; its C tests run "
                           f"with `make check` (under {str(cross.get('emulator', '?')).split()[0]})")
    so = directory / manifest.get("shared_library", "libperfdojo.so")
    if not so.exists() and build:
        try:
            proc = subprocess.run(["make", "-s", so.name], cwd=directory, capture_output=True,
                                  text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise LibraryError(f"{directory}: make failed ({exc})") from None
        if proc.returncode != 0:
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise LibraryError(f"{directory}: make failed (exit {proc.returncode}): {tail}")
    if not so.exists():
        raise LibraryError(f"{so}: not built (run make in {directory})")
    try:
        dll = ctypes.CDLL(str(so.resolve()))
    except OSError as exc:
        raise LibraryError(f"{so}: cannot be loaded ({exc})") from None
    return Library(directory, manifest, dll)
