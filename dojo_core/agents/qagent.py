"""The learned Q-agent, in the spirit of PerfLLM: registered as ``"q"``.

A (state, action) pair is the row ``[state_features(s), state_features(s) -
state_features(root), embedding(IR of s), action_features(s, a)]``; a Q-network (numpy MLP,
``qnetwork.py``) scores every candidate action of a state, so the variable, masked action
set is handled by scoring only the legal ones.  ``Q(s, a)`` estimates the best log speedup
over the root reachable through ``a``, learned with the max-reward target ``Q(s, a) <-
max(r(s, a), gamma * max_a' Q_target(s', a'))`` where ``r`` is the log speedup of the state
reached (``FAIL_REWARD`` when it does not compile, crashes or computes wrong outputs, which
ends the episode), from a replay buffer, with a target network copied every
``target_every`` updates (``a'`` picked by the online network, valued by the target one:
double Q, against the overestimation a max over noisy values brings) and epsilon-greedy
exploration (linearly decayed in training).

Candidates are the legal actions minus ``bind`` on CPU evaluators (``evaluator.gpu``
false), split factors outside 4..256 powers of two, and ``unroll`` of loops longer than
``MAX_UNROLL`` (their compile time dwarfs any gain), plus (``macros=True``) the macro moves
of ``macros.py`` as one action each, with the text ``macro: LABEL`` (its features say which
tile it builds); taking one applies all its steps.

``train(kernels, evaluator_factory, episodes)``: episodes round-robin over the kernels
(programs or library names), each from the root for up to ``max_depth`` steps, measuring
``children`` siblings per state (``_train``);
``evaluator_factory(root)`` gives the evaluator of a kernel (called once per kernel: a real
one for rewards, or a ``CostModelEvaluator`` for cheap rollouts).  ``search(...)`` keeps the
``Agent`` contract (``search.Session``: budget with the baseline counted, no state measured
twice, events, stop): best-first over Q, the next measurement is the untried (state, action)
of highest Q among the ``frontier`` best measured states (epsilon: a random one), and the
network (a copy: the agent itself is unchanged) keeps learning from the search's own
measurements (``qagent_search.py``).  ``save(path)``/``load(path)``: ``.npz`` weights plus
their configuration;
``QAgent(weights=...)``: ``"default"`` (the shipped ``data/qagent.npz``, trained by
``bench/qagent_transfer.py`` on the library without softmax, when present and fitting the
embedder), a path, or None (untrained: it then learns from the search alone).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from ..kernels import load_kernel
from ..printer import print_program
from ..replay_cache import SHARED
from .base import Agent, SearchResult
from .embedding import HashedEmbedding
from .features import (ACTION_DIM, FEATURE_DIM, MACRO_PREFIX, action_matrix, analyze,
                       state_features)
from .macros import macro_moves
from .qagent_search import FAIL_REWARD, by_kind_choice, q_search
from .qnetwork import (QNetwork, ReplayBuffer, Transition, max_reward_target,
                       single_threaded_blas)
from .search import searched_actions

# trained by: python bench/qagent_transfer.py --holdout softmax --episodes 32 --max-depth 4
#                 --weights dojo_core/agents/data/qagent.npz
DEFAULT_WEIGHTS = Path(__file__).resolve().parent / "data" / "qagent.npz"
MAX_UNROLL = 32


class QAgent(Agent):
    name = "q"

    def __init__(self, gamma: float = 0.8, hidden=(64, 64), lr: float = 1e-3,
                 epsilon: float = 0.1, max_depth: int = 6, batch: int = 32,
                 target_every: int = 25, buffer: int = 4000, frontier: int = 3,
                 online_updates: int = 2, embedder=None, seed: int = 0,
                 weights="default", macros: bool = True):
        self.gamma, self.hidden, self.lr, self.epsilon = gamma, tuple(hidden), lr, epsilon
        self.max_depth, self.batch, self.target_every = max_depth, batch, target_every
        self.frontier, self.online_updates = frontier, online_updates
        self.embedder = embedder if embedder is not None else HashedEmbedding()
        self.seed, self.macros = seed, macros
        self.net: Optional[QNetwork] = None
        self.target: Optional[QNetwork] = None
        self.buffer = ReplayBuffer(buffer)
        self.updates = 0
        self.normalized = False
        self.losses: list = []
        if weights == "default":
            if DEFAULT_WEIGHTS.is_file():
                try:
                    self.load_weights(DEFAULT_WEIGHTS)
                except ValueError:
                    pass                     # another embedder: starts untrained
        elif weights is not None:
            self.load_weights(weights)

    # ------------------------------------------------------------------ encoding

    def candidates(self, program, gpu: bool = False) -> list:
        """The candidate texts of a state (module docstring): macros first, then the legal
        actions in actions() order."""
        return self.moves(program, gpu)[0]

    def moves(self, program, gpu: bool = False) -> tuple:
        """(texts, step sequences) of the candidates: the steps that taking each applies."""
        texts, seqs = [], []
        for move in (macro_moves(program) if self.macros else []):
            texts.append(f"{MACRO_PREFIX} {move.label}")
            seqs.append(tuple(move.steps))
        for text in self._atomic(program, gpu):
            texts.append(text)
            seqs.append((text,))
        return texts, seqs

    def _atomic(self, program, gpu: bool) -> list:
        loops = analyze(program).loops

        def too_long(words):
            return words[1] in loops and loops[words[1]].extent > MAX_UNROLL
        return [a.text for a in searched_actions(program, gpu)
                if not (a.kind == "unroll" and too_long(a.text.split()))]

    def encode(self, root_features: np.ndarray, program, texts: list) -> np.ndarray:
        """The input rows of (program, text) for every text: shape (len(texts), in_dim)."""
        s = state_features(program)
        emb = self.embedder.embed(print_program(program))
        state = np.concatenate([s, s - root_features, emb]).astype(np.float32)
        acts = action_matrix(program, texts)
        return np.hstack([np.repeat(state[None, :], len(texts), axis=0), acts])

    def _ensure_net(self, rows: np.ndarray) -> None:
        if self.net is None:
            self.net = QNetwork(rows.shape[1], self.hidden, self.seed)
            self.target = QNetwork(rows.shape[1], self.hidden, self.seed)
        if not self.normalized and len(rows):
            self.net.set_normalization(rows)
            self.target.copy_from(self.net)
            self.normalized = True

    # ------------------------------------------------------------------ learning

    def td_targets(self, batch: list, target: QNetwork, online: Optional[QNetwork] = None):
        """max(r, gamma * Q_target(s', a*)) per transition; a* maximizes the online network
        when given (double Q: less overestimation from noisy maxima), else the target."""
        live = [t.next_x for t in batch if t.next_x is not None and len(t.next_x)]
        if live:                         # one forward pass per network for the whole batch
            stacked = np.vstack(live)
            target_q = target.predict(stacked)
            online_q = online.predict(stacked) if online is not None else target_q
        out, start = [], 0
        for t in batch:
            next_q = None
            if t.next_x is not None and len(t.next_x):
                end = start + len(t.next_x)
                q, pick = target_q[start:end], online_q[start:end]
                next_q = q[[int(np.argmax(pick))]]
                start = end
            out.append(max_reward_target(t.reward, next_q, self.gamma))
        return np.array(out)

    def update(self, rng: np.random.Generator, net=None, target=None, buffer=None) -> float:
        """One minibatch step on the TD loss; copies the target network every
        ``target_every`` updates.  Returns the loss (before the step)."""
        net, target = net or self.net, target or self.target
        buffer = buffer if buffer is not None else self.buffer
        batch = buffer.sample(self.batch, rng)
        if not batch:
            return math.nan
        x = np.stack([t.x for t in batch])
        loss = net.fit_batch(x, self.td_targets(batch, target, net), self.lr)
        if net is self.net:
            self.updates += 1
            if self.updates % self.target_every == 0:
                self.target.copy_from(self.net)
        return loss

    def td_loss(self, transitions: list) -> float:
        """Mean squared TD error of the current network on the given transitions."""
        if not transitions:
            return math.nan
        x = np.stack([t.x for t in transitions])
        err = self.net.predict(x) - self.td_targets(transitions, self.target, self.net)
        return float(np.mean(err ** 2))

    def _pick_rows(self, texts, x, eps, rng, count) -> list:
        """``count`` distinct candidate rows: the first by Q (random with probability eps),
        the others drawn at random by kind."""
        rows = [by_kind_choice(texts, rng) if rng.random() < eps
                else int(np.argmax(self.net.predict(x)))]
        for _ in range(8 * count):
            if len(rows) >= min(count, len(texts)):
                break
            row = by_kind_choice(texts, rng)
            if row not in rows:
                rows.append(row)
        return rows

    def train(self, kernels, evaluator_factory: Callable, episodes: int, **options) -> dict:
        """Train on the kernels; see ``_train`` (run with single-threaded BLAS)."""
        with single_threaded_blas():
            return self._train(kernels, evaluator_factory, episodes, **options)

    def _train(self, kernels, evaluator_factory: Callable, episodes: int, *, seed: int = 0,
               children: int = 3, updates_per_step: int = 2, epsilon_start: float = 1.0,
               epsilon_end: Optional[float] = None, log: Optional[Callable] = None) -> dict:
        """Train on the kernels (module docstring): at each state of an episode, ``children``
        candidates are measured (one chosen epsilon-greedily, the others at random: contrast
        between siblings is what ranks actions), all become transitions, and the episode
        goes on from the best of them (a random one with probability epsilon).  Returns
        {"episodes", "measurements", "updates", "losses": [mean TD loss per episode],
        "best": {kernel: best log speedup seen}}."""
        rng = np.random.default_rng(seed)
        roots = [load_kernel(k, {}) if isinstance(k, str) else k for k in kernels]
        evaluators = [evaluator_factory(r) for r in roots]
        gpu = [bool(getattr(e, "gpu", False)) for e in evaluators]
        root_feats = [state_features(r) for r in roots]
        states = SHARED
        root_moves = [self.moves(r, g) for r, g in zip(roots, gpu)]
        self._ensure_net(np.vstack([self.encode(f, r, texts)
                                    for f, r, (texts, _) in zip(root_feats, roots, root_moves)]))
        eps_end = self.epsilon if epsilon_end is None else epsilon_end
        base = [None] * len(roots)
        stats = {"episodes": 0, "measurements": 0, "updates": 0, "losses": [], "best": {}}
        for episode in range(episodes):
            k = episode % len(roots)
            root, ev, name = roots[k], evaluators[k], getattr(roots[k], "name", str(k))
            if base[k] is None:
                m = ev.evaluate(root, ())
                stats["measurements"] += 1
                base[k] = m.median_s if m.ok else None
            if base[k] is None:
                continue
            eps = epsilon_start + (eps_end - epsilon_start) * episode / max(1, episodes - 1)
            steps = ()
            texts, seqs = root_moves[k]
            x = self.encode(root_feats[k], root, texts) if texts else None
            losses = []
            for _ in range(self.max_depth):
                if x is None:
                    break
                rows = self._pick_rows(texts, x, eps, rng, children)
                answers = ev.evaluate_many([(root, steps + seqs[r]) for r in rows])
                stats["measurements"] += len(rows)
                reached = []
                for row, m in zip(rows, answers):
                    child = steps + seqs[row]
                    ok = m.ok and m.median_s > 0
                    reward = math.log(base[k] / m.median_s) if ok else FAIL_REWARD
                    stats["best"][name] = max(stats["best"].get(name, 0.0), reward)
                    next_texts, next_seqs, next_x = [], [], None
                    if ok:
                        program = states.program(root, child)
                        next_texts, next_seqs = self.moves(program, gpu[k])
                        if next_texts:
                            next_x = self.encode(root_feats[k], program, next_texts)
                    self.buffer.add(Transition(x[row], reward, next_x))
                    if next_x is not None:
                        reached.append((reward, child, next_texts, next_seqs, next_x))
                for _ in range(updates_per_step * len(rows)):
                    losses.append(self.update(rng))
                if not reached:
                    break
                pick = (reached[rng.integers(len(reached))] if rng.random() < eps
                        else max(reached, key=lambda r: r[0]))
                _, steps, texts, seqs, x = pick
            stats["episodes"] += 1
            stats["losses"].append(float(np.nanmean(losses)) if losses else math.nan)
            if log is not None:
                log(f"episode {episode} {name} eps {eps:.2f} depth {len(steps)} "
                    f"loss {stats['losses'][-1]:.4f} best {stats['best'].get(name, 0):.2f}")
        stats["updates"] = self.updates
        self.losses.extend(stats["losses"])
        return stats

    # ------------------------------------------------------------------ search

    def search(self, root, evaluator, budget: int, *, seed: int = 0, on_event=None,
               should_stop=None) -> SearchResult:
        with single_threaded_blas():
            return q_search(self, root, evaluator, budget, seed, on_event, should_stop)

    # ------------------------------------------------------------------ persistence

    def config(self) -> dict:
        return {"gamma": self.gamma, "hidden": list(self.hidden), "lr": self.lr,
                "epsilon": self.epsilon, "max_depth": self.max_depth, "batch": self.batch,
                "target_every": self.target_every, "frontier": self.frontier,
                "online_updates": self.online_updates, "seed": self.seed,
                "macros": self.macros,
                "embedder": self.embedder.name, "feature_dim": FEATURE_DIM,
                "action_dim": ACTION_DIM}

    def save(self, path) -> None:
        if self.net is None:
            raise ValueError("the Q-agent has no network yet (train it first)")
        np.savez_compressed(path, config=np.array(json.dumps(self.config())),
                            **{f"net_{k}": v for k, v in self.net.state().items()})

    @classmethod
    def load(cls, path, embedder=None) -> "QAgent":
        """An agent with the saved weights; ValueError when they do not fit this code's
        features or the given embedder."""
        config, arrays = _read_saved(path)
        agent = cls(**{k: config[k] for k in ("gamma", "hidden", "lr", "epsilon", "max_depth",
                                               "batch", "target_every", "frontier",
                                               "online_updates", "seed")}, embedder=embedder,
                    weights=None, macros=config.get("macros", False))
        agent._install(path, config, arrays)
        return agent

    def load_weights(self, path) -> None:
        """Take the network of a saved agent (its other settings stay this agent's)."""
        try:
            config, arrays = _read_saved(path)
        except (OSError, KeyError, ValueError) as exc:
            raise ValueError(f"{path}: not Q-agent weights ({type(exc).__name__}: {exc})") from None
        self._install(path, config, arrays)

    def _install(self, path, config: dict, arrays: dict) -> None:
        if (config["feature_dim"], config["action_dim"]) != (FEATURE_DIM, ACTION_DIM) or \
                config["embedder"] != self.embedder.name:
            raise ValueError(f"{path}: weights for features {config['feature_dim']}/"
                             f"{config['action_dim']} and embedder {config['embedder']}, "
                             f"not {FEATURE_DIM}/{ACTION_DIM} and {self.embedder.name}")
        self.net = QNetwork(1)
        self.net.load_state(arrays)
        self.target = QNetwork(1)
        self.target.copy_from(self.net)
        self.normalized = True


def _read_saved(path) -> tuple:
    """(configuration, network arrays) of a file written by ``QAgent.save``."""
    with np.load(path, allow_pickle=False) as data:
        config = json.loads(str(data["config"]))
        arrays = {k[4:]: data[k] for k in data.files if k.startswith("net_")}
    return config, arrays
