"""EvalSpec: a loaded, validated eval, ready for the runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.config.errors import ConfigIssue
from evalh_pipeline.config.schema import EvalConfig, eval_key
from evalh_pipeline.models import RunVariant
from evalh_pipeline.registry import Registry


@dataclass(frozen=True)
class EvalSpec:
    """One eval.yaml after env expansion, validation and path resolution.

    ``raw`` is the expanded config as a plain dict (what the run directory snapshots, with
    secrets masked); ``secret_values`` are the expanded values that must never reach disk.
    """

    path: Path
    config: EvalConfig
    variants: list[RunVariant]
    dataset_path: Path
    runs_root: str
    raw: dict[str, Any]
    secret_values: frozenset[str] = field(default_factory=frozenset)
    # metrics.price_table_path resolved and validated at load; None: the built-in table.
    price_table_path: Path | None = None
    # `evalh run --limit N`: keep the first N selected cases (after filter and sample).
    case_limit: int | None = None
    # output[] resolved, canonical first (plain folders absolute, URLs as written). When the
    # canonical one is a URL, runs_root is its local working copy (outputs/publishing.py).
    outputs: tuple[str, ...] = ()
    # output[] entries that are not local_files (sqlite, postgres, otel, plugins), validated,
    # in order: each is a mirror store (outputs/stores/).
    stores: tuple[dict[str, Any], ...] = ()
    # systems[].enrich_trace_from, by variant name (validated): the TraceEnrichers of each variant.
    enrichers: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)
    # systems[].pool, by variant name: the named limit (run.executor.pools) its calls go through.
    variant_pools: dict[str, str] = field(default_factory=dict)
    # The evaluator registry eval.yaml's evaluators were checked against: a dataset row's own
    # evaluators are checked against it too (config/dataset.py). None: only their shape is.
    evaluator_types: Registry[Any] | None = field(default=None, repr=False, compare=False)
    # Keys eval-harness tolerates that evalh ignores (file, line, key, closest known key).
    warnings: tuple[ConfigIssue, ...] = ()
    # The settings (host environment, runs and cache folders) the eval was loaded with: what
    # the stages after loading use (the evaluators' context), so nothing below reads os.environ.
    settings: Settings = field(default_factory=Settings, repr=False, compare=False)

    @property
    def name(self) -> str:
        """The eval's key: run ids, run folders, Dagster asset keys and partitions use it."""
        return eval_key(self.config.eval.name)

    @property
    def display_name(self) -> str:
        """The name as eval.yaml gives it (may hold spaces: `agent main`)."""
        return self.config.eval.name

    @property
    def eval_dir(self) -> Path:
        return self.path.parent

    @property
    def variant_names(self) -> list[str]:
        return [v.name for v in self.variants]
