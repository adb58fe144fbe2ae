"""The TVM MetaSchedule route shared by bench/agents_tvm.py (library kernels) and
bench/suite_tvm.py (suite kernels): the host target, tuning a tensor-expression prim func
at a trial count, building the best schedule, and timing the built function.

Runs only in an environment that has ``apache-tvm`` (0.27 from PyPI with
``apache-tvm-ffi==0.1.14.post1``, xgboost, cloudpickle and psutil beside it; see
shared/PERF.md beside the checkout), usually a venv of its own (``.venv-tvm``); nothing
here imports tvm at module import time, and nothing imports from dojo_core.

Guarantees:

* ``set_threads(n)`` must be called before ``import tvm`` to take effect: it sets
  ``TVM_NUM_THREADS``, the size of TVM's runtime thread pool.
* ``host_target(threads)`` is ``llvm`` with ``-mcpu`` of this host and ``num-cores`` =
  ``threads``, given as a JSON dict (TVM 0.27's string parser rejects some host names).
* ``tune(tensors, target, trials, threads, seed)`` returns ``(module, tuning_s)``: the
  module compiled from MetaSchedule's best record after at most ``trials`` measured trials
  (``trials`` <= 0: the default, untuned schedule; ``tuning_s`` 0), or ``(None, tuning_s)``
  when no valid schedule was found. The builder's and runner's 30 s default timeouts are
  raised to 600 s (a builder process alone can take longer to start on a loaded 2-core
  machine); the tuning records live in a temporary folder removed afterwards.
* ``time_call(fn, args, min_time)`` is ``{"median_s", "min_s", "reps"}`` of ``fn(*args)``
  after one warm-up call, over at least 3 repetitions and ``min_time`` seconds, as the
  other contenders of the benchmarks are timed.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time


def set_threads(threads: int) -> None:
    """Size TVM's runtime thread pool (call before ``import tvm``)."""
    os.environ["TVM_NUM_THREADS"] = str(threads)


def host_target(threads: int):
    """The llvm target of this host at ``threads`` cores (a JSON-dict target)."""
    import tvm
    mcpu = tvm.target.codegen.llvm_get_system_cpu() if hasattr(tvm.target, "codegen") else "native"
    return tvm.target.Target({"kind": "llvm", "mcpu": mcpu, "num-cores": threads})


def prim_module(tensors):
    """The IRModule of ``te.create_prim_func(tensors)`` named ``main``."""
    import tvm
    from tvm import te
    func = te.create_prim_func(list(tensors)).with_attr("global_symbol", "main")
    return tvm.IRModule({"main": func})


def tune(tensors, target, trials: int, threads: int, seed: int = 0):
    """(built module or None, tuning seconds): MetaSchedule at ``trials`` measured trials
    (<= 0: no tuning, the default schedule) of the prim func of ``tensors``."""
    import tvm
    mod = prim_module(tensors)
    if trials <= 0:
        return tvm.compile(mod, target=target), 0.0
    import tvm.s_tir.meta_schedule as ms
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tvm-ms-") as work:
        database = ms.tune_tir(mod, target, work, max_trials_global=trials,
                               num_trials_per_iter=min(32, trials),
                               num_tuning_cores=threads, seed=seed,
                               builder=ms.builder.LocalBuilder(timeout_sec=600),
                               runner=ms.runner.LocalRunner(timeout_sec=600))
        sch = ms.tir_integration.compile_tir(database, mod, target)
    tuning_s = time.monotonic() - started
    if sch is None:
        return None, tuning_s
    return tvm.compile(sch.mod, target=target), tuning_s


def device_arrays(arrays):
    """numpy arrays -> TVM runtime tensors on the CPU, in order."""
    import tvm
    dev = tvm.cpu()
    return [tvm.runtime.tensor(a, dev) for a in arrays]


def time_call(fn, args, min_time: float) -> dict:
    """Median and best of ``fn(*args)`` over >= 3 repetitions and >= ``min_time`` s, after
    one warm-up call."""
    fn(*args)
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "min_s": min(times), "reps": len(times)}
