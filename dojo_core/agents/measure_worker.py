"""A persistent measuring process for the local evaluator.

Starting a fresh Python for every candidate costs more than measuring it, so the local
evaluator keeps one child process (a fresh ``python -c``, fed pickled jobs on stdin and
answering pickled results on its original stdout; the kernel's own fd 1 is sent to
stderr, so nothing it prints can corrupt the answers) that loads each compiled
kernel, runs it once on the root's inputs, compares the outputs with the reference outputs
(sent once per root and kept in the child), then times it with ``harness``'s in-C timer.

Guarantees: a kernel that crashes or hangs never takes the caller with it: the child is
killed (timeout) or found dead, a fresh one is started for the next job, and the job's
answer is an error string.  ``MeasureWorker.measure`` never raises for a kernel's fault.

Buffer placement does not depend on what the child measured before: every array a job
hands to the kernel (``mapped_empty``) lives in a private anonymous mapping of its own that
starts on a 2 MiB boundary (``BUFFER_ALIGN``), with the system's ordinary page size (no
huge-page advice: the runners and ``dojo_core bench`` time with ordinary pages, and an agent
must rank schedules as they will run there), is written in full before the kernel runs, and is unmapped when the job is done.  (Through
malloc, a long-lived child's buffers landed wherever the heap left room after the kernels
before them, with another page alignment and other physical pages, and timings moved with
that history.)  The arrays that verify a job are released before those that time it are
made.
"""
from __future__ import annotations

import mmap
import os
import pickle
import select
import subprocess
import sys
import threading

import numpy as np

BUFFER_ALIGN = 2 << 20            # every measured buffer starts on a 2 MiB boundary


def mapped_empty(shape, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array of ``shape`` and ``dtype`` at the start of a private
    anonymous mapping of its own, aligned to ``BUFFER_ALIGN``; the mapping is unmapped when the array (and every
    view of it) is gone.  Where anonymous mappings are unavailable it falls back to
    ``harness.aligned_empty`` at the same alignment."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    nbytes = max(1, count) * dtype.itemsize
    size = -(-nbytes // BUFFER_ALIGN) * BUFFER_ALIGN
    try:
        region = mmap.mmap(-1, size + BUFFER_ALIGN,
                           flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except (AttributeError, OSError, ValueError):
        from ..harness import aligned_empty
        return aligned_empty(shape, dtype, align=BUFFER_ALIGN)
    raw = np.frombuffer(region, dtype=np.uint8)
    offset = (-raw.ctypes.data) % BUFFER_ALIGN
    return raw[offset:offset + nbytes].view(dtype)[:count].reshape(shape)


def serve() -> None:
    """The child's loop: one job in, one answer out, until stdin closes."""
    from .. import harness

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    jobs = sys.stdin.buffer
    roots = {}                       # root key -> (inputs, reference outputs)
    while True:
        try:
            job = pickle.load(jobs)
        except (EOFError, OSError, pickle.UnpicklingError):
            return
        try:
            answer = ("ok", _run_job(harness, roots, job))
        except BaseException as exc:                                    # noqa: BLE001
            answer = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, answers)
        answers.flush()


def _run_job(harness, roots: dict, job: dict) -> dict:
    if "inputs" in job:
        roots.clear()                # one root at a time: its arrays can be large
        roots[job["root_key"]] = (job["inputs"], job["reference"])
    inputs, reference = roots[job["root_key"]]
    program = job["program"]
    dll = harness._load(job["path"], len(program.arrays))
    result = {"verified": True, "errors": {}}
    if reference is not None:
        arrays, outputs = harness.prepare(program, inputs, empty=mapped_empty)
        if job["threads"]:
            dll.dojo_set_threads(int(job["threads"]))
        dll.dojo_kernel(*harness._pointers(arrays))
        errors = harness.compare(outputs, reference, program)
        result = {"verified": all(e <= 1.0 for e in errors.values()), "errors": errors}
        del arrays, outputs
        if not result["verified"]:
            return result
    arrays, _ = harness.prepare(program, inputs, empty=mapped_empty)
    result.update(harness._time_in_process(dll, arrays, **job["params"]))
    return result


class MeasureWorker:
    """One long-lived measuring child; thread-safe (jobs are serialised)."""

    def __init__(self):
        self._proc = None
        self._root_sent = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        from ..harness import child_environment
        env = child_environment()
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "from dojo_core.agents.measure_worker import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
            start_new_session=True)
        self._root_sent = None

    def close(self) -> None:
        with self._lock:
            self._kill()

    def _kill(self) -> None:
        if self._proc is not None:
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            self._proc.kill()
            self._proc.wait(5)
        self._proc = self._root_sent = None

    def measure(self, *, root_key: str, inputs: dict, reference, program, path: str,
                params: dict, threads, timeout: float) -> dict:
        """{'verified', 'errors', 'median_s', 'min_s', 'max_s', 'reps', 'threads'} or
        {'error': reason} (crash, timeout, exception in the child)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            job = {"root_key": root_key, "program": program, "path": path,
                   "params": params, "threads": threads}
            if self._root_sent != root_key:
                job.update(inputs=inputs, reference=reference)
            try:
                pickle.dump(job, self._proc.stdin)
                self._proc.stdin.flush()
                self._root_sent = root_key
                ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
                if not ready:
                    self._kill()
                    return {"error": f"timed out after {timeout:g} s"}
                status, answer = pickle.load(self._proc.stdout)
            except (EOFError, OSError, pickle.UnpicklingError):
                code = self._proc.wait(5) if self._proc is not None else None
                self._kill()
                return {"error": f"kernel crashed (exit code {code})"}
            if status != "ok":
                return {"error": answer}
            return answer
