"""A case's own evaluators (``evaluators:`` on a dataset row), as the runner judges them.

The cases of a run carry them in the run's cases snapshot. Every case evaluator of one name
is one :class:`CaseEvaluatorGroup` beside the eval's evaluators (names never clash: the
dataset check rejects it), so the results store keeps one file per name as for any
evaluator. The group judges a cell with the evaluator its case configures under that name,
and gives no result for a case without one.

Each result records the hash of its own case's config (``evaluator_hash``), so editing the
evaluator of one case re-judges that case only: the group's own hash (the store's) covers
every case's, and when it changes the evaluation merges (runner/evaluation.py), keeping each
result whose case still has the config it was judged with.
"""

from __future__ import annotations

from pathlib import Path
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorContext, Verdict
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace
from evalh_pipeline.runner.hashes import content_hash, evaluator_hash
from evalh_pipeline.store.case_index import case_evaluator_entries


class CaseEvaluatorGroup(Evaluator):
    """The evaluators named ``name`` on the cases of a run; ``hashes``: case id -> the hash of
    that case's evaluator config (runner/hashes.py: name, type and config, secrets masked)."""

    reads_case = True

    def __init__(self, name: str, hashes: dict[str, str], context: EvaluatorContext) -> None:
        # Not an evaluator type's config: the group holds one per case.
        self.name = name
        self.type_name = "case evaluators"
        self.context = context
        self.hashes = hashes
        self.config_hash = content_hash({"case_evaluators": sorted(hashes.items())})
        self._built: dict[str, Evaluator] = {}

    def for_case(self, case: EvalCase) -> Evaluator | None:
        """The evaluator ``case`` configures under this name (None: the case has none)."""
        entry = next((e for e in case.evaluators if e.name == self.name), None)
        if entry is None:
            return None
        digest = evaluator_hash(entry.name, entry.type, entry.config, self.context.secret_values)
        built = self._built.get(digest)
        if built is None:
            built = EVALUATORS.get(entry.type)(entry.name, entry.type, entry.config, self.context)
            built.config_hash = digest
            self._built[digest] = built
        return built

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        chosen = self.for_case(case)
        if chosen is None:
            raise LookupError(f"case {case.id!r} has no evaluator named {self.name!r}")
        return await chosen.evaluate(case, trace, artifact)


def for_case(evaluator: Evaluator, case: EvalCase) -> Evaluator | None:
    """The evaluator that judges ``case`` for ``evaluator`` (a group's member; None: none does)."""
    return evaluator.for_case(case) if isinstance(evaluator, CaseEvaluatorGroup) else evaluator


def case_evaluator_hashes(cases: Path, secrets: frozenset[str] = frozenset()) -> dict[str, dict[str, str]]:
    """Evaluator name -> case id -> the hash of that case's config, for every case evaluator
    of a cases snapshot (names in order of first appearance)."""
    found: dict[str, dict[str, str]] = {}
    for case_id, entry in case_evaluator_entries(cases):
        found.setdefault(entry["name"], {})[case_id] = evaluator_hash(
            entry["name"], entry["type"], entry.get("config") or {}, secrets)
    return found
