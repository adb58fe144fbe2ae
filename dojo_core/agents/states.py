"""Program states of a search: a root plus a tuple of step texts, replayed with a cache.

``StateCache.program(root, steps)`` applies the steps with ``transforms.apply_step``,
reusing the longest cached prefix, so that extending a measured state by one step costs one
apply.  Guarantee: the program returned is exactly ``replay(root, steps)``; an illegal step
raises ``NotApplicable`` as ``apply_step`` does.  Bounded in memory (LRU).
"""
from __future__ import annotations

from collections import OrderedDict

from ..records import program_hash
from ..transforms import apply_step


class StateCache:
    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self._programs: OrderedDict = OrderedDict()
        self._root_keys: dict = {}

    def root_key(self, root) -> str:
        key = self._root_keys.get(id(root))
        if key is None or key[0] is not root:
            key = (root, program_hash(root))
            self._root_keys[id(root)] = key
        return key[1]

    def program(self, root, steps: tuple):
        steps = tuple(steps)
        rk = self.root_key(root)
        depth = len(steps)
        program = root
        while depth > 0:
            hit = self._programs.get((rk, steps[:depth]))
            if hit is not None:
                self._programs.move_to_end((rk, steps[:depth]))
                program = hit
                break
            depth -= 1
        for i in range(depth, len(steps)):
            program = apply_step(program, steps[i])
            self._programs[(rk, steps[:i + 1])] = program
        while len(self._programs) > self.capacity:
            self._programs.popitem(last=False)
        return program
