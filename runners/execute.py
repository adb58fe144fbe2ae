"""One job on the runner: claim it from the server, benchmark it in the sandbox, report.

``execute(job_id, cfg, ticket=..., signature=...)`` is what the Celery task calls.
The task message holds the job id and the job's ticket, signed by the server for
this runner (``runners.tickets``): the job itself (canonical IR, steps, sizes,
options) and the attempt to claim.  The job starts at once; the claim goes to the
server in the background, or with the result of a job that ends within
``claim_after_s`` (``runners.claim``).  A claim the server refuses (unknown job,
already done, cancelled, given to another runner, a stale attempt) stops the job
and nothing is reported, which makes duplicate deliveries harmless.

The benchmark is ``python -m dojo_core bench kernel.dojo --steps job.steps ...``
in a fresh temporary directory under the sandbox (``runners.sandbox``); its JSON
line becomes the result.  A job with ``options.baseline`` (and steps) adds ``--baseline``:
the untransformed kernel is timed in the same run, on the same machine, as the result's
``baseline`` (a speedup's denominator, webapp/runners/results.py).  An emulated runner (``cfg["emulate"]``: a foreign target)
runs ``python -m runners.emulated kernel.dojo --isa TARGET ...`` instead: a
correctness check under qemu-user whose result has ``emulated``, ``emulator`` and
``verdict`` ("correct on arm-sve (emulated)") and never a time.
``interpret(outcome)`` maps every way it can end (success, outputs that differ,
a refusal, a crash by signal, the wall timeout, a cancel, a sandbox failure) to
``(state, result)`` with a one-line ``error``; an emulated check whose outputs
differ fails with an error that starts with its verdict ("incorrect on ...").
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import tempfile
import time

from . import sandbox, tickets
from .claim import LateClaim
from .client import Client, Refused, Unreachable

log = logging.getLogger("runners.execute")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULT_KEYS = ("median_s", "min_s", "max_s", "q1_s", "q3_s", "reps", "gflops", "gbytes_per_s",
               "baseline", "verified",
               "verified_against", "max_error", "target", "compiler", "flags", "threads",
               "compile_s", "emulated", "emulator", "verdict")


# --------------------------------------------------------------------------- state files

def _write_json(path: str, data: dict) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def current_path(state_dir: str) -> str:
    return os.path.join(state_dir, "current.json")


def cancel_path(state_dir: str, job_id: int) -> str:
    return os.path.join(state_dir, f"cancel-{int(job_id)}")


def read_current(state_dir: str) -> dict | None:
    try:
        with open(current_path(state_dir)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def clear_current(state_dir: str) -> None:
    for path in (current_path(state_dir),):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


# --------------------------------------------------------------------------- the job

_clients: dict = {}


def shared_client(cfg: dict) -> Client:
    """One client per (server, secret) in this process, so that its kept-alive HTTP
    connection serves job after job."""
    key = (cfg["server"], cfg["secret"])
    if key not in _clients:
        _clients[key] = Client(cfg["server"], cfg["secret"])
    return _clients[key]


def bench_command(spec: dict, python: str | None = None) -> list:
    opts = spec.get("options") or {}
    cmd = [python or sys.executable, "-m", "dojo_core", "bench", "kernel.dojo"]
    if spec.get("steps"):
        cmd += ["--steps", "job.steps"]
    cmd += ["--min-time", str(float(opts.get("min_time", 0.2)))]
    inner = max(1.0, float(opts.get("timeout_s", 300)) - 5)
    cmd += ["--timeout", str(inner)]
    if opts.get("threads"):
        cmd += ["--threads", str(int(opts["threads"]))]
    if opts.get("flush"):
        cmd += ["--flush"]
    if opts.get("baseline") and spec.get("steps"):
        cmd += ["--baseline"]
    sizes = spec.get("sizes") or {}
    if sizes:
        cmd += ["--size", *(f"{k}={int(v)}" for k, v in sizes.items())]
    return cmd


def emulated_command(spec: dict, target: str, python: str | None = None) -> list:
    """The command of an emulated runner's job: a correctness check (runners.emulated)."""
    opts = spec.get("options") or {}
    cmd = [python or sys.executable, "-m", "runners.emulated", "kernel.dojo", "--isa", target]
    if spec.get("steps"):
        cmd += ["--steps", "job.steps"]
    cmd += ["--timeout", str(max(1.0, float(opts.get("timeout_s", 300)) - 5))]
    if opts.get("threads"):
        cmd += ["--threads", str(int(opts["threads"]))]
    sizes = spec.get("sizes") or {}
    if sizes:
        cmd += ["--size", *(f"{k}={int(v)}" for k, v in sizes.items())]
    return cmd


def _last_json(text: str):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def _reason(stderr: str) -> str:
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    if not lines:
        return ""
    line = lines[-1]
    # "kernel.dojo:1:1: C run failed: ..." -> "C run failed: ..."
    for prefix in ("kernel.dojo:", "job.steps:"):
        if line.startswith(prefix):
            parts = line.split(":", 3)
            if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
                line = (parts[3].strip() if prefix == "kernel.dojo:"
                        else f"steps line {parts[1]}: {parts[3].strip()}")
    return line[:500]


def interpret(outcome: sandbox.Outcome, limits: sandbox.Limits) -> tuple[str, dict]:
    """(state, result) from the sandbox outcome of a bench command."""
    info = {"wall_s": outcome.wall_s, "sandbox": {"network": outcome.network,
                                                   "limits": outcome.limits}}
    data = _last_json(outcome.stdout)
    result = {k: data.get(k) for k in RESULT_KEYS} if isinstance(data, dict) else {}
    result.update(info)
    if outcome.cancelled:
        return "cancelled", {**result, "error": "cancelled"}
    if outcome.timed_out:
        return "failed", {**result, "error": f"timed out after {limits.wall_s:g} s (wall limit); "
                                              "the process group was killed"}
    if outcome.signal:
        why = {"SIGXCPU": f"CPU time limit ({limits.cpu_s} s) exceeded",
               "SIGXFSZ": "file size limit exceeded",
               "SIGKILL": "killed (out of memory or by the system)"}.get(outcome.signal, "")
        detail = _reason(outcome.stderr)
        return "failed", {**result, "error": f"crashed with {outcome.signal}"
                          + (f": {why}" if why else "") + (f" ({detail})" if detail else "")}
    wrong = "outputs differ from the untransformed kernel"
    if result.get("emulated") and result.get("verdict"):
        wrong = f"{result['verdict']}: {wrong}"
    if outcome.returncode == 0 and data is not None:
        if result.get("verified") is False:
            return "failed", {**result, "error": wrong}
        return "done", {**result, "error": None}
    detail = _reason(outcome.stderr) or f"exit code {outcome.returncode}"
    if "MemoryError" in outcome.stderr or "Cannot allocate memory" in outcome.stderr:
        detail += f" (address-space limit {limits.address_space} bytes)"
    elif "File too large" in outcome.stderr:
        detail += f" (file size limit {limits.file_size} bytes)"
    if data is not None and data.get("verified") is False:
        detail = detail if result.get("emulated") else f"{wrong}: {detail}"
    return "failed", {**result, "error": detail}


def limits_for(spec: dict, cfg: dict) -> sandbox.Limits:
    base = dict(cfg.get("limits") or {})
    opts = spec.get("options") or {}
    wall = float(opts.get("timeout_s") or base.get("wall_s") or 300)
    wall = min(wall, float(base.get("max_wall_s") or wall))
    lim = sandbox.Limits(wall_s=wall)
    for key in ("cpu_s", "address_space", "file_size", "processes"):
        if key in base:
            setattr(lim, key, base[key])
    return lim


def run_spec(spec: dict, cfg: dict, should_cancel=None, on_start=None) -> tuple[str, dict]:
    """Benchmark one claimed job in the sandbox; (state, result). Never raises."""
    opts = spec.get("options") or {}
    if opts.get("dry_run"):
        return "done", {"dry_run": True, "error": None, "verified": None}
    work_root = cfg.get("work_dir") or None
    if work_root:
        os.makedirs(work_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"job-{spec['id']}-", dir=work_root)
    try:
        with open(os.path.join(tmp, "kernel.dojo"), "w") as f:
            f.write(spec["source"])
        if spec.get("steps"):
            with open(os.path.join(tmp, "job.steps"), "w") as f:
                f.write("\n".join(spec["steps"]) + "\n")
        env = sandbox.scrubbed_env(tmp, {"PYTHONPATH": cfg.get("pythonpath") or ROOT,
                                         "DOJO_CACHE_DIR": os.path.join(tmp, ".cache")})
        limits = limits_for(spec, cfg)
        command = (emulated_command(spec, cfg["emulate"], cfg.get("python")) if cfg.get("emulate")
                   else bench_command(spec, cfg.get("python")))
        outcome = sandbox.run(command, workdir=tmp, limits=limits,
                              env=env, network=cfg.get("network_mode"),
                              should_cancel=should_cancel, on_start=on_start)
        return interpret(outcome, limits)
    except Exception as exc:                                       # noqa: BLE001
        log.exception("job %s: runner error", spec.get("id"))
        return "failed", {"error": f"runner error: {type(exc).__name__}: {exc}"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _from_ticket(job_id: int, cfg: dict, ticket, signature) -> tuple[dict, int] | None:
    """(spec, attempt) of a ticket the server signed for this runner and this job, or None."""
    key = tickets.key_from_secret(cfg["secret"])
    if not tickets.verify(key, ticket, signature):
        return None
    if ticket["job"].get("id") != job_id or ticket.get("runner") != cfg.get("name"):
        return None
    return ticket["job"], int(ticket["attempt"])


def execute(job_id: int, cfg: dict, client: Client | None = None, published=None,
            ticket=None, signature=None) -> str:
    """Run and report one job, claimed on the way; returns what happened (for logs, tests).

    With a ticket (the task message's), the job starts at once and is claimed in the
    background after ``cfg["claim_after_s"]`` (default 0.1 s) or with its result
    (``runners.claim``); a ticket that is not the server's signature for this runner and
    job is refused and nothing runs.  Without one (an older server), the job is claimed
    over HTTP first and comes from the claim's answer.

    The result carries ``timing``: the Unix times (this host's clock) at which the
    message was ``published`` (the server's clock), ``received`` here, ``claimed``
    (None when the result carries the claim) and the result ``sent``."""
    timing = {"published": published if isinstance(published, (int, float)) else None,
              "received": time.time()}
    client = client or shared_client(cfg)
    state_dir = cfg["state_dir"]
    late = None
    if ticket is not None:
        taken = _from_ticket(job_id, cfg, ticket, signature)
        if taken is None:
            log.warning("job %s: message refused: its ticket is not the server's for this runner", job_id)
            return "refused: the ticket's signature does not match"
        spec, attempt = taken
        late = LateClaim(client, job_id, attempt, float(cfg.get("claim_after_s", 0.1)))
    else:
        try:
            claim = client.claim(job_id)
        except Refused as exc:
            log.info("job %s: not claimed (%s)", job_id, exc)
            return f"skipped: {exc}"
        except Unreachable as exc:
            # the server stays the source of truth: the reaper will requeue the job
            log.warning("job %s: server unreachable at claim: %s", job_id, exc)
            return f"unreachable: {exc}"
        spec, attempt = claim["job"], int(claim["attempt"])
        timing["claimed"] = time.time()
    cancel_file = cancel_path(state_dir, job_id)
    current = {"job": int(job_id), "attempt": attempt, "pgid": None, "worker_pid": os.getpid()}
    _write_json(current_path(state_dir), current)

    def on_start(pgid):
        _write_json(current_path(state_dir), {**current, "pgid": pgid})

    def should_cancel():
        return os.path.exists(cancel_file) or (late is not None and late.refused is not None)

    try:
        if late is not None:
            late.start()
        state, result = run_spec(spec, cfg, should_cancel=should_cancel, on_start=on_start)
        with_claim = late.settle() if late is not None else False
        if late is not None:
            if late.refused:
                log.info("job %s: stopped, %s", job_id, late.refused)
                return f"skipped: {late.refused}"
            attempt, timing["claimed"] = late.attempt, late.claimed_at
        if state == "cancelled":
            log.info("job %s: cancelled", job_id)
        timing["sent"] = time.time()
        result = {**result, "timing": timing}
        try:
            answer = client.result(job_id, attempt, state, result, claim=with_claim,
                                   patience=cfg.get("result_patience", 3600))
            log.info("job %s: %s (%s)", job_id, state, answer.get("status", "stored"))
        except Refused as exc:
            log.warning("job %s: result refused: %s", job_id, exc)
            return f"refused: {exc}"
        except Unreachable as exc:
            log.error("job %s: result not delivered: %s", job_id, exc)
            return f"undelivered: {exc}"
        return state
    finally:
        clear_current(state_dir)
        try:
            os.unlink(cancel_file)
        except FileNotFoundError:
            pass
