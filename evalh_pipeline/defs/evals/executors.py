"""Which Dagster executor runs the steps of an eval's jobs: ``run.executor.type`` of eval.yaml.

``local`` (eval-harness's default) and ``in_process`` run every step in the launching process,
as always; ``multiprocess`` runs each step (each shard of ``traces``: runner/shards.py) in a
process of its own on this machine. Any other type keeps today's in-process behaviour.
"""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.config import EvalSpec

# Keyed by config/schema.py's IN_PROCESS_EXECUTORS and OUT_OF_PROCESS_EXECUTORS.
EXECUTORS: dict[str, dg.ExecutorDefinition] = {
    "local": dg.in_process_executor,
    "in_process": dg.in_process_executor,
    "multiprocess": dg.multiprocess_executor,
}


def eval_executor(spec: EvalSpec) -> dg.ExecutorDefinition:
    """The Dagster executor of ``spec``'s jobs (in process unless ``run.executor.type`` names another)."""
    return EXECUTORS.get(spec.config.run.executor.type, dg.in_process_executor)


def runs_in_process(spec: EvalSpec) -> bool:
    """Whether ``spec``'s jobs run every step in the launching process."""
    return eval_executor(spec) is dg.in_process_executor
