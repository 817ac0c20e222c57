"""``tool_called``: a tool was (or was not) called, how often, with which arguments."""

from __future__ import annotations

import re
from typing import Any

from pydantic import model_validator

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, ToolCall, Trace
from evalh_pipeline.common.templating import render_structure

_REGEX_PREFIX = "~="


class ToolCalledConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("tool_calls",)

    tool_name: str | None = None
    must_appear: bool = True
    min_calls: int = 1
    max_calls: int | None = None
    must_succeed: bool = True
    args_match: dict[str, Any] | None = None

    def trace_fields_read(self) -> tuple[str, ...]:
        # Without tool_results, must_succeed finds no failed call to fail on.
        return (*self.TRACE_FIELDS, *(["tool_results"] if self.must_succeed else []))

    @model_validator(mode="after")
    def _bounds(self) -> "ToolCalledConfig":
        if self.max_calls is not None and self.max_calls < self.min_calls:
            raise ValueError("max_calls must be >= min_calls")
        return self


class ToolCalled(SyncEvaluator[ToolCalledConfig]):
    """Checks ``tool_name`` — or, without it, each of the case's ``expected.must_call_tools``.

    ``args_match`` is a partial match on the call's arguments: values may use
    ``{{ case.<path> }}`` templates and ``~=<regex>`` (matches string arguments only); nested
    dicts match partially, lists element by element, as in eval-harness.
    """

    trace_fields = frozenset({"tool_calls", "tool_results"})

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        tools = [cfg.tool_name] if cfg.tool_name else list(case.expected.must_call_tools)
        if not tools:
            return Verdict(True, "no tool expected (no tool_name, empty expected.must_call_tools)", score=1.0)
        expected_args = render_structure(cfg.args_match, case, strict=False, to_text=str) if cfg.args_match is not None else None
        problems: list[str] = []
        counts: dict[str, int] = {}
        for tool in tools:
            calls = [
                c for c in trace.tool_calls
                if c.name == tool and (expected_args is None or _matches(expected_args, c.arguments))
            ]
            counts[tool] = len(calls)
            problems.extend(self._check(tool, calls, trace))
        detail = {"tools": tools, "counts": counts, "args_match": expected_args}
        if problems:
            return Verdict(False, "; ".join(problems), score=0.0, detail=detail)
        return Verdict(True, f"{', '.join(tools)} called as expected", score=1.0, detail=detail)

    def _check(self, tool: str, calls: list[ToolCall], trace: Trace) -> list[str]:
        cfg = self.config
        n = len(calls)
        if not cfg.must_appear:
            return [f"{tool}: must not be called but {n} matching call(s) present"] if n else []
        problems = []
        if n < cfg.min_calls:
            problems.append(f"{tool}: called {n} time(s), fewer than min_calls {cfg.min_calls}")
        if cfg.max_calls is not None and n > cfg.max_calls:
            problems.append(f"{tool}: called {n} time(s), more than max_calls {cfg.max_calls}")
        if cfg.must_succeed and n and trace.tool_results:  # no results, no failed one: skip both scans
            ids = {c.id for c in calls if c.id}
            failed = [
                r.tool_call_id or r.name for r in trace.tool_results
                if r.name == tool and (not ids or r.tool_call_id in ids)
                and isinstance(r.content, dict) and (r.content.get("error") or r.content.get("is_error"))
            ]
            if failed:
                problems.append(f"{tool}: tool returned an error for {failed}")
        return problems


def _matches(expected: Any, actual: Any) -> bool:
    """eval-harness's rule: dicts match partially, lists element by element (same length),
    ``~=regex`` only matches a string, anything else by ``==``."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, str) and expected.startswith(_REGEX_PREFIX):
        return isinstance(actual, str) and re.search(expected[len(_REGEX_PREFIX):], actual) is not None
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_matches(e, a) for e, a in zip(expected, actual))
    return bool(expected == actual)
