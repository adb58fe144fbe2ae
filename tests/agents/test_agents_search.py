"""Search agents (dojo_core/agents/): the budget rule, determinism, events, should_stop and
to_history() replay, with the FAKE analytic evaluator of tests/agents_fake.py (it tests the
search logic, not speed); each agent once with the real LocalEvaluator at tiny sizes; the
evaluators' cache; the `search` command."""
import json
import os
import subprocess
import sys

import pytest

from dojo_core.agents import AGENTS, make_agent
from dojo_core.agents.base import SearchResult
from dojo_core.agents.evaluators import LocalEvaluator
from dojo_core.agents.search import (CONFIRM_CANDIDATES, CONFIRM_ROUNDS,
                                     MIN_CANDIDATES_BUDGET)
from dojo_core.kernels import kernel_path, load_kernel
from dojo_core.printer import print_program
from dojo_core.records import RecordStore
from dojo_core.transforms import apply_step

from agents_fake import AnalyticEvaluator

NAMES = ["random", "greedy", "beam", "mcts"]
SOFTMAX = {"N": 8, "M": 16}
MATMUL = {"N": 16, "M": 16, "K": 16}


def replay_history(history):
    """Apply every step of an exported history from its parent and compare the IR."""
    from dojo_core.parser import parse
    programs = {0: parse(history["source"])}
    assert print_program(programs[0]) == history["steps"][0]["ir"]
    for step in history["steps"][1:]:
        program = apply_step(programs[step["parent"]], step["text"])
        assert print_program(program) == step["ir"]
        programs[step["index"]] = program
    return programs


def test_registry_and_unknown_agent():
    assert set(NAMES) <= set(AGENTS)
    with pytest.raises(ValueError, match="known: .*greedy"):
        make_agent("nope")


@pytest.mark.parametrize("name", NAMES)
def test_budget_events_and_history(name):
    root = load_kernel("matmul", MATMUL)
    ev, events = AnalyticEvaluator(), []
    result = make_agent(name).search(root, ev, 25, seed=1, on_event=events.append)
    assert isinstance(result, SearchResult)
    assert len(result.trials) == len(ev.calls) <= 25
    assert result.trials[0].steps == () and ev.calls[0] == ()
    assert [e.index for e in events] == list(range(len(result.trials)))
    assert all(e.budget == 25 for e in events)
    assert events[-1].best == result.best
    assert len({t.steps for t in result.trials}) == len(result.trials)     # never twice
    assert result.best.median_s < result.baseline.median_s
    history = result.to_history()
    programs = replay_history(history)
    best = programs[history["current"]]
    expected = root
    for text in result.best.steps:
        expected = apply_step(expected, text)
    assert print_program(best) == print_program(expected)
    assert json.loads(json.dumps(history)) == history


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_for_a_seed(name):
    root = load_kernel("softmax", SOFTMAX)
    runs = [make_agent(name).search(root, AnalyticEvaluator(), 15, seed=7) for _ in range(2)]
    assert [t.steps for t in runs[0].trials] == [t.steps for t in runs[1].trials]


@pytest.mark.parametrize("name", NAMES)
def test_should_stop_ends_early(name):
    root = load_kernel("softmax", SOFTMAX)
    seen = []
    result = make_agent(name).search(root, AnalyticEvaluator(), 50, seed=0,
                                     on_event=seen.append, should_stop=lambda: len(seen) >= 4)
    assert result.stopped and len(result.trials) == 4


def test_failures_are_trials_not_exceptions():
    root = load_kernel("softmax", SOFTMAX)
    ev = AnalyticEvaluator(fail_steps={"vectorize j", "parallelize i"})
    result = make_agent("greedy").search(root, ev, 12)
    failed = [t for t in result.trials if not t.measurement.ok]
    assert failed and all(t.median_s is None for t in failed)
    assert "vectorize j" not in result.best.steps


@pytest.mark.parametrize("name", NAMES)
def test_agent_with_local_evaluator(name, tmp_path):
    root = load_kernel("softmax", SOFTMAX)
    ev = LocalEvaluator(min_time=0.001, store=RecordStore(tmp_path / "m.jsonl"))
    try:
        result = make_agent(name).search(root, ev, 4, seed=0)
    finally:
        ev.close()
    assert len(result.trials) == 4
    assert all(t.measurement.ok for t in result.trials), [t.measurement for t in result.trials]
    records = list(RecordStore(tmp_path / "m.jsonl"))
    assert len(records) == 4 and {r["state_hash"] for r in records}.__len__() == 4
    replay_history(result.to_history())


def test_local_cache_wrong_outputs_and_prior(tmp_path):
    store = RecordStore(tmp_path / "m.jsonl")
    root = load_kernel("softmax", SOFTMAX)
    ev = LocalEvaluator(min_time=0.001, store=store)
    try:
        first = ev.evaluate(root, ("vectorize j",))
        assert first.ok and first.source == "measured"
        assert ev.evaluate(root, ("vectorize j",)).source == "cache"
        bad = ev.evaluate(root, ("no such step",))
        assert bad.error and bad.median_s is None
    finally:
        ev.close()
    again = LocalEvaluator(min_time=0.001, store=store)     # a new process would see the file
    hit = again.evaluate(root, ("vectorize j",))
    assert hit.source == "cache" and hit.median_s == first.median_s
    again.close()
    calls = []

    def prior(program, moves):
        calls.append(len(moves))
        return [1.0 if m.label == "split i by 4" else 0.0 for m in moves]
    result = make_agent("greedy", width=1, prior=prior).search(root, AnalyticEvaluator(), 2)
    assert calls and result.trials[1].steps == ("split i by 4",)


def test_wrong_outputs_and_worker_failures(tmp_path):
    import numpy as np
    root = load_kernel("softmax", SOFTMAX)
    ev = LocalEvaluator(min_time=0.001, store=RecordStore(tmp_path / "m.jsonl"))
    try:
        key, inputs, reference = ev._reference(root)
        ev._references[key] = (inputs, {"Y": np.zeros_like(reference["Y"])})   # a wrong answer
        wrong = ev.evaluate(root, ("vectorize l",))
        assert not wrong.verified and wrong.median_s is None and "differ" in wrong.error
        assert ev.evaluate(root, ("vectorize l",)).verified is False          # cached as such
        lib_path = "/nonexistent/kernel.so"
        answer = ev._worker.measure(root_key="other", inputs=inputs, reference=None,
                                    program=root, path=lib_path, params={}, threads=None,
                                    timeout=30)
        assert "error" in answer and "OSError" in answer["error"]
        ev._references[key] = (inputs, reference)
        # timing takes 5 s (the kernel is large enough that the harness's cap of a million
        # repetitions does not end it sooner on a fast host): killed after 0.5 s
        ev.min_time, ev.timeout = 5.0, 0.5
        slow = ev.evaluate(load_kernel("softmax", {"N": 256, "M": 1024}), ("vectorize k",))
        assert slow.error and "timed out" in slow.error
        ev.min_time, ev.timeout = 0.001, 60
        assert ev.evaluate(root, ("vectorize j",)).ok                           # restarted
    finally:
        ev.close()


def _search(*args, cwd):
    return subprocess.run([sys.executable, "-m", "dojo_core", "search", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "DOJO_LLM_ENDPOINT"})


def test_search_command(tmp_path):
    kernel = str(kernel_path("softmax"))
    r = _search(kernel, "--agent", "greedy", "--budget", "5", "--size", "N=8", "M=16",
                "--min-time", "0.001", "--records", str(tmp_path / "m.jsonl"),
                "--history", str(tmp_path / "h.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["measurements"] == 5 and out["baseline_median_s"] > 0
    assert out["best_median_s"] <= out["baseline_median_s"]
    assert isinstance(out["best_steps"], list) and out["agent"] == "greedy"
    history = json.loads((tmp_path / "h.json").read_text())
    programs = replay_history(history)
    assert len(programs) >= 5
    assert len(list(RecordStore(tmp_path / "m.jsonl"))) == 5


@pytest.mark.parametrize("args, message", [
    (["--agent", "nope", "--budget", "3"], "unknown agent 'nope' (known: beam, greedy"),
    (["--agent", "greedy", "--budget", "0"], "--budget 0: expected a positive integer"),
    (["--agent", "greedy", "--budget", "3", "--runner", "x"], "--runner needs --server"),
    (["--agent", "llm", "--budget", "3"], "agent 'llm': the llm agent needs an endpoint"),
])
def test_search_usage_errors(tmp_path, args, message):
    r = _search(str(kernel_path("softmax")), *args, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr


def test_search_bad_kernel_is_located(tmp_path):
    (tmp_path / "bad.dojo").write_text("kernel k(N = 4)\nin A: f32[N]\nout B: f32[N]\n"
                                       "for i in 0..N:\n  B[i] = C[i]\n")
    r = _search("bad.dojo", "--agent", "random", "--budget", "2", cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.startswith("bad.dojo:5:") and "Traceback" not in r.stderr


class _Retimed(AnalyticEvaluator):
    """FAKE: the analytic model, plus scripted re-timings for the confirmation."""

    def __init__(self, retimings):
        super().__init__()
        self.retimings, self.asked = retimings, []

    def remeasure(self, items, rounds=2):
        self.asked.append(([tuple(s) for _, s in items], rounds))
        return self.retimings


@pytest.mark.parametrize("retimings,kept", [
    ([[1.0, 1.1, 1.0], [0.5, 0.6, 0.5]], "best"),      # faster in every re-timing
    ([[1.0, 1.1, 1.0], [0.9, 1.05, 0.9]], "root"),     # within the root's spread
    ([[1.0, 1.0, 1.0], [0.99, 0.985, 0.99]], "root"),  # faster every time, by under MIN_GAIN
    ([[1.0, 1.0, 1.0], [0.97, 0.975, 0.97]], "best"),  # faster every time, by over MIN_GAIN
    ([[1.0, 1.1, 1.0], None], "root"),                 # the best state failed when re-timed
])
def test_the_best_state_is_kept_only_if_its_retimings_beat_the_roots(retimings, kept):
    root = load_kernel("softmax", SOFTMAX)
    evaluator = _Retimed(retimings)
    result = make_agent("greedy").search(root, evaluator, 12, seed=0)
    assert len(result.trials) == 12 - 2 * CONFIRM_ROUNDS   # timings kept for the confirmation
    (states, rounds), = evaluator.asked
    assert states[0] == () and states[1] and rounds == CONFIRM_ROUNDS == 3
    assert result.confirmation["kept"] == kept
    if kept == "root":
        assert result.best is result.baseline and result.speedup == 1.0
    else:
        assert tuple(result.best.steps) == states[1] and result.speedup > 1.0


@pytest.mark.parametrize("retimings,kept", [
    # the fastest of the search was a lucky draw; the second re-times fastest
    ([[1.0, 1.0, 1.0], [0.9, 0.95, 1.2], [0.6, 0.6, 0.61], [0.7, 0.7, 0.7]], 2),
    ([[1.0, 1.0, 1.0], [0.5, 0.5, 0.5], [0.6, 0.6, 0.61], [0.7, 0.7, 0.7]], 1),
    ([[1.0, 1.0, 1.0], [0.9, 0.95, 1.2], [0.99, 0.99, 0.99], None], 0),   # none beats the root
])
def test_a_large_budget_confirms_the_fastest_states_and_keeps_the_fastest_retimed(retimings,
                                                                                  kept):
    root = load_kernel("softmax", SOFTMAX)
    evaluator = _Retimed(retimings)
    budget = MIN_CANDIDATES_BUDGET
    result = make_agent("greedy").search(root, evaluator, budget, seed=0)
    assert CONFIRM_CANDIDATES == 3
    assert len(result.trials) <= budget - (1 + CONFIRM_CANDIDATES) * CONFIRM_ROUNDS
    (states, rounds), = evaluator.asked
    assert states[0] == () and len(states) == 1 + CONFIRM_CANDIDATES and rounds == CONFIRM_ROUNDS
    search_s = [next(t.median_s for t in result.trials if tuple(t.steps) == s)
                for s in states[1:]]
    assert search_s == sorted(search_s)          # the fastest of the search, in order
    c = result.confirmation
    assert [tuple(x["steps"]) for x in c["candidates"]] == states[1:]
    if kept == 0:
        assert c["kept"] == "root" and result.best is result.baseline
    else:
        assert c["kept"] == "best" and tuple(result.best.steps) == states[kept]
        assert c["best_s"] == retimings[kept]


def test_no_confirmation_below_its_budget_or_without_retiming():
    root = load_kernel("softmax", SOFTMAX)
    assert make_agent("greedy").search(root, _Retimed([[1], [1]]), 9).confirmation is None
    result = make_agent("greedy").search(root, AnalyticEvaluator(), 12)
    assert result.confirmation is None and len(result.trials) == 12


def test_confirmation_with_the_real_evaluator():
    root = load_kernel("matmul", {"N": 64, "M": 64, "K": 64})
    evaluator = LocalEvaluator(min_time=0.005, threads=1)
    try:
        result = make_agent("greedy").search(root, evaluator, 10, seed=0)
    finally:
        evaluator.close()
    c = result.confirmation
    assert c is not None and len(c["root_s"]) == len(c["best_s"]) == CONFIRM_ROUNDS
    assert c["kept"] == ("best" if max(c["best_s"]) < min(c["root_s"]) else "root")
    assert "confirm" in result.phases


def test_a_stopped_search_is_confirmed_too():
    root = load_kernel("softmax", SOFTMAX)
    evaluator = _Retimed([[1.0, 1.1, 1.0], [0.95, 1.05, 0.95]])
    calls = []
    result = make_agent("greedy").search(root, evaluator, 20, seed=0,
                                         should_stop=lambda: calls.append(1) or len(calls) > 8)
    assert result.stopped and len(result.trials) < 16
    assert result.confirmation["kept"] == "root" and result.best is result.baseline


FLOYD_LIKE = """kernel floyd(N = 64)
inout path: i32[N, N]

for k in 0..N:
  for i in 0..N:
    for j in 0..N:
      path[i, j] min= path[i, k] + path[k, j]
"""


def test_splits_of_the_innermost_loop_rank_first():
    from dojo_core.agents.search import candidate_moves
    from dojo_core.parser import parse
    moves = [m for m in candidate_moves(parse(FLOYD_LIKE), threads=1) if m.kind == "split"]
    loops = [m.steps[0].split()[1] for m in moves]
    assert set(loops) == {"k", "i", "j"}
    assert loops[:loops.count("j")] == ["j"] * loops.count("j")


ROWS = """kernel rows(N = 16, M = 32)
in  A: f32[N, M]
out B: f32[N, M]

for i in 0..N:
  for j in 0..M:
    B[i, j] = A[i, j] + 1
"""


def test_no_unroll_that_copies_out_a_loop_is_searched():
    from dojo_core.agents.search import copies_loops, searched_actions
    from dojo_core.parser import parse
    from dojo_core.transforms import actions
    split = apply_step(parse(ROWS), "split j by 8")
    assert {"unroll i", "unroll j0", "unroll j1"} <= {a.text for a in actions(split)}
    searched = {a.text for a in searched_actions(split) if a.kind == "unroll"}
    assert searched == {"unroll j1"}                   # i and j0 would copy out j1's loop
    assert copies_loops(split, "j0") and not copies_loops(split, "j1")
    vectorized = apply_step(split, "vectorize j1")
    searched = {a.text for a in searched_actions(vectorized) if a.kind == "unroll"}
    assert searched == {"unroll j0"}                   # a register tile's row loop


class _Preparing(AnalyticEvaluator):
    """FAKE: the analytic model, recording the batches handed to ``prepare``."""

    def __init__(self):
        super().__init__()
        self.prepared = []

    def prepare(self, items):
        self.prepared.append([tuple(s) for _, s in items])


def test_a_batch_is_prepared_before_any_of_it_is_measured():
    root = load_kernel("softmax", SOFTMAX)
    evaluator = _Preparing()
    make_agent("greedy", width=6).search(root, evaluator, 16, seed=0)
    assert evaluator.prepared and all(len(b) > 1 for b in evaluator.prepared)
    first = evaluator.prepared[0]
    assert evaluator.calls[1:1 + len(first)] == first    # measured in the prepared order
    prepared = {s for b in evaluator.prepared for s in b}
    assert set(evaluator.calls[1:]) <= prepared


def test_prepare_compiles_the_batch_into_the_cache(tmp_path, monkeypatch):
    from dojo_core import harness
    from dojo_core.agents import evaluators
    from dojo_core.replay_cache import SHARED
    from dojo_core.transforms import actions
    monkeypatch.setenv("DOJO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(evaluators, "compile_workers", lambda: 2)    # in parallel on 1 core too
    root = load_kernel("matmul", MATMUL)
    batch = [()] + [(a.text,) for a in actions(root) if a.kind in ("split", "interchange")][:3]
    evaluator = LocalEvaluator(min_time=0.001, threads=1)
    try:
        evaluator.prepare([(root, s) for s in batch])
        assert len(list(tmp_path.glob("*.so"))) == len(batch)
        assert all(harness.build(SHARED.program(root, s), evaluator.target).compiled.cached
                   for s in batch)
        m = evaluator.evaluate(root, batch[1])
        assert m.error is None and m.verified and m.median_s > 0
    finally:
        evaluator.close()


def test_mcts_prepares_the_move_its_next_expansion_measures():
    root = load_kernel("softmax", SOFTMAX)
    evaluator = _Preparing()
    plain = make_agent("mcts").search(root, AnalyticEvaluator(), 16, seed=3)
    result = make_agent("mcts").search(root, evaluator, 16, seed=3)
    assert [t.steps for t in result.trials] == [t.steps for t in plain.trials]   # same search
    pairs = [b for b in evaluator.prepared if len(b) == 2]
    assert pairs and all(b[0] != b[1] for b in pairs)
    measured = [tuple(t.steps) for t in result.trials]
    assert sum(b[1] in measured for b in pairs) >= len(pairs) // 2    # most are measured later
