"""The numpy pieces of the Q-agent: an MLP with Adam, the replay buffer, the max-reward target.

``QNetwork(in_dim, hidden=(64, 64), seed=0)``: a ReLU MLP scoring rows of (state, action)
inputs, one Q value per row; inputs are centred and scaled with ``mean``/``std`` (set once by
``set_normalization``, std floored at 1; saved with the weights).  ``fit_batch(x, targets, lr)`` is one Adam
step on the Huber loss and returns the loss before the step; ``copy_from`` copies weights
(the target network's periodic update); ``state()``/``load_state()`` give plain arrays for
``.npz`` files.  Deterministic in its seed.

``max_reward_target(reward, next_q, gamma)``: the max-reward Q-learning target of PerfLLM,
``max(r, gamma * max(next_q))``, or ``r`` when there is no next action (terminal).

``single_threaded_blas()``: the context the agent trains and searches in (see there).

``ReplayBuffer(capacity)``: the last ``capacity`` transitions; ``sample(n, rng)`` draws
without replacement (all of them when fewer).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Optional

import numpy as np


def single_threaded_blas():
    """A context in which numpy's BLAS uses one thread (threadpoolctl, when installed):
    these matrices are small, and on a loaded machine BLAS threads spinning against each
    other make a forward pass ten times slower.  A no-op without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def max_reward_target(reward: float, next_q: Optional[np.ndarray], gamma: float) -> float:
    if next_q is None or len(next_q) == 0:
        return float(reward)
    return float(max(reward, gamma * float(np.max(next_q))))


@dataclass
class Transition:
    """x: the (state, action) input row; next_x: the input rows of every candidate action of
    the state reached (None when terminal); reward: log speedup of the state reached."""
    x: np.ndarray
    reward: float
    next_x: Optional[np.ndarray]


class ReplayBuffer:
    def __init__(self, capacity: int = 4000):
        self.capacity = capacity
        self.items: list = []
        self._next = 0

    def __len__(self) -> int:
        return len(self.items)

    def add(self, transition: Transition) -> None:
        if len(self.items) < self.capacity:
            self.items.append(transition)
        else:
            self.items[self._next] = transition
        self._next = (self._next + 1) % self.capacity

    def sample(self, n: int, rng: np.random.Generator) -> list:
        if n >= len(self.items):
            return list(self.items)
        return [self.items[i] for i in rng.choice(len(self.items), size=n, replace=False)]


class QNetwork:
    def __init__(self, in_dim: int, hidden=(64, 64), seed: int = 0):
        rng = np.random.default_rng(seed)
        dims = [in_dim, *hidden, 1]
        self.params = []
        for a, b in zip(dims[:-1], dims[1:]):
            gain = 0.01 if b == 1 else 1.0          # Q starts near 0: no bootstrapped noise
            self.params.append(rng.standard_normal((a, b)) * np.sqrt(2.0 / a) * gain)
            self.params.append(np.zeros(b))
        self.mean = np.zeros(in_dim)
        self.std = np.ones(in_dim)
        self._m = [np.zeros_like(p) for p in self.params]
        self._v = [np.zeros_like(p) for p in self.params]
        self._t = 0

    @property
    def in_dim(self) -> int:
        return self.params[0].shape[0]

    def set_normalization(self, x: np.ndarray) -> None:
        self.mean = x.mean(axis=0).astype(np.float64)
        std = x.std(axis=0)
        self.std = np.maximum(std, 1.0).astype(np.float64)   # no blow-up of rare features

    def _forward(self, x: np.ndarray) -> tuple:
        h = (np.asarray(x, dtype=np.float64) - self.mean) / self.std
        activations = [h]
        layers = len(self.params) // 2
        for i in range(layers):
            h = h @ self.params[2 * i] + self.params[2 * i + 1]
            if i < layers - 1:
                h = np.maximum(h, 0.0)
            activations.append(h)
        return h[:, 0], activations

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Q of every row (float32 arithmetic: the hot path of targets and search)."""
        if len(x) == 0:
            return np.zeros(0)
        h = ((np.asarray(x, dtype=np.float32) - self.mean.astype(np.float32))
             / self.std.astype(np.float32))
        layers = len(self.params) // 2
        for i in range(layers):
            h = h @ self.params[2 * i].astype(np.float32) + self.params[2 * i + 1].astype(np.float32)
            if i < layers - 1:
                np.maximum(h, 0.0, out=h)
        return h[:, 0].astype(np.float64)

    def fit_batch(self, x: np.ndarray, targets: np.ndarray, lr: float = 1e-3,
                  delta: float = 1.0) -> float:
        q, acts = self._forward(x)
        err = q - np.asarray(targets, dtype=np.float64)
        loss = float(np.mean(np.where(np.abs(err) <= delta, 0.5 * err ** 2,
                                      delta * (np.abs(err) - 0.5 * delta))))
        grad = (np.clip(err, -delta, delta) / len(err))[:, None]
        grads = [None] * len(self.params)
        layers = len(self.params) // 2
        for i in reversed(range(layers)):
            grads[2 * i] = acts[i].T @ grad
            grads[2 * i + 1] = grad.sum(axis=0)
            if i > 0:
                grad = (grad @ self.params[2 * i].T) * (acts[i] > 0)
        self._t += 1
        b1, b2 = 0.9, 0.999
        for p, g, m, v in zip(self.params, grads, self._m, self._v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= lr * (m / (1 - b1 ** self._t)) / (np.sqrt(v / (1 - b2 ** self._t)) + 1e-8)
        return loss

    def copy_from(self, other: "QNetwork") -> None:
        self.params = [p.copy() for p in other.params]
        self.mean, self.std = other.mean.copy(), other.std.copy()

    def state(self) -> dict:
        out = {f"p{i}": p for i, p in enumerate(self.params)}
        out.update(mean=self.mean, std=self.std)
        return out

    def load_state(self, arrays) -> None:
        count = sum(1 for k in arrays if k.startswith("p") and k[1:].isdigit())
        self.params = [np.asarray(arrays[f"p{i}"], dtype=np.float64) for i in range(count)]
        self.mean = np.asarray(arrays["mean"], dtype=np.float64)
        self.std = np.asarray(arrays["std"], dtype=np.float64)
        self._m = [np.zeros_like(p) for p in self.params]
        self._v = [np.zeros_like(p) for p in self.params]
        self._t = 0
