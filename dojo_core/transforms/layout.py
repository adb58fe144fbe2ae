"""layout T P0 P1 ...: permute the dimensions of a local or temp buffer T (its declaration
and every access); new dimension k is old dimension Pk (numpy's transpose convention).

    local Bt: f32[K, 16]                         local Bt: f32[16, K]
    for k1 in 0..K:                              for k1 in 0..K:
      for j2 in 0..16:              ==>            for j2 in 0..16:
        Bt[k1, j2] = B[k1, 16*j0 + j2]               Bt[j2, k1] = B[k1, 16*j0 + j2]
    ... A[i, k] * Bt[k, j1]                      ... A[i, k] * Bt[j1, k]

Always legal: the buffer is private to the kernel, the map between old and new positions
is a bijection, and every access goes through it. Arrays of the interface (in, out, inout)
keep their layout.
"""
from __future__ import annotations

from itertools import permutations

from .. import ir
from . import scope
from .base import Transformation

MAX_ENUM_RANK = 3


def local_and_temp_buffers(program) -> dict:
    """name -> declaration of every local and temp array."""
    out = {d.name: d for d in program.arrays if d.kind == "temp"}
    for s in ir.walk_stmts(program.body):
        if isinstance(s, ir.Local):
            out[s.name] = s
    return out


def private_buffer(program, name: str, done: str):
    """The declaration of the local or temp ``name``, or why there is none: an array of the
    interface (whose layout is the caller's; ``done`` says what is not done to it, e.g.
    "change layout"), or no such buffer."""
    decl = local_and_temp_buffers(program).get(name)
    if decl is not None:
        return decl
    if program.array(name) is not None:
        return (f"'{name}' is an {program.array(name).kind} array of the kernel's "
                f"interface; only locals and temps {done}")
    return f"there is no local or temp buffer '{name}'"


class Layout(Transformation):
    name = "layout"
    usage = "layout BUFFER P0 P1 ... (a permutation of 0..rank-1)"

    def parse(self, words):
        if len(words) < 2:
            raise self.usage_error()
        try:
            perm = tuple(int(w) for w in words[1:])
        except ValueError:
            raise self.usage_error("the permutation must be integers") from None
        return words[0], perm

    def format(self, params):
        return f"layout {params[0]} " + " ".join(str(p) for p in params[1])

    def candidates(self, program):
        for name, decl in local_and_temp_buffers(program).items():
            rank = len(decl.dims)
            if 2 <= rank <= MAX_ENUM_RANK:
                for perm in permutations(range(rank)):
                    if perm != tuple(range(rank)):
                        yield name, perm

    def check(self, program, params):
        name, perm = params
        decl = private_buffer(program, name, "change layout")
        if isinstance(decl, str):
            return decl
        rank = len(decl.dims)
        if sorted(perm) != list(range(rank)):
            return (f"{' '.join(map(str, perm))} is not a permutation of the {rank} "
                    f"dimensions of '{name}'")
        if perm == tuple(range(rank)):
            return "the identity permutation changes nothing"
        return None

    def apply(self, program, params):
        name, perm = params

        def permute(seq):
            return tuple(seq[p] for p in perm)

        return scope.reshape_buffer(program, name, permute,
                                    lambda a: ir.Access(a.array, permute(a.indices), a.loc),
                                    box=permute)

LAYOUT = Layout()
