"""Kernels a library has no measurement of: the best schedule known without measuring.

``build_library(..., complete=True)`` (the command line's default) exports every library
kernel, so that a fresh machine's library is never empty.  A kernel with no function at its
default sizes gets one here, chosen in this order:

1. the kernel library's own schedule for the target (``kernels.steps_path(name, target)``:
   ``NAME.TARGET.steps``, else ``NAME.steps``), replayed at the default sizes -- the
   function's ``source`` is ``steps`` and ``schedule`` names the file;
2. otherwise the untransformed kernel (``source`` ``untransformed``).

When the library's code can run here (``check``: this machine's ISA, or a foreign ISA under
its emulator), each candidate also runs on the test inputs against the numpy reference
(``specs.reference_error``) first: a schedule that does not replay, does not generate, or
differs gives way to the untransformed kernel (the function's ``notes`` say why), and a
kernel whose untransformed code differs too is left out (an ``excluded`` entry with the
reason), never shipped wrong.
"""
from __future__ import annotations

from ..errors import DojoError
from ..kernels import load_kernel, steps_path
from .select import LibraryError
from .specs import make_spec, reference_error


def _why(exc) -> str:
    return " ".join(str(getattr(exc, "message", None) or exc).split())[:300]


def fill_function(kernel: str, target, check: bool, log=None):
    """(FunctionSpec or None, excluded entry or None) of one kernel at its default sizes
    for ``target`` (a codegen Target), as the module docstring says."""
    from ..codegen import CodegenError
    from ..steps import read_steps
    sizes = load_kernel(kernel).size_values
    path = steps_path(kernel, target)
    skipped = None
    if path is not None:
        try:
            texts = [text for _, text in read_steps(path)]
            fn = make_spec(kernel, sizes, None, None, target=target, steps=texts, schedule=path.name)
        except (DojoError, LibraryError, CodegenError) as exc:
            fn, skipped = None, f"{path.name} does not apply: {_why(exc)}"
        if fn is not None and check:
            error = reference_error(fn)
            if not error <= 1.0:
                fn, skipped = None, (f"{path.name} differs from the numpy reference on "
                                     f"{target.name} ({error:.3g} x the tolerance)")
        if fn is not None:
            return fn, None
        if log:
            log(f"{kernel}: {skipped}; the untransformed kernel is used")
    fn = make_spec(kernel, sizes, None, None, target=target)
    if skipped:
        fn.notes.append(skipped)
    if check:
        error = reference_error(fn)
        if not error <= 1.0:
            reason = f"differs from the numpy reference on {target.name} ({error:.3g} x the tolerance)"
            return None, {"kernel": kernel, "sizes": sizes, "reason": reason}
    return fn, None


__all__ = ["fill_function"]
