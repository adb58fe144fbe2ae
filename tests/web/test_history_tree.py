"""The history tree: an order that does not depend on the viewed step, agent runs as one
collapsible node each, the best path, the data the "measured only" filter and the page's
script use, the plot line along one branch, and the live updates a viewer's socket gets
(new steps, the step count, no results for steps its tree lacks)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone as tz

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils import timezone

from webapp.agents.groups import run_groups
from webapp.agents.models import AgentRun
from webapp.asgi import application
from webapp.histories import push, services
from webapp.histories.plot import roofline_svg, speedup_svg
from webapp.histories.present import walk_items, best_step, history_tree
from webapp.runners.models import Job

T0 = datetime(2026, 1, 1, tzinfo=tz.utc)
ORIGIN = [(b"origin", b"http://127.0.0.1:8000")]


@dataclass
class FakeStep:
    index: int
    parent: int | None
    text: str = ""
    created: datetime = T0


def fake_steps(parents: dict) -> dict:
    return {i: FakeStep(i, p, "" if p is None else f"step {i}", T0 + timedelta(seconds=i)) for i, p in parents.items()}


# 0 ─ 1 ─ 2 ─ 3
#  │   └ 4 ─ 5
#  └ 6
PARENTS = {0: None, 1: 0, 2: 1, 3: 2, 4: 1, 5: 4, 6: 0}


def order(tree) -> list:
    return [it["index"] for it in walk_items(tree["items"])]


def measured(speedups: dict, runner="r1") -> dict:
    return {i: {"best": {"median_s": 1.0 / s}, "best_speedup": s, "jobs": [],
                "by_runner": {runner: {"median_s": 1.0 / s}}} for i, s in speedups.items()}


def test_order_is_the_same_whatever_step_is_viewed_and_lists_every_step_once():
    steps = fake_steps(PARENTS)
    orders = {tuple(order(history_tree(steps, 0, {}, viewed))) for viewed in list(steps) + [None]}
    assert len(orders) == 1
    (only,) = orders
    assert sorted(only) == sorted(steps)
    tree = history_tree(steps, 0, {}, 5)
    root = tree["items"][0]
    assert [it["index"] for it in tree["items"]] == [0, 1, 2, 3]           # first children continue the line
    assert [[it["index"] for it in br] for br in root["branches"]] == [[6]]
    assert [[it["index"] for it in br] for br in tree["items"][1]["branches"]] == [[4, 5]]
    marks = {it["index"]: (it["viewed"], it["on_path"]) for it in walk_items(tree["items"])}
    assert marks[5] == (True, True) and marks[4] == (False, True) and marks[1] == (False, True)
    assert marks[2] == (False, False) and marks[6] == (False, False)


def test_best_path_leads_to_the_fastest_step_of_the_runner_that_measured_most():
    steps = fake_steps(PARENTS)
    tree = history_tree(steps, 0, measured({0: 1.0, 2: 1.5, 5: 3.0, 6: 2.0}), 6)
    assert tree["best"] == 5 and tree["best_path"] == [0, 1, 4, 5]
    flags = {it["index"]: it["best_path"] for it in walk_items(tree["items"])}
    assert [i for i, f in sorted(flags.items()) if f] == [0, 1, 4, 5]
    assert tree["measured"] == 4
    # a faster time on a runner that measured fewer steps does not win: times of two runners don't compare
    results = measured({0: 1.0, 2: 1.5, 3: 2.0})
    results[6] = {"best": {"median_s": 0.01}, "by_runner": {"gpu": {"median_s": 0.01}}}
    assert best_step(results, steps) == 3
    assert best_step({}, steps) is None and history_tree(steps, 0, {}, 0)["best_path"] == []


def test_an_agent_run_becomes_one_node_open_only_while_it_runs_or_holds_the_viewed_step():
    steps = fake_steps(PARENTS)
    run = {"id": 7, "agent": "random", "state": "done", "final": True, "steps": {1, 2, 3, 4, 5}}
    tree = history_tree(steps, 0, measured({0: 1.0, 3: 2.0, 5: 4.0}), 0, [run])
    root = tree["items"][0]
    assert [it["index"] for it in tree["items"]] == [0, 6]       # the run's steps hang under its node
    assert root["branches"] == []
    (node,) = root["runs"]
    assert node["id"] == 7 and node["count"] == 5 and node["measured"] == 2 and not node["open"]
    assert node["top"]["index"] == 5 and node["has_best"] and node["best_path"]
    assert sorted(order(tree)) == sorted(steps)                   # nothing is lost inside the node
    assert history_tree(steps, 0, {}, 4, [run])["items"][0]["runs"][0]["open"]
    assert history_tree(steps, 0, {}, 0, [dict(run, state="running", final=False)])["items"][0]["runs"][0]["open"]


def test_a_run_that_continues_from_a_users_step_gets_its_node_there():
    steps = fake_steps(PARENTS)
    run = {"id": 3, "agent": "greedy", "state": "done", "final": True, "steps": {4, 5}}
    tree = history_tree(steps, 0, {}, 0, [run])
    step1 = tree["items"][1]
    assert step1["index"] == 1 and step1["runs"][0]["count"] == 2 and step1["branches"] == []
    assert [it["index"] for it in tree["items"]] == [0, 1, 2, 3]


@pytest.mark.django_db
def test_run_groups_count_the_steps_a_run_made_not_those_it_reused():
    session, _ = services.create_session(services.Actor(owned=frozenset()), kernel="relu")
    actor = services.Actor(owned=frozenset({session.id}))
    before, _ = services.add_step(session, actor, 0, "split i by 4")          # the user's, reused by the run
    run = AgentRun.objects.create(session=session, agent="random", budget=5, state=AgentRun.RUNNING,
                                  started=timezone.now())
    a, _ = services.add_step(session, actor, before.index, "split i1 by 2")
    b, _ = services.add_step(session, actor, 0, "split i by 2")
    steps = services.steps_of(session)
    (group,) = run_groups(session, steps)
    assert group["steps"] == {a.index, b.index}                            # active: everything new under it
    AgentRun.objects.filter(id=run.id).update(state=AgentRun.DONE, finished=timezone.now(),
                                              trials=[{"step": 0}, {"step": a.index}])
    user, _ = services.add_step(session, actor, 0, "split i by 8")           # after the run ended
    steps = services.steps_of(session)
    (group,) = run_groups(session, steps)
    assert group["steps"] == {a.index}                                     # finished: what it measured
    assert user.index not in group["steps"] and before.index not in group["steps"]


def test_the_plot_joins_only_the_steps_of_one_branch_in_path_order():
    series = {"r1": [(0, 1.0), (2, 1.5), (3, 2.0), (6, 3.0)]}
    svg = speedup_svg(series, path=[0, 1, 2, 3])
    (points,) = re.findall(r'<polyline class="branch-line[^"]*" data-runner="r1" points="([^"]*)"', svg)
    assert len(points.split()) == 3                                        # 0, 2, 3: not 6
    assert 'data-step="6"' in svg and 'data-step="0"' in svg
    unjoined = speedup_svg(series)
    assert re.search(r'<polyline class="branch-line[^"]*" data-runner="r1" points=""', unjoined)


def test_the_plots_carry_no_colour_of_their_own():
    series = {"r1": [(0, 1.0), (2, 1.5)], "r2": [(0, 1.0), (2, 2.5)]}
    svgs = [speedup_svg(series, path=[0, 2]),
            roofline_svg("r1", (100.0, 20.0), [(0, 0.5, 5.0), (2, 2.0, 30.0)])]
    for svg in svgs:
        assert svg and not re.search(r'(fill|stroke)="#', svg)           # the theme's CSS colours them
    assert 'class="branch-line series s0"' in svgs[0] and 'class="branch-line series s1"' in svgs[0]
    assert 'class="roof"' in svgs[1] and 'class="frame"' in svgs[1]


# ============================================================================ pages and pushes

def start(client, kernel="relu"):
    r = client.post("/new", {"kernel": kernel})
    assert r.status_code == 302, r.content
    return r["Location"].split("/")[2]


def done_job(sid, index, median):
    return Job.objects.create(state="done", source="-", session_id=sid, step_index=index, finished=timezone.now(),
                              result={"median_s": median, "min_s": median, "max_s": median, "verified": True,
                                      "runner": "r1"})


@pytest.mark.django_db
def test_editor_shows_a_collapsed_run_node_the_best_step_and_a_share_link_with_the_step():
    c = Client()
    sid = start(c)
    session = services.get_session(sid)
    run = AgentRun.objects.create(session=session, agent="random", budget=3, state=AgentRun.RUNNING,
                                  started=timezone.now())
    for action in ("split i by 4", "split i by 2"):
        assert c.post(f"/s/{sid}/apply", {"parent": 0, "action": action}).status_code == 302
    AgentRun.objects.filter(id=run.id).update(state=AgentRun.DONE, finished=timezone.now(),
                                              trials=[{"step": 1}, {"step": 2}])
    done_job(sid, 0, 0.004)
    done_job(sid, 2, 0.001)
    html = c.get(f"/s/{sid}/?step=0").content.decode()
    node = re.search(r'<li class="run-node[^"]*" id="run-node-(\d+)-0" data-run="(\d+)"', html)
    assert node and node.group(1) == str(run.id)
    assert re.search(rf'<details id="run-details-{run.id}-0" data-open="0">', html)     # collapsed
    assert "random run #" in html and "2 steps" in html
    assert re.search(r'id="tree-2" data-index="2" data-parent="0" data-measured="1" data-best-path="1" '
                     r'data-best="1"', html)
    assert 'id="tree-1" data-index="1" data-parent="0">' in html                        # not measured
    assert 'id="tree-measured-only"' in html and 'id="tree-box"' in html
    assert '<span id="step-count">3 steps</span>' in html
    assert f'value="http://testserver/s/{sid}/?step=0"' in html
    html = c.get(f"/s/{sid}/?step=2").content.decode()
    assert re.search(rf'<details id="run-details-{run.id}-0" open data-open="1">', html)  # holds the viewed step
    assert f'value="http://testserver/s/{sid}/?step=2"' in html


@pytest.mark.django_db(transaction=True)
def test_a_viewers_socket_gets_new_steps_and_never_results_before_their_step(settings, monkeypatch):
    settings.DOJO_REAPER_INTERVAL = 0
    session, _ = services.create_session(services.Actor(), kernel="relu")
    owner = services.Actor(owned=frozenset({session.id}))
    add = database_sync_to_async(services.add_step)

    async def run():
        comm = WebsocketCommunicator(application, f"/ws/s/{session.id}/?steps=1", headers=ORIGIN)
        assert (await comm.connect())[0]
        # the owner adds a step: the viewer's tree and step count follow
        step, _ = await add(session, owner, 0, "split i by 4")
        html = await comm.receive_from(timeout=10)
        assert '<ul class="tree" id="tree" hx-swap-oob="true"' in html and f'id="tree-{step.index}"' in html
        assert '<span id="step-count" hx-swap-oob="true">2 steps</span>' in html
        # a repeated announcement with nothing new sends nothing
        await get_channel_layer().group_send(f"session-{session.id}", {"type": "steps.update"})
        assert await comm.receive_nothing(timeout=0.3)
        # a result for a step the viewer's tree lacks (its announcement lost): the tree comes with it, first
        monkeypatch.setattr(push, "announce_steps", lambda sid: None)
        later, _ = await add(session, owner, 0, "split i by 2")
        assert await comm.receive_nothing(timeout=0.3)
        job = {"id": 5, "state": "running", "session_id": session.id, "step_index": later.index, "runner": "r1",
               "result": None}
        await get_channel_layer().group_send(f"session-{session.id}", {"type": "job.update", "job": job})
        html = await comm.receive_from(timeout=10)
        assert f'id="tree-{later.index}"' in html and '<span id="step-count" hx-swap-oob="true">3 steps' in html
        assert html.index('id="tree"') < html.index('id="job-5"')
        # the next update of a step it has: no tree again
        await get_channel_layer().group_send(f"session-{session.id}", {"type": "job.update", "job": job})
        html = await comm.receive_from(timeout=10)
        assert 'id="job-5"' in html and 'id="tree"' not in html
        await comm.disconnect()

    async_to_sync(run)()
