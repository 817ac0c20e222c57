"""A real, temporary Dagster instance for the asset tests."""

from __future__ import annotations

import dagster as dg
import pytest


@pytest.fixture
def instance(tmp_path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    with dg.instance_for_test(temp_dir=str(home)) as inst:
        yield inst
