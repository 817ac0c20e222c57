"""promptfoo's ``echo`` provider for imported evals: the answer is the rendered prompt.

An imported variant of ``echo`` is a ``python_function`` system calling :func:`respond`,
with the prompt (as an evalh template over the case) in its ``echo_prompt`` key.
"""

from __future__ import annotations

from typing import Any

from evalh_pipeline.common.templating import render_case_template

TARGET = "evalh_pipeline.importers.promptfoo.echo:respond"


def respond(case: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    """The variant's ``echo_prompt`` rendered with ``case`` (missing vars render empty, as in promptfoo)."""
    return {"final_answer": render_case_template(variant["config"]["echo_prompt"], case, strict=False)}
