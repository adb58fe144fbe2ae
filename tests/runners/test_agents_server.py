"""ServerEvaluator against the real web app (webapp.launch) with two real runners: jobs
through POST /api/jobs, candidates spread over both runners in parallel, refusals as
Measurements; and a greedy search through the server whose history replays."""
from concurrent.futures import ThreadPoolExecutor

import pytest

from dojo_core.agents import make_agent
from dojo_core.agents.server_evaluator import ServerEvaluator
from dojo_core.kernels import kernel_path, load_kernel
from dojo_core.parser import parse
from dojo_core.printer import print_program
from dojo_core.records import RecordStore

from live_server import Server

SMALL = {"N": 16, "M": 16, "K": 16}


@pytest.fixture
def server(tmp_path):
    s = Server(tmp_path)                     # with its local runner "local"
    try:
        s.start_runner("rb", "pool", s.token())
        s.wait_online("local", "rb", timeout=120)
        yield s
    finally:
        s.stop()


def test_server_evaluator_spreads_over_runners(server, tmp_path):
    root = load_kernel("matmul", SMALL)
    ev = ServerEvaluator(server.url, runners=["local", "rb"], min_time=0.01, token=server.api_token,
                         store=RecordStore(tmp_path / "m.jsonl"))
    items = [(root, ()), (root, ("split i by 4",)), (root, ("split j by 4",)),
             (root, ("interchange i j",))]
    results = ev.evaluate_many(items)
    assert all(m.ok and m.median_s > 0 for m in results), results
    assert {m.runner for m in results} == {"local", "rb"}
    assert ev.evaluate(root, ("split i by 4",)).source == "cache"
    assert len(list(RecordStore(tmp_path / "m.jsonl"))) == 4

    illegal = ev.evaluate(root, ("fuse x y",))
    assert illegal.median_s is None and "illegal step" in illegal.error
    nobody = ServerEvaluator(server.url, runners=["nobody"], token=server.api_token).evaluate(root, ())
    assert nobody.median_s is None and ("HTTP 409" in nobody.error or "HTTP 400" in nobody.error)
    assert "nobody" in nobody.error

    result = make_agent("greedy", width=3).search(root, ev, 5)
    assert len(result.trials) == 5 and result.baseline.measurement.ok
    assert result.to_history()["steps"][0]["ir"]


def test_parse_is_thread_safe():
    """The server parses submitted sources in several threads at once (the evaluator's
    parallel runners): lark's shared Indenter once made that a 500 now and then."""
    source = kernel_path("attention").read_text()
    expected = print_program(parse(source))

    def work(_):
        return [print_program(parse(source)) for _ in range(25)]
    with ThreadPoolExecutor(4) as pool:                  # an exception in a thread fails the test here
        printed = [text for texts in pool.map(work, range(4)) for text in texts]
    assert printed == [expected] * 100
