"""The DataModel.md contracts as pydantic models."""

from evalh_pipeline.models.artifact import FileDiff, FileEntry, FileManifest, FilesystemArtifact
from evalh_pipeline.models.case import CaseEvaluator, EvalCase, ExpectedBehavior
from evalh_pipeline.models.judge_consistency import FlippingCell, JudgeConsistency
from evalh_pipeline.models.label import HumanLabel, judged_content_hash
from evalh_pipeline.models.result import NOT_JUDGED_ERRORS, EvaluationResult
from evalh_pipeline.models.summary import (
    ComparisonReport,
    Completeness,
    EvaluatorRollup,
    EvaluatorVariantRollup,
    NotJudged,
    PairedStats,
    RepeatStats,
    RunSummary,
    VariantDelta,
    VariantSummary,
)
from evalh_pipeline.models.trace import (
    ERROR_TYPES,
    CellRecord,
    ToolCall,
    ToolResult,
    Trace,
    TraceError,
    TraceMessage,
    TraceMetrics,
    TraceOutput,
)
from evalh_pipeline.models.variant import RunVariant
from evalh_pipeline.models.versioning import SCHEMA_VERSION, SchemaVersionError

__all__ = [
    "NOT_JUDGED_ERRORS",
    "SCHEMA_VERSION",
    "CellRecord",
    "CaseEvaluator",
    "ComparisonReport",
    "Completeness",
    "EvalCase",
    "FlippingCell",
    "JudgeConsistency",
    "EvaluationResult",
    "EvaluatorRollup",
    "EvaluatorVariantRollup",
    "NotJudged",
    "ExpectedBehavior",
    "FileDiff",
    "FileEntry",
    "FileManifest",
    "FilesystemArtifact",
    "HumanLabel",
    "PairedStats",
    "RepeatStats",
    "RunSummary",
    "RunVariant",
    "SchemaVersionError",
    "ToolCall",
    "ToolResult",
    "Trace",
    "TraceError",
    "TraceMessage",
    "TraceMetrics",
    "ERROR_TYPES",
    "TraceOutput",
    "VariantDelta",
    "VariantSummary",
    "judged_content_hash",
]
