"""Which cluster each case of a run belongs to (``run.cluster_by``: a field path of the case).

The ``case_clusters`` table maps a case id to the JSON text of its value at that path; a
case without the field is a cluster of its own, as is every case without ``cluster_by``
(the table is then empty). The statistics group the cases of one cluster together
(queries/significance.py, stats/clustering.py).
"""

from __future__ import annotations

import json
from typing import Any

from evalh_pipeline.common.fields import FieldPath
from evalh_pipeline.queries.cells import run_section
from evalh_pipeline.store.run_dir import RunDirectory

# A case's cluster key: its cluster_by value, else the case itself.
CLUSTER_OF = "coalesce({clusters}.cluster, 'case:' || {case_id})"


def load_case_clusters(con: Any, run_dir: RunDirectory, cluster_by: str | None, *, table: str = "case_clusters") -> None:
    """Create ``table`` (case_id, cluster) from the run's cases snapshot."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE {table} (case_id VARCHAR, cluster VARCHAR)")
    if not cluster_by or not run_dir.cases.exists():
        return
    path = FieldPath(cluster_by)
    rows = []
    with run_dir.cases.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            case = json.loads(line)
            value = path.get(case)
            if value is not None and "id" in case:
                rows.append((str(case["id"]), "value:" + json.dumps(value, sort_keys=True, ensure_ascii=False)))
    if rows:
        con.execute(f"INSERT INTO {table} SELECT unnest($ids), unnest($clusters)",
                    {"ids": [r[0] for r in rows], "clusters": [r[1] for r in rows]})


def snapshot_cluster_by(run_dir: RunDirectory) -> str | None:
    """The ``run.cluster_by`` a run was made with, from its config.yaml snapshot (None when absent)."""
    value = run_section(run_dir).get("cluster_by")
    return value if isinstance(value, str) and value else None
