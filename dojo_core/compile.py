"""Compiling generated C into shared libraries, with a compile cache (DESIGN.md section 5).

``compile_shared(source, cflags, ldflags, cc=None, timeout=120) -> Compiled`` compiles one
translation unit with the host compiler (``$DOJO_CC``, else ``$CC``, else ``cc``) into
``<cache>/<key>.so``, where key = sha256(source, compiler path and version, flags) and the
cache is ``$DOJO_CACHE_DIR`` or ``~/.cache/perfdojo`` (created on demand). A library that is
already there is reused (``Compiled.cached``). Safe under concurrent use: each compile works
in its own temporary directory inside the cache and the result is moved into place with an
atomic rename, so readers only ever see complete files. The source is kept beside the
library (``<key>.c``) for inspection.

Errors are ``CompileError`` with a short message: the compiler's first error lines, or
"timed out after N s" (the whole compiler process group is killed), or a missing compiler.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import Unlocated


class CompileError(Unlocated):
    """The C compiler refused the source, timed out, or is missing; str() is the reason."""


@dataclass(frozen=True)
class Compiled:
    path: str            # the shared library
    key: str             # the cache key (hex)
    cached: bool         # True when the library came from the cache
    seconds: float       # compile time (0 when cached)
    compiler: str        # compiler version line
    flags: tuple         # cflags + ldflags used


def find_compiler(cc=None) -> str:
    name = cc or os.environ.get("DOJO_CC") or os.environ.get("CC") or "cc"
    path = shutil.which(name)
    if not path:
        raise CompileError(f"no C compiler: '{name}' is not on PATH (set DOJO_CC or CC)")
    return path


@lru_cache(maxsize=8)
def compiler_version(cc: str) -> str:
    """The first line of ``cc --version`` (e.g. 'gcc (Debian 12.2.0-14) 12.2.0')."""
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"cannot run '{cc} --version': {exc}") from None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0] if lines else cc


def cache_dir() -> Path:
    root = os.environ.get("DOJO_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache",
                                                            "perfdojo")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_key(source: str, cc: str, version: str, flags) -> str:
    h = hashlib.sha256()
    for part in (source, cc, version, "\x1f".join(flags)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _errors(text: str, limit: int = 12) -> str:
    lines = [l for l in text.splitlines() if l.strip()]
    important = [l for l in lines if "error" in l.lower()] or lines
    shown = important[:limit]
    more = f" (+{len(important) - limit} more lines)" if len(important) > limit else ""
    return "\n".join(shown) + more


def run_in_group(cmd, cwd, timeout, env=None, text: bool = True) -> tuple:
    """(returncode, stdout and stderr together) of a command run in its own process group;
    on timeout the whole group is killed and ``subprocess.TimeoutExpired`` raised."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=text, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return proc.returncode, out


def _run(cmd, cwd, timeout):
    """run_in_group for a compiler: a timeout is a CompileError."""
    try:
        return run_in_group(cmd, cwd, timeout)
    except subprocess.TimeoutExpired:
        raise CompileError(f"compile timed out after {timeout:g} s") from None


def compile_shared(source: str, cflags=(), ldflags=(), cc=None, timeout: float = 120) -> Compiled:
    """Compile source into a shared library in the cache (see the module docstring)."""
    cc = find_compiler(cc)
    version = compiler_version(cc)
    flags = tuple(cflags) + ("-shared", "-fPIC") + tuple(ldflags)
    key = cache_key(source, cc, version, flags)
    root = cache_dir()
    final = root / f"{key[:40]}.so"
    if final.exists():
        return Compiled(str(final), key, True, 0.0, version, flags)
    work = tempfile.mkdtemp(prefix="build-", dir=root)
    try:
        src = Path(work) / "kernel.c"
        src.write_text(source)
        out = Path(work) / "kernel.so"
        cmd = [cc, *cflags, "-shared", "-fPIC", "-o", str(out), str(src), *ldflags]
        start = time.perf_counter()
        code, text = _run(cmd, work, timeout)
        seconds = time.perf_counter() - start
        if code != 0 or not out.exists():
            raise CompileError(f"{Path(cc).name} failed (exit {code}):\n"
                               + _errors(text.replace(str(src), "kernel.c")))
        os.replace(src, root / f"{key[:40]}.c")
        os.replace(out, final)
        return Compiled(str(final), key, False, seconds, version, flags)
    finally:
        shutil.rmtree(work, ignore_errors=True)


__all__ = ["CompileError", "Compiled", "compile_shared", "compiler_version", "find_compiler",
           "cache_dir", "cache_key"]
