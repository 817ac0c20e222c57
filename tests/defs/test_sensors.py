"""The fixture sensor and the scheduled drift sensor, against a real instance and a real git repo."""

from __future__ import annotations

import subprocess
from datetime import datetime, timezone

import dagster as dg
import pytest

from evalh_pipeline.config import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.sensors import build_drift_sensor
from evalh_pipeline.store.fixtures import fixture_fingerprint
from tests.conftest import write_eval

RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


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
    context = dg.build_sensor_context(instance=instance, cursor=cursor, definitions=defs)
    return sensor.evaluate_tick(context)


def _assert_one_run_of_every_variant(data, job="toy__cells"):
    assert len(data.run_requests) == 1
    (request,) = data.run_requests
    assert request.job_name == job
    (added,) = data.dynamic_partitions_requests
    assert added.partitions_def_name == "toy__runs"
    (run_id,) = added.partition_keys
    assert run_id.endswith("_toy")
    assert request.tags[RANGE_START] == f"{run_id}|base"
    assert request.tags[RANGE_END] == f"{run_id}|candidate"
    return request, run_id


def test_fixture_sensor_runs_once_per_new_commit(tmp_path, instance, git_repo):
    spec = load_eval(write_eval(git_repo / "toy"))
    first = _commit(git_repo, "eval and dataset")
    defs, _ = build_definitions([spec])

    # First tick: records the fingerprint, requests nothing.
    data = _tick(defs, "toy__fixtures_changed", instance)
    assert data.run_requests == [] and data.dynamic_partitions_requests == []
    assert data.cursor == f"{first}:{fixture_fingerprint(spec).dataset_hash}"

    # Same commit, same dataset: nothing.
    again = _tick(defs, "toy__fixtures_changed", instance, cursor=data.cursor)
    assert again.run_requests == [] and again.dynamic_partitions_requests == []

    # A new commit (outside the dataset) is a fixture change: exactly one run.
    (git_repo / "NOTES.md").write_text("fixtures v2\n")
    second = _commit(git_repo, "v2")
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=data.cursor)
    request, _ = _assert_one_run_of_every_variant(changed)
    digest = fixture_fingerprint(spec).dataset_hash
    assert request.run_key == f"fixtures:{second}:{digest}"
    assert request.tags["evalh/fixture_commit"] == second
    assert request.tags["evalh/fixture_hash"] == digest
    assert changed.cursor == f"{second}:{digest}"

    # Unchanged since: nothing.
    after = _tick(defs, "toy__fixtures_changed", instance, cursor=changed.cursor)
    assert after.run_requests == [] and after.dynamic_partitions_requests == []


def test_fixture_sensor_without_git_follows_the_dataset(tmp_path, instance, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # never see an enclosing repo
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    defs, _ = build_definitions([spec])

    first = _tick(defs, "toy__fixtures_changed", instance)
    assert first.run_requests == []
    assert first.cursor.startswith("nogit:")

    with spec.dataset_path.open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}}\n')
    changed = _tick(defs, "toy__fixtures_changed", instance, cursor=first.cursor)
    request, _ = _assert_one_run_of_every_variant(changed)
    assert request.tags["evalh/fixture_commit"] == "nogit"
    assert request.run_key == f"fixtures:{changed.cursor}"
    assert changed.cursor != first.cursor


def test_sensors_are_registered_and_stopped_by_default(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy"))
    defs, built = build_definitions([spec])
    assert [s.name for s in built["toy"].sensors] == [
        "toy__fixtures_changed", "toy__scheduled_drift", "toy__summarize_sensor_runs"]
    for name in ("toy__fixtures_changed", "toy__scheduled_drift"):
        sensor = defs.resolve_sensor_def(name)
        assert sensor.default_status == dg.DefaultSensorStatus.STOPPED
        assert sensor.job_name == "toy__cells"
    follow_up = defs.resolve_sensor_def("toy__summarize_sensor_runs")
    assert follow_up.default_status == dg.DefaultSensorStatus.STOPPED
    assert follow_up.job_name == "toy__summarize"
    assert defs.resolve_sensor_def("toy__scheduled_drift").minimum_interval_seconds == 60


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
    assert first.run_requests == [] and first.dynamic_partitions_requests == []
    assert first.cursor == "2025-03-14T06:00:00+00:00"  # the latest tick: recorded, not run

    clock.now = datetime(2025, 3, 15, 5, 59, tzinfo=timezone.utc)
    before = _tick(defs, "toy__scheduled_drift", instance, cursor=first.cursor, sensor=sensor)
    assert before.run_requests == [] and before.cursor == first.cursor

    clock.now = datetime(2025, 3, 15, 6, 0, 30, tzinfo=timezone.utc)
    on_tick = _tick(defs, "toy__scheduled_drift", instance, cursor=first.cursor, sensor=sensor)
    request, run_id = _assert_one_run_of_every_variant(on_tick)
    assert request.run_key == "drift:2025-03-15T06:00:00+00:00"
    assert request.tags["evalh/trigger"] == "schedule"
    assert request.tags["evalh/drift_tick"] == "2025-03-15T06:00:00+00:00"
    assert run_id.startswith("2025-03-15T06-00-30")
    assert on_tick.cursor == "2025-03-15T06:00:00+00:00"

    clock.now = datetime(2025, 3, 15, 23, 0, tzinfo=timezone.utc)
    same_tick = _tick(defs, "toy__scheduled_drift", instance, cursor=on_tick.cursor, sensor=sensor)
    assert same_tick.run_requests == [] and same_tick.dynamic_partitions_requests == []


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


def test_drift_sensor_does_not_repeat_a_tick_that_already_has_a_run(tmp_path, instance):
    from dagster._core.test_utils import create_run_for_test

    defs, sensor, _ = _drift(tmp_path)
    create_run_for_test(instance, job_name="toy__cells", tags={"dagster/run_key": "drift:2025-03-14T00:00:00+00:00"})
    data = _tick(defs, "toy__scheduled_drift", instance, cursor="2025-03-13T00:00:00+00:00", sensor=sensor)
    assert data.run_requests == [] and data.dynamic_partitions_requests == []
    assert data.cursor == "2025-03-14T00:00:00+00:00"


def test_fixtures_already_run_are_not_run_again(tmp_path, instance, monkeypatch):
    from dagster._core.test_utils import create_run_for_test

    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    defs, _ = build_definitions([spec])
    key = fixture_fingerprint(spec).key
    create_run_for_test(instance, job_name="toy__cells", tags={"dagster/run_key": f"fixtures:{key}"})

    # Back to fixtures that were run before (e.g. a checkout of an older commit): no new partition.
    data = _tick(defs, "toy__fixtures_changed", instance, cursor="nogit:other")
    assert data.run_requests == [] and data.dynamic_partitions_requests == []
    assert data.cursor == key


def test_fingerprint_without_a_git_binary(tmp_path, monkeypatch):
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert fixture_fingerprint(spec).commit == ""
    assert fixture_fingerprint(spec).key.startswith("nogit:")


def test_a_sensor_started_cells_run_is_followed_by_its_summary(tmp_path):
    from evalh_pipeline.defs.evals.partitions import variant_range_tags

    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    defs, _ = build_definitions([spec])
    follow_up = defs.resolve_sensor_def("toy__summarize_sensor_runs")
    home = tmp_path / "home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        instance.add_dynamic_partitions("toy__runs", ["r1"])
        tags = {**variant_range_tags("r1", spec.variant_names), "evalh/trigger": "fixtures", "evalh/run_id": "r1"}
        result = defs.resolve_job_def("toy__cells").execute_in_process(instance=instance, tags=tags)
        run = instance.get_run_by_id(result.run_id)
        (success,) = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS)
        context = dg.build_run_status_sensor_context(
            sensor_name=follow_up.name, dagster_event=success.dagster_event, dagster_instance=instance,
            dagster_run=run,
        )
        request = follow_up(context)
    assert isinstance(request, dg.RunRequest)
    assert (request.partition_key, request.run_key) == ("r1", "summary:r1")
