"""A leaderboard lists distinct schedules: measurements of the same program (hash) on the
same hardware are one row, the best one, with the number of runs; another program, or the
same program on other hardware, is a row of its own."""
from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from dojo_core import kernels
from webapp.leaderboards import queries
from webapp.runners import services
from webapp.runners.models import Job, Runner

pytestmark = pytest.mark.django_db

SIZES = {"N": 16, "M": 40}
HW = {"cpu": {"model": "Distinct CPU", "arch": "x86_64", "flags": ["avx2"], "logical_cpus": 4, "cores": 4},
      "compilers": {"cc": "cc 12"}, "gpus": []}
OTHER_HW = {**HW, "cpu": {**HW["cpu"], "model": "Other CPU"}}


def runner(name, hw):
    return Runner.objects.create(name=name, secret_hash=f"h-{name}", queue=f"runner-{name}", labels=[],
                                 hardware=hw, last_heartbeat=timezone.now())


def job(r, steps, median, baseline=None):
    source = kernels.kernel_path("softmax").read_text()
    phash = services.validate(source, steps, SIZES)[4]
    return Job.objects.create(
        state="done", kernel="softmax", source=source, sizes=SIZES, steps=steps, runner=r, program_hash=phash,
        result={"median_s": median, "min_s": median, "max_s": median, "verified": True, "runner": r.name,
                "hardware": r.hardware, **({"baseline": {"median_s": baseline}} if baseline else {})},
        finished=timezone.now())


def test_same_program_on_same_hardware_is_one_row_with_its_best_time():
    a, b = runner("ra", HW), runner("rb", OTHER_HW)
    job(a, [], 4e-3)
    for median in (2e-3, 1e-3, 3e-3):
        job(a, ["parallelize i"], median, baseline=3.5e-3 if median == 1e-3 else None)
    job(a, ["split i by 4"], 2.5e-3)
    job(b, ["parallelize i"], 5e-3)
    boards = {bd["hardware"].split(" ·")[0]: bd for bd in queries.leaderboards("softmax")}
    entries = boards["Distinct CPU"]["entries"]
    assert [(e["median_s"], e["runs"], e["step_texts"]) for e in entries] == [
        (1e-3, 3, ["parallelize i"]), (2.5e-3, 1, ["split i by 4"]), (4e-3, 1, [])]
    assert len({e["program_hash"] for e in entries}) == len(entries)
    assert boards["Distinct CPU"]["best_speedup"] == 3.5                # its root timed in the same job
    assert boards["Distinct CPU"]["best_speedup_across_runs"] == 4.0
    assert [(e["median_s"], e["runs"]) for e in boards["Other CPU"]["entries"]] == [(5e-3, 1)]


def test_kernel_page_shows_one_row_per_schedule():
    a = runner("ra", HW)
    job(a, [], 4e-3)
    job(a, ["parallelize i"], 2e-3)
    job(a, ["parallelize i"], 1e-3)
    page = Client().get("/kernels/softmax/").content.decode()
    board = page[page.index('<table class="leaderboard">'):page.index("</table>")]
    assert board.count("<tr><td>") == 2
    assert '<td class="runs">2</td>' in board and "1 ms" in board and "2 ms" not in board


def test_distinct_programs_keeps_the_first_of_each_hash_in_order():
    rows = [{"program_hash": h, "median_s": m} for h, m in (("x", 1), ("y", 2), ("x", 3), ("z", 4), ("y", 5))]
    assert [(e["program_hash"], e["median_s"], e["runs"]) for e in queries.distinct_programs(rows)] == [
        ("x", 1, 2), ("y", 2, 2), ("z", 4, 1)]
