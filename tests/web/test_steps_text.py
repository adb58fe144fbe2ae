"""Schedules as text: the path to a step as a ``.steps`` text (the command line's format)
and the replay of a pasted one, all lines checked before anything is stored."""
from __future__ import annotations

from html import unescape

import pytest
from django.test import Client

from dojo_core import kernels
from dojo_core.printer import print_program
from dojo_core.steps import parse_steps, read_steps, replay
from webapp.histories import transfer
from webapp.histories.models import Step

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


def start(client, kernel="matmul"):
    r = client.post("/new", {"kernel": kernel})
    assert r.status_code == 302, r.content
    return r["Location"].split("/")[2]


def apply(client, sid, parent, action):
    r = client.post(f"/s/{sid}/apply", {"parent": parent, "action": action})
    assert r.status_code == 302, r.content
    return int(r["Location"].split("step=")[1])


def test_the_steps_text_is_the_path_and_replays_on_the_command_line_to_the_same_ir(tmp_path):
    c = Client()
    sid = start(c)
    one = apply(c, sid, 0, "split i by 32")
    apply(c, sid, 0, "split j by 8")                                   # another branch: not in the path
    two = apply(c, sid, one, "split j by 16")
    text = c.get(f"/s/{sid}/steps.txt?step={two}")
    assert text.status_code == 200 and text["Content-Type"].startswith("text/plain")
    assert f'filename="{sid}-step{two}.steps"' in text["Content-Disposition"]
    body = text.content.decode()
    assert [s for _, s in parse_steps(body)] == ["split i by 32", "split j by 16"]
    assert body.startswith("# matmul: session")
    path = tmp_path / "path.steps"
    path.write_text(body)
    program = replay(kernels.load_kernel("matmul"), read_steps(path), str(path))
    assert print_program(program) == Step.objects.get(session_id=sid, index=two).ir
    html = c.get(f"/s/{sid}/?step={two}").content.decode()
    assert 'id="copy-steps"' in html and "split i by 32\nsplit j by 16\n</textarea>" in html
    assert 'id="replay-form"' in html and "nothing is applied and that line is named" in html
    assert c.get(f"/s/{sid}/steps.txt?step=99").status_code == 404


def test_replay_applies_every_line_from_the_viewed_step_and_shows_the_last():
    c = Client()
    sid = start(c)
    one = apply(c, sid, 0, "split i by 32")
    text = "# from the command line\nsplit j by 16   # a comment\n\ninterchange i1 j0\n"
    r = c.post(f"/s/{sid}/replay", {"parent": one, "steps": text}, **HX)
    assert r.status_code == 200, r.content
    steps = {s.index: s for s in Step.objects.filter(session_id=sid)}
    last = max(steps)
    assert [steps[last].text, steps[steps[last].parent].text] == ["interchange i1 j0", "split j by 16"]
    assert steps[steps[last].parent].parent == one
    assert r["HX-Push-Url"] == f"/s/{sid}/?step={last}" and f'data-step="{last}"' in r.content.decode()
    # the same text again reuses the steps it made (no duplicates)
    r = c.post(f"/s/{sid}/replay", {"parent": one, "steps": text})
    assert r.status_code == 302 and r["Location"] == f"/s/{sid}/?step={last}"
    assert Step.objects.filter(session_id=sid).count() == len(steps)


@pytest.mark.parametrize("text, line, why", [
    ("split i by 32\nsplit q by 4\nsplit j by 2\n", 2, "'split q by 4' is not legal there"),
    ("split i by 32\n\n# ok so far\ninterchange i0 k\n", 4, "'interchange i0 k' is not legal there"),
    ("split i by 32\n" + "split j by 2 " * 40 + "\n", 2, "action too long"),
])
def test_an_illegal_line_is_named_with_its_reason_and_nothing_is_applied(text, line, why):
    c = Client()
    sid = start(c)
    r = c.post(f"/s/{sid}/replay", {"parent": 0, "steps": text}, **HX)
    body = unescape(r.content.decode())
    assert r.status_code == 400 and r["HX-Retarget"] == "#replay-error"
    assert f"line {line}: " in body and why in body and "nothing was applied" in body
    assert Step.objects.filter(session_id=sid).count() == 1
    r = c.post(f"/s/{sid}/replay", {"parent": 0, "steps": text})          # without JavaScript: the page
    assert r.status_code == 400 and f"line {line}: " in r.content.decode()
    assert 'id="replay-text"' in r.content.decode() and Step.objects.filter(session_id=sid).count() == 1


def test_bad_replays_are_400_or_403_with_a_reason():
    owner, other = Client(), Client()
    sid = start(owner)
    assert owner.post(f"/s/{sid}/replay", {"parent": 0, "steps": "# only a comment\n"}).status_code == 400
    assert owner.post(f"/s/{sid}/replay", {"parent": "x", "steps": "split i by 2"}).status_code == 400
    assert owner.post(f"/s/{sid}/replay", {"parent": 7, "steps": "split i by 2"}).status_code == 404
    assert owner.post(f"/s/{sid}/replay", {"parent": 0, "steps": "split i by 2\n" * 501}).status_code == 400
    r = other.post(f"/s/{sid}/replay", {"parent": 0, "steps": "split i by 2"})
    assert r.status_code == 403 and "fork it" in r.content.decode()
    assert owner.get(f"/s/{sid}/replay").status_code == 405
    assert Step.objects.filter(session_id=sid).count() == 1


def test_steps_text_service_counts_and_sizes():
    c = Client()
    sid = start(c, "relu")
    one = apply(c, sid, 0, "split i by 4")
    session = transfer.Session.objects.get(id=sid)
    text = transfer.steps_text(session, one)
    assert text.splitlines()[0] == f"# relu: session {sid}, step {one} (1 step)"
    assert text.splitlines()[1].startswith("# sizes: ") and text.endswith("split i by 4\n")
    assert [s for _, s in parse_steps(transfer.steps_text(session, 0))] == []
