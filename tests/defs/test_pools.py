"""Where a run's pools are counted under Dagster: the instance's own database (defs/pools.py),
so every step process of the run shares one count; an ephemeral instance keeps them in process."""

from __future__ import annotations

import json
import sqlite3

import dagster as dg
import pytest

from evalh_pipeline.common.ratelimits.shared import DatabasePools
from evalh_pipeline.defs.pools import instance_pools_url
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.rate_limited_server import RateLimitedServer

pytestmark = pytest.mark.integration


def test_a_local_instance_counts_pools_in_a_file_of_its_folder_and_an_ephemeral_one_in_process(tmp_path):
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    instance = dg.DagsterInstance.from_config(str(tmp_path))
    try:
        url = instance_pools_url(instance)
    finally:
        instance.dispose()
    assert url == f"sqlite:///{tmp_path / 'evalh' / 'pools.db'}"
    database = DatabasePools(url)
    assert database.now() > 0
    database.close()
    with dg.DagsterInstance.ephemeral() as ephemeral:
        assert instance_pools_url(ephemeral) is None


def _system(name: str, url: str) -> str:
    return f"""
  - name: {name}
    adapter: http
    endpoint: {url}
    provider: openai_chat
    model: m
    request_template: {{messages: [{{role: user, content: "{{{{ case.input.answer }}}}"}}]}}
    timeout_seconds: 30
    pool: api
"""


def test_a_run_counts_its_pool_in_the_instance_database_and_keeps_its_limit(tmp_path, env):
    with RateLimitedServer(latency=0.05) as server:
        path = write_eval(tmp_path / "pooled", cases=8, systems=_system("base", server.url) + _system("other", server.url),
                          extra_yaml="")
        path.write_text(path.read_text().replace("run:\n  max_concurrency: 4\n",
                                                 "run:\n  max_concurrency: 8\n  executor:\n    pools: {api: 2}\n"))
        done = run_evalh(["run", str(path)], env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert server.total.answered == 16 and server.total.peak_in_flight <= 2
    [run_dir] = (tmp_path / "pooled" / "runs").iterdir()
    [record] = [json.loads(line) for line in (run_dir / "rate_limits.jsonl").read_text().splitlines()]
    assert record["limit"] == "pool api" and record["shared"] is True and record["max_in_flight"] <= 2
    with sqlite3.connect(f"{env['DAGSTER_HOME']}/evalh/pools.db") as db:
        pools = [row[0] for row in db.execute("SELECT pool FROM evalh_pool_buckets")]
        leases = db.execute("SELECT count(*) FROM evalh_pool_leases").fetchone()[0]
    assert pools == [f"pooled/{run_dir.name}/api"] and leases == 0


def test_a_pool_holds_across_the_shards_of_a_multiprocess_run(tmp_path, env):
    # Two variants share one pool of 2; four shards run in four step processes: the limit is
    # the pool's, counted in the instance database, not 2 per process.
    with RateLimitedServer(latency=0.2) as server:
        path = write_eval(tmp_path / "pooled", cases=12, systems=_system("base", server.url) + _system("other", server.url),
                          extra_yaml="")
        path.write_text(path.read_text().replace(
            "run:\n  max_concurrency: 4\n",
            "run:\n  max_concurrency: 8\n  shards: 4\n  executor:\n    type: multiprocess\n    pools: {api: 2}\n"))
        done = run_evalh(["run", str(path)], env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr
    assert server.total.answered == 24 and server.total.peak_in_flight <= 2
    [run_dir] = (tmp_path / "pooled" / "runs").iterdir()
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert len({(t["case_id"], t["variant_name"]) for t in traces}) == 24 and len(traces) == 24
    assert len({t["extra"]["executor"]["pid"] for t in traces}) == 4
