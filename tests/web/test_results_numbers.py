"""Numbers you can trust: speedups only within one batch on one runner (one definition for the
results table, the tree and the agents' panel), spread and noise with named thresholds, the
runner's measured peaks and the roofline, the provenance of a result (compiler, flags,
threads, verified, max error), and a schedule with gpu binds refused with its reason."""
from __future__ import annotations

import json

import pytest
from django.test import Client

from runners.execute import bench_command

from webapp.agents import live
from webapp.histories.present import fmt_time
from webapp.agents.models import AgentRun
from webapp.api.jobs import submit_step
from webapp.histories import integration, services
from webapp.histories.models import Session
from webapp.histories.numbers import spread_bar
from webapp.histories.views.bench import job_update_html
from webapp.runners import protocol, results
from webapp.runners.models import Job, RegistrationToken, Runner
from webapp.runners.services import GpuBindsRefused, NoRunner, gpu_binds, submit_benchmark
from webapp.runners.shapes import job_dict

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
PEAKS = {"gflops": 200.0, "gbytes_per_s": 20.0, "threads": 2, "vector_bytes": 64, "target": "x86-avx512",
         "method": "test"}
HW = {"cpu": {"arch": "x86_64", "model": "Test CPU", "cores": 2}, "gpus": []}


@pytest.fixture(autouse=True)
def broker_and_offline_after(memory_broker, settings):
    settings.DOJO_RUNNER_OFFLINE_AFTER = 15


def register(name="r1", peaks=PEAKS, hw=HW):
    _, raw = RegistrationToken.issue(note="test", uses=1)
    protocol.register(raw, name, ["cpu"], hw, {}, peaks=peaks)
    return Runner.objects.get(name=name)


def start(client, kernel="matmul", sizes="16"):
    r = client.post("/new", {"kernel": kernel, "size_N": sizes, "size_M": sizes, "size_K": sizes})
    assert r.status_code == 302, r.content
    return r["Location"].split("/")[2]


def apply(client, sid, parent, action):
    r = client.post(f"/s/{sid}/apply", {"parent": parent, "action": action})
    assert r.status_code in (200, 302), r.content


def split_history(client):
    """(session id, Session, its owner) of a matmul history with step 1 = split i by 8."""
    sid = start(client)
    apply(client, sid, 0, "split i by 8")
    return sid, Session.objects.get(id=sid), services.Actor(owned=frozenset({sid}))


def finish(runner, job, median, spread=0.02, baseline=None, **extra):
    """The runner claims ``job`` and reports a verified result with quartiles."""
    protocol.claim(runner, job.id)
    result = {"median_s": median, "min_s": median * 0.95, "max_s": median * 1.3,
              "q1_s": median * (1 - spread / 2), "q3_s": median * (1 + spread / 2), "verified": True,
              "verified_against": "interp", "max_error": 0.0123, "compiler": "cc (Debian 12.2.0-14) 12.2.0",
              "flags": ["-O3", "-march=native", "-fopenmp", "-shared", "-fPIC"], "threads": 2,
              "gflops": 2 * 16 ** 3 / median / 1e9, "gbytes_per_s": 3 * 4 * 16 ** 2 / median / 1e9, **extra}
    if baseline is not None:
        result["baseline"] = {"median_s": baseline, "min_s": baseline * 0.97, "max_s": baseline * 1.1,
                              "q1_s": baseline * 0.99, "q3_s": baseline * 1.01}
    protocol.report(runner, job.id, 1, "done", result)
    return Job.objects.get(id=job.id)


def measure(runner, session, actor, step, median, submit=None, **result):
    """``finish`` of a benchmark of ``step`` submitted for ``actor`` on r1 (``submit``: more
    arguments of ``submit_step``)."""
    job = Job.objects.get(id=submit_step(session, actor, step, "r1", **(submit or {}))["id"])
    return finish(runner, job, median, **result)


# ============================================================================ the definitions

def m(job, step, median, batch="b1", runner="r1", baseline=None, **timing):
    return {"job": job, "step": step, "median_s": median, "batch": batch, "runner": runner,
            "baseline": {"median_s": baseline} if baseline else None, **timing}


def test_speedup_divides_medians_of_one_batch_on_one_runner_only():
    ms = [m(1, 0, 0.040, batch="agent-1"),                  # the agent's root
          m(2, 3, 0.010, batch="agent-1"),                  # same batch, same runner: 4x
          m(3, 3, 0.010, batch="agent-1", runner="r2"),     # same batch, no root on r2: none
          m(4, 5, 0.020, batch="b-x", baseline=0.050),      # the root timed in its own job: 2.5x
          m(5, 5, 0.020, batch="b-y"),                      # another batch, no root in it: none
          m(6, 0, 0.030, batch="b-z")]                      # a root is its own baseline
    results.assign_speedups(ms)
    assert [x["speedup"] for x in ms] == [1.0, 4.0, None, 2.5, None, 1.0]
    assert ms[1]["baseline_s"] == 0.040 and ms[4]["baseline_s"] is None


def test_noise_uses_the_iqr_and_falls_back_to_the_range_with_named_thresholds():
    quiet = {"median_s": 1.0, "min_s": 0.5, "max_s": 9.0, "q1_s": 0.98, "q3_s": 1.03}
    assert results.noise(quiet) == pytest.approx((0.05, "iqr"))
    assert not results.noisy(quiet)                         # one slow outlier is not noise
    wide = {**quiet, "q1_s": 0.9, "q3_s": 0.9 + 1.0 * (results.NOISY_IQR + 0.01)}
    assert results.noisy(wide)
    issue = {"median_s": 12.4e-3, "min_s": 3.6e-3, "max_s": 23.1e-3, "q1_s": None, "q3_s": None}
    value, kind = results.noise(issue)
    assert kind == "range" and value > results.NOISY_RANGE and results.noisy(issue)
    assert results.noise(None) == (None, "")


def test_a_noisy_in_job_baseline_makes_the_speedup_noisy():
    x = m(1, 2, 0.01, baseline=0.02, q1_s=0.0099, q3_s=0.0101)
    x["baseline"].update(q1_s=0.015, q3_s=0.025)
    results.assign_speedups([x])
    assert x["speedup"] == 2.0 and x["noisy"]


def test_roofline_shares_come_from_the_runners_measured_peaks():
    point = {"gflops": 50.0, "gbytes_per_s": 10.0, "peaks": {"gflops": 200.0, "gbytes_per_s": 20.0}}
    roof = results.roofline(point)
    assert roof["intensity"] == 5.0 and roof["flops_share"] == 0.25 and roof["bw_share"] == 0.5
    assert roof["roof_share"] == 0.5                        # below the ridge (10): roof 5 x 20 GB/s
    past = results.roofline({**point, "gbytes_per_s": 2.5})        # 20 flop/byte: roof 200 GFLOP/s
    assert past["roof_share"] == 0.25
    assert results.roofline({**point, "peaks": {}}) is None
    assert results.roofline({**point, "gbytes_per_s": None}) is None


# ============================================================================ runner peaks

def test_registration_stores_the_measured_peaks_and_the_result_carries_them():
    runner = register()
    assert runner.peaks["gflops"] == 200.0 and runner.peaks["gbytes_per_s"] == 20.0
    listed = Client().get("/api/runners").json()["runners"]
    assert listed[0]["peaks"]["gflops"] == 200.0
    job = submit_benchmark(open("dojo_core/kernels/matmul.dojo").read(), [], {"N": 16, "M": 16, "K": 16})
    done = finish(runner, job, 0.001)
    assert done.result["peaks"]["gbytes_per_s"] == 20.0
    # registering again without peaks keeps them
    _, raw = RegistrationToken.issue(note="again", uses=1, replaces="r1")
    protocol.register(raw, "r1", [], HW, {})
    assert Runner.objects.get(name="r1").peaks["gflops"] == 200.0


@pytest.mark.parametrize("peaks, reason", [
    ({"gflops": 10}, "peaks.gbytes_per_s"),
    ({"gflops": -1, "gbytes_per_s": 3}, "peaks.gflops"),
    ({"gflops": True, "gbytes_per_s": 3}, "peaks.gflops"),
    ([1, 2], "peaks: an object"),
])
def test_bad_peaks_are_refused_with_400(peaks, reason):
    _, raw = RegistrationToken.issue(note="test", uses=1)
    r = Client().post("/api/runners/register", json.dumps({"token": raw, "name": "rx", "labels": [],
                                                          "hardware": HW, "peaks": peaks}),
                      content_type="application/json")
    assert r.status_code == 400 and reason in r.json()["error"]
    assert not Runner.objects.filter(name="rx").exists()


# ============================================================================ jobs: baseline, batch

def test_a_step_benchmark_times_the_root_in_the_same_job_and_the_root_alone_does_not():
    register()
    c = Client()
    sid, session, actor = split_history(c)
    step1 = submit_step(session, actor, 1, "r1")
    root = submit_step(session, actor, 0, "r1")
    assert step1["options"].get("baseline") is True and step1["batch"]
    assert "baseline" not in root["options"] and root["batch"] != step1["batch"]
    agent = submit_step(session, actor, 1, "r1", batch="agent-7", baseline=False)
    assert agent["batch"] == "agent-7" and "baseline" not in agent["options"]


def test_the_runner_adds_baseline_to_the_bench_command_only_for_steps():
    spec = {"steps": ["split i by 8"], "options": {"baseline": True}, "sizes": {}}
    assert "--baseline" in bench_command(spec)
    assert "--baseline" not in bench_command({**spec, "steps": []})
    assert "--baseline" not in bench_command({**spec, "options": {}})


def test_results_table_tree_and_agent_panel_use_the_one_speedup():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    # an earlier, faster root measurement in another batch must not be used
    measure(runner, session, actor, 0, 0.0356)
    run = AgentRun.objects.create(session=session, agent="greedy", budget=2, state=AgentRun.DONE)
    base = measure(runner, session, actor, 0, 0.0413, submit={"batch": f"agent-{run.id}", "baseline": False})
    best = measure(runner, session, actor, 1, 0.0124, submit={"batch": f"agent-{run.id}", "baseline": False})
    AgentRun.objects.filter(id=run.id).update(
        best_step=1, best_median_s=0.0124, baseline_median_s=0.0413, measurements=2,
        trials=[{"step": 0, "job": base.id, "median_s": 0.0413}, {"step": 1, "job": best.id, "median_s": 0.0124}])
    expected = f"{0.0413 / 0.0124:.2f}×"                     # 3.33x: the agent's own root
    panel = live.runs_context(session)["runs"][0]
    assert panel["speedup"] == expected
    html = c.get(f"/s/{sid}/?step=1").content.decode()
    assert expected in html and f"{0.0356 / 0.0124:.2f}×" not in html
    assert f"timed in the same batch (agent-{run.id})" in html
    best_json = c.get(f"/api/agents/{run.id}").json()["best"]   # the API says the same, named
    assert f"{best_json['speedup']:.2f}×" == expected
    assert best_json["speedup_over_start"] == 0.0413 / 0.0124


def test_the_api_speedup_of_an_agent_run_is_none_without_a_root_in_its_batch():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    measure(runner, session, actor, 0, 0.0356)
    run = AgentRun.objects.create(session=session, agent="greedy", budget=2, state=AgentRun.DONE, start_step=1)
    best = measure(runner, session, actor, 1, 0.0124, submit={"batch": f"agent-{run.id}", "baseline": False})
    AgentRun.objects.filter(id=run.id).update(
        best_step=1, best_median_s=0.0124, baseline_median_s=0.0150, measurements=1,
        trials=[{"step": 1, "job": best.id, "median_s": 0.0124}])
    best_json = c.get(f"/api/agents/{run.id}").json()["best"]
    assert best_json["speedup"] is None                          # never 0.0356 / 0.0124 across batches
    assert best_json["speedup_over_start"] == 0.0150 / 0.0124


# ============================================================================ the pages

def test_the_editor_card_shows_median_spread_speedup_rates_peaks_and_provenance():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    job = Job.objects.get(id=submit_step(session, actor, 1, "r1")["id"])
    finish(runner, job, 0.002, spread=0.02, baseline=0.005)
    html = c.get(f"/s/{sid}/?step=1").content.decode()
    card = html[html.index('id="step-results"'):html.index('id="ir"')]
    assert 'data-step="1"' in card
    assert "2.00 ms" in card and "IQR 2.0%" in card and "2.50×" in card
    assert "root 5.00 ms, timed in the same job" in card
    assert "noisy" not in card.replace("noisy-flag", "")     # quiet: no flag, no re-run
    gflops = 2 * 16 ** 3 / 0.002 / 1e9
    assert f"{gflops:.1f}</b> GFLOP/s" in card and f"({100 * gflops / 200:.1f}% of FMA peak)" in card
    gbps = 3 * 4 * 16 ** 2 / 0.002 / 1e9
    assert f"{gbps:.1f}</b> GB/s" in card and "of bandwidth peak" in card
    assert "verified vs interp" in card and "0.012× tol" in card and "2 threads" in card
    assert "cc 12.2.0" in card and "-O3 -march=native -fopenmp" in card and "-fPIC" not in card
    # the table carries the same numbers and a roofline with a dot for the step
    table = html[html.index('id="bench-results"'):]
    assert "2.50×" in table and 'class="plot roofline"' in table and 'class="dot series s0" data-step="1"' in table


def test_a_noisy_result_is_flagged_with_a_rerun_button_that_benchmarks_again():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    measure(runner, session, actor, 1, 0.0124, spread=0.4, baseline=0.02)
    html = c.get(f"/s/{sid}/?step=1").content.decode()
    card = html[html.index('id="step-results"'):html.index('id="ir"')]
    assert "noisy-flag" in card and "IQR 40%" in card and f"above {results.NOISY_IQR:.0%}" in card
    assert f'action="/s/{sid}/steps/1/benchmark"' in card and 'value="r1"' in card
    before = Job.objects.filter(session_id=sid, step_index=1).count()
    r = c.post(f"/s/{sid}/steps/1/benchmark", {"runner": "r1"}, **HX)
    assert r.status_code == 200
    assert Job.objects.filter(session_id=sid, step_index=1).count() == before + 1
    body = r.content.decode()
    assert 'id="step-results"' in body and 'hx-swap-oob="true"' in body and "being measured" not in body


def test_a_pushed_job_update_carries_the_card_of_the_jobs_step():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    job = measure(runner, session, actor, 1, 0.003, baseline=0.006)
    html = job_update_html(Session.objects.get(id=sid), job_dict(job))
    assert '<section id="step-results" class="step-results" data-step="1" hx-swap-oob="true"' in html
    assert "2.00×" in html


# ============================================================================ gpu binds

def test_gpu_binds_are_refused_with_the_reason_in_the_api_and_the_editor():
    register()
    c = Client()
    sid = start(c)
    apply(c, sid, 0, "bind i gpu.block.x")
    session = Session.objects.get(id=sid)
    assert gpu_binds(services.program_at(session, 1)) == ["i → gpu.block.x"]
    r = c.post(f"/s/{sid}/steps/1/benchmark", {"runner": "r1"}, **HX)
    assert r.status_code == 409 and r["HX-Retarget"] == "#bench-message"
    text = r.content.decode()
    assert "binds loops to the GPU (i → gpu.block.x)" in text and "runner r1 has no GPU" in text
    assert not Job.objects.filter(session_id=sid, step_index=1).exists()
    # the editor says so before anyone clicks
    html = c.get(f"/s/{sid}/?step=1").content.decode()
    assert 'id="gpu-binds-note"' in html and "i → gpu.block.x" in html
    # and the JSON API answers 409 with the reason
    made = Client().post("/api/sessions", json.dumps({"kernel": "matmul"}), content_type="application/json").json()
    auth = {"HTTP_AUTHORIZATION": f"Token {made['owner_token']}"}
    api = Client()
    assert api.post(f"/api/sessions/{made['id']}/steps", json.dumps({"parent": 0, "action": "bind j gpu.thread.x"}),
                    content_type="application/json", **auth).status_code == 201
    r = api.post(f"/api/sessions/{made['id']}/steps/1/benchmark", json.dumps({"runner": None}),
                 content_type="application/json", **auth)
    assert r.status_code == 409 and "j → gpu.thread.x" in r.json()["error"]


def test_gpu_binds_are_refused_even_where_a_runner_has_a_gpu():
    register("g1", hw={**HW, "gpus": [{"name": "Test GPU"}]})
    source = open("dojo_core/kernels/matmul.dojo").read()
    with pytest.raises(GpuBindsRefused) as err:
        submit_benchmark(source, ["bind i gpu.block.x"], {"N": 16, "M": 16, "K": 16}, runner="g1")
    assert isinstance(err.value, NoRunner) and "runners time the generated C code" in str(err.value)
    assert not Job.objects.exists()


def test_the_runners_page_shows_the_measured_peaks():
    register()
    html = Client().get("/runners/").content.decode()
    assert "measured peaks: 200 GFLOP/s f32 FMA · 20.0 GB/s triad · 2 threads" in html


def test_a_quiet_rerun_replaces_a_noisy_result_even_when_slower():
    runner = register()
    c = Client()
    sid, session, actor = split_history(c)
    measure(runner, session, actor, 1, 0.0100, spread=0.5, baseline=0.02)
    entry = integration.with_speedups(integration.results_by_step(integration.jobs_for(sid)))[1]
    assert entry["by_runner"]["r1"]["noisy"] and entry["best_speedup"] == 2.0
    measure(runner, session, actor, 1, 0.0125, spread=0.02, baseline=0.025)
    entry = integration.with_speedups(integration.results_by_step(integration.jobs_for(sid)))[1]
    assert not entry["by_runner"]["r1"]["noisy"] and entry["by_runner"]["r1"]["median_s"] == 0.0125
    assert entry["best_speedup"] == 2.0 and len(entry["measurements"]) == 2


def test_the_spread_bar_scales_to_twice_the_median_and_marks_a_clipped_max():
    bar = spread_bar({"median_s": 1.0, "min_s": 0.9, "max_s": 40.0, "q1_s": 0.95, "q3_s": 1.05}, width=80)
    assert bar["clipped"] and bar["max"] == 80 and bar["median"] == 40.0
    assert bar["q1"] == 38.0 and bar["box"] == pytest.approx(4.0)
    tight = spread_bar({"median_s": 1.0, "min_s": 0.9, "max_s": 1.2, "q1_s": None, "q3_s": None}, width=60)
    assert not tight["clipped"] and tight["max"] == 60 and tight["median"] == 50.0 and tight["box"] is None
    assert spread_bar({"median_s": 1.0, "min_s": None, "max_s": None}) is None


def test_durations_read_in_their_unit():
    """A tiny kernel's 40 ns is not shown as "0.0 µs"."""
    assert [fmt_time(s) for s in (4e-8, 2.5e-6, 3.21e-3, 1.5)] == ["40 ns", "2.5 µs", "3.21 ms", "1.500 s"]
    assert fmt_time(None) == ""
