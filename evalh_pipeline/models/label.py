"""A human's verdict on one cell's judged content: the contract of an eval's label store."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalh_pipeline.models.trace import Trace

LABEL_SCHEMA_VERSION: Literal["1"] = "1"


class HumanLabel(BaseModel):
    """One line of ``labels.jsonl`` (store/labels.py).

    Keyed by ``content_hash``, the hash of what the evaluator judges (the case and the
    trace's output, messages and tool calls: runner/hashes.py ``judged_content_hash``), with
    the evaluator's name and config hash: a later run whose trace has the same content
    carries the label. ``case_id``, ``variant_name``, ``sample`` and ``run_id`` say which
    cell it was given on, for people; they are not part of the key.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal["1"] = LABEL_SCHEMA_VERSION
    """The version of the label format."""
    content_hash: str
    """The hash of what the evaluator judged: the case and the trace's output, messages and tool
    calls.
    """
    evaluator: str
    """The name of the evaluator whose verdict the label is compared with."""
    evaluator_hash: str
    """The hash of that evaluator's config."""
    passed: bool
    """The human's verdict."""
    labeller: str
    """Who gave the label."""
    labelled_at: datetime
    """When the label was given."""
    note: str | None = None
    """The labeller's note, if any."""
    case_id: str
    """The case of the cell it was given on (for people; not part of the key)."""
    variant_name: str
    """The variant of the cell it was given on (for people; not part of the key)."""
    sample: int = 0
    """The sample of the cell it was given on (for people; not part of the key)."""
    run_id: str
    """The run of the cell it was given on (for people; not part of the key)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """What a label applies to: the judged content and the evaluator's name and config."""
        return (self.content_hash, self.evaluator, self.evaluator_hash)


def judged_content_hash(trace: Trace) -> str:
    """The hash of what an evaluator judges in ``trace``: its case (``case_hash``, else the
    case's id and input) and the trace's output, messages and tool calls, never its
    timestamps or latencies, so a later run with the same answer hashes the same."""
    no_time = {"started_at"}
    value = {
        "case": trace.case_hash or {"case_id": trace.case_id, "input": trace.input},
        "output": trace.output.model_dump(mode="json"),
        "messages": [m.model_dump(mode="json", exclude={"tool_call": no_time}) for m in trace.messages],
        "tool_calls": [c.model_dump(mode="json", exclude=no_time) for c in trace.tool_calls],
    }
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
