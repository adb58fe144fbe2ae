"""The command line `python -m dojo_core`, run as a real subprocess (DESIGN.md section 9).

Every test also checks the universal guarantee: no traceback on stderr, ever.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from dojo_core import cli

from kernels_text import VADD

SCALE = """\
kernel scale(N = 8)
in    alpha: f32
inout X: f32[N]

for i in 0..N:
  X[i] *= alpha
"""

LOCATED = re.compile(r"^[^:\n]+:\d+:\d+: \S.*$")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "k.dojo").write_text(VADD)
    return tmp_path


def assert_located(stderr: str, filename: str) -> list[str]:
    lines = stderr.splitlines()
    assert lines, "expected at least one error line"
    for line in lines:
        assert LOCATED.match(line), line
        assert line.startswith(filename + ":"), line
    return lines


# --------------------------------------------------------------------------- check

def test_check_valid_is_silent(dojo, work):
    r = dojo("check", "k.dojo", cwd=work)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.parametrize("line, mutation", [
    (7, ("A[i] + B[i]", "A[i] + D[i]")),          # unknown name
    (7, ("C[i] = A[i]", "A[i] = C[i]")),          # write to an in array
    (7, ("A[i] + B[i]", "A[i + 1] + B[i]")),      # out of bounds for i = N - 1
    (6, ("0..N:", "0..N")),                       # syntax: missing colon
])
def test_check_invalid_is_located(dojo, work, line, mutation):
    (work / "bad.dojo").write_text(VADD.replace(*mutation))
    r = dojo("check", "bad.dojo", cwd=work)
    assert r.returncode == 1
    assert r.stdout == ""
    lines = assert_located(r.stderr, "bad.dojo")
    assert any(l.startswith(f"bad.dojo:{line}:") for l in lines), lines


def test_check_reports_every_error_one_per_line(dojo, work):
    text = VADD.replace("A[i] + B[i]", "D[i] + E[i]")
    (work / "bad.dojo").write_text(text)
    r = dojo("check", "bad.dojo", cwd=work)
    assert r.returncode == 1
    lines = assert_located(r.stderr, "bad.dojo")
    assert any("D" in l for l in lines) and any("E" in l for l in lines), lines


def test_check_with_sizes(dojo, work):
    assert dojo("check", "k.dojo", "--size", "N=3", cwd=work).returncode == 0
    assert dojo("check", "k.dojo", "--size", "N=3", "--size", "N=5", cwd=work).returncode == 0


def test_check_unknown_size_name(dojo, work):
    r = dojo("check", "k.dojo", "--size", "M=3", cwd=work)
    assert r.returncode == 1
    [line] = assert_located(r.stderr, "k.dojo")
    assert "unknown size 'M'" in line and "N" in line


@pytest.mark.parametrize("bad", ["N", "N=", "=3", "N=x", "N=0", "N=-2", "N=1.5"])
def test_check_malformed_size(dojo, work, bad):
    r = dojo("check", "k.dojo", "--size", bad, cwd=work)
    assert r.returncode == 1
    assert r.stderr == f"k.dojo:1:1: --size '{bad}': expected NAME=VALUE with a positive integer VALUE\n"


@pytest.mark.parametrize("content, expected", [
    (b"", "f.dojo:1:1: empty file"),
    (b"  \n\n", "f.dojo:1:1: empty file"),
    (b"kernel k()\n\x00\x01", "f.dojo:2:1: not a text file"),
    (b"kernel k()\n  \xff\xfe", "f.dojo:2:3: not a text file"),
])
def test_check_refuses_non_kernels(dojo, tmp_path, content, expected):
    (tmp_path / "f.dojo").write_bytes(content)
    r = dojo("check", "f.dojo", cwd=tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", expected + "\n")


def test_check_refuses_huge_file(dojo, tmp_path):
    data = b"# " + b"x" * (1 << 20)
    (tmp_path / "f.dojo").write_bytes(data)
    r = dojo("check", "f.dojo", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr == f"f.dojo:1:1: file too large ({len(data)} bytes, limit 1048576)\n"


def test_check_missing_file_and_directory(dojo, tmp_path):
    r = dojo("check", "nope.dojo", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (1, "nope.dojo:1:1: no such file\n")
    (tmp_path / "d.dojo").mkdir()
    r = dojo("check", "d.dojo", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (1, "d.dojo:1:1: is a directory\n")


def test_usage_errors_exit_2(dojo, work):
    assert dojo(cwd=work).returncode == 2
    assert dojo("frobnicate", "k.dojo", cwd=work).returncode == 2
    assert dojo("check", cwd=work).returncode == 2
    assert dojo("apply", "k.dojo", cwd=work).returncode == 2          # --steps is required
    assert dojo("--help", cwd=work).returncode == 0


# --------------------------------------------------------------------------- print / apply

def test_print_is_canonical_and_stable(dojo, work):
    r = dojo("print", "k.dojo", cwd=work)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.startswith("kernel vadd(")
    assert r.stdout.endswith("\n")
    (work / "again.dojo").write_text(r.stdout)
    again = dojo("print", "again.dojo", cwd=work)
    assert again.stdout == r.stdout


def test_print_with_sizes(dojo, work):
    r = dojo("print", "k.dojo", "--size", "N=32", cwd=work)
    assert r.returncode == 0
    assert "N = 32" in r.stdout.splitlines()[0]


def test_print_refuses_invalid_kernel(dojo, work):
    (work / "bad.dojo").write_text(VADD.replace("B[i]", "D[i]"))
    r = dojo("print", "bad.dojo", cwd=work)
    assert (r.returncode, r.stdout) == (1, "")
    assert_located(r.stderr, "bad.dojo")


def test_apply_with_no_steps_equals_print(dojo, work):
    (work / "s.steps").write_text("# nothing yet\n\n   \n")
    printed = dojo("print", "k.dojo", cwd=work)
    applied = dojo("apply", "k.dojo", "--steps", "s.steps", cwd=work)
    assert applied.returncode == 0
    assert applied.stdout == printed.stdout
    assert dojo("print", "k.dojo", "--steps", "s.steps", cwd=work).stdout == printed.stdout


def test_apply_illegal_step_names_its_line(dojo, work):
    (work / "s.steps").write_text("# a comment\n\nfrobnicate   i   # why not\n")
    r = dojo("apply", "k.dojo", "--steps", "s.steps", cwd=work)
    assert (r.returncode, r.stdout) == (1, "")
    [line] = r.stderr.splitlines()
    assert line.startswith("s.steps:3:1: step 'frobnicate i': "), line
    assert len(line) > len("s.steps:3:1: step 'frobnicate i': ")


def test_apply_missing_or_binary_steps_file(dojo, work):
    r = dojo("apply", "k.dojo", "--steps", "none.steps", cwd=work)
    assert (r.returncode, r.stderr) == (1, "none.steps:1:1: no such file\n")
    (work / "b.steps").write_bytes(b"split i by 4\n\x00")
    r = dojo("apply", "k.dojo", "--steps", "b.steps", cwd=work)
    assert (r.returncode, r.stderr) == (1, "b.steps:2:1: not a text file\n")


# --------------------------------------------------------------------------- actions

def test_actions_text_and_json_agree(dojo, work):
    text = dojo("actions", "k.dojo", cwd=work)
    as_json = dojo("actions", "k.dojo", "--json", cwd=work)
    assert text.returncode == 0 and as_json.returncode == 0
    items = json.loads(as_json.stdout)
    assert isinstance(items, list)
    for item in items:
        assert isinstance(item["text"], str) and item["text"]
        assert isinstance(item["kind"], str)
    assert text.stdout.splitlines() == [item["text"] for item in items]


def test_actions_refuses_invalid_kernel(dojo, work):
    (work / "bad.dojo").write_text("kernel k(N = 4)\nin A: f32[N]\n\nfor i in 0..N\n")
    r = dojo("actions", "bad.dojo", "--json", cwd=work)
    assert (r.returncode, r.stdout) == (1, "")
    assert_located(r.stderr, "bad.dojo")


# --------------------------------------------------------------------------- run

def save(path: Path, **arrays) -> None:
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_run_vadd(dojo, work):
    rng = np.random.default_rng(0)
    a, b = rng.random(16, dtype=np.float32), rng.random(16, dtype=np.float32)
    save(work / "in.npz", A=a, B=b)
    r = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "out.npz", cwd=work)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    with np.load(work / "out.npz") as out:
        assert sorted(out.files) == ["C"]
        assert out["C"].dtype == np.float32 and out["C"].shape == (16,)
        np.testing.assert_allclose(out["C"], a + b, rtol=1e-6)


def test_run_with_sizes_and_inout_and_scalar(dojo, tmp_path):
    (tmp_path / "s.dojo").write_text(SCALE)
    x = np.arange(5, dtype=np.float32)
    save(tmp_path / "in.npz", alpha=np.float32(3), X=x)
    r = dojo("run", "s.dojo", "--size", "N=5", "--inputs", "in.npz", "--out", "o.npz", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (0, "")
    with np.load(tmp_path / "o.npz") as out:
        assert sorted(out.files) == ["X"]
        np.testing.assert_allclose(out["X"], 3 * x)


@pytest.mark.parametrize("arrays, message", [
    (dict(A=np.zeros(16, np.float32)),
     "in.npz: missing input array 'B' (kernel vadd reads A, B)"),
    (dict(A=np.zeros(16, np.float32), B=np.zeros(8, np.float32)),
     "in.npz: input array 'B' has shape [8], expected [16]"),
    (dict(A=np.zeros((4, 4), np.float32), B=np.zeros(16, np.float32)),
     "in.npz: input array 'A' has shape [4, 4], expected [16]"),
    (dict(A=np.zeros(16, np.float64), B=np.zeros(16, np.float32)),
     "in.npz: input array 'A' has dtype float64, expected float32 (f32)"),
])
def test_run_refuses_bad_inputs(dojo, work, arrays, message):
    save(work / "in.npz", **arrays)
    r = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "out.npz", cwd=work)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", message + "\n")
    assert not (work / "out.npz").exists()


def test_run_refuses_missing_and_non_npz_inputs(dojo, work):
    r = dojo("run", "k.dojo", "--inputs", "none.npz", "--out", "out.npz", cwd=work)
    assert (r.returncode, r.stderr) == (1, "none.npz: no such file\n")
    (work / "text.npz").write_text("hello")
    r = dojo("run", "k.dojo", "--inputs", "text.npz", "--out", "out.npz", cwd=work)
    assert r.returncode == 1
    assert r.stderr.startswith("text.npz: not an .npz file")
    assert len(r.stderr.splitlines()) == 1


def test_run_c_backend(dojo, work):
    save(work / "in.npz", A=np.ones(16, np.float32), B=np.arange(16, dtype=np.float32))
    r = dojo("run", "k.dojo", "--inputs", "in.npz", "--out", "o.npz", "--backend", "c", cwd=work)
    assert (r.returncode, r.stderr) == (0, "")
    with np.load(work / "o.npz") as out:
        assert out["C"].tolist() == list(range(1, 17))


def test_search_usage_errors_exit_2(dojo, work):
    # the search command itself is tested in tests/agents/test_agents_search.py
    r = dojo("search", "k.dojo", "--agent", "nope", "--budget", "1", cwd=work)
    assert r.returncode == 2 and r.stderr.startswith("search: unknown agent 'nope'")


# --------------------------------------------------------------------------- in-process

def test_internal_error_is_one_located_line(work, monkeypatch, capsys):
    def boom(*args, **kwargs):
        raise RuntimeError("boom\nsecond line")
    monkeypatch.setattr(cli, "load_state", boom)
    monkeypatch.chdir(work)
    assert cli.main(["print", "k.dojo"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "k.dojo:1:1: internal error: RuntimeError: boom second line\n"


def test_main_returns_usage_status(capsys):
    assert cli.main([]) == 2
    assert cli.main(["check"]) == 2
    capsys.readouterr()
