"""Replaying step texts onto a program, with one prefix cache shared by every caller.

``replay(program, steps)`` is the one way the engine, the web app, the agents and the command
line turn a root plus step texts into a program.  Programs are immutable, so the cache shares
them freely: extending a cached state by one step costs one ``apply_step``, and the web
editor, the agents' search and a library build replaying the same prefix reuse one another's
work.

Guarantees: the program returned is exactly the one ``apply_step`` gives step after step (the
cache never changes a result); an illegal step raises the transformation's own ``DojoError``
(``NotApplicable``) unchanged, and ``walk`` says which step it was.  The cache is bounded (LRU
over states and over roots) and safe to use from several threads.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterator

from .records import program_hash
from .transforms import apply_step


class ReplayCache:
    """Programs keyed by (hash of the root, tuple of step texts), least recently used first out."""

    def __init__(self, capacity: int = 4096, roots: int = 256):
        self.capacity = capacity
        self.root_capacity = roots
        self._programs: OrderedDict = OrderedDict()
        self._root_keys: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def root_key(self, root) -> str:
        """The hash of ``root`` (memoized by identity: programs are immutable)."""
        with self._lock:
            entry = self._root_keys.get(id(root))
            if entry is not None and entry[0] is root:
                self._root_keys.move_to_end(id(root))
                return entry[1]
        key = program_hash(root)
        with self._lock:
            self._root_keys[id(root)] = (root, key)
            while len(self._root_keys) > self.root_capacity:
                self._root_keys.popitem(last=False)
        return key

    def _longest_prefix(self, key: str, steps: tuple):
        with self._lock:
            for depth in range(len(steps), 0, -1):
                hit = self._programs.get((key, steps[:depth]))
                if hit is not None:
                    self._programs.move_to_end((key, steps[:depth]))
                    return depth, hit
        return 0, None

    def _store(self, key: str, steps: tuple, program) -> None:
        with self._lock:
            self._programs[(key, steps)] = program
            while len(self._programs) > self.capacity:
                self._programs.popitem(last=False)

    def walk(self, root, steps) -> Iterator:
        """Yields the program after each step in turn (``len(steps)`` programs); an illegal
        step raises when its program is asked for, so the caller knows its index."""
        steps = tuple(steps)
        for i in range(len(steps)):
            yield self.program(root, steps[:i + 1])

    def program(self, root, steps):
        """The program after all ``steps`` (``root`` itself when there are none)."""
        steps = tuple(steps)
        key = self.root_key(root)
        depth, program = self._longest_prefix(key, steps)
        if not depth:
            program = root
        for i in range(depth, len(steps)):
            program = apply_step(program, steps[i])
            self._store(key, steps[:i + 1], program)
        return program

    def clear(self) -> None:
        with self._lock:
            self._programs.clear()
            self._root_keys.clear()


SHARED = ReplayCache()


def replay(program, steps, cache: ReplayCache = SHARED):
    """The program after applying the step texts ``steps`` to ``program``, through the shared
    prefix cache.  Raises the first illegal step's ``NotApplicable`` (a ``DojoError``)."""
    return cache.program(program, steps)


__all__ = ["ReplayCache", "SHARED", "replay"]
