"""Adding a run's partition: a run id that cannot be a partition key is refused as one
``ConfigError`` line before the instance is written."""

from __future__ import annotations

import dagster as dg
import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.defs.evals.names import runs_partitions
from evalh_pipeline.defs.launch import add_run_partition


def test_a_run_id_that_cannot_be_a_partition_key_is_one_config_line_and_adds_nothing():
    with dg.DagsterInstance.ephemeral() as instance:
        with pytest.raises(ConfigError) as raised:
            add_run_partition(instance, "toy", "..")
        assert str(raised.value).startswith("run id: '..' cannot be a run id (a partition key and a folder name): use ")
        assert "\n" not in str(raised.value)
        assert instance.get_dynamic_partitions(runs_partitions("toy")) == []
        add_run_partition(instance, "toy", "r1")
        assert instance.get_dynamic_partitions(runs_partitions("toy")) == ["r1"]
