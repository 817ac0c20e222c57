"""schema_version: 1.x records load, another major is refused, migrations run in order."""

from __future__ import annotations

import pytest

from evalh_pipeline.models import SCHEMA_VERSION, SchemaVersionError
from evalh_pipeline.models import versioning
from evalh_pipeline.models.versioning import check_major, migrate


def test_current_schema_version_is_1_0():
    assert SCHEMA_VERSION == "1.0"


@pytest.mark.parametrize("version", ["1.0", "1.7", "1", 1.0, None])
def test_any_1x_version_passes_the_major_check(version):
    check_major(version, what="traces.jsonl:1")


@pytest.mark.parametrize("version", ["2.0", "0.9", "10.0"])
def test_another_major_is_refused_with_a_clear_message(version):
    with pytest.raises(SchemaVersionError) as info:
        check_major(version, what="traces.jsonl:3")
    message = str(info.value)
    assert message.startswith(f"traces.jsonl:3 has schema_version '{version}'")
    assert "reads 1.x only" in message and "Upgrade evalh_pipeline" in message


def test_schema_version_error_is_a_value_error():
    assert issubclass(SchemaVersionError, ValueError)


def test_migrate_returns_a_1x_record_unchanged_when_no_migration_applies():
    record = {"schema_version": "1.0", "run_id": "r", "new_field": 1}
    assert migrate("trace", dict(record), what="x") == record


def test_migrate_treats_a_record_without_schema_version_as_1_0(monkeypatch):
    seen = []
    monkeypatch.setitem(versioning._MIGRATIONS, ("trace", "1.0"),
                        lambda r: seen.append(r) or {**r, "schema_version": "1.1"})
    assert migrate("trace", {"run_id": "r"}, what="x")["schema_version"] == "1.1"
    assert seen == [{"run_id": "r"}]


def test_migrate_refuses_major_2():
    with pytest.raises(SchemaVersionError, match="'2.0'"):
        migrate("trace", {"schema_version": "2.0"}, what="traces.jsonl:1")


def test_migrate_hooks_chain_step_by_step_for_their_kind_only(monkeypatch):
    def one_to_one_one(record):
        record = dict(record)
        record["answer"] = record.pop("final")
        return {**record, "schema_version": "1.1"}

    def one_one_to_one_two(record):
        return {**record, "schema_version": "1.2", "migrated": True}

    monkeypatch.setitem(versioning._MIGRATIONS, ("trace", "1.0"), one_to_one_one)
    monkeypatch.setitem(versioning._MIGRATIONS, ("trace", "1.1"), one_one_to_one_two)
    assert migrate("trace", {"schema_version": "1.0", "final": "x"}, what="t") == {
        "schema_version": "1.2", "answer": "x", "migrated": True,
    }
    assert migrate("result", {"schema_version": "1.0", "final": "x"}, what="r") == {
        "schema_version": "1.0", "final": "x",
    }
