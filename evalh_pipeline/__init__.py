"""evalh_pipeline: an evaluation harness for AI systems, built as a Dagster project.

The engine (models, config, systems, evaluators, runner, store, queries) is plain
Python; only ``evalh_pipeline.defs`` imports Dagster.

The public API is what ``__all__`` names, importable from here: the record models, the base
classes of the six plugin families and their registries, ``Verdict``, loading an eval
(``load_eval``), reading a run folder (``open_run``), and the error hierarchy
(``EvalhError``). Everything else is internal and may change without notice. A name is
imported on first use, so ``import evalh_pipeline`` costs nothing more than this file.

A plugin subclasses its family's base and registers under a YAML type name, either with
an entry point of the family's group (``evalh_pipeline.evaluators``,
``evalh_pipeline.systems``, ``evalh_pipeline.judges``, ``evalh_pipeline.workspaces``,
``evalh_pipeline.enrichers``, ``evalh_pipeline.embedders``, ``evalh_pipeline.stores``), the
packaged way, or in process with ``EVALUATORS.register(name, cls)`` and the like.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Exported name -> the module that defines it (imported on first access, then cached here).
_EXPORTS: dict[str, str] = {
    # Records (DataModel.md)
    "CaseEvaluator": "evalh_pipeline.models",
    "ComparisonReport": "evalh_pipeline.models",
    "EvalCase": "evalh_pipeline.models",
    "EvaluationResult": "evalh_pipeline.models",
    "ExpectedBehavior": "evalh_pipeline.models",
    "FilesystemArtifact": "evalh_pipeline.models",
    "HumanLabel": "evalh_pipeline.models",
    "RunSummary": "evalh_pipeline.models",
    "RunVariant": "evalh_pipeline.models",
    "ToolCall": "evalh_pipeline.models",
    "ToolResult": "evalh_pipeline.models",
    "Trace": "evalh_pipeline.models",
    "TraceError": "evalh_pipeline.models",
    "TraceMessage": "evalh_pipeline.models",
    "TraceMetrics": "evalh_pipeline.models",
    "TraceOutput": "evalh_pipeline.models",
    "VariantSummary": "evalh_pipeline.models",
    # Evaluators
    "EVALUATORS": "evalh_pipeline.evaluators.registry",
    "Evaluator": "evalh_pipeline.evaluators.base",
    "EvaluatorConfigModel": "evalh_pipeline.evaluators.base",
    "SyncEvaluator": "evalh_pipeline.evaluators.base",
    "Verdict": "evalh_pipeline.evaluators.base",
    # Systems under test
    "SYSTEMS": "evalh_pipeline.systems.registry",
    "AdapterError": "evalh_pipeline.systems.base",
    "SystemAdapter": "evalh_pipeline.systems.base",
    "SystemConfigModel": "evalh_pipeline.systems.base",
    "SystemContext": "evalh_pipeline.systems.base",
    "SystemResponse": "evalh_pipeline.systems.base",
    "Workspace": "evalh_pipeline.systems.base",
    # Judge backends
    "JUDGE_BACKENDS": "evalh_pipeline.llm.registry",
    "JudgeBackend": "evalh_pipeline.llm.chat",
    "JudgeReply": "evalh_pipeline.llm.chat",
    # Workspaces
    "WORKSPACES": "evalh_pipeline.workspaces.registry",
    "WorkspaceAdapter": "evalh_pipeline.workspaces.base",
    "WorkspaceConfigModel": "evalh_pipeline.workspaces.base",
    # Trace enrichers
    "ENRICHERS": "evalh_pipeline.enrichers.registry",
    "EnricherConfig": "evalh_pipeline.enrichers.base",
    "EnricherContext": "evalh_pipeline.enrichers.base",
    "TraceEnricher": "evalh_pipeline.enrichers.base",
    # Embedders
    "EMBEDDERS": "evalh_pipeline.embedders.registry",
    "Embedder": "evalh_pipeline.embedders.base",
    "EmbedderConfigModel": "evalh_pipeline.embedders.base",
    # Trace stores (output[])
    "STORES": "evalh_pipeline.outputs.registry",
    "ReadableStore": "evalh_pipeline.outputs.stores.base",
    "StoreConfig": "evalh_pipeline.outputs.stores.base",
    "StoreContext": "evalh_pipeline.outputs.stores.base",
    "RunDirectory": "evalh_pipeline.store.run_dir",
    "TraceStore": "evalh_pipeline.outputs.stores.base",
    # Registration
    "Registry": "evalh_pipeline.registry",
    "UnknownTypeError": "evalh_pipeline.registry",
    # Loading an eval
    "ConfigError": "evalh_pipeline.config",
    "EvalSpec": "evalh_pipeline.config",
    "load_eval": "evalh_pipeline.runner.loading",
    # Reading a run
    "NotARunFolder": "evalh_pipeline.runs",
    "RunFolder": "evalh_pipeline.runs",
    "open_run": "evalh_pipeline.runs",
    # Errors
    "CellError": "evalh_pipeline.errors",
    "EvalhError": "evalh_pipeline.errors",
    "InfrastructureError": "evalh_pipeline.errors",
    "UserError": "evalh_pipeline.errors",
}

# Literal, so type checkers see what is re-exported (tests/test_exported_members.py checks it against _EXPORTS).
__all__ = [
    "AdapterError", "CaseEvaluator", "CellError", "ComparisonReport", "ConfigError", "EMBEDDERS",
    "ENRICHERS", "EVALUATORS", "Embedder", "EmbedderConfigModel", "EnricherConfig",
    "EnricherContext", "EvalCase", "EvalSpec", "EvalhError", "EvaluationResult", "Evaluator",
    "EvaluatorConfigModel", "ExpectedBehavior", "FilesystemArtifact", "HumanLabel",
    "InfrastructureError", "JUDGE_BACKENDS", "JudgeBackend", "JudgeReply", "NotARunFolder",
    "ReadableStore", "Registry", "RunDirectory", "RunFolder", "RunSummary", "RunVariant", "STORES", "SYSTEMS",
    "StoreConfig", "StoreContext", "SyncEvaluator", "SystemAdapter", "SystemConfigModel",
    "SystemContext", "SystemResponse", "ToolCall", "ToolResult", "Trace", "TraceEnricher",
    "TraceError", "TraceMessage", "TraceMetrics", "TraceOutput", "TraceStore", "UnknownTypeError",
    "UserError", "VariantSummary", "Verdict", "WORKSPACES", "Workspace", "WorkspaceAdapter",
    "WorkspaceConfigModel", "__version__", "load_eval", "open_run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # what type checkers and editors see; nothing is imported at run time
    from evalh_pipeline.config import ConfigError, EvalSpec
    from evalh_pipeline.embedders.base import Embedder, EmbedderConfigModel
    from evalh_pipeline.embedders.registry import EMBEDDERS
    from evalh_pipeline.enrichers.base import EnricherConfig, EnricherContext, TraceEnricher
    from evalh_pipeline.enrichers.registry import ENRICHERS
    from evalh_pipeline.errors import CellError, EvalhError, InfrastructureError, UserError
    from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, SyncEvaluator, Verdict
    from evalh_pipeline.evaluators.registry import EVALUATORS
    from evalh_pipeline.llm.chat import JudgeBackend, JudgeReply
    from evalh_pipeline.llm.registry import JUDGE_BACKENDS
    from evalh_pipeline.models import (
        CaseEvaluator,
        ComparisonReport,
        EvalCase,
        EvaluationResult,
        ExpectedBehavior,
        FilesystemArtifact,
        HumanLabel,
        RunSummary,
        RunVariant,
        ToolCall,
        ToolResult,
        Trace,
        TraceError,
        TraceMessage,
        TraceMetrics,
        TraceOutput,
        VariantSummary,
    )
    from evalh_pipeline.registry import Registry, UnknownTypeError
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runs import NotARunFolder, RunFolder, open_run
    from evalh_pipeline.outputs.registry import STORES
    from evalh_pipeline.outputs.stores.base import ReadableStore, StoreConfig, StoreContext, TraceStore
    from evalh_pipeline.store.run_dir import RunDirectory
    from evalh_pipeline.systems.base import (
        AdapterError,
        SystemAdapter,
        SystemConfigModel,
        SystemContext,
        SystemResponse,
        Workspace,
    )
    from evalh_pipeline.systems.registry import SYSTEMS
    from evalh_pipeline.workspaces.base import WorkspaceAdapter, WorkspaceConfigModel
    from evalh_pipeline.workspaces.registry import WORKSPACES
