"""`evalh run`'s start-up: the objects alive once the Dagster layer is imported are frozen
out of the garbage collector's reach, and collection goes on for everything after."""

from __future__ import annotations

import gc

import pytest

from evalh_pipeline.cli.running import _long_lived_objects


@pytest.fixture(autouse=True)
def _collector_restored():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_collection_is_paused_inside_and_resumes_with_the_imports_frozen():
    gc.enable()
    gc.unfreeze()
    with _long_lived_objects():
        assert not gc.isenabled()
        kept = [object() for _ in range(10)]  # noqa: F841 - alive when the block ends
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0


def test_collection_resumes_when_the_block_raises():
    gc.enable()
    with pytest.raises(RuntimeError), _long_lived_objects():
        raise RuntimeError("instance folder unusable")
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled():
    gc.disable()
    with _long_lived_objects():
        pass
    assert not gc.isenabled()
