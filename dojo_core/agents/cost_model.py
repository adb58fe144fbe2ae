"""A learned cost model: ranks candidate states before they are measured (issue 7, item 4).

``CostModel(alpha=1.0, embedder=None)`` is ridge regression of log run time on
``features.state_features`` and the code embedding (``embedding.py``) of a state.  Timings
are only comparable between states of one kernel at one size on one machine, so the fit is
*within groups* (fixed effects): targets and inputs are centred per group (records: per
``source_hash`` and ``fingerprint``; pairs: per kernel name and sizes) and ``predict``
returns log time up to a per-kernel constant, which cancels in every ranking.

* ``fit(data)``: ``data`` is measurement records (dicts in the ``records.py`` format; the
  state is rebuilt from ``kernel``/``sizes`` or from an IR ``source`` plus ``steps``) or
  ``(program, seconds)`` pairs; failed, unverified and unrebuildable entries are skipped
  (``skipped`` counts them).  Raises ``ValueError`` when no usable group has two states.
* ``predict(programs) -> np.ndarray`` relative log seconds (lower is faster).
* ``rank(program, moves) -> list`` scores, higher = predicted faster: the agents' ``prior``
  hook; ``moves`` are step texts, ``transforms.Action``\\ s or macro ``Move``\\ s (their
  ``steps``); a move that cannot be applied scores ``-inf``.
* ``rank_quality(data)``: Spearman and Kendall rank correlations of predicted and measured
  times within each group, averaged weighted by group size.
* ``CostModelEvaluator(model, root_seconds=None, base=None)``: an ``Evaluator`` whose
  Measurements have ``source="model"``: ``root_seconds * exp(pred(state) - pred(root))``,
  the root's time taken from ``base`` (a real evaluator, measured once per root) or
  ``root_seconds`` (default 1.0).  Deterministic; never raises for an illegal step (a
  Measurement with ``error``).
"""
from __future__ import annotations

import hashlib
import math
from typing import Optional, Sequence

import numpy as np

from .. import ir
from ..errors import DojoError
from ..printer import print_program
from .base import Measurement
from .embedding import HashedEmbedding
from .features import state_features
from ..replay_cache import SHARED, ReplayCache


def program_of_record(record: dict, states: Optional[ReplayCache] = None,
                      roots: Optional[dict] = None) -> Optional[ir.Program]:
    """The state a record measured, rebuilt from its kernel (or IR ``source``), sizes and
    steps; None when it cannot be rebuilt (unknown kernel, bad IR, illegal step)."""
    from ..kernels import load_kernel
    from ..parser import parse
    states = states if states is not None else SHARED
    roots = roots if roots is not None else {}
    key = (record.get("kernel"), record.get("source"),
           tuple(sorted((record.get("sizes") or {}).items())))
    try:
        root = roots.get(key)
        if root is None:
            if record.get("source"):
                root = parse(record["source"])
                if record.get("sizes"):
                    root = root.with_sizes(record["sizes"])
            elif record.get("kernel"):
                root = load_kernel(record["kernel"], record.get("sizes") or {})
            else:
                return None
            roots[key] = root
        return states.program(root, tuple(record.get("steps") or ()))
    except (DojoError, KeyError, ValueError, TypeError, OSError):
        return None


def _ok_seconds(record: dict) -> Optional[float]:
    t = record.get("median_s")
    if record.get("error") or not record.get("verified", True) or not isinstance(t, (int, float)):
        return None
    return float(t) if t > 0 else None


def _items(data) -> tuple:
    """(programs, seconds, groups, skipped) from records or (program, seconds) pairs."""
    programs, seconds, groups, skipped = [], [], [], 0
    states, roots = SHARED, {}
    for item in data:
        if isinstance(item, dict):
            t = _ok_seconds(item)
            program = program_of_record(item, states, roots) if t is not None else None
            group = (item.get("source_hash") or str(item.get("kernel")),
                     item.get("fingerprint") or item.get("runner"))
        else:
            program, t = item
            t = float(t) if t is not None and t > 0 else None
            group = (program.name, tuple(program.sizes)) if program is not None else None
        if program is None or t is None:
            skipped += 1
            continue
        programs.append(program)
        seconds.append(t)
        groups.append(group)
    return programs, np.asarray(seconds, dtype=np.float64), groups, skipped


def _center(x: np.ndarray, groups: list) -> np.ndarray:
    out = x.astype(np.float64).copy()
    index: dict = {}
    for i, g in enumerate(groups):
        index.setdefault(g, []).append(i)
    for rows in index.values():
        out[rows] -= out[rows].mean(axis=0)
    return out


def _ranks(v: np.ndarray) -> np.ndarray:
    order = np.argsort(v, kind="stable")
    ranks = np.empty(len(v))
    ranks[order] = np.arange(len(v))
    for value in np.unique(v):            # ties share their mean rank
        tied = v == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(a, b) -> float:
    a, b = _ranks(np.asarray(a, float)), _ranks(np.asarray(b, float))
    if a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def kendall(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    pairs = len(a) * (len(a) - 1)
    return float((da * db).sum() / pairs) if pairs else 0.0


class CostModel:
    """Ridge regression of within-kernel log time (see the module docstring)."""

    def __init__(self, alpha: float = 1.0, embedder=None, use_embedding: bool = True):
        self.alpha = alpha
        self.embedder = embedder if embedder is not None else HashedEmbedding()
        self.use_embedding = use_embedding
        self.weights: Optional[np.ndarray] = None
        self.scale: Optional[np.ndarray] = None
        self.skipped = 0
        self.samples = 0

    def inputs(self, programs: Sequence) -> np.ndarray:
        rows = [state_features(p) for p in programs]
        x = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
        if self.use_embedding and programs:
            emb = self.embedder.embed_many([print_program(p) for p in programs])
            x = np.hstack([x, emb.astype(np.float64)])
        return x

    def fit(self, data) -> "CostModel":
        programs, seconds, groups, self.skipped = _items(data)
        sizes: dict = {}
        for g in groups:
            sizes[g] = sizes.get(g, 0) + 1
        keep = [i for i, g in enumerate(groups) if sizes[g] >= 2]
        if not keep:
            raise ValueError("a cost model needs at least two measured states of one kernel")
        programs = [programs[i] for i in keep]
        groups = [groups[i] for i in keep]
        y = _center(np.log(seconds[keep])[:, None], groups)[:, 0]
        x = _center(self.inputs(programs), groups)
        scale = x.std(axis=0)
        scale[scale < 1e-9] = 1.0
        xs = x / scale
        a = xs.T @ xs + self.alpha * np.eye(xs.shape[1])
        self.weights = np.linalg.solve(a, xs.T @ y) / scale
        self.scale = scale
        self.samples = len(y)
        return self

    @property
    def fitted(self) -> bool:
        return self.weights is not None

    def predict(self, programs: Sequence) -> np.ndarray:
        if self.weights is None:
            raise ValueError("the cost model is not fitted")
        programs = list(programs)
        if not programs:
            return np.zeros(0)
        return self.inputs(programs) @ self.weights

    def rank(self, program, moves) -> list:
        from ..transforms import apply_step
        children, index = [], []
        for i, move in enumerate(moves):
            steps = getattr(move, "steps", None) or (getattr(move, "text", move),)
            try:
                child = program
                for step in steps:
                    child = apply_step(child, step)
            except DojoError:
                continue
            children.append(child)
            index.append(i)
        scores = [-math.inf] * len(moves)
        for i, value in zip(index, self.predict(children)):
            scores[i] = -float(value)
        return scores

    def rank_quality(self, data) -> dict:
        programs, seconds, groups, skipped = _items(data)
        predicted = self.predict(programs) if programs else np.zeros(0)
        by_group: dict = {}
        for i, g in enumerate(groups):
            by_group.setdefault(g, []).append(i)
        rho = tau = 0.0
        n = 0
        for rows in by_group.values():
            if len(rows) < 3:
                continue
            rho += len(rows) * spearman(predicted[rows], seconds[rows])
            tau += len(rows) * kendall(predicted[rows], seconds[rows])
            n += len(rows)
        return {"spearman": rho / n if n else math.nan, "kendall": tau / n if n else math.nan,
                "n": n, "groups": sum(len(r) >= 3 for r in by_group.values()),
                "skipped": skipped}

    def fingerprint(self) -> str:
        if self.weights is None:
            return "model:unfitted"
        return "model:" + hashlib.sha256(self.weights.tobytes()).hexdigest()[:16]


class CostModelEvaluator:
    """An Evaluator answering from a cost model (``source="model"``; module docstring)."""

    def __init__(self, model: CostModel, root_seconds: Optional[float] = None, base=None):
        self.model, self.base = model, base
        self.root_seconds = root_seconds
        self.fingerprint = model.fingerprint()
        self.runner = "model"
        self.states = SHARED
        self._roots: dict = {}

    def _root_time(self, root) -> tuple:
        key = self.states.root_key(root)
        if key not in self._roots:
            seconds = self.root_seconds or 1.0
            if self.base is not None and self.root_seconds is None:
                m = self.base.evaluate(root, ())
                seconds = m.median_s if m.ok else 1.0
            self._roots.clear()
            self._roots[key] = (seconds, float(self.model.predict([root])[0]))
        return self._roots[key]

    def evaluate(self, program: ir.Program, steps: tuple = ()) -> Measurement:
        try:
            state = self.states.program(program, tuple(steps))
        except DojoError as exc:
            return Measurement(None, error=f"illegal step: {exc.message}", source="model",
                               runner=self.runner)
        seconds, root_pred = self._root_time(program)
        t = seconds * math.exp(float(self.model.predict([state])[0]) - root_pred)
        return Measurement(t, True, None, t, t, source="model", runner=self.runner)

    def evaluate_many(self, items) -> list:
        return [self.evaluate(p, s) for p, s in items]
