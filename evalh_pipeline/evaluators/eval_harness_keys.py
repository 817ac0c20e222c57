"""eval-harness (schema 1.0) evaluator config keys, rewritten onto ours before validation.

An ``eval.yaml`` written for eval-harness must load unchanged. Each function here takes an
evaluator's raw ``config:`` mapping and returns it in our shape; our own keys stay the
documented ones and a config that only uses them passes through untouched. Where the two
disagree on what a key means, the eval-harness key keeps eval-harness's meaning (listed
in the README under "eval-harness compatibility"). Problems are raised as ``ValueError`` so
the loader reports them with the file, line and key.
"""

from __future__ import annotations

import re
from typing import Any


# eval-harness's include_in_prompt entries are JSONPaths into the trace (plus ``case``);
# ours are section names. Only the paths that have a section map.
_INCLUDE_PATHS = {
    "input": "input",
    "case.input": "input",
    "output.final_answer": "final_answer",
    "output.thinking": "thinking",
    "output.structured": "structured",
    "tool_calls": "tool_calls",
    "case.expected": "expected",
}
_OUR_SECTIONS = ("input", "final_answer", "thinking", "structured", "tool_calls", "expected")

THINKING_DEFAULT_MODEL = "claude-4-7"  # eval-harness 2.0.2's default for thinking_does_not_leak
THINKING_DEFAULT_MAX_TOKENS = 512
SIMILARITY_DEFAULT_THRESHOLD = 0.8
COMMAND_DEFAULT_TIMEOUT_SECONDS = 60.0
_REGEX_PREFIX = "re:"


def _strip_root(path: str) -> str:
    return path[2:] if path.startswith("$.") else path


def llm_judge(data: Any) -> Any:
    """``rubric: "<text>"`` + ``scale: {min, max}`` + ``pass_threshold`` (``rubric_pass_threshold``
    alongside ``nl_assertions``) become our rubric block; JSONPath ``include_in_prompt`` entries
    become section names; ``judge_response_schema`` is accepted and not used (our judge always
    asks for its own answer schema, which carries the same verdicts)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    harness_form = False
    rubric = data.get("rubric")
    threshold_keys = ("pass_threshold", "rubric_pass_threshold")
    if isinstance(rubric, str):
        harness_form = True
        key, other = threshold_keys if data.get("nl_assertions") is None else threshold_keys[::-1]
        if key not in data:
            raise ValueError(f"a text rubric (eval-harness form) needs `{key}` (a number on the scale)"
                             + (f"; `{other}` is the key only when nl_assertions are "
                                f"{'given' if other == 'rubric_pass_threshold' else 'absent'}"
                                if other in data else ""))
        if other in data:
            raise ValueError(f"`{other}` does not apply here: with a text rubric and "
                             f"{'nl_assertions' if key == 'rubric_pass_threshold' else 'no nl_assertions'} "
                             f"the threshold key is `{key}`")
        data["rubric"] = {"criteria": rubric, "scale": _scale_range(data.pop("scale", {"min": 1, "max": 5})),
                          "pass_threshold": data.pop(key)}
    else:
        misplaced = [k for k in ("scale", *threshold_keys) if k in data]
        if misplaced:
            raise ValueError(f"{', '.join(misplaced)} at the top level go with a text rubric (eval-harness "
                             f"form); with a rubric block put scale and pass_threshold inside it")
    if "judge_response_schema" in data:
        harness_form = True
        if not isinstance(data.pop("judge_response_schema"), dict):
            raise ValueError("judge_response_schema must be a JSON Schema object")
    include = data.get("include_in_prompt")
    # A list with non-strings is left as it is: the field itself reports those.
    if isinstance(include, list) and all(isinstance(item, str) for item in include):
        sections = []
        for item in include:
            if item in _OUR_SECTIONS:
                sections.append(item)
                continue
            path = _strip_root(item)
            harness_form = harness_form or path != item or "." in path
            # A path with a section of its own shows as that section; any other stays a path
            # (the prompt then has a "Field <path>" section with the value found there).
            sections.append(_INCLUDE_PATHS.get(path, item))
        data["include_in_prompt"] = list(dict.fromkeys(sections))
    include = data.get("include_in_prompt", ["input", "final_answer"])
    if harness_form and isinstance(include, list) and all(isinstance(item, str) for item in include):
        # eval-harness always shows the judge the case's expected values.
        data["include_in_prompt"] = list(dict.fromkeys([*include, "expected"]))
    return data


def _scale_range(scale: Any) -> str:
    if not isinstance(scale, dict) or set(scale) != {"min", "max"}:
        raise ValueError("scale (with a text rubric) must be {min: <number>, max: <number>}")
    low, high = scale["min"], scale["max"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
        raise ValueError(f"scale {scale} must have numbers min < max")
    if low != int(low) or high != int(high):
        raise ValueError(f"scale {scale}: evalh rubrics score in whole steps, so min and max must be whole "
                         f"numbers (the judge picks one of min..max)")
    return f"{int(low)}-{int(high)}"


def semantic_similarity(data: Any) -> Any:
    """``embedder_name`` = ``embedder``; with it, ``threshold`` defaults to 0.8 and
    ``reference_text`` wins over ``reference_path``. ``case.``-rooted reference paths lose the root."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    path = data.get("reference_path")
    if isinstance(path, str):
        path = _strip_root(path)
        data["reference_path"] = path[len("case."):] if path.startswith("case.") else path
    if "embedder_name" not in data:
        return data
    if "embedder" in data:
        raise ValueError("give embedder or embedder_name (eval-harness's key), not both")
    data["embedder"] = data.pop("embedder_name")
    data.setdefault("threshold", SIMILARITY_DEFAULT_THRESHOLD)
    if data.get("reference_text") is not None:
        data.pop("reference_path", None)
    return data


_THINKING_KEYS = ("forbidden_patterns", "judge_assertions", "model", "cost_limit_usd", "max_tokens")


def thinking_does_not_leak(data: Any) -> Any:
    """The flat eval-harness form becomes ``forbidden`` + a ``judge`` block.

    eval-harness always asks a judge (default model ``claude-4-7``), with the
    ``judge_assertions`` or, without them, whether the thinking mentions, paraphrases or
    references the forbidden patterns; its plain patterns match case-sensitively.
    """
    if not isinstance(data, dict) or not any(k in data for k in _THINKING_KEYS):
        return data
    data = dict(data)
    if "judge" in data:
        given = [k for k in _THINKING_KEYS if k in data]
        raise ValueError(f"{', '.join(given)} (eval-harness's flat form) cannot be combined with a judge block")
    if "forbidden" in data and "forbidden_patterns" in data:
        raise ValueError("give forbidden or forbidden_patterns (eval-harness's key), not both")
    patterns = data.pop("forbidden_patterns", None)
    if patterns is not None:
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ValueError("forbidden_patterns must be a list of strings")
        data["forbidden"] = [_literal_if_invalid(p) for p in patterns]
        data.setdefault("case_sensitive", True)
    assertions = data.pop("judge_assertions", None)
    if not assertions:
        shown = [p[len(_REGEX_PREFIX):] if p.startswith(_REGEX_PREFIX) else p for p in patterns or []]
        if not shown:
            raise ValueError("give forbidden_patterns, judge_assertions, or both")
        assertions = ["The thinking does not mention, paraphrase or reference any of: "
                      + ", ".join(f'"{p}"' for p in shown)]
    judge = {"model": data.pop("model", THINKING_DEFAULT_MODEL), "assertions": assertions,
             "max_tokens": data.pop("max_tokens", THINKING_DEFAULT_MAX_TOKENS)}
    if "cost_limit_usd" in data:
        judge["cost_limit_usd"] = data.pop("cost_limit_usd")
    data["judge"] = judge
    return data


def _literal_if_invalid(pattern: str) -> str:
    # eval-harness searches an uncompilable re: pattern as literal text, prefix included.
    if pattern.startswith(_REGEX_PREFIX):
        try:
            re.compile(pattern[len(_REGEX_PREFIX):])
        except re.error:
            return _REGEX_PREFIX + re.escape(pattern)
    return pattern


def git_diff(data: Any) -> Any:
    """``must_modify_files`` / ``must_not_modify_files``: an empty list means "use the case's",
    as in eval-harness; ``must_not_modify_files`` adds to ``forbidden_paths``."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for key in ("must_modify_files", "must_not_modify_files"):
        if key in data and data[key] in (None, []):
            del data[key]
    if "must_modify_files" in data and "expected_modified" in data:
        raise ValueError("give expected_modified or must_modify_files (eval-harness's key), not both")
    forbidden = data.pop("must_not_modify_files", None)
    if forbidden is not None:
        if not isinstance(forbidden, list):
            raise ValueError("must_not_modify_files must be a list of paths")
        data["forbidden_paths"] = [*(data.get("forbidden_paths") or []), *forbidden]
    if "expected_patch_path" in data:
        others = [k for k in ("expected_patch", "expected_patch_file") if k in data]
        if others:
            raise ValueError(f"give expected_patch_path (eval-harness's key) or {others[0]}, not both")
    return data


def command(data: Any) -> Any:
    """``cmd`` = ``command``; with it the command inherits the host environment and times out
    after 60 s, as in eval-harness. ``cwd: artifact`` is the only ``cwd`` (our default)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    if "cwd" in data:
        cwd = data.pop("cwd")
        if cwd != "artifact":
            raise ValueError(f"cwd {cwd!r} is not supported: evalh always runs the command in a fresh copy of "
                             f"the run's files (eval-harness's `cwd: artifact`); leave cwd out or set it to artifact")
    if "cmd" in data:
        if "command" in data:
            raise ValueError("give command or cmd (eval-harness's key), not both")
        data["command"] = data.pop("cmd")
        data.setdefault("timeout_seconds", COMMAND_DEFAULT_TIMEOUT_SECONDS)
        data.setdefault("inherit_env", True)
    return data
