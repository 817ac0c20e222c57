"""The trace runner: bounded concurrency, timeouts, errors that never abort, policies."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.systems.base import AdapterError, SystemAdapter, SystemConfigModel, SystemResponse
from evalh_pipeline.systems.registry import SYSTEMS
from evalh_pipeline.models import TraceMetrics, TraceOutput
from tests.support.evals import write_eval


class ScriptedConfig(SystemConfigModel):
    behaviour: dict[str, str] = {}
    sleep: float = 0.0
    cost: float | None = None
    fail_first: int = 0


class ScriptedSystem(SystemAdapter[ScriptedConfig]):
    """A system whose behaviour per case id is scripted from YAML: ok, raise, hang, 5xx."""

    in_flight = 0
    max_in_flight = 0
    calls: list[str] = []
    attempts: dict[str, int] = {}

    async def run(self, case, workspace):
        cls = type(self)
        cls.calls.append(case.id)
        cls.in_flight += 1
        cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        try:
            await asyncio.sleep(self.config.sleep)
            action = self.config.behaviour.get(case.id, "ok")
            cls.attempts[case.id] = cls.attempts.get(case.id, 0) + 1
            if action == "raise":
                raise ValueError("model exploded")
            if action == "hang":
                await asyncio.sleep(60)
            if action == "flaky" and cls.attempts[case.id] <= self.config.fail_first:
                raise AdapterError("upstream 503", type="http_5xx")
            return SystemResponse(output=TraceOutput(final_answer=f"ok {case.id}"),
                                  metrics=TraceMetrics(cost_usd=self.config.cost))
        finally:
            cls.in_flight -= 1


@pytest.fixture(autouse=True)
def scripted():
    SYSTEMS.register("scripted", ScriptedSystem)
    ScriptedSystem.in_flight = ScriptedSystem.max_in_flight = 0
    ScriptedSystem.calls = []
    ScriptedSystem.attempts = {}
    yield ScriptedSystem
    SYSTEMS.unregister("scripted")  # keep "known adapters" messages of other tests exact


def _run(tmp_path, system_yaml, *, cases=8, run_yaml="  max_concurrency: 4\n"):
    path = write_eval(tmp_path / "toy", cases=cases, systems=system_yaml)
    text = path.read_text().replace("run:\n  max_concurrency: 4\n", "run:\n" + run_yaml)
    path.write_text(text)
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    stats = asyncio.run(produce_traces(spec, info.run_dir))
    traces = {json.loads(line)["case_id"] + "/" + json.loads(line)["variant_name"]: json.loads(line)
              for _, line in iter_lines(info.run_dir.traces)}
    return stats, traces


ONE_SCRIPTED = """
  - name: base
    adapter: scripted
    timeout_seconds: 2  # long enough for a quick cell on a loaded machine
    behaviour: {{case_1: raise, case_2: hang}}
    sleep: {sleep}
"""


def test_failing_and_hanging_cells_become_error_traces_and_the_run_completes(tmp_path):
    stats, traces = _run(tmp_path, ONE_SCRIPTED.format(sleep=0), run_yaml="  max_concurrency: 4\n")
    assert stats.cells_run == 8 and stats.cells_errored == 2
    assert traces["case_1/base"]["error"]["type"] == "exception"
    assert "ValueError: model exploded" in traces["case_1/base"]["error"]["message"]
    assert traces["case_2/base"]["error"]["type"] == "timeout"
    assert traces["case_0/base"]["error"] is None
    assert traces["case_0/base"]["output"]["final_answer"] == "ok case_0"


def test_trace_timestamps_are_always_set_and_latency_is_derived(tmp_path):
    from datetime import datetime

    _, traces = _run(tmp_path, ONE_SCRIPTED.format(sleep=0.01))
    for trace in traces.values():
        started = datetime.fromisoformat(trace["started_at"].replace("Z", "+00:00"))
        finished = datetime.fromisoformat(trace["finished_at"].replace("Z", "+00:00"))
        assert trace["latency_ms"] == round((finished - started).total_seconds() * 1000)
    assert traces["case_2/base"]["latency_ms"] >= 2000  # the timeout, not the hang


def test_concurrency_never_exceeds_max_concurrency(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n    sleep: 0.02\n  - name: candidate\n    adapter: scripted\n    sleep: 0.02\n"
    _run(tmp_path, system, cases=30, run_yaml="  max_concurrency: 5\n")
    assert scripted.max_in_flight == 5
    assert len(scripted.calls) == 60


def test_per_variant_concurrency_bounds_each_variant(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n    sleep: 0.02\n"
    _run(tmp_path, system, cases=20, run_yaml="  max_concurrency: 8\n  per_variant_concurrency: 3\n")
    assert scripted.max_in_flight == 3


def test_samples_per_case_runs_each_cell_that_many_times(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n"
    path = write_eval(tmp_path / "toy", cases=3, systems=system)
    path.write_text(path.read_text().replace("run:\n", "run:\n  samples_per_case: 3\n"))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    samples = sorted((t["case_id"], t["sample"]) for t in map(json.loads, info.run_dir.traces.read_text().splitlines()))
    assert samples == [(f"case_{i}", s) for i in range(3) for s in range(3)]


def test_retry_recovers_from_5xx_and_records_attempts(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n    behaviour: {case_0: flaky}\n    fail_first: 2\n"
    run_yaml = "  max_concurrency: 2\n  retry: {max_attempts: 3, on: [http_5xx], backoff_seconds: 0.001}\n"
    _, traces = _run(tmp_path, system, cases=2, run_yaml=run_yaml)
    assert traces["case_0/base"]["error"] is None
    assert traces["case_0/base"]["metrics"]["custom"]["attempts"] == 3


def test_errors_not_listed_in_retry_on_are_not_retried(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n    behaviour: {case_0: flaky}\n    fail_first: 1\n"
    run_yaml = "  max_concurrency: 2\n  retry: {max_attempts: 3, on: [timeout], backoff_seconds: 0}\n"
    _, traces = _run(tmp_path, system, cases=1, run_yaml=run_yaml)
    assert traces["case_0/base"]["error"]["type"] == "http_5xx"
    assert scripted.attempts["case_0"] == 1


def test_cost_limit_stops_starting_new_cells(tmp_path, scripted):
    system = "\n  - name: base\n    adapter: scripted\n    cost: 0.5\n"
    _, traces = _run(tmp_path, system, cases=6, run_yaml="  max_concurrency: 1\n  cost_limit_usd: 1.0\n")
    errors = [t["error"]["type"] if t["error"] else None for t in traces.values()]
    assert errors.count(None) == 2 and errors.count("cost_limit") == 4
    assert len(scripted.calls) == 2


def test_a_system_that_cannot_start_fails_its_cells_not_the_run(tmp_path):
    system = """
  - name: base
    adapter: python_function
    target: no_such_module:run
  - name: candidate
    adapter: python_function
    target: stub_agent:run
"""
    stats, traces = _run(tmp_path, system, cases=3)
    assert stats.cells_run == 6
    assert {t["error"]["type"] for k, t in traces.items() if k.endswith("/base")} == {"config_error"}  # a system that cannot start: evalh run then exits 1
    assert "no_such_module" in traces["case_0/base"]["error"]["message"]
    assert all(t["error"] is None for k, t in traces.items() if k.endswith("/candidate"))


@pytest.mark.parametrize("ending", ["completes", "is_cancelled"])
def test_an_async_target_runs_on_the_runners_loop_and_its_tasks_end_with_it(tmp_path, monkeypatch, ending):
    """An async target's calls run on the run's own event loop (no thread of their own);
    what it leaves running there is cancelled when that loop ends, also when the run is
    cancelled (Ctrl-C) mid-cell."""
    import concurrent.futures
    import sys
    import threading
    import types

    started: concurrent.futures.Future[None] = concurrent.futures.Future()
    seen: list[str] = []
    loops: set[asyncio.AbstractEventLoop] = set()
    threads: set[threading.Thread] = set()

    async def background() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("background cancelled")
            raise

    tasks = []

    async def run(case, variant):
        loops.add(asyncio.get_running_loop())
        threads.add(threading.current_thread())
        tasks.append(asyncio.get_running_loop().create_task(background()))
        if not started.done():
            started.set_result(None)
        if ending == "is_cancelled":
            await asyncio.Event().wait()
        return {"final_answer": "ok"}

    probe = types.ModuleType("evalh_test_loop_probe")
    probe.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, probe.__name__, probe)
    system = "\n  - name: base\n    adapter: python_function\n    target: evalh_test_loop_probe:run\n"
    spec = load_eval(write_eval(tmp_path / "toy", cases=2, systems=system))
    info = prepare_cases(spec, new_run_id(spec.name))
    runner_loops = []

    async def main() -> None:
        runner_loops.append(asyncio.get_running_loop())
        run_task = asyncio.create_task(produce_traces(spec, info.run_dir))
        await asyncio.wait_for(asyncio.wrap_future(started), 60)
        if ending == "is_cancelled":
            run_task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run_task
        else:
            assert (await run_task).cells_run == 2

    asyncio.run(main())
    assert loops == set(runner_loops) and threads == {threading.main_thread()}
    assert seen and set(seen) == {"background cancelled"} and len(seen) == len(tasks)


def test_adapters_started_are_closed_when_setting_up_the_pass_is_interrupted(tmp_path, scripted):
    """Ctrl-C while a later part starts (here an enricher) still closes the adapters already
    started (a worker pool, a service) instead of leaving them to the process's end."""
    from evalh_pipeline.enrichers.base import TraceEnricher
    from evalh_pipeline.enrichers.registry import ENRICHERS

    closed: list[str] = []

    class Closing(ScriptedSystem):
        async def close(self):
            closed.append(self.variant.name)

    class Interrupted(TraceEnricher):
        async def start(self):
            raise KeyboardInterrupt

    SYSTEMS.unregister("scripted")
    SYSTEMS.register("scripted", Closing)
    ENRICHERS.register("interrupted", Interrupted)
    try:
        system = ("\n  - name: base\n    adapter: scripted\n  - name: candidate\n    adapter: scripted\n"
                  "    enrich_trace_from: [{type: interrupted}]\n")
        with pytest.raises(KeyboardInterrupt):
            _run(tmp_path, system)
    finally:
        ENRICHERS.unregister("interrupted")
    assert sorted(closed) == ["base", "candidate"]
    assert scripted.calls == []


def test_a_disk_full_at_the_last_flush_fails_the_pass_yet_closes_what_it_started(tmp_path, scripted, monkeypatch):
    """The traces wait in the appender's buffer; the write at the end of the pass fails (a
    full disk): the pass raises it and its adapters are closed."""
    from evalh_pipeline.store import jsonl

    closed: list[str] = []

    class Closing(ScriptedSystem):
        async def close(self):
            closed.append(self.variant.name)

    def full_disk(fd, data):
        raise OSError(28, "No space left on device")

    SYSTEMS.unregister("scripted")
    SYSTEMS.register("scripted", Closing)
    path = write_eval(tmp_path / "toy", cases=3, systems="\n  - name: base\n    adapter: scripted\n")
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    monkeypatch.setattr(jsonl.os, "write", full_disk)
    with pytest.raises(OSError, match="No space left"):
        asyncio.run(produce_traces(spec, info.run_dir))
    monkeypatch.undo()
    assert closed == ["base"]
    assert info.run_dir.traces.read_bytes() == b""
