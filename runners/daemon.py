"""The runner daemon: ``python -m runners --server URL --token TOKEN [--name NAME] [--labels a,b]``.

1. Fingerprints the hardware, probes the sandbox's network isolation and measures the
   machine's FMA and memory-bandwidth peaks (``runners.peaks``; once per machine, kept in
   the state dir; not for an emulated runner, whose times are no measurement).
2. Registers with the server using the registration token, and receives its
   name, secret, Celery queue and broker (stored with mode 0600 under
   ``--state-dir``, so a restart without a token reuses them).
3. Starts the Celery worker (``runners.worker``) on its queue as a child process,
   and heartbeats from this process, separately from the worker, so a runner
   busy with a long benchmark never looks dead.  Each heartbeat names the job
   in progress; the answer can ask to cancel it.
4. Restarts a worker that dies, handing its job back to the server first.
5. SIGTERM or Ctrl-C: the worker finishes its current job (warm shutdown) for up
   to ``--grace`` seconds; after that the job is stopped and the worker killed.
   Then the runner says goodbye: it is offline at once and the server requeues
   what it was running or was queued for it on other runners.

Network loss: heartbeats and results are retried with backoff; the Celery
worker reconnects to the broker by itself.  Exit status: 0 after a clean stop,
2 for a usage or registration error, 3 when the server revoked the runner.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from . import hardware, peaks, sandbox

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # PYTHONPATH of the benchmark
from .client import Client, Refused, Unreachable
from .execute import cancel_path, clear_current, read_current

log = logging.getLogger("runners")


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "perfdojo-runner")


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m runners", description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True, help="the PerfDojo server, e.g. http://host:8000")
    p.add_argument("--token", default=os.environ.get("DOJO_RUNNER_TOKEN"),
                   help="registration token (make_runner_token); env DOJO_RUNNER_TOKEN")
    p.add_argument("--name", help="runner name (default: the server picks from the host name)")
    p.add_argument("--labels", default="", help="comma-separated labels, e.g. avx512,lab")
    p.add_argument("--emulate", metavar="TARGET", default=None,
                   help="check correctness for a foreign ISA (arm-neon, arm-sve, riscv-rvv) with "
                        "its cross toolchain under qemu-user; results carry no time")
    p.add_argument("--state-dir", default=None, help=f"credentials and scratch (default {default_state_dir()})")
    p.add_argument("--work-dir", default=None, help="where job temp dirs go (default: system temp)")
    p.add_argument("--grace", type=float, default=60.0, help="seconds a stopping runner lets its job finish")
    p.add_argument("--network", choices=("auto", "off"), default="auto",
                   help="isolate jobs from the network where the OS allows (auto) or not (off)")
    p.add_argument("--max-wall", type=float, default=1800.0, help="cap on any job's wall time (s)")
    p.add_argument("--cpu-limit", type=int, default=3600, help="CPU seconds per sandboxed process")
    p.add_argument("--memory-limit", type=float, default=8.0, help="address space per process (GiB)")
    p.add_argument("--heartbeat", type=float, default=None, help="seconds between heartbeats (default: the server's)")
    p.add_argument("--claim-after", type=float, default=0.1,
                   help="seconds a job runs before it is claimed; a job that ends sooner is "
                        "claimed with its result (default 0.1)")
    p.add_argument("--peaks", choices=("cached", "measure", "off"), default="cached",
                   help="the FMA and bandwidth peaks sent at registration: measured once and kept "
                        "in the state dir (cached), measured anew (measure), or none (off)")
    p.add_argument("--log-level", default=os.environ.get("DOJO_RUNNER_LOG", "INFO"))
    return p.parse_args(argv)


class Daemon:
    def __init__(self, args):
        self.args = args
        self.stop = threading.Event()
        self.state_dir = os.path.abspath(args.state_dir or default_state_dir())
        os.makedirs(self.state_dir, mode=0o700, exist_ok=True)
        self.worker: subprocess.Popen | None = None
        self.creds: dict = {}
        self.client: Client | None = None
        self.restarts: list[float] = []
        self.exit_code = 0

    # ---------------------------------------------------------------- registration
    def _creds_path(self) -> str:
        key = hashlib.sha256(f"{self.args.server.rstrip('/')}|{self.args.name or ''}".encode()).hexdigest()[:16]
        return os.path.join(self.state_dir, f"credentials-{key}.json")

    @staticmethod
    def _stored_secret(path: str):
        """The secret of an earlier registration under this name (it proves the name is ours)."""
        try:
            with open(path) as f:
                secret = json.load(f).get("secret")
        except (OSError, ValueError, AttributeError):
            return None
        return secret if isinstance(secret, str) else None

    def register(self) -> None:
        hw = hardware.emulated_fingerprint(self.args.emulate) if self.args.emulate else hardware.fingerprint()
        if self.args.network == "auto":
            mode, desc = sandbox.detect_network()
        else:
            mode, desc = None, "not isolated: disabled with --network off"
        self.network_mode = mode
        labels = [l.strip() for l in self.args.labels.split(",") if l.strip()]
        user, who, (self.python, self.pythonpath) = sandbox.drop_target(sys.executable, ROOT_DIR)
        self.sandbox_user = list(user) if user else None
        sandbox_info = {"network": desc, "uid": user[0] if user else os.geteuid(), "user": who,
                        "process_limit_enforced": os.geteuid() != 0 or user is not None}
        path = self._creds_path()
        if self.args.token:
            client = Client(self.args.server, stop=self.stop)
            measured = (None if self.args.emulate or self.args.peaks == "off"
                        else peaks.cached(self.state_dir, hw, fresh=self.args.peaks == "measure"))
            creds = client.register(self.args.token, self.args.name, labels, hw, sandbox_info,
                                    secret=self._stored_secret(path), peaks=measured)
        else:
            try:
                with open(path) as f:
                    creds = json.load(f)
            except (OSError, ValueError):
                raise SystemExit(f"runner: no --token and no stored credentials in {path}") from None
            Client(self.args.server, creds["secret"], stop=self.stop).heartbeat(None, patience=60)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(creds, f)
        self.creds = creds
        self.client = Client(self.args.server, creds["secret"], stop=self.stop)
        self.heartbeat_s = float(self.args.heartbeat or creds.get("heartbeat_s") or 5.0)
        log.info("registered as %s (queue %s, broker %s, network %s)", creds["name"], creds["queue"],
                 creds["broker_url"].split("@")[-1], desc)

    def worker_config(self) -> str:
        gib = 1 << 30
        cfg = {
            "server": self.args.server.rstrip("/"), "secret": self.creds["secret"],
            "name": self.creds["name"], "queue": self.creds["queue"],
            "broker_url": self.creds["broker_url"], "broker_options": self.creds.get("broker_options") or {},
            "state_dir": self.state_dir, "work_dir": self.args.work_dir,
            "network_mode": self.network_mode, "python": self.python, "pythonpath": self.pythonpath,
            "sandbox_user": self.sandbox_user,
            "parent_pid": os.getpid(), "log_level": self.args.log_level,
            "claim_after_s": max(0.0, self.args.claim_after), "emulate": self.args.emulate,
            "limits": {"max_wall_s": self.args.max_wall, "cpu_s": self.args.cpu_limit,
                       "address_space": int(self.args.memory_limit * gib)},
        }
        path = os.path.join(self.state_dir, f"worker-{self.creds['name']}.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(cfg, f)
        return path

    # ---------------------------------------------------------------- worker
    def start_worker(self) -> None:
        clear_current(self.state_dir)
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.worker = subprocess.Popen([sys.executable, "-m", "runners.worker", self.config_path], env=env)
        log.info("worker started (pid %s)", self.worker.pid)

    def _kill_job_group(self, current: dict | None) -> None:
        pgid = (current or {}).get("pgid")
        if pgid:
            try:
                os.killpg(int(pgid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def hand_back(self, reason: str) -> None:
        current = read_current(self.state_dir)
        self._kill_job_group(current)
        if current and current.get("job"):
            try:
                self.client.release(current["job"], reason)
                log.warning("job %s handed back: %s", current["job"], reason)
            except (Refused, Unreachable) as exc:
                log.warning("job %s could not be handed back (%s); the server's reaper will requeue it",
                            current["job"], exc)
        clear_current(self.state_dir)

    def check_worker(self) -> None:
        if self.worker is None or self.worker.poll() is None:
            return
        code = self.worker.returncode
        log.error("worker exited unexpectedly (code %s)", code)
        self.hand_back(f"worker died (exit code {code})")
        now = time.monotonic()
        self.restarts = [t for t in self.restarts if now - t < 60] + [now]
        if len(self.restarts) > 5:
            log.error("worker keeps dying; giving up")
            self.exit_code = 1
            self.stop.set()
            return
        self.start_worker()

    # ---------------------------------------------------------------- heartbeat
    def beat(self) -> None:
        current = read_current(self.state_dir)
        job = current.get("job") if current else None
        try:
            answer = self.client.heartbeat(job, patience=min(10.0, self.heartbeat_s * 2))
        except Refused as exc:
            if exc.status in (401, 403):
                log.error("the server refused this runner (%s); stopping", exc)
                self.exit_code = 3
                self.stop.set()
            return
        except Unreachable as exc:
            log.warning("heartbeat failed (%s); retrying", exc)
            return
        for job_id in answer.get("cancel") or []:
            try:
                open(cancel_path(self.state_dir, int(job_id)), "w").close()
            except (OSError, ValueError):
                pass

    def run(self) -> int:
        self.register()
        self.config_path = self.worker_config()
        self.start_worker()
        next_beat = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                self.beat()
                next_beat = now + self.heartbeat_s
            self.check_worker()
            self.stop.wait(min(0.2, max(0.01, next_beat - time.monotonic())))
        self.shutdown()
        return self.exit_code

    def shutdown(self) -> None:
        worker = self.worker
        if worker is not None and worker.poll() is None:
            log.info("stopping: the worker finishes its current job (up to %g s)", self.args.grace)
            worker.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + self.args.grace
            next_beat = 0.0
            beat_client = Client(self.args.server, self.creds["secret"])   # self.stop is set
            while worker.poll() is None and time.monotonic() < deadline:
                if time.monotonic() >= next_beat and self.exit_code != 3:
                    current = read_current(self.state_dir)
                    try:
                        beat_client.heartbeat(current.get("job") if current else None, patience=2)
                    except (Refused, Unreachable):
                        pass
                    next_beat = time.monotonic() + self.heartbeat_s
                time.sleep(0.1)
            if worker.poll() is None:
                # out of grace: stop the job; the goodbye below hands it back (requeued on
                # another runner, since this one is offline from then on)
                current = read_current(self.state_dir)
                self._kill_job_group(current)
                worker.kill()
                worker.wait()
                if current and current.get("job"):
                    log.warning("job %s interrupted by the shutdown; handing it back", current["job"])
        if self.exit_code != 3:
            try:
                Client(self.args.server, self.creds["secret"]).bye(patience=3)
            except (Refused, Unreachable):
                pass
        log.info("stopped")


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format=f"[runner {args.name or ''}] %(levelname)s %(message)s")
    daemon = Daemon(args)

    def on_signal(signum, frame):
        log.info("signal %s: stopping", signal.Signals(signum).name)
        daemon.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return daemon.run()
    except Refused as exc:
        print(f"runner: registration refused: {exc.data.get('error') or exc}", file=sys.stderr)
        return 2
    except Unreachable as exc:
        print(f"runner: server unreachable: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:                                  # e.g. --server is not a URL
        print(f"runner: {exc}", file=sys.stderr)
        return 2
