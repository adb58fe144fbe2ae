"""The runner's sandbox (runners/sandbox.py), result interpretation, hardware fingerprint,
and the docker/ files. Real processes, no mocks."""
from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

from dojo_core import machine
from runners import execute, hardware, sandbox

ROOT = Path(__file__).resolve().parents[2]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:                                    # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def test_wall_timeout_kills_the_whole_process_group(tmp_path):
    script = "sleep 60 & echo $! > child.pid; sleep 60"
    start = time.monotonic()
    out = sandbox.run(["sh", "-c", script], workdir=str(tmp_path), limits=sandbox.Limits(wall_s=1))
    assert out.timed_out and not out.ok and out.signal == "SIGKILL"
    assert time.monotonic() - start < 5
    child = int((tmp_path / "child.pid").read_text())
    deadline = time.monotonic() + 2
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the background child survived the timeout"


def test_background_children_are_killed_when_the_command_exits(tmp_path):
    out = sandbox.run(["sh", "-c", "sleep 60 & echo $! > child.pid"], workdir=str(tmp_path))
    assert out.ok
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.1)
    assert not alive(child)


def test_address_space_limit(tmp_path):
    code = "x = bytearray(1 << 30); print('allocated')"
    out = sandbox.run([sys.executable, "-c", code], workdir=str(tmp_path),
                      limits=sandbox.Limits(address_space=256 << 20))
    assert out.returncode != 0 and "MemoryError" in out.stderr and "allocated" not in out.stdout
    ok = sandbox.run([sys.executable, "-c", code], workdir=str(tmp_path),
                     limits=sandbox.Limits(address_space=4 << 30))
    assert ok.ok and "allocated" in ok.stdout
    assert out.limits["RLIMIT_AS"] == 256 << 20


def test_file_size_and_cpu_limits(tmp_path):
    out = sandbox.run([sys.executable, "-c", "open('big', 'wb').write(b'x' * (4 << 20))"],
                      workdir=str(tmp_path), limits=sandbox.Limits(file_size=1 << 20))
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of the signal
    assert out.signal == "SIGXFSZ" or "File too large" in out.stderr
    assert not out.ok
    assert (tmp_path / "big").stat().st_size <= 1 << 20
    out = sandbox.run([sys.executable, "-c", "while True: pass"], workdir=str(tmp_path),
                      limits=sandbox.Limits(cpu_s=1, wall_s=20))
    assert out.signal in ("SIGXCPU", "SIGKILL") and not out.timed_out and out.wall_s < 10
    state, result = execute.interpret(out, sandbox.Limits(cpu_s=1))
    assert state == "failed" and ("CPU time limit" in result["error"] or "killed" in result["error"])


def test_environment_is_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("DOJO_TEST_SECRET", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "nope")
    monkeypatch.setenv("http_proxy", "http://proxy:1")
    env = sandbox.scrubbed_env(str(tmp_path), {"EXTRA": "1"})
    out = sandbox.run(["env"], workdir=str(tmp_path), env=env)
    seen = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    assert "hunter2" not in out.stdout and "AWS_SECRET_ACCESS_KEY" not in seen and "http_proxy" not in seen
    assert seen["HOME"] == str(tmp_path) and seen["TMPDIR"] == str(tmp_path) and seen["EXTRA"] == "1"
    assert set(seen) <= {"PATH", "HOME", "TMPDIR", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTHONNOUSERSITE",
                         "MALLOC_ARENA_MAX", "EXTRA", "PWD", "SHLVL", "_", *sandbox.SAFE_ENV_KEYS}


def test_network_isolation_is_detected_and_reported(tmp_path):
    mode, description = sandbox.detect_network(force=True)
    assert mode in (None, "netns", "userns")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = ("import socket, sys\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "except OSError as e:\n    print('refused', e)\nelse:\n    print('connected')\n")
    try:
        out = sandbox.run([sys.executable, "-c", code], workdir=str(tmp_path), network=mode)
    finally:
        listener.close()
    assert out.network == description
    if mode is None:
        assert description.startswith("not isolated:") and "connected" in out.stdout
        pytest.skip(f"network isolation not available here: {description}")
    assert description.startswith("isolated") and "refused" in out.stdout


def test_cancel_and_crash(tmp_path):
    flag = tmp_path / "cancel"
    start = time.monotonic()
    out = sandbox.run(["sleep", "30"], workdir=str(tmp_path), should_cancel=flag.exists,
                      on_start=lambda pgid: flag.write_text("now"))
    assert out.cancelled and time.monotonic() - start < 5
    assert execute.interpret(out, sandbox.Limits())[0] == "cancelled"
    out = sandbox.run([sys.executable, "-c", "import ctypes; ctypes.string_at(0)"], workdir=str(tmp_path))
    assert out.signal == "SIGSEGV"
    state, result = execute.interpret(out, sandbox.Limits())
    assert state == "failed" and result["error"].startswith("crashed with SIGSEGV")
    out = sandbox.run(["/nonexistent/program"], workdir=str(tmp_path))
    assert out.returncode == 126 and "sandbox: cannot run" in out.stderr


def test_interpret_bench_outcomes():
    lim = sandbox.Limits(wall_s=7)
    good = {"median_s": 1e-3, "min_s": 9e-4, "max_s": 2e-3, "gflops": 3.0, "verified": True,
            "compiler": "cc 12", "flags": ["-O3"], "threads": 2}
    ok = sandbox.Outcome(returncode=0, stdout=json.dumps(good) + "\n")
    state, result = execute.interpret(ok, lim)
    assert state == "done" and result["median_s"] == 1e-3 and result["error"] is None
    bad = sandbox.Outcome(returncode=1, stdout=json.dumps({**good, "verified": False}),
                          stderr="kernel.dojo:1:1: outputs differ from the untransformed kernel\n")
    state, result = execute.interpret(bad, lim)
    assert state == "failed" and "differ" in result["error"] and result["median_s"] == 1e-3
    refused = sandbox.Outcome(returncode=1, stderr="job.steps:2:1: step 'split q by 2': no loop q\n")
    assert execute.interpret(refused, lim)[1]["error"] == "steps line 2: step 'split q by 2': no loop q"
    slow = sandbox.Outcome(returncode=-9, timed_out=True, signal="SIGKILL")
    assert "timed out after 7 s" in execute.interpret(slow, lim)[1]["error"]


def test_bench_command():
    spec = {"id": 1, "steps": ["split i by 2"], "sizes": {"N": 32, "M": 8},
            "options": {"min_time": 0.5, "threads": 2, "timeout_s": 60}}
    cmd = execute.bench_command(spec, "py")
    assert cmd[:5] == ["py", "-m", "dojo_core", "bench", "kernel.dojo"]
    assert cmd[cmd.index("--steps") + 1] == "job.steps" and cmd[cmd.index("--threads") + 1] == "2"
    assert cmd[-3:] == ["--size", "N=32", "M=8"]
    assert "--steps" not in execute.bench_command({"id": 2, "steps": [], "sizes": {}})


def test_bench_in_the_sandbox_end_to_end(tmp_path):
    """The real benchmark, sandboxed as a runner runs it (no server)."""
    source = (ROOT / "dojo_core/kernels/matmul.dojo").read_text()
    spec = {"id": 7, "source": source, "steps": ["split i by 4"], "sizes": {"N": 16, "M": 16, "K": 16},
            "options": {"min_time": 0.01, "timeout_s": 60}}
    mode, _ = sandbox.detect_network()
    state, result = execute.run_spec(spec, {"work_dir": str(tmp_path), "network_mode": mode})
    assert state == "done", result
    assert result["verified"] is True and result["median_s"] > 0 and result["compiler"]
    assert result["sandbox"]["network"] == sandbox.describe_network(mode)
    assert list(tmp_path.iterdir()) == []                 # the job's temp dir is gone


def test_hardware_fingerprint():
    fp = hardware.fingerprint()
    assert fp["cpu"]["arch"] and fp["cpu"]["logical_cpus"] >= 1 and fp["memory_bytes"] > 0
    assert fp["os"]["system"] and isinstance(fp["gpus"], list) and isinstance(fp["compilers"], dict)
    assert "cpu" in hardware.default_labels(fp) or "gpu" in hardware.default_labels(fp)
    smi = "NVIDIA H200, 143771, 570.124.06, 9.0\nNVIDIA H200, 143771, 570.124.06, 9.0\n"
    gpus = machine.parse_nvidia_smi(smi)
    assert gpus == [{"name": "NVIDIA H200", "memory_mib": 143771, "driver": "570.124.06",
                     "compute_cap": "9.0"}] * 2
    assert hardware.default_labels({"gpus": gpus, "cpu": {"arch": "x86_64"}}) == ["gpu", "x86_64"]


def test_docker_compose_references_existing_dockerfiles():
    yaml = pytest.importorskip("yaml")
    compose = yaml.safe_load((ROOT / "docker/compose.yaml").read_text())
    services = compose["services"]
    assert {"web", "runner-cpu", "runner-gpu", "redis", "postgres"} <= set(services)
    assert services["redis"]["image"].startswith("redis")
    assert services["postgres"]["image"].startswith("postgres")
    for name in ("web", "runner-cpu", "runner-gpu"):
        build = services[name]["build"]
        context = (ROOT / "docker" / build["context"]).resolve()
        dockerfile = context / build["dockerfile"]
        assert dockerfile.is_file(), dockerfile
        text = dockerfile.read_text()
        assert text.lstrip().startswith("#") and "\nFROM " in "\n" + text
        for line in text.splitlines():                # every COPY source exists
            if line.startswith("COPY "):
                for src in line.split()[1:-1]:
                    assert (context / src).exists(), f"{dockerfile.name}: COPY {src}"
    assert "cuda" in (ROOT / "docker/Dockerfile.runner-gpu").read_text().split("\nFROM ", 1)[1].split()[0]
    web = services["web"]["environment"]
    assert web["REDIS_URL"].startswith("redis://") and web["DATABASE_URL"].startswith("postgres://")
    assert services["runner-gpu"]["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


def test_runner_client_rides_out_a_server_that_is_down(tmp_path):
    """The runner's HTTP client retries with backoff until the server answers (network loss,
    server restart); a 4xx is final; patience bounds the wait."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    from runners.client import Client, Refused, Unreachable

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            ok = self.headers.get("Authorization") == "Bearer s3cret"
            self.send_response(200 if ok else 403)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(json.dumps({"ok": True} if ok else {"error": "unknown runner secret"}).encode())

        def log_message(self, *args):
            pass

    def serve_later():
        time.sleep(1.0)
        server = HTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        holder.append(server)

    holder = []
    with pytest.raises(Unreachable):
        Client(f"http://127.0.0.1:{port}", "s3cret").heartbeat(None, patience=0.5)
    threading.Thread(target=serve_later, daemon=True).start()
    start = time.monotonic()
    assert Client(f"http://127.0.0.1:{port}", "s3cret").heartbeat(None, patience=10) == {"ok": True}
    assert 0.8 < time.monotonic() - start < 8
    with pytest.raises(Refused) as exc:
        Client(f"http://127.0.0.1:{port}", "wrong").heartbeat(None, patience=10)
    assert exc.value.status == 403 and "unknown runner secret" in str(exc.value)
    holder[0].shutdown()


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping root needs root (the CI machine runs as root)")
def test_a_root_runner_drops_root_so_the_process_limit_holds(tmp_path):
    """As root, RLIMIT_NPROC is ignored; dropped to an unprivileged uid, a fork bomb stops at
    the limit, and the command owns its work directory (it can write there).  The uid is one
    no other process uses (the limit counts every process of the uid on the machine, and
    runners of concurrent tests run their jobs as nobody)."""
    user = (61000 + os.getpid() % 4000,) * 2
    (tmp_path / "kernel.dojo").write_text("x")                # made by root, as the runner does
    script = "id -u; echo hi > out.txt && cat kernel.dojo; for i in 1 2 3 4 5 6 7 8; do sleep 2 & done; wait"
    res = sandbox.run(["/bin/sh", "-c", script], workdir=str(tmp_path),
                      limits=sandbox.Limits(wall_s=20, processes=4), user=user)
    assert res.stdout.splitlines()[:2] == [str(user[0]), "x"], (res.stdout, res.stderr)
    assert "fork" in res.stderr.lower(), res.stderr
    assert (tmp_path / "out.txt").stat().st_uid == user[0]
    as_root = sandbox.run(["/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait; id -u"],
                          workdir=str(tmp_path), limits=sandbox.Limits(wall_s=20, processes=4))
    assert as_root.returncode == 0 and as_root.stdout.strip() == "0"     # why it must drop


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping root needs root")
def test_drop_target_says_whom_the_sandbox_runs_as(monkeypatch):
    user, who, interpreter = sandbox.drop_target("/bin/false")
    assert user is None and "cannot run /bin/false" in who and "not enforced" in who
    assert interpreter == ("/bin/false", None)
    monkeypatch.setenv("DOJO_SANDBOX_USER", "root")
    assert sandbox.drop_target()[0] is None
    monkeypatch.setenv("DOJO_SANDBOX_USER", "no-such-user-here")
    assert "no user" in sandbox.drop_target()[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping root needs root")
def test_a_root_runner_drops_root_with_an_interpreter_the_user_can_run(tmp_path):
    """The runner's own interpreter, or (when it lives where the sandbox user cannot read,
    as a virtual environment over /root/.pyenv does) the system's interpreter of the same
    version with the runner's packages: either way the dropped user runs the benchmark."""
    user, who, (python, pythonpath) = sandbox.drop_target(sys.executable, str(ROOT))
    if user is None:
        assert not sandbox.same_version_interpreters(sys.executable), who
        pytest.skip(f"no interpreter the sandbox user can run here: {who}")
    env = sandbox.scrubbed_env(str(tmp_path), {"PYTHONPATH": pythonpath} if pythonpath else None)
    os.chmod(tmp_path, 0o755)
    res = sandbox.run([python, "-c", "import os, numpy, dojo_core; print(os.getuid())"],
                      workdir=str(tmp_path), limits=sandbox.Limits(wall_s=60), env=env, user=user)
    assert res.returncode == 0 and res.stdout.strip() == str(user[0]), (who, res.stderr)
