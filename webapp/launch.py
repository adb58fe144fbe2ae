"""Start PerfDojo on this machine: ``python -m webapp.launch [--host H] [--port P]``.

What `make run` calls. It migrates the database in the state directory, refuses
cleanly (exit 1, one line) when the port is taken, starts daphne, and prints
the URL only once the server accepts connections.  Ctrl-C stops the server;
SIGTERM is passed on; the exit status is the server's.

It also starts a local runner (``python -m runners``, named ``local``) that
registers with a one-use token made at start; ``--no-runner`` or
DOJO_LOCAL_RUNNER=0 leaves it out (runners on other hosts join with tokens from
``manage.py make_runner_token``).  The runner is stopped before the server.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from webapp.children import local_url, stop_child


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def wait_listening(host: str, port: int, proc: subprocess.Popen, timeout: float = 60.0) -> bool:
    """True once host:port accepts a connection; False if proc exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def migrate() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def start_local_runner(host: str, port: int, state_dir) -> subprocess.Popen:
    """The embedded runner: registered with a one-use token made now (runners/daemon.py)."""
    from webapp.runners.models import RegistrationToken

    _, token = RegistrationToken.issue(note="local runner (make run)", uses=1, replaces="local")
    cmd = [sys.executable, "-m", "runners", "--server", local_url(host, port), "--name", "local",
           "--labels", "local", "--state-dir", os.path.join(str(state_dir), "runner"), "--grace", "10",
           "--log-level", os.environ.get("DOJO_RUNNER_LOG", "WARNING")]
    env = dict(os.environ, DOJO_RUNNER_TOKEN=token)             # not on the command line
    return subprocess.Popen(cmd, env=env)


ROOT_WORKER_WARNING = "You're running the worker with superuser privileges"


def quiet_children() -> None:
    """The processes started from here (server, local runner, agents worker) inherit a
    warnings filter for Celery's warning that its worker runs as root (a container's
    usual user, and the one of these machines), which each worker would print at start
    in ten lines; this process says it once."""
    if getattr(os, "geteuid", lambda: -1)() == 0:
        print("note: running as root; the local runner and agents worker run as root too", file=sys.stderr)
        filters = [f for f in os.environ.get("PYTHONWARNINGS", "").split(",") if f]
        os.environ["PYTHONWARNINGS"] = ",".join(filters + [f"ignore:{ROOT_WORKER_WARNING}"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webapp.launch", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--no-runner", action="store_true",
                        default=os.environ.get("DOJO_LOCAL_RUNNER", "1").lower() in ("0", "false", "no"),
                        help="do not start the local runner")
    args = parser.parse_args(argv)

    if not port_is_free(args.host, args.port):
        print(f"port {args.port} on {args.host} is already in use; try: make run PORT={args.port + 1}",
              file=sys.stderr)
        return 1
    migrate()
    quiet_children()
    from django.conf import settings

    cmd = [sys.executable, "-m", "webapp.serve", "-b", args.host, "-p", str(args.port), "webapp.asgi:application"]
    proc = subprocess.Popen(cmd)
    runner = None

    def on_term(*_):                                             # stopping us stops the server
        stop_child(runner)           # it finishes (or hands back) its job, then says goodbye
        proc.terminate()

    signal.signal(signal.SIGTERM, on_term)
    try:
        if wait_listening(args.host, args.port, proc):
            host = f"[{args.host}]" if ":" in args.host else args.host
            if not args.no_runner:
                runner = start_local_runner(args.host, args.port, settings.STATE_DIR)
            if os.environ.get("DOJO_AGENTS_WORKER", "1").lower() not in ("0", "false", "no"):
                from webapp.agents.worker import start_for_launch
                start_for_launch(args.host, args.port)   # agent runs; stopped at exit
            print(f"\n  PerfDojo is running at http://{host}:{args.port}/\n"
                  f"  state: {settings.STATE_DIR}   stop: Ctrl-C\n", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        stop_child(runner)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
    finally:
        stop_child(runner)
        if proc.poll() is None:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
