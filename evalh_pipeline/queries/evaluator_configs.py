"""Which evaluator configs judged each side of a comparison, and the regressions they alone explain.

Every result records the config hash of the evaluator that judged it (``evaluator_hash``,
runner/hashes.py), and the results store keeps it per evaluator (store/results_store.py).
Two runs judged with different configs of an evaluator are not comparable on that
evaluator: a case can flip although the system answered the same. Such a regression is
*evaluator-only*: the case's answers (output, tool calls and error of each sample) are the
same on both sides and an evaluator whose config differs is one that stopped passing it.
Re-judging the baseline with the current evaluators (``evalh re-evaluate``, no system call)
makes the two sides comparable again.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalh_pipeline.queries.sql import load_table
from evalh_pipeline.store.results_store import read_store
from evalh_pipeline.store.run_dir import RunDirectory

if TYPE_CHECKING:
    import duckdb

HASH_COLUMNS = {"schema_version": "VARCHAR", "evaluator": "VARCHAR", "evaluator_hash": "VARCHAR"}

# What a system's answer is, for "the same answer": every field a judge can read of the trace.
ANSWER_COLUMNS = {"schema_version": "VARCHAR", "case_id": "VARCHAR", "variant_name": "VARCHAR", "sample": "BIGINT",
                  "output": "JSON", "tool_calls": "JSON", "messages": "JSON", "error": "JSON"}

# Per (variant, case): the answers of its samples in sample order, as one fingerprint.
ANSWERS_SQL = """
SELECT variant_name, case_id,
       string_agg(md5(concat_ws('|', coalesce(CAST(output AS VARCHAR), ''), coalesce(CAST(tool_calls AS VARCHAR), ''),
                                coalesce(CAST(messages AS VARCHAR), ''), coalesce(CAST(error AS VARCHAR), ''))),
                  ',' ORDER BY coalesce(sample, 0)) AS answer
FROM {rows} GROUP BY variant_name, case_id
"""

# Regressed (variant, case) pairs with the same answers on both sides where an evaluator of
# $changed stopped passing: per_evaluator_* are compare's per (evaluator, variant, case) fractions.
EVALUATOR_ONLY_SQL = """
SELECT DISTINCT e.variant_name, e.case_id
FROM per_evaluator_a ea JOIN per_evaluator_b e USING (evaluator, variant_name, case_id)
JOIN answers_a aa USING (variant_name, case_id) JOIN answers_b ab USING (variant_name, case_id)
WHERE ea.fraction > e.fraction AND list_contains($changed, evaluator) AND aa.answer = ab.answer
ORDER BY ALL
"""


@dataclass(frozen=True)
class EvaluatorConfigChange:
    """An evaluator whose results were judged with one config in run A and another in run B."""

    evaluator: str
    hash_a: str
    hash_b: str

    def describe(self, a_label: str = "A", b_label: str = "B") -> str:
        """``mentions_paris: judged with config 1a2b… in A, 3c4d… in B``."""
        return f"{self.evaluator}: judged with config {self.hash_a} in {a_label}, {self.hash_b} in {b_label}"


def judged_with(run_dir: RunDirectory) -> dict[str, str]:
    """Evaluator -> the config hash its results in the run were judged with (several: joined
    with ``+``). Evaluators whose results carry no hash (older runs, eval-harness) are left out:
    nothing can be said about them."""
    store = read_store(run_dir)
    if store is not None and all(e.evaluator_hash for e in store.values()):
        return {name: str(e.evaluator_hash) for name, e in store.items()}
    from evalh_pipeline.queries.sql import connect

    con = connect()
    try:
        load_table(con, "hashes", run_dir.results, HASH_COLUMNS, str(run_dir.results))
        rows = con.execute("SELECT evaluator, list(DISTINCT evaluator_hash ORDER BY evaluator_hash) FROM hashes "
                           "WHERE evaluator_hash IS NOT NULL GROUP BY evaluator").fetchall()
    finally:
        con.close()
    return {name: "+".join(hashes) for name, hashes in rows}


def config_changes(run_a: RunDirectory, run_b: RunDirectory) -> list[EvaluatorConfigChange]:
    """Evaluators both runs have, judged with different configs (by name)."""
    a, b = judged_with(run_a), judged_with(run_b)
    return [EvaluatorConfigChange(name, a[name], b[name]) for name in sorted(set(a) & set(b)) if a[name] != b[name]]


def evaluator_only_regressions(con: duckdb.DuckDBPyConnection, run_a: RunDirectory, run_b: RunDirectory,
                               changed: list[str]) -> dict[str, list[str]]:
    """Variant -> regressed cases whose answers are the same in both runs and that an evaluator
    of ``changed`` stopped passing (``con`` holds compare's per_evaluator_a/_b tables)."""
    for suffix, run in (("_a", run_a), ("_b", run_b)):
        load_table(con, f"answer_rows{suffix}", run.traces, ANSWER_COLUMNS, str(run.traces))
        con.execute(f"CREATE TEMP TABLE answers{suffix} AS {ANSWERS_SQL.format(rows=f'answer_rows{suffix}')}")
        con.execute(f"DROP TABLE answer_rows{suffix}")
    found: dict[str, list[str]] = {}
    for variant, case_id in con.execute(EVALUATOR_ONLY_SQL, {"changed": changed}).fetchall():
        found.setdefault(variant, []).append(case_id)
    return found


def rejudge_command(baseline: RunDirectory, current: RunDirectory, shown_path: str | None = None) -> str:
    """The command that re-judges ``baseline`` with the evaluators ``current`` was made from
    (its eval file), calling no system: ``evalh re-evaluate <baseline> [--config <eval.yaml>]``."""
    command = f"evalh re-evaluate {shown_path or shlex.quote(str(baseline.path))}"
    wanted, had = _config_path(current), _config_path(baseline)
    if wanted and wanted != had:
        command += f" --config {shlex.quote(wanted)}"
    return command


def _config_path(run_dir: RunDirectory) -> str | None:
    try:
        return (run_dir.read_meta() or {}).get("config_path")
    except (FileNotFoundError, ValueError):
        return None
