"""The measurement cache both evaluators share: what a record holds, what a reload from the
record store answers, and which fingerprint it answers for."""
from dojo_core.agents.base import Measurement
from dojo_core.agents.measurement_cache import (MeasurementCache, failed_measurement,
                                                measurement_record, one_line)
from dojo_core.kernels import load_kernel
from dojo_core.records import RecordStore, program_hash


def _record(m, steps=("split i by 4",)):
    root = load_kernel("row_sum", {"N": 8, "M": 16})
    return root, measurement_record(root, steps, "state-1", m, agent="greedy")


def test_a_record_holds_the_state_the_times_and_the_extras():
    root, record = _record(Measurement(2e-3, True, None, 1e-3, 3e-3, runner="r1"))
    assert record["kernel"] == root.name and record["sizes"] == {"N": 8, "M": 16}
    assert record["source_hash"] == program_hash(root)
    assert record["steps"] == ["split i by 4"] and record["state_hash"] == "state-1"
    assert (record["median_s"], record["min_s"], record["max_s"]) == (2e-3, 1e-3, 3e-3)
    assert record["runner"] == "r1" and record["agent"] == "greedy"


def test_a_reloaded_cache_answers_from_the_store_as_a_cached_measurement(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    _, record = _record(Measurement(2e-3, True, None, 1e-3, 3e-3, runner="r1"))
    MeasurementCache(store, "fp-a").add(record)
    hit = MeasurementCache(store, "fp-a").lookup("state-1")
    assert hit == Measurement(2e-3, True, None, 1e-3, 3e-3, source="cache", runner="r1")


def test_a_cache_answers_only_for_its_own_fingerprint(tmp_path):
    store = RecordStore(tmp_path / "records.jsonl")
    _, record = _record(Measurement(2e-3))
    MeasurementCache(store, "fp-a").add(record)
    assert MeasurementCache(store, "fp-b").lookup("state-1") is None
    assert MeasurementCache(store, "fp-a").lookup("state-2") is None


def test_a_cache_without_a_store_keeps_what_it_was_given_in_memory():
    cache = MeasurementCache(None, "fp-a")
    _, record = _record(failed_measurement("compile error: x", "local", verified=True))
    cache.add(record)
    hit = cache.lookup("state-1")
    assert hit.median_s is None and hit.error == "compile error: x" and not hit.ok


def test_a_failure_keeps_whether_the_outputs_were_wrong():
    wrong = failed_measurement("outputs differ", "local", verified=False)
    assert wrong.median_s is None and not wrong.verified and wrong.error == "outputs differ"


def test_an_exception_becomes_one_line_of_at_most_three_of_its_lines():
    text = one_line(RuntimeError("first\n\n  second\nthird\nfourth"))
    assert text == "RuntimeError: first | second | third"
    assert one_line(ValueError("")) == "ValueError: (no message)"
