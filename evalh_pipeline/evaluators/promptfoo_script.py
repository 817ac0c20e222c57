"""``promptfoo_script``: promptfoo's ``python`` and ``javascript`` assertions, run as promptfoo runs them.

The assertion's code runs in a child process (Python: this interpreter; JavaScript: ``node``)
with the answer as ``output`` and promptfoo's ``context`` (``vars`` from the case's
``input.vars``, ``test``, ``prompt``: None, as the trace does not keep it). Its result is read
with promptfoo's rules (promptfoo 0.121.20, dist/src/index.js):

- inline Python is the body of ``main(output, context)``: one line is ``return <line>``,
  several lines are the body as written (src/assertions/python.ts, index.js:2711-2721); a file's
  source runs as a module and its ``function`` (default ``get_assert``) is called;
- inline JavaScript is ``new Function("output", "context", "process", body)`` where one line
  gets a ``return`` (src/assertions/javascript.ts, buildFunctionBody, index.js:2169-2181);
  a file is a CommonJS module whose export (or its ``function``) is called;
- the result: a boolean is the verdict; a number is the score and passes when ``> 0`` (or
  ``>= threshold``); a ``{pass, score, reason}`` object is taken as is (Python's also fails
  under its ``threshold``); Python's ``"true"``/``"false"`` strings and JSON text are read too
  (index.js:2637-2708 and 2203-2233); ``not-`` flips the verdict;
- code that raises fails the assertion whatever ``not-`` says (index.js:2258-2265, 2731-2737).

The code is the eval author's, run with their rights, as promptfoo runs it; the file's source
is kept in the config, so the evaluator reads no file and re-evaluation is reproducible.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import shutil
import sys
from typing import Any, Literal

from pydantic import Field, model_validator

from evalh_pipeline.common.fields import as_text
from evalh_pipeline.common.processes import kill_group
from evalh_pipeline.evaluators.base import Evaluator, EvaluatorConfigModel, Verdict
from evalh_pipeline.evaluators.promptfoo_assert import openai_chat_output
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace

MAX_OUTPUT_BYTES = 1024 * 1024
RESULT_MARK = "\x1epromptfoo-result\x1e"

# Runs in the child: reads {output, context, code | source, function} on stdin, prints the
# result as JSON after a marker line (the user's code may print too).
PYTHON_RUNNER = r"""
import json, re, sys, types
job = json.load(sys.stdin)
if job.get("source") is None:
    value = job["code"].rstrip()
    indent = "    "
    if "\n" in value:
        found = re.search(r"^(?!\s*$)\s+", value, re.M)
        indent = found.group(0) if found else indent
        body = "\n".join(indent + line for line in value.split("\n"))
    else:
        body = "    return " + value
    namespace = {}
    exec(compile("import json\n\ndef main(output, context):\n" + body + "\n", "<assertion>", "exec"), namespace)
    result = namespace["main"](job["output"], job["context"])
else:
    module = types.ModuleType("promptfoo_assertion")
    module.__file__ = job.get("name") or "assertion.py"
    exec(compile(job["source"], module.__file__, "exec"), module.__dict__)
    result = getattr(module, job.get("function") or "get_assert")(job["output"], job["context"])
sys.stdout.write(MARK + json.dumps(result))
""".replace("MARK", repr(RESULT_MARK))

NODE_RUNNER = r"""
const MARK = %s;
let input = '';
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', async () => {
  const job = JSON.parse(input);
  let result;
  if (job.source == null) {
    const value = job.code.trimEnd();
    result = new Function('output', 'context', 'process', value.includes('\n') ? value : job.body)(job.output, job.context, process);
  } else {
    const Module = require('module');
    const m = new Module(job.name || 'assertion.js');
    m.paths = [];
    m._compile(job.source, job.name || 'assertion.js');
    const exported = m.exports;
    const fn = job.function ? exported[job.function] : (typeof exported === 'function' ? exported : exported.default);
    result = await fn(job.output, job.context);
  }
  result = await Promise.resolve(result);
  process.stdout.write(MARK + JSON.stringify(result === undefined ? null : result));
});
""" % json.dumps(RESULT_MARK)


class PromptfooScriptConfig(EvaluatorConfigModel):
    """One promptfoo ``python``/``javascript`` assertion: inline ``code`` or a file's ``source``."""

    TRACE_FIELDS = ("output.final_answer",)

    language: Literal["python", "javascript"]
    code: str | None = None
    source: str | None = None
    name: str | None = None  # the file's name, for tracebacks
    function: str | None = None
    inverse: bool = False
    threshold: float | None = None
    timeout_seconds: float = Field(default=60.0, gt=0)
    #: As promptfoo_assert's: the output is the tool calls when the model made some.
    openai_tool_calls: bool = False

    def trace_fields_read(self) -> tuple[str, ...]:
        """The answer, and the tool calls when they are the output."""
        return (*self.TRACE_FIELDS, *(("tool_calls",) if self.openai_tool_calls else ()))

    @model_validator(mode="after")
    def _one_kind(self) -> PromptfooScriptConfig:
        if (self.code is None) == (self.source is None):
            raise ValueError("give either code (inline) or source (a file's text)")
        return self


def build_function_body(code: str) -> str:
    """promptfoo's ``buildFunctionBody`` (index.js:2134-2181): ``return`` before the last
    expression of a one-line assertion (after its declarations)."""
    trimmed = code.strip()
    while trimmed.endswith(";"):
        trimmed = trimmed[:-1].rstrip()
    if not trimmed.startswith(("const ", "let ", "var ")):
        return f"return {trimmed}"
    quote, last = "", -1
    for i, char in enumerate(trimmed):
        escaped = i > 0 and trimmed[i - 1] == "\\"
        if not escaped and char in "'\"`":
            quote = "" if quote == char else quote or char
        if char == ";" and not quote:
            last = i
    if last != -1 and trimmed[last + 1:].strip():
        return f"{trimmed[:last + 1]} return {trimmed[last + 1:].strip()}"
    return trimmed


def _is_grading_result(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("pass"), bool)
            and isinstance(value.get("score"), (int, float)) and not isinstance(value.get("score"), bool)
            and isinstance(value.get("reason"), str))


def read_result(result: Any, language: str, inverse: bool, threshold: float | None) -> Verdict:
    """A script's result as promptfoo normalizes it (see the module doc)."""
    code = "Python code" if language == "python" else "Custom function"
    if language == "python":
        lowered = result.lower() if isinstance(result, str) else None
        if result is True or lowered == "true":
            result = True
        elif result is False or lowered == "false":
            result = False
        elif isinstance(result, str) and result.startswith("{"):
            result = json.loads(result)
    if isinstance(result, bool):
        passed = result != inverse
        return Verdict(passed, "Assertion passed" if passed else f"{code} returned {str(result).lower()}",
                       score=1.0 if passed else 0.0)
    if isinstance(result, (int, float)) or (language == "python" and isinstance(result, str)):
        score = _parse_float(result)
        if score is None or math.isnan(score):
            raise ValueError(f"{language} assertion must return a boolean, number, or {{pass, score, reason}} object; got {result!r}")
        raw = score > 0 if threshold is None else score >= threshold
        passed = raw != inverse
        return Verdict(passed, "Assertion passed" if passed else f"{code} returned {str(raw).lower()}", score=score)
    if isinstance(result, dict):
        if language == "python" and "pass_" in result and "pass" not in result:
            result = {**result, "pass": result["pass_"]}
        if not _is_grading_result(result):
            raise ValueError(f"{language} assertion must return a boolean, number, or {{pass, score, reason}} object; got {json.dumps(result)[:200]}")
        raw, reason = result["pass"], result["reason"]
        if language == "python" and threshold is not None and result["score"] < threshold:
            raw, reason = False, f"Python score {result['score']} is less than threshold {threshold:g}: {reason}" if reason else f"Python score {result['score']} is less than threshold {threshold:g}"
        passed = raw != inverse
        if passed != raw:
            reason = "Assertion passed" if passed else f"{code} returned {str(raw).lower()}"
        return Verdict(passed, reason, score=float(result["score"]))
    raise ValueError(f"{language} assertion must return a boolean, number, or {{pass, score, reason}} object; got {result!r}")


def _parse_float(value: Any) -> float | None:
    """JavaScript's ``Number.parseFloat(String(value))``: the longest leading number."""
    found = re.match(r"\s*([+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))", str(value))
    return float(found.group(1).replace("Infinity", "inf")) if found else None


class PromptfooScript(Evaluator[PromptfooScriptConfig]):
    """Runs the assertion's code on the answer (see the module doc)."""

    async def evaluate(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        variables = case.input.get("vars") if isinstance(case.input.get("vars"), dict) else {}
        output = openai_chat_output(trace) if cfg.openai_tool_calls else as_text(trace.output.final_answer)
        job = {"output": output, "code": cfg.code, "source": cfg.source,
               "name": cfg.name, "function": cfg.function,
               "context": {"vars": variables, "test": {"vars": variables}, "prompt": None, "config": {}}}
        argv = runner_argv(cfg.language, "javascript assertion needs Node.js (node on PATH); install it to judge this case")
        if cfg.language != "python":
            job["body"] = build_function_body(cfg.code) if cfg.code is not None else None
        ok, value = await run_child(argv, json.dumps(job), cfg.timeout_seconds)
        label = "Python code execution failed" if cfg.language == "python" else "Custom function threw error"
        if not ok:
            return Verdict(False, f"{label}: {value}", score=0.0, detail={"language": cfg.language})
        try:
            verdict = read_result(value, cfg.language, cfg.inverse, cfg.threshold)
        except ValueError as exc:
            return Verdict(False, f"{label}: {exc}", score=0.0, detail={"language": cfg.language})
        verdict.detail = {"language": cfg.language, "result": value}
        return verdict


def runner_argv(language: str, no_node: str) -> list[str]:
    """The command that runs a job of ``language`` on its runner: this Python with
    ``PYTHON_RUNNER``, or Node with ``NODE_RUNNER`` (RuntimeError ``no_node`` when there is none)."""
    if language == "python":
        return [sys.executable, "-c", PYTHON_RUNNER]
    node = shutil.which("node")
    if node is None:
        raise RuntimeError(no_node)
    return [node, "-e", NODE_RUNNER]


async def run_child(argv: list[str], stdin: str, timeout: float) -> tuple[bool, Any]:
    """(True, the script's JSON result) or (False, why it failed)."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True)
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin.encode()), timeout)
    except asyncio.TimeoutError:
        kill_group(process.pid)
        await process.wait()
        return False, f"timed out after {timeout:g} s"
    text = out[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")
    if process.returncode != 0 or RESULT_MARK not in text:
        lines = err[-4000:].decode("utf-8", "replace").strip().splitlines()
        # Node ends an uncaught error with its stack and its version: the error's own line says why.
        errors = [line for line in lines if re.match(r"\w*(Error|Exception)\b[^:]*:", line)]
        return False, errors[-1] if errors else lines[-1] if lines else f"exited with {process.returncode}"
    return True, json.loads(text.rsplit(RESULT_MARK, 1)[1])
