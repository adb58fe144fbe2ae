"""The one error hierarchy (dojo_core/errors.py): every user-facing error of the tool chain
is a DojoError whose text is unchanged, the command line prints it without a traceback and
exits 1, and the JSON API answers one by type (webapp/refusal.py)."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dojo_core import cli, cross, harness
from dojo_core.agents.embedding import EmbeddingError
from dojo_core.agents.llm_client import ApiError, ChatError
from dojo_core.codegen import CodegenError
from dojo_core.compile import CompileError
from dojo_core.cross import EmulationError, TargetUnavailable
from dojo_core.errors import CheckErrors, DojoError, Unlocated
from dojo_core.harness import RunError
from dojo_core.library import LibraryError
from dojo_core.npz import NpzError

from kernels_text import VADD

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = "kernel vadd failed: line one\n  line two: 'quoted' 100%"

UNLOCATED = [CompileError, TargetUnavailable, RunError, LibraryError, EmulationError,
             CodegenError, NpzError, ChatError, ApiError, EmbeddingError]
EXTRA_BASES = {CodegenError: ValueError, TargetUnavailable: CompileError}


def dojo(*args, cwd: Path, env_extra=None, module="dojo_core") -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("DOJO_TRACEBACK", None)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "k.dojo").write_text(VADD)
    np.savez(tmp_path / "in.npz", A=np.ones(16, np.float32), B=np.ones(16, np.float32))
    return tmp_path


# --------------------------------------------------------------------------- the classes

@pytest.mark.parametrize("cls", UNLOCATED, ids=lambda c: c.__name__)
def test_unlocated_error_is_a_dojo_error_with_its_text_unchanged(cls):
    exc = cls(MESSAGE)
    assert isinstance(exc, DojoError) and isinstance(exc, Unlocated)
    assert str(exc) == MESSAGE == exc.message
    assert exc.args == (MESSAGE,)
    assert exc.line is None and exc.located("k.dojo") is exc
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls and str(back) == MESSAGE
    if cls in EXTRA_BASES:
        assert isinstance(exc, EXTRA_BASES[cls])


def test_unlocated_text_of_a_non_string_is_its_str():
    inner = OSError(2, "No such file or directory")
    assert str(RunError(inner)) == str(inner) == RunError(inner).message
    assert str(CompileError()) == ""


def test_located_errors_keep_their_form():
    assert str(DojoError("bad")) == "<input>:1:1: bad"
    assert str(DojoError("bad", 3, 7).located("k.dojo")) == "k.dojo:3:7: bad"
    assert str(DojoError("bad", None)) == "bad"
    both = CheckErrors([DojoError("a", 1, 2), DojoError("b", 3, 4)]).located("f")
    assert str(both) == "f:1:2: a\nf:3:4: b"


def test_internal_signals_stay_outside_the_hierarchy():
    from dojo_core.interp.exprs import TranslationError
    from dojo_core.poly import NotAffine
    from dojo_core.transforms.footprint_box import BoxError
    from runners.client import Refused, Unreachable
    for cls in (TranslationError, NotAffine, BoxError, Unreachable):
        assert not issubclass(cls, DojoError), cls
        assert "Not a DojoError" in cls.__doc__
    assert not issubclass(Refused, DojoError)


# --------------------------------------------------------------------------- the command line

def test_cli_npz_error(work):
    proc = dojo("run", "k.dojo", "--inputs", "nope.npz", "--out", "out.npz", cwd=work)
    assert proc.returncode == 1
    assert proc.stderr == "nope.npz: no such file\n"


def test_cli_compile_error(work):
    proc = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "out.npz", "--backend", "c",
                cwd=work, env_extra={"DOJO_CC": "no-such-cc-dojo",
                                     "DOJO_CACHE_DIR": str(work / "cache")})
    assert proc.returncode == 1
    assert proc.stderr == ("k.dojo:1:1: C compile failed: no C compiler: 'no-such-cc-dojo' "
                           "is not on PATH (set DOJO_CC or CC)\n")


def test_cli_library_error(work):
    proc = dojo("library", "build", "--target", "nowhere", "--out", "lib",
                "--records", "nope.jsonl", cwd=work)
    assert proc.returncode == 1
    assert proc.stderr == "library build: --records nope.jsonl: no such file\n"


def test_llm_client_api_error(work):
    proc = dojo("--server", "http://127.0.0.1:9", "--endpoint", "http://127.0.0.1:9",
                "--model", "m", "--kernel", "vadd", "--budget", "1",
                cwd=work, module="dojo_core.agents.llm_client")
    assert proc.returncode == 1
    assert proc.stderr.startswith("llm_client: POST /api/sessions: ")
    assert proc.stderr.count("\n") == 1


def _main(work, monkeypatch, capsys, argv):
    monkeypatch.chdir(work)
    status = cli.main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return status, captured.err


RUN_C = ["run", "k.dojo", "--inputs", "in.npz", "--out", "out.npz", "--backend", "c"]


@pytest.mark.parametrize("cls, kind", [(RunError, "C run failed"),
                                       (TargetUnavailable, "C target refused"),
                                       (CompileError, "C compile failed")],
                         ids=lambda x: getattr(x, "__name__", x))
def test_cli_c_back_end_errors_keep_their_prefix(work, monkeypatch, capsys, cls, kind):
    def fail(*args, **kwargs):
        raise cls("it went wrong\nsecond line")
    monkeypatch.setattr(harness, "run_c", fail)
    status, err = _main(work, monkeypatch, capsys, RUN_C)
    assert status == 1
    assert err == f"k.dojo:1:1: {kind}: it went wrong | second line\n"


def test_cli_codegen_error(work, monkeypatch, capsys):
    import dojo_core.codegen as codegen

    def fail(*args, **kwargs):
        raise CodegenError("unknown dtype 'f128'")
    monkeypatch.setattr(codegen, "generate_c", fail)
    status, err = _main(work, monkeypatch, capsys, ["codegen", "k.dojo", "--target", "c"])
    assert status == 1
    assert err == "k.dojo:1:1: C code generation failed: unknown dtype 'f128'\n"


def test_cli_unlocated_error_escaping_a_command_prints_as_it_is(work, monkeypatch, capsys):
    def fail(*args, **kwargs):
        raise EmulationError("crashed under qemu-aarch64 (signal 11)")
    monkeypatch.setattr(harness, "run_c", fail)
    status, err = _main(work, monkeypatch, capsys, RUN_C)
    assert status == 1
    assert err == "crashed under qemu-aarch64 (signal 11)\n"


def test_emulation_error_becomes_a_run_error(work, monkeypatch, capsys):
    target = cross.get_target("arm-neon")
    try:
        cross.check_route(target)
    except TargetUnavailable as exc:
        pytest.skip(str(exc))

    def fail(*args, **kwargs):
        raise EmulationError("crashed under qemu-aarch64 (signal 11)")
    monkeypatch.setattr(cross, "run_executable", fail)
    monkeypatch.setenv("DOJO_CACHE_DIR", str(work / "cache"))
    status, err = _main(work, monkeypatch, capsys, RUN_C + ["--isa", "arm-neon"])
    assert status == 1
    assert err == ("k.dojo:1:1: C run failed: kernel vadd (arm-neon, emulated) "
                   "crashed under qemu-aarch64 (signal 11)\n")


# --------------------------------------------------------------------------- the web layer

def test_json_views_answer_a_dojo_error_by_type():
    from django.test import RequestFactory

    from webapp.jsonapi import json_view
    from webapp.refusal import STATUS, refusal_of

    raised = [CompileError("no C compiler: 'cc' is not on PATH"),
              LibraryError("unknown target 'x'"), DojoError("bad", 2, 3, "<source>")]

    @json_view("GET")
    def view(request):
        raise raised.pop(0)

    for reason in ("no C compiler: 'cc' is not on PATH", "unknown target 'x'",
                   "<source>:2:3: bad"):
        response = view(RequestFactory().get("/x"))
        assert response.status_code == 400
        assert json.loads(response.content) == {"error": reason}
    assert refusal_of(NpzError("p: no such file")).reason == "p: no such file"
    assert all(issubclass(kind, DojoError) for kind, _ in STATUS)
