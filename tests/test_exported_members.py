"""The public API is exactly ``evalh_pipeline.__all__``: every name resolves, is documented,
and costs nothing until used."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import evalh_pipeline
from evalh_pipeline.registry import Registry

EXPECTED = [
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


def test_all_is_exactly_the_public_api() -> None:
    assert evalh_pipeline.__all__ == EXPECTED
    # The lazy table and the literal list (what type checkers read) name the same things.
    assert sorted([*evalh_pipeline._EXPORTS, "__version__"]) == EXPECTED


@pytest.mark.parametrize("name", [n for n in EXPECTED if n != "__version__"])
def test_every_export_resolves_to_a_documented_member_of_the_package(name: str) -> None:
    member = getattr(evalh_pipeline, name)
    if isinstance(member, Registry):  # a plugin family's registry: documented by its class
        assert member.entry_point_group.startswith("evalh_pipeline.")
        return
    assert member.__module__.startswith("evalh_pipeline.")
    assert (member.__doc__ or "").strip(), f"{name} has no docstring"
    assert name in dir(evalh_pipeline)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'open_runs'"):
        evalh_pipeline.open_runs  # noqa: B018 - the access is the test


def test_the_package_says_it_is_typed() -> None:
    assert Path(evalh_pipeline.__path__[0], "py.typed").is_file()


@pytest.mark.integration
def test_importing_the_package_imports_none_of_its_modules() -> None:
    probe = ("import sys, evalh_pipeline; "
             "print(sorted(m for m in sys.modules if m.startswith(('evalh_pipeline.', 'pydantic', 'dagster'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
