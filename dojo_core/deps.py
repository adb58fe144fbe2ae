"""Exact memory-based dependence analysis over the polyhedral model (poly.Model).

Two statement instances depend on each other when they touch the same element (of an
array, a temp, or of one instance of a local: a local declared in a block is a fresh
buffer at every entry of that block) and at least one of them writes it. The relation
of a pair (S, T) holds the instance pairs (s, t) with s running before t. Legality
checks ask whether that relation, restricted by a condition on the iterators of both
sides (e.g. "same outer iterations, different iteration of loop i"), is empty: an exact
Presburger question answered by islpy, never by sampling.

In condition texts, iterator `x` of the source is written `v_x_s`, of the target `v_x_t`.
"""
from __future__ import annotations

import islpy as isl

from . import ir
from .poly import Model, lex_before_text


def _accesses(stmt):
    """(access, is_write) pairs of a statement; a reduction target is a write."""
    out = [(stmt.assign.target, True)]
    out += [(a, False) for a in ir.walk_expr(stmt.assign.value) if isinstance(a, ir.Access)]
    return out


class Dependences:
    """Lazily built, memoised dependence relations of one program."""

    def __init__(self, program: ir.Program):
        self.program = program
        self.model = Model(program)
        self._pair_text = {}
        self._pair_set = {}
        self._queries = {}

    @property
    def statements(self):
        return self.model.statements

    def pair_text(self, s, t):
        """ISL constraints (over v_*_s and v_*_t) of 's before t, same element, one writes',
        or None when the two statements share no array with a write."""
        key = (s.name, t.name)
        if key in self._pair_text:
            return self._pair_text[key]
        m = self.model
        alts = []
        for acc_s, w_s in _accesses(s):
            for acc_t, w_t in _accesses(t):
                if acc_s.array != acc_t.array or not (w_s or w_t):
                    continue
                eqs = [f"{a} = {b}" for a, b in zip(m.index_texts(s, acc_s, "_s"),
                                                   m.index_texts(t, acc_t, "_t"))]
                eqs += [f"v_{i}_s = v_{i}_t" for i in m.local_scope.get(acc_s.array, ())]
                alts.append("(" + (" and ".join(eqs) or "true") + ")")
        if not alts:
            self._pair_text[key] = None
            return None
        text = (f"{m.domain_text(s, '_s')} and {m.domain_text(t, '_t')} and "
                f"{lex_before_text(m.schedule_texts(s, '_s'), m.schedule_texts(t, '_t'))} and "
                f"({' or '.join(dict.fromkeys(alts))})")
        self._pair_text[key] = text
        return text

    def pair_set(self, s, t):
        """The dependence relation of (s, t) as an isl.Set over [v_*_s..., v_*_t...]."""
        key = (s.name, t.name)
        if key not in self._pair_set:
            base = self.pair_text(s, t)
            self._pair_set[key] = None if base is None else _parse_set(f"{{ [{_vars(s, t)}] : {base} }}")
        return self._pair_set[key]

    def exists(self, sources, targets, condition=lambda s, t: "true") -> bool:
        """Is there a dependence from an instance of a statement in `sources` to one in
        `targets` that also satisfies condition(s, t) (ISL text, or None to skip the pair)?"""
        for s in sources:
            for t in targets:
                extra = condition(s, t)
                if extra is None:
                    continue
                key = (s.name, t.name, extra)
                found = self._queries.get(key)
                if found is None:
                    base = self.pair_set(s, t)
                    found = base is not None and not base.intersect(
                        isl.Set(f"{{ [{_vars(s, t)}] : {extra} }}")).is_empty()
                    self._queries[key] = found
                if found:
                    return True
        return False

    def reads_own_writes(self, stmt, fixed) -> bool:
        """Does an instance of stmt read, in its value, an element of its target array that
        an instance agreeing with it on the ``fixed`` iterators writes (in either order, the
        same instance included)?  False guarantees that a reduction which also reads its
        own array elsewhere (trisolv's ``x[i] += -L[i, j] * x[j]``, j < i) reads only
        elements it never updates while ``fixed`` holds, so its updates may be reordered."""
        m, target = self.model, stmt.assign.target
        reads = [a for a in ir.walk_expr(stmt.assign.value)
                 if isinstance(a, ir.Access) and a.array == target.array]
        if not reads:
            return False
        write = m.index_texts(stmt, target, "_s")
        scope = [f"v_{i}_s = v_{i}_t" for i in m.local_scope.get(target.array, ())]
        base = [m.domain_text(stmt, "_s"), m.domain_text(stmt, "_t"), same(fixed)] + scope
        for read in reads:
            eqs = [f"{w} = {r}" for w, r in zip(write, m.index_texts(stmt, read, "_t"))]
            text = " and ".join(base + eqs)
            if not _parse_set(f"{{ [{_vars(stmt, stmt)}] : {text} }}").is_empty():
                return True
        return False

    def inside(self, iterator: str) -> list:
        """The statements nested in the loop of this iterator (iterator names are unique)."""
        return [s for s in self.statements if iterator in s.iterators]


_SET_CACHE: dict = {}


def _parse_set(text: str):
    """isl.Set of a text, memoised across programs: after one step most statement pairs of
    the new state have the same text as in the previous state (ISL parsing dominates)."""
    return memo(_SET_CACHE, text, lambda t: isl.Set(t).coalesce())


def memo(cache: dict, key, compute, limit: int = 4096):
    """``cache[key]``, computed as ``compute(key)`` on first use; a cache past ``limit``
    entries is emptied first, so memory stays bounded.  For results that the key determines
    (an ISL set's text, an immutable program value)."""
    found = cache.get(key)
    if found is None:
        if len(cache) > limit:
            cache.clear()
        found = cache[key] = compute(key)
    return found


def clear_caches():
    """Forget every memoised dependence (for benchmarks of first-time states)."""
    _CACHE.clear()
    _SET_CACHE.clear()


def _vars(s, t) -> str:
    return ", ".join([f"v_{i}_s" for i in s.iterators] + [f"v_{i}_t" for i in t.iterators])


def same(iterators) -> str:
    """Condition text: source and target agree on these iterators."""
    return " and ".join(f"v_{i}_s = v_{i}_t" for i in iterators) or "true"


_CACHE: dict = {}


def dependences(program: ir.Program) -> Dependences:
    """Dependences of a program, memoised on the (hashable, immutable) program value."""
    return memo(_CACHE, program, Dependences, limit=256)
