"""Fixtures of the core tests: golden files under tests/core/golden/, the command line
``python -m dojo_core`` run as a subprocess, and a compile cache of a module's own."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parent / "golden"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def golden(request):
    """``golden("c/matmul.c", text)`` asserts that ``text`` equals the golden file under
    tests/core/golden/; with ``pytest --update-goldens`` it writes the file first."""
    update = request.config.getoption("--update-goldens")

    def compare(relative: str, text: str) -> str:
        path = GOLDEN / relative
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        assert path.exists(), f"missing golden file {path} (pytest --update-goldens creates it)"
        expected = path.read_text()
        assert text == expected
        return expected
    return compare


@pytest.fixture
def dojo(request):
    """``dojo(*args, cwd=folder)`` runs ``python -m dojo_core ARGS`` in folder (with this
    checkout first on PYTHONPATH and DOJO_TRACEBACK unset) and returns the completed process;
    it asserts that stderr holds no traceback.  The time limit is the test module's
    ``CLI_TIMEOUT_S`` (120 seconds where it has none)."""
    timeout = getattr(request.module, "CLI_TIMEOUT_S", 120)

    def run(*args, cwd: Path) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        env.pop("DOJO_TRACEBACK", None)
        proc = subprocess.run([sys.executable, "-m", "dojo_core", *map(str, args)],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc
    return run


@pytest.fixture(scope="module")
def module_compile_cache(tmp_path_factory):
    """DOJO_CACHE_DIR set to a fresh folder for the whole test module (its compiled kernels
    neither come from nor go to another run's cache), restored afterwards."""
    old = os.environ.get("DOJO_CACHE_DIR")
    os.environ["DOJO_CACHE_DIR"] = str(tmp_path_factory.mktemp("ccache"))
    yield
    if old is None:
        os.environ.pop("DOJO_CACHE_DIR", None)
    else:
        os.environ["DOJO_CACHE_DIR"] = old
