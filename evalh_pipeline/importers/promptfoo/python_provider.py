"""promptfoo's Python providers (``python:provider.py``, ``file://provider.py[:function]``) for
imported evals.

An imported variant of one is a ``python_function`` system calling :func:`respond`: the
provider's file is copied beside eval.yaml (the eval's folder is importable), and its
``call_api(prompt, options, context)`` (or the named function, sync or async) gets the
rendered prompt, ``{"config": ...}`` and ``{"vars": ...}`` as promptfoo passes them. Its
``output`` is the answer, ``tokenUsage`` and ``cost`` the metrics, ``error`` an errored cell.
"""

from __future__ import annotations

import importlib
import inspect
import json
from typing import Any

from evalh_pipeline.common.templating import render_case_template

TARGET = "evalh_pipeline.importers.promptfoo.python_provider:respond"


async def respond(case: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """Call the promptfoo provider named in the variant's config with the rendered prompt."""
    config = variant["config"]
    provider = getattr(importlib.import_module(config["promptfoo_module"]), config.get("promptfoo_function") or "call_api")
    prompt = render_case_template(config["echo_prompt"], case, strict=False)
    variables = (case.get("input") or {}).get("vars") or {}
    result = provider(prompt, {"config": config.get("promptfoo_config") or {}}, {"vars": variables})
    if inspect.isawaitable(result):
        result = await result
    if not isinstance(result, dict):
        raise TypeError(f"the promptfoo provider returned {type(result).__name__}, not a dict with output")
    if result.get("error"):
        raise RuntimeError(f"the promptfoo provider returned an error: {result['error']}")
    output = result.get("output")
    usage = result.get("tokenUsage") or {}
    metrics = {key: value for key, value in (("token_input", usage.get("prompt")), ("token_output", usage.get("completion")),
                                             ("cost_usd", result.get("cost"))) if value is not None}
    return {"final_answer": output if isinstance(output, str) or output is None else json.dumps(output),
            "metrics": metrics}
