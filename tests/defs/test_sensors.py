"""The fixture sensor and the scheduled drift sensor, against a real instance and a real git repo."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

import dagster as dg
import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.sensors import build_drift_sensor
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.fixtures import fixture_fingerprint
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.defs.support import execute_for_partition, execute_requested

def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout.strip()


@pytest.fixture
def git_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "evalh@example.com")
    _git(repo, "config", "user.name", "evalh tests")
    _git(repo, "config", "commit.gpgsign", "false")
    return repo


def _commit(repo, message):
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _tick(defs, name, instance, cursor=None, sensor=None):
    sensor = sensor or defs.resolve_sensor_def(name)
    context = dg.build_sensor_context(instance=instance, instance_ref=instance.get_ref(), cursor=cursor, definitions=defs)
    return sensor.evaluate_tick(context)


def _assert_one_whole_run(data, job="toy__run"):
    """The tick adds one new partition (a new run id) and requests the whole-run job for it."""
    (added,) = data.dynamic_partitions_requests
    assert added.partitions_def_name == "toy__runs"
    (run_id,) = added.partition_keys
    (request,) = data.run_requests
    assert request.job_name == job and request.partition_key == run_id
    assert run_id.endswith("_toy")
    return request, run_id


def test_fixture_sensor_runs_once_per_change_of_the_evals_inputs_not_per_commit(tmp_path, instance, git_repo):
    spec = load_eval(write_eval(git_repo / "toy"))
    _commit(git_repo, "eval and dataset")
    defs, _ = build_definitions([spec])

    # First tick: records the fingerprint, requests nothing.
    data = _tick(defs, "toy__fixtures_changed", instance)
    assert data.run_requests == []
    assert data.cursor == fixture_fingerprint(spec).key

    # A commit that touches none of the eval's inputs starts nothing.
    (git_repo / "NOTES.md").write_text("unrelated\n")
    _commit(git_repo, "notes")
    unrelated = _tick(defs, "toy__fixtures_changed", instance, cursor=data.cursor)
    assert unrelated.run_requests == [] and unrelated.cursor == data.cursor

    # A committed dataset change: exactly one whole run, lineage from git.
    with spec.dataset_path.open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}}\n')
    second = _commit(git_repo, "v2 of the dataset")
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=data.cursor)
    request, _ = _assert_one_whole_run(changed)
    current = fixture_fingerprint(spec)
    assert (current.status, current.commit) == ("tracked", second)
    assert request.run_key == f"fixtures:{current.key}"
    assert request.tags["evalh/fixture_commit"] == second
    assert request.tags["evalh/trigger"] == "fixtures"
    assert changed.cursor == current.key

    # Unchanged since: nothing.
    after = _tick(defs, "toy__fixtures_changed", instance, cursor=changed.cursor)
    assert after.run_requests == []


def test_an_uncommitted_dataset_edit_starts_a_run_without_a_commit(tmp_path, instance, git_repo):
    spec = load_eval(write_eval(git_repo / "toy"))
    _commit(git_repo, "eval and dataset")
    defs, _ = build_definitions([spec])
    first = _tick(defs, "toy__fixtures_changed", instance)

    with spec.dataset_path.open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}}\n')
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)

    request, _ = _assert_one_whole_run(changed)
    assert "evalh/fixture_commit" not in request.tags
    assert fixture_fingerprint(spec).status == "modified"


def test_fixture_sensor_without_git_follows_the_content(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # never see an enclosing repo
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    defs, _ = build_definitions([spec])

    first = _tick(defs, "toy__fixtures_changed", instance)
    assert first.run_requests == []
    assert fixture_fingerprint(spec).status == "untracked"

    with spec.dataset_path.open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}}\n')
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)
    request, _ = _assert_one_whole_run(changed)
    assert "evalh/fixture_commit" not in request.tags
    assert changed.cursor != first.cursor


def test_sensors_are_registered_stopped_unless_eval_yaml_turns_them_on(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy"))
    automated = load_eval(write_eval(tmp_path / "auto", extra_yaml=(
        'automation: {on_fixture_change: true, drift_cron: "0 6 * * *"}\n')))
    defs, built = build_definitions([spec, automated])
    assert [s.name for s in built["toy"].sensors] == ["toy__fixtures_changed", "toy__scheduled_drift"]
    for name in ("fixtures_changed", "scheduled_drift"):
        sensor = defs.resolve_sensor_def(f"toy__{name}")
        assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
        assert sensor.job_name == "toy__run"
        assert defs.resolve_sensor_def(f"auto__{name}").default_status == dg.DefaultSensorStatus.RUNNING
    assert defs.resolve_sensor_def("toy__fixtures_changed").minimum_interval_seconds <= 30


def test_an_automation_run_in_progress_holds_back_the_next_one(tmp_path, instance, monkeypatch):
    from dagster._core.test_utils import create_run_for_test

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    defs, _ = build_definitions([spec])
    first = _tick(defs, "toy__fixtures_changed", instance)
    create_run_for_test(instance, job_name="toy__run", status=dg.DagsterRunStatus.STARTED,
                        tags={"evalh/trigger": "schedule"})
    with spec.dataset_path.open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}}\n')

    held = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)

    assert held.run_requests == [] and "in progress" in held.skip_message
    assert held.cursor in (None, first.cursor)  # the change is picked up once the run is over


def test_a_variant_added_to_eval_yaml_runs_in_the_next_sensor_run_without_a_reload(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
    defs, _ = build_definitions([load_eval(path)])  # the code location as loaded: two variants
    first = _tick(defs, "toy__fixtures_changed", instance)
    path.write_text(path.read_text().replace("systems:\n", "systems:\n  - name: third\n    adapter: python_function\n"
                                                            "    target: stub_agent:run\n", 1))

    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)
    request, run_id = _assert_one_whole_run(changed)
    result = execute_requested(defs, changed, instance)

    assert result.success
    summary = load_summary(RunDirectory(tmp_path / "toy" / "runs" / run_id))
    assert sorted(v.name for v in summary.variants) == ["base", "candidate", "third"]
    assert summary.completeness.complete and summary.completeness.expected_cells == 9


def test_a_renamed_eval_refuses_with_the_reload_message(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    path = write_eval(tmp_path / "toy", cases=2)
    defs, _ = build_definitions([load_eval(path)])
    path.write_text(path.read_text().replace("name: toy", "name: renamed", 1))

    result = execute_for_partition(defs, "toy__run", "toy", "2025-01-01T00-00-00-000000_toy", instance,
                                   raise_on_error=False)

    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    message = failure.event_specific_data.error.message
    assert "eval.name is now 'renamed'" in message and "reload the code location" in message
    assert not (tmp_path / "toy" / "runs").exists()
    data = _tick(defs, "toy__fixtures_changed", instance)
    assert data.run_requests == [] and "reload the code location" in data.skip_message


NOW = datetime(2025, 3, 14, 9, 30, tzinfo=timezone.utc)  # a Friday


class FakeClock:
    """A clock the test moves forward."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _drift(tmp_path, schedule=""):
    """The code location's definitions and a drift sensor on a fake clock reading ``NOW``."""
    spec = load_eval(write_eval(tmp_path / "toy", cases=2, extra_yaml=schedule))
    clock = FakeClock(NOW)
    return build_definitions([spec])[0], build_drift_sensor(spec, clock=clock), clock


def test_drift_sensor_runs_once_per_cron_tick(tmp_path, instance):
    defs, sensor, clock = _drift(tmp_path, 'schedule: {drift_cron: "0 6 * * *"}\n')

    first = _tick(defs, "toy__scheduled_drift", instance, sensor=sensor)
    assert first.run_requests == []
    assert first.cursor == "2025-03-14T06:00:00+00:00"  # the latest tick: recorded, not run

    clock.now = datetime(2025, 3, 15, 5, 59, tzinfo=timezone.utc)
    before = _tick(defs, "toy__scheduled_drift", instance, cursor=first.cursor, sensor=sensor)
    assert before.run_requests == [] and before.cursor == first.cursor

    clock.now = datetime(2025, 3, 15, 6, 0, 30, tzinfo=timezone.utc)
    on_tick = _tick(defs, "toy__scheduled_drift", instance, cursor=first.cursor, sensor=sensor)
    request, run_id = _assert_one_whole_run(on_tick)
    assert request.run_key == "drift:2025-03-15T06:00:00+00:00"
    assert request.tags["evalh/trigger"] == "schedule"
    assert request.tags["evalh/drift_tick"] == "2025-03-15T06:00:00+00:00"
    assert run_id.startswith("2025-03-15T06-00-30")
    assert on_tick.cursor == "2025-03-15T06:00:00+00:00"

    clock.now = datetime(2025, 3, 15, 23, 0, tzinfo=timezone.utc)
    same_tick = _tick(defs, "toy__scheduled_drift", instance, cursor=on_tick.cursor, sensor=sensor)
    assert same_tick.run_requests == []


def test_drift_sensor_reads_the_cron_in_its_timezone_and_skips_missed_ticks(tmp_path, instance):
    defs, sensor, clock = _drift(tmp_path, 'schedule: {drift_cron: "30 8 * * mon-fri", timezone: Europe/Paris}\n')
    cursor = "2025-03-13T07:30:00+00:00"  # Thursday 08:30 in Paris (UTC+1 in March)

    clock.now = datetime(2025, 3, 18, 7, 29, tzinfo=timezone.utc)  # Tuesday, a minute before its tick
    data = _tick(defs, "toy__scheduled_drift", instance, cursor=cursor, sensor=sensor)
    (request,) = data.run_requests
    # Friday and Monday were missed (daemon down): one run, for the latest tick, Monday 08:30 Paris.
    assert request.run_key == "drift:2025-03-17T07:30:00+00:00"


def test_drift_sensor_defaults_to_midnight_utc(tmp_path, instance):
    defs, sensor, _ = _drift(tmp_path)
    data = _tick(defs, "toy__scheduled_drift", instance, cursor="2025-03-13T00:00:00+00:00", sensor=sensor)
    (request,) = data.run_requests
    assert request.run_key == "drift:2025-03-14T00:00:00+00:00"


def test_drift_sensor_reads_the_cron_from_eval_yaml_at_every_tick(tmp_path, instance):
    defs, sensor, clock = _drift(tmp_path, 'schedule: {drift_cron: "0 6 * * *"}\n')
    path = tmp_path / "toy" / "eval.yaml"
    path.write_text(path.read_text().replace('schedule: {drift_cron: "0 6 * * *"}', 'automation: {drift_cron: "0 9 * * *"}'))
    data = _tick(defs, "toy__scheduled_drift", instance, cursor="2025-03-14T06:00:00+00:00", sensor=sensor)
    (request,) = data.run_requests
    assert request.run_key == "drift:2025-03-14T09:00:00+00:00"


def test_fingerprint_without_a_git_binary(tmp_path, monkeypatch):
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    fingerprint = fixture_fingerprint(spec)
    assert (fingerprint.commit, fingerprint.status) == ("", "untracked")


def test_a_fixture_run_that_opts_in_reuses_the_latest_complete_runs_unchanged_traces(tmp_path, instance, git_repo,
                                                                                     monkeypatch):
    import json

    from evalh_pipeline.defs.launch import materialize_run
    from evalh_pipeline.store.run_dir import new_run_id

    path = write_eval(git_repo / "toy", cases=4, systems=STEADY_SYSTEMS,
                      extra_yaml="automation: {on_fixture_change: true, reuse_unchanged_traces: true}\n")
    _commit(git_repo, "eval and dataset")
    spec = load_eval(path)
    defs, _ = build_definitions([spec])
    first = _tick(defs, "toy__fixtures_changed", instance)
    previous = new_run_id(spec.name)
    materialize_run(spec, previous, instance=instance)  # a complete run to start from

    # One case changes in a commit (so the commit and the dataset's version change too).
    cases = (git_repo / "toy" / "cases.jsonl").read_text().splitlines()
    cases[2] = cases[2].replace("answer 2 Paris", "answer 2 changed Paris")
    (git_repo / "toy" / "cases.jsonl").write_text("\n".join(cases) + "\n")
    _commit(git_repo, "case_2 changed")
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)
    request, run_id = _assert_one_whole_run(changed)
    assert request.tags["evalh/reuse_from"] == previous

    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    result = execute_requested(defs, changed, instance)

    assert result.success
    calls = sorted(tuple(json.loads(line)) for line in log.read_text().splitlines())
    assert calls == [("case_2", "base"), ("case_2", "candidate")]  # the system only for the changed cells
    run_dir = RunDirectory(git_repo / "toy" / "runs" / run_id)
    summary = load_summary(run_dir)
    assert summary.completeness.complete and summary.reused_traces == 6 and summary.reused_from == [previous]
    traces = instance.get_latest_materialization_event(dg.AssetKey(["toy", "traces"])).asset_materialization.metadata
    assert traces["cells_reused"].value == 6 and traces["cells_run"].value == 2
    assert traces["reused_from_run_id"].value == previous


def test_a_fixture_run_reuses_nothing_unless_the_eval_opts_in(tmp_path, instance, git_repo):
    from evalh_pipeline.defs.launch import materialize_run
    from evalh_pipeline.store.run_dir import new_run_id

    path = write_eval(git_repo / "toy", cases=2, systems=STEADY_SYSTEMS,
                      extra_yaml="automation: {on_fixture_change: true}\n")
    _commit(git_repo, "eval and dataset")
    spec = load_eval(path)
    defs, _ = build_definitions([spec])
    first = _tick(defs, "toy__fixtures_changed", instance)
    materialize_run(spec, new_run_id(spec.name), instance=instance)
    with (git_repo / "toy" / "cases.jsonl").open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}, "expected": {"answer_should_include": ["Paris"]}}\n')
    _commit(git_repo, "a new case")

    request, _ = _assert_one_whole_run(_tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor))
    assert "evalh/reuse_from" not in request.tags


def test_fixture_sensor_sees_a_new_commit_on_a_git_branch_systems_branch(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # the eval itself is not in git
    agent = tmp_path / "agent"
    agent.mkdir()
    _git(agent, "init", "-q", "-b", "main")
    for key, value in (("user.email", "evalh@example.com"), ("user.name", "evalh tests"), ("commit.gpgsign", "false")):
        _git(agent, "config", key, value)
    (agent / "app.py").write_text("print(1)\n")
    _commit(agent, "v1")
    path = write_eval(tmp_path / "toy")
    text = path.read_text().replace("systems:\n", "systems:\n  - name: branchy\n    adapter: git_branch\n"
                                    "    repo_path: ../agent\n    branch: main\n    start_command: [\"true\"]\n    healthcheck: GET /health\n"
                                    "    inner_adapter: http\n    inner_config: {endpoint: \"http://localhost:{port}/\"}\n", 1)
    path.write_text(text)
    spec = load_eval(path)
    defs, _ = build_definitions([spec])
    first = _tick(defs, "toy__fixtures_changed", instance)
    assert first.run_requests == []

    # A commit on another branch of the agent's repository is not the system's: nothing.
    _git(agent, "checkout", "-qb", "other")
    (agent / "app.py").write_text("print(3)\n")
    _commit(agent, "elsewhere")
    _git(agent, "checkout", "-q", "main")
    assert _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor).run_requests == []

    (agent / "app.py").write_text("print(2)\n")
    moved = _commit(agent, "v2")
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)
    _assert_one_whole_run(changed)
    assert fixture_fingerprint(spec).systems == {"branchy": f"git:{moved}"}
    assert changed.cursor != first.cursor
