"""The Q-agent's search: best-first over Q, with the network learning online.

Owns ``q_search``, the body of ``QAgent.search`` (see ``qagent.py``): the next measurement
is the untried (state, action) of highest Q among the agent's ``frontier`` best measured
states (with probability ``epsilon`` a random untried action of the best one, its kind
drawn first), and a copy of the agent's network keeps learning from the search's own
measurements; also ``by_kind_choice`` and ``FAIL_REWARD``, which training shares.

Guarantees: the ``Agent`` contract of ``search.Session`` (budget with the baseline counted,
no state measured twice, events, stop); the agent passed in is never modified except that
an agent without a normalised network gets one from the root's candidates (as training
would).
"""
from __future__ import annotations

import numpy as np

from .base import SearchResult
from .features import state_features
from .qnetwork import QNetwork, ReplayBuffer, Transition
from .search import Session

FAIL_REWARD = -1.0


def by_kind_choice(texts: list, rng: np.random.Generator) -> int:
    """A random candidate, the kind drawn first (so that the many splits do not crowd out
    the rarer moves)."""
    kinds = sorted({t.split()[0] for t in texts})
    kind = kinds[rng.integers(len(kinds))]
    rows = [i for i, t in enumerate(texts) if t.split()[0] == kind]
    return rows[rng.integers(len(rows))]


def q_search(agent, root, evaluator, budget: int, seed: int, on_event, should_stop) -> SearchResult:
    """The body of ``QAgent.search`` (module docstring); ``agent`` is left unchanged."""
    rng = np.random.default_rng(seed)
    session = Session(agent.name, root, evaluator, budget, on_event, should_stop)
    gpu = bool(getattr(evaluator, "gpu", False))
    root_feats = state_features(root)
    session.baseline()
    net, target = QNetwork(1), QNetwork(1)
    pool: dict = {}                     # steps -> [texts, rows, q, tried flags, step seqs]

    def open_state(steps):
        program = session.program(steps)
        texts, seqs = agent.moves(program, gpu)
        rows = agent.encode(root_feats, program, texts) if texts else None
        pool[steps] = [texts, rows, None, np.zeros(len(texts), dtype=bool), seqs]

    open_state(())
    if agent.net is None or not agent.normalized:
        if pool[()][1] is None:
            return session.finish()
        agent._ensure_net(pool[()][1])
    net.copy_from(agent.net)
    target.copy_from(agent.net)
    net._m = [np.zeros_like(p) for p in net.params]
    net._v = [np.zeros_like(p) for p in net.params]
    local = ReplayBuffer(max(64, budget))
    updates = 0
    while not session.done:
        measured = [t for t in session.result.trials if t.median_s is not None
                    and tuple(t.steps) in pool]
        measured.sort(key=lambda t: (t.median_s, len(t.steps)))
        choices = []
        for t in measured[:agent.frontier]:
            entry = pool[tuple(t.steps)]
            if entry[1] is None:
                continue
            if entry[2] is None:
                entry[2] = net.predict(entry[1])
            for i in np.flatnonzero(~entry[3]):
                choices.append((float(entry[2][i]), tuple(t.steps), int(i)))
        if not choices:
            break
        if rng.random() < agent.epsilon:
            best_steps = choices[0][1]
            texts = pool[best_steps][0]
            open_rows = [i for i in range(len(texts)) if not pool[best_steps][3][i]]
            pick = open_rows[by_kind_choice([texts[i] for i in open_rows], rng)]
            parent, row = best_steps, pick
        else:
            _, parent, row = max(choices, key=lambda c: c[0])
        entry = pool[parent]
        entry[3][row] = True
        child = parent + entry[4][row]
        trial = session.measure_one(child)
        if trial is None:
            continue                     # not fresh (same state or code): no cost
        reward = session.reward(child)
        next_x = None
        if trial.median_s is not None:
            open_state(child)
            next_x = pool[child][1]
        else:
            reward = FAIL_REWARD
        local.add(Transition(entry[1][row], reward, next_x))
        for _ in range(agent.online_updates):
            batch = local.sample(agent.batch, rng)
            x = np.stack([t.x for t in batch])
            net.fit_batch(x, agent.td_targets(batch, target, net), agent.lr)
            updates += 1
            if updates % agent.target_every == 0:
                target.copy_from(net)
        for e in pool.values():
            e[2] = None                  # rescored lazily with the updated network
    return session.finish()
