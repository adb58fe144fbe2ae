"""Running untrusted work on a runner: the sandbox.

``run(cmd, workdir=..., limits=..., env=..., network=...)`` runs one command

* in its own directory (``workdir``, made by the caller, normally a fresh
  temporary directory) with ``umask 077``;
* with resource limits set by ``setrlimit`` just before ``exec``: CPU time,
  address space, file size, number of processes, no core files;
* not as root: RLIMIT_NPROC is not enforced for root, so a runner running as root
  drops to an unprivileged user (DOJO_SANDBOX_USER, default ``nobody``) just
  before ``exec``, after the namespaces and limits are set, and hands it the work
  directory.  ``drop_target()`` decides at start whether that user can run the
  benchmark's Python (or the system's interpreter of the same version with the runner's
  packages); if neither, the runner says so (process limit not enforced);
* in a new session, so that the whole process group is killed (SIGKILL) at the
  wall timeout, on cancel, and after the command exits (background children);
  the command also dies with the worker that started it (PR_SET_PDEATHSIG);
* with the environment it is given and nothing else (``scrubbed_env`` builds a
  minimal one: no secrets, no proxies, no credentials of the runner);
* in a new, empty network namespace where the OS allows it: ``netns``
  (``unshare(CLONE_NEWNET)``, needs root or CAP_SYS_ADMIN) or ``userns``
  (an unprivileged user namespace plus a network namespace).
  ``detect_network()`` probes which works and says so; without either the
  command runs with the host's network and the outcome says "not isolated".

The limits are applied by a tiny exec wrapper (``JAIL``, run as
``python -I -c``) rather than a ``preexec_fn``, which is unsafe in a threaded
parent such as a Celery worker.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

GiB = 1 << 30
MiB = 1 << 20

JAIL = r"""
import ctypes, json, os, resource, signal, sys
spec = json.loads(sys.argv[1])
cmd = sys.argv[2:]
def fail(msg):
    os.write(2, ("sandbox: " + msg + "\n").encode())
    os._exit(126)
try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)            # PR_SET_PDEATHSIG
    if os.getppid() != spec["parent"]:
        os._exit(137)                                  # the parent is already gone
    net = spec.get("net")
    if net == "netns":
        if libc.unshare(0x40000000) != 0:              # CLONE_NEWNET
            fail("unshare(CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
    elif net == "userns":
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(0x10000000 | 0x40000000) != 0:  # CLONE_NEWUSER | CLONE_NEWNET
            fail("unshare(CLONE_NEWUSER|CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
        for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1" % (uid, uid)),
                           ("gid_map", "%d %d 1" % (gid, gid))):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    for name, value in spec["rlimits"].items():
        if value is not None:
            resource.setrlimit(getattr(resource, name), (int(value), int(value)))
    os.umask(0o077)
    drop = spec.get("user")
    if drop:
        os.setgroups([])
        os.setgid(drop[1])
        os.setuid(drop[0])
        if os.getuid() == 0 or os.geteuid() == 0:
            fail("could not drop root")
except SystemExit:
    raise
except BaseException as exc:
    fail("%s: %s" % (type(exc).__name__, exc))
try:
    os.execvp(cmd[0], cmd)
except OSError as exc:
    fail("cannot run %r: %s" % (cmd[0], exc))
"""


@dataclass
class Limits:
    wall_s: float = 300.0                 # wall-clock timeout; the process group is killed
    cpu_s: int | None = 900               # RLIMIT_CPU per process (seconds of CPU, all threads)
    address_space: int | None = 8 * GiB  # RLIMIT_AS per process (bytes)
    file_size: int | None = 256 * MiB     # RLIMIT_FSIZE (bytes, largest file written)
    processes: int | None = None          # RLIMIT_NPROC; None: max(256, 8 x cores)
    output_bytes: int = 1 * MiB           # stdout / stderr kept

    def rlimits(self) -> dict:
        nproc = self.processes or max(256, 8 * (os.cpu_count() or 1))
        return {"RLIMIT_CPU": self.cpu_s, "RLIMIT_AS": self.address_space,
                "RLIMIT_FSIZE": self.file_size, "RLIMIT_NPROC": nproc, "RLIMIT_CORE": 0}


@dataclass
class Outcome:
    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    cancelled: bool = False
    signal: str | None = None             # e.g. "SIGSEGV" when a signal ended the command
    wall_s: float = 0.0
    network: str = "not isolated"
    limits: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.cancelled

    def to_dict(self) -> dict:
        return asdict(self)


SAFE_ENV_KEYS = ("LANG", "LC_ALL", "TZ", "DOJO_CC", "CC", "CUDA_HOME", "CUDA_PATH",
                 "NVIDIA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")


def scrubbed_env(home: str, extra: dict | None = None, keep=SAFE_ENV_KEYS) -> dict:
    """A minimal environment: PATH of the system and of this Python, HOME and TMPDIR in
    the sandbox, a few toolchain variables kept from ours, and ``extra``."""
    paths = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]
    cuda = shutil.which("nvcc")
    if cuda:
        paths.append(os.path.dirname(cuda))
    env = {"PATH": os.pathsep.join(dict.fromkeys(paths)), "HOME": home, "TMPDIR": home,
           "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
           "MALLOC_ARENA_MAX": "2"}
    for key in keep:
        if key in os.environ and key not in env:
            env[key] = os.environ[key]
    env.update(extra or {})
    return env


_DROP: tuple | None = None      # (uid, gid) every run() drops to, set by the worker (set_user)


def set_user(uid: int | None, gid: int | None = None) -> None:
    """Make every later run() in this process drop to uid/gid (None: run as we are)."""
    global _DROP
    _DROP = None if uid is None else (int(uid), int(gid if gid is not None else uid))


_DESCRIBE = "import site, sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}'); print(*site.getsitepackages(), sep='\\n')"


def same_version_interpreters(python: str) -> list:
    """(interpreter, its site-packages) alternatives to ``python``: the system's pythonX.Y of
    the same version, given ``python``'s site-packages (a virtual environment whose base
    interpreter lives where the sandbox user cannot read, e.g. under /root with mode 0700,
    still has readable packages, which run unchanged on the same CPython version)."""
    try:
        out = subprocess.run([python, "-I", "-c", _DESCRIBE], capture_output=True, text=True,
                             timeout=30).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return []
    if not out:
        return []
    version, packages = out[0], [p for p in out[1:] if os.path.isdir(p)]
    found = []
    for folder in ("/usr/bin", "/usr/local/bin"):
        candidate = os.path.join(folder, f"python{version}")
        if os.access(candidate, os.X_OK) and os.path.realpath(candidate) != os.path.realpath(python):
            found.append((candidate, packages))
    return found


def _can_run(user, python: str, pythonpath: str | None):
    """None when ``user`` can start ``python`` and import dojo_core and numpy, else why not."""
    with tempfile.TemporaryDirectory(prefix="dojo-userprobe-") as tmp:
        os.chmod(tmp, 0o755)
        env = scrubbed_env(tmp, {"PYTHONPATH": pythonpath} if pythonpath else None)
        res = run([python, "-c", "import dojo_core, numpy"], workdir=tmp, limits=Limits(wall_s=60),
                  env=env, user=user)
    if res.returncode == 0:
        return None
    return (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1].removeprefix("sandbox: ")


def drop_target(python: str = sys.executable, pythonpath: str | None = None) -> tuple:
    """((uid, gid) or None, description, (interpreter, PYTHONPATH)): whom the sandbox should
    run as, and the Python it runs the benchmark with.  Only a root runner drops; to
    DOJO_SANDBOX_USER (default ``nobody``; ``root`` keeps root), and only when that user can
    start an interpreter and import dojo_core and numpy: ``python`` itself, else the system's
    interpreter of the same version with ``python``'s packages on its path."""
    own = (python, pythonpath)
    if os.geteuid() != 0:
        return None, f"unprivileged (uid {os.geteuid()})", own
    name = os.environ.get("DOJO_SANDBOX_USER", "nobody")
    if name == "root":
        return None, "root (DOJO_SANDBOX_USER=root): the process limit is not enforced", own
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None, f"root: no user {name!r} to drop to; the process limit is not enforced", own
    user = (entry.pw_uid, entry.pw_gid)
    why = _can_run(user, python, pythonpath)
    if why is None:
        return user, f"user {name} (uid {user[0]})", own
    for other, packages in same_version_interpreters(python):
        path = os.pathsep.join([p for p in [pythonpath] if p] + packages)
        if _can_run(user, other, path) is None:
            return user, (f"user {name} (uid {user[0]}) with {other} and {python}'s packages "
                          f"({name} cannot run {python}: {why})"), (other, path)
    return None, (f"root: user {name} cannot run {python} ({why}); "
                  "the process limit is not enforced"), own


def _chown_tree(path: str, uid: int, gid: int) -> None:
    os.chown(path, uid, gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)


def _jail_cmd(cmd, limits: Limits, network: str | None, user=None) -> list:
    spec = {"parent": os.getpid(), "net": network, "rlimits": limits.rlimits(), "user": user}
    return [sys.executable, "-I", "-S", "-c", JAIL, json.dumps(spec), *map(str, cmd)]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return ""
    text = data[:limit].decode("utf-8", errors="replace")
    return text + ("\n[output truncated]" if len(data) > limit else "")


def run(cmd, *, workdir: str, limits: Limits | None = None, env: dict | None = None,
        network: str | None = None, should_cancel=None, on_start=None,
        poll_s: float = 0.05, user=None) -> Outcome:
    """Run cmd in the sandbox (see the module docstring); never raises for the command's
    own failures. ``network``: None, "netns" or "userns" (see ``detect_network``).
    ``should_cancel()`` is polled; ``on_start(pgid)`` is called once it runs.  ``user``:
    (uid, gid) to run as (default: set_user's, else ours); it is given ``workdir``."""
    limits = limits or Limits()
    user = user if user is not None else _DROP
    if user is not None and os.geteuid() != 0:
        user = None                                    # only root can drop
    if env is None:
        env = scrubbed_env(workdir)
    if user is not None:
        _chown_tree(workdir, *user)
    out_path = os.path.join(workdir, ".stdout")
    err_path = os.path.join(workdir, ".stderr")
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(_jail_cmd(cmd, limits, network, user), cwd=workdir, env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True, close_fds=True)
    pgid = proc.pid
    if on_start is not None:
        on_start(pgid)
    timed_out = cancelled = False
    deadline = start + limits.wall_s
    try:
        while True:
            try:
                proc.wait(timeout=poll_s)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() >= deadline:
                timed_out = True
            elif should_cancel is not None and should_cancel():
                cancelled = True
            if timed_out or cancelled:
                _kill_group(pgid)
                proc.wait()
                break
    finally:
        if proc.poll() is None:
            _kill_group(pgid)
            proc.wait()
        _kill_group(pgid)                 # whatever the command left running in its group
    code = proc.returncode
    sig = None
    if code is not None and code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = f"signal {-code}"
    return Outcome(returncode=code, stdout=_read(out_path, limits.output_bytes),
                   stderr=_read(err_path, limits.output_bytes), timed_out=timed_out,
                   cancelled=cancelled, signal=sig, wall_s=round(time.monotonic() - start, 4),
                   network=describe_network(network), limits=limits.rlimits())


def describe_network(mode: str | None) -> str:
    return {"netns": "isolated (network namespace)",
            "userns": "isolated (user + network namespace)"}.get(mode, "not isolated")


_PROBE = ("import sys\n"
          "names = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]\n"
          "sys.stdout.write(','.join(n for n in names if n))\n")

_detected: tuple | None = None


def detect_network(force: bool = False) -> tuple[str | None, str]:
    """(mode, description): the first of "netns", "userns" that yields a namespace with
    no interface but loopback, else (None, "not isolated: <why>")."""
    global _detected
    if _detected is not None and not force:
        return _detected
    reasons = []
    if not sys.platform.startswith("linux"):
        _detected = (None, f"not isolated: no network namespaces on {sys.platform}")
        return _detected
    for mode in ("netns", "userns"):
        with tempfile.TemporaryDirectory(prefix="dojo-netprobe-") as tmp:
            res = run([sys.executable, "-I", "-S", "-c", _PROBE], workdir=tmp,
                      limits=Limits(wall_s=20), env=scrubbed_env(tmp), network=mode)
        names = [n for n in res.stdout.split(",") if n]
        if res.returncode == 0 and names and set(names) <= {"lo"}:
            _detected = (mode, describe_network(mode))
            return _detected
        why = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
        if res.returncode == 0:
            why = "interfaces still visible: " + ",".join(names)
        reasons.append(f"{mode}: {why.removeprefix('sandbox: ')}")
    _detected = (None, "not isolated: " + "; ".join(reasons))
    return _detected
