"""The MCTS agent: UCT over the tree of moves, with measured rewards.

A node is a measured state; its children are its moves in prior order, added one at a time
(progressive widening: a node with n visits has at most ``1 + widen * sqrt(n)`` children).
Each iteration selects a path by UCB1 on the best reward seen below each child (max-backup:
the game is to find one fast kernel, not a good average), expands the node at its end with
its next fresh move and measures the child; with probability ``rollout_p`` it also plays
``rollout_depth`` random moves from there and measures the end of that rollout (a
multi-step jump between measurements), crediting the child with the better reward.
Reward: log(baseline time / time), -1 for a failed state.  The node's next fresh move is
handed to the evaluator's ``prepare`` with each child measured (the local evaluator compiles
both at once: the next expansion finds it built).  Deterministic for a given seed and
evaluator answers.
"""
from __future__ import annotations

import math
import random

from .base import Agent
from .search import Session


class _Node:
    __slots__ = ("steps", "children", "moves", "visits", "value")

    def __init__(self, steps):
        self.steps, self.children, self.moves = steps, [], None
        self.visits, self.value = 0, -1.0


class MCTSAgent(Agent):
    name = "mcts"

    def __init__(self, c: float = 0.7, widen: float = 2.0, rollout_p: float = 0.3,
                 rollout_depth: int = 2, prior=None, macros: bool = True):
        self.c, self.widen, self.prior, self.macros = c, widen, prior, macros
        self.rollout_p, self.rollout_depth = rollout_p, rollout_depth

    def search(self, root, evaluator, budget, *, seed=0, on_event=None, should_stop=None):
        rng = random.Random(seed)
        session = Session(self.name, root, evaluator, budget, on_event, should_stop)
        session.baseline()
        tree = _Node(())
        tree.visits, tree.value = 1, 0.0
        failures = 0
        while not session.done and failures < 50:
            path = [tree]
            node = tree
            while True:
                if node.moves is None:
                    node.moves = [c for _, c in session.moves(node.steps, self.prior, self.macros)]
                limit = 1 + self.widen * math.sqrt(node.visits)
                if node.moves and len(node.children) < limit:
                    break
                if not node.children:
                    break
                node = self._select(node, rng)
                path.append(node)
            child = None
            while node.moves:
                steps = node.moves.pop(0)
                if session.fresh(steps):
                    child = steps
                    break
            if child is None:
                node.visits += 1           # a dead end: make it less attractive
                failures += 1
                for n in path:
                    n.visits += 1
                continue
            trial = session.measure_one(child, ahead=self._next_fresh(session, node, child))
            if trial is None:
                failures += 1
                continue
            failures = 0
            reward = session.reward(child)
            if rng.random() < self.rollout_p and not session.done:
                reward = max(reward, self._rollout(session, child, rng))
            new = _Node(child)
            new.visits, new.value = 1, reward
            node.children.append(new)
            for n in path:
                n.visits += 1
                n.value = max(n.value, reward)
        return session.finish()

    @staticmethod
    def _next_fresh(session, node, child) -> tuple:
        """The node's next fresh move other than ``child`` (about to be measured), the one
        its next expansion measures, dropping the stale ones before it as that expansion
        would: () when it has none."""
        while node.moves:
            if node.moves[0] != child and session.fresh(node.moves[0]):
                return (node.moves[0],)
            node.moves.pop(0)
        return ()

    def _select(self, node, rng) -> _Node:
        scale = max(1e-9, max(abs(c.value) for c in node.children))
        log_n = math.log(max(1, node.visits))

        def ucb(c):
            return c.value / scale + self.c * math.sqrt(log_n / c.visits) + 1e-6 * rng.random()
        return max(node.children, key=ucb)

    def _rollout(self, session, steps, rng) -> float:
        for _ in range(self.rollout_depth):
            moves = session.moves(steps, self.prior, self.macros)[:12]
            if not moves:
                break
            steps = rng.choice(moves)[1]
        trial = session.measure_one(steps)
        return session.reward(steps) if trial is not None else -1.0
