"""deploy/dagster.yaml and the local instance's dagster.yaml queue runs alike."""

from __future__ import annotations

import yaml

from evalh_pipeline.defs.instance_config import INSTANCE_YAML
from tests.support.deployment import TEAM_YAML


def test_the_team_and_the_local_instance_share_the_run_queue_limits():
    team = yaml.safe_load(TEAM_YAML.read_text())["run_coordinator"]
    local = yaml.safe_load(INSTANCE_YAML)["run_coordinator"]
    assert team == local


def test_the_team_instance_names_the_psycopg2_driver_and_reads_its_secrets_from_the_environment():
    db = yaml.safe_load(TEAM_YAML.read_text())["storage"]["postgres"]["postgres_db"]
    assert db["scheme"] == "postgresql+psycopg2"
    assert db["password"] == {"env": "DAGSTER_PG_PASSWORD"}
