"""``tool_calls`` and ``tool_results`` as derived views of ``messages`` (DataModel.md).

They are stored explicitly so evaluators need not walk the messages. When a system reports
only messages, the views are derived from them; when it reports both, they must agree on
the tools called (in order): a disagreement is recorded in ``extra.tool_views_disagree``
(the reported views are kept: they are what the system said it did).
"""

from __future__ import annotations

import json

from evalh_pipeline.models import ToolCall, ToolResult, Trace


def calls_in_messages(trace: Trace) -> list[ToolCall]:
    return [m.tool_call for m in trace.messages if m.tool_call is not None]


def results_in_messages(trace: Trace) -> list[ToolResult]:
    results = []
    for message in trace.messages:
        if message.role != "tool" or not message.name:
            continue
        content = message.content
        if content is None:
            content = ""
        elif not isinstance(content, (str, dict)):
            content = json.dumps(content, ensure_ascii=False)
        results.append(ToolResult(name=message.name, content=content))
    return results


def apply_tool_views(trace: Trace) -> None:
    """Fill the views from messages when missing; record a disagreement when both are given."""
    if not trace.messages:
        return  # nothing to derive and nothing to disagree with (most systems report no messages)
    calls, results = calls_in_messages(trace), results_in_messages(trace)
    disagree = {}
    if not trace.tool_calls:
        trace.tool_calls = [call.model_copy() for call in calls]
    elif calls and [c.name for c in calls] != [c.name for c in trace.tool_calls]:
        disagree["tool_calls"] = {"reported": [c.name for c in trace.tool_calls], "in_messages": [c.name for c in calls]}
    if not trace.tool_results:
        trace.tool_results = results
    elif results and [r.name for r in results] != [r.name for r in trace.tool_results]:
        disagree["tool_results"] = {"reported": [r.name for r in trace.tool_results],
                                    "in_messages": [r.name for r in results]}
    if disagree:
        trace.extra["tool_views_disagree"] = disagree
