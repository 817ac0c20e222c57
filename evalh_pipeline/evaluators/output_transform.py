"""A transform of the answer before some evaluators judge it: promptfoo's ``transform``.

JavaScript (inline, or a CommonJS file's export) runs in ``node``, a Python file's function in
this interpreter, each in a child process through promptfoo_script's runners, with the answer
as ``output`` and ``context`` (``vars`` from the case's ``input.vars``). The answer travels as
JSON data on stdin: it is never code. As promptfoo's ``transform`` (src/util/transform.ts):

- inline code is ``new Function('output', 'context', 'process', body)`` where a one-line
  expression gets a ``return`` (``getInlineTransformFunction``);
- a file's named function, else its export when that is a function, else its default export
  (``getJavascriptTransformFunction``); a Python file's ``function`` defaults to ``get_transform``;
- a transform that returns nothing (null, undefined) or throws is an error; any other value is
  the new output, a non-string one as its JSON text (promptfoo's assertions read
  ``JSON.stringify`` of an object output).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalh_pipeline.evaluators.promptfoo_script import run_child, runner_argv


class OutputTransform(BaseModel):
    """The code that rewrites the answer: inline JavaScript ``code``, or a file's ``source``."""

    model_config = ConfigDict(extra="forbid")

    language: Literal["javascript", "python"] = "javascript"
    code: str | None = None
    source: str | None = None
    name: str | None = None  # the file's name, for tracebacks
    function: str | None = None
    timeout_seconds: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _one_kind(self) -> OutputTransform:
        if (self.code is None) == (self.source is None):
            raise ValueError("give either code (inline JavaScript) or source (a file's text)")
        if self.language == "python" and self.code is not None:
            raise ValueError("a python transform is a file's source (inline code is JavaScript)")
        return self


async def transform_output(transform: OutputTransform, output: str | None, variables: dict[str, Any]) -> str:
    """The answer as ``transform`` rewrites it; raises RuntimeError when it cannot (no Node,
    the code threw, timed out or returned nothing)."""
    job: dict[str, Any] = {"output": output, "code": transform.code, "source": transform.source,
                           "name": transform.name, "function": transform.function,
                           "context": {"vars": variables, "prompt": None}}
    argv = runner_argv(transform.language, "this transform is JavaScript and needs Node.js (node on PATH); install it to judge")
    if transform.language == "python":
        job["function"] = transform.function or "get_transform"
    else:
        job["body"] = f"return {transform.code}" if transform.code is not None else None
    ok, value = await run_child(argv, json.dumps(job), transform.timeout_seconds)
    if not ok:
        raise RuntimeError(f"Transform failed: {value}")
    if value is None:
        raise RuntimeError("Transform function did not return a value")
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
