"""The child processes ``make run`` starts (webapp/launch.py: the local runner, the agents
worker): the address they reach the server at, and how they are stopped."""
from __future__ import annotations

import subprocess


def local_url(host: str, port: int) -> str:
    """The URL a child on this machine reaches a server bound to ``host``:``port`` at
    (a wildcard address becomes 127.0.0.1, an IPv6 one is bracketed)."""
    local = "127.0.0.1" if host in ("0.0.0.0", "", "::") else (f"[{host}]" if ":" in host else host)
    return f"http://{local}:{port}"


def stop_child(proc: subprocess.Popen | None, timeout: float = 20) -> None:
    """SIGTERM (the child finishes or hands back its work), then SIGKILL after ``timeout`` s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
