"""The kernel's arrays in .npz files, as ``run`` reads and writes them.

Guarantees: ``read_inputs`` returns exactly the kernel's in and inout arrays, each of the
declared shape (at the program's sizes) and dtype, or raises ``NpzError`` whose text is
the whole one-line message ``PATH: ...`` (missing file or array, not an .npz, wrong shape
or dtype); ``write_outputs`` writes the out and inout arrays whole, then renames, so a
failed write never leaves a partial file at ``path``.  numpy and the interpreter are
imported by the two functions, not by the module: the command line imports this module
for every command, and most never touch an array.
"""
from __future__ import annotations

import os
import zipfile

from .errors import Unlocated


class NpzError(Unlocated):
    """A refusal about an .npz file; str() is the whole one-line message."""


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def read_inputs(program, path: str) -> dict:
    """The kernel's in and inout arrays from an .npz file, checked for presence, shape, dtype."""
    import numpy as np

    from .interp import array_shape, numpy_dtype

    needed = [d for d in program.arrays if d.kind in ("in", "inout")]
    if not needed:
        return {}
    try:
        npz = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise NpzError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise NpzError(f"{path}: is a directory") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise NpzError(f"{path}: not an .npz file ({type(exc).__name__})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise NpzError(f"{path}: not an .npz file (a single .npy array)")
    inputs = {}
    with npz:
        for decl in needed:
            if decl.name not in npz.files:
                names = ", ".join(d.name for d in needed)
                raise NpzError(f"{path}: missing input array '{decl.name}' "
                               f"(kernel {program.name} reads {names})")
            try:
                arr = npz[decl.name]
            except Exception as exc:                                   # noqa: BLE001
                raise NpzError(f"{path}: array '{decl.name}' cannot be read ({exc})") from None
            shape, dtype = array_shape(program, decl), numpy_dtype(decl.dtype)
            if arr.shape != shape:
                raise NpzError(f"{path}: input array '{decl.name}' has shape {_shape_text(arr.shape)}, "
                               f"expected {_shape_text(shape)}")
            if arr.dtype != dtype:
                raise NpzError(f"{path}: input array '{decl.name}' has dtype {arr.dtype}, "
                               f"expected {dtype} ({decl.dtype})")
            inputs[decl.name] = arr
    return inputs


def write_outputs(program, outputs: dict, path: str) -> None:
    """The kernel's out and inout arrays into an .npz file (written whole, then renamed)."""
    import numpy as np

    from .interp import numpy_dtype


    arrays = {}
    for decl in program.arrays:
        if decl.kind in ("out", "inout"):
            if decl.name not in outputs:
                raise RuntimeError(f"the interpreter returned no array '{decl.name}'")
            arrays[decl.name] = np.asarray(outputs[decl.name], dtype=numpy_dtype(decl.dtype))
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except OSError as exc:
        raise NpzError(f"{path}: cannot write outputs ({exc.strerror or exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
