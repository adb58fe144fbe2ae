"""Server time to apply a step and render the updated editor panels (issue 6 target:
median under 100 ms on matmul after 10 steps).

A matmul session gets the first 10 steps of dojo_core/kernels/matmul.steps; then each
measurement applies one more legal action at step 10 (a new branch each time, so the
replay, the new state's action list, the highlighted IR, the tree and the IR diff are
computed for a state never seen before) through the editor's htmx endpoint, in process
(Django test client, a throwaway SQLite database).  The legal actions of the new state
are a panel loaded right after the swap (hx-trigger="load"): their time (dojo_core's
actions(), uncached) is reported on its own and summed.  Also reported: the same with
the C diff tab open (C code generated for the new step), and the full editor page GET.

    python bench/web_apply.py [--repeats 30]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args(argv)

    state = tempfile.mkdtemp(prefix="dojo-bench-web-")
    os.environ["DOJO_STATE_DIR"] = state
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django
    django.setup()
    from django.core.management import call_command
    call_command("migrate", verbosity=0, interactive=False)
    from django.test import Client

    from dojo_core.kernels import steps_path
    from dojo_core.steps import read_steps
    from webapp.histories import engine, services
    from webapp.histories.models import Session

    steps = [text for _, text in read_steps(steps_path("matmul"))][:10]
    c = Client()
    sid = c.post("/new", {"kernel": "matmul"})["Location"].split("/")[2]
    for k, text in enumerate(steps):
        r = c.post(f"/s/{sid}/apply", {"parent": k, "action": text})
        assert r.status_code == 302, (text, r.status_code)
    session = Session.objects.get(id=sid)
    program = services.program_at(session, 10)
    candidates = [a.text for a in engine.actions_of(program)]
    print(f"matmul after {len(steps)} steps: {len(candidates)} legal actions at step 10")

    actions_times = []
    both = []

    def measure(code, n):
        times = []
        for text in candidates[:n]:
            t = time.perf_counter()
            r = c.post(f"/s/{sid}/apply", {"parent": 10, "action": text, "code": code},
                       HTTP_HX_REQUEST="true")
            times.append(time.perf_counter() - t)
            assert r.status_code == 200, (text, r.status_code, r.content[:300])
            index = int(r["HX-Push-Url"].split("step=")[1])
            t2 = time.perf_counter()          # the deferred panel: the new state's legal actions
            assert c.get(f"/s/{sid}/actions?step={index}", HTTP_HX_REQUEST="true").status_code == 200
            actions_times.append(time.perf_counter() - t2)
            both.append(time.perf_counter() - t)
        return times

    n = min(args.repeats, len(candidates) // 2)
    ir_times = measure("ir", n)
    candidates[:] = candidates[n:]
    c_times = measure("c", n)
    page = []
    for _ in range(n):
        t = time.perf_counter()
        assert c.get(f"/s/{sid}/?step=10").status_code == 200
        page.append(time.perf_counter() - t)

    def show(label, xs):
        xs = sorted(xs)
        print(f"{label:46s} median {statistics.median(xs) * 1e3:7.1f} ms   "
              f"p90 {xs[int(0.9 * (len(xs) - 1))] * 1e3:7.1f} ms   (n={len(xs)})")

    show("apply + render editor (IR diff tab)", ir_times)
    show("apply + render editor (C diff tab)", c_times)
    show("then the actions panel of the new step", actions_times)
    show("both requests together", both)
    show("GET editor page at step 10 (warm caches)", page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
